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
    Ema, MACD_STANDARD, is_bearish_engulfing, is_bullish_engulfing, is_hammer, is_shooting_star,
    true_range, vwap,
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
    ///
    /// Each indicator is read in one pass over the candles without a vector (a backtest reads
    /// them at every candle): the arithmetic of the SDK's `*_series` functions in the same
    /// order, so the same numbers to the last bit (tested against them).
    pub fn from_candles(candles: &[Candle]) -> Option<Self> {
        if candles.len() < MIN_CANDLES {
            return None;
        }
        let closes = || candles.iter().map(|c| c.close);
        let (rsi_previous, rsi) = last_two(wilder_rsi(candles, RSI_PERIOD))?;
        let (histogram_previous, histogram) = last_two(macd_histograms(candles))?;
        let last = candles.len() - 1;
        let previous_volumes = &candles[last - VOLUME_WINDOW..last];
        let average_volume =
            previous_volumes.iter().map(|c| c.volume).sum::<f64>() / VOLUME_WINDOW as f64;
        Some(Self {
            price: candles[last].close,
            ema21: Ema::new(closes(), EMA_PERIOD)?.last()?,
            vwap: vwap(candles, VWAP_WINDOW),
            rsi_previous,
            rsi,
            histogram_previous,
            histogram,
            previous_candle: candles[last - 1],
            last_candle: candles[last],
            volume_ratio: (average_volume > 0.0).then(|| candles[last].volume / average_volume),
            atr: wilder_atr(candles, ATR_PERIOD)?,
        })
    }
}

/// The last two values of a sequence.
fn last_two(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut pair = None;
    let mut previous = None;
    for value in values {
        if let Some(before) = previous {
            pair = Some((before, value));
        }
        previous = Some(value);
    }
    pair
}

/// RSI with Wilder's smoothing at every position from `period` on, as `rsi_series`.
fn wilder_rsi(candles: &[Candle], period: usize) -> impl Iterator<Item = f64> + '_ {
    let changes = candles.windows(2).map(|pair| pair[1].close - pair[0].close);
    let n = period as f64;
    let mut average_gain = changes
        .clone()
        .take(period)
        .map(|c| c.max(0.0))
        .sum::<f64>()
        / n;
    let mut average_loss = changes
        .clone()
        .take(period)
        .map(|c| (-c).max(0.0))
        .sum::<f64>()
        / n;
    let first = rsi_of(average_gain, average_loss);
    std::iter::once(first).chain(changes.skip(period).map(move |change| {
        average_gain = (average_gain * (n - 1.0) + change.max(0.0)) / n;
        average_loss = (average_loss * (n - 1.0) + (-change).max(0.0)) / n;
        rsi_of(average_gain, average_loss)
    }))
}

fn rsi_of(average_gain: f64, average_loss: f64) -> f64 {
    if average_loss == 0.0 {
        if average_gain == 0.0 { 50.0 } else { 100.0 }
    } else {
        100.0 - 100.0 / (1.0 + average_gain / average_loss)
    }
}

/// The MACD histogram wherever the signal line is defined, as `macd_series`: the fast EMA's
/// tail lined up with the slow one's, the signal an EMA of their difference.
fn macd_histograms(candles: &[Candle]) -> impl Iterator<Item = f64> + '_ {
    let (fast, slow, signal) = MACD_STANDARD;
    let closes = || candles.iter().map(|c| c.close);
    let line = Ema::new(closes(), fast)
        .into_iter()
        .flatten()
        .skip(slow - fast)
        .zip(Ema::new(closes(), slow).into_iter().flatten())
        .map(|(fast, slow)| fast - slow);
    // The signal line is an EMA of the line (seeded with the average of its first `signal`
    // values), worked out along it rather than over a second pass of both EMAs.
    let smoothing = 2.0 / (signal as f64 + 1.0);
    let (mut seen, mut sum, mut current) = (0, 0.0, 0.0);
    line.filter_map(move |value| {
        seen += 1;
        if seen < signal {
            sum += value;
            return None;
        }
        if seen == signal {
            sum += value;
            current = sum / signal as f64;
        } else {
            current += (value - current) * smoothing;
        }
        Some(value - current)
    })
}

/// The last ATR with Wilder's smoothing, as `atr_series`.
fn wilder_atr(candles: &[Candle], period: usize) -> Option<f64> {
    if period == 0 || candles.len() <= period {
        return None;
    }
    let ranges = candles
        .windows(2)
        .map(|pair| true_range(&pair[1], pair[0].close));
    let n = period as f64;
    let first = ranges.clone().take(period).sum::<f64>() / n;
    Some(
        ranges
            .skip(period)
            .fold(first, |current, range| (current * (n - 1.0) + range) / n),
    )
}

/// Which of the five conditions `side` meets: worked out at every candle, described only for
/// a signal's reason.
#[derive(Debug, Clone, Copy)]
struct Conditions {
    side: Side,
    /// Near EMA21, near VWAP.
    value_zone: (bool, bool),
    rsi: bool,
    pattern: Option<&'static str>,
    histogram: bool,
    volume: Option<f64>,
}

impl Conditions {
    fn of(readings: &Readings, side: Side) -> Self {
        let near = |value: f64| (readings.price / value - 1.0).abs() * 100.0 <= NEAR_VALUE_PCT;
        let (zone, moving_right_way) = match side {
            Side::Long => (LONG_RSI_ZONE, readings.rsi > readings.rsi_previous),
            Side::Short => (SHORT_RSI_ZONE, readings.rsi < readings.rsi_previous),
        };
        let (previous, last) = (&readings.previous_candle, &readings.last_candle);
        let pattern = match side {
            Side::Long if is_bullish_engulfing(previous, last) => Some("bullish engulfing"),
            Side::Long if is_hammer(last) => Some("hammer"),
            Side::Short if is_bearish_engulfing(previous, last) => Some("bearish engulfing"),
            Side::Short if is_shooting_star(last) => Some("shooting star"),
            _ => None,
        };
        Conditions {
            side,
            value_zone: (near(readings.ema21), readings.vwap.is_some_and(near)),
            rsi: (zone.0..=zone.1).contains(&readings.rsi) && moving_right_way,
            pattern,
            histogram: match side {
                Side::Long => readings.histogram > readings.histogram_previous,
                Side::Short => readings.histogram < readings.histogram_previous,
            },
            volume: readings
                .volume_ratio
                .filter(|ratio| *ratio >= MIN_VOLUME_RATIO),
        }
    }

    fn score(&self) -> usize {
        usize::from(self.value_zone.0 || self.value_zone.1)
            + usize::from(self.rsi)
            + usize::from(self.pattern.is_some())
            + usize::from(self.histogram)
            + usize::from(self.volume.is_some())
    }

    fn describe(&self, readings: &Readings) -> Vec<String> {
        let direction = match self.side {
            Side::Long => "rising",
            Side::Short => "falling",
        };
        let mut met = Vec::new();
        match self.value_zone {
            (true, true) => met.push("price within 0.5% of EMA21 and VWAP".to_owned()),
            (true, false) => met.push("price within 0.5% of EMA21".to_owned()),
            (false, true) => met.push("price within 0.5% of VWAP".to_owned()),
            (false, false) => {}
        }
        if self.rsi {
            met.push(format!("RSI {:.1} {direction}", readings.rsi));
        }
        met.extend(self.pattern.map(str::to_owned));
        if self.histogram {
            met.push(format!("MACD histogram {direction}"));
        }
        if let Some(ratio) = self.volume {
            met.push(format!(
                "volume {:.0}% of the {VOLUME_WINDOW}-candle average",
                ratio * 100.0
            ));
        }
        met
    }
}

/// The conditions met for `side`, each described for the signal's reason.
pub fn conditions_met(readings: &Readings, side: Side) -> Vec<String> {
    Conditions::of(readings, side).describe(readings)
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
    let long = Conditions::of(readings, Side::Long);
    let short = Conditions::of(readings, Side::Short);
    let (long_score, short_score) = (long.score(), short.score());
    match held {
        Some(Side::Long) if short_score >= ENTRY_SCORE => {
            Some(close_signal(symbol, Side::Long, &short.describe(readings)))
        }
        Some(Side::Short) if long_score >= ENTRY_SCORE => {
            Some(close_signal(symbol, Side::Short, &long.describe(readings)))
        }
        Some(_) => None,
        // A tie means the evidence disagrees with itself: stay out.
        None if long_score >= ENTRY_SCORE && long_score > short_score => entry_signal(
            symbol,
            Side::Long,
            &long.describe(readings),
            readings,
            account,
        ),
        None if short_score >= ENTRY_SCORE && short_score > long_score => entry_signal(
            symbol,
            Side::Short,
            &short.describe(readings),
            readings,
            account,
        ),
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
