use super::*;
use std::collections::HashMap;

const START_MS: i64 = 1_709_251_200_000;
const FIVE_MINUTES_MS: i64 = 300_000;

fn candle(index: usize, open: f64, close: f64, volume: f64) -> Candle {
    Candle {
        timestamp_ms: START_MS + index as i64 * FIVE_MINUTES_MS,
        open,
        high: open.max(close) + 0.05,
        low: open.min(close) - 0.05,
        close,
        volume,
    }
}

/// A slow, choppy decline (down 0.5, up 0.3, …) ending in a bearish candle, then a bullish
/// engulfing candle on twice the usual volume. Worked out by hand, on the last candle:
/// close 104.30 is 0.44 % under the 20-candle VWAP (104.76), RSI(14) rises from 35.8 to 42.4,
/// the MACD histogram rises from −0.008 to +0.027: all five long conditions hold.
fn long_setup(last_volume: f64) -> Vec<Candle> {
    let mut candles = Vec::new();
    let mut close = 110.0;
    for i in 0..59 {
        let open = close;
        close += if i % 2 == 0 { -0.5 } else { 0.3 };
        candles.push(candle(i, open, close, 100.0));
    }
    let previous = candles[58];
    candles.push(candle(
        59,
        previous.close - 0.05,
        previous.open + 0.1,
        last_volume,
    ));
    candles
}

/// The long setup reflected around 100: every long condition becomes its short twin.
fn short_setup() -> Vec<Candle> {
    long_setup(200.0)
        .into_iter()
        .map(|c| Candle {
            open: 200.0 - c.open,
            high: 200.0 - c.low,
            low: 200.0 - c.high,
            close: 200.0 - c.close,
            ..c
        })
        .collect()
}

fn series(symbol: &str, candles: Vec<Candle>) -> Series {
    Series {
        symbol: symbol.into(),
        interval: "5m".into(),
        candles,
    }
}

fn account() -> Account {
    Account {
        cash: 10_000.0,
        equity: 10_000.0,
        buying_power: 10_000.0,
        currency: "USD".into(),
    }
}

fn position(symbol: &str, side: Side) -> Position {
    Position {
        position_id: "p-1".into(),
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
        account: account(),
        state,
    }
}

fn run(ctx: &ScanContext) -> Evaluation {
    evaluate(ctx, &Config::default()).unwrap()
}

fn assert_close(actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() < 1e-9,
        "expected {expected}, got {actual}"
    );
}

#[test]
fn the_long_setup_meets_all_five_conditions() {
    let readings = Readings::from_candles(&long_setup(200.0)).unwrap();
    let long = conditions_met(&readings, Side::Long);
    assert_eq!(
        long,
        [
            "price within 0.5% of VWAP",
            "RSI 42.4 rising",
            "bullish engulfing",
            "MACD histogram rising",
            "volume 200% of the 20-candle average",
        ]
    );
    // Only the shared value-zone and volume conditions count for the short side.
    assert_eq!(conditions_met(&readings, Side::Short).len(), 2);
}

#[test]
fn a_full_score_opens_a_long_with_atr_stop_and_stepped_targets() {
    let candles = long_setup(200.0);
    let price = candles[59].close;
    let stop_distance = 1.5 * tradehost_sdk::indicators::atr(&candles, 14).unwrap();
    let evaluation = run(&context(vec![series("BTC-USD", candles)], vec![], vec![]));
    assert_eq!(evaluation.signals.len(), 1);
    let signal = &evaluation.signals[0];
    assert_eq!(signal.action, SignalAction::OpenLong);
    assert_close(signal.size_usd, 500.0);
    assert_close(signal.confidence, 1.0);
    assert_close(signal.stop_loss.unwrap(), price - stop_distance);
    assert_eq!(signal.take_profit.len(), 3);
    for (target, step) in signal.take_profit.iter().zip([1.0, 2.0, 3.0]) {
        assert_close(*target, price + step * stop_distance);
    }
    assert!(
        signal
            .reason
            .starts_with("long score 5/5: price within 0.5% of VWAP, RSI 42.4 rising")
    );
}

#[test]
fn the_mirrored_setup_opens_a_short() {
    let candles = short_setup();
    let price = candles[59].close;
    let stop_distance = 1.5 * tradehost_sdk::indicators::atr(&candles, 14).unwrap();
    let evaluation = run(&context(vec![series("ETH-USD", candles)], vec![], vec![]));
    let signal = &evaluation.signals[0];
    assert_eq!(signal.action, SignalAction::OpenShort);
    assert_close(signal.size_usd, 500.0);
    assert_close(signal.stop_loss.unwrap(), price + stop_distance);
    assert_close(signal.take_profit[0], price - stop_distance);
    assert_close(signal.take_profit[2], price - 3.0 * stop_distance);
    assert!(signal.reason.contains("bearish engulfing"));
    assert!(signal.reason.contains("MACD histogram falling"));
}

#[test]
fn size_and_confidence_follow_the_score() {
    // Half the usual volume drops the volume condition: score 4.
    let evaluation = run(&context(
        vec![series("BTC-USD", long_setup(50.0))],
        vec![],
        vec![],
    ));
    let signal = &evaluation.signals[0];
    assert!(signal.reason.starts_with("long score 4/5"));
    assert_close(signal.size_usd, 400.0);
    assert_close(signal.confidence, 0.8);
    assert_eq!(size_pct(3), 3.0);
    assert_eq!(size_pct(4), 4.0);
    assert_eq!(size_pct(5), 5.0);
}

#[test]
fn an_open_position_blocks_entries_and_is_closed_by_the_opposite_side() {
    let same_side = context(
        vec![series("BTC-USD", long_setup(200.0))],
        vec![position("BTC-USD", Side::Long)],
        vec![],
    );
    assert!(run(&same_side).signals.is_empty());

    let opposite = context(
        vec![series("BTC-USD", long_setup(200.0))],
        vec![position("BTC-USD", Side::Short)],
        vec![],
    );
    let signal = &run(&opposite).signals[0];
    assert_eq!(signal.action, SignalAction::Close);
    assert!(signal.reason.starts_with("close the short: long score 5/5"));
    assert_close(signal.confidence, 1.0);

    let long_against_short_setup = context(
        vec![series("BTC-USD", short_setup())],
        vec![position("BTC-USD", Side::Long)],
        vec![],
    );
    assert_eq!(
        run(&long_against_short_setup).signals[0].action,
        SignalAction::Close
    );
}

#[test]
fn the_same_candle_never_signals_twice() {
    let market = vec![series("BTC-USD", long_setup(200.0))];
    let first = run(&context(market.clone(), vec![], vec![]));
    assert_eq!(first.signals.len(), 1);
    let last_ms = START_MS + 59 * FIVE_MINUTES_MS;
    assert_eq!(first.state, format!("BTC-USD\t{last_ms}\n").into_bytes());
    let retried = run(&context(market, vec![], first.state.clone()));
    assert!(retried.signals.is_empty());
    assert_eq!(retried.state, first.state);
}

#[test]
fn too_few_candles_or_other_intervals_are_ignored() {
    let candles = long_setup(200.0);
    let short = context(
        vec![series("BTC-USD", candles[60 - 34..].to_vec())],
        vec![],
        vec![],
    );
    assert!(run(&short).signals.is_empty());
    let hourly = Series {
        interval: "1h".into(),
        ..series("BTC-USD", candles.clone())
    };
    assert!(
        run(&context(vec![hourly], vec![], vec![]))
            .signals
            .is_empty()
    );
    let empty = series("BTC-USD", Vec::new());
    assert!(
        run(&context(vec![empty], vec![], vec![]))
            .signals
            .is_empty()
    );
    // Exactly enough candles is enough.
    let enough = context(
        vec![series("BTC-USD", candles[60 - 35..].to_vec())],
        vec![],
        vec![],
    );
    assert!(Readings::from_candles(&enough.market[0].candles).is_some());
}

/// Readings where nothing but what a test sets holds.
fn neutral_readings() -> Readings {
    let flat = Candle {
        timestamp_ms: START_MS,
        open: 100.0,
        high: 101.0,
        low: 99.0,
        close: 100.0,
        volume: 1.0,
    };
    Readings {
        price: 100.0,
        ema21: 110.0,
        vwap: None,
        rsi_previous: 50.0,
        rsi: 50.0,
        histogram_previous: 0.0,
        histogram: 0.0,
        previous_candle: flat,
        last_candle: flat,
        volume_ratio: Some(0.59),
        atr: 2.0,
    }
}

#[test]
fn condition_thresholds() {
    let score = |readings: &Readings, side| conditions_met(readings, side).len();
    let neutral = neutral_readings();
    assert_eq!(score(&neutral, Side::Long), 0);
    assert_eq!(score(&neutral, Side::Short), 0);

    let near = Readings {
        ema21: 100.5,
        ..neutral_readings()
    };
    assert_eq!(score(&near, Side::Long), 1);
    let not_near = Readings {
        ema21: 100.6,
        vwap: Some(99.4),
        ..neutral_readings()
    };
    assert_eq!(score(&not_near, Side::Long), 0);

    let rsi = |previous, now| Readings {
        rsi_previous: previous,
        rsi: now,
        ..neutral_readings()
    };
    assert_eq!(score(&rsi(30.0, 45.0), Side::Long), 1);
    assert_eq!(score(&rsi(30.0, 45.5), Side::Long), 0);
    assert_eq!(score(&rsi(40.0, 35.0), Side::Long), 0);
    assert_eq!(score(&rsi(70.0, 55.0), Side::Short), 1);
    assert_eq!(score(&rsi(80.0, 76.0), Side::Short), 0);

    let volume = Readings {
        volume_ratio: Some(0.6),
        ..neutral_readings()
    };
    assert_eq!(score(&volume, Side::Long), 1);
    assert_eq!(score(&volume, Side::Short), 1);
    let no_volume = Readings {
        volume_ratio: None,
        ..neutral_readings()
    };
    assert_eq!(score(&no_volume, Side::Long), 0);

    let histogram = Readings {
        histogram_previous: -0.1,
        histogram: 0.0,
        ..neutral_readings()
    };
    assert_eq!(
        conditions_met(&histogram, Side::Long),
        ["MACD histogram rising"]
    );
    assert_eq!(score(&histogram, Side::Short), 0);

    let hammer = Readings {
        last_candle: Candle {
            open: 100.0,
            close: 100.2,
            high: 100.25,
            low: 99.0,
            ..neutral_readings().last_candle
        },
        ..neutral_readings()
    };
    assert_eq!(conditions_met(&hammer, Side::Long), ["hammer"]);
}

#[test]
fn a_tie_stays_out_and_three_is_enough() {
    // Shared: value zone and volume. Long adds a rising histogram, short a falling RSI.
    let tie = Readings {
        ema21: 100.0,
        volume_ratio: Some(1.0),
        histogram_previous: -0.1,
        histogram: 0.0,
        rsi_previous: 70.0,
        rsi: 65.0,
        ..neutral_readings()
    };
    assert_eq!(decide_on_readings("X-USD", &tie, None, &account()), None);

    let three = Readings {
        rsi_previous: 50.0,
        rsi: 50.0,
        ..tie
    };
    let signal = decide_on_readings("X-USD", &three, None, &account()).unwrap();
    assert_eq!(signal.action, SignalAction::OpenLong);
    assert_close(signal.size_usd, 300.0);
    assert_close(signal.confidence, 0.6);
    assert_close(signal.stop_loss.unwrap(), 97.0);
    assert_eq!(signal.take_profit, [103.0, 106.0, 109.0]);

    // Without a usable ATR there is no stop to place, so no entry.
    let no_atr = Readings { atr: 0.0, ..three };
    assert_eq!(decide_on_readings("X-USD", &no_atr, None, &account()), None);
}

#[test]
fn configuration_and_manifest() {
    let map: HashMap<&str, &str> = [("interval", "1h")].into();
    let reader = ConfigReader::new(move |key: &str| map.get(key).map(|v| v.to_string()));
    assert_eq!(Config::read(&reader).unwrap().interval, "1h");
    let empty = ConfigReader::new(|_: &str| None);
    assert_eq!(Config::read(&empty).unwrap(), Config::default());

    let info = describe();
    let manifest = include_str!("../plugin.toml");
    assert!(manifest.contains(&format!("name = \"{}\"", info.name)));
    assert!(manifest.contains(&format!("version = \"{}\"", info.version)));
    assert!(manifest.contains(&format!("display_name = \"{}\"", info.display_name)));
    assert!(manifest.contains("kind = \"strategy\""));
    assert!(manifest.contains("[config.interval]"));
}

/// The readings as first written, from the SDK's series functions: the reference the one-pass
/// reading must match to the last bit.
fn readings_from_series(candles: &[Candle]) -> Option<Readings> {
    use tradehost_sdk::indicators::{atr, ema, macd_series, rsi_series};
    if candles.len() < MIN_CANDLES {
        return None;
    }
    let closes: Vec<f64> = candles.iter().map(|c| c.close).collect();
    let rsi = rsi_series(&closes, RSI_PERIOD);
    let (fast, slow, signal) = MACD_STANDARD;
    let macd = macd_series(&closes, fast, slow, signal);
    let last = candles.len() - 1;
    let average_volume = candles[last - VOLUME_WINDOW..last]
        .iter()
        .map(|c| c.volume)
        .sum::<f64>()
        / VOLUME_WINDOW as f64;
    Some(Readings {
        price: closes[last],
        ema21: ema(&closes, EMA_PERIOD)?,
        vwap: vwap(candles, VWAP_WINDOW),
        rsi_previous: rsi[rsi.len() - 2],
        rsi: rsi[rsi.len() - 1],
        histogram_previous: macd[macd.len() - 2].histogram,
        histogram: macd[macd.len() - 1].histogram,
        previous_candle: candles[last - 1],
        last_candle: candles[last],
        volume_ratio: (average_volume > 0.0).then(|| candles[last].volume / average_volume),
        atr: atr(candles, ATR_PERIOD)?,
    })
}

#[test]
fn one_pass_readings_equal_the_series_functions_to_the_last_bit() {
    // A random walk with flat stretches (no change, no volume) among the moves.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut price = 100.0;
    let walk: Vec<Candle> = (0..400)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let step = if i % 37 < 3 {
                0.0
            } else {
                ((state >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * price * 0.01
            };
            let open = price;
            price = (price + step).max(0.01);
            let volume = if i % 53 < 2 {
                0.0
            } else {
                (state % 1000) as f64
            };
            Candle {
                volume,
                ..candle(i, open, price, 0.0)
            }
        })
        .collect();
    let bits = |r: &Readings| {
        [
            r.price,
            r.ema21,
            r.vwap.unwrap_or(-1.0),
            r.rsi_previous,
            r.rsi,
            r.histogram_previous,
            r.histogram,
            r.volume_ratio.unwrap_or(-1.0),
            r.atr,
        ]
        .map(f64::to_bits)
    };
    let mut compared = 0;
    for end in MIN_CANDLES - 2..=walk.len() {
        let window = &walk[end.saturating_sub(200)..end];
        let (one_pass, reference) = (Readings::from_candles(window), readings_from_series(window));
        assert_eq!(one_pass.is_some(), reference.is_some(), "{end}");
        if let (Some(one_pass), Some(reference)) = (one_pass, reference) {
            assert_eq!(bits(&one_pass), bits(&reference), "window ending at {end}");
            assert_eq!(one_pass, reference);
            compared += 1;
        }
    }
    assert!(compared > 300, "{compared}");
}
