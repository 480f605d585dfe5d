//! Companion set F: KPI snapshots, tracker status and risk alarms under `/api`. Success is
//! `{success: true, data}`; errors are `{success: false, error}`.

use rocket::{State, get};

use super::{Data, Json, int_param};
use crate::App;
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::performance::{Kpi, kpi};
use crate::store::{iso8601, now_ms};

crate::api::handlers![
    current,
    history,
    summary,
    status,
    active_alarms,
    alarm_history,
    overview,
    health
];

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "kpiCurrent",
    summary = "Current KPIs",
    description = "The latest KPI snapshot of the account.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<Kpi>),
        (status = 404, description = "Not found: No KPI data available", body = CompanionError)
    ),
)]
#[get("/api/kpi/current")]
async fn current(app: &State<App>, user: AuthUser) -> ApiResult<Data<Kpi>> {
    kpi::current(app, &user.0).await.map(Data)
}

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "kpiHistory",
    summary = "KPI history",
    description = "KPI snapshots of the last `hours`, oldest first.",
    security(("bearerAuth" = [])),
    params(
        ("hours" = Option<i64>, Query, description = "Look-back in hours (default 24); must be a positive integer (400 otherwise).", minimum = 1)
    ),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<kpi::KpiHistory>),
        (status = 400, description = "Bad request: hours must be a positive integer", body = CompanionError)
    ),
)]
#[get("/api/kpi/history?<hours>")]
async fn history(
    app: &State<App>,
    user: AuthUser,
    hours: Option<&str>,
) -> ApiResult<Data<kpi::KpiHistory>> {
    let hours = kpi::hours(int_param("hours", hours)?)?;
    kpi::history(app, &user.0, hours).await.map(Data)
}

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "kpiSummary",
    summary = "KPI summary",
    description = "Returns, risk ratios, trade statistics, exposure and account figures, or `status: no_data`.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<kpi::KpiSummary>)
    ),
)]
#[get("/api/kpi/summary")]
async fn summary(app: &State<App>, user: AuthUser) -> ApiResult<Data<kpi::KpiSummary>> {
    kpi::summary(app, &user.0.user_id).await.map(Data)
}

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "kpiTrackingStatus",
    summary = "KPI tracker status",
    description = "Whether the KPI tracker runs, its intervals, and the times and counts of the caller's snapshots and reports.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<kpi::TrackerStatus>)
    ),
)]
#[get("/api/performance/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Data<kpi::TrackerStatus>> {
    kpi::status(app, &user.0).await.map(Data)
}

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "alarmsActive",
    summary = "Active risk alarms",
    description = "The user's active risk alarms.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<kpi::Alarms>)
    ),
)]
#[get("/api/alarms/active")]
async fn active_alarms(app: &State<App>, user: AuthUser) -> ApiResult<Data<kpi::Alarms>> {
    kpi::active_alarms(app, &user.0).await.map(Data)
}

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "alarmsHistory",
    summary = "Alarm history",
    description = "The alarms raised in the last `hours`.",
    security(("bearerAuth" = [])),
    params(
        ("hours" = Option<i64>, Query, description = "Look-back in hours (default 24); must be a positive integer (400 otherwise).", minimum = 1)
    ),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<kpi::Alarms>),
        (status = 400, description = "Bad request: hours must be a positive integer", body = CompanionError)
    ),
)]
#[get("/api/alarms/history?<hours>")]
async fn alarm_history(
    app: &State<App>,
    user: AuthUser,
    hours: Option<&str>,
) -> ApiResult<Data<kpi::Alarms>> {
    let hours = kpi::hours(int_param("hours", hours)?)?;
    kpi::alarm_history(app, &user.0, hours).await.map(Data)
}

#[utoipa::path(
    tag = "companion-kpi",
    operation_id = "kpiOverview",
    summary = "Risk dashboard overview",
    description = "The KPI summary, tracker status, active alarms and the health of the monitoring in one call.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<kpi::Overview>)
    ),
)]
#[get("/api/dashboard/overview")]
async fn overview(app: &State<App>, user: AuthUser) -> ApiResult<Data<kpi::Overview>> {
    kpi::overview(app, &user.0).await.map(Data)
}

#[utoipa::path(
    tag = "health",
    operation_id = "kpiHealth",
    summary = "Health check (KPI set)",
    description = "Whether the server answers (companion set F). No token needed.",
    responses(
        (status = 200, description = "OK", body = KpiHealth)
    ),
)]
#[get("/api/health")]
fn health() -> Json<KpiHealth> {
    Json(KpiHealth {
        success: true,
        status: "healthy",
        service: "tradehost",
        timestamp: iso8601(now_ms()),
    })
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct KpiHealth {
    success: bool,
    /// `healthy`.
    status: &'static str,
    /// `tradehost`.
    service: &'static str,
    #[schema(format = DateTime)]
    timestamp: String,
}
