//! `/api/v1/config/*`: broker connections.

use rocket::{Route, State, delete, get, post, routes};

use crate::App;
use crate::api::envelope::{Body, Success, created, ok};
use crate::auth::{AuthUser, ClientMeta};
use crate::brokers::{self, Added, Connections, NewConnection, Removed, TestResult};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![list_brokers, add_broker, remove_broker, test_broker]
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
