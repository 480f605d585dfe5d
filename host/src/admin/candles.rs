//! The historical candles backtests run on, kept by operators: imports, downloads and deletions,
//! each recorded in the audit log.

use serde::Deserialize;
use serde_json::{Value, json};

use super::record;
use crate::App;
use crate::auth::{ClientMeta, Principal};
use crate::candles::{self, GapReport, ImportReport, SeriesSummary};
use crate::error::{ApiError, ApiResult};
use crate::store::candles::SeriesKey;
use crate::store::now_ms;

/// The largest CSV file one import request may carry.
pub const MAX_IMPORT_BYTES: u64 = 128 << 20;
/// The most candles one download request fetches (a year of 5-minute candles is 105,120).
pub const MAX_DOWNLOAD_CANDLES: i64 = 200_000;

/// What a download asks for.
#[derive(utoipa::ToSchema, Debug, Deserialize)]
pub struct DownloadRequest {
    /// A broker plugin's name; the series' source.
    #[schema(example = "paper")]
    pub broker: String,
    #[schema(example = "BTC-USD")]
    pub symbol: String,
    /// 1m, 5m or 1h.
    #[schema(example = "5m")]
    pub interval: String,
    /// The first candle's open time: ISO 8601, a date, or epoch milliseconds.
    #[schema(example = "2024-01-01")]
    pub from: String,
    /// The last candle's open time (default: the last closed candle).
    #[schema(example = "2024-01-31T23:55:00Z")]
    pub to: Option<String>,
}

/// What the audit log keeps of a change to a series.
fn audited(key: &SeriesKey, candles: usize, replaced: Option<usize>) -> Value {
    let mut entry = json!({"source": key.source, "symbol": key.symbol,
                           "interval": key.interval, "candles": candles});
    if let Some(replaced) = replaced {
        entry["replaced"] = replaced.into();
    }
    entry
}

fn time_field(field: &str, text: &str) -> ApiResult<i64> {
    candles::parse_time(text).ok_or_else(|| {
        ApiError::invalid_field(field, "a time: ISO 8601, a date (YYYY-MM-DD) or epoch ms")
    })
}

pub async fn list(app: &App) -> ApiResult<Vec<SeriesSummary>> {
    candles::list(&app.db).await
}

pub async fn gaps(app: &App, source: &str, symbol: &str, interval: &str) -> ApiResult<GapReport> {
    let key = candles::series_key(source, symbol, interval)?;
    candles::gaps_of(&app.db, &key).await
}

pub async fn import(
    app: &App,
    admin: &Principal,
    meta: &ClientMeta,
    (source, symbol, interval): (&str, &str, &str),
    csv: Vec<u8>,
) -> ApiResult<ImportReport> {
    let key = candles::series_key(source, symbol, interval)?;
    let report = candles::import_csv(&app.db, &key, csv).await?;
    record(
        app,
        admin,
        meta,
        "candles.imported",
        audited(&key, report.received, Some(report.replaced)),
    )
    .await?;
    Ok(report)
}

pub async fn download(
    app: &App,
    admin: &Principal,
    meta: &ClientMeta,
    request: DownloadRequest,
) -> ApiResult<ImportReport> {
    let key = candles::series_key(&request.broker, &request.symbol, &request.interval)?;
    let from = time_field("from", &request.from)?;
    let to = match &request.to {
        Some(to) => time_field("to", to)?,
        None => now_ms(),
    };
    let broker = crate::brokers::plugin(app, &key.source)?;
    let report = candles::download(
        &app.db,
        broker,
        app.plugins.runtime().clone(),
        &key,
        (from, to),
        MAX_DOWNLOAD_CANDLES,
    )
    .await?;
    record(
        app,
        admin,
        meta,
        "candles.downloaded",
        audited(&key, report.received, Some(report.replaced)),
    )
    .await?;
    Ok(report)
}

pub async fn delete(
    app: &App,
    admin: &Principal,
    meta: &ClientMeta,
    source: &str,
    symbol: &str,
    interval: &str,
) -> ApiResult<SeriesSummary> {
    let key = candles::series_key(source, symbol, interval)?;
    let deleted = candles::delete(&app.db, &key).await?;
    record(
        app,
        admin,
        meta,
        "candles.deleted",
        audited(&key, deleted.candles as usize, None),
    )
    .await?;
    Ok(deleted)
}
