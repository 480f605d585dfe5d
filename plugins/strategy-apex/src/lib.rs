//! Apex: multi-confirmation entries.
//!
//! For each symbol's series at the configured interval, five conditions are scored for each
//! side on the last closed candle:
//!
//! 1. the close is within 0.5 % of EMA21 or of the 20-candle VWAP (a value zone);
//! 2. RSI(14) is in 25–45 and rising (long) / in 55–75 and falling (short);
//! 3. a bullish engulfing or hammer (long) / a bearish engulfing or shooting star (short);
//! 4. the MACD(12, 26, 9) histogram is rising (long) / falling (short);
//! 5. the last candle's volume is at least 60 % of the average of the 20 before it.
//!
//! A side scoring at least 3 (and more than the other side) opens a position on a symbol
//! without one, sized 3 %, 4 % or 5 % of equity for a score of 3, 4 or 5, with a stop 1.5 ATR(14)
//! from the entry and take profits at 1, 2 and 3 stop distances. An open position is closed
//! when the opposite side scores at least 3. Hold signals are left out. The state remembers
//! the last candle acted on per symbol, so the same candle never signals twice.

#[cfg(target_arch = "wasm32")]
mod component;

use std::collections::BTreeSet;

use tradehost_sdk::MAX_STATE_BYTES;
use tradehost_sdk::config::ConfigReader;
use tradehost_sdk::indicators::{
    MACD_STANDARD, atr, ema, is_bearish_engulfing, is_bullish_engulfing, is_hammer,
    is_shooting_star, macd_series, rsi_series, vwap,
};
use tradehost_sdk::state::StateMap;
use tradehost_sdk::strategy::{Evaluation, ScanContext};
use tradehost_sdk::types::{
    Account, Candle, PluginError, PluginInfo, Position, Series, Side, Signal, SignalAction,
};

pub const NAME: &str = "apex";

/// MACD(12, 26, 9) needs 34 closes for one histogram value, and "rising" needs two.
pub const MIN_CANDLES: usize = 35;
/// How many conditions (of five) a side needs.
pub const ENTRY_SCORE: usize = 3;

const EMA_PERIOD: usize = 21;
const VWAP_WINDOW: usize = 20;
const NEAR_VALUE_PCT: f64 = 0.5;
const RSI_PERIOD: usize = 14;
const LONG_RSI_ZONE: (f64, f64) = (25.0, 45.0);
const SHORT_RSI_ZONE: (f64, f64) = (55.0, 75.0);
const VOLUME_WINDOW: usize = 20;
const MIN_VOLUME_RATIO: f64 = 0.6;
const ATR_PERIOD: usize = 14;
const STOP_ATR_MULTIPLE: f64 = 1.5;
/// Take profits at these multiples of the stop distance, nearest first.
const TAKE_PROFIT_STEPS: [f64; 3] = [1.0, 2.0, 3.0];

pub fn describe() -> PluginInfo {
    PluginInfo {
        name: NAME.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        display_name: "Apex multi-confirmation".into(),
        description: "Enters when at least three of five technical conditions agree.".into(),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub interval: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interval: "5m".into(),
        }
    }
}

impl Config {
    pub fn read<F: Fn(&str) -> Option<String>>(
        config: &ConfigReader<F>,
    ) -> Result<Self, PluginError> {
        Ok(Self {
            interval: config.string("interval", &Self::default().interval),
        })
    }
}

/// The indicator values the conditions are judged on, all at the last candle.
#[derive(Debug, Clone, PartialEq)]
pub struct Readings {
    pub price: f64,
    pub ema21: f64,
    /// `None` when the window traded no volume.
    pub vwap: Option<f64>,
    pub rsi_previous: f64,
    pub rsi: f64,
    pub histogram_previous: f64,
    pub histogram: f64,
    pub previous_candle: Candle,
    pub last_candle: Candle,
    /// Last volume over the average of the 20 before it; `None` when that average is zero.
    pub volume_ratio: Option<f64>,
    pub atr: f64,
}

impl Readings {
    /// `None` when there are fewer than [`MIN_CANDLES`] candles.
    pub fn from_candles(candles: &[Candle]) -> Option<Self> {
        if candles.len() < MIN_CANDLES {
            return None;
        }
        let closes: Vec<f64> = candles.iter().map(|c| c.close).collect();
        let rsi = rsi_series(&closes, RSI_PERIOD);
        let (fast, slow, signal) = MACD_STANDARD;
        let macd = macd_series(&closes, fast, slow, signal);
        let last = candles.len() - 1;
        let previous_volumes = &candles[last - VOLUME_WINDOW..last];
        let average_volume =
            previous_volumes.iter().map(|c| c.volume).sum::<f64>() / VOLUME_WINDOW as f64;
        Some(Self {
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
}

/// The conditions met for `side`, each described for the signal's reason.
pub fn conditions_met(readings: &Readings, side: Side) -> Vec<String> {
    let mut met = Vec::new();

    let near = |value: f64| (readings.price / value - 1.0).abs() * 100.0 <= NEAR_VALUE_PCT;
    match (near(readings.ema21), readings.vwap.is_some_and(near)) {
        (true, true) => met.push("price within 0.5% of EMA21 and VWAP".to_owned()),
        (true, false) => met.push("price within 0.5% of EMA21".to_owned()),
        (false, true) => met.push("price within 0.5% of VWAP".to_owned()),
        (false, false) => {}
    }

    let (zone, moving_right_way, direction) = match side {
        Side::Long => (
            LONG_RSI_ZONE,
            readings.rsi > readings.rsi_previous,
            "rising",
        ),
        Side::Short => (
            SHORT_RSI_ZONE,
            readings.rsi < readings.rsi_previous,
            "falling",
        ),
    };
    if (zone.0..=zone.1).contains(&readings.rsi) && moving_right_way {
        met.push(format!("RSI {:.1} {direction}", readings.rsi));
    }

    let (previous, last) = (&readings.previous_candle, &readings.last_candle);
    let pattern = match side {
        Side::Long if is_bullish_engulfing(previous, last) => Some("bullish engulfing"),
        Side::Long if is_hammer(last) => Some("hammer"),
        Side::Short if is_bearish_engulfing(previous, last) => Some("bearish engulfing"),
        Side::Short if is_shooting_star(last) => Some("shooting star"),
        _ => None,
    };
    met.extend(pattern.map(str::to_owned));

    let histogram_agrees = match side {
        Side::Long => readings.histogram > readings.histogram_previous,
        Side::Short => readings.histogram < readings.histogram_previous,
    };
    if histogram_agrees {
        met.push(format!("MACD histogram {direction}"));
    }

    if let Some(ratio) = readings.volume_ratio
        && ratio >= MIN_VOLUME_RATIO
    {
        met.push(format!(
            "volume {:.0}% of the {VOLUME_WINDOW}-candle average",
            ratio * 100.0
        ));
    }
    met
}

/// Entry size in percent of equity for a score.
fn size_pct(score: usize) -> f64 {
    match score {
        3 => 3.0,
        4 => 4.0,
        _ => 5.0,
    }
}

pub fn evaluate(ctx: &ScanContext, config: &Config) -> Result<Evaluation, PluginError> {
    let previous = StateMap::decode(&ctx.state);
    let mut next = StateMap::new();
    let mut seen = BTreeSet::new();
    let mut signals = Vec::new();
    for series in ctx.market.iter().filter(|s| s.interval == config.interval) {
        // The first series of a symbol decides; duplicates cannot add a second signal.
        if !seen.insert(series.symbol.as_str()) {
            continue;
        }
        let Some(last) = series.candles.last() else {
            continue;
        };
        let acted_on = previous
            .get(&series.symbol)
            .and_then(|memo| memo.parse::<i64>().ok());
        if acted_on == Some(last.timestamp_ms) {
            next.insert(&series.symbol, &last.timestamp_ms.to_string());
        } else if let Some(signal) = decide(series, &ctx.positions, &ctx.account) {
            signals.push(signal);
            next.insert(&series.symbol, &last.timestamp_ms.to_string());
        }
    }
    Ok(Evaluation {
        signals,
        state: next.encode(MAX_STATE_BYTES),
    })
}

fn decide(series: &Series, positions: &[Position], account: &Account) -> Option<Signal> {
    let readings = Readings::from_candles(&series.candles)?;
    let held = positions
        .iter()
        .find(|p| p.symbol == series.symbol)
        .map(|p| p.side);
    decide_on_readings(&series.symbol, &readings, held, account)
}

/// The signal for a symbol given its readings and the side held on it, if any.
pub fn decide_on_readings(
    symbol: &str,
    readings: &Readings,
    held: Option<Side>,
    account: &Account,
) -> Option<Signal> {
    let long = conditions_met(readings, Side::Long);
    let short = conditions_met(readings, Side::Short);
    match held {
        Some(Side::Long) if short.len() >= ENTRY_SCORE => {
            Some(close_signal(symbol, Side::Long, &short))
        }
        Some(Side::Short) if long.len() >= ENTRY_SCORE => {
            Some(close_signal(symbol, Side::Short, &long))
        }
        Some(_) => None,
        // A tie means the evidence disagrees with itself: stay out.
        None if long.len() >= ENTRY_SCORE && long.len() > short.len() => {
            entry_signal(symbol, Side::Long, &long, readings, account)
        }
        None if short.len() >= ENTRY_SCORE && short.len() > long.len() => {
            entry_signal(symbol, Side::Short, &short, readings, account)
        }
        None => None,
    }
}

fn entry_signal(
    symbol: &str,
    side: Side,
    met: &[String],
    readings: &Readings,
    account: &Account,
) -> Option<Signal> {
    let score = met.len();
    let price = readings.price;
    let stop_distance = STOP_ATR_MULTIPLE * readings.atr;
    let size_usd = account.equity * size_pct(score) / 100.0;
    if !(stop_distance.is_finite() && stop_distance > 0.0 && size_usd.is_finite() && size_usd > 0.0)
    {
        return None;
    }
    // Longs lose below the entry, shorts above it.
    let against = match side {
        Side::Long => -1.0,
        Side::Short => 1.0,
    };
    let stop_loss = price + against * stop_distance;
    if stop_loss <= 0.0 {
        return None;
    }
    let take_profit = TAKE_PROFIT_STEPS
        .iter()
        .map(|step| price - against * step * stop_distance)
        .filter(|target| *target > 0.0)
        .collect();
    let (action, name) = match side {
        Side::Long => (SignalAction::OpenLong, "long"),
        Side::Short => (SignalAction::OpenShort, "short"),
    };
    Some(Signal {
        symbol: symbol.into(),
        action,
        size_usd,
        stop_loss: Some(stop_loss),
        take_profit,
        confidence: score as f64 / 5.0,
        reason: format!("{name} score {score}/5: {}", met.join(", ")),
    })
}

fn close_signal(symbol: &str, held: Side, opposite_met: &[String]) -> Signal {
    let (held_name, opposite_name) = match held {
        Side::Long => ("long", "short"),
        Side::Short => ("short", "long"),
    };
    let score = opposite_met.len();
    Signal {
        symbol: symbol.into(),
        action: SignalAction::Close,
        size_usd: 0.0,
        stop_loss: None,
        take_profit: Vec::new(),
        confidence: score as f64 / 5.0,
        reason: format!(
            "close the {held_name}: {opposite_name} score {score}/5: {}",
            opposite_met.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests;
