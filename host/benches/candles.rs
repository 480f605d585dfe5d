//! Historical candles: importing a CSV file of `BENCH_CANDLES` (default 1,000,000) one-minute
//! candles into the block store, the space it takes, and loading the series back, side by side
//! with the same candles kept as a row per candle (a table keyed by series and time, written in
//! multi-row inserts of 500 rows and 64 statements per transaction: the straightforward layout).
//!
//! `cargo bench -p tradehost --bench candles` runs on SQLite, or on PostgreSQL with
//! `DATABASE_URL=postgres://…` (a fresh database of its own). Space is what the database's
//! files grew by (SQLite, after a checkpoint) or the table's size with its indexes (PostgreSQL).

mod support;

use std::time::Instant;

use tradehost::App;
use tradehost::candles;
use tradehost::plugins::bindings::types::Candle;
use tradehost::store::Pool;

const MINUTE: i64 = 60_000;
/// 2024-01-01T00:00:00Z.
const START: i64 = 1_704_067_200_000;
const ROWS_PER_STATEMENT: usize = 500;
const STATEMENTS_PER_COMMIT: usize = 64;

/// A random walk of one-minute candles (a fixed seed: every run imports the same file).
fn csv(count: i64) -> String {
    let mut text = String::with_capacity(count as usize * 64);
    text.push_str("timestamp,open,high,low,close,volume\n");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut price = 42_000.0f64;
    for i in 0..count {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let step = ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 40.0;
        let (open, close) = (price, (price + step).max(1.0));
        let (high, low) = (open.max(close) + 3.5, open.min(close) - 3.5);
        let volume = (state % 100_000) as f64 / 100.0;
        text.push_str(&format!(
            "{},{open:.2},{high:.2},{low:.2},{close:.2},{volume:.2}\n",
            START + i * MINUTE
        ));
        price = close;
    }
    text
}

async fn execute(app: &App, sql: &str) {
    match &app.db.pool {
        Pool::Sqlite(_) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(app.db.pool.as_sqlite())
            .await
            .map(|_| ()),
        Pool::Postgres(pool) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(pool)
            .await
            .map(|_| ()),
    }
    .unwrap_or_else(|err| panic!("{sql}: {err}"));
}

async fn scalar(app: &App, sql: &str) -> i64 {
    match &app.db.pool {
        Pool::Sqlite(_) => {
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
                .fetch_one(app.db.pool.as_sqlite())
                .await
        }
        Pool::Postgres(pool) => {
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_string()))
                .fetch_one(pool)
                .await
        }
    }
    .unwrap_or_else(|err| panic!("{sql}: {err}"))
}

/// Bytes the database's file holds (SQLite, its log checkpointed into it) or a table takes with
/// its indexes (PostgreSQL).
async fn size(app: &App, table: &str) -> i64 {
    match &app.db.pool {
        Pool::Sqlite(_) => {
            execute(app, "PRAGMA wal_checkpoint(TRUNCATE)").await;
            scalar(
                app,
                "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            )
            .await
        }
        Pool::Postgres(_) => {
            execute(app, "VACUUM ANALYZE").await;
            scalar(app, &format!("SELECT pg_total_relation_size('{table}')")).await
        }
    }
}

/// The reference: a row per candle, inserted from the parsed candles.
async fn insert_rows(app: &App, parsed: &[Candle]) {
    let statements: Vec<String> = parsed
        .chunks(ROWS_PER_STATEMENT)
        .map(|chunk| {
            let values: Vec<String> = chunk
                .iter()
                .map(|c| {
                    format!(
                        "('csv', 'BTC-USD', '1m', {}, {:?}, {:?}, {:?}, {:?}, {:?})",
                        c.timestamp_ms, c.open, c.high, c.low, c.close, c.volume
                    )
                })
                .collect();
            format!(
                "INSERT INTO candle_rows (source, symbol, bar_interval, ts, open, high, low, close, volume) VALUES {};",
                values.join(", ")
            )
        })
        .collect();
    for batch in statements.chunks(STATEMENTS_PER_COMMIT) {
        let script = format!("BEGIN; {} COMMIT;", batch.concat());
        execute(app, &script).await;
    }
}

async fn load_rows(app: &App) -> usize {
    let sql = "SELECT ts, open, high, low, close, volume FROM candle_rows \
               WHERE source = 'csv' AND symbol = 'BTC-USD' AND bar_interval = '1m' ORDER BY ts";
    type Row = (i64, f64, f64, f64, f64, f64);
    let rows: Vec<Row> = match &app.db.pool {
        Pool::Sqlite(_) => sqlx::query_as(sql).fetch_all(app.db.pool.as_sqlite()).await,
        Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await,
    }
    .unwrap();
    rows.len()
}

#[rocket::main]
async fn main() {
    let count = support::env_or("BENCH_CANDLES", 1_000_000) as i64;
    let dir = tempfile::tempdir().unwrap();
    let app = support::app(dir.path(), &[]).await;
    let backend = app.db.backend.name();
    let text = csv(count);
    let csv_mb = text.len() as f64 / 1e6;
    println!("{count} one-minute candles, CSV of {csv_mb:.1} MB, on {backend}");

    let key = candles::series_key("csv", "BTC-USD", "1m").unwrap();
    let before = size(&app, "candle_blocks").await;
    let started = Instant::now();
    let report = candles::import_csv(&app.db, &key, text.clone().into_bytes())
        .await
        .unwrap();
    let import_s = started.elapsed().as_secs_f64();
    assert_eq!(report.series.candles, count);
    let blocks_bytes =
        size(&app, "candle_blocks").await - if backend == "sqlite" { before } else { 0 };
    let started = Instant::now();
    let loaded = candles::load(&app.db, &key, START, START + count * MINUTE)
        .await
        .unwrap();
    let load_s = started.elapsed().as_secs_f64();
    assert_eq!(loaded.len() as i64, count);

    // The reference, from the same parsed candles (parsing is not what it measures).
    execute(
        &app,
        "CREATE TABLE candle_rows (source TEXT NOT NULL, symbol TEXT NOT NULL, bar_interval TEXT NOT NULL, \
         ts BIGINT NOT NULL, open DOUBLE PRECISION NOT NULL, high DOUBLE PRECISION NOT NULL, \
         low DOUBLE PRECISION NOT NULL, close DOUBLE PRECISION NOT NULL, volume DOUBLE PRECISION NOT NULL, \
         PRIMARY KEY (source, symbol, bar_interval, ts))",
    )
    .await;
    let before = size(&app, "candle_rows").await;
    let started = Instant::now();
    insert_rows(&app, &loaded).await;
    let rows_import_s = started.elapsed().as_secs_f64();
    let rows_bytes = size(&app, "candle_rows").await - if backend == "sqlite" { before } else { 0 };
    let started = Instant::now();
    assert_eq!(load_rows(&app).await as i64, count);
    let rows_load_s = started.elapsed().as_secs_f64();

    let mb = |bytes: i64| bytes as f64 / 1e6;
    println!(
        "{:<16} {:>12} {:>14} {:>10} {:>12} {:>14}",
        "layout", "import s", "candles/s", "MB", "load s", "loaded/s"
    );
    for (name, import, bytes, load) in [
        ("blocks", import_s, blocks_bytes, load_s),
        ("row per candle", rows_import_s, rows_bytes, rows_load_s),
    ] {
        println!(
            "{name:<16} {import:>12.2} {:>14.0} {:>10.1} {load:>12.3} {:>14.0}",
            count as f64 / import,
            mb(bytes),
            count as f64 / load
        );
    }
    println!(
        "blocks against a row per candle: import {:.2}x as fast (CSV parsing included in blocks only), {:.2}x smaller, load {:.2}x as fast",
        rows_import_s / import_s,
        rows_bytes as f64 / blocks_bytes as f64,
        rows_load_s / load_s
    );
    app.db.pool.close().await;
    support::drop_created_databases().await;
}
