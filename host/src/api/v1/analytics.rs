//! `/api/v1/analytics/*`: the dashboard, trade breakdowns and exports.

use rocket::http::{ContentType, Header};
use rocket::{Responder, State, get, post};

use crate::App;
use crate::analytics::{self, Dashboard, GroupBy, TradeAnalytics};
use crate::api::envelope::{Body, Success, ok};
use crate::api::openapi::prelude::*;
use crate::api::query::parse_time;
use crate::auth::AuthUser;
use crate::engine::reports::Period;
use crate::error::ApiResult;
use crate::export::{self, ExportRequest, Exported};

crate::api::handlers![dashboard, trades, create_export, download_export];

#[utoipa::path(
    tag = "analytics",
    operation_id = "analyticsDashboard",
    summary = "Dashboard figures",
    description = "P&L, return, trades and win rate for today, the week and the month; open positions; equity; the month's top symbol.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Dashboard>)
    ),
)]
#[get("/analytics/dashboard")]
async fn dashboard(app: &State<App>, user: AuthUser) -> ApiResult<Success<Dashboard>> {
    analytics::dashboard(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "analytics",
    operation_id = "analyticsTrades",
    summary = "Trade breakdown",
    description = "Completed trades by outcome, symbol and hour of close, hold time, best and worst trade, and optionally grouped by hour, day, week or month.",
    security(("bearerAuth" = [])),
    params(
        ("period" = Option<String>, Query, pattern = "^(7d|30d|90d|1y|all)$", description = "Time window (default 30d). (default \"30d\"; one of `7d`, `30d`, `90d`, `1y`, `all`)"),
        ("symbol" = Option<String>, Query, description = "Only this pair.", example = json!("BTC-USD")),
        ("group_by" = Option<String>, Query, pattern = "^(hour|day|week|month)$", description = "Adds `groups`. (one of `hour`, `day`, `week`, `month`)")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<TradeAnalytics>),
        (status = 400, response = Platform400InvalidRequest)
    ),
)]
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

#[utoipa::path(
    tag = "analytics",
    operation_id = "analyticsCreateExport",
    summary = "Create an export",
    description = "Writes trades, positions, the ledger, daily P&L or the equity curve as CSV or JSON and answers a download link that works without a bearer token for 15 minutes.",
    security(("bearerAuth" = [])),
    request_body(content = ExportRequest, example = json!({"format": "csv", "data_type": "trades", "start_date": "2026-11-01", "end_date": "2026-11-21", "include_closed_positions": true, "include_open_positions": false})),
    responses(
        (status = 200, description = "OK", body = Enveloped<Exported>),
        (status = 400, response = Platform400InvalidBody),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/analytics/export", data = "<body>")]
async fn create_export(
    app: &State<App>,
    user: AuthUser,
    body: Body<ExportRequest>,
) -> ApiResult<Success<Exported>> {
    let from_ms = parse_time("start_date", body.0.start_date.as_deref(), false)?;
    let until_ms = parse_time("end_date", body.0.end_date.as_deref(), true)?;
    export::create(app, &user.0, body.0, from_ms, until_ms)
        .await
        .map(ok)
}

/// An export file, as an attachment.
#[derive(Responder)]
struct Download {
    body: Vec<u8>,
    content_type: ContentType,
    disposition: Header<'static>,
}

/// No bearer token: the link's own token authorises it (browsers follow links without headers).
#[utoipa::path(
    tag = "analytics",
    operation_id = "analyticsDownloadExport",
    summary = "Download an export",
    description = "The export file as an attachment. No bearer token: the link's own `token` opens only this export, for 15 minutes. CSV cells starting with `=`, `+` or `@` are prefixed with `'`.",
    params(
        ("export_id" = String, Path, description = "From the create answer.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10")),
        ("token" = String, Query, description = "The token of the download link.", example = json!("dl_3c9f..."))
    ),
    responses(
        (status = 200, description = "The file (`Content-Disposition: attachment`): CSV, or JSON rows for a JSON export.", content(
            (String = "text/csv", example = json!("trade_id,symbol,side,...\r\n")),
            (Vec<Object> = "application/json")
        )),
        (status = 401, response = Platform401TokenExpiredOrTokenInvalid),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/analytics/export/<export_id>?<token>")]
async fn download_export(
    app: &State<App>,
    export_id: &str,
    token: Option<&str>,
) -> ApiResult<Download> {
    let (format, body) = export::download(app, export_id, token).await?;
    Ok(Download {
        body,
        content_type: if format == "json" {
            ContentType::JSON
        } else {
            ContentType::CSV
        },
        disposition: Header::new(
            "Content-Disposition",
            format!("attachment; filename=\"tradehost-{export_id}.{format}\""),
        ),
    })
}
