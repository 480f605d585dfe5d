//! The companion routes that read a user's books (docs/companion.md, sets D, E and F), at a
//! realistic size: latency per route, then requests/s of the trade history under concurrency.
//!
//! Starts the real server in-process on an ephemeral port and a fresh SQLite data directory,
//! registers one user through `POST /api/auth/register`, creates the trading account with
//! `GET /api/v1/account/balance`, then seeds the books in one transaction, booked through the
//! engine's own accounting (`Account::open` / `Account::close`) and written with the store's
//! inserts, so every amount is the decimal text the engine writes:
//! - `BENCH_TRADES` (default 20,000) completed trades over the last 90 days in five symbols, each
//!   with its position row (closed), an OPEN and a CLOSE ledger row (BUY/SELL);
//! - 5 open positions, one per symbol;
//! - `BENCH_SNAPSHOTS` (default 5,000) tracker performance snapshots with their KPI JSON: one a
//!   minute for the last two days, one an hour before that, which is what the tracker keeps
//!   after thinning (about 88 days of history at 5,000).
//!
//! Each route is warmed up, then asked `BENCH_REQUESTS` (default 200; `BENCH_EXPORT_REQUESTS`,
//! default 20, for the two exports) times in sequence over one keep-alive connection; then
//! `BENCH_CLIENTS` (default 16) keep-alive clients ask `GET /api/trades/history?limit=100` for
//! `BENCH_SECS` (default 5) seconds. Latency is measured at the client, from sending the request
//! to the last byte of the body. Every answer must be a 200, and the first of each route is
//! checked against the seed, so the bench fails rather than measure an error page.
//! `BENCH_ROUTES=<text>[,<text>…]` measures only the routes whose path contains one of them.
//!
//! When `wrk` is installed, the same concurrent load is then run by `wrk` (2 threads,
//! `BENCH_CLIENTS` connections), whose clients cost far less CPU than the benchmark's own.
//!
//! `cargo bench -p tradehost --bench companion`. The clients run on the server's cores.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rocket::fairing::AdHoc;
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use serde_json::{Value, json};
use tradehost::App;
use tradehost::config::AppConfig;
use tradehost::engine::accounting::{Fill, OpenRequest, Side, float};
use tradehost::performance::Kpi;
use tradehost::store::performance::{self as perf, SnapshotRow};
use tradehost::store::{
    DAY_MS, accounts, bots, iso8601, ledger, new_id, now_ms, positions, trades,
};

/// The server's allocator, as in the binary (`src/main.rs`), so the figures are the server's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;
const BROKER: &str = "paper";
/// Symbol, price around which it trades, quantity of one trade (about 180 USD each).
const SYMBOLS: [(&str, f64, f64); 5] = [
    ("BTC-USD", 60_000.0, 0.003),
    ("ETH-USD", 3_000.0, 0.06),
    ("SOL-USD", 150.0, 1.2),
    ("XRP-USD", 0.6, 300.0),
    ("ADA-USD", 0.45, 400.0),
];
/// Taker fee per fill.
const FEE_RATE: f64 = 0.0006;
const OPEN_POSITIONS: usize = SYMBOLS.len();

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let trades = env_or("BENCH_TRADES", 20_000) as usize;
    let snapshots = env_or("BENCH_SNAPSHOTS", 5_000) as usize;
    let requests = env_or("BENCH_REQUESTS", 200) as usize;
    let export_requests = env_or("BENCH_EXPORT_REQUESTS", 20) as usize;
    let clients = env_or("BENCH_CLIENTS", 16) as usize;
    let secs = env_or("BENCH_SECS", 5);
    assert!(trades >= 1 && snapshots >= 1 && requests >= 1 && export_requests >= 1);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let (app, base, _dir) = runtime.block_on(serve());
    let client = Client::new(&base, None);
    let (user_id, token) = register(&client);
    let client = Client::new(&base, Some(&token));
    runtime.block_on(async {
        // The top tier's budget (× the multiplier), so the concurrent run never meets a 429.
        sqlx::query("UPDATE users SET subscription_tier = 'enterprise' WHERE id = $1")
            .bind(&user_id)
            .execute(app.db.pool.as_sqlite())
            .await
            .expect("the tier is set");
    });
    let (status, body) = client.get("/api/v1/account/balance");
    assert_eq!(status, 200, "balance: {}", String::from_utf8_lossy(&body));
    let started = Instant::now();
    runtime.block_on(seed(&app, &user_id, trades, snapshots));
    // The engine reloads the account, with the seeded positions, on its next use.
    app.engine.evict_idle();
    println!(
        "seeded {trades} trades, {} ledger rows, {OPEN_POSITIONS} open positions and {snapshots} \
         snapshots in {:.1?}",
        2 * trades + OPEN_POSITIONS,
        started.elapsed()
    );

    let trades_u64 = trades as u64;
    let history_limit = trades.min(100);
    let ledger_limit = (2 * trades + OPEN_POSITIONS).min(100);
    let routes: Vec<Route> = vec![
        Route::json("/api/trades/history?limit=100", requests, move |v| {
            assert_eq!(v["count"], json!(history_limit), "history count");
            assert_eq!(v["statistics"]["total_trades"], json!(trades_u64));
        }),
        Route::json("/api/trades/ledger?limit=100", requests, move |v| {
            assert_eq!(v["count"], json!(ledger_limit), "ledger count");
        }),
        Route::json("/api/trades/statistics", requests, move |v| {
            assert_eq!(v["statistics"]["total_trades"], json!(trades_u64));
            assert_eq!(v["statistics"]["open_positions"], json!(OPEN_POSITIONS));
        }),
        Route::json(
            "/api/v1/account/history?status=closed&per_page=100",
            requests,
            move |v| {
                assert_eq!(v["data"]["pagination"]["total_items"], json!(trades_u64));
            },
        ),
        Route::json("/api/status", requests, move |v| {
            assert_eq!(v["stats"]["total_trades"], json!(trades_u64));
        }),
        Route::json("/api/pnl", requests, move |v| {
            assert_eq!(v["total_trades"], json!(trades_u64));
        }),
        Route::json("/api/v1/account/stats", requests, move |v| {
            assert_eq!(
                v["data"]["trading"]["total_trades_all_time"],
                json!(trades_u64)
            );
        }),
        Route::json("/api/v1/analytics/dashboard", requests, move |v| {
            let figures = &v["data"];
            let (week, month) = (&figures["week"]["trades"], &figures["month"]["trades"]);
            assert!(
                week.as_u64() <= month.as_u64() && month.as_u64() <= Some(trades_u64),
                "week {week}, month {month}"
            );
            assert!(month.as_u64() > Some(0), "the last 30 days have trades");
        }),
        Route::json("/api/positions/open", requests, |v| {
            assert_eq!(v["count"], json!(OPEN_POSITIONS), "open positions");
        }),
        Route::bytes(
            "/api/trades/export?table=completed_trades&format=csv",
            export_requests,
            move |body| {
                let text = std::str::from_utf8(body).expect("CSV is UTF-8");
                let lines = text.split("\r\n").filter(|l| !l.is_empty()).count();
                assert_eq!(lines, trades + 1, "CSV lines: the header and one per trade");
            },
        ),
        Route::bytes(
            "/api/trades/export?table=completed_trades&format=pdf",
            export_requests,
            |body| assert!(body.starts_with(b"%PDF-"), "a PDF"),
        ),
        Route::json("/api/v1/dashboard/metrics", requests, move |v| {
            assert_eq!(v["success"], json!(true));
            assert_eq!(v["data"]["total_trades"], json!(trades_u64));
        }),
        Route::json("/api/kpi/current", requests, move |v| {
            assert_eq!(v["success"], json!(true));
            assert_eq!(v["data"]["total_trades"], json!(trades_u64));
        }),
        Route::json("/api/dashboard/overview", requests, move |v| {
            assert_eq!(v["success"], json!(true));
            assert_eq!(v["data"]["kpi"]["status"], json!("active"));
            // The tracker adds its own snapshot every minute while the bench runs.
            let count = v["data"]["performance_tracking"]["update_count"].as_u64();
            assert!(count >= Some(snapshots as u64), "update count {count:?}");
        }),
    ];

    println!();
    println!("| route | requests | p50 ms | p99 ms | max ms | response |");
    println!("|---|---|---|---|---|---|");
    let only = std::env::var("BENCH_ROUTES").unwrap_or_default();
    for route in routes
        .iter()
        .filter(|r| only.split(',').any(|part| r.path.contains(part)))
    {
        let (mut latencies, size) = sequential(&client, route);
        let [p50, p99, max] = percentiles(&mut latencies);
        println!(
            "| `GET {}` | {} | {p50:.2} | {p99:.2} | {max:.2} | {} |",
            route.path,
            latencies.len(),
            human(size)
        );
    }

    let path = "/api/trades/history?limit=100";
    let (mut latencies, elapsed) = concurrent(&base, &token, path, clients, secs);
    let count = latencies.len();
    let [p50, p99, max] = percentiles(&mut latencies);
    println!();
    println!(
        "concurrent `GET {path}`: {clients} clients, {count} requests in {:.1} s = {:.0} requests/s \
         (p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms)",
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64()
    );
    if let Some(summary) = wrk(&base, &token, path, clients, secs) {
        println!("the same with wrk, {clients} connections: {summary}");
    }
}

/// `wrk`'s requests/s and latency percentiles on `path`, if it is installed.
fn wrk(base: &str, token: &str, path: &str, clients: usize, secs: u64) -> Option<String> {
    let output = std::process::Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{clients}"),
            &format!("-d{secs}s"),
            "--latency",
        ])
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .arg(format!("{base}{path}"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && !text.contains("Non-2xx"),
        "wrk failed or met errors:\n{text}"
    );
    let field = |label: &str| {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(label))
            .map(|rest| {
                rest.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default()
    };
    Some(format!(
        "{} requests/s (p50 {}, p99 {})",
        field("Requests/sec:"),
        field("50%"),
        field("99%")
    ))
}

/// A check of a route's first answer (its body); it panics when the answer is wrong.
type Check = Box<dyn Fn(&[u8])>;

/// A route to measure and the check of its first answer.
struct Route {
    path: &'static str,
    requests: usize,
    check: Check,
}

impl Route {
    fn json(path: &'static str, requests: usize, check: impl Fn(&Value) + 'static) -> Route {
        Route {
            path,
            requests,
            check: Box::new(move |body| {
                let value: Value = serde_json::from_slice(body).expect("a JSON answer");
                check(&value);
            }),
        }
    }

    fn bytes(path: &'static str, requests: usize, check: impl Fn(&[u8]) + 'static) -> Route {
        Route {
            path,
            requests,
            check: Box::new(check),
        }
    }
}

/// A keep-alive HTTP client (one connection when used from one thread).
struct Client {
    agent: ureq::Agent,
    base: String,
    bearer: Option<String>,
}

impl Client {
    fn new(base: &str, token: Option<&str>) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Client {
            agent,
            base: base.to_string(),
            bearer: token.map(|t| format!("Bearer {t}")),
        }
    }

    fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let mut request = self.agent.get(format!("{}{path}", self.base));
        if let Some(bearer) = &self.bearer {
            request = request.header("Authorization", bearer);
        }
        let mut response = request
            .call()
            .unwrap_or_else(|err| panic!("GET {path}: {err}"));
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .unwrap_or_else(|err| panic!("GET {path}: reading the body: {err}"));
        (status, body)
    }
}

fn ok(path: &str, status: u16, body: &[u8]) {
    assert_eq!(
        status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&body[..body.len().min(500)])
    );
}

/// Warm-up, the check, then the timed requests; their latencies in ms and the answer's size.
fn sequential(client: &Client, route: &Route) -> (Vec<f64>, usize) {
    let (status, body) = client.get(route.path);
    ok(route.path, status, &body);
    (route.check)(&body);
    for _ in 0..(route.requests / 10).max(2) {
        let (status, body) = client.get(route.path);
        ok(route.path, status, &body);
    }
    let mut latencies = Vec::with_capacity(route.requests);
    let mut size = 0;
    for _ in 0..route.requests {
        let started = Instant::now();
        let (status, body) = client.get(route.path);
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        ok(route.path, status, &body);
        size = body.len();
    }
    (latencies, size)
}

/// `clients` threads asking `path` in a loop for `secs` seconds; every latency in ms.
fn concurrent(
    base: &str,
    token: &str,
    path: &str,
    clients: usize,
    secs: u64,
) -> (Vec<f64>, Duration) {
    let all = Mutex::new(Vec::new());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    std::thread::scope(|scope| {
        for _ in 0..clients {
            scope.spawn(|| {
                let client = Client::new(base, Some(token));
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let (status, body) = client.get(path);
                    latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                    ok(path, status, &body);
                }
                all.lock().expect("not poisoned").extend(latencies);
            });
        }
    });
    let elapsed = started.elapsed();
    (all.into_inner().expect("not poisoned"), elapsed)
}

/// p50, p99 and max.
fn percentiles(values: &mut [f64]) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    let at = |p: f64| {
        let index = ((values.len() as f64 * p).ceil() as usize).clamp(1, values.len()) - 1;
        values[index]
    };
    [at(0.50), at(0.99), at(1.0)]
}

fn human(bytes: usize) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        _ => format!("{:.2} MB", bytes as f64 / 1e6),
    }
}

/// The server on a fresh SQLite data directory and a free port; the base URL.
async fn serve() -> (App, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data_dir = dir.path().to_string_lossy().to_string();
    let lookup = move |name: &str| match name {
        "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
        "PORT" => Some("0".to_string()),
        "JWT_SECRET_KEY" => Some("benchmark-secret-benchmark-secret-0123".into()),
        "VAULT_ENCRYPTION_KEY" => Some("00".repeat(32)),
        // The load measures the routes, not 429s; the limiter still counts every request.
        "TRADEHOST_API_RATE_MULTIPLIER" => Some("1000".to_string()),
        _ => None,
    };
    let figment = AppConfig::rocket_figment(&lookup).expect("configuration");
    let config = AppConfig::load(&figment, &lookup).expect("configuration");
    let app = App::init(config).await.expect("the app starts");
    let (port_tx, port_rx) = tokio::sync::oneshot::channel();
    let server =
        tradehost::rocket(figment, app.clone()).attach(AdHoc::on_liftoff("port", |rocket| {
            Box::pin(async move {
                let _ = port_tx.send(rocket.config().port);
            })
        }));
    tokio::spawn(server.launch());
    let port = port_rx.await.expect("the server lifts off");
    (app, format!("http://127.0.0.1:{port}"), dir)
}

/// Registers the one user through the companion route; returns (user id, access token).
fn register(client: &Client) -> (String, String) {
    let body = json!({"email": "bench@example.com", "password": "correct horse battery staple"});
    let mut response = client
        .agent
        .post(format!("{}/api/auth/register", client.base))
        .content_type("application/json")
        .send(body.to_string())
        .expect("register");
    let text = response.body_mut().read_to_string().expect("a body");
    assert_eq!(response.status().as_u16(), 200, "register: {text}");
    let answer: Value = serde_json::from_str(&text).expect("JSON");
    (
        answer["user_id"].as_str().expect("user_id").to_string(),
        answer["access_token"]
            .as_str()
            .expect("access_token")
            .to_string(),
    )
}

fn dec(value: f64, places: u32) -> Decimal {
    Decimal::from_f64(value)
        .expect("a finite amount")
        .round_dp(places)
}

fn fill(quantity: Decimal, price: Decimal, at_ms: i64) -> Fill {
    Fill {
        quantity,
        price,
        fee: (quantity * price * dec(FEE_RATE, 6)).round_dp(8),
        at_ms,
    }
}

/// A point of the account's history, after a fill.
struct Event {
    at_ms: i64,
    cash: f64,
    /// Signed value of the open positions at their entry prices.
    positions_value: f64,
    /// Gross value of the open positions at their entry prices.
    exposure: f64,
    open_positions: usize,
}

/// A completed trade's figures, in close order.
struct Close {
    at_ms: i64,
    net: f64,
    gross: f64,
    hold_ms: i64,
}

/// Books `trades` round trips, the open positions and `snapshots` tracker snapshots.
async fn seed(app: &App, user_id: &str, trades: usize, snapshots: usize) {
    let mut rng = StdRng::seed_from_u64(20_261_122);
    let now = now_ms();
    let mut account = accounts::account(&app.db.pool, user_id)
        .await
        .expect("the account")
        .expect("the balance call created the account");
    let stored = account.clone();
    let initial = float(account.initial_capital);
    let mut tx = app.db.pool.begin().await.expect("a transaction");
    // The bot that made them, stopped, so the status routes show its figures.
    let bot = bots::BotRow {
        user_id: user_id.to_string(),
        id: new_id(),
        status: "stopped".into(),
        broker: BROKER.into(),
        paper_trading: 1,
        risk_profile: "medium".into(),
        strategy: "ema-cross".into(),
        symbols: "[]".into(),
        started_at: Some(now - 90 * DAY_MS),
        last_scan_at: Some(now - HOUR_MS),
        scan_seq: 0,
        strategy_state: String::new(),
        last_error: None,
    };
    bots::upsert_bot(&mut *tx, &bot, now)
        .await
        .expect("the bot row");
    let mut events = Vec::with_capacity(2 * trades + OPEN_POSITIONS);
    let mut closes = Vec::with_capacity(trades);

    // One round trip per slot, back to back over 90 days, the last closed an hour ago.
    let first = now - 90 * DAY_MS;
    let slot = (89 * DAY_MS + 23 * HOUR_MS) / trades as i64;
    for n in 0..trades {
        let (symbol, around, size) = SYMBOLS[rng.random_range(0..SYMBOLS.len())];
        let side = if rng.random_bool(0.75) {
            Side::Long
        } else {
            Side::Short
        };
        let opened_at = first + n as i64 * slot + rng.random_range(0..=slot / 4);
        let closed_at = opened_at + rng.random_range(slot / 10..=slot / 2).max(1);
        let entry = dec(around * rng.random_range(0.9..1.1), 8);
        // About ±1 % a trade with a small edge: net profits of about ±2 USD.
        let exit = dec(float(entry) * (1.0 + rng.random_range(-0.01..0.0115)), 8);
        let quantity = dec(size, 8);
        let (mut position, open) = account.open(
            OpenRequest {
                position_id: new_id(),
                ledger_id: new_id(),
                broker: BROKER,
                strategy: "ema-cross",
                symbol,
                side,
                stop_loss: Some(dec(float(entry) * (1.0 - side_sign(side) * 0.02), 8)),
                take_profit: Some(dec(float(entry) * (1.0 + side_sign(side) * 0.03), 8)),
                trail_pct: None,
            },
            fill(quantity, entry, opened_at),
        );
        positions::write(&mut *tx, &[(user_id, &position)], opened_at)
            .await
            .expect("a position");
        ledger::insert(
            &mut *tx,
            &[ledger::NewRow {
                user_id,
                order_id: &new_id(),
                fill_id: Some(&new_id()),
                entry: &open,
            }],
        )
        .await
        .expect("a ledger row");
        events.push(Event {
            at_ms: opened_at,
            cash: float(account.cash),
            positions_value: side_sign(side) * float(open.notional),
            exposure: float(open.notional),
            open_positions: 1,
        });
        let reason = match rng.random_range(0..10) {
            0..6 => "signal",
            6..8 => "take_profit",
            _ => "stop_loss",
        };
        let (close, trade) = account.close(
            &mut position,
            fill(quantity, exit, closed_at),
            reason,
            new_id(),
            new_id(),
        );
        positions::write(&mut *tx, &[(user_id, &position)], closed_at)
            .await
            .expect("the position closes");
        ledger::insert(
            &mut *tx,
            &[ledger::NewRow {
                user_id,
                order_id: &new_id(),
                fill_id: Some(&new_id()),
                entry: &close,
            }],
        )
        .await
        .expect("a ledger row");
        trades::insert(&mut tx, &[(user_id, &trade)])
            .await
            .expect("a trade");
        events.push(Event {
            at_ms: closed_at,
            cash: float(account.cash),
            positions_value: 0.0,
            exposure: 0.0,
            open_positions: 0,
        });
        closes.push(Close {
            at_ms: closed_at,
            net: float(trade.net_pnl),
            gross: float(trade.gross_pnl),
            hold_ms: closed_at - opened_at,
        });
    }

    // The open positions: one per symbol, opened in the last 50 minutes.
    let (mut positions_value, mut exposure) = (0.0, 0.0);
    for (n, (symbol, around, size)) in SYMBOLS.iter().enumerate() {
        let opened_at = now - 50 * MINUTE_MS + n as i64 * 8 * MINUTE_MS;
        let side = if n % 2 == 0 { Side::Long } else { Side::Short };
        let entry = dec(around * rng.random_range(0.97..1.03), 8);
        let (position, open) = account.open(
            OpenRequest {
                position_id: new_id(),
                ledger_id: new_id(),
                broker: BROKER,
                strategy: "ema-cross",
                symbol,
                side,
                stop_loss: Some(dec(float(entry) * (1.0 - side_sign(side) * 0.02), 8)),
                take_profit: Some(dec(float(entry) * (1.0 + side_sign(side) * 0.03), 8)),
                trail_pct: None,
            },
            fill(dec(*size, 8), entry, opened_at),
        );
        positions::write(&mut *tx, &[(user_id, &position)], opened_at)
            .await
            .expect("a position");
        ledger::insert(
            &mut *tx,
            &[ledger::NewRow {
                user_id,
                order_id: &new_id(),
                fill_id: Some(&new_id()),
                entry: &open,
            }],
        )
        .await
        .expect("a ledger row");
        positions_value += side_sign(side) * float(open.notional);
        exposure += float(open.notional);
        events.push(Event {
            at_ms: opened_at,
            cash: float(account.cash),
            positions_value,
            exposure,
            open_positions: n + 1,
        });
    }
    accounts::apply_changes(
        &mut *tx,
        &[&accounts::AccountChange::between(
            user_id, &stored, &account,
        )],
        now,
    )
    .await
    .expect("the account");

    // Tracker snapshots, newest last: one a minute for two days, one an hour before that.
    let mut times: Vec<i64> = (0..snapshots as i64)
        .map(|k| {
            let minutes = k.min(2 * 24 * 60);
            now - 30_000 - minutes * MINUTE_MS - (k - minutes) * HOUR_MS
        })
        .collect();
    times.reverse();
    let figures = Figures::new(&closes, initial);
    let mut peak = initial;
    let mut max_drawdown: f64 = 0.0;
    for at in times {
        let event = events.partition_point(|e| e.at_ms <= at);
        let (cash, positions_value, exposure, open) = match event {
            0 => (initial, 0.0, 0.0, 0),
            n => {
                let e = &events[n - 1];
                (e.cash, e.positions_value, e.exposure, e.open_positions)
            }
        };
        let equity = cash + positions_value;
        peak = peak.max(equity);
        let drawdown = (peak - equity) / peak * 100.0;
        max_drawdown = max_drawdown.max(drawdown);
        let closed = closes.partition_point(|c| c.at_ms <= at);
        let kpi = figures.kpi(
            at,
            closed,
            cash,
            equity,
            (open, exposure),
            (max_drawdown, drawdown),
        );
        let row = SnapshotRow {
            id: new_id(),
            user_id: user_id.to_string(),
            taken_at: at,
            source: "tracker".into(),
            cash,
            positions_value,
            unrealized_pnl: 0.0,
            realized_pnl_today: figures.net(closed) - figures.net_at(at - at.rem_euclid(DAY_MS)),
            total_trades: closed as i64,
            winning_trades: figures.wins[closed] as i64,
            losing_trades: figures.losses[closed] as i64,
            kpi: Some(serde_json::to_string(&kpi).expect("a KPI serialises")),
        };
        perf::insert_snapshot(&mut *tx, &row)
            .await
            .expect("a snapshot");
    }
    tx.commit().await.expect("the seed commits");
}

fn side_sign(side: Side) -> f64 {
    float(side.sign())
}

/// Running sums over the completed trades: index `n` covers the first `n` closes.
struct Figures<'a> {
    closes: &'a [Close],
    initial: f64,
    net: Vec<f64>,
    gross: Vec<f64>,
    won: Vec<f64>,
    lost: Vec<f64>,
    wins: Vec<u64>,
    losses: Vec<u64>,
    hold_ms: Vec<i64>,
}

impl<'a> Figures<'a> {
    fn new(closes: &'a [Close], initial: f64) -> Figures<'a> {
        let mut f = Figures {
            closes,
            initial,
            net: vec![0.0],
            gross: vec![0.0],
            won: vec![0.0],
            lost: vec![0.0],
            wins: vec![0],
            losses: vec![0],
            hold_ms: vec![0],
        };
        for c in closes {
            let last = f.net.len() - 1;
            f.net.push(f.net[last] + c.net);
            f.gross.push(f.gross[last] + c.gross);
            f.won.push(f.won[last] + c.net.max(0.0));
            f.lost.push(f.lost[last] - c.net.min(0.0));
            f.wins.push(f.wins[last] + u64::from(c.net > 0.0));
            f.losses.push(f.losses[last] + u64::from(c.net < 0.0));
            f.hold_ms.push(f.hold_ms[last] + c.hold_ms);
        }
        f
    }

    fn net(&self, closed: usize) -> f64 {
        self.net[closed]
    }

    /// Net profit of the trades closed at or before `at`.
    fn net_at(&self, at: i64) -> f64 {
        self.net[self.closes.partition_point(|c| c.at_ms <= at)]
    }

    /// The KPI snapshot at `at`, after `closed` trades, with (open positions, their exposure)
    /// and (max drawdown, current drawdown) in percent.
    fn kpi(
        &self,
        at: i64,
        closed: usize,
        cash: f64,
        equity: f64,
        (open, exposure): (usize, f64),
        (max_drawdown, drawdown): (f64, f64),
    ) -> Kpi {
        let r2 = |x: f64| (x * 100.0).round() / 100.0 + 0.0;
        let change = |then: f64| r2((equity - then) / then * 100.0);
        let (wins, losses) = (self.wins[closed], self.losses[closed]);
        let first = self.closes.first().map_or(at, |c| c.at_ms);
        let days = ((at - first) as f64 / DAY_MS as f64).max(1.0);
        Kpi {
            timestamp: iso8601(at),
            account_value: r2(equity),
            cash_balance: r2(cash),
            total_return_pct: change(self.initial),
            daily_return_pct: change(self.initial + self.net_at(at - DAY_MS)),
            weekly_return_pct: change(self.initial + self.net_at(at - 7 * DAY_MS)),
            monthly_return_pct: change(self.initial + self.net_at(at - 30 * DAY_MS)),
            sharpe_ratio: 1.37,
            sortino_ratio: 2.05,
            max_drawdown_pct: r2(max_drawdown),
            current_drawdown_pct: r2(drawdown),
            total_trades: closed as u64,
            winning_trades: wins,
            losing_trades: losses,
            win_rate_pct: if closed == 0 {
                0.0
            } else {
                r2(wins as f64 / closed as f64 * 100.0)
            },
            profit_factor: if self.lost[closed] > 0.0 {
                r2(self.won[closed] / self.lost[closed])
            } else {
                0.0
            },
            avg_win: if wins == 0 {
                0.0
            } else {
                r2(self.won[closed] / wins as f64)
            },
            avg_loss: if losses == 0 {
                0.0
            } else {
                r2(self.lost[closed] / losses as f64)
            },
            active_positions: open,
            total_exposure_pct: r2(exposure / equity * 100.0),
            trades_per_day: r2(closed as f64 / days),
            avg_hold_time_hours: if closed == 0 {
                0.0
            } else {
                r2(self.hold_ms[closed] as f64 / closed as f64 / HOUR_MS as f64)
            },
            unrealized_pnl: 0.0,
            realized_pnl_total: r2(self.gross[closed]),
        }
    }
}
