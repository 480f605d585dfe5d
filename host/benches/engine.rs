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
//! `BENCH_BOTS` (default 2000) and `BENCH_SECS` (default 10) change the size; `DATABASE_URL`
//! points it at PostgreSQL.

mod support;

use std::time::{Duration, Instant};

use support::{bots_that_place_nothing, env_or, start_bots, upload};
use tradehost::App;
use tradehost::engine;

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

async fn measure(app: &App, label: &str, secs: u64) {
    let scheduler = tokio::spawn(engine::run(app.clone()));
    // Warm up: every bot's first scans (and any first signals) happen before the window.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let orders = |app: App| async move {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE status = 'filled'")
            .fetch_one(app.db.pool.as_sqlite())
            .await
            .unwrap();
        count
    };
    let scans_before = app.engine.scans_completed();
    let orders_before = orders(app.clone()).await;
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let elapsed = started.elapsed().as_secs_f64();
    let scans = app.engine.scans_completed() - scans_before;
    let filled = orders(app.clone()).await - orders_before;
    scheduler.abort();
    let by_status: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM orders GROUP BY status")
            .fetch_all(app.db.pool.as_sqlite())
            .await
            .unwrap();
    let bot_states: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM bots GROUP BY status")
            .fetch_all(app.db.pool.as_sqlite())
            .await
            .unwrap();
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
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        // No trades: the strict risk rule denies every order on a market that barely moves.
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path(), true).await;
        bots_that_place_nothing(&app, bots, "ema-cross").await;
        measure(&app, "no trades", secs).await;

        // With trades: every scan of every bot fills an order per symbol; bookings share disk
        // flushes, then (the reference) each waits for its own.
        for (label, group_commit) in [
            ("with trades", true),
            ("with trades, a flush per commit", false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let app = self::app(dir.path(), group_commit).await;
            upload(&app, "plugins/testing/guest-churn", "guest_churn.wasm").await;
            start_bots(&app, bots, "guest-churn").await;
            measure(&app, label, secs).await;
            println!("{label}: {} log flushes", app.db.sync.flushes());
        }
    });
}
