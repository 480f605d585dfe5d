use super::*;
use std::collections::HashMap;

use tradehost_sdk::indicators::ema_series;

const START_MS: i64 = 1_709_251_200_000;
const MINUTE_MS: i64 = 60_000;

fn candles(closes: &[f64]) -> Vec<Candle> {
    closes
        .iter()
        .enumerate()
        .map(|(i, &close)| {
            let open = if i == 0 { close } else { closes[i - 1] };
            Candle {
                timestamp_ms: START_MS + i as i64 * MINUTE_MS,
                open,
                high: open.max(close) + 0.1,
                low: open.min(close) - 0.1,
                close,
                volume: 10.0,
            }
        })
        .collect()
}

fn series(symbol: &str, interval: &str, closes: &[f64]) -> Series {
    Series {
        symbol: symbol.into(),
        interval: interval.into(),
        candles: candles(closes),
    }
}

fn position(symbol: &str, side: Side) -> Position {
    Position {
        position_id: format!("{symbol}-1"),
        symbol: symbol.into(),
        side,
        quantity: 1.0,
        entry_price: 100.0,
        current_price: 100.0,
        stop_loss: None,
        take_profit: None,
        opened_at_ms: START_MS,
    }
}

fn context(market: Vec<Series>, positions: Vec<Position>, state: Vec<u8>) -> ScanContext {
    ScanContext {
        scan_id: "scan-1".into(),
        now_ms: START_MS,
        market,
        positions,
        account: Account {
            cash: 10_000.0,
            equity: 10_000.0,
            buying_power: 10_000.0,
            currency: "USD".into(),
        },
        state,
    }
}

/// Falls for 40 candles, then rises: the fast EMA ends up crossing above the slow one.
fn falling_then_rising() -> Vec<f64> {
    (0..40)
        .map(|i| 120.0 - 0.5 * i as f64)
        .chain((1..=30).map(|i| 100.5 + 1.5 * i as f64))
        .collect()
}

/// Rises for 40 candles, then falls: the fast EMA ends up crossing below the slow one.
fn rising_then_falling() -> Vec<f64> {
    (0..40)
        .map(|i| 80.0 + 0.5 * i as f64)
        .chain((1..=30).map(|i| 99.5 - 1.5 * i as f64))
        .collect()
}

/// The index of the first candle on which the default EMAs have crossed in `direction`.
fn first_cross(closes: &[f64], direction: Direction) -> usize {
    let fast = ema_series(closes, 9);
    let slow = ema_series(closes, 21);
    let gaps: Vec<f64> = fast[12..].iter().zip(&slow).map(|(f, s)| f - s).collect();
    let j = (1..gaps.len())
        .find(|&j| match direction {
            Direction::Up => gaps[j - 1] <= 0.0 && gaps[j] > 0.0,
            Direction::Down => gaps[j - 1] >= 0.0 && gaps[j] < 0.0,
        })
        .expect("the test series crosses");
    j + 20
}

fn run(ctx: &ScanContext) -> Evaluation {
    evaluate(ctx, &Config::default()).unwrap()
}

#[test]
fn crossing_up_while_flat_opens_a_long() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let ctx = context(
        vec![series("BTC-USD", "1m", &closes[..=cross])],
        vec![],
        vec![],
    );
    let evaluation = run(&ctx);
    assert_eq!(evaluation.signals.len(), 1);
    let signal = &evaluation.signals[0];
    let price = closes[cross];
    assert_eq!(signal.symbol, "BTC-USD");
    assert_eq!(signal.action, SignalAction::OpenLong);
    assert_eq!(signal.size_usd, 200.0);
    assert_eq!(signal.stop_loss, Some(price * (1.0 - 0.015)));
    assert_eq!(signal.take_profit, vec![price * (1.0 + 0.03)]);
    assert_eq!(signal.confidence, 1.0);
    assert!(
        signal.reason.starts_with("EMA9 crossed above EMA21"),
        "{}",
        signal.reason
    );
    let cross_ms = START_MS + cross as i64 * MINUTE_MS;
    assert_eq!(
        evaluation.state,
        format!("BTC-USD\t{cross_ms} up done\n").into_bytes()
    );
}

#[test]
fn no_crossover_means_no_signal() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let ctx = context(
        vec![series("BTC-USD", "1m", &closes[..cross])],
        vec![],
        vec![],
    );
    let evaluation = run(&ctx);
    assert!(evaluation.signals.is_empty());
    assert!(evaluation.state.is_empty());
}

#[test]
fn a_retried_scan_or_a_later_candle_does_not_signal_twice() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let market = vec![series("BTC-USD", "1m", &closes[..=cross])];
    let first = run(&context(market.clone(), vec![], vec![]));
    assert_eq!(first.signals.len(), 1);

    let retried = run(&context(market, vec![], first.state.clone()));
    assert!(retried.signals.is_empty());
    assert_eq!(retried.state, first.state);

    let later = vec![series("BTC-USD", "1m", &closes[..=cross + 1])];
    let later = run(&context(later, vec![], first.state.clone()));
    assert!(later.signals.is_empty());
    assert_eq!(later.state, first.state);
}

#[test]
fn memos_of_symbols_left_out_of_a_scan_are_dropped_and_the_rest_kept() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let both = vec![
        series("BTC-USD", "1m", &closes[..=cross]),
        series("ETH-USD", "1m", &closes[..=cross]),
    ];
    let first = run(&context(both, vec![], vec![]));
    assert_eq!(first.signals.len(), 2);
    let memos = StateMap::decode(&first.state);
    assert_eq!(memos.len(), 2);

    // No crossover changes, but ETH-USD is no longer scanned: only BTC-USD's memo stays.
    let one = vec![series("BTC-USD", "1m", &closes[..=cross + 1])];
    let later = run(&context(one, vec![], first.state.clone()));
    assert!(later.signals.is_empty());
    let kept = StateMap::decode(&later.state);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept.get("BTC-USD"), memos.get("BTC-USD"));
    assert!(later.state.len() < first.state.len());

    // Too few candles for ETH-USD's EMAs: what was known of it is kept as it was.
    let short = vec![
        series("BTC-USD", "1m", &closes[..=cross + 1]),
        series("ETH-USD", "1m", &closes[..5]),
    ];
    let again = run(&context(short, vec![], first.state.clone()));
    assert!(again.signals.is_empty());
    assert_eq!(again.state, first.state);

    // The instance remembers the state it was last given decoded; another state is read anew.
    let both = vec![
        series("BTC-USD", "1m", &closes[..=cross]),
        series("ETH-USD", "1m", &closes[..=cross]),
    ];
    let fresh = run(&context(both.clone(), vec![], vec![]));
    assert_eq!(fresh, first);
    let remembered = run(&context(both, vec![], later.state.clone()));
    assert_eq!(remembered.signals.len(), 1);
    assert_eq!(remembered.signals[0].symbol, "ETH-USD");
}

#[test]
fn a_crossover_counts_for_three_candles() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let recent = context(
        vec![series("BTC-USD", "1m", &closes[..=cross + 2])],
        vec![],
        vec![],
    );
    assert_eq!(run(&recent).signals.len(), 1);
    let stale = context(
        vec![series("BTC-USD", "1m", &closes[..=cross + 3])],
        vec![],
        vec![],
    );
    assert!(run(&stale).signals.is_empty());
}

#[test]
fn crossing_up_while_short_closes_first_then_enters() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let short = vec![position("BTC-USD", Side::Short)];

    let closing = run(&context(
        vec![series("BTC-USD", "1m", &closes[..=cross])],
        short.clone(),
        vec![],
    ));
    assert_eq!(closing.signals.len(), 1);
    assert_eq!(closing.signals[0].action, SignalAction::Close);
    assert!(closing.signals[0].reason.ends_with("close the short"));

    // The close has not been carried out yet: wait.
    let waiting = run(&context(
        vec![series("BTC-USD", "1m", &closes[..=cross + 1])],
        short,
        closing.state.clone(),
    ));
    assert!(waiting.signals.is_empty());
    assert_eq!(waiting.state, closing.state);

    let entering = run(&context(
        vec![series("BTC-USD", "1m", &closes[..=cross + 2])],
        vec![],
        waiting.state,
    ));
    assert_eq!(entering.signals.len(), 1);
    assert_eq!(entering.signals[0].action, SignalAction::OpenLong);

    let holding = run(&context(
        vec![series("BTC-USD", "1m", &closes[..=cross + 3])],
        vec![position("BTC-USD", Side::Long)],
        entering.state,
    ));
    assert!(holding.signals.is_empty());
}

#[test]
fn holding_the_crossed_side_already_changes_nothing() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let ctx = context(
        vec![series("BTC-USD", "1m", &closes[..=cross])],
        vec![position("BTC-USD", Side::Long)],
        vec![],
    );
    assert!(run(&ctx).signals.is_empty());
}

#[test]
fn crossing_down_opens_a_short_when_allowed() {
    let closes = rising_then_falling();
    let cross = first_cross(&closes, Direction::Down);
    let ctx = context(
        vec![series("ETH-USD", "1m", &closes[..=cross])],
        vec![],
        vec![],
    );
    let evaluation = run(&ctx);
    assert_eq!(evaluation.signals.len(), 1);
    let signal = &evaluation.signals[0];
    let price = closes[cross];
    assert_eq!(signal.action, SignalAction::OpenShort);
    assert_eq!(signal.stop_loss, Some(price * (1.0 + 0.015)));
    assert_eq!(signal.take_profit, vec![price * (1.0 - 0.03)]);
    assert!(signal.reason.contains("crossed below"));
}

#[test]
fn crossing_down_without_shorts_only_closes_longs() {
    let config = Config {
        allow_short: false,
        ..Config::default()
    };
    let closes = rising_then_falling();
    let cross = first_cross(&closes, Direction::Down);
    let market = |end: usize| vec![series("ETH-USD", "1m", &closes[..=end])];

    let flat = evaluate(&context(market(cross), vec![], vec![]), &config).unwrap();
    assert!(flat.signals.is_empty());

    let long = vec![position("ETH-USD", Side::Long)];
    let closing = evaluate(&context(market(cross), long, vec![]), &config).unwrap();
    assert_eq!(closing.signals.len(), 1);
    assert_eq!(closing.signals[0].action, SignalAction::Close);

    let after = evaluate(&context(market(cross + 1), vec![], closing.state), &config).unwrap();
    assert!(after.signals.is_empty());
}

#[test]
fn one_signal_per_symbol_from_the_configured_interval_only() {
    let rising = falling_then_rising();
    let up = first_cross(&rising, Direction::Up);
    let falling = rising_then_falling();
    let down = first_cross(&falling, Direction::Down);
    let ctx = context(
        vec![
            series("BTC-USD", "1m", &rising[..=up]),
            series("BTC-USD", "1m", &rising[..=up]),
            series("BTC-USD", "5m", &falling[..=down]),
            series("ETH-USD", "5m", &rising[..=up]),
            series("SOL-USD", "1m", &falling[..=down]),
        ],
        vec![],
        vec![],
    );
    let evaluation = run(&ctx);
    let summary: Vec<(&str, SignalAction)> = evaluation
        .signals
        .iter()
        .map(|s| (s.symbol.as_str(), s.action))
        .collect();
    assert_eq!(
        summary,
        [
            ("BTC-USD", SignalAction::OpenLong),
            ("SOL-USD", SignalAction::OpenShort)
        ]
    );
}

#[test]
fn short_series_and_empty_accounts_give_no_entries() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let short = context(vec![series("BTC-USD", "1m", &closes[..21])], vec![], vec![]);
    assert!(run(&short).signals.is_empty());
    assert!(run(&context(vec![], vec![], vec![])).signals.is_empty());

    let mut broke = context(
        vec![series("BTC-USD", "1m", &closes[..=cross])],
        vec![],
        vec![],
    );
    broke.account.equity = 0.0;
    assert!(run(&broke).signals.is_empty());
}

#[test]
fn unreadable_state_is_ignored() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let garbage = b"BTC-USD\tnot a memo\n\xff\xfe".to_vec();
    let ctx = context(
        vec![series("BTC-USD", "1m", &closes[..=cross])],
        vec![],
        garbage,
    );
    assert_eq!(run(&ctx).signals.len(), 1);
}

#[test]
fn state_stays_within_the_limit() {
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let market: Vec<Series> = (0..3000)
        .map(|i| series(&format!("S{i:04}-USD"), "1m", &closes[..=cross]))
        .collect();
    let evaluation = run(&context(market, vec![], vec![]));
    assert_eq!(evaluation.signals.len(), 3000);
    assert!(evaluation.state.len() <= MAX_STATE_BYTES);
    assert!(evaluation.state.len() > MAX_STATE_BYTES - 100);
}

fn reader(pairs: &[(&str, &str)]) -> ConfigReader<impl Fn(&str) -> Option<String>> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ConfigReader::new(move |key: &str| map.get(key).cloned())
}

#[test]
fn configuration_is_read_and_checked() {
    assert_eq!(Config::read(&reader(&[])), Ok(Config::default()));
    let config = Config::read(&reader(&[
        ("interval", "5m"),
        ("fast_period", "5"),
        ("slow_period", "13"),
        ("allow_short", "false"),
        ("stop_loss_pct", "0"),
    ]))
    .unwrap();
    assert_eq!(config.interval, "5m");
    assert_eq!((config.fast_period, config.slow_period), (5, 13));
    assert!(!config.allow_short);
    assert_eq!(config.stop_loss_pct, 0.0);

    for bad in [
        [("fast_period", "21"), ("slow_period", "9")],
        [("fast_period", "x"), ("slow_period", "21")],
        [("fast_period", "9"), ("size_pct", "-1")],
    ] {
        assert!(matches!(
            Config::read(&reader(&bad)),
            Err(PluginError::InvalidInput(_))
        ));
    }
}

#[test]
fn no_stop_or_target_when_configured_off() {
    let config = Config {
        stop_loss_pct: 0.0,
        take_profit_pct: 0.0,
        ..Config::default()
    };
    let closes = falling_then_rising();
    let cross = first_cross(&closes, Direction::Up);
    let ctx = context(
        vec![series("BTC-USD", "1m", &closes[..=cross])],
        vec![],
        vec![],
    );
    let evaluation = evaluate(&ctx, &config).unwrap();
    assert_eq!(evaluation.signals[0].stop_loss, None);
    assert!(evaluation.signals[0].take_profit.is_empty());
}

#[test]
fn describes_itself_as_in_the_manifest() {
    let info = describe();
    let manifest = include_str!("../plugin.toml");
    assert!(manifest.contains(&format!("name = \"{}\"", info.name)));
    assert!(manifest.contains(&format!("version = \"{}\"", info.version)));
    assert!(manifest.contains(&format!("display_name = \"{}\"", info.display_name)));
    assert!(manifest.contains("kind = \"strategy\""));
    for key in [
        "interval",
        "fast_period",
        "slow_period",
        "size_pct",
        "stop_loss_pct",
        "take_profit_pct",
        "allow_short",
    ] {
        assert!(manifest.contains(&format!("[config.{key}]")), "{key}");
    }
}

/// The crossover reading as first written: whole EMA series and every gap in vectors.
fn read_crossovers_by_series(candles: &[Candle], config: &Config) -> Option<Reading> {
    let closes: Vec<f64> = candles.iter().map(|c| c.close).collect();
    let fast = ema_series(&closes, config.fast_period);
    let slow = ema_series(&closes, config.slow_period);
    let len = fast.len().min(slow.len());
    if len < 2 {
        return None;
    }
    let offset = candles.len() - len;
    let gaps: Vec<f64> = fast[fast.len() - len..]
        .iter()
        .zip(&slow[slow.len() - len..])
        .map(|(f, s)| f - s)
        .collect();
    let earliest = len.saturating_sub(CROSS_LOOKBACK_CANDLES).max(1);
    let latest_cross = (earliest..len).rev().find_map(|j| {
        let direction = if gaps[j - 1] <= 0.0 && gaps[j] > 0.0 {
            Direction::Up
        } else if gaps[j - 1] >= 0.0 && gaps[j] < 0.0 {
            Direction::Down
        } else {
            return None;
        };
        Some((candles[offset + j].timestamp_ms, direction))
    });
    let last_gap = gaps[len - 1];
    let trend = if last_gap > 0.0 {
        Some(Direction::Up)
    } else if last_gap < 0.0 {
        Some(Direction::Down)
    } else {
        None
    };
    Some(Reading {
        latest_cross,
        trend,
        fast_ema: fast[fast.len() - 1],
        slow_ema: slow[slow.len() - 1],
        price: closes[closes.len() - 1],
    })
}

#[test]
fn the_reading_is_the_reading_of_whole_series() {
    let closes: Vec<f64> = (0..260)
        .map(|i| 100.0 + ((i * 7919) % 41) as f64 / 3.0 - (i % 13) as f64 * 0.7)
        .collect();
    let all = candles(&closes);
    let close_to = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
    let mut compared = 0;
    for (fast_period, slow_period) in [(9, 21), (2, 3), (5, 200), (12, 26)] {
        let config = Config {
            fast_period,
            slow_period,
            ..Config::default()
        };
        for end in 0..=all.len() {
            let window = &all[end.saturating_sub(200)..end];
            let context = format!("periods {fast_period}/{slow_period}, {end} candles");
            let (Some(reading), Some(expected)) = (
                read_crossovers(window, &config),
                read_crossovers_by_series(window, &config),
            ) else {
                assert_eq!(read_crossovers(window, &config), None, "{context}");
                assert_eq!(
                    read_crossovers_by_series(window, &config),
                    None,
                    "{context}"
                );
                continue;
            };
            // The EMAs jump several candles at a time: the same to rounding, and the same
            // crossovers and trend.
            assert!(close_to(reading.fast_ema, expected.fast_ema), "{context}");
            assert!(close_to(reading.slow_ema, expected.slow_ema), "{context}");
            assert_eq!(reading.price, expected.price, "{context}");
            assert_eq!(reading.latest_cross, expected.latest_cross, "{context}");
            assert_eq!(reading.trend, expected.trend, "{context}");
            compared += 1;
        }
    }
    assert!(compared > 700, "{compared}");
}

#[test]
fn a_flat_market_reads_no_gap_and_no_crossover() {
    for price in [0.1, 3.0, 101.37, 64_123.45] {
        let window = candles(&[price; 200]);
        let reading = read_crossovers(&window, &Config::default()).unwrap();
        let expected = read_crossovers_by_series(&window, &Config::default()).unwrap();
        assert_eq!(reading.latest_cross, None, "{price}");
        assert_eq!(reading.trend, expected.trend, "{price}");
    }
    // Where the seed's mean is exact, the EMAs stay at the price through every jump.
    let reading = read_crossovers(&candles(&[3.0; 200]), &Config::default()).unwrap();
    assert_eq!((reading.fast_ema, reading.slow_ema), (3.0, 3.0));
    assert_eq!(reading.trend, None);
}
