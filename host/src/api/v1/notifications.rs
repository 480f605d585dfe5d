//! `/api/v1/config/notifications/*`: the user's outgoing webhooks and their signing secret.
//! (Which notifications are sent by mail is in the settings: `notifications`.)

use rocket::{State, delete, get, post};

use crate::App;
use crate::api::envelope::{Body, Success, created, ok};
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::notify::webhooks::{
    self, Added, Deliveries, NewWebhook, Queued, Removed, Secret, Webhooks,
};

crate::api::handlers![
    list_webhooks,
    add_webhook,
    remove_webhook,
    test_webhook,
    webhook_deliveries,
    rotate_secret
];

#[utoipa::path(
    tag = "config",
    operation_id = "configListNotificationWebhooks",
    summary = "List notification webhooks",
    description = "The user's outgoing webhooks, the event types they can take, and the header posts are signed in.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Webhooks>)
    ),
)]
#[get("/config/notifications/webhooks")]
async fn list_webhooks(app: &State<App>, user: AuthUser) -> ApiResult<Success<Webhooks>> {
    webhooks::list(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configAddNotificationWebhook",
    summary = "Add a notification webhook",
    description = "Checks the URL (https, not a private, loopback or link-local address; no credentials) and stores it sealed. Answers 201; a user's first webhook also shows the signing secret, once. At most 10 per user.",
    security(("bearerAuth" = [])),
    request_body(content = NewWebhook, example = json!({"url": "https://hooks.example.com/tradehost", "format": "json"})),
    responses(
        (status = 201, description = "Created", body = Enveloped<Added>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/config/notifications/webhooks", data = "<body>")]
async fn add_webhook(
    app: &State<App>,
    user: AuthUser,
    body: Body<NewWebhook>,
) -> ApiResult<Success<Added>> {
    webhooks::add(app, &user.0, body.0).await.map(created)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configRemoveNotificationWebhook",
    summary = "Remove a notification webhook",
    description = "Removes it and drops its queued deliveries.",
    security(("bearerAuth" = [])),
    params(
        ("webhook_id" = String, Path, description = "The webhook's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Removed>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[delete("/config/notifications/webhooks/<webhook_id>")]
async fn remove_webhook(
    app: &State<App>,
    user: AuthUser,
    webhook_id: &str,
) -> ApiResult<Success<Removed>> {
    webhooks::remove(app, &user.0, webhook_id).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configTestNotificationWebhook",
    summary = "Test a notification webhook",
    description = "Queues a `test` event to this webhook only.",
    security(("bearerAuth" = [])),
    params(
        ("webhook_id" = String, Path, description = "The webhook's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Queued>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[post("/config/notifications/webhooks/<webhook_id>/test")]
async fn test_webhook(
    app: &State<App>,
    user: AuthUser,
    webhook_id: &str,
) -> ApiResult<Success<Queued>> {
    webhooks::test(app, &user.0, webhook_id).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configNotificationWebhookDeliveries",
    summary = "A notification webhook's deliveries",
    description = "The last 50 deliveries, newest first, with status, attempts and the last answer.",
    security(("bearerAuth" = [])),
    params(
        ("webhook_id" = String, Path, description = "The webhook's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Deliveries>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/config/notifications/webhooks/<webhook_id>/deliveries")]
async fn webhook_deliveries(
    app: &State<App>,
    user: AuthUser,
    webhook_id: &str,
) -> ApiResult<Success<Deliveries>> {
    webhooks::deliveries(app, &user.0, webhook_id).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configRotateNotificationSecret",
    summary = "Rotate the webhook signing secret",
    description = "Makes a new secret, shows it this once; later posts are signed with it.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Secret>)
    ),
)]
#[post("/config/notifications/secret")]
async fn rotate_secret(app: &State<App>, user: AuthUser) -> ApiResult<Success<Secret>> {
    webhooks::rotate_secret(app, &user.0).await.map(ok)
}
