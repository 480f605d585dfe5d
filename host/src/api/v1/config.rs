//! `/api/v1/config/*`: settings, broker connections and the signal webhook key.

use rocket::{Route, State, delete, get, post, put, routes};
use serde_json::{Map, Value};

use crate::App;
use crate::api::envelope::{Body, Success, created, ok};
use crate::auth::{AuthUser, ClientMeta};
use crate::brokers::{self, Added, Connections, NewConnection, Removed, TestResult};
use crate::error::ApiResult;
use crate::settings::{self, Settings, Updated};
use crate::signals::{self, WebhookKey};

pub fn routes() -> Vec<Route> {
    routes![
        get_settings,
        put_settings,
        list_brokers,
        add_broker,
        remove_broker,
        test_broker,
        webhook_key
    ]
}

#[get("/config/settings")]
async fn get_settings(app: &State<App>, user: AuthUser) -> ApiResult<Success<Settings>> {
    settings::get(app, &user.0).await.map(ok)
}

#[put("/config/settings", data = "<body>")]
async fn put_settings(
    app: &State<App>,
    user: AuthUser,
    body: Body<Map<String, Value>>,
) -> ApiResult<Success<Updated>> {
    settings::update(app, &user.0, body.0).await.map(ok)
}

#[get("/config/brokers")]
async fn list_brokers(app: &State<App>, user: AuthUser) -> ApiResult<Success<Connections>> {
    brokers::list(app, &user.0).await.map(ok)
}

#[post("/config/brokers", data = "<body>")]
async fn add_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    body: Body<NewConnection>,
) -> ApiResult<Success<Added>> {
    brokers::add(app, &user.0, &meta, body.0).await.map(created)
}

#[delete("/config/brokers/<broker_id>")]
async fn remove_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    broker_id: &str,
) -> ApiResult<Success<Removed>> {
    brokers::remove(app, &user.0, &meta, broker_id)
        .await
        .map(ok)
}

#[post("/config/brokers/<broker_id>/test")]
async fn test_broker(
    app: &State<App>,
    user: AuthUser,
    broker_id: &str,
) -> ApiResult<Success<TestResult>> {
    brokers::test(app, &user.0, broker_id).await.map(ok)
}

#[post("/config/webhook-key")]
async fn webhook_key(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
) -> ApiResult<Success<WebhookKey>> {
    signals::create_key(app, &user.0, &meta).await.map(ok)
}
