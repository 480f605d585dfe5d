//! Technical indicators over closing prices (`&[f64]`) and candles.
//!
//! Conventions:
//! - Inputs are oldest first, as in a [`Series`](crate::types::Series).
//! - A `*_series` function returns one value for each input position from the first position
//!   where the indicator is defined up to the last input, so `series.last()` always belongs to
//!   the last input. Its length is stated on each function.
//! - An input too short for the indicator (or a zero period) gives an empty series or `None`,
//!   never NaN. Inputs themselves are expected to be finite.

use crate::types::Candle;

/// Simple moving average of the last `period` values.
pub fn sma(values: &[f64], period: usize) -> Option<f64> {
    if period == 0 || values.len() < period {
        return None;
    }
    Some(mean(&values[values.len() - period..]))
}

/// Simple moving average at every position from `period - 1` on
/// (length `values.len() - period + 1`).
pub fn sma_series(values: &[f64], period: usize) -> Vec<f64> {
    if period == 0 || values.len() < period {
        return Vec::new();
    }
    values.windows(period).map(mean).collect()
}

/// Exponential moving average (smoothing `2 / (period + 1)`) of the whole input, seeded with
/// the simple average of the first `period` values.
pub fn ema(values: &[f64], period: usize) -> Option<f64> {
    ema_series(values, period).last().copied()
}

/// Exponential moving average at every position from `period - 1` on
/// (length `values.len() - period + 1`). The first value is the simple average of the first
/// `period` values.
pub fn ema_series(values: &[f64], period: usize) -> Vec<f64> {
    match Ema::new(values.iter().copied(), period) {
        Some(ema) => ema.collect(),
        None => Vec::new(),
    }
}

/// The values of [`ema_series`] one at a time, over any sequence of values and without a
/// vector: the same arithmetic in the same order, so the same numbers to the last bit.
#[derive(Debug, Clone)]
pub struct Ema<I> {
    rest: I,
    current: f64,
    smoothing: f64,
    /// The seed has not been handed out yet.
    seeded: bool,
}

impl<I: Iterator<Item = f64>> Ema<I> {
    /// `None` when `values` has fewer than `period` values (or `period` is 0).
    pub fn new(mut values: I, period: usize) -> Option<Self> {
        if period == 0 {
            return None;
        }
        let mut sum = 0.0;
        for _ in 0..period {
            sum += values.next()?;
        }
        Some(Ema {
            rest: values,
            current: sum / period as f64,
            smoothing: 2.0 / (period as f64 + 1.0),
            seeded: true,
        })
    }
}

impl<I: Iterator<Item = f64>> Iterator for Ema<I> {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        if self.seeded {
            self.seeded = false;
            return Some(self.current);
        }
        let value = self.rest.next()?;
        self.current += (value - self.current) * self.smoothing;
        Some(self.current)
    }
}

/// Relative strength index of the whole input with Wilder's smoothing.
pub fn rsi(values: &[f64], period: usize) -> Option<f64> {
    rsi_series(values, period).last().copied()
}

/// Relative strength index (0–100) at every position from `period` on
/// (length `values.len() - period`).
///
/// The first average gain and loss are the simple averages of the first `period` changes;
/// after that each is smoothed as `(previous × (period − 1) + current) / period` (Wilder).
/// A window without losses reads 100, one without any change reads 50.
pub fn rsi_series(values: &[f64], period: usize) -> Vec<f64> {
    if period == 0 || values.len() <= period {
        return Vec::new();
    }
    let changes: Vec<f64> = values.windows(2).map(|pair| pair[1] - pair[0]).collect();
    let n = period as f64;
    let mut average_gain = changes[..period].iter().map(|c| c.max(0.0)).sum::<f64>() / n;
    let mut average_loss = changes[..period].iter().map(|c| (-c).max(0.0)).sum::<f64>() / n;
    let mut out = Vec::with_capacity(values.len() - period);
    out.push(rsi_from_averages(average_gain, average_loss));
    for change in &changes[period..] {
        average_gain = (average_gain * (n - 1.0) + change.max(0.0)) / n;
        average_loss = (average_loss * (n - 1.0) + (-change).max(0.0)) / n;
        out.push(rsi_from_averages(average_gain, average_loss));
    }
    out
}

fn rsi_from_averages(average_gain: f64, average_loss: f64) -> f64 {
    if average_loss == 0.0 {
        if average_gain == 0.0 { 50.0 } else { 100.0 }
    } else {
        100.0 - 100.0 / (1.0 + average_gain / average_loss)
    }
}

/// One point of the MACD indicator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Macd {
    /// Fast EMA minus slow EMA.
    pub line: f64,
    /// EMA of the line.
    pub signal: f64,
    /// Line minus signal.
    pub histogram: f64,
}

/// The usual MACD periods: 12, 26 and 9.
pub const MACD_STANDARD: (usize, usize, usize) = (12, 26, 9);

/// MACD of the whole input.
pub fn macd(values: &[f64], fast: usize, slow: usize, signal: usize) -> Option<Macd> {
    macd_series(values, fast, slow, signal).last().copied()
}

/// MACD at every position where the signal line is defined
/// (length `values.len() - max(fast, slow) - signal + 2`).
pub fn macd_series(values: &[f64], fast: usize, slow: usize, signal: usize) -> Vec<Macd> {
    let fast_ema = ema_series(values, fast);
    let slow_ema = ema_series(values, slow);
    let len = fast_ema.len().min(slow_ema.len());
    if len == 0 {
        return Vec::new();
    }
    // Both series end at the last input; line up their tails.
    let line: Vec<f64> = fast_ema[fast_ema.len() - len..]
        .iter()
        .zip(&slow_ema[slow_ema.len() - len..])
        .map(|(f, s)| f - s)
        .collect();
    let signal_line = ema_series(&line, signal);
    line[line.len() - signal_line.len()..]
        .iter()
        .zip(&signal_line)
        .map(|(&line, &signal)| Macd {
            line,
            signal,
            histogram: line - signal,
        })
        .collect()
}

/// The larger of a candle's range and its gaps from the previous close.
pub fn true_range(candle: &Candle, previous_close: f64) -> f64 {
    (candle.high - candle.low)
        .max((candle.high - previous_close).abs())
        .max((candle.low - previous_close).abs())
}

/// Average true range of the whole input with Wilder's smoothing.
pub fn atr(candles: &[Candle], period: usize) -> Option<f64> {
    atr_series(candles, period).last().copied()
}

/// Average true range at every position from `period` on (length `candles.len() - period`).
///
/// True ranges start at the second candle (they need a previous close). The first ATR is the
/// simple average of the first `period` true ranges, then `(previous × (period − 1) + TR) / period`.
pub fn atr_series(candles: &[Candle], period: usize) -> Vec<f64> {
    if period == 0 || candles.len() <= period {
        return Vec::new();
    }
    let ranges: Vec<f64> = candles
        .windows(2)
        .map(|pair| true_range(&pair[1], pair[0].close))
        .collect();
    let n = period as f64;
    let mut current = mean(&ranges[..period]);
    let mut out = Vec::with_capacity(candles.len() - period);
    out.push(current);
    for range in &ranges[period..] {
        current = (current * (n - 1.0) + range) / n;
        out.push(current);
    }
    out
}

/// Volume-weighted average of the typical price `(high + low + close) / 3` over the last
/// `window` candles. `None` when there are fewer candles or no volume in the window.
pub fn vwap(candles: &[Candle], window: usize) -> Option<f64> {
    if window == 0 || candles.len() < window {
        return None;
    }
    let (weighted, volume) =
        candles[candles.len() - window..]
            .iter()
            .fold((0.0, 0.0), |(weighted, volume), candle| {
                let typical = (candle.high + candle.low + candle.close) / 3.0;
                (weighted + typical * candle.volume, volume + candle.volume)
            });
    (volume > 0.0).then(|| weighted / volume)
}

/// Bollinger bands: the simple average of the last `period` values ± `k` population standard
/// deviations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bollinger {
    pub lower: f64,
    pub middle: f64,
    pub upper: f64,
}

pub fn bollinger(values: &[f64], period: usize, k: f64) -> Option<Bollinger> {
    if period == 0 || values.len() < period {
        return None;
    }
    let window = &values[values.len() - period..];
    let middle = mean(window);
    let variance = window.iter().map(|v| (v - middle).powi(2)).sum::<f64>() / period as f64;
    let width = k * variance.sqrt();
    Some(Bollinger {
        lower: middle - width,
        middle,
        upper: middle + width,
    })
}

/// A hammer's or shooting star's body is at most this share of the candle's range.
const SMALL_BODY_SHARE: f64 = 1.0 / 3.0;
/// The shadow on the far side of a hammer or shooting star is at most this share of the range.
const SHORT_SHADOW_SHARE: f64 = 0.1;

/// A bearish candle followed by a bullish one whose body covers the first body and is larger.
pub fn is_bullish_engulfing(previous: &Candle, last: &Candle) -> bool {
    previous.close < previous.open
        && last.close > last.open
        && last.open <= previous.close
        && last.close >= previous.open
        && body(last) > body(previous)
}

/// A bullish candle followed by a bearish one whose body covers the first body and is larger.
pub fn is_bearish_engulfing(previous: &Candle, last: &Candle) -> bool {
    previous.close > previous.open
        && last.close < last.open
        && last.open >= previous.close
        && last.close <= previous.open
        && body(last) > body(previous)
}

/// A small body at the top of the range: lower shadow at least twice the body, almost no upper
/// shadow.
pub fn is_hammer(candle: &Candle) -> bool {
    let range = candle.high - candle.low;
    range > 0.0
        && body(candle) <= range * SMALL_BODY_SHARE
        && lower_shadow(candle) >= 2.0 * body(candle)
        && upper_shadow(candle) <= range * SHORT_SHADOW_SHARE
}

/// A small body at the bottom of the range: upper shadow at least twice the body, almost no
/// lower shadow.
pub fn is_shooting_star(candle: &Candle) -> bool {
    let range = candle.high - candle.low;
    range > 0.0
        && body(candle) <= range * SMALL_BODY_SHARE
        && upper_shadow(candle) >= 2.0 * body(candle)
        && lower_shadow(candle) <= range * SHORT_SHADOW_SHARE
}

fn body(candle: &Candle) -> f64 {
    (candle.close - candle.open).abs()
}

fn upper_shadow(candle: &Candle) -> f64 {
    candle.high - candle.open.max(candle.close)
}

fn lower_shadow(candle: &Candle) -> f64 {
    candle.open.min(candle.close) - candle.low
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-9,
            "expected {expected}, got {actual}"
        );
    }

    fn assert_all_close(actual: &[f64], expected: &[f64]) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (a, e) in actual.iter().zip(expected) {
            assert_close(*a, *e);
        }
    }

    fn candle(open: f64, high: f64, low: f64, close: f64, volume: f64) -> Candle {
        Candle {
            timestamp_ms: 0,
            open,
            high,
            low,
            close,
            volume,
        }
    }

    #[test]
    fn ema_one_value_at_a_time_is_the_seeded_recurrence_to_the_last_bit() {
        let values: Vec<f64> = (0..300)
            .map(|i| 100.0 + ((i * 7919) % 113) as f64 / 7.0 - (i % 11) as f64 * 0.3)
            .collect();
        for period in [1, 2, 9, 21, 200, 300] {
            let smoothing = 2.0 / (period as f64 + 1.0);
            let mut current = mean(&values[..period]);
            let mut expected = vec![current];
            for value in &values[period..] {
                current += (value - current) * smoothing;
                expected.push(current);
            }
            let by_iterator: Vec<f64> = Ema::new(values.iter().copied(), period).unwrap().collect();
            assert_eq!(by_iterator, expected, "period {period}");
            assert_eq!(ema_series(&values, period), expected);
        }
        assert!(Ema::new(values.iter().copied(), 301).is_none());
        assert!(Ema::new(values.iter().copied(), 0).is_none());
    }

    #[test]
    fn sma_averages_the_last_period() {
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_close(sma(&values, 3).unwrap(), 4.0);
        assert_all_close(&sma_series(&values, 3), &[2.0, 3.0, 4.0]);
        assert_close(sma(&values, 5).unwrap(), 3.0);
    }

    #[test]
    fn sma_of_short_input_is_none() {
        assert_eq!(sma(&[1.0, 2.0], 3), None);
        assert_eq!(sma(&[1.0, 2.0], 0), None);
        assert!(sma_series(&[1.0, 2.0], 3).is_empty());
        assert!(sma_series(&[], 1).is_empty());
    }

    #[test]
    fn ema_is_seeded_with_the_sma() {
        // k = 2 / (3 + 1) = 0.5; seed (1 + 2 + 3) / 3 = 2; then 3, 4, 5.
        let values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_all_close(&ema_series(&values, 3), &[2.0, 3.0, 4.0, 5.0]);
        assert_close(ema(&values, 3).unwrap(), 5.0);
        // k = 2 / 3: seed (10 + 20) / 2 = 15, then 15 + (30 − 15) × 2/3 = 25.
        assert_all_close(&ema_series(&[10.0, 20.0, 30.0], 2), &[15.0, 25.0]);
    }

    #[test]
    fn ema_of_short_input_is_empty() {
        assert!(ema_series(&[1.0, 2.0], 3).is_empty());
        assert_eq!(ema(&[1.0], 2), None);
        assert_eq!(ema(&[1.0], 0), None);
    }

    #[test]
    fn rsi_uses_wilder_smoothing() {
        // Changes +1, +1, −1, +1 with period 2:
        // gain 1, loss 0 → 100; gain (1 + 0) / 2 = 0.5, loss (0 + 1) / 2 = 0.5 → 50;
        // gain (0.5 + 1) / 2 = 0.75, loss 0.25 → RS 3 → 75.
        let values = [1.0, 2.0, 3.0, 2.0, 3.0];
        assert_all_close(&rsi_series(&values, 2), &[100.0, 50.0, 75.0]);
        assert_close(rsi(&values, 2).unwrap(), 75.0);
    }

    #[test]
    fn rsi_edge_cases_stay_finite() {
        assert_all_close(&rsi_series(&[5.0, 5.0, 5.0], 2), &[50.0]);
        assert_all_close(&rsi_series(&[5.0, 4.0, 3.0], 2), &[0.0]);
        assert!(rsi_series(&[1.0, 2.0], 2).is_empty());
        assert_eq!(rsi(&[1.0, 2.0, 3.0], 0), None);
    }

    #[test]
    fn macd_line_signal_and_histogram() {
        // fast EMA(2): 2, 2, 4, 4, 16/3; slow EMA(3): 2, 3.5, 3.75, 4.875;
        // line: 0, 0.5, 0.25, 11/24; signal EMA(2) of line: 0.25, 0.25, 7/18.
        let values = [1.0, 3.0, 2.0, 5.0, 4.0, 6.0];
        let series = macd_series(&values, 2, 3, 2);
        assert_eq!(series.len(), 3);
        let lines: Vec<f64> = series.iter().map(|m| m.line).collect();
        let signals: Vec<f64> = series.iter().map(|m| m.signal).collect();
        let histograms: Vec<f64> = series.iter().map(|m| m.histogram).collect();
        assert_all_close(&lines, &[0.5, 0.25, 11.0 / 24.0]);
        assert_all_close(&signals, &[0.25, 0.25, 7.0 / 18.0]);
        assert_all_close(&histograms, &[0.25, 0.0, 5.0 / 72.0]);
    }

    #[test]
    fn macd_standard_needs_34_values() {
        let (fast, slow, signal) = MACD_STANDARD;
        let values: Vec<f64> = (0..33).map(|i| 100.0 + i as f64).collect();
        assert!(macd_series(&values, fast, slow, signal).is_empty());
        let values: Vec<f64> = (0..34).map(|i| 100.0 + i as f64).collect();
        assert_eq!(macd_series(&values, fast, slow, signal).len(), 1);
        // On a straight line both EMAs lag by (period − 1) / 2 steps: line = 13/2 − 11/2 = 7.
        let point = macd(&values, fast, slow, signal).unwrap();
        assert_close(point.line, 7.0);
        assert_close(point.histogram, 0.0);
    }

    #[test]
    fn atr_uses_true_range_and_wilder_smoothing() {
        let candles = [
            candle(8.5, 10.0, 8.0, 9.0, 1.0),
            candle(9.0, 12.0, 9.0, 11.0, 1.0), // TR max(3, 3, 0) = 3
            candle(11.0, 11.0, 10.0, 10.5, 1.0), // TR max(1, 0, 1) = 1
            candle(10.5, 13.0, 10.0, 12.0, 1.0), // TR max(3, 2.5, 0.5) = 3
            candle(9.0, 9.0, 8.0, 8.5, 1.0),   // gap down: TR max(1, 3, 4) = 4
        ];
        // First ATR (3 + 1) / 2 = 2, then (2 + 3) / 2 = 2.5, then (2.5 + 4) / 2 = 3.25.
        assert_all_close(&atr_series(&candles, 2), &[2.0, 2.5, 3.25]);
        assert_close(atr(&candles, 2).unwrap(), 3.25);
        assert!(atr_series(&candles[..2], 2).is_empty());
    }

    #[test]
    fn vwap_weights_typical_prices_by_volume() {
        let candles = [
            candle(10.0, 12.0, 8.0, 10.0, 100.0),  // typical 10
            candle(10.0, 13.0, 11.0, 12.0, 300.0), // typical 12
            candle(12.0, 15.0, 11.0, 13.0, 0.0),   // typical 13, no volume
        ];
        assert_close(vwap(&candles, 3).unwrap(), 11.5);
        assert_close(vwap(&candles, 2).unwrap(), 12.0);
        assert_eq!(vwap(&candles, 1), None);
        assert_eq!(vwap(&candles, 4), None);
        assert_eq!(vwap(&candles, 0), None);
    }

    #[test]
    fn bollinger_uses_population_deviation() {
        // Mean 5, population standard deviation 2.
        let values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let bands = bollinger(&values, 8, 2.0).unwrap();
        assert_close(bands.middle, 5.0);
        assert_close(bands.upper, 9.0);
        assert_close(bands.lower, 1.0);
        assert_eq!(bollinger(&values, 9, 2.0), None);
    }

    #[test]
    fn engulfing_patterns() {
        let bearish = candle(10.0, 10.1, 8.8, 9.0, 1.0);
        let bullish_engulfing = candle(8.9, 10.3, 8.8, 10.2, 1.0);
        let bullish_short = candle(8.9, 10.0, 8.8, 9.8, 1.0);
        assert!(is_bullish_engulfing(&bearish, &bullish_engulfing));
        assert!(!is_bullish_engulfing(&bearish, &bullish_short));
        assert!(!is_bearish_engulfing(&bearish, &bullish_engulfing));

        let bullish = candle(9.0, 10.1, 8.9, 10.0, 1.0);
        let bearish_engulfing = candle(10.1, 10.2, 8.7, 8.8, 1.0);
        assert!(is_bearish_engulfing(&bullish, &bearish_engulfing));
        assert!(!is_bullish_engulfing(&bullish, &bearish_engulfing));
        // Same colour twice is no engulfing.
        assert!(!is_bearish_engulfing(&bearish, &bearish_engulfing));
    }

    #[test]
    fn hammer_and_shooting_star() {
        // Range 1.25, body 0.2, lower shadow 1.0, upper shadow 0.05.
        let hammer = candle(10.0, 10.25, 9.0, 10.2, 1.0);
        assert!(is_hammer(&hammer));
        assert!(!is_shooting_star(&hammer));
        // Range 1.3, body 0.2, upper shadow 1.05, lower shadow 0.05.
        let star = candle(10.2, 11.25, 9.95, 10.0, 1.0);
        assert!(is_shooting_star(&star));
        assert!(!is_hammer(&star));
        // A big body is neither; a flat candle is neither.
        let marubozu = candle(9.0, 10.0, 9.0, 10.0, 1.0);
        assert!(!is_hammer(&marubozu) && !is_shooting_star(&marubozu));
        let flat = candle(10.0, 10.0, 10.0, 10.0, 1.0);
        assert!(!is_hammer(&flat) && !is_shooting_star(&flat));
    }
}
