//! Companion set F: KPI snapshots, tracker status and risk alarms under `/api`. Success is
//! `{success: true, data}`; errors are `{success: false, error}`.

use rocket::{Route, State, get, routes};
use serde_json::{Value, json};

use super::{Data, Json, int_param};
use crate::App;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::performance::{Kpi, kpi};
use crate::store::{iso8601, now_ms};

pub fn routes() -> Vec<Route> {
    routes![
        current,
        history,
        summary,
        status,
        active_alarms,
        alarm_history,
        overview,
        health
    ]
}

#[get("/api/kpi/current")]
async fn current(app: &State<App>, user: AuthUser) -> ApiResult<Data<Kpi>> {
    kpi::current(app, &user.0).await.map(Data)
}

#[get("/api/kpi/history?<hours>")]
async fn history(app: &State<App>, user: AuthUser, hours: Option<&str>) -> ApiResult<Data<Value>> {
    let hours = kpi::hours(int_param("hours", hours)?)?;
    kpi::history(app, &user.0, hours).await.map(Data)
}

#[get("/api/kpi/summary")]
async fn summary(app: &State<App>, user: AuthUser) -> ApiResult<Data<Value>> {
    kpi::summary(app, &user.0.user_id).await.map(Data)
}

#[get("/api/performance/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Data<Value>> {
    kpi::status(app, &user.0).await.map(Data)
}

#[get("/api/alarms/active")]
async fn active_alarms(app: &State<App>, user: AuthUser) -> ApiResult<Data<Value>> {
    kpi::active_alarms(app, &user.0).await.map(Data)
}

#[get("/api/alarms/history?<hours>")]
async fn alarm_history(
    app: &State<App>,
    user: AuthUser,
    hours: Option<&str>,
) -> ApiResult<Data<Value>> {
    let hours = kpi::hours(int_param("hours", hours)?)?;
    kpi::alarm_history(app, &user.0, hours).await.map(Data)
}

#[get("/api/dashboard/overview")]
async fn overview(app: &State<App>, user: AuthUser) -> ApiResult<Data<Value>> {
    kpi::overview(app, &user.0).await.map(Data)
}

#[get("/api/health")]
fn health() -> Json<Value> {
    Json(json!({
        "success": true,
        "status": "healthy",
        "service": "tradehost",
        "timestamp": iso8601(now_ms()),
    }))
}
