//! `/api/v1/analytics/*`: the dashboard, trade breakdowns and exports.

use rocket::http::{ContentType, Header};
use rocket::{Responder, Route, State, get, post, routes};

use crate::App;
use crate::analytics::{self, Dashboard, GroupBy, TradeAnalytics};
use crate::api::envelope::{Body, Success, ok};
use crate::api::query::parse_time;
use crate::auth::AuthUser;
use crate::engine::reports::Period;
use crate::error::ApiResult;
use crate::export::{self, ExportRequest, Exported};

pub fn routes() -> Vec<Route> {
    routes![dashboard, trades, create_export, download_export]
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
