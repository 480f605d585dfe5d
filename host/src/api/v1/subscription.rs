//! `/api/v1/subscription/*`: plans, the current subscription, upgrade, cancel and usage.

use rocket::{State, get, post};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, ok};
use crate::api::openapi::prelude::*;
use crate::auth::{AuthUser, ClientMeta};
use crate::billing::subscriptions::{
    self, CancelRequest, Cancelled, Plans, SubscriptionView, UpgradeRequest, Upgraded, Usage,
};
use crate::error::ApiResult;

crate::api::handlers![plans, current, upgrade, cancel, usage];

#[utoipa::path(
    tag = "subscription",
    operation_id = "subscriptionPlans",
    summary = "Plans",
    description = "The tiers with prices, features and limits. No token needed.",
    responses(
        (status = 200, description = "OK", body = Enveloped<Plans>)
    ),
)]
#[get("/subscription/plans")]
fn plans() -> Success<Plans> {
    ok(subscriptions::plans())
}

#[utoipa::path(
    tag = "subscription",
    operation_id = "subscriptionCurrent",
    summary = "Current subscription",
    description = "Tier, interval, status, period, trial, amount, payment method and next billing.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<SubscriptionView>)
    ),
)]
#[get("/subscription/current")]
async fn current(app: &State<App>, user: AuthUser) -> ApiResult<Success<SubscriptionView>> {
    subscriptions::current(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "subscription",
    operation_id = "subscriptionUpgrade",
    summary = "Change tier",
    description = "Moves to a paid tier at once with a proration credit for the unused part of the current period; any trial ends.",
    security(("bearerAuth" = [])),
    request_body(content = UpgradeRequest, example = json!({"tier": "pro", "interval": "monthly", "payment_method_id": "pm_card_visa_4242"})),
    responses(
        (status = 200, description = "OK", body = Enveloped<Upgraded>),
        (status = 400, description = "Bad request: INVALID_REQUEST", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/subscription/upgrade", data = "<body>")]
async fn upgrade(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    body: Body<UpgradeRequest>,
) -> ApiResult<Success<Upgraded>> {
    subscriptions::upgrade(app, &user.0, &meta, body.0)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "subscription",
    operation_id = "subscriptionCancel",
    summary = "Cancel",
    description = "Cancels at the period's end (access continues until `access_until`), or immediately with a refund of the unused part and a return to `free`. The body may be empty.",
    security(("bearerAuth" = [])),
    request_body(content = CancelRequest, example = json!({"cancel_immediately": false, "reason": "too_expensive", "feedback": ""})),
    responses(
        (status = 200, description = "OK", body = Enveloped<Cancelled>),
        (status = 400, description = "Bad request: INVALID_REQUEST", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/subscription/cancel", data = "<body>")]
async fn cancel(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    body: OptionalBody<CancelRequest>,
) -> ApiResult<Success<Cancelled>> {
    subscriptions::cancel(app, &user.0, &meta, body.0.unwrap_or_default())
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "subscription",
    operation_id = "subscriptionUsage",
    summary = "Usage",
    description = "API calls, trades, positions and broker connections against the tier's limits in the current period, with warnings from 80 %.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Usage>)
    ),
)]
#[get("/subscription/usage")]
async fn usage(app: &State<App>, user: AuthUser) -> ApiResult<Success<Usage>> {
    subscriptions::usage(app, &user.0).await.map(ok)
}
