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
//! - `cluster-idle`, `cluster-fills`: the first two with the instance in cluster mode (Redis at
//!   `BENCH_REDIS`, default `redis://127.0.0.1:6379`): its bots held through leases, renewed by
//!   its lease loop, every write of the books checked against them, events sent to the bus.
//!
//! `BENCH_BOTS` (default 2000) and `BENCH_SECS` (default 10) change the size; `BENCH_CASES`
//! (a comma-separated subset of `idle,fills,flush,cluster-idle,cluster-fills`, default all) picks
//! the cases; `DATABASE_URL`
//! naming a PostgreSQL server runs each case on a new database there (group commit is then
//! PostgreSQL's own: the flush-per-commit case is the same run twice).

mod support;

use std::time::{Duration, Instant};

use support::{FILLED, bots_that_place_nothing, count, counts, env_or, start_bots, upload};
use tradehost::App;
use tradehost::engine;

/// The server with scans every 50 ms (each bot is due at every tick) and group commit as given;
/// with `redis`, in cluster mode on that Redis (a prefix of its own).
async fn app(dir: &std::path::Path, group_commit: bool, redis: Option<&str>) -> App {
    let group_commit = group_commit.to_string();
    let prefix = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let mut settings = vec![
        ("TRADEHOST_SCAN_INTERVAL", "0.05"),
        ("TRADEHOST_GROUP_COMMIT", group_commit.as_str()),
    ];
    if let Some(redis) = redis {
        settings.extend([
            ("REDIS_URL", redis),
            ("TRADEHOST_REDIS_PREFIX", prefix.as_str()),
            ("TRADEHOST_INSTANCE_ID", "bench"),
        ]);
    }
    support::app(dir, &settings).await
}

/// Joins the cluster and waits until the instance holds every bot's lease.
async fn hold_every_bot(app: &App, bots: u64) {
    app.join_cluster();
    tokio::spawn(engine::leases::run(app.clone()));
    let deadline = Instant::now() + Duration::from_secs(120);
    while (app.engine.leases_held() as u64) < bots {
        assert!(
            Instant::now() < deadline,
            "the instance did not take its bots"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn measure(app: &App, label: &str, secs: u64) {
    let scheduler = tokio::spawn(engine::run(app.clone()));
    // Warm up: every bot's first scans (and any first signals) happen before the window.
    tokio::time::sleep(Duration::from_secs(3)).await;
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
    let cases = std::env::var("BENCH_CASES")
        .unwrap_or_else(|_| "idle,fills,flush,cluster-idle,cluster-fills".into());
    let case = |name: &str| cases.split(',').any(|c| c.trim() == name);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let redis = std::env::var("BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    runtime.block_on(async {
        // No trades: the strict risk rule denies every order on a market that barely moves; the
        // instance alone, then (the same, compared in one run) in cluster mode.
        for (label, name, cluster) in [
            ("no trades", "idle", None),
            (
                "no trades, cluster mode",
                "cluster-idle",
                Some(redis.as_str()),
            ),
        ] {
            if !case(name) {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let app = app(dir.path(), true, cluster).await;
            bots_that_place_nothing(&app, bots, "ema-cross").await;
            if cluster.is_some() {
                hold_every_bot(&app, bots).await;
            }
            measure(&app, label, secs).await;
        }

        // With trades: every scan of every bot fills an order per symbol; bookings share disk
        // flushes, then (the reference) each waits for its own; then in cluster mode.
        for (label, name, group_commit, cluster) in [
            ("with trades", "fills", true, None),
            ("with trades, a flush per commit", "flush", false, None),
            (
                "with trades, cluster mode",
                "cluster-fills",
                true,
                Some(redis.as_str()),
            ),
        ] {
            if !case(name) {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let app = self::app(dir.path(), group_commit, cluster).await;
            upload(&app, "plugins/testing/guest-churn", "guest_churn.wasm").await;
            start_bots(&app, bots, "guest-churn").await;
            if cluster.is_some() {
                hold_every_bot(&app, bots).await;
            }
            measure(&app, label, secs).await;
            println!("{label}: {} log flushes", app.db.sync.flushes());
        }
        support::drop_created_databases().await;
    });
}
