//! What the engine benchmarks share: the in-process server on a data directory, users with a
//! paper connection and a started bot, and plugin set-up.

// Each benchmark uses a part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use tradehost::App;
use tradehost::auth::ClientMeta;
use tradehost::auth::sessions::Principal;
use tradehost::config::AppConfig;
use tradehost::engine::{self, StartRequest};
use tradehost::plugins::manifest::Manifest;
use tradehost::store::{Pool, now_ms, users};

/// The server's allocator, as in the binary (`src/main.rs`), so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The server's state on `dir`: SQLite there or, when `DATABASE_URL` names a PostgreSQL server,
/// a new database of its own on that server (unless `settings` names the database, as another
/// instance of a cluster does); `settings` over the defaults and any other `TRADEHOST_…` setting
/// from the environment.
pub async fn app(dir: &Path, settings: &[(&str, &str)]) -> App {
    let data_dir = dir.to_string_lossy().to_string();
    let named = settings.iter().any(|(name, _)| *name == "DATABASE_URL");
    let database_url = match std::env::var("DATABASE_URL") {
        Ok(url) if url.starts_with("postgres") && !named => {
            Some(fresh_postgres_database(&url).await)
        }
        _ => None,
    };
    let settings: BTreeMap<String, String> = settings
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |name: &str| match name {
        _ if settings.contains_key(name) => settings.get(name).cloned(),
        "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
        "DATABASE_URL" if database_url.is_some() => database_url.clone(),
        "JWT_SECRET_KEY" => Some("benchmark-secret-benchmark-secret-0123".into()),
        "VAULT_ENCRYPTION_KEY" => Some("00".repeat(32)),
        _ => std::env::var(name).ok(),
    };
    let figment = AppConfig::rocket_figment(&lookup).unwrap();
    let config = AppConfig::load(&figment, &lookup).unwrap();
    App::init(config).await.unwrap()
}

/// The PostgreSQL databases the benchmark created, with the URL of their server.
static CREATED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Creates an empty database on the PostgreSQL server of `url` and returns its URL (each case of
/// a benchmark starts from nothing, as on SQLite's fresh directory).
async fn fresh_postgres_database(url: &str) -> String {
    let name = format!("th_bench_{}", uuid::Uuid::new_v4().simple());
    admin(url, &format!("CREATE DATABASE {name}")).await;
    CREATED
        .lock()
        .unwrap()
        .push((url.to_string(), name.clone()));
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let base = base.rsplit_once('/').map_or(base, |(base, _)| base);
    match query {
        Some(query) => format!("{base}/{name}?{query}"),
        None => format!("{base}/{name}"),
    }
}

/// Drops the PostgreSQL databases the benchmark created (their apps' pools closed first).
pub async fn drop_created_databases() {
    let created = std::mem::take(&mut *CREATED.lock().unwrap());
    for (url, name) in created {
        admin(
            &url,
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        )
        .await;
    }
}

async fn admin(url: &str, statement: &str) {
    use sqlx::Connection;
    let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(statement.to_string()))
        .execute(&mut connection)
        .await
        .unwrap();
}

/// The workspace's root (plugins are built under it).
pub fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Uploads a plugin built under `plugins/` from its crate directory and wasm file name.
pub async fn upload(app: &App, crate_dir: &str, wasm: &str) -> String {
    let root = root();
    let wasm = std::fs::read(root.join("plugins/target/wasm32-wasip2/release").join(wasm)).unwrap();
    let manifest_text = std::fs::read_to_string(root.join(crate_dir).join("plugin.toml")).unwrap();
    let manifest = Manifest::from_toml(&manifest_text).unwrap();
    let version = manifest.version.clone();
    app.plugins.upload(&wasm, manifest, None).await.unwrap();
    version
}

/// Creates a user (no login) and returns its id.
pub async fn user(app: &App, email: &str) -> String {
    let id = uuid::Uuid::new_v4().to_string();
    let now = now_ms();
    users::insert(
        &app.db.pool,
        &users::NewUser {
            id: &id,
            email,
            full_name: "Bench",
            password_hash: "not-a-login",
            role: "user",
            trial_ends_at: None,
            created_at: now,
        },
    )
    .await
    .unwrap();
    id
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

/// Orders filled so far (the fills' benchmarks count these over their window).
pub const FILLED: &str = "SELECT COUNT(*) FROM orders WHERE status = 'filled'";

/// Creates `count` users, each with a paper connection and a started bot.
pub async fn start_bots(app: &App, count: u64, strategy: &str) {
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
        users::set_tier(&app.db.pool, &id, "enterprise", now)
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

pub async fn configure(app: &App, name: &str, values: &[(&str, &str)]) {
    let values: BTreeMap<String, String> = values
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    app.plugins.configure(name, values).await.unwrap();
}

/// `count` bots trading `strategy` on a market that barely moves, whose every order the strict
/// risk rule denies: their scans run the whole pipeline and place nothing.
pub async fn bots_that_place_nothing(app: &App, count: u64, strategy: &str) {
    let version = upload(
        app,
        "plugins/testing/risk-guards-strict",
        "risk_guards_strict.wasm",
    )
    .await;
    app.plugins.activate("risk-guards", &version).await.unwrap();
    configure(app, "paper", &[("speed", "0.001")]).await;
    start_bots(app, count, strategy).await;
}
