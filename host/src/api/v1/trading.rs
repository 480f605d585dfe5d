//! `/api/v1/trading/*`: starting, stopping, pausing and watching the user's bot, its orders, and
//! reconciling the books with the broker.

use rocket::{Route, State, get, post, routes};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, ok};
use crate::api::query::Page;
use crate::auth::AuthUser;
use crate::engine::order_views::{self, OrderView, OrdersPage};
use crate::engine::reconcile::{self, Reconciliation, ResolveRequest};
use crate::engine::{self, BotStatusView, EmergencyStopped, Started, StatusChange, Stopped};
use crate::error::ApiResult;

const ORDERS_DEFAULT_PER_PAGE: i64 = 50;
const ORDERS_MAX_PER_PAGE: i64 = 100;

pub fn routes() -> Vec<Route> {
    routes![
        start,
        stop,
        status,
        emergency_stop,
        pause,
        resume,
        orders,
        order,
        cancel_order,
        reconciliation,
        resolve
    ]
}

#[get("/trading/orders?<status>&<page>&<per_page>")]
async fn orders(
    app: &State<App>,
    user: AuthUser,
    status: Option<&str>,
    page: Option<&str>,
    per_page: Option<&str>,
) -> ApiResult<Success<OrdersPage>> {
    let page = Page::parse(page, per_page, ORDERS_DEFAULT_PER_PAGE, ORDERS_MAX_PER_PAGE)?;
    order_views::list(app, &user.0, status, page).await.map(ok)
}

#[get("/trading/orders/<order_id>")]
async fn order(app: &State<App>, user: AuthUser, order_id: &str) -> ApiResult<Success<OrderView>> {
    order_views::detail(app, &user.0, order_id).await.map(ok)
}

#[post("/trading/orders/<order_id>/cancel")]
async fn cancel_order(
    app: &State<App>,
    user: AuthUser,
    order_id: &str,
) -> ApiResult<Success<OrderView>> {
    engine::cancel_order(app, &user.0, order_id).await.map(ok)
}

#[get("/trading/reconciliation")]
async fn reconciliation(app: &State<App>, user: AuthUser) -> ApiResult<Success<Reconciliation>> {
    reconcile::state(app, &user.0.user_id).await.map(ok)
}

#[post("/trading/reconciliation/resolve", data = "<body>")]
async fn resolve(
    app: &State<App>,
    user: AuthUser,
    body: Body<ResolveRequest>,
) -> ApiResult<Success<Reconciliation>> {
    reconcile::resolve(app, &user.0.user_id, &user.0.user_id, body.0.resolution)
        .await
        .map(ok)
}

#[post("/trading/start", data = "<body>")]
async fn start(
    app: &State<App>,
    user: AuthUser,
    body: Body<engine::StartRequest>,
) -> ApiResult<Success<Started>> {
    engine::start(app, &user.0, body.0).await.map(ok)
}

#[post("/trading/stop", data = "<body>")]
async fn stop(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<engine::StopRequest>,
) -> ApiResult<Success<Stopped>> {
    engine::stop(app, &user.0, body.0.unwrap_or_default())
        .await
        .map(ok)
}

#[get("/trading/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Success<BotStatusView>> {
    engine::status(app, &user.0).await.map(ok)
}

#[post("/trading/emergency-stop", data = "<body>")]
async fn emergency_stop(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<engine::EmergencyRequest>,
) -> ApiResult<Success<EmergencyStopped>> {
    engine::emergency_stop(app, &user.0, body.0.unwrap_or_default())
        .await
        .map(ok)
}

#[post("/trading/pause")]
async fn pause(app: &State<App>, user: AuthUser) -> ApiResult<Success<StatusChange>> {
    engine::pause(app, &user.0).await.map(ok)
}

#[post("/trading/resume")]
async fn resume(app: &State<App>, user: AuthUser) -> ApiResult<Success<StatusChange>> {
    engine::resume(app, &user.0).await.map(ok)
}
