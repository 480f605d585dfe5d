//! Companion set E: the investor dashboard under `/api/v1/dashboard`. Success is
//! `{success: true, data}`; errors are `{success: false, error}`.

use rocket::{Route, State, get, post, routes};
use serde_json::{Value, json};

use super::{Data, Json, int_param};
use crate::App;
use crate::api::envelope::OptionalBody;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::performance::dashboard::{self, Metrics};

pub fn routes() -> Vec<Route> {
    routes![
        metrics,
        equity_curve,
        drawdown_curve,
        update_snapshot,
        investor_summary,
        monthly_report,
        monthly_reports
    ]
}

#[get("/api/v1/dashboard/metrics")]
async fn metrics(app: &State<App>, user: AuthUser) -> ApiResult<Data<Metrics>> {
    dashboard::metrics(app, &user.0).await.map(Data)
}

#[get("/api/v1/dashboard/equity-curve?<days>")]
async fn equity_curve(
    app: &State<App>,
    user: AuthUser,
    days: Option<&str>,
) -> ApiResult<Data<Vec<Value>>> {
    let since = dashboard::since(days);
    dashboard::equity_curve(app, &user.0, since).await.map(Data)
}

#[get("/api/v1/dashboard/drawdown-curve?<days>")]
async fn drawdown_curve(
    app: &State<App>,
    user: AuthUser,
    days: Option<&str>,
) -> ApiResult<Data<Vec<Value>>> {
    let since = dashboard::since(days);
    dashboard::drawdown_curve(app, &user.0, since)
        .await
        .map(Data)
}

#[post("/api/v1/dashboard/update-snapshot", data = "<body>")]
async fn update_snapshot(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<Value>,
) -> ApiResult<Json<Value>> {
    let snapshot = dashboard::update_snapshot(app, &user.0, body.0).await?;
    Ok(Json(json!({
        "success": true,
        "message": "Snapshot updated successfully",
        "data": snapshot,
    })))
}

#[get("/api/v1/dashboard/investor-summary")]
async fn investor_summary(app: &State<App>, user: AuthUser) -> ApiResult<Data<Value>> {
    dashboard::investor_summary(app, &user.0).await.map(Data)
}

#[get("/api/v1/dashboard/monthly-report/<year>/<month>")]
async fn monthly_report(
    app: &State<App>,
    user: AuthUser,
    year: &str,
    month: &str,
) -> ApiResult<Data<Value>> {
    let year = int_param("year", Some(year))?.unwrap_or_default();
    let month = int_param("month", Some(month))?.unwrap_or_default();
    dashboard::monthly_report(app, &user.0, year, month)
        .await
        .map(Data)
}

#[get("/api/v1/dashboard/monthly-reports")]
async fn monthly_reports(app: &State<App>, user: AuthUser) -> ApiResult<Data<Vec<Value>>> {
    dashboard::monthly_reports(app, &user.0).await.map(Data)
}
