//! `/api/v1/account/*`: balance, positions, history, performance and statistics.

use rocket::{Route, State, get, post, routes};

use crate::App;
use crate::api::envelope::{Success, ok};
use crate::api::query::{Page, parse_time};
use crate::auth::AuthUser;
use crate::engine::reports::{
    self, Balance, History, Performance, Period, PositionView, Positions, Stats,
};
use crate::engine::{self, PositionClosed};
use crate::error::ApiResult;
use crate::store::trading::TradeFilter;

pub const HISTORY_DEFAULT_PER_PAGE: i64 = 50;
pub const HISTORY_MAX_PER_PAGE: i64 = 100;

pub fn routes() -> Vec<Route> {
    routes![
        balance,
        positions,
        position,
        close_position,
        history,
        performance,
        stats
    ]
}

#[get("/account/balance")]
async fn balance(app: &State<App>, user: AuthUser) -> ApiResult<Success<Balance>> {
    reports::balance(app, &user.0).await.map(ok)
}

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

#[get("/account/positions/<position_id>")]
async fn position(
    app: &State<App>,
    user: AuthUser,
    position_id: &str,
) -> ApiResult<Success<PositionView>> {
    reports::position(app, &user.0, position_id).await.map(ok)
}

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
    let filter = TradeFilter {
        symbol: symbol.map(str::to_uppercase),
        from_ms: parse_time("start_date", start_date, false)?,
        until_ms: parse_time("end_date", end_date, true)?,
    };
    reports::history(app, &user.0, &filter, status, page)
        .await
        .map(ok)
}

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

#[get("/account/stats")]
async fn stats(app: &State<App>, user: AuthUser) -> ApiResult<Success<Stats>> {
    reports::stats(app, &user.0).await.map(ok)
}
