//! `/api/v1/account/*`: balance, positions, history, performance and statistics.

use rocket::{State, get, post};

use crate::App;
use crate::api::envelope::{Success, ok};
use crate::api::openapi::prelude::*;
use crate::api::query::{Page, parse_time};
use crate::auth::AuthUser;
use crate::engine::reports::{
    self, Balance, History, Performance, Period, PositionView, Positions, Stats,
};
use crate::engine::{self, PositionClosed};
use crate::error::ApiResult;
use crate::store::Filter;

pub const HISTORY_DEFAULT_PER_PAGE: i64 = 50;
pub const HISTORY_MAX_PER_PAGE: i64 = 100;

crate::api::handlers![
    balance,
    positions,
    position,
    close_position,
    history,
    performance,
    stats
];

#[utoipa::path(
    tag = "account",
    operation_id = "accountBalance",
    summary = "Balance",
    description = "Cash, equity, unrealized and realized P&L, fees, buying power and initial capital.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Balance>)
    ),
)]
#[get("/account/balance")]
async fn balance(app: &State<App>, user: AuthUser) -> ApiResult<Success<Balance>> {
    reports::balance(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "account",
    operation_id = "accountPositions",
    summary = "Open positions",
    description = "The open positions with current prices and unrealized P&L, and a summary.",
    security(("bearerAuth" = [])),
    params(
        ("broker" = Option<String>, Query, description = "Only positions on this broker.", example = json!("paper")),
        ("symbol" = Option<String>, Query, description = "Only this pair (BASE-QUOTE).", example = json!("BTC-USD"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Positions>)
    ),
)]
#[get("/account/positions?<broker>&<symbol>")]
async fn positions(
    app: &State<App>,
    user: AuthUser,
    broker: Option<&str>,
    symbol: Option<&str>,
) -> ApiResult<Success<Positions>> {
    reports::positions(app, &user.0, broker, symbol)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "account",
    operation_id = "accountPosition",
    summary = "One position",
    description = "One open position of the caller.",
    security(("bearerAuth" = [])),
    params(
        ("position_id" = String, Path, description = "The position's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<PositionView>),
        (status = 404, description = "Not found: POSITION_NOT_FOUND", body = PlatformError)
    ),
)]
#[get("/account/positions/<position_id>")]
async fn position(
    app: &State<App>,
    user: AuthUser,
    position_id: &str,
) -> ApiResult<Success<PositionView>> {
    reports::position(app, &user.0, position_id).await.map(ok)
}

#[utoipa::path(
    tag = "account",
    operation_id = "accountClosePosition",
    summary = "Close a position",
    description = "Closes the position at the market (exit reason `manual`).",
    security(("bearerAuth" = [])),
    params(
        ("position_id" = String, Path, description = "The position's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<PositionClosed>),
        (status = 404, description = "Not found: POSITION_NOT_FOUND", body = PlatformError),
        (status = 502, description = "Bad gateway: BROKER_ERROR", body = PlatformError)
    ),
)]
#[post("/account/positions/<position_id>/close")]
async fn close_position(
    app: &State<App>,
    user: AuthUser,
    position_id: &str,
) -> ApiResult<Success<PositionClosed>> {
    engine::close_position(app, &user.0, position_id)
        .await
        .map(ok)
}

#[allow(clippy::too_many_arguments)]
#[utoipa::path(
    tag = "account",
    operation_id = "accountHistory",
    summary = "Trade history",
    description = "Open positions (newest first) then completed trades (newest close first), paginated. `realized_pnl` is net of fees. Dates filter on the close time of trades and the open time of positions.",
    security(("bearerAuth" = [])),
    params(
        ("page" = Option<i64>, Query, description = "Page number, from 1.", minimum = 1),
        ("per_page" = Option<i64>, Query, description = "Default 50; values above 100 are clamped.", minimum = 1),
        ("start_date" = Option<String>, Query, description = "YYYY-MM-DD or ISO 8601.", example = json!("2026-11-01")),
        ("end_date" = Option<String>, Query, description = "YYYY-MM-DD (includes that day) or ISO 8601.", example = json!("2026-11-21")),
        ("symbol" = Option<String>, Query, description = "Only this pair.", example = json!("ETH-USD")),
        ("status" = Option<String>, Query, pattern = "^(open|closed|cancelled)$", description = "Only open, closed or cancelled records (cancelled is always empty). (one of `open`, `closed`, `cancelled`)")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<History>),
        (status = 400, response = Platform400InvalidRequest)
    ),
)]
#[get("/account/history?<page>&<per_page>&<start_date>&<end_date>&<symbol>&<status>")]
async fn history(
    app: &State<App>,
    user: AuthUser,
    page: Option<&str>,
    per_page: Option<&str>,
    start_date: Option<&str>,
    end_date: Option<&str>,
    symbol: Option<&str>,
    status: Option<&str>,
) -> ApiResult<Success<History>> {
    let page = Page::parse(
        page,
        per_page,
        HISTORY_DEFAULT_PER_PAGE,
        HISTORY_MAX_PER_PAGE,
    )?;
    let filter = Filter {
        symbol: symbol.map(str::to_uppercase),
        from_ms: parse_time("start_date", start_date, false)?,
        until_ms: parse_time("end_date", end_date, true)?,
        ..Filter::default()
    };
    reports::history(app, &user.0, &filter, status, page)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "account",
    operation_id = "accountPerformance",
    summary = "Performance",
    description = "Performance metrics, daily P&L and the equity curve over a period.",
    security(("bearerAuth" = [])),
    params(
        ("period" = Option<String>, Query, pattern = "^(7d|30d|90d|1y|all)$", description = "Time window (default 30d). (default \"30d\"; one of `7d`, `30d`, `90d`, `1y`, `all`)")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Performance>),
        (status = 400, response = Platform400InvalidRequest)
    ),
)]
#[get("/account/performance?<period>")]
async fn performance(
    app: &State<App>,
    user: AuthUser,
    period: Option<&str>,
) -> ApiResult<Success<Performance>> {
    reports::performance(app, &user.0, Period::parse(period)?)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "account",
    operation_id = "accountStats",
    summary = "Account statistics",
    description = "Account age, balance extremes, all-time trading totals, best month, current streak and risk settings.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Stats>)
    ),
)]
#[get("/account/stats")]
async fn stats(app: &State<App>, user: AuthUser) -> ApiResult<Success<Stats>> {
    reports::stats(app, &user.0).await.map(ok)
}
