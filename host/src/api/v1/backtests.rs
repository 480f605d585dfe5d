//! `/api/v1/backtests`: a user's backtests: start, list, compare, detail, trades, equity, cancel,
//! delete.

use rocket::{State, delete, get, post};
use serde::Serialize;

use crate::App;
use crate::api::envelope::{Body, Success, ok};
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::backtest::runs::{
    self, BacktestComparison, BacktestDeleted, BacktestEquity, BacktestTrades, BacktestView,
    NewBacktest,
};
use crate::error::ApiResult;

crate::api::handlers![
    create, list, compare, detail, trades, equity, cancel, remove
];

#[derive(Debug, Serialize, utoipa::ToSchema)]
struct BacktestList {
    backtests: Vec<BacktestView>,
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsCreate",
    summary = "Start a backtest",
    description = "Replays a strategy over historical candles with the engine a bot runs (exits, the settings' and plan's checks, every active risk rule, fills at the paper venue's prices with its fee, slippage and spread unless overridden, the same books), in the background. Candles come from the store; for a broker source (default `paper`) missing ones are downloaded first. Progress is announced on the WebSocket channel `backtests`. The plan limits runs at once and candles per run (symbols × steps): free 1 and 200,000, basic 1 and 1,000,000, pro 2 and 5,000,000, enterprise 4 and 20,000,000.",
    security(("bearerAuth" = [])),
    request_body(content = NewBacktest, example = json!({"strategy": "ema-cross", "symbols": ["BTC-USD", "ETH-USD"], "interval": "5m", "start": "2024-03-01", "end": "2024-03-08", "initial_capital": 10000, "config": {"fast_period": 9}})),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestView>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrExceedsTierLimit)
    ),
)]
#[post("/backtests", data = "<body>")]
async fn create(
    app: &State<App>,
    user: AuthUser,
    body: Body<NewBacktest>,
) -> ApiResult<Success<BacktestView>> {
    runs::start(app, &user.0, body.0).await.map(ok)
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsList",
    summary = "Backtests",
    description = "The user's backtests, newest first, with their status and progress.",
    security(("bearerAuth" = [])),
    responses((status = 200, description = "OK", body = Enveloped<BacktestList>)),
)]
#[get("/backtests")]
async fn list(app: &State<App>, user: AuthUser) -> ApiResult<Success<BacktestList>> {
    let backtests = runs::list(app, &user.0).await?;
    Ok(ok(BacktestList { backtests }))
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsCompare",
    summary = "Backtests side by side",
    description = "Two to ten of the user's runs that have a report, in the order given: each as its detail shows it, and every figure of the reports side by side with the run that did best by it (the smallest drawdown, fees and losing trades; the largest of the rest).",
    security(("bearerAuth" = [])),
    params(("ids" = String, Query, description = "Backtest ids, comma-separated.")),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestComparison>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/backtests/compare?<ids>")]
async fn compare(
    app: &State<App>,
    user: AuthUser,
    ids: Option<&str>,
) -> ApiResult<Success<BacktestComparison>> {
    runs::compare(app, &user.0, ids.unwrap_or_default())
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsDetail",
    summary = "A backtest",
    description = "Status, progress and, once it has ended with a report, the platform's performance metrics and a summary.",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "The backtest.")),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestView>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/backtests/<id>")]
async fn detail(app: &State<App>, user: AuthUser, id: &str) -> ApiResult<Success<BacktestView>> {
    runs::detail(app, &user.0, id).await.map(ok)
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsTrades",
    summary = "Trades of a backtest",
    description = "Every completed trade (exact decimals, as the books hold them) and the positions open at the end.",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "The backtest.")),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestTrades>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/backtests/<id>/trades")]
async fn trades(app: &State<App>, user: AuthUser, id: &str) -> ApiResult<Success<BacktestTrades>> {
    runs::trades(app, &user.0, id).await.map(ok)
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsEquity",
    summary = "Equity and drawdown of a backtest",
    description = "The equity after each step, thinned to at most 1,000 points, with the drawdown from the running peak.",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "The backtest.")),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestEquity>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/backtests/<id>/equity")]
async fn equity(app: &State<App>, user: AuthUser, id: &str) -> ApiResult<Success<BacktestEquity>> {
    runs::equity(app, &user.0, id).await.map(ok)
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsCancel",
    summary = "Cancel a backtest",
    description = "Stops a queued or running backtest; it ends `cancelled` with the report of what it replayed.",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "The backtest.")),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestView>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[post("/backtests/<id>/cancel")]
async fn cancel(app: &State<App>, user: AuthUser, id: &str) -> ApiResult<Success<BacktestView>> {
    runs::cancel(app, &user.0, id).await.map(ok)
}

#[utoipa::path(
    tag = "backtests",
    operation_id = "backtestsDelete",
    summary = "Delete a backtest",
    description = "Removes a backtest and its report (a running one is cancelled first).",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "The backtest.")),
    responses(
        (status = 200, description = "OK", body = Enveloped<BacktestDeleted>),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[delete("/backtests/<id>")]
async fn remove(app: &State<App>, user: AuthUser, id: &str) -> ApiResult<Success<BacktestDeleted>> {
    runs::delete(app, &user.0, id).await.map(ok)
}
