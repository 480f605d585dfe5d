//! One order round trip through each live venue's broker plugin, against that venue's simulator
//! (tests/src/exchange) on loopback, side by side with the bare HTTP round trip to the same
//! simulator in the same run: what the host adds per order (a fresh wasm instance, signing,
//! JSON both ways, the checked answer) beyond the network and the venue.
//!
//! `cargo bench -p tradehost --bench venues` measures, per venue:
//! - bare HTTP: a GET the simulator answers at once (its 404 for an unknown path), through the
//!   host's own egress client: the floor any order pays on this machine;
//! - place-order: a market order (buys and sells in turn) through the plugin, which the
//!   simulator signs off, matches and fills in full;
//! - through the engine: one bot whose strategy enters and exits on every scan, so each scan
//!   places an order and books its fill (ledger, position, account) — orders booked per second
//!   and the time from an order's row to its booked fill, with the paper broker (no HTTP) as the
//!   reference.
//!
//! `BENCH_ORDERS` (default 200) and `BENCH_SECS` (default 5) change the size.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tradehost::App;
use tradehost::auth::ClientMeta;
use tradehost::auth::sessions::Principal;
use tradehost::config::AppConfig;
use tradehost::engine::{self, StartRequest, StopRequest};
use tradehost::plugins::PluginKind;
use tradehost::plugins::bindings::broker::tradehost::plugin::http;
use tradehost::plugins::bindings::types::{
    OrderKind, OrderQuery, OrderRequest, OrderSide, OrderStatus,
};
use tradehost::plugins::calls::BrokerAccount;
use tradehost::plugins::egress::{Client, Egress};
use tradehost::plugins::manifest::Manifest;
use tradehost::store::{now_ms, users};
use tradehost_blackbox::exchange::{Simulator, VenueCase};

/// The server's allocator, as in the binary (`src/main.rs`), so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn app(dir: &std::path::Path) -> App {
    let data_dir = dir.to_string_lossy().to_string();
    let lookup = move |name: &str| match name {
        "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
        "TRADEHOST_SCAN_INTERVAL" => Some("0.02".into()),
        "TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK" => Some("true".into()),
        "JWT_SECRET_KEY" => Some("benchmark-secret-benchmark-secret-0123".into()),
        "VAULT_ENCRYPTION_KEY" => Some("00".repeat(32)),
        _ => None,
    };
    let figment = AppConfig::rocket_figment(&lookup).unwrap();
    let config = AppConfig::load(&figment, &lookup).unwrap();
    App::init(config).await.unwrap()
}

/// A user on the top tier (no daily trade limit within the run) with a connection to `broker`.
async fn user_on(app: &App, broker: &str, connection: serde_json::Value) -> Principal {
    let id = uuid::Uuid::new_v4().to_string();
    let email = format!("bench-{broker}-{id}@example.com");
    users::insert(
        &app.db.pool,
        &users::NewUser {
            id: &id,
            email: &email,
            full_name: "Bench",
            password_hash: "not-a-login",
            role: "user",
            trial_ends_at: Some(now_ms() + 86_400_000),
            created_at: now_ms(),
        },
    )
    .await
    .unwrap();
    sqlx::query("UPDATE users SET subscription_tier = 'enterprise' WHERE id = $1")
        .bind(&id)
        .execute(app.db.pool.as_sqlite())
        .await
        .unwrap();
    let user = Principal::of_user(users::by_id(&app.db.pool, &id).await.unwrap().unwrap());
    let meta = ClientMeta {
        ip: None,
        user_agent: None,
    };
    tradehost::brokers::add(
        app,
        &user,
        &meta,
        serde_json::from_value(connection).unwrap(),
    )
    .await
    .unwrap();
    user
}

/// Milliseconds per call: (median, 99th percentile, mean).
fn summary(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len() as f64;
    let p99 = samples[((samples.len() * 99) / 100).min(samples.len() - 1)];
    (ms(samples[samples.len() / 2]), ms(p99), mean)
}

/// Bare HTTP and place-order round trips for one venue.
async fn round_trips(app: &App, case: &VenueCase, simulator: &Simulator, orders: u64) {
    let user = user_on(app, case.broker, case.connect.clone()).await;
    let credentials = engine::credentials(app, &user.user_id, case.broker)
        .await
        .unwrap();
    let account = BrokerAccount {
        user_id: user.user_id.clone(),
        credentials,
    };
    let active = app.plugins.active(PluginKind::Broker, case.broker).unwrap();
    let runtime = app.plugins.runtime().clone();
    let url = format!("{}/bench/unknown-path", simulator.url);
    let symbol = case.symbols[0].to_string();
    let broker = case.broker;
    let (bare, placed, calls) = tokio::task::spawn_blocking(move || {
        let client = Client::new(Egress {
            allow_private_network: true,
        });
        let get = || http::Request {
            method: "GET".into(),
            url: url.clone(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout_ms: 5_000,
        };
        // Warm up both paths (connections, the plugin's instrument rules, compiled code).
        for _ in 0..20 {
            client.send(get()).unwrap();
        }
        let mut bare = Vec::new();
        for _ in 0..orders {
            let started = Instant::now();
            client.send(get()).unwrap();
            bare.push(started.elapsed());
        }
        let mut placed = Vec::new();
        let mut total_calls = 0u64;
        for n in 0..orders + 10 {
            // Buy, then sell a little less (a fee taken in the asset bought leaves less to sell).
            let (side, quantity) = if n % 2 == 0 {
                (OrderSide::Buy, "0.001")
            } else {
                (OrderSide::Sell, "0.0009")
            };
            let request = OrderRequest {
                client_order_id: format!("th-{:032x}", (u128::from(n) << 64) | 0xbe7c),
                symbol: symbol.clone(),
                side,
                quantity: quantity.into(),
                kind: OrderKind::Market,
                limit_price: None,
                reduce_only: false,
            };
            let started = Instant::now();
            let mut report = runtime
                .broker_place_order(&active, &account, &request)
                .unwrap()
                .unwrap_or_else(|err| panic!("{broker}: order {n}: {err:?}"));
            // Venues that only acknowledge an order are asked about it, as the host does,
            // until it is filled.
            let mut calls = 1;
            while report.status != OrderStatus::Filled {
                assert!(calls < 20, "{broker}: order {n} did not fill: {report:?}");
                let query = OrderQuery {
                    symbol: symbol.clone(),
                    client_order_id: Some(request.client_order_id.clone()),
                    order_id: Some(report.order_id.clone()),
                };
                report = runtime
                    .broker_get_order(&active, &account, &query)
                    .unwrap()
                    .unwrap_or_else(|err| panic!("{broker}: order {n}: {err:?}"));
                calls += 1;
            }
            let took = started.elapsed();
            assert!(!report.fills.is_empty(), "{broker}: order {n} has no fills");
            if n >= 10 {
                placed.push(took);
                total_calls += calls;
            }
        }
        (bare, placed, total_calls)
    })
    .await
    .unwrap();
    let (bare_p50, bare_p99, bare_mean) = summary(bare);
    let per_order = calls as f64 / orders as f64;
    let (p50, p99, mean) = summary(placed);
    println!(
        "{:<9} bare HTTP p50 {bare_p50:.3} ms p99 {bare_p99:.3} ms mean {bare_mean:.3} ms | \
         order to filled ({per_order:.1} plugin calls) p50 {p50:.3} ms p99 {p99:.3} ms mean {mean:.3} ms | \
         host adds {:.3} ms per call (p50)",
        case.broker,
        (p50 / per_order) - bare_p50,
    );
}

/// One bot trading on every scan for `secs`: orders booked per second and the median time from
/// an order's row to its last booked fill.
async fn through_the_engine(
    app: &App,
    broker: &str,
    connection: serde_json::Value,
    symbol: &str,
    secs: u64,
) {
    let user = user_on(app, broker, connection).await;
    let settings = serde_json::json!({"trading": {"allowed_pairs": [symbol]}});
    let settings = settings.as_object().unwrap().clone();
    tradehost::settings::update(app, &user, settings)
        .await
        .unwrap();
    let start: StartRequest = serde_json::from_value(serde_json::json!({
        "broker": broker, "risk_profile": "high", "symbols": [symbol], "strategy": "guest-churn"
    }))
    .unwrap();
    engine::start(app, &user, start).await.unwrap();
    let filled = |app: App, user_id: String| async move {
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM orders WHERE user_id = $1 AND status = 'filled'",
        )
        .bind(user_id)
        .fetch_one(app.db.pool.as_sqlite())
        .await
        .unwrap();
        count
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = filled(app.clone(), user.user_id.clone()).await;
    let since = now_ms();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let elapsed = started.elapsed().as_secs_f64();
    let booked = filled(app.clone(), user.user_id.clone()).await - before;
    engine::stop(app, &user, StopRequest::default())
        .await
        .unwrap();
    let mut times: Vec<i64> = sqlx::query_scalar(
        "SELECT orders.updated_at - orders.created_at FROM orders \
         WHERE user_id = $1 AND status = 'filled' AND created_at >= $2",
    )
    .bind(&user.user_id)
    .bind(since)
    .fetch_all(app.db.pool.as_sqlite())
    .await
    .unwrap();
    times.sort_unstable();
    let median = times.get(times.len() / 2).copied().unwrap_or_default();
    println!(
        "{broker:<9} through the engine: {booked} orders booked in {elapsed:.1} s = {:.0} orders/s, \
         order to booked fill p50 {median} ms",
        booked as f64 / elapsed
    );
}

fn main() {
    let orders = env_or("BENCH_ORDERS", 200);
    let secs = env_or("BENCH_SECS", 5);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let app = app(dir.path()).await;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let churn_manifest =
            std::fs::read_to_string(root.join("plugins/testing/guest-churn/plugin.toml")).unwrap();
        let churn =
            std::fs::read(root.join("plugins/target/wasm32-wasip2/release/guest_churn.wasm"))
                .unwrap();
        app.plugins
            .upload(&churn, Manifest::from_toml(&churn_manifest).unwrap(), None)
            .await
            .unwrap();
        let scheduler = tokio::spawn(engine::run(app.clone()));
        use tradehost_blackbox::exchange::{alpaca, binance, coinbase, kraken, okx};
        let cases = [
            binance::case(),
            coinbase::case(),
            kraken::case(),
            okx::case(),
            alpaca::case(),
        ];
        let mut simulators = Vec::new();
        for case in &cases {
            let simulator = Simulator::start(case.exchange.clone(), case.face.clone()).await;
            let values: BTreeMap<String, String> =
                [("base_url".to_string(), simulator.url.clone())].into();
            app.plugins.configure(case.broker, values).await.unwrap();
            round_trips(&app, case, &simulator, orders).await;
            simulators.push(simulator);
        }
        println!();
        through_the_engine(
            &app,
            "paper",
            serde_json::json!({"broker": "paper", "api_key": "bench-key", "api_secret": "bench-secret"}),
            "BTC-USD",
            secs,
        )
        .await;
        for case in &cases {
            through_the_engine(&app, case.broker, case.connect.clone(), case.symbols[0], secs)
                .await;
        }
        scheduler.abort();
    });
}
