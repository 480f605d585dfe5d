//! The plugin runtime with real components: each world through the built-in plugins, fault
//! containment with purpose-built bad guests, and hot swap while calls run.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tradehost::plugins::bindings::broker::Credentials;
use tradehost::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use tradehost::plugins::bindings::strategy::{Evaluation, ScanContext};
use tradehost::plugins::bindings::strategy_replay::exports::tradehost::plugin::replay::{
    ClosedCandle, SeriesKey, StepContext,
};
use tradehost::plugins::bindings::types::{
    Account, AlarmLevel, BrokerError, KpiSnapshot, OrderKind, OrderQuery, OrderRequest, OrderSide,
    OrderStatus, Series, Side, SignalAction, Threshold, Verdict,
};
use tradehost::plugins::builtin::BUILTINS;
use tradehost::plugins::calls::BrokerAccount;
use tradehost::plugins::session::{CallPath, StrategySession};
use tradehost::plugins::storage::{MemoryStorage, PluginStorage};
use tradehost::plugins::{Limits, Manifest, PluginError, PluginKind, PluginRuntime, Registry};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn artifact(crate_name: &str) -> Vec<u8> {
    let path = repo()
        .join("plugins/target/wasm32-wasip2/release")
        .join(format!("{}.wasm", crate_name.replace('-', "_")));
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn manifest(dir: &str) -> Manifest {
    Manifest::from_toml(
        &std::fs::read_to_string(repo().join("plugins").join(dir).join("plugin.toml")).unwrap(),
    )
    .unwrap()
}

fn registry_with(limits: Limits) -> Registry {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache");
    let registry = Registry::new(
        Arc::new(PluginRuntime::new(Some(&cache), limits).unwrap()),
        None,
        None,
    );
    for builtin in BUILTINS {
        registry
            .install_builtin(builtin.manifest, builtin.wasm)
            .unwrap();
    }
    registry
}

/// A registry whose plugins may reach loopback and private addresses.
fn registry_allowing_private_network() -> Registry {
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache");
    let runtime = PluginRuntime::new(Some(&cache), Limits::default())
        .unwrap()
        .with_egress(tradehost::plugins::egress::Egress {
            allow_private_network: true,
        });
    Registry::new(Arc::new(runtime), None, None)
}

fn registry() -> Registry {
    registry_with(Limits {
        deadline: Duration::from_millis(500),
        ..Limits::default()
    })
}

/// Loads a test guest from plugins/testing.
fn load_guest(registry: &Registry, dir: &str) -> Result<(), PluginError> {
    let manifest = manifest(&format!("testing/{dir}"));
    registry
        .install_local(&artifact(dir), &manifest)
        .map(|_| ())
}

fn creds() -> Credentials {
    Credentials {
        api_key: "key".into(),
        api_secret: "secret".into(),
        params: vec![],
    }
}

const NOW: i64 = 1_795_300_000_000;

fn market(registry: &Registry, symbols: &[&str], interval: &str, count: u32) -> Vec<Series> {
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    symbols
        .iter()
        .map(|symbol| Series {
            symbol: symbol.to_string(),
            interval: interval.into(),
            candles: registry
                .runtime()
                .broker_candles(&paper, symbol, interval, count, NOW)
                .unwrap()
                .unwrap(),
        })
        .collect()
}

fn account() -> Account {
    Account {
        cash: 10_000.0,
        equity: 10_000.0,
        buying_power: 10_000.0,
        currency: "USD".into(),
    }
}

fn scan(market: Vec<Series>) -> ScanContext {
    ScanContext {
        scan_id: "scan-1".into(),
        now_ms: NOW,
        market,
        positions: vec![],
        account: account(),
        state: vec![],
    }
}

fn evaluate(registry: &Registry, name: &str, ctx: &ScanContext) -> Result<Evaluation, PluginError> {
    let active = registry.active(PluginKind::Strategy, name)?;
    registry.runtime().evaluate_strategy(&active, ctx)
}

/// What `guest-clocks` read in one call: WASI's wall clock (ms) and a value of its random source.
fn clocks_read(evaluation: &Evaluation) -> (i64, u64) {
    let text = String::from_utf8(evaluation.state.clone()).unwrap();
    let (wall_ms, random) = text.split_once(' ').unwrap();
    (wall_ms.parse().unwrap(), random.parse().unwrap())
}

/// In a backtest a guest's WASI clock reads the replayed time and its random source is seeded,
/// so two runs are the same and a guest cannot tell a replay from a live scan by the clock; a
/// live scan reads the real clock and fresh randomness.
#[test]
fn a_replayed_guest_reads_the_replayed_time_and_a_seeded_random_source() {
    let registry = registry();
    load_guest(&registry, "guest-clocks").unwrap();
    let runtime = registry.runtime();
    let active = registry
        .active(PluginKind::Strategy, "guest-clocks")
        .unwrap();
    let replayed = [1_600_000_000_000, 1_600_000_060_000, 1_600_086_400_000];
    let run = || {
        let mut session =
            StrategySession::start(runtime, &active, active.target.clone(), CallPath::Evaluate)
                .unwrap();
        replayed
            .iter()
            .map(|&now_ms| {
                clocks_read(
                    &session
                        .evaluate(&ScanContext {
                            now_ms,
                            ..scan(vec![])
                        })
                        .unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let first = run();
    let walls: Vec<i64> = first.iter().map(|(wall_ms, _)| *wall_ms).collect();
    assert_eq!(walls, replayed);
    assert_eq!(
        run(),
        first,
        "a second run reads the same clock and random values"
    );

    let live = |_| clocks_read(&evaluate(&registry, "guest-clocks", &scan(vec![])).unwrap());
    let (one, two): ((i64, u64), (i64, u64)) = (live(1), live(2));
    let real_ms = chrono::Utc::now().timestamp_millis();
    assert!(
        (real_ms - one.0).abs() < 60_000,
        "live: {} vs {real_ms}",
        one.0
    );
    assert_ne!(one.1, two.1, "live calls draw fresh randomness");
    assert!(first.iter().all(|(_, random)| *random != one.1));
}

/// A backtest calls an SDK strategy through its `replay` export (each candle handed over
/// once, windows and state kept in the guest); a live scan calls `evaluate` with whole windows.
/// Step after step over the paper market, both give the same signals.
#[test]
fn a_strategy_gives_the_same_signals_by_steps_as_by_whole_windows() {
    let registry = registry();
    let runtime = registry.runtime();
    let symbols = ["BTC-USD", "ETH-USD", "SOL-USD"];
    let data = market(&registry, &symbols, "1m", 700);
    let keys: Vec<SeriesKey> = symbols
        .iter()
        .map(|symbol| SeriesKey {
            symbol: symbol.to_string(),
            interval: "1m".into(),
        })
        .collect();
    for name in ["ema-cross", "apex"] {
        let active = registry.active(PluginKind::Strategy, name).unwrap();
        let mut target = active.target.clone();
        let mut config = (*target.config).clone();
        config.insert("interval".into(), "1m".into());
        target.config = Arc::new(config);
        let mut windows =
            StrategySession::start(runtime, &active, target.clone(), CallPath::Evaluate).unwrap();
        let mut steps =
            StrategySession::start(runtime, &active, target, CallPath::Preferred).unwrap();
        assert!(steps.steps() && !windows.steps(), "{name}");
        steps.begin(&keys, 200).unwrap();
        let (mut state, mut signals) = (Vec::new(), 0);
        for closed in 100..=data[0].candles.len() {
            let now_ms = data[0].candles[closed - 1].timestamp_ms + 60_000;
            let market = data
                .iter()
                .map(|series| Series {
                    candles: series.candles[closed.saturating_sub(200)..closed].to_vec(),
                    ..series.clone()
                })
                .collect();
            let scan = ScanContext {
                scan_id: format!("scan-{closed}"),
                now_ms,
                market,
                positions: vec![],
                account: account(),
                state: state.clone(),
            };
            let by_windows = windows.evaluate(&scan).unwrap();
            state = by_windows.state;
            let from = if closed == 100 { 0 } else { closed - 1 };
            let step = StepContext {
                scan_id: scan.scan_id.clone(),
                now_ms,
                closed: data
                    .iter()
                    .enumerate()
                    .flat_map(|(index, series)| {
                        series.candles[from..closed]
                            .iter()
                            .map(move |candle| ClosedCandle {
                                series: index as u32,
                                candle: *candle,
                            })
                    })
                    .collect(),
                positions: vec![],
                account: account(),
            };
            let by_steps = steps.step(&step).unwrap();
            assert_eq!(
                by_steps, by_windows.signals,
                "{name} after {closed} candles"
            );
            signals += by_steps.len();
        }
        assert!(signals > 0, "{name} gave no signal to compare");
    }
}

#[test]
fn the_builtins_load_and_describe_themselves() {
    let registry = registry();
    assert_eq!(
        registry.names(PluginKind::Broker),
        vec!["alpaca", "binance", "coinbase", "kraken", "okx", "paper"]
    );
    // Each venue's plugin describes itself under the name it is installed as.
    for name in registry.names(PluginKind::Broker) {
        let active = registry.active(PluginKind::Broker, &name).unwrap();
        let description = registry
            .runtime()
            .describe(&active.target, &active.plugin.prepared)
            .unwrap();
        assert_eq!(description.name, name);
    }
    assert_eq!(
        registry.names(PluginKind::Strategy),
        vec!["apex", "ema-cross"]
    );
    assert_eq!(registry.names(PluginKind::RiskRule), vec!["risk-guards"]);
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    let description = registry
        .runtime()
        .describe(&paper.target, &paper.plugin.prepared)
        .unwrap();
    assert_eq!(description.name, "paper");
    assert!(description.capabilities.iter().any(|c| c == "simulated"));
    // A kind mismatch is a lookup failure, not a call into the wrong world.
    assert!(matches!(
        registry.active(PluginKind::Strategy, "paper"),
        Err(PluginError::NotFound { .. })
    ));
}

#[test]
fn the_paper_market_is_deterministic_and_consistent_across_intervals() {
    let registry = registry();
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    let runtime = registry.runtime();
    let one_minute = runtime
        .broker_candles(&paper, "BTC-USD", "1m", 60, NOW)
        .unwrap()
        .unwrap();
    assert_eq!(
        one_minute,
        runtime
            .broker_candles(&paper, "BTC-USD", "1m", 60, NOW)
            .unwrap()
            .unwrap()
    );
    assert_eq!(one_minute.len(), 60);
    let five = runtime
        .broker_candles(&paper, "BTC-USD", "5m", 3, NOW)
        .unwrap()
        .unwrap();
    let last = five.last().unwrap();
    let parts: Vec<_> = one_minute
        .iter()
        .filter(|c| {
            c.timestamp_ms >= last.timestamp_ms && c.timestamp_ms < last.timestamp_ms + 300_000
        })
        .collect();
    assert_eq!(parts.len(), 5);
    assert_eq!(last.open, parts[0].open);
    assert_eq!(last.close, parts[4].close);
    assert!((last.high - parts.iter().map(|c| c.high).fold(f64::MIN, f64::max)).abs() < 1e-9);
    assert!(
        runtime
            .broker_candles(&paper, "BTC-USD", "1h", 24, NOW)
            .unwrap()
            .unwrap()
            .len()
            == 24
    );
    assert_ne!(
        one_minute,
        runtime
            .broker_candles(&paper, "ETH-USD", "1m", 60, NOW)
            .unwrap()
            .unwrap()
    );
    assert!(matches!(
        runtime
            .broker_candles(&paper, "BTC-USD", "7m", 10, NOW)
            .unwrap(),
        Err(BrokerError::Unsupported(_))
    ));
    assert!(
        runtime
            .broker_candles(&paper, "not a symbol", "1m", 10, NOW)
            .unwrap()
            .is_err()
    );

    let empty = Credentials {
        api_key: String::new(),
        api_secret: String::new(),
        params: vec![],
    };
    assert!(matches!(
        runtime.broker_validate(&paper, &empty).unwrap(),
        Err(BrokerError::Auth(_))
    ));
    let check = runtime.broker_validate(&paper, &creds()).unwrap().unwrap();
    assert_eq!(check.permissions, vec!["read", "trade"]);
}

fn account_of(user: &str) -> BrokerAccount {
    BrokerAccount {
        user_id: user.into(),
        credentials: creds(),
    }
}

fn market_order(side: OrderSide, id: &str, quantity: &str) -> OrderRequest {
    OrderRequest {
        client_order_id: id.into(),
        symbol: "ETH-USD".into(),
        side,
        quantity: quantity.into(),
        kind: OrderKind::Market,
        limit_price: None,
        reduce_only: false,
    }
}

fn number(text: &str) -> f64 {
    text.parse().unwrap()
}

#[test]
fn paper_fills_carry_fees_and_slippage_against_the_taker() {
    let registry = registry();
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    let runtime = registry.runtime();
    let alice = account_of("alice");
    let buy = runtime
        .broker_place_order(&paper, &alice, &market_order(OrderSide::Buy, "b1", "0.5"))
        .unwrap()
        .unwrap();
    let sell = runtime
        .broker_place_order(&paper, &alice, &market_order(OrderSide::Sell, "s1", "0.5"))
        .unwrap()
        .unwrap();
    assert_eq!(buy.status, OrderStatus::Filled);
    let (buy_fill, sell_fill) = (&buy.fills[0], &sell.fills[0]);
    assert!(
        number(&buy_fill.price) > number(&sell_fill.price),
        "buyers pay more than sellers get: {} vs {}",
        buy_fill.price,
        sell_fill.price
    );
    let fee = number(&buy_fill.fee);
    assert!(
        fee > 0.0 && (fee - number(&buy_fill.price) * 0.5 * 0.001).abs() < 1e-6,
        "10 bps fee, got {fee}"
    );
    let again = runtime
        .broker_place_order(&paper, &alice, &market_order(OrderSide::Buy, "b1", "0.5"))
        .unwrap()
        .unwrap();
    assert_eq!(
        again, buy,
        "a retried client order id is the same order, not a second one"
    );
    let bad = market_order(OrderSide::Buy, "b2", "-1");
    assert!(matches!(
        runtime.broker_place_order(&paper, &alice, &bad).unwrap(),
        Err(BrokerError::Invalid(_))
    ));
    // The venue remembers: by client order id, among the fills, in the holdings; per user.
    let query = OrderQuery {
        symbol: "ETH-USD".into(),
        client_order_id: Some("b1".into()),
        order_id: None,
    };
    assert_eq!(
        runtime
            .broker_get_order(&paper, &alice, &query)
            .unwrap()
            .unwrap(),
        buy
    );
    let fills = runtime
        .broker_fills_since(&paper, &alice, 0, Some("ETH-USD"))
        .unwrap()
        .unwrap();
    assert_eq!(fills.len(), 2);
    assert!(
        runtime
            .broker_positions(&paper, &alice)
            .unwrap()
            .unwrap()
            .is_empty(),
        "bought and sold 0.5"
    );
    let bob = account_of("bob");
    assert!(matches!(
        runtime.broker_get_order(&paper, &bob, &query).unwrap(),
        Err(BrokerError::NotFound(_))
    ));
    let rules = runtime
        .broker_instrument(&paper, &alice, "ETH-USD")
        .unwrap()
        .unwrap();
    assert_eq!(
        (rules.tick_size.as_str(), rules.lot_size.as_str()),
        ("0.01", "0.00000001")
    );
}

#[test]
fn a_new_order_is_placed_without_reading_the_venues_record_of_its_client_id() {
    // The venue's store holds a record under the new order's id that is not its order: read, it
    // would refuse the order as a reuse of the id.
    let storage = Arc::new(MemoryStorage::default());
    let foreign = r#"{"not":"an order of this venue"}"#;
    storage
        .write(
            "paper",
            "alice",
            &[("order/n1".into(), Some(foreign.into()))],
        )
        .unwrap();
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache");
    let runtime = PluginRuntime::new(Some(&cache), Limits::default())
        .unwrap()
        .with_storage(storage.clone());
    let registry = Registry::new(Arc::new(runtime), None, None);
    for builtin in BUILTINS {
        registry
            .install_builtin(builtin.manifest, builtin.wasm)
            .unwrap();
    }
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    assert_eq!(
        paper.plugin.manifest.order_key.as_deref(),
        Some("order/{client_order_id}")
    );
    let runtime = registry.runtime();
    let alice = account_of("alice");
    let order = market_order(OrderSide::Buy, "n1", "0.5");

    let (answer, held) = runtime.broker_place_new_order(&paper, &alice, &order);
    let placed = answer.unwrap().unwrap();
    assert_eq!(
        placed.status,
        OrderStatus::Filled,
        "the record was not read"
    );
    let held = held.expect("the paper venue keeps a store");
    assert!(
        held.changes().iter().any(|(key, _)| key == "order/n1"),
        "the venue recorded the order"
    );
    // Written with the booking of the answer (here: in memory).
    held.written();

    // Placed again through the venue's own path, the id is looked up: the same order.
    let again = runtime
        .broker_place_order(&paper, &alice, &order)
        .unwrap()
        .unwrap();
    assert_eq!(again, placed);
}

#[tokio::test]
async fn paper_orders_fill_in_parts_over_time() {
    let registry = registry();
    registry
        .configure(
            "paper",
            BTreeMap::from([
                ("fill_parts".to_string(), "3".to_string()),
                ("fill_delay_ms".to_string(), "150".to_string()),
            ]),
        )
        .await
        .unwrap();
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    let runtime = registry.runtime();
    let carol = account_of("carol");
    let placed = runtime
        .broker_place_order(&paper, &carol, &market_order(OrderSide::Buy, "p1", "0.3"))
        .unwrap()
        .unwrap();
    assert_eq!(placed.status, OrderStatus::PartiallyFilled);
    assert_eq!(placed.fills.len(), 1);
    let query = OrderQuery {
        symbol: "ETH-USD".into(),
        client_order_id: Some("p1".into()),
        order_id: None,
    };
    std::thread::sleep(Duration::from_millis(400));
    let later = runtime
        .broker_get_order(&paper, &carol, &query)
        .unwrap()
        .unwrap();
    assert_eq!(later.status, OrderStatus::Filled);
    assert_eq!(later.fills.len(), 3);
    let filled: f64 = later.fills.iter().map(|f| number(&f.quantity)).sum();
    assert!((filled - 0.3).abs() < 1e-12);
    assert_eq!(
        later.fills[0], placed.fills[0],
        "an execution keeps its id and figures"
    );
    let held = runtime.broker_positions(&paper, &carol).unwrap().unwrap();
    assert_eq!(
        (held[0].symbol.as_str(), held[0].quantity.as_str()),
        ("ETH-USD", "0.3")
    );
}

#[test]
fn brokers_of_the_previous_interface_still_trade_through_the_adapter() {
    let registry = registry();
    load_guest(&registry, "guest-legacy-broker").unwrap();
    load_guest(&registry, "guest-legacy-strategy").unwrap();
    let runtime = registry.runtime();
    let legacy = registry
        .active(PluginKind::Broker, "guest-legacy-broker")
        .unwrap();
    assert_eq!(legacy.plugin.prepared.interface_version(), "0.1.0");
    let report = runtime
        .broker_place_order(
            &legacy,
            &account_of("dave"),
            &market_order(OrderSide::Buy, "l1", "0.25"),
        )
        .unwrap()
        .unwrap();
    assert_eq!(report.status, OrderStatus::Filled);
    assert_eq!(report.filled_quantity, "0.25");
    assert_eq!(report.fills.len(), 1);
    assert!(number(&report.fills[0].price) > 0.0);
    assert!(matches!(
        runtime
            .broker_get_order(
                &legacy,
                &account_of("dave"),
                &OrderQuery {
                    symbol: "ETH-USD".into(),
                    client_order_id: Some("l1".into()),
                    order_id: None
                }
            )
            .unwrap(),
        Err(BrokerError::Unsupported(_))
    ));
    let candles = runtime
        .broker_candles(&legacy, "BTC-USD", "1m", 30, NOW)
        .unwrap()
        .unwrap();
    assert_eq!(candles.len(), 30);
    // A 0.1.0 strategy evaluates the current context.
    let ctx = scan(market(&registry, &["BTC-USD", "ETH-USD"], "1m", 50));
    let evaluation = evaluate(&registry, "guest-legacy-strategy", &ctx).unwrap();
    assert_eq!(evaluation.signals.len(), 2);
    assert!(
        evaluation
            .signals
            .iter()
            .all(|s| s.action == SignalAction::OpenLong)
    );
}

#[test]
fn strategies_evaluate_real_market_data() {
    let registry = registry();
    for (name, interval) in [("ema-cross", "1m"), ("apex", "5m")] {
        let ctx = scan(market(
            &registry,
            &["BTC-USD", "ETH-USD", "SOL-USD"],
            interval,
            200,
        ));
        let evaluation = evaluate(&registry, name, &ctx).unwrap();
        for signal in &evaluation.signals {
            assert!(["BTC-USD", "ETH-USD", "SOL-USD"].contains(&signal.symbol.as_str()));
            if matches!(
                signal.action,
                SignalAction::OpenLong | SignalAction::OpenShort
            ) {
                assert!(
                    signal.size_usd > 0.0 && signal.size_usd <= 1_000.0,
                    "{name}: {signal:?}"
                );
                assert!(
                    signal.stop_loss.is_some(),
                    "{name} entries carry a stop: {signal:?}"
                );
            }
        }
        // The state blob round-trips: the same scan with the returned state does not repeat entries.
        let again = evaluate(
            &registry,
            name,
            &ScanContext {
                state: evaluation.state.clone(),
                ..ctx.clone()
            },
        )
        .unwrap();
        assert!(again.state.len() <= 64 * 1024);
    }
    // Over a day of one-minute scans the crossover strategy does trade.
    let paper = registry.active(PluginKind::Broker, "paper").unwrap();
    let mut state = Vec::new();
    let mut entries = 0;
    for step in 0..240 {
        let now = NOW + step * 60_000;
        let candles = registry
            .runtime()
            .broker_candles(&paper, "BTC-USD", "1m", 100, now)
            .unwrap()
            .unwrap();
        let ctx = ScanContext {
            scan_id: format!("scan-{step}"),
            now_ms: now,
            market: vec![Series {
                symbol: "BTC-USD".into(),
                interval: "1m".into(),
                candles,
            }],
            positions: vec![],
            account: account(),
            state: state.clone(),
        };
        let evaluation = evaluate(&registry, "ema-cross", &ctx).unwrap();
        entries += evaluation
            .signals
            .iter()
            .filter(|s| matches!(s.action, SignalAction::OpenLong | SignalAction::OpenShort))
            .count();
        state = evaluation.state;
    }
    assert!(entries > 0, "no crossover in four hours of one-minute data");
}

fn thresholds() -> Vec<Threshold> {
    Vec::new()
}

fn risk_context(positions: usize) -> RiskContext {
    RiskContext {
        account: account(),
        positions: (0..positions)
            .map(|i| tradehost::plugins::bindings::types::Position {
                position_id: format!("p{i}"),
                symbol: format!("S{i}-USD"),
                side: Side::Long,
                quantity: 1.0,
                entry_price: 100.0,
                current_price: 100.0,
                stop_loss: None,
                take_profit: None,
                opened_at_ms: NOW,
            })
            .collect(),
        daily_pnl: 0.0,
        trades_today: 0,
        thresholds: thresholds(),
    }
}

fn order(size_usd: f64) -> ProposedOrder {
    ProposedOrder {
        symbol: "BTC-USD".into(),
        side: Side::Long,
        size_usd,
        price: 60_000.0,
        stop_loss: Some(59_000.0),
    }
}

#[test]
fn risk_guards_check_orders_and_raise_alarms() {
    let registry = registry();
    let rules = registry
        .active(PluginKind::RiskRule, "risk-guards")
        .unwrap();
    let runtime = registry.runtime();
    assert_eq!(
        runtime
            .check_order(&rules, &order(500.0), &risk_context(0))
            .unwrap(),
        Verdict::Allow
    );
    // Above 10 % of equity: resized to it.
    assert_eq!(
        runtime
            .check_order(&rules, &order(5_000.0), &risk_context(0))
            .unwrap(),
        Verdict::Resize(1_000.0)
    );
    let loss_day = RiskContext {
        daily_pnl: -600.0,
        ..risk_context(0)
    };
    assert!(matches!(
        runtime
            .check_order(&rules, &order(100.0), &loss_day)
            .unwrap(),
        Verdict::Deny(_)
    ));
    assert!(matches!(
        runtime
            .check_order(&rules, &order(100.0), &risk_context(5))
            .unwrap(),
        Verdict::Deny(_)
    ));

    let healthy = KpiSnapshot {
        timestamp_ms: NOW,
        account_value: 10_000.0,
        cash_balance: 10_000.0,
        total_return_pct: 2.0,
        daily_return_pct: 0.5,
        current_drawdown_pct: 1.0,
        max_drawdown_pct: 3.0,
        win_rate_pct: 60.0,
        profit_factor: 1.8,
        sharpe_ratio: 1.2,
        total_trades: 30,
        winning_trades: 18,
        losing_trades: 12,
        consecutive_losses: 1,
        active_positions: 2,
        exposure_pct: 20.0,
        largest_position_pct: 8.0,
    };
    assert!(
        runtime
            .evaluate_alarms(&rules, &healthy, &thresholds())
            .unwrap()
            .is_empty()
    );
    let crashing = KpiSnapshot {
        current_drawdown_pct: 22.5,
        account_value: 80.0,
        win_rate_pct: 40.0,
        ..healthy
    };
    let alarms = runtime
        .evaluate_alarms(&rules, &crashing, &thresholds())
        .unwrap();
    let drawdown = alarms
        .iter()
        .find(|a| a.alarm_type == "MAX_DRAWDOWN_EXCEEDED")
        .expect("a drawdown alarm");
    assert_eq!(drawdown.level, AlarmLevel::Emergency);
    assert_eq!(drawdown.threshold_value, 20.0);
    assert!(
        alarms
            .iter()
            .any(|a| a.alarm_type == "ACCOUNT_BALANCE_LOW" && a.level == AlarmLevel::Emergency)
    );
    assert!(
        alarms
            .iter()
            .any(|a| a.alarm_type == "LOW_WIN_RATE" && a.level == AlarmLevel::Critical)
    );
    // A user's own threshold overrides the default.
    let lenient = vec![
        Threshold {
            name: "max_drawdown_pct".into(),
            value: 30.0,
        },
        Threshold {
            name: "warning_drawdown_pct".into(),
            value: 25.0,
        },
    ];
    let alarms = runtime
        .evaluate_alarms(&rules, &crashing, &lenient)
        .unwrap();
    assert!(
        !alarms
            .iter()
            .any(|a| a.alarm_type == "MAX_DRAWDOWN_EXCEEDED")
    );
}

/// A healthy call still works and is not slowed down by what a bad guest did.
fn healthy_call_works(registry: &Registry) {
    let started = Instant::now();
    let ctx = scan(market(registry, &["BTC-USD"], "1m", 50));
    evaluate(registry, "ema-cross", &ctx).expect("a healthy plugin is unaffected");
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "healthy call took {:?}",
        started.elapsed()
    );
}

#[test]
fn an_infinite_loop_hits_the_deadline() {
    // Fuel high enough that only the clock can stop the loop.
    let registry = registry_with(Limits {
        fuel: u64::MAX / 4,
        deadline: Duration::from_millis(500),
        ..Limits::default()
    });
    load_guest(&registry, "guest-spin").unwrap();
    let ctx = scan(market(&registry, &["BTC-USD"], "1m", 10));
    // Meanwhile, on another thread, healthy calls keep working.
    let stop = Arc::new(AtomicBool::new(false));
    let healthy = std::thread::scope(|scope| {
        let worker_stop = stop.clone();
        let registry = &registry;
        let worker = scope.spawn(move || {
            let mut calls = 0;
            while !worker_stop.load(Ordering::Relaxed) {
                healthy_call_works(registry);
                calls += 1;
            }
            calls
        });
        let started = Instant::now();
        let err = evaluate(registry, "guest-spin", &ctx).unwrap_err();
        let elapsed = started.elapsed();
        stop.store(true, Ordering::Relaxed);
        assert!(
            matches!(err, PluginError::Deadline { limit_ms: 500, .. }),
            "{err:?}"
        );
        assert!(
            elapsed >= Duration::from_millis(450) && elapsed < Duration::from_millis(1_500),
            "stopped after {elapsed:?}"
        );
        worker.join().unwrap()
    });
    assert!(healthy > 0);
    healthy_call_works(&registry);
}

#[test]
fn a_call_waits_for_an_instance_slot_instead_of_failing() {
    // Two slots, both held by loops until their deadline.
    let registry = registry_with(Limits {
        fuel: u64::MAX / 4,
        deadline: Duration::from_millis(400),
        instances: 2,
        ..Limits::default()
    });
    load_guest(&registry, "guest-spin").unwrap();
    let spin = scan(market(&registry, &["BTC-USD"], "1m", 10));
    let ctx = scan(market(&registry, &["BTC-USD"], "1m", 50));
    std::thread::scope(|scope| {
        let spinners: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| evaluate(&registry, "guest-spin", &spin)))
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        let started = Instant::now();
        let evaluation = evaluate(&registry, "ema-cross", &ctx);
        let waited = started.elapsed();
        assert!(
            evaluation.is_ok(),
            "a call with every slot taken: {evaluation:?}"
        );
        assert!(
            waited >= Duration::from_millis(200),
            "the call ran after {waited:?}, before a slot was free"
        );
        for spinner in spinners {
            let err = spinner.join().unwrap().unwrap_err();
            assert!(matches!(err, PluginError::Deadline { .. }), "{err:?}");
        }
    });
}

#[test]
fn an_instruction_budget_stops_a_loop_before_the_clock_does() {
    let registry = registry_with(Limits {
        fuel: 50_000_000,
        deadline: Duration::from_secs(10),
        ..Limits::default()
    });
    load_guest(&registry, "guest-spin").unwrap();
    let started = Instant::now();
    let err = evaluate(&registry, "guest-spin", &scan(vec![])).unwrap_err();
    assert!(
        matches!(err, PluginError::InstructionBudget { .. }),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn unbounded_allocation_hits_the_memory_limit() {
    let registry = registry_with(Limits {
        memory_bytes: 32 << 20,
        deadline: Duration::from_secs(5),
        ..Limits::default()
    });
    load_guest(&registry, "guest-alloc").unwrap();
    let err = evaluate(&registry, "guest-alloc", &scan(vec![])).unwrap_err();
    assert!(
        matches!(err, PluginError::MemoryLimit { limit_mib: 32, .. }),
        "{err:?}"
    );
    healthy_call_works(&registry);
}

#[test]
fn traps_and_panics_are_contained() {
    let registry = registry();
    for guest in ["guest-trap", "guest-panic"] {
        load_guest(&registry, guest).unwrap();
        let err = evaluate(&registry, guest, &scan(vec![])).unwrap_err();
        assert!(matches!(err, PluginError::Trap { .. }), "{guest}: {err:?}");
        healthy_call_works(&registry);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_answers_break_the_contract() {
    let registry = registry();
    load_guest(&registry, "guest-bad-output").unwrap();
    let ctx = scan(market(&registry, &["BTC-USD"], "1m", 10));
    assert!(
        evaluate(&registry, "guest-bad-output", &ctx).is_ok(),
        "the default mode is well-behaved"
    );
    for mode in ["nan", "negative", "unknown-symbol", "flood", "huge-state"] {
        registry
            .configure(
                "guest-bad-output",
                BTreeMap::from([("mode".to_string(), mode.to_string())]),
            )
            .await
            .unwrap();
        let started = Instant::now();
        let err = evaluate(&registry, "guest-bad-output", &ctx).unwrap_err();
        assert!(
            matches!(err, PluginError::Contract { .. }),
            "{mode}: {err:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{mode} took {:?}",
            started.elapsed()
        );
    }
    healthy_call_works(&registry);
}

#[test]
fn a_component_that_lies_about_itself_or_imports_too_much_is_refused() {
    let registry = registry();
    let err = load_guest(&registry, "guest-forbidden-import").unwrap_err();
    assert!(
        matches!(&err, PluginError::Load(msg) if msg.contains("strategy world")),
        "{err:?}"
    );
    // The manifest says one thing, describe another.
    let mut manifest = manifest("testing/guest-bad-output");
    manifest.name = "someone-else".into();
    let err = registry
        .install_local(&artifact("guest-bad-output"), &manifest)
        .unwrap_err();
    assert!(
        matches!(&err, PluginError::Load(msg) if msg.contains("describes itself")),
        "{err:?}"
    );
    // A strategy offered as a broker does not fit the broker world.
    let mut as_broker = Manifest {
        kind: PluginKind::Broker,
        independent_symbols: false,
        ..self::manifest("strategy-ema-cross")
    };
    as_broker.name = "ema-broker".into();
    assert!(matches!(
        registry.install_local(&artifact("strategy-ema-cross"), &as_broker),
        Err(PluginError::Load(_))
    ));
    // Not a component at all.
    assert!(matches!(
        registry.install_local(b"\0asm garbage", &manifest),
        Err(PluginError::Load(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_swap_under_a_stream_of_calls_fails_none_and_rolls_back() {
    let registry = Arc::new(registry());
    let stop = Arc::new(AtomicBool::new(false));
    let (calls, failures, denials) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let mut workers = Vec::new();
    for _ in 0..2 {
        let (registry, stop, calls, failures, denials) = (
            registry.clone(),
            stop.clone(),
            calls.clone(),
            failures.clone(),
            denials.clone(),
        );
        workers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let outcome = registry
                    .active(PluginKind::RiskRule, "risk-guards")
                    .and_then(|rules| {
                        registry
                            .runtime()
                            .check_order(&rules, &order(500.0), &risk_context(0))
                    });
                calls.fetch_add(1, Ordering::Relaxed);
                match outcome {
                    Ok(Verdict::Deny(_)) => {
                        denials.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(_) => {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let strict = manifest("testing/risk-guards-strict");
    registry
        .install_local(&artifact("risk-guards-strict"), &strict)
        .unwrap();
    assert_eq!(
        registry
            .active(PluginKind::RiskRule, "risk-guards")
            .unwrap()
            .plugin
            .manifest
            .version,
        "0.1.0",
        "upload alone changes nothing"
    );
    registry.activate("risk-guards", "0.2.0").await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let denied_after_swap = denials.load(Ordering::Relaxed);
    registry.rollback("risk-guards").await.unwrap();
    let after_rollback = calls.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(
        failures.load(Ordering::Relaxed),
        0,
        "no call failed across the swap"
    );
    assert!(
        denied_after_swap > 0,
        "the strict version answered once active"
    );
    assert!(
        calls.load(Ordering::Relaxed) > after_rollback,
        "calls went on after the rollback"
    );
    let rules = registry
        .active(PluginKind::RiskRule, "risk-guards")
        .unwrap();
    assert_eq!(rules.plugin.manifest.version, "0.1.0");
    assert_eq!(
        registry
            .runtime()
            .check_order(&rules, &order(500.0), &risk_context(0))
            .unwrap(),
        Verdict::Allow
    );
    assert!(
        registry.rollback("risk-guards").await.is_ok(),
        "rollback toggles back to the other version"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_reach_only_the_hosts_their_manifest_allows() {
    // A local HTTP server standing in for an exchange.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(AtomicU64::new(0));
    let counter = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            use std::io::{Read, Write};
            let mut stream = stream;
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            counter.fetch_add(1, Ordering::Relaxed);
            let _ = stream.write_all(
                b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });

    let mut manifest = manifest("testing/guest-http-broker");
    manifest.allowed_hosts = vec!["127.0.0.1".into()];
    // A manifest naming a loopback host is refused unless the operator allows the private
    // network (the stand-in exchange here is on loopback).
    let refused = registry()
        .install_local(&artifact("guest-http-broker"), &manifest)
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("loopback") && refused.contains("TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK"),
        "{refused}"
    );
    let registry = registry_allowing_private_network();
    registry
        .install_local(&artifact("guest-http-broker"), &manifest)
        .unwrap();
    let check = |url: String| {
        let registry = &registry;
        async move {
            registry
                .configure(
                    "guest-http-broker",
                    BTreeMap::from([("url".to_string(), url)]),
                )
                .await
                .unwrap();
            let broker = registry
                .active(PluginKind::Broker, "guest-http-broker")
                .unwrap();
            registry
                .runtime()
                .broker_validate(&broker, &creds())
                .unwrap()
        }
    };

    let allowed = check(format!("http://127.0.0.1:{port}/v1/account"))
        .await
        .unwrap();
    assert_eq!(allowed.permissions, vec!["status:204"]);
    assert_eq!(served.load(Ordering::Relaxed), 1);
    for url in [
        "https://example.com/",
        "http://127.0.0.1@example.com/",
        "http://localhost:9/",
        "file:///etc/passwd",
    ] {
        let outcome = check(url.to_string()).await;
        assert!(outcome.is_err(), "{url} must be refused: {outcome:?}");
    }
    let forbidden = check("https://example.com/".into()).await.unwrap_err();
    assert!(
        matches!(&forbidden, BrokerError::Auth(msg) if msg.contains("forbidden")),
        "{forbidden:?}"
    );
    assert_eq!(
        served.load(Ordering::Relaxed),
        1,
        "refused requests never left the host"
    );
}
