//! `/api/v1/config/notifications/*`: the user's outgoing webhooks and their signing secret.
//! (Which notifications are sent by mail is in the settings: `notifications`.)

use rocket::{Route, State, delete, get, post, routes};

use crate::App;
use crate::api::envelope::{Body, Success, created, ok};
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::notify::webhooks::{
    self, Added, Deliveries, NewWebhook, Queued, Removed, Secret, Webhooks,
};

pub fn routes() -> Vec<Route> {
    routes![
        list_webhooks,
        add_webhook,
        remove_webhook,
        test_webhook,
        webhook_deliveries,
        rotate_secret
    ]
}

#[get("/config/notifications/webhooks")]
async fn list_webhooks(app: &State<App>, user: AuthUser) -> ApiResult<Success<Webhooks>> {
    webhooks::list(app, &user.0).await.map(ok)
}

#[post("/config/notifications/webhooks", data = "<body>")]
async fn add_webhook(
    app: &State<App>,
    user: AuthUser,
    body: Body<NewWebhook>,
) -> ApiResult<Success<Added>> {
    webhooks::add(app, &user.0, body.0).await.map(created)
}

#[delete("/config/notifications/webhooks/<webhook_id>")]
async fn remove_webhook(
    app: &State<App>,
    user: AuthUser,
    webhook_id: &str,
) -> ApiResult<Success<Removed>> {
    webhooks::remove(app, &user.0, webhook_id).await.map(ok)
}

#[post("/config/notifications/webhooks/<webhook_id>/test")]
async fn test_webhook(
    app: &State<App>,
    user: AuthUser,
    webhook_id: &str,
) -> ApiResult<Success<Queued>> {
    webhooks::test(app, &user.0, webhook_id).await.map(ok)
}

#[get("/config/notifications/webhooks/<webhook_id>/deliveries")]
async fn webhook_deliveries(
    app: &State<App>,
    user: AuthUser,
    webhook_id: &str,
) -> ApiResult<Success<Deliveries>> {
    webhooks::deliveries(app, &user.0, webhook_id).await.map(ok)
}

#[post("/config/notifications/secret")]
async fn rotate_secret(app: &State<App>, user: AuthUser) -> ApiResult<Success<Secret>> {
    webhooks::rotate_secret(app, &user.0).await.map(ok)
}
