//! `/api/v1/analytics/*`: the dashboard and trade breakdowns.

use rocket::{Route, State, get, routes};

use crate::App;
use crate::analytics::{self, Dashboard, GroupBy, TradeAnalytics};
use crate::api::envelope::{Success, ok};
use crate::auth::AuthUser;
use crate::engine::reports::Period;
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![dashboard, trades]
}

#[get("/analytics/dashboard")]
async fn dashboard(app: &State<App>, user: AuthUser) -> ApiResult<Success<Dashboard>> {
    analytics::dashboard(app, &user.0).await.map(ok)
}

#[get("/analytics/trades?<period>&<symbol>&<group_by>")]
async fn trades(
    app: &State<App>,
    user: AuthUser,
    period: Option<&str>,
    symbol: Option<&str>,
    group_by: Option<&str>,
) -> ApiResult<Success<TradeAnalytics>> {
    let period = Period::parse(period)?;
    let group_by = GroupBy::parse(group_by)?;
    analytics::trades(app, &user.0, period, symbol, group_by)
        .await
        .map(ok)
}
