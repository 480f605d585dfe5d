//! `/api/v1/admin/candles`: the historical candles backtests run on (admins only).

use rocket::data::{Data, ToByteUnit};
use rocket::{State, delete, get, post};
use serde::Serialize;

use crate::App;
use crate::admin::candles::{self, DownloadRequest, MAX_IMPORT_BYTES};
use crate::api::envelope::{Body, Success, ok};
use crate::api::openapi::prelude::*;
use crate::auth::{AdminUser, ClientMeta};
use crate::candles::{GapReport, ImportReport, SeriesSummary};
use crate::error::{ApiError, ApiResult, ErrorCode};

crate::api::handlers![list, import, download, gaps, remove];

#[derive(Debug, Serialize, utoipa::ToSchema)]
struct SeriesList {
    series: Vec<SeriesSummary>,
}

#[utoipa::path(
    tag = "candles",
    operation_id = "candlesList",
    summary = "Stored candle series",
    description = "Every series of historical candles (source, symbol, interval) with its first and last candle, the slots between them that hold none (`missing`) and its size.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<SeriesList>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/candles")]
async fn list(app: &State<App>, _admin: AdminUser) -> ApiResult<Success<SeriesList>> {
    let series = candles::list(app).await?;
    Ok(ok(SeriesList { series }))
}

#[utoipa::path(
    tag = "candles",
    operation_id = "candlesImport",
    summary = "Import candles from CSV",
    description = "The body is CSV: rows of timestamp (epoch ms or s, or ISO 8601 UTC), open, high, low, close, volume; a header row is allowed and further columns are ignored. Every candle must open on a boundary of the interval with positive prices inside its range. One bad row and nothing is imported: `details.rows` names each bad row by its line (the first 20). Candles at a time already stored replace them. At most 128 MiB.",
    security(("bearerAuth" = [])),
    params(
        ("symbol" = String, Query, description = "The pair (BASE-QUOTE).", example = json!("BTC-USD")),
        ("interval" = String, Query, pattern = "^(1m|5m|1h)$", description = "Bar length: `1m`, `5m` or `1h`."),
        ("source" = Option<String>, Query, description = "The series' source name (default `csv`).", example = json!("csv"))
    ),
    request_body(content = String, content_type = "text/csv", example = json!("timestamp,open,high,low,close,volume\n1704067200000,42000,42100,41950,42050,12.5\n")),
    responses(
        (status = 200, description = "OK", body = Enveloped<ImportReport>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/admin/candles/import?<symbol>&<interval>&<source>", data = "<body>")]
async fn import(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    symbol: Option<&str>,
    interval: Option<&str>,
    source: Option<&str>,
    body: Data<'_>,
) -> ApiResult<Success<ImportReport>> {
    let csv = body
        .open(MAX_IMPORT_BYTES.bytes())
        .into_bytes()
        .await
        .map_err(|err| ApiError::invalid_field("body", format!("unreadable: {err}")))?;
    if !csv.is_complete() {
        return Err(
            ApiError::code(ErrorCode::PayloadTooLarge).detail("limit_bytes", MAX_IMPORT_BYTES)
        );
    }
    // A missing name is refused by its field, as a bad one is.
    let series = (
        source.unwrap_or("csv"),
        symbol.unwrap_or_default(),
        interval.unwrap_or_default(),
    );
    candles::import(app, &admin.0, &meta, series, csv.into_inner())
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "candles",
    operation_id = "candlesDownload",
    summary = "Download candles through a broker",
    description = "Fetches the closed candles of a range through a broker plugin's `candles` (the paper market, or a venue the server reaches) into the series whose source is the broker's name; at most 200,000 candles per request.",
    security(("bearerAuth" = [])),
    request_body(content = DownloadRequest, example = json!({"broker": "paper", "symbol": "BTC-USD", "interval": "5m", "from": "2024-01-01", "to": "2024-01-31T23:55:00Z"})),
    responses(
        (status = 200, description = "OK", body = Enveloped<ImportReport>),
        (status = 400, response = Platform400InvalidRequestOrUnsupportedBroker),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 502, response = Platform502BrokerError)
    ),
)]
#[post("/admin/candles/download", data = "<body>")]
async fn download(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    body: Body<DownloadRequest>,
) -> ApiResult<Success<ImportReport>> {
    candles::download(app, &admin.0, &meta, body.0)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "candles",
    operation_id = "candlesGaps",
    summary = "Gaps of a series",
    description = "The slots without a candle between a series' first and last candle: how many gaps, and the first 100 with the candles around them.",
    security(("bearerAuth" = [])),
    params(
        ("source" = String, Path, description = "The series' source.", example = json!("csv")),
        ("symbol" = String, Path, description = "The pair.", example = json!("BTC-USD")),
        ("interval" = String, Path, pattern = "^(1m|5m|1h)$", description = "Bar length.")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<GapReport>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/admin/candles/<source>/<symbol>/<interval>/gaps")]
async fn gaps(
    app: &State<App>,
    _admin: AdminUser,
    source: &str,
    symbol: &str,
    interval: &str,
) -> ApiResult<Success<GapReport>> {
    candles::gaps(app, source, symbol, interval).await.map(ok)
}

#[utoipa::path(
    tag = "candles",
    operation_id = "candlesDelete",
    summary = "Delete a series",
    description = "Removes every candle of a series; answers what it held.",
    security(("bearerAuth" = [])),
    params(
        ("source" = String, Path, description = "The series' source.", example = json!("csv")),
        ("symbol" = String, Path, description = "The pair.", example = json!("BTC-USD")),
        ("interval" = String, Path, pattern = "^(1m|5m|1h)$", description = "Bar length.")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<SeriesSummary>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[delete("/admin/candles/<source>/<symbol>/<interval>")]
async fn remove(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    source: &str,
    symbol: &str,
    interval: &str,
) -> ApiResult<Success<SeriesSummary>> {
    candles::delete(app, &admin.0, &meta, source, symbol, interval)
        .await
        .map(ok)
}
