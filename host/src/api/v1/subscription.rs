//! `/api/v1/subscription/*`: plans, the current subscription, upgrade, cancel and usage.

use rocket::{Route, State, get, post, routes};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, ok};
use crate::auth::{AuthUser, ClientMeta};
use crate::billing::subscriptions::{
    self, CancelRequest, Cancelled, Plans, SubscriptionView, UpgradeRequest, Upgraded, Usage,
};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![plans, current, upgrade, cancel, usage]
}

#[get("/subscription/plans")]
fn plans() -> Success<Plans> {
    ok(subscriptions::plans())
}

#[get("/subscription/current")]
async fn current(app: &State<App>, user: AuthUser) -> ApiResult<Success<SubscriptionView>> {
    subscriptions::current(app, &user.0).await.map(ok)
}

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

#[get("/subscription/usage")]
async fn usage(app: &State<App>, user: AuthUser) -> ApiResult<Success<Usage>> {
    subscriptions::usage(app, &user.0).await.map(ok)
}
