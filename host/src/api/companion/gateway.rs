//! Companion set B: the mobile gateway (`GET /` and five routes under `/api/v1`). Errors are
//! `{detail}`.

use rocket::{State, get, post};
use serde_json::{Map, Value};

use super::Json;
use crate::App;
use crate::api::envelope::Body;
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::companion::gateway::{self, Balance, Control, Performance, Positions};
use crate::error::ApiResult;

crate::api::handlers![root, start, stop, balance, positions, performance];

/// Ranked after an operator's own browser client (`api::web`), which answers browsers asking
/// for HTML when one is configured.
#[utoipa::path(
    tag = "companion-gateway",
    operation_id = "gatewayRoot",
    summary = "Service info",
    description = "Name, version, default strategy, status and where these docs are. No token needed.",
    responses(
        (status = 200, description = "OK", body = gateway::RootInfo)
    ),
)]
#[get("/", rank = 2)]
fn root(app: &State<App>) -> Json<gateway::RootInfo> {
    Json(gateway::root(app))
}

/// The body must be a JSON object (`{}` is enough), as the original gateway required.
#[utoipa::path(
    tag = "companion-gateway",
    operation_id = "gatewayStart",
    summary = "Start trading (gateway)",
    description = "Starts the bot like `POST /api/start_bot`.",
    security(("bearerAuth" = [])),
    request_body(content = Object, description = "Must be a JSON object (`{}` is enough); anything else is a 422.", example = json!({})),
    responses(
        (status = 200, description = "OK", body = Control),
        (status = 400, description = "Bad request: Trading is already running", body = DetailError),
        (status = 403, description = "Forbidden: User not enabled or no permissions configured", body = DetailError),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
#[post("/api/v1/start", data = "<_body>")]
async fn start(
    app: &State<App>,
    user: AuthUser,
    _body: Body<Map<String, Value>>,
) -> ApiResult<Json<Control>> {
    gateway::start(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-gateway",
    operation_id = "gatewayStop",
    summary = "Stop trading (gateway)",
    description = "Stops the bot, leaving positions open.",
    security(("bearerAuth" = [])),
    request_body(content = Object, description = "Must be a JSON object (`{}` is enough); anything else is a 422.", example = json!({})),
    responses(
        (status = 200, description = "OK", body = Control, example = json!({"success": true, "message": "Trading engine stopped successfully", "status": "stopped", "timestamp": "2026-11-22T06:40:00.123456Z"})),
        (status = 400, description = "Bad request: Already stopped", body = DetailError),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
#[post("/api/v1/stop", data = "<_body>")]
async fn stop(
    app: &State<App>,
    user: AuthUser,
    _body: Body<Map<String, Value>>,
) -> ApiResult<Json<Control>> {
    gateway::stop(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-gateway",
    operation_id = "gatewayBalance",
    summary = "Balance (gateway)",
    description = "Equity, cash available for trading and the broker.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Balance)
    ),
)]
#[get("/api/v1/balance")]
async fn balance(app: &State<App>, user: AuthUser) -> ApiResult<Json<Balance>> {
    gateway::balance(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-gateway",
    operation_id = "gatewayPositions",
    summary = "Open positions (gateway)",
    description = "The open positions with unrealized P&L and their total.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Positions)
    ),
)]
#[get("/api/v1/positions")]
async fn positions(app: &State<App>, user: AuthUser) -> ApiResult<Json<Positions>> {
    gateway::positions(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-gateway",
    operation_id = "gatewayPerformance",
    summary = "Performance (gateway)",
    description = "Trade statistics over the trades closed in the period.",
    security(("bearerAuth" = [])),
    params(
        ("period" = Option<String>, Query, pattern = "^(all_time|30d|7d|24h)$", description = "Default all_time; anything else is a 422. (default \"all_time\"; one of `all_time`, `30d`, `7d`, `24h`)")
    ),
    responses(
        (status = 200, description = "OK", body = Performance),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
#[get("/api/v1/performance?<period>")]
async fn performance(
    app: &State<App>,
    user: AuthUser,
    period: Option<&str>,
) -> ApiResult<Json<Performance>> {
    gateway::performance(app, &user.0, period).await.map(Json)
}
