//! Plugin call costs: a strategy evaluating 200 candles in wasm (fresh instance per call) and
//! the same strategy compiled natively; risk-rule calls; and calls while the active risk rule is
//! swapped back and forth continuously (every call must succeed).
//!
//! `cargo bench -p tradehost --bench plugins`

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tradehost::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use tradehost::plugins::bindings::strategy::ScanContext;
use tradehost::plugins::bindings::types::{Account, Candle, KpiSnapshot, Series, Side};
use tradehost::plugins::builtin::BUILTINS;
use tradehost::plugins::{Limits, Manifest, PluginKind, PluginRuntime, Registry};

const NOW: i64 = 1_795_300_000_000;

fn registry() -> Arc<Registry> {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache");
    let registry = Registry::new(
        Arc::new(PluginRuntime::new(Some(&cache), Limits::default()).unwrap()),
        None,
        None,
    );
    for builtin in BUILTINS {
        registry
            .install_builtin(builtin.manifest, builtin.wasm)
            .unwrap();
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let strict = Manifest::from_toml(
        &std::fs::read_to_string(repo.join("plugins/testing/risk-guards-strict/plugin.toml"))
            .unwrap(),
    )
    .unwrap();
    let wasm =
        std::fs::read(repo.join("plugins/target/wasm32-wasip2/release/risk_guards_strict.wasm"))
            .unwrap();
    registry.install_local(&wasm, &strict).unwrap();
    Arc::new(registry)
}

fn candles(registry: &Registry, symbol: &str, interval: &str, count: u32) -> Vec<Candle> {
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    registry
        .runtime()
        .broker_candles(&paper, symbol, interval, count, NOW)
        .unwrap()
        .unwrap()
}

fn account() -> Account {
    Account {
        cash: 10_000.0,
        equity: 10_000.0,
        buying_power: 10_000.0,
        currency: "USD".into(),
    }
}

fn wasm_context(symbol: &str, interval: &str, candles: Vec<Candle>) -> ScanContext {
    ScanContext {
        scan_id: "bench".into(),
        now_ms: NOW,
        market: vec![Series {
            symbol: symbol.into(),
            interval: interval.into(),
            candles,
        }],
        positions: vec![],
        account: account(),
        state: vec![],
    }
}

/// The same scan in the SDK's own types, for the natively compiled strategy.
fn native_context(candles: &[Candle]) -> tradehost_sdk::strategy::ScanContext {
    use tradehost_sdk::types as t;
    tradehost_sdk::strategy::ScanContext {
        scan_id: "bench".into(),
        now_ms: NOW,
        market: vec![t::Series {
            symbol: "BTC-USD".into(),
            interval: "1m".into(),
            candles: candles
                .iter()
                .map(|c| t::Candle {
                    timestamp_ms: c.timestamp_ms,
                    open: c.open,
                    high: c.high,
                    low: c.low,
                    close: c.close,
                    volume: c.volume,
                })
                .collect(),
        }],
        positions: vec![],
        account: t::Account {
            cash: 10_000.0,
            equity: 10_000.0,
            buying_power: 10_000.0,
            currency: "USD".into(),
        },
        state: vec![],
    }
}

fn order() -> ProposedOrder {
    ProposedOrder {
        symbol: "BTC-USD".into(),
        side: Side::Long,
        size_usd: 500.0,
        price: 60_000.0,
        stop_loss: Some(59_000.0),
    }
}

fn risk_context() -> RiskContext {
    RiskContext {
        account: account(),
        positions: vec![],
        daily_pnl: 0.0,
        trades_today: 0,
        thresholds: vec![],
    }
}

fn benches(c: &mut Criterion) {
    let registry = registry();
    let runtime = registry.runtime().clone();
    let one_minute = candles(&registry, "BTC-USD", "1m", 200);
    assert_eq!(one_minute.len(), 200);

    let ema = registry.active(PluginKind::Strategy, "ema-cross").unwrap();
    let ctx = wasm_context("BTC-USD", "1m", one_minute.clone());
    c.bench_function(
        "strategy ema-cross, 200 candles, wasm (fresh instance)",
        |b| b.iter(|| runtime.evaluate_strategy(&ema, black_box(&ctx)).unwrap()),
    );
    let native = native_context(&one_minute);
    let config = strategy_ema_cross::Config::default();
    c.bench_function("strategy ema-cross, 200 candles, native", |b| {
        b.iter(|| strategy_ema_cross::evaluate(black_box(&native), &config).unwrap())
    });

    let apex = registry.active(PluginKind::Strategy, "apex").unwrap();
    let apex_ctx = wasm_context("BTC-USD", "5m", candles(&registry, "BTC-USD", "5m", 200));
    c.bench_function("strategy apex, 200 candles, wasm (fresh instance)", |b| {
        b.iter(|| {
            runtime
                .evaluate_strategy(&apex, black_box(&apex_ctx))
                .unwrap()
        })
    });

    let rules = registry
        .active(PluginKind::RiskRule, "risk-guards")
        .unwrap();
    c.bench_function("fixed cost: store only", |b| {
        b.iter(|| black_box(runtime.store(&rules.target, None, false)))
    });
    c.bench_function(
        "fixed cost: describe (store, instance, trivial call)",
        |b| {
            b.iter(|| {
                runtime
                    .describe(&rules.target, &rules.plugin.prepared)
                    .unwrap()
            })
        },
    );
    let (order, risk) = (order(), risk_context());
    c.bench_function("risk-guards check-order (fresh instance)", |b| {
        b.iter(|| {
            runtime
                .check_order(&rules, black_box(&order), &risk)
                .unwrap()
        })
    });
    let kpi = KpiSnapshot {
        timestamp_ms: NOW,
        account_value: 9_000.0,
        cash_balance: 5_000.0,
        total_return_pct: -10.0,
        daily_return_pct: -2.0,
        current_drawdown_pct: 16.0,
        max_drawdown_pct: 16.0,
        win_rate_pct: 48.0,
        profit_factor: 0.9,
        sharpe_ratio: 0.2,
        total_trades: 40,
        winning_trades: 19,
        losing_trades: 21,
        consecutive_losses: 3,
        active_positions: 3,
        exposure_pct: 60.0,
        largest_position_pct: 9.0,
    };
    c.bench_function("risk-guards evaluate-alarms (fresh instance)", |b| {
        b.iter(|| {
            runtime
                .evaluate_alarms(&rules, black_box(&kpi), &[])
                .unwrap()
        })
    });

    // Swap the active risk rule back and forth every millisecond while measuring calls.
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (registry, stop, swaps) = (registry.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let mut version = "0.2.0";
            while !stop.load(Ordering::Relaxed) {
                rt.block_on(registry.activate("risk-guards", version))
                    .unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
                version = if version == "0.2.0" { "0.1.0" } else { "0.2.0" };
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let (calls, failures) = (AtomicU64::new(0), AtomicU64::new(0));
    c.bench_function("risk-guards check-order during continuous hot swaps", |b| {
        b.iter(|| {
            calls.fetch_add(1, Ordering::Relaxed);
            let outcome = registry
                .active(PluginKind::RiskRule, "risk-guards")
                .and_then(|rules| runtime.check_order(&rules, black_box(&order), &risk));
            if outcome.is_err() {
                failures.fetch_add(1, Ordering::Relaxed);
            }
        })
    });
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    println!(
        "hot swap: {} calls, {} swaps, {} failed calls",
        calls.load(Ordering::Relaxed),
        swaps.load(Ordering::Relaxed),
        failures.load(Ordering::Relaxed)
    );
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "a call failed across a swap"
    );
}

criterion_group! {
    name = plugin_benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = benches
}
criterion_main!(plugin_benches);
