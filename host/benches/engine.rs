//! Bot scans per second: N bots on one in-process server (SQLite by default), each due every
//! scan interval, the real scheduler and the real plugins.
//!
//! `cargo bench -p tradehost --bench engine` runs two cases:
//! - no trades: the strict risk rule (it denies every order) is active, so every scan runs the
//!   strategy, the risk checks of its signals and the alarm evaluation, and nothing fills;
//! - with trades: the `guest-churn` test strategy opens a position on every flat symbol and
//!   closes every held one, so each scan of each bot fills an order per symbol (checked by the
//!   built-in risk rule), the worst case for the ledger.
//!
//! - the same with `TRADEHOST_GROUP_COMMIT=false`, every booking waiting for its own flush (the
//!   reference for group commit).
//!
//! `BENCH_BOTS` (default 2000) and `BENCH_SECS` (default 10) change the size; `BENCH_CASES`
//! (a comma-separated subset of `idle,fills,flush`, default all) picks the cases; `DATABASE_URL`
//! naming a PostgreSQL server runs each case on a new database there (group commit is then
//! PostgreSQL's own: the flush-per-commit case is the same run twice).

mod support;

use std::time::{Duration, Instant};

use support::{bots_that_place_nothing, env_or, start_bots, upload};
use tradehost::App;
use tradehost::engine;
use tradehost::store::Pool;

/// The server with scans every 50 ms (each bot is due at every tick) and group commit as given.
async fn app(dir: &std::path::Path, group_commit: bool) -> App {
    let group_commit = group_commit.to_string();
    support::app(
        dir,
        &[
            ("TRADEHOST_SCAN_INTERVAL", "0.05"),
            ("TRADEHOST_GROUP_COMMIT", &group_commit),
        ],
    )
    .await
}

/// A count from a statement of the benchmark's own, on either backend.
pub async fn count(app: &App, sql: &'static str) -> i64 {
    match &app.db.pool {
        Pool::Sqlite(pool) => sqlx::query_scalar(sql).fetch_one(&**pool).await.unwrap(),
        Pool::Postgres(pool) => sqlx::query_scalar(sql).fetch_one(pool).await.unwrap(),
    }
}

/// Rows of (text, count) from a statement of the benchmark's own, on either backend.
pub async fn counts(app: &App, sql: &'static str) -> Vec<(String, i64)> {
    match &app.db.pool {
        Pool::Sqlite(pool) => sqlx::query_as(sql).fetch_all(&**pool).await.unwrap(),
        Pool::Postgres(pool) => sqlx::query_as(sql).fetch_all(pool).await.unwrap(),
    }
}

async fn measure(app: &App, label: &str, secs: u64) {
    let scheduler = tokio::spawn(engine::run(app.clone()));
    // Warm up: every bot's first scans (and any first signals) happen before the window.
    tokio::time::sleep(Duration::from_secs(3)).await;
    const FILLED: &str = "SELECT COUNT(*) FROM orders WHERE status = 'filled'";
    let scans_before = app.engine.scans_completed();
    let orders_before = count(app, FILLED).await;
    // Tells an outside observer (a profiler) when the window opens.
    eprintln!("{label}: measuring for {secs} s");
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let elapsed = started.elapsed().as_secs_f64();
    let scans = app.engine.scans_completed() - scans_before;
    let filled = count(app, FILLED).await - orders_before;
    scheduler.abort();
    let by_status = counts(app, "SELECT status, COUNT(*) FROM orders GROUP BY status").await;
    let bot_states = counts(app, "SELECT status, COUNT(*) FROM bots GROUP BY status").await;
    println!("{label}: orders by status {by_status:?}, bots by status {bot_states:?}");
    println!(
        "{label}: {bots} bots, {scans} scans in {elapsed:.1} s = {:.0} bot-scans/s, {filled} orders filled",
        scans as f64 / elapsed,
        bots = app.engine.running_bots(),
    );
}

fn main() {
    let bots = env_or("BENCH_BOTS", 2000);
    let secs = env_or("BENCH_SECS", 10);
    let cases = std::env::var("BENCH_CASES").unwrap_or_else(|_| "idle,fills,flush".into());
    let case = |name: &str| cases.split(',').any(|c| c.trim() == name);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        // No trades: the strict risk rule denies every order on a market that barely moves.
        if case("idle") {
            let dir = tempfile::tempdir().unwrap();
            let app = app(dir.path(), true).await;
            bots_that_place_nothing(&app, bots, "ema-cross").await;
            measure(&app, "no trades", secs).await;
        }

        // With trades: every scan of every bot fills an order per symbol; bookings share disk
        // flushes, then (the reference) each waits for its own.
        for (label, group_commit) in [
            ("with trades", true),
            ("with trades, a flush per commit", false),
        ] {
            if !case(if group_commit { "fills" } else { "flush" }) {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let app = self::app(dir.path(), group_commit).await;
            upload(&app, "plugins/testing/guest-churn", "guest_churn.wasm").await;
            start_bots(&app, bots, "guest-churn").await;
            measure(&app, label, secs).await;
            println!("{label}: {} log flushes", app.db.sync.flushes());
        }
        support::drop_created_databases().await;
    });
}
