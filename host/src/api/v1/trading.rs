//! `/api/v1/trading/*`: starting, stopping, pausing and watching the user's bot, its orders, and
//! reconciling the books with the broker.

use rocket::{State, get, post};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, ok};
use crate::api::openapi::prelude::*;
use crate::api::query::Page;
use crate::auth::AuthUser;
use crate::engine::order_views::{self, OrderView, OrdersPage};
use crate::engine::reconcile::{self, Reconciliation, ResolveRequest};
use crate::engine::{self, BotStatusView, EmergencyStopped, Started, StatusChange, Stopped};
use crate::error::ApiResult;

const ORDERS_DEFAULT_PER_PAGE: i64 = 50;
const ORDERS_MAX_PER_PAGE: i64 = 100;

crate::api::handlers![
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
];

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingOrders",
    summary = "Orders",
    description = "The user's orders, newest first: every order the bot, a signal or a close placed, with where it stands and how much filled (exact decimals as text).",
    security(("bearerAuth" = [])),
    params(
        ("status" = Option<String>, Query, pattern = "^(new|submitted|partially_filled|filled|cancelled|rejected|expired|unknown)$", description = "Only orders in this state. (one of `new`, `submitted`, `partially_filled`, `filled`, `cancelled`, `rejected`, `expired`, `unknown`)"),
        ("page" = Option<i64>, Query, description = "Page number, from 1.", minimum = 1),
        ("per_page" = Option<i64>, Query, description = "Default 50; values above 100 are clamped.", minimum = 1)
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<OrdersPage>),
        (status = 400, response = Platform400InvalidRequest)
    ),
)]
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

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingOrder",
    summary = "One order",
    description = "An order with every fill booked for it.",
    security(("bearerAuth" = [])),
    params(
        ("order_id" = String, Path, description = "The order's id.", example = json!("0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<OrderView>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/trading/orders/<order_id>")]
async fn order(app: &State<App>, user: AuthUser, order_id: &str) -> ApiResult<Success<OrderView>> {
    order_views::detail(app, &user.0, order_id).await.map(ok)
}

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingCancelOrder",
    summary = "Cancel a limit entry",
    description = "Asks the venue to cancel one of the user's limit entries still working there, and answers the order as it stands after the venue's answer: what filled before stays filled (the entry's position keeps it). A close is never cancelled (the position keeps closing until it is closed); an order that is no longer working answers 400 INVALID_REQUEST.",
    security(("bearerAuth" = [])),
    params(
        ("order_id" = String, Path, description = "The order's id.", example = json!("0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<OrderView>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 404, response = Platform404NotFound),
        (status = 502, response = Platform502BrokerError)
    ),
)]
#[post("/trading/orders/<order_id>/cancel")]
async fn cancel_order(
    app: &State<App>,
    user: AuthUser,
    order_id: &str,
) -> ApiResult<Success<OrderView>> {
    engine::cancel_order(app, &user.0, order_id).await.map(ok)
}

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingReconciliation",
    summary = "Reconciliation with the broker",
    description = "Whether the books agree with the broker: open discrepancies (which stop the bot until resolved), recent ones, and orders still live.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Reconciliation>)
    ),
)]
#[get("/trading/reconciliation")]
async fn reconciliation(app: &State<App>, user: AuthUser) -> ApiResult<Success<Reconciliation>> {
    reconcile::state(app, &user.0.user_id).await.map(ok)
}

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingReconciliationResolve",
    summary = "Resolve discrepancies",
    description = "Resolves the open discrepancies as asked; afterwards the bot can be started again. Audited.",
    security(("bearerAuth" = [])),
    request_body(content = ResolveRequest, example = json!({})),
    responses(
        (status = 200, description = "OK", body = Enveloped<Reconciliation>),
        (status = 400, response = Platform400InvalidBody),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 502, description = "`BROKER_ERROR`: the broker could not be asked.", body = PlatformError)
    ),
)]
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

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingStart",
    summary = "Start the bot",
    description = "Starts the user's bot. Checks in order: kill switch, broker name, a broker connection, the subscription (`paper_trading: false` needs a paid tier or an active trial), not already running. Omitted fields come from the settings. Allowed from `stopped`, `error` and `emergency_stopped`.",
    security(("bearerAuth" = [])),
    request_body(content = engine::StartRequest, example = json!({"broker": "paper", "paper_trading": true, "risk_profile": "medium", "strategy": "ema-cross"})),
    responses(
        (status = 200, description = "Starting.", body = Enveloped<Started>),
        (status = 400, description = "Bad request: UNSUPPORTED_BROKER, NO_BROKER_CONFIGURED, INVALID_RISK_LEVEL, INVALID_REQUEST", body = PlatformError),
        (status = 402, description = "Payment required: SUBSCRIPTION_REQUIRED", body = PlatformError),
        (status = 403, description = "Forbidden: KILL_SWITCH_ACTIVE, ACCOUNT_SUSPENDED, ACCOUNT_DISABLED", body = PlatformError),
        (status = 409, description = "Conflict: ALREADY_RUNNING", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/trading/start", data = "<body>")]
async fn start(
    app: &State<App>,
    user: AuthUser,
    body: Body<engine::StartRequest>,
) -> ApiResult<Success<Started>> {
    engine::start(app, &user.0, body.0).await.map(ok)
}

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingStop",
    summary = "Stop the bot",
    description = "Stops the bot, closing positions when asked; otherwise `action_required` says what to do about those left open. The body may be empty.",
    security(("bearerAuth" = [])),
    request_body(content = engine::StopRequest, example = json!({"close_positions": false, "emergency": false})),
    responses(
        (status = 200, description = "OK", body = Enveloped<Stopped>),
        (status = 400, description = "Bad request: NOT_RUNNING, INVALID_REQUEST", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingStatus",
    summary = "Bot status",
    description = "The bot's state, uptime, broker, strategy, pairs, scan times, open positions, today's trades and last error.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<BotStatusView>)
    ),
)]
#[get("/trading/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Success<BotStatusView>> {
    engine::status(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingEmergencyStop",
    summary = "Emergency stop",
    description = "Stops the bot in any state (idempotent), closing positions when asked; the bot ends `emergency_stopped`. The body may be empty.",
    security(("bearerAuth" = [])),
    request_body(content = engine::EmergencyRequest, example = json!({"reason": "Exchange outage", "close_positions": true})),
    responses(
        (status = 200, description = "OK", body = Enveloped<EmergencyStopped>),
        (status = 400, response = Platform400InvalidBody),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingPause",
    summary = "Pause the bot",
    description = "Stops opening positions; open ones still close at their stop loss, take profit or trailing stop. Pausing a paused bot answers 200. (An addition to the specification.)",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<StatusChange>, example = json!({"success": true, "data": {"status": "paused", "message": "Bot paused"}, "timestamp": "2026-11-22T06:40:00.123Z"})),
        (status = 400, description = "Bad request: NOT_RUNNING", body = PlatformError)
    ),
)]
#[post("/trading/pause")]
async fn pause(app: &State<App>, user: AuthUser) -> ApiResult<Success<StatusChange>> {
    engine::pause(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "trading",
    operation_id = "tradingResume",
    summary = "Resume the bot",
    description = "Resumes a paused bot. (An addition to the specification.)",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<StatusChange>, example = json!({"success": true, "data": {"status": "running", "message": "Bot resumed"}, "timestamp": "2026-11-22T06:40:00.123Z"})),
        (status = 400, description = "Bad request: NOT_RUNNING", body = PlatformError),
        (status = 409, description = "Conflict: ALREADY_RUNNING", body = PlatformError)
    ),
)]
#[post("/trading/resume")]
async fn resume(app: &State<App>, user: AuthUser) -> ApiResult<Success<StatusChange>> {
    engine::resume(app, &user.0).await.map(ok)
}
