//! Historical candles for backtests: series of OHLCV per (source, symbol, interval), imported
//! from CSV or downloaded through a broker plugin's `candles`, listed, checked for gaps and
//! deleted. Stored in blocks of up to 1,024 slots (`block`), about 42 bytes a candle.
//!
//! Market data is f64 here as at the plugins' boundary: candles are quotes a strategy reads,
//! not amounts in the books.

pub mod block;
pub mod parse;

use std::sync::Arc;

use serde::Serialize;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::Active;
use crate::plugins::bindings::types::Candle;
use crate::store::candles::{self as rows, BlockRow, SeriesKey, SeriesRow};
use crate::store::{Db, iso8601, now_ms};

pub use parse::{RowError, parse_time};

/// The intervals every broker interface names (`wit/types.wit`, `series`), with their length:
/// the intervals candles are kept and charted at.
pub const INTERVALS: [(&str, i64); 3] = [("1m", 60_000), ("5m", 300_000), ("1h", 3_600_000)];
/// Candles one broker call is asked for.
const DOWNLOAD_PAGE: u32 = 1000;
/// The most candles one download from the command line fetches (a download is one series; a
/// year of 1-minute candles is 525,600).
pub const MAX_DOWNLOAD: i64 = 1_000_000;
/// Blocks written per transaction: an import of millions of candles never holds the database's
/// write lock for long, and importing the same data again gives the same series.
const BLOCKS_PER_COMMIT: usize = 64;
/// The most gaps a report lists.
pub const MAX_GAPS_LISTED: usize = 100;

/// The length of an interval by its name.
pub fn interval_ms(interval: &str) -> Option<i64> {
    INTERVALS
        .iter()
        .find(|(name, _)| *name == interval)
        .map(|(_, ms)| *ms)
}

/// Checks a series' names; each refusal names its field.
pub fn series_key(source: &str, symbol: &str, interval: &str) -> ApiResult<SeriesKey> {
    let source = source.trim().to_ascii_lowercase();
    if source.is_empty()
        || source.len() > 32
        || !source
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(ApiError::invalid_field(
            "source",
            "1 to 32 letters, digits, '-' or '_'",
        ));
    }
    let symbol = symbol.trim().to_ascii_uppercase();
    if !crate::settings::valid_pair(&symbol) {
        return Err(ApiError::invalid_field(
            "symbol",
            "a symbol of the form BASE-QUOTE, e.g. BTC-USD",
        ));
    }
    if interval_ms(interval).is_none() {
        return Err(ApiError::invalid_field("interval", "one of 1m, 5m, 1h"));
    }
    Ok(SeriesKey {
        source,
        symbol,
        interval: interval.to_string(),
    })
}

/// What a series holds.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SeriesSummary {
    pub source: String,
    pub symbol: String,
    pub interval: String,
    pub candles: i64,
    pub first_ms: i64,
    pub last_ms: i64,
    pub first: String,
    pub last: String,
    /// Slots between the first and the last candle that hold none.
    pub missing: i64,
    /// Bytes its blocks take (their data, without the database's own overhead).
    pub bytes: i64,
}

impl SeriesSummary {
    fn of(row: SeriesRow) -> Self {
        let step = interval_ms(&row.bar_interval).unwrap_or(1);
        let slots = (row.last_ms - row.first_ms) / step + 1;
        Self {
            first: iso8601(row.first_ms),
            last: iso8601(row.last_ms),
            missing: slots - row.candle_count,
            candles: row.candle_count,
            first_ms: row.first_ms,
            last_ms: row.last_ms,
            bytes: row.bytes,
            source: row.source,
            symbol: row.symbol,
            interval: row.bar_interval,
        }
    }
}

/// Slots without a candle between two candles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Gap {
    /// The open time of the candle before the gap, and of the one after it.
    pub after_ms: i64,
    pub before_ms: i64,
    pub missing: i64,
}

/// The gaps of candles sorted by time.
pub fn gaps(candles: &[Candle], interval_ms: i64) -> Vec<Gap> {
    candles
        .windows(2)
        .filter_map(|pair| {
            let (after_ms, before_ms) = (pair[0].timestamp_ms, pair[1].timestamp_ms);
            let missing = (before_ms - after_ms) / interval_ms - 1;
            (missing > 0).then_some(Gap {
                after_ms,
                before_ms,
                missing,
            })
        })
        .collect()
}

/// The gaps of a series, the first [`MAX_GAPS_LISTED`] of them listed.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct GapReport {
    pub series: SeriesSummary,
    pub gap_count: usize,
    pub gaps: Vec<Gap>,
}

impl GapReport {
    fn of(series: SeriesSummary, mut found: Vec<Gap>) -> Self {
        let gap_count = found.len();
        found.truncate(MAX_GAPS_LISTED);
        Self {
            series,
            gap_count,
            gaps: found,
        }
    }
}

/// What an import or a download did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ImportReport {
    /// Candles read (from the file or the broker).
    pub received: usize,
    /// Of those, how many took the place of a stored candle at the same time.
    pub replaced: usize,
    pub seconds: f64,
    /// The series afterwards, and the gaps between the candles received.
    pub series: SeriesSummary,
    pub gap_count: usize,
    pub gaps: Vec<Gap>,
}

/// Every stored series.
pub async fn list(db: &Db) -> ApiResult<Vec<SeriesSummary>> {
    Ok(rows::series(db)
        .await?
        .into_iter()
        .map(SeriesSummary::of)
        .collect())
}

/// One stored series; `NOT_FOUND` when it holds no candle.
pub async fn summary(db: &Db, key: &SeriesKey) -> ApiResult<SeriesSummary> {
    rows::series_of(db, key)
        .await?
        .map(SeriesSummary::of)
        .ok_or_else(|| not_found(key))
}

fn not_found(key: &SeriesKey) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!(
            "No candles of {} at {} from {}",
            key.symbol, key.interval, key.source
        ),
    )
}

/// Deletes a series; `NOT_FOUND` when there was none.
pub async fn delete(db: &Db, key: &SeriesKey) -> ApiResult<SeriesSummary> {
    let existing = summary(db, key).await?;
    rows::delete_series(db, key).await?;
    Ok(existing)
}

/// The candles of a series opening in `from_ms..=to_ms`, oldest first.
pub async fn load(db: &Db, key: &SeriesKey, from_ms: i64, to_ms: i64) -> ApiResult<Vec<Candle>> {
    let step = series_interval(key)?;
    let blocks = rows::blocks(
        db,
        key,
        block::block_start(from_ms, step),
        block::block_start(to_ms, step),
    )
    .await?;
    let mut candles = Vec::with_capacity(blocks.iter().map(|b| b.candle_count as usize).sum());
    for stored in &blocks {
        block::decode_into(stored.block_start, step, &stored.data, &mut candles)
            .map_err(|err| ApiError::internal(format!("candles of {key:?}: {err}")))?;
    }
    candles.retain(|c| (from_ms..=to_ms).contains(&c.timestamp_ms));
    Ok(candles)
}

/// The gaps of a whole series.
pub async fn gaps_of(db: &Db, key: &SeriesKey) -> ApiResult<GapReport> {
    let series = summary(db, key).await?;
    let candles = load(db, key, series.first_ms, series.last_ms).await?;
    let found = gaps(&candles, series_interval(key)?);
    Ok(GapReport::of(series, found))
}

fn series_interval(key: &SeriesKey) -> ApiResult<i64> {
    interval_ms(&key.interval)
        .ok_or_else(|| ApiError::invalid_field("interval", "one of 1m, 5m, 1h"))
}

/// Imports a CSV file into a series: every row a candle on the interval's boundaries, or nothing
/// is written and each bad row is named with its line.
pub async fn import_csv(db: &Db, key: &SeriesKey, text: Vec<u8>) -> ApiResult<ImportReport> {
    let started = std::time::Instant::now();
    let step = series_interval(key)?;
    let parsed = crate::plugins::off_thread(move || parse::candles_from_csv(&text, step))
        .await
        .map_err(ApiError::internal)?;
    let candles = parsed.map_err(csv_refusal)?;
    save(db, key, candles, started).await
}

/// The candles of a CSV file without storing them (a backtest's `--data`), or the refusal naming
/// each bad row.
pub fn parse_csv(text: &[u8], interval: &str) -> ApiResult<Vec<Candle>> {
    let step = interval_ms(interval)
        .ok_or_else(|| ApiError::invalid_field("interval", "one of 1m, 5m, 1h"))?;
    parse::candles_from_csv(text, step).map_err(csv_refusal)
}

fn csv_refusal(errors: Vec<RowError>) -> ApiError {
    let listed = errors
        .iter()
        .map(|e| format!("line {}: {}", e.line, e.reason))
        .collect::<Vec<_>>()
        .join("; ");
    ApiError::new(
        ErrorCode::InvalidRequest,
        format!("The file was not imported: {listed}"),
    )
    .detail("field", "file")
    .detail(
        "rows",
        serde_json::to_value(&errors).unwrap_or(serde_json::Value::Null),
    )
}

/// Downloads the closed candles of `from_ms..=to_ms` through a broker plugin's `candles` into the
/// series `key` (whose source is the broker's name), a page at a time from the end backwards;
/// a range of more than `max_candles` slots is refused.
pub async fn download(
    db: &Db,
    broker: Arc<Active>,
    runtime: Arc<crate::plugins::PluginRuntime>,
    key: &SeriesKey,
    (from_ms, to_ms): (i64, i64),
    max_candles: i64,
) -> ApiResult<ImportReport> {
    let started = std::time::Instant::now();
    let step = series_interval(key)?;
    // The candle still forming is not history yet.
    let last_closed = (now_ms() / step - 1) * step;
    let to_ms = to_ms.min(last_closed);
    if from_ms > to_ms {
        return Err(ApiError::invalid_field(
            "from",
            "before the end of the range and of the last closed candle",
        ));
    }
    if (to_ms - from_ms) / step + 1 > max_candles {
        return Err(ApiError::invalid_field(
            "from",
            format!("at most {max_candles} candles in one download; split the range"),
        ));
    }
    let mut pages: Vec<Vec<Candle>> = Vec::new();
    // The open time of the last candle still wanted. A broker answers the candles closed by the
    // time it is given, so it is asked for the time this one closes.
    let mut end = to_ms.div_euclid(step) * step;
    while end >= from_ms {
        let (active, runtime, symbol, interval) = (
            broker.clone(),
            runtime.clone(),
            key.symbol.clone(),
            key.interval.clone(),
        );
        let page = crate::plugins::off_thread(move || {
            runtime.broker_candles(&active, &symbol, &interval, DOWNLOAD_PAGE, end + step)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|err| {
            ApiError::new(
                ErrorCode::PluginError,
                format!("The broker plugin failed: {err}"),
            )
        })?
        .map_err(crate::brokers::broker_error)?;
        let Some(earliest) = page.first().map(|c| c.timestamp_ms) else {
            break;
        };
        let mut page: Vec<Candle> = page
            .into_iter()
            .filter(|c| (from_ms..=end).contains(&c.timestamp_ms) && c.timestamp_ms % step == 0)
            .collect();
        page.sort_by_key(|c| c.timestamp_ms);
        page.dedup_by_key(|c| c.timestamp_ms);
        pages.push(page);
        if earliest > end || earliest <= from_ms {
            break;
        }
        end = earliest - step;
    }
    let candles: Vec<Candle> = pages.into_iter().rev().flatten().collect();
    if candles.is_empty() {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            format!(
                "The broker has no {} candles of {} in that range",
                key.interval, key.symbol
            ),
        ));
    }
    save(db, key, candles, started).await
}

/// Imports and downloads of this process write one at a time: each merges the blocks it reads
/// into what it writes, and two at once over the same blocks would lose one's candles.
static WRITING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Writes candles (sorted, distinct, on the interval's boundaries) into their blocks, merged with
/// what the blocks held.
async fn save(
    db: &Db,
    key: &SeriesKey,
    candles: Vec<Candle>,
    started: std::time::Instant,
) -> ApiResult<ImportReport> {
    let step = series_interval(key)?;
    let (first, last) = match (candles.first(), candles.last()) {
        (Some(first), Some(last)) => (first.timestamp_ms, last.timestamp_ms),
        _ => return Err(ApiError::invalid_field("file", "the file holds no candles")),
    };
    let received = candles.len();
    let mut replaced = 0;
    let _writing = WRITING.lock().await;
    let mut stored = rows::blocks(
        db,
        key,
        block::block_start(first, step),
        block::block_start(last, step),
    )
    .await?
    .into_iter()
    .map(|row| (row.block_start, row))
    .collect::<std::collections::HashMap<_, _>>();
    let mut written: Vec<BlockRow> = Vec::new();
    for chunk in candles.chunk_by(|a, b| {
        block::block_start(a.timestamp_ms, step) == block::block_start(b.timestamp_ms, step)
    }) {
        let start = block::block_start(chunk[0].timestamp_ms, step);
        let merged = match stored.remove(&start) {
            Some(old) => {
                let mut old_candles = Vec::new();
                block::decode_into(start, step, &old.data, &mut old_candles)
                    .map_err(|err| ApiError::internal(format!("candles of {key:?}: {err}")))?;
                let (merged, count) = block::merge(old_candles, chunk);
                replaced += count;
                merged
            }
            None => chunk.to_vec(),
        };
        written.push(BlockRow {
            block_start: start,
            first_ms: merged[0].timestamp_ms,
            last_ms: merged[merged.len() - 1].timestamp_ms,
            candle_count: merged.len() as i64,
            data: block::encode(start, step, &merged),
        });
    }
    let now = now_ms();
    for batch in written.chunks(BLOCKS_PER_COMMIT) {
        let mut tx = db.begin().await?;
        for row in batch {
            rows::put_block(&mut tx, key, row, now).await?;
        }
        tx.commit().await?;
    }
    let series = summary(db, key).await?;
    let found = gaps(&candles, step);
    let report = GapReport::of(series, found);
    Ok(ImportReport {
        received,
        replaced,
        seconds: started.elapsed().as_secs_f64(),
        series: report.series,
        gap_count: report.gap_count,
        gaps: report.gaps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(timestamp_ms: i64) -> Candle {
        Candle {
            timestamp_ms,
            open: 1.0,
            high: 1.0,
            low: 1.0,
            close: 1.0,
            volume: 0.0,
        }
    }

    #[test]
    fn gaps_count_the_empty_slots_between_candles() {
        let minute = 60_000;
        let candles = [
            at(0),
            at(minute),
            at(4 * minute),
            at(5 * minute),
            at(7 * minute),
        ];
        assert_eq!(
            gaps(&candles, minute),
            [
                Gap {
                    after_ms: minute,
                    before_ms: 4 * minute,
                    missing: 2
                },
                Gap {
                    after_ms: 5 * minute,
                    before_ms: 7 * minute,
                    missing: 1
                },
            ]
        );
        assert!(gaps(&candles[..2], minute).is_empty());
    }

    #[test]
    fn a_series_key_names_the_field_it_refuses() {
        let key = series_key(" CSV ", "btc-usd", "5m").unwrap();
        assert_eq!(
            (
                key.source.as_str(),
                key.symbol.as_str(),
                key.interval.as_str()
            ),
            ("csv", "BTC-USD", "5m")
        );
        let field = |result: ApiResult<SeriesKey>| result.unwrap_err().details["field"].clone();
        assert_eq!(field(series_key("a b", "BTC-USD", "5m")), "source");
        assert_eq!(field(series_key("", "BTC-USD", "5m")), "source");
        assert_eq!(field(series_key("csv", "BTCUSD", "5m")), "symbol");
        assert_eq!(field(series_key("csv", "BTC-USD", "2m")), "interval");
    }
}
