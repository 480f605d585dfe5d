//! Companion set E: the investor dashboard under `/api/v1/dashboard`. Success is
//! `{success: true, data}`; errors are `{success: false, error}`.

use rocket::{State, get, post};
use serde_json::Value;

use super::{Data, Json, int_param};
use crate::App;
use crate::api::envelope::OptionalBody;
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::performance::dashboard::{self, Metrics};

crate::api::handlers![
    metrics,
    equity_curve,
    drawdown_curve,
    update_snapshot,
    investor_summary,
    monthly_report,
    monthly_reports
];

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardMetrics",
    summary = "Performance metrics",
    description = "Returns, volatility, Sharpe, Sortino, Calmar, drawdowns and trade statistics of the account.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<Metrics>)
    ),
)]
#[get("/api/v1/dashboard/metrics")]
async fn metrics(app: &State<App>, user: AuthUser) -> ApiResult<Data<Metrics>> {
    dashboard::metrics(app, &user.0).await.map(Data)
}

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardEquityCurve",
    summary = "Equity curve",
    description = "The snapshot equity series, oldest first.",
    security(("bearerAuth" = [])),
    params(
        ("days" = Option<i64>, Query, description = "Only the last N days; absent or 0 means all. Negative or non-integer: 400.", minimum = 0)
    ),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<Vec<dashboard::EquityAt>>),
        (status = 400, description = "Bad request: days must be a non-negative integer", body = CompanionError)
    ),
)]
#[get("/api/v1/dashboard/equity-curve?<days>")]
async fn equity_curve(
    app: &State<App>,
    user: AuthUser,
    days: Option<&str>,
) -> ApiResult<Data<Vec<dashboard::EquityAt>>> {
    let since = dashboard::since(days);
    dashboard::equity_curve(app, &user.0, since).await.map(Data)
}

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardDrawdownCurve",
    summary = "Drawdown curve",
    description = "Drawdown from the running peak (positive percent) for each snapshot.",
    security(("bearerAuth" = [])),
    params(
        ("days" = Option<i64>, Query, description = "Only the last N days; absent or 0 means all. Negative or non-integer: 400.", minimum = 0)
    ),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<Vec<dashboard::DrawdownAt>>),
        (status = 400, description = "Bad request: days must be a non-negative integer", body = CompanionError)
    ),
)]
#[get("/api/v1/dashboard/drawdown-curve?<days>")]
async fn drawdown_curve(
    app: &State<App>,
    user: AuthUser,
    days: Option<&str>,
) -> ApiResult<Data<Vec<dashboard::DrawdownAt>>> {
    let since = dashboard::since(days);
    dashboard::drawdown_curve(app, &user.0, since)
        .await
        .map(Data)
}

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardUpdateSnapshot",
    summary = "Record a snapshot",
    description = "Records a performance snapshot given by the client (the KPI tracker also records one per interval). NAV = equity = cash + positions value.",
    security(("bearerAuth" = [])),
    request_body(content = SnapshotInput, example = json!({"cash": 800.0, "positions_value": 300.0, "unrealized_pnl": 12.0, "realized_pnl_today": 15.0, "total_trades": 10, "winning_trades": 6, "losing_trades": 4})),
    responses(
        (status = 200, description = "OK", body = SnapshotUpdated),
        (status = 400, description = "Bad request: Request body is required; Missing required fields: positions_value, unrealized_pnl; total_trades must be a non-negative integer", body = CompanionError)
    ),
)]
#[post("/api/v1/dashboard/update-snapshot", data = "<body>")]
async fn update_snapshot(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<Value>,
) -> ApiResult<Json<SnapshotUpdated>> {
    let snapshot = dashboard::update_snapshot(app, &user.0, body.0).await?;
    Ok(Json(SnapshotUpdated {
        success: true,
        message: "Snapshot updated successfully",
        data: snapshot,
    }))
}

#[derive(serde::Serialize, utoipa::ToSchema)]
struct SnapshotUpdated {
    success: bool,
    message: &'static str,
    data: dashboard::SnapshotRecorded,
}

/// The body of `update-snapshot`, described from the fields `dashboard::update_snapshot`
/// requires: amounts are numbers and counts whole numbers (either may come as a numeric string).
struct SnapshotInput;

impl utoipa::PartialSchema for SnapshotInput {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        dashboard::SNAPSHOT_FIELDS
            .iter()
            .fold(
                ObjectBuilder::new().schema_type(Type::Object),
                |object, field| {
                    let value = if dashboard::SNAPSHOT_COUNTS.contains(field) {
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(0))
                    } else {
                        ObjectBuilder::new().schema_type(Type::Number)
                    };
                    object.property(*field, value).required(*field)
                },
            )
            .into()
    }
}

impl utoipa::ToSchema for SnapshotInput {}

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardInvestorSummary",
    summary = "Investor summary",
    description = "NAV, returns, risk ratios, trade statistics, strategy allocation and diversification in one object.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<dashboard::InvestorSummary>)
    ),
)]
#[get("/api/v1/dashboard/investor-summary")]
async fn investor_summary(
    app: &State<App>,
    user: AuthUser,
) -> ApiResult<Data<dashboard::InvestorSummary>> {
    dashboard::investor_summary(app, &user.0).await.map(Data)
}

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardMonthlyReport",
    summary = "Monthly report",
    description = "One month's equity, return, trades, win rate and drawdown.",
    security(("bearerAuth" = [])),
    params(
        ("year" = i64, Path, description = "2000 to 2100.", minimum = 2000, maximum = 2100, example = json!(2026)),
        ("month" = i64, Path, description = "1 to 12.", minimum = 1, maximum = 12, example = json!(11))
    ),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<dashboard::MonthReport>),
        (status = 400, description = "Bad request: Month must be between 1 and 12; Year must be between 2000 and 2100", body = CompanionError)
    ),
)]
#[get("/api/v1/dashboard/monthly-report/<year>/<month>")]
async fn monthly_report(
    app: &State<App>,
    user: AuthUser,
    year: &str,
    month: &str,
) -> ApiResult<Data<dashboard::MonthReport>> {
    let year = int_param("year", Some(year))?.unwrap_or_default();
    let month = int_param("month", Some(month))?.unwrap_or_default();
    dashboard::monthly_report(app, &user.0, year, month)
        .await
        .map(Data)
}

#[utoipa::path(
    tag = "companion-dashboard",
    operation_id = "dashboardMonthlyReports",
    summary = "Monthly reports",
    description = "A report for each month with snapshots, oldest first.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = DataEnvelope<Vec<dashboard::MonthReport>>)
    ),
)]
#[get("/api/v1/dashboard/monthly-reports")]
async fn monthly_reports(
    app: &State<App>,
    user: AuthUser,
) -> ApiResult<Data<Vec<dashboard::MonthReport>>> {
    dashboard::monthly_reports(app, &user.0).await.map(Data)
}
