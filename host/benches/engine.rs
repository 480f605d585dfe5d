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

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tradehost::App;
use tradehost::auth::ClientMeta;
use tradehost::auth::sessions::Principal;
use tradehost::config::AppConfig;
use tradehost::engine::{self, StartRequest};
use tradehost::plugins::manifest::Manifest;
use tradehost::store::{now_ms, users};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn app(dir: &std::path::Path, group_commit: bool) -> App {
    let data_dir = dir.to_string_lossy().to_string();
    let database_url = std::env::var("DATABASE_URL").ok();
    let lookup = move |name: &str| match name {
        "TRADEHOST_GROUP_COMMIT" => Some(group_commit.to_string()),
        "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
        "TRADEHOST_SCAN_INTERVAL" => Some("0.05".into()),
        "DATABASE_URL" => database_url.clone(),
        "JWT_SECRET_KEY" => Some("benchmark-secret-benchmark-secret-0123".into()),
        "VAULT_ENCRYPTION_KEY" => Some("00".repeat(32)),
        _ => None,
    };
    let figment = AppConfig::rocket_figment(&lookup).unwrap();
    let config = AppConfig::load(&figment, &lookup).unwrap();
    App::init(config).await.unwrap()
}

/// Creates `count` users, each with a paper connection and a started bot.
async fn start_bots(app: &App, count: u64, strategy: &str) {
    let now = now_ms();
    for n in 0..count {
        let id = uuid::Uuid::new_v4().to_string();
        let email = format!("bench-{n}-{id}@example.com");
        users::insert(
            &app.db.pool,
            &users::NewUser {
                id: &id,
                email: &email,
                full_name: "Bench",
                password_hash: "not-a-login",
                role: "user",
                trial_ends_at: Some(now + 86_400_000),
                created_at: now,
            },
        )
        .await
        .unwrap();
        // The top tier, so the daily trade limit does not end the churn within the run.
        sqlx::query("UPDATE users SET subscription_tier = 'enterprise' WHERE id = $1")
            .bind(&id)
            .execute(&app.db.pool)
            .await
            .unwrap();
        let user = Principal::of_user(users::by_id(&app.db.pool, &id).await.unwrap().unwrap());
        let meta = ClientMeta {
            ip: None,
            user_agent: None,
        };
        let connection = serde_json::from_value(serde_json::json!({
            "broker": "paper", "api_key": "bench-key", "api_secret": "bench-secret"
        }))
        .unwrap();
        tradehost::brokers::add(app, &user, &meta, connection)
            .await
            .unwrap();
        let start: StartRequest = serde_json::from_value(serde_json::json!({
            "broker": "paper", "risk_profile": "high", "symbols": ["BTC-USD", "ETH-USD"], "strategy": strategy
        }))
        .unwrap();
        engine::start(app, &user, start).await.unwrap();
    }
}

async fn configure(app: &App, name: &str, values: &[(&str, &str)]) {
    let values: BTreeMap<String, String> = values
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    app.plugins.configure(name, values).await.unwrap();
}

async fn measure(app: &App, label: &str, secs: u64) {
    let scheduler = tokio::spawn(engine::run(app.clone()));
    // Warm up: every bot's first scans (and any first signals) happen before the window.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let orders = |app: App| async move {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM orders WHERE status = 'filled'")
            .fetch_one(&app.db.pool)
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
            .fetch_all(&app.db.pool)
            .await
            .unwrap();
    let bot_states: Vec<(String, i64)> =
        sqlx::query_as("SELECT status, COUNT(*) FROM bots GROUP BY status")
            .fetch_all(&app.db.pool)
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
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let wasm = std::fs::read(
            root.join("plugins/target/wasm32-wasip2/release/risk_guards_strict.wasm"),
        )
        .unwrap();
        let manifest_text =
            std::fs::read_to_string(root.join("plugins/testing/risk-guards-strict/plugin.toml"))
                .unwrap();
        let manifest = Manifest::from_toml(&manifest_text).unwrap();
        let version = manifest.version.clone();
        app.plugins.upload(&wasm, manifest, None).await.unwrap();
        app.plugins.activate("risk-guards", &version).await.unwrap();
        configure(&app, "paper", &[("speed", "0.001")]).await;
        start_bots(&app, bots, "ema-cross").await;
        measure(&app, "no trades", secs).await;

        // With trades: every scan of every bot fills an order per symbol; bookings share disk
        // flushes, then (the reference) each waits for its own.
        for (label, group_commit) in [
            ("with trades", true),
            ("with trades, a flush per commit", false),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let app = self::app(dir.path(), group_commit).await;
            let manifest_text =
                std::fs::read_to_string(root.join("plugins/testing/guest-churn/plugin.toml"))
                    .unwrap();
            let wasm =
                std::fs::read(root.join("plugins/target/wasm32-wasip2/release/guest_churn.wasm"))
                    .unwrap();
            app.plugins
                .upload(&wasm, Manifest::from_toml(&manifest_text).unwrap(), None)
                .await
                .unwrap();
            start_bots(&app, bots, "guest-churn").await;
            measure(&app, label, secs).await;
            println!("{label}: {} log flushes", app.db.sync.flushes());
        }
    });
}
