//! Backtests end to end (candles loaded from the store, the replay, the report written to
//! `backtests`), side by side with the way a live scan calls a strategy (a fresh instance per
//! call) over the same candles in the same run.
//!
//! Cases (`BENCH_DAYS`, default 365, of five-minute candles of random walks imported first;
//! `BENCH_INTERVAL=1m` for one-minute candles):
//! - ema-cross and apex over one symbol, each with one instance for the run and, as the
//!   reference, a fresh instance per step;
//! - ema-cross over 10 and over `BENCH_SYMBOLS` (default 20) symbols in one run, and apex over
//!   `BENCH_SYMBOLS`, each on one thread and spread over every core;
//! - two one-symbol runs at once against the same two one after the other (the cores);
//! - a sweep of 4 configurations on every core against the same on one thread;
//! - the resident memory the process reached.
//!
//! `BENCH_NO_REFERENCE=1` leaves the references out (for a profile of the runs alone);
//! `BENCH_PHASES=1` prints each run's time loading, replaying and writing.
//!
//! `cargo bench -p tradehost --bench backtest` (SQLite; PostgreSQL with `DATABASE_URL=postgres://…`).

mod support;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use rust_decimal::Decimal;
use tradehost::App;
use tradehost::backtest::replay::{Plugins, Replay, SymbolCandles};
use tradehost::backtest::{self, Plan, Request, WasmPlugins};
use tradehost::billing::plans::{Entitlement, Tier};
use tradehost::candles;
use tradehost::engine::Trader;
use tradehost::engine::accounting::Account;
use tradehost::plugins::Active;
use tradehost::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use tradehost::plugins::bindings::strategy::{Evaluation, ScanContext};
use tradehost::plugins::bindings::strategy_replay::exports::tradehost::plugin::replay::{
    SeriesKey, StepContext,
};
use tradehost::plugins::bindings::types::{Signal, Verdict};
use tradehost::plugins::session::{CallPath, StrategySession};
use tradehost::settings::Settings;
use tradehost::store::backtests::{self as rows, BacktestRow};
use tradehost::store::bots::BotRow;
use tradehost::store::{new_id, now_ms};

/// The candles' interval: five minutes, or one with `BENCH_INTERVAL=1m` (the memory case: 20
/// symbols × a year of one-minute candles).
fn interval() -> (&'static str, i64) {
    match std::env::var("BENCH_INTERVAL").as_deref() {
        Ok("1m") => ("1m", 60_000),
        _ => ("5m", 300_000),
    }
}
/// 2024-01-01T00:00:00Z.
const START: i64 = 1_704_067_200_000;

/// Candles of a random walk seeded by `seed`, one per `interval_ms`.
fn csv(seed: u64, count: i64, interval_ms: i64) -> String {
    let mut text = String::with_capacity(count as usize * 64);
    let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ seed.wrapping_mul(0xA24B_AED4_963E_E407);
    let mut price = 100.0 + seed as f64;
    for i in 0..count {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let step = ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * price * 0.004;
        let (open, close) = (price, (price + step).max(0.01));
        let (high, low) = (open.max(close) * 1.001, open.min(close) * 0.999);
        text.push_str(&format!(
            "{},{open:.4},{high:.4},{low:.4},{close:.4},{}\n",
            START + i * interval_ms,
            (state % 10_000) as f64 / 10.0 + 1.0
        ));
        price = close;
    }
    text
}

fn symbol(i: usize) -> String {
    format!("S{i}-USD")
}

fn request(strategy: &str, symbols: Vec<String>, days: i64) -> Request {
    Request {
        strategy: strategy.into(),
        config: [("interval".to_string(), interval().0.to_string())].into(),
        symbols,
        interval: interval().0.into(),
        source: "bench".into(),
        from_ms: START + 2 * 86_400_000,
        to_ms: START + days * 86_400_000,
        initial_capital: Decimal::from(100_000),
        costs: None,
        risk_profile: "medium".into(),
        lookahead_cuts: 0,
    }
}

/// The top plan, the default settings with the benchmark's symbols allowed.
fn operator() -> (Entitlement, Settings) {
    let entitlement = Entitlement {
        tier: Tier::Enterprise,
        trial_active: false,
        effective: Tier::Enterprise,
    };
    let mut settings = Settings::resolve(&Default::default(), &entitlement, 100_000.0);
    settings.trading.allowed_pairs = (0..50).map(symbol).collect();
    (entitlement, settings)
}

/// One run end to end: load, replay, report written. Returns (candles, seconds, trades).
async fn run(app: &App, user_id: &str, request: Request, threads: usize) -> (u64, f64, u64) {
    let started = Instant::now();
    let plan = backtest::plan(&app.plugins, request).unwrap();
    let candles = backtest::load_candles(&app.db, &plan).await.unwrap();
    let loaded = started.elapsed().as_secs_f64();
    let registry = app.plugins.clone();
    let report = tokio::task::spawn_blocking(move || {
        backtest::execute(
            &registry,
            &plan,
            &candles,
            operator(),
            (&AtomicBool::new(false), threads),
            &mut |_| {},
        )
        .unwrap()
    })
    .await
    .unwrap();
    let replayed = started.elapsed().as_secs_f64();
    write(app, user_id, &report).await;
    if std::env::var_os("BENCH_PHASES").is_some() {
        println!(
            "  load {loaded:.3} s, replay and report {:.3} s, write {:.3} s",
            replayed - loaded,
            started.elapsed().as_secs_f64() - replayed
        );
    }
    (
        report.candles,
        started.elapsed().as_secs_f64(),
        report.metrics.total_trades,
    )
}

async fn write(app: &App, user_id: &str, report: &backtest::Report) {
    let id = new_id();
    let row = BacktestRow {
        id: id.clone(),
        user_id: user_id.into(),
        status: "running".into(),
        request: "{}".into(),
        progress_pct: 0,
        candles: report.candles as i64,
        error: None,
        report: None,
        created_at: now_ms(),
        started_at: None,
        finished_at: None,
    };
    rows::insert(&app.db.pool, &row).await.unwrap();
    let json = serde_json::to_string(report).unwrap();
    rows::finish(&app.db.pool, &id, "completed", None, Some(&json), now_ms())
        .await
        .unwrap();
}

/// The way a live scan calls a strategy: a fresh store and instance for every call.
struct FreshInstance {
    registry: Arc<tradehost::plugins::Registry>,
    active: Active,
}

impl Plugins for FreshInstance {
    fn begin(&mut self, _: &[SeriesKey], _: u32) -> Result<bool, String> {
        Ok(false)
    }
    fn step(&mut self, _: &StepContext) -> Result<Vec<Signal>, String> {
        Err("a fresh instance per call takes whole windows".into())
    }
    fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, String> {
        self.registry
            .runtime()
            .evaluate_strategy(&self.active, ctx)
            .map_err(|err| err.to_string())
    }
    fn rule_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn check(&mut self, _: &str, _: &ProposedOrder, _: &RiskContext) -> Result<Verdict, String> {
        Ok(Verdict::Allow)
    }
}

/// The replay alone with `plugins`, over loaded candles. Returns (candles, seconds, trades).
fn replay<P: Plugins>(
    plan: &Plan,
    candles: Vec<(String, Vec<tradehost::plugins::bindings::types::Candle>)>,
    plugins: P,
) -> (u64, f64, u64) {
    let started = Instant::now();
    let (entitlement, settings) = operator();
    let bot = BotRow {
        user_id: "bench".into(),
        id: "bench".into(),
        status: "running".into(),
        broker: "bench".into(),
        paper_trading: 1,
        risk_profile: "medium".into(),
        strategy: plan.request.strategy.clone(),
        symbols: "[]".into(),
        started_at: None,
        last_scan_at: None,
        scan_seq: 0,
        strategy_state: String::new(),
        last_error: None,
    };
    let trader = Trader::new(
        bot,
        Account::new(plan.request.initial_capital, "USD"),
        entitlement,
        settings,
    );
    let cancel = AtomicBool::new(false);
    let symbols = candles
        .iter()
        .map(|(s, c)| SymbolCandles::new(s.clone(), c))
        .collect();
    let (outcome, _) = Replay::new(
        trader,
        plugins,
        plan.costs,
        (plan.request.interval.clone(), plan.interval_ms),
        symbols,
        "bench".into(),
        &cancel,
    )
    .run(plan.request.from_ms, plan.request.to_ms, &mut |_| {})
    .unwrap();
    (
        outcome.candles,
        started.elapsed().as_secs_f64(),
        outcome.trades.len() as u64,
    )
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn line(case: &str, (candles, seconds, trades): (u64, f64, u64)) -> f64 {
    let rate = candles as f64 / seconds;
    println!("{case:<52} {candles:>10} {seconds:>9.2} {rate:>12.0} {trades:>8}");
    rate
}

#[rocket::main]
async fn main() {
    let days = support::env_or("BENCH_DAYS", 365) as i64;
    let symbol_count = support::env_or("BENCH_SYMBOLS", 20) as usize;
    let dir = tempfile::tempdir().unwrap();
    let app = support::app(dir.path(), &[]).await;
    let (bar, interval_ms) = interval();
    let count = days * 86_400_000 / interval_ms;
    let started = Instant::now();
    for i in 0..symbol_count.max(2) {
        let key = candles::series_key("bench", &symbol(i), bar).unwrap();
        candles::import_csv(
            &app.db,
            &key,
            csv(i as u64, count, interval_ms).into_bytes(),
        )
        .await
        .unwrap();
    }
    println!(
        "{} symbols × {days} days of {bar} candles imported in {:.1} s, on {}",
        symbol_count.max(2),
        started.elapsed().as_secs_f64(),
        app.db.backend.name()
    );
    let user_id = support::user(&app, "bench@example.com").await;
    println!(
        "{:<52} {:>10} {:>9} {:>12} {:>8}",
        "case", "candles", "seconds", "candles/s", "trades"
    );
    for strategy in ["ema-cross", "apex"] {
        let one = request(strategy, vec![symbol(0)], days);
        let session_rate = line(
            &format!("{strategy}, 1 symbol, one instance (end to end)"),
            run(&app, &user_id, one.clone(), 1).await,
        );
        if std::env::var_os("BENCH_NO_REFERENCE").is_some() {
            continue;
        }
        // The reference over the same candles: the replay alone with a fresh instance a call.
        let plan = backtest::plan(&app.plugins, one).unwrap();
        let candles = backtest::load_candles(&app.db, &plan).await.unwrap();
        let registry = app.plugins.clone();
        let active = Active {
            plugin: plan.strategy.plugin.clone(),
            target: plan.target.clone(),
        };
        let fresh = line(
            &format!("{strategy}, 1 symbol, fresh instance a step (replay)"),
            replay(&plan, candles.clone(), FreshInstance { registry, active }),
        );
        let runtime = app.plugins.runtime();
        // Without the risk rules, as the reference.
        let session = |path| WasmPlugins {
            session: StrategySession::start(runtime, &plan.strategy, plan.target.clone(), path)
                .unwrap(),
            rules: Vec::new(),
            spread: None,
        };
        let windows = replay(&plan, candles.clone(), session(CallPath::Evaluate));
        let steps = replay(&plan, candles, session(CallPath::Preferred));
        assert_eq!(windows.2, steps.2, "both paths make the same trades");
        let windows = line(
            &format!("{strategy}, 1 symbol, one instance, windows (replay)"),
            windows,
        );
        let steps = line(
            &format!("{strategy}, 1 symbol, one instance, steps (replay)"),
            steps,
        );
        println!(
            "{strategy}: one instance taking steps {:.2}x, given windows {:.2}x a fresh instance a step; end to end {session_rate:.0} candles/s",
            steps / fresh,
            windows / fresh,
        );
    }

    // One run's symbols on one thread, then spread over every core.
    let cores = backtest::cores();
    for (strategy, count) in [
        ("ema-cross", 10),
        ("ema-cross", symbol_count),
        ("apex", symbol_count),
    ] {
        let many: Vec<String> = (0..count).map(symbol).collect();
        let mut rates = Vec::new();
        let mut trades = Vec::new();
        for threads in [1, cores] {
            let outcome = run(
                &app,
                &user_id,
                request(strategy, many.clone(), days),
                threads,
            )
            .await;
            trades.push(outcome.2);
            rates.push(line(
                &format!("{strategy}, {count} symbols, one run on {threads} thread(s)"),
                outcome,
            ));
        }
        assert_eq!(
            trades[0], trades[1],
            "spread over the cores, the same trades"
        );
        println!(
            "{strategy}, {count} symbols: spread over {cores} threads {:.2}x one thread",
            rates[1] / rates[0]
        );
    }

    // The cores: two runs one after the other, then the same two at once.
    let pair = [vec![symbol(0)], vec![symbol(1)]];
    let started = Instant::now();
    let mut candles = 0;
    for symbols in pair.clone() {
        candles += run(&app, &user_id, request("ema-cross", symbols, days), 1)
            .await
            .0;
    }
    let sequential = line(
        "ema-cross, 2 runs one after the other",
        (candles, started.elapsed().as_secs_f64(), 0),
    );
    let started = Instant::now();
    let (a, b) = tokio::join!(
        run(
            &app,
            &user_id,
            request("ema-cross", pair[0].clone(), days),
            1
        ),
        run(
            &app,
            &user_id,
            request("ema-cross", pair[1].clone(), days),
            1
        ),
    );
    let parallel = line(
        "ema-cross, 2 runs at once",
        (a.0 + b.0, started.elapsed().as_secs_f64(), 0),
    );
    println!(
        "two runs at once: {:.2}x the candles/s of one after the other",
        parallel / sequential
    );

    // A sweep of 4 configurations over one symbol: on every core, against one thread.
    let plan = backtest::plan(&app.plugins, request("ema-cross", vec![symbol(0)], days)).unwrap();
    let candles = backtest::load_candles(&app.db, &plan).await.unwrap();
    let grid: backtest::sweep::Grid = [
        (
            "fast_period".to_string(),
            vec!["5".to_string(), "9".to_string()],
        ),
        (
            "slow_period".to_string(),
            vec!["21".to_string(), "34".to_string()],
        ),
    ]
    .into();
    let mut rates = Vec::new();
    for threads in [1, cores] {
        let started = Instant::now();
        let ranked = tokio::task::block_in_place(|| {
            backtest::sweep::sweep(
                &app.plugins,
                &plan,
                &candles,
                &operator(),
                &grid,
                "sharpe_ratio",
                threads,
                &AtomicBool::new(false),
                &|_, _| {},
            )
            .unwrap()
        });
        let replayed: u64 = ranked
            .iter()
            .filter_map(|point| point.report.as_ref())
            .map(|report| report.candles)
            .sum();
        rates.push(line(
            &format!("ema-cross sweep, 4 configurations, {threads} thread(s)"),
            (replayed, started.elapsed().as_secs_f64(), 0),
        ));
    }
    println!(
        "sweep on {cores} threads: {:.2}x one thread",
        rates[1] / rates[0]
    );
    println!("peak resident memory: {:.0} MB", peak_rss_mb());
    support::drop_created_databases().await;
}
