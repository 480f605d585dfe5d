//! `candle_blocks`: historical candles, a block of up to 1,024 interval slots of one series per
//! row (the encoding is `candles::block`'s; this module only moves the bytes).

use sqlx::FromRow;

use super::Executes;

/// Names one series of candles.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesKey {
    /// Where the candles came from: a broker plugin's name, or what an import was called.
    pub source: String,
    pub symbol: String,
    pub interval: String,
}

/// One stored block.
#[derive(Debug, Clone, FromRow)]
pub struct BlockRow {
    pub block_start: i64,
    pub first_ms: i64,
    pub last_ms: i64,
    pub candle_count: i64,
    pub data: Vec<u8>,
}

/// What a series holds, summed over its blocks.
#[derive(Debug, Clone, FromRow)]
pub struct SeriesRow {
    pub source: String,
    pub symbol: String,
    pub bar_interval: String,
    pub candle_count: i64,
    pub first_ms: i64,
    pub last_ms: i64,
    pub blocks: i64,
    pub bytes: i64,
    pub updated_at: i64,
}

macro_rules! summary {
    () => {
        "SELECT source, symbol, bar_interval, CAST(SUM(candle_count) AS BIGINT) AS candle_count, \
         MIN(first_ms) AS first_ms, MAX(last_ms) AS last_ms, CAST(COUNT(*) AS BIGINT) AS blocks, \
         CAST(SUM(LENGTH(data)) AS BIGINT) AS bytes, MAX(updated_at) AS updated_at \
         FROM candle_blocks"
    };
}

/// Every series, ordered by source, symbol and interval.
pub async fn series<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<SeriesRow>> {
    on!(exec, |c| sqlx::query_as(concat!(
        summary!(),
        " GROUP BY source, symbol, bar_interval ORDER BY source, symbol, bar_interval"
    ))
    .fetch_all(c)
    .await)
}

/// One series' summary, if it has any candle.
pub async fn series_of<'e>(
    exec: impl Executes<'e>,
    key: &SeriesKey,
) -> sqlx::Result<Option<SeriesRow>> {
    on!(exec, |c| sqlx::query_as(concat!(
        summary!(),
        " WHERE source = $1 AND symbol = $2 AND bar_interval = $3 \
         GROUP BY source, symbol, bar_interval"
    ))
    .bind(&key.source)
    .bind(&key.symbol)
    .bind(&key.interval)
    .fetch_optional(c)
    .await)
}

/// The blocks of a series that start in `from_block..=to_block`, oldest first.
pub async fn blocks<'e>(
    exec: impl Executes<'e>,
    key: &SeriesKey,
    from_block: i64,
    to_block: i64,
) -> sqlx::Result<Vec<BlockRow>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT block_start, first_ms, last_ms, candle_count, data FROM candle_blocks \
         WHERE source = $1 AND symbol = $2 AND bar_interval = $3 \
         AND block_start >= $4 AND block_start <= $5 ORDER BY block_start"
    ))
    .bind(&key.source)
    .bind(&key.symbol)
    .bind(&key.interval)
    .bind(from_block)
    .bind(to_block)
    .fetch_all(c)
    .await)
}

/// Writes a block, replacing the one stored at its start.
pub async fn put_block<'e>(
    exec: impl Executes<'e>,
    key: &SeriesKey,
    block: &BlockRow,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
        schema_checked!("INSERT INTO candle_blocks (source, symbol, bar_interval, block_start, first_ms, last_ms, \
         candle_count, data, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (source, symbol, bar_interval, block_start) DO UPDATE SET \
         first_ms = excluded.first_ms, last_ms = excluded.last_ms, \
         candle_count = excluded.candle_count, data = excluded.data, updated_at = excluded.updated_at")
    )
    .bind(&key.source)
    .bind(&key.symbol)
    .bind(&key.interval)
    .bind(block.block_start)
    .bind(block.first_ms)
    .bind(block.last_ms)
    .bind(block.candle_count)
    .bind(&block.data)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Deletes a whole series; the number of blocks it had.
pub async fn delete_series<'e>(exec: impl Executes<'e>, key: &SeriesKey) -> sqlx::Result<u64> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "DELETE FROM candle_blocks WHERE source = $1 AND symbol = $2 AND bar_interval = $3"
    ))
    .bind(&key.source)
    .bind(&key.symbol)
    .bind(&key.interval)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))
}
