//! The simulated market: prices are a pure function of (seed, symbol, time).
//!
//! Nothing is remembered between calls, so the price of a symbol at a moment is the same in
//! every call, and candles of every interval are exact aggregates of the one-minute candles.
//!
//! Log-price at simulated minute `s` (minutes since [`ANCHOR_MS`]):
//!
//! ```text
//! ln p(s) = ln base + Σ trend waves (hours to days) + σ · regime(s) · Σ noise octaves
//! ```
//!
//! The noise octaves are value noise: seeded random values on lattices 1, 4, 16, … 1024
//! minutes apart, linearly interpolated, with amplitudes growing like √spacing so the path
//! looks like a random walk at every scale while each point costs a fixed amount of work.
//! `regime(s)` is a slowly varying volatility multiplier.
//!
//! Simulated time runs at `speed` times the host clock around a fixed anchor, and candles are
//! stamped with host time: at speed 60 a one-minute candle covers an hour of market movement.
//! The model is sampled at each host minute (the one-minute candles' opens and closes), and the
//! price stays there until the next minute: an order fills at the close of the last one-minute
//! candle (the open of the current one), a price every candle series shows, so a backtest over
//! the same candles fills at the same prices.

use tradehost_sdk::types::Candle;

/// 2024-01-01T00:00:00Z, the fixed point of the simulated clock.
pub const ANCHOR_MS: i64 = 1_704_067_200_000;
/// The most candles one call returns.
pub const MAX_CANDLES: u32 = 1000;
/// Candle requests must end within 1970..3000.
pub const MAX_END_MS: i64 = 32_503_680_000_000;

const MINUTE_MS: i64 = 60_000;

/// Spacing (simulated minutes) of the noise octaves.
const NOISE_SPACINGS: [f64; 6] = [1.0, 4.0, 16.0, 64.0, 256.0, 1024.0];
/// Value noise of amplitude `a` moves by about `0.8 a` between lattice points, so scaling the
/// octaves by `√spacing / 0.8` gives roughly `σ √minutes` of movement at every scale.
const NOISE_GAIN: f64 = 1.25;
/// Spacing (simulated minutes) of the volatility regime lattice: regimes last about half a day.
const REGIME_SPACING: f64 = 720.0;
/// The regime multiplier ranges over `exp(±REGIME_DEPTH)`.
const REGIME_DEPTH: f64 = 0.5;
/// Wicks reach up to this many σ·√minutes beyond the candle body.
const WICK_DEPTH: f64 = 0.8;

/// Independent random streams of one symbol.
#[derive(Clone, Copy)]
enum Stream {
    Noise = 1,
    Regime = 2,
    WickUp = 3,
    WickDown = 4,
    Volume = 5,
    Trend = 6,
    Profile = 7,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interval {
    OneMinute,
    FiveMinutes,
    OneHour,
}

impl Interval {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "1m" => Some(Self::OneMinute),
            "5m" => Some(Self::FiveMinutes),
            "1h" => Some(Self::OneHour),
            _ => None,
        }
    }

    pub fn minutes(self) -> i64 {
        match self {
            Self::OneMinute => 1,
            Self::FiveMinutes => 5,
            Self::OneHour => 60,
        }
    }

    pub fn millis(self) -> i64 {
        self.minutes() * MINUTE_MS
    }
}

/// Checks the BASE-QUOTE form: two non-empty parts of uppercase ASCII letters and digits.
pub fn validate_symbol(symbol: &str) -> Result<(), String> {
    let valid_part = |part: &str| {
        (1..=12).contains(&part.len())
            && part
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    match symbol.split_once('-') {
        Some((base, quote)) if valid_part(base) && valid_part(quote) => Ok(()),
        _ => Err(format!(
            "invalid symbol `{symbol}`: expected BASE-QUOTE in uppercase letters and digits, e.g. BTC-USD"
        )),
    }
}

/// The simulated market for one configuration seed and speed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Market {
    seed: u64,
    speed: f64,
}

impl Market {
    /// `speed` must be finite and positive (the configuration checks it).
    pub fn new(seed: u64, speed: f64) -> Self {
        Self { seed, speed }
    }

    /// Simulated minutes since the anchor at host time `real_ms`.
    fn simulated_minutes(&self, real_ms: i64) -> f64 {
        (real_ms as f64 - ANCHOR_MS as f64) * self.speed / MINUTE_MS as f64
    }

    /// The mid price of `symbol` at host time `real_ms`: the close of the last one-minute candle
    /// (the price at the start of the current minute).
    pub fn mid_price(&self, symbol: &str, real_ms: i64) -> f64 {
        let model = SymbolModel::new(self.seed, symbol);
        let start_ms = real_ms.div_euclid(MINUTE_MS) * MINUTE_MS;
        model.price(self.simulated_minutes(start_ms))
    }

    /// The last `limit` (at most [`MAX_CANDLES`]) completed candles ending at or before
    /// `end_ms`, oldest first. Candles that would start before 1970 are left out.
    pub fn candles(
        &self,
        symbol: &str,
        interval: Interval,
        limit: u32,
        end_ms: i64,
    ) -> Vec<Candle> {
        let step = interval.millis();
        let count = i64::from(limit.min(MAX_CANDLES));
        let last_start = end_ms.div_euclid(step) * step - step;
        let first_start = (last_start - (count - 1) * step).max(0);
        if count == 0 || last_start < first_start {
            return Vec::new();
        }
        let model = SymbolModel::new(self.seed, symbol);
        let minutes_per_candle = interval.minutes() as usize;
        let minute_count = ((last_start - first_start) / MINUTE_MS) as usize + minutes_per_candle;

        // Each minute's close is the next minute's open, so evaluate every boundary once.
        let boundary_prices: Vec<f64> = (0..=minute_count)
            .map(|i| model.price(self.simulated_minutes(first_start + i as i64 * MINUTE_MS)))
            .collect();
        let minutes: Vec<Candle> = (0..minute_count)
            .map(|i| {
                let start_ms = first_start + i as i64 * MINUTE_MS;
                self.minute_candle(&model, start_ms, boundary_prices[i], boundary_prices[i + 1])
            })
            .collect();
        minutes.chunks(minutes_per_candle).map(aggregate).collect()
    }

    /// The one-minute candle starting at host time `start_ms`, given its open and close.
    fn minute_candle(&self, model: &SymbolModel, start_ms: i64, open: f64, close: f64) -> Candle {
        let minute_index = start_ms.div_euclid(MINUTE_MS);
        let regime = model.regime(self.simulated_minutes(start_ms));
        // One host minute spans `speed` simulated minutes of movement.
        let minute_scale = model.minute_volatility * regime * self.speed.sqrt();
        let wick_up = WICK_DEPTH * minute_scale * model.uniform(Stream::WickUp, 0, minute_index);
        let wick_down =
            WICK_DEPTH * minute_scale * model.uniform(Stream::WickDown, 0, minute_index);
        let body_move = (close / open).ln().abs();
        let activity = (0.4 + 1.2 * model.uniform(Stream::Volume, 0, minute_index))
            * (1.0 + 0.5 * body_move / model.minute_volatility);
        let mid = (open + close) / 2.0;
        Candle {
            timestamp_ms: start_ms,
            open,
            high: open.max(close) * wick_up.exp(),
            low: open.min(close) * (-wick_down).exp(),
            close,
            volume: model.notional_per_minute / mid * regime * activity * self.speed,
        }
    }
}

/// Merges consecutive candles into one.
fn aggregate(candles: &[Candle]) -> Candle {
    let first = &candles[0];
    let last = &candles[candles.len() - 1];
    Candle {
        timestamp_ms: first.timestamp_ms,
        open: first.open,
        high: candles.iter().map(|c| c.high).fold(f64::MIN, f64::max),
        low: candles.iter().map(|c| c.low).fold(f64::MAX, f64::min),
        close: last.close,
        volume: candles.iter().map(|c| c.volume).sum(),
    }
}

/// One sinusoidal component of the trend.
#[derive(Debug, Clone, Copy)]
struct Wave {
    amplitude: f64,
    period_minutes: f64,
    phase: f64,
}

/// Everything about one symbol that follows from its seed.
#[derive(Debug, Clone)]
struct SymbolModel {
    seed: u64,
    base_log_price: f64,
    /// Typical log-price move per simulated minute (σ).
    minute_volatility: f64,
    trend: [Wave; 3],
    /// Typical traded value per simulated minute, quote currency.
    notional_per_minute: f64,
}

impl SymbolModel {
    fn new(config_seed: u64, symbol: &str) -> Self {
        let seed = mix(config_seed, hash_bytes(symbol.as_bytes()));
        // The price level and liquidity depend on the symbol alone, so a different market seed
        // changes the path, not what the asset is roughly worth.
        let profile_seed = hash_bytes(symbol.as_bytes());
        let profile = |index: u64| unit(mix(profile_seed, mix(Stream::Profile as u64, index)));
        let (base_price, volatility_factor, notional_per_minute) = match known_profile(symbol) {
            Some(known) => known,
            None => (
                // Log-uniform between 0.1 and 500.
                (0.1f64.ln() + profile(0) * (500.0f64.ln() - 0.1f64.ln())).exp(),
                1.2 + profile(1),
                20_000.0 + profile(2) * 180_000.0,
            ),
        };
        // Periods around 6 hours, 1.3 days and 4.3 days, each scaled by a factor of 0.8 to 1.25.
        let shapes = [(0.006, 360.0), (0.015, 1860.0), (0.035, 6240.0)];
        let trend = std::array::from_fn(|i| {
            let (amplitude, period) = shapes[i];
            let draw = |octave| seeded_unit(seed, Stream::Trend, octave, i as i64);
            Wave {
                amplitude: amplitude * volatility_factor * (0.7 + 0.6 * draw(0)),
                period_minutes: period * (0.8 + 0.45 * draw(1)),
                phase: std::f64::consts::TAU * draw(2),
            }
        });
        Self {
            seed,
            base_log_price: base_price.ln(),
            minute_volatility: 0.0006 * volatility_factor,
            trend,
            notional_per_minute,
        }
    }

    /// The price at simulated minute `s`.
    fn price(&self, s: f64) -> f64 {
        let trend: f64 = self
            .trend
            .iter()
            .map(|wave| {
                wave.amplitude
                    * (std::f64::consts::TAU * s / wave.period_minutes + wave.phase).sin()
            })
            .sum();
        let noise: f64 = NOISE_SPACINGS
            .iter()
            .enumerate()
            .map(|(octave, &spacing)| {
                NOISE_GAIN
                    * spacing.sqrt()
                    * self.value_noise(Stream::Noise, octave as u64, spacing, s)
            })
            .sum();
        (self.base_log_price + trend + self.minute_volatility * self.regime(s) * noise).exp()
    }

    /// The volatility multiplier at simulated minute `s`.
    fn regime(&self, s: f64) -> f64 {
        (REGIME_DEPTH * self.value_noise(Stream::Regime, 0, REGIME_SPACING, s)).exp()
    }

    /// Seeded values in -1..1 at multiples of `spacing`, linearly interpolated.
    fn value_noise(&self, stream: Stream, octave: u64, spacing: f64, s: f64) -> f64 {
        let x = s / spacing;
        let cell = x.floor();
        let fraction = x - cell;
        let cell = cell as i64;
        let left = 2.0 * self.uniform(stream, octave, cell) - 1.0;
        let right = 2.0 * self.uniform(stream, octave, cell + 1) - 1.0;
        left + (right - left) * fraction
    }

    /// A seeded value in 0..1 for `(stream, octave, index)`.
    fn uniform(&self, stream: Stream, octave: u64, index: i64) -> f64 {
        seeded_unit(self.seed, stream, octave, index)
    }
}

/// A value in 0..1 determined by `seed` and `(stream, octave, index)`.
fn seeded_unit(seed: u64, stream: Stream, octave: u64, index: i64) -> f64 {
    unit(mix(mix(seed, mix(stream as u64, octave)), index as u64))
}

/// Price level, volatility factor and traded value per minute of well-known assets quoted in
/// dollars.
fn known_profile(symbol: &str) -> Option<(f64, f64, f64)> {
    let (base, quote) = symbol.split_once('-')?;
    if !matches!(quote, "USD" | "USDT" | "USDC") {
        return None;
    }
    match base {
        "BTC" => Some((60_000.0, 1.0, 2_000_000.0)),
        "ETH" => Some((3_000.0, 1.2, 1_000_000.0)),
        "SOL" => Some((150.0, 1.6, 300_000.0)),
        _ => None,
    }
}

/// SplitMix64's finaliser: a fast, well-spread 64-bit mix.
fn splitmix64(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn mix(a: u64, b: u64) -> u64 {
    splitmix64(a ^ splitmix64(b))
}

/// FNV-1a followed by a mix: stable across platforms and releases, unlike std's hasher.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let fnv = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    splitmix64(fnv)
}

/// The top 53 bits as a value in 0..1.
fn unit(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradehost_sdk::indicators::ema_series;

    const DAY_MS: i64 = 24 * 60 * MINUTE_MS;
    // 2024-03-01T00:00:00Z.
    const MARCH_FIRST_MS: i64 = 1_709_251_200_000;

    fn market() -> Market {
        Market::new(42, 1.0)
    }

    #[test]
    fn same_inputs_give_the_same_candles() {
        let first = market().candles("BTC-USD", Interval::OneMinute, 500, MARCH_FIRST_MS);
        let second = market().candles("BTC-USD", Interval::OneMinute, 500, MARCH_FIRST_MS);
        assert_eq!(first.len(), 500);
        assert_eq!(first, second);
        let other_seed =
            Market::new(7, 1.0).candles("BTC-USD", Interval::OneMinute, 500, MARCH_FIRST_MS);
        assert_ne!(first, other_seed);
        let other_symbol = market().candles("ETH-USD", Interval::OneMinute, 500, MARCH_FIRST_MS);
        assert_ne!(first, other_symbol);
    }

    #[test]
    fn overlapping_requests_agree() {
        let long = market().candles("SOL-USD", Interval::OneMinute, 300, MARCH_FIRST_MS);
        let short = market().candles(
            "SOL-USD",
            Interval::OneMinute,
            100,
            MARCH_FIRST_MS - 50 * MINUTE_MS,
        );
        assert_eq!(short[..], long[150..250]);
    }

    #[test]
    fn coarser_intervals_aggregate_the_minutes_exactly() {
        // Mid-bucket ends: the coarse candles stop at the last completed bucket.
        let end = MARCH_FIRST_MS + 37 * MINUTE_MS;
        let five = market().candles("ETH-USD", Interval::FiveMinutes, 120, end);
        let minutes = market().candles(
            "ETH-USD",
            Interval::OneMinute,
            600,
            MARCH_FIRST_MS + 35 * MINUTE_MS,
        );
        assert_eq!(five.len(), 120);
        for (chunk, candle) in minutes.chunks(5).zip(&five) {
            assert_eq!(aggregate(chunk), *candle);
        }
        let hours = market().candles("ETH-USD", Interval::OneHour, 10, end);
        let minutes = market().candles("ETH-USD", Interval::OneMinute, 600, MARCH_FIRST_MS);
        assert_eq!(
            hours.last().unwrap().timestamp_ms,
            MARCH_FIRST_MS - 60 * MINUTE_MS
        );
        for (chunk, candle) in minutes.chunks(60).zip(&hours) {
            assert_eq!(aggregate(chunk), *candle);
        }
    }

    #[test]
    fn only_completed_candles_are_returned() {
        let mid_candle = MARCH_FIRST_MS + 2 * MINUTE_MS + 30_000;
        let candles = market().candles("BTC-USD", Interval::FiveMinutes, 3, mid_candle);
        assert_eq!(
            candles.last().unwrap().timestamp_ms,
            MARCH_FIRST_MS - 5 * MINUTE_MS
        );
        // A candle ending exactly at `end_ms` is complete.
        let on_boundary = market().candles("BTC-USD", Interval::FiveMinutes, 3, MARCH_FIRST_MS);
        assert_eq!(on_boundary, candles);
        let times: Vec<i64> = candles.iter().map(|c| c.timestamp_ms).collect();
        assert_eq!(
            times,
            [-15, -10, -5].map(|m| MARCH_FIRST_MS + m * MINUTE_MS)
        );
    }

    #[test]
    fn limits_are_capped_and_zero_is_empty() {
        assert_eq!(
            market()
                .candles("BTC-USD", Interval::OneHour, 5000, MARCH_FIRST_MS)
                .len(),
            1000
        );
        assert!(
            market()
                .candles("BTC-USD", Interval::OneMinute, 0, MARCH_FIRST_MS)
                .is_empty()
        );
        // Nothing before 1970.
        assert_eq!(
            market()
                .candles("BTC-USD", Interval::OneHour, 10, 3 * 3_600_000)
                .len(),
            3
        );
        assert!(
            market()
                .candles("BTC-USD", Interval::OneHour, 10, 0)
                .is_empty()
        );
    }

    #[test]
    fn candles_are_well_formed_and_near_the_base_price() {
        for (symbol, base) in [
            ("BTC-USD", 60_000.0),
            ("ETH-USD", 3_000.0),
            ("SOL-USD", 150.0),
        ] {
            let candles = market().candles(symbol, Interval::OneHour, 1000, MARCH_FIRST_MS);
            for candle in &candles {
                assert!(candle.high >= candle.open.max(candle.close));
                assert!(candle.low <= candle.open.min(candle.close));
                assert!(candle.low > 0.0 && candle.volume > 0.0);
                assert!(
                    candle.close > base * 0.6 && candle.close < base * 1.6,
                    "{symbol} {candle:?}"
                );
            }
            for pair in candles.windows(2) {
                assert_eq!(pair[0].close, pair[1].open);
            }
        }
        let other = market().candles("ABC-EUR", Interval::OneMinute, 10, MARCH_FIRST_MS);
        assert!(other.iter().all(|c| c.close > 0.05 && c.close < 1000.0));
    }

    #[test]
    fn ema_crossovers_happen_several_times_a_day() {
        for (seed, symbol) in [
            (42, "BTC-USD"),
            (42, "ETH-USD"),
            (1, "SOL-USD"),
            (9, "XYZ-USD"),
        ] {
            let candles = Market::new(seed, 1.0).candles(
                symbol,
                Interval::OneMinute,
                1000,
                MARCH_FIRST_MS + DAY_MS / 2,
            );
            let closes: Vec<f64> = candles.iter().map(|c| c.close).collect();
            let fast = ema_series(&closes, 9);
            let slow = ema_series(&closes, 21);
            let gaps: Vec<f64> = fast[12..].iter().zip(&slow).map(|(f, s)| f - s).collect();
            let crossings = gaps
                .windows(2)
                .filter(|pair| (pair[0] > 0.0) != (pair[1] > 0.0))
                .count();
            // 1000 minutes is about 0.7 days.
            assert!(
                (4..200).contains(&crossings),
                "{symbol}: {crossings} crossings"
            );
        }
    }

    #[test]
    fn the_mid_price_is_the_last_one_minute_close_until_the_next_minute() {
        for speed in [1.0, 60.0] {
            let market = Market::new(42, speed);
            let start = MARCH_FIRST_MS + 10 * MINUTE_MS;
            let before = market.candles("BTC-USD", Interval::OneMinute, 1, start)[0];
            let candle = market.candles("BTC-USD", Interval::OneMinute, 1, start + MINUTE_MS)[0];
            assert_eq!(candle.timestamp_ms, start);
            assert_eq!(candle.open, before.close);
            for offset in [0, 1, 15_000, 30_000, 59_999] {
                assert_eq!(market.mid_price("BTC-USD", start + offset), before.close);
            }
            assert_eq!(market.mid_price("BTC-USD", start + MINUTE_MS), candle.close);
            // Every interval's candles close on a minute boundary, at the same price.
            let five = market.candles("BTC-USD", Interval::FiveMinutes, 1, start)[0];
            let five_end = five.timestamp_ms + Interval::FiveMinutes.millis();
            assert_eq!(market.mid_price("BTC-USD", five_end + 20_000), five.close);
        }
    }

    #[test]
    fn speed_scales_simulated_time_around_the_anchor() {
        let fast = Market::new(42, 60.0);
        let offset = 3 * 3_600_000;
        assert_eq!(
            fast.mid_price("BTC-USD", ANCHOR_MS + offset),
            market().mid_price("BTC-USD", ANCHOR_MS + 60 * offset)
        );
        assert_eq!(
            fast.mid_price("BTC-USD", ANCHOR_MS),
            market().mid_price("BTC-USD", ANCHOR_MS)
        );
        // Faster markets move more per host minute.
        let slow_moves =
            total_move(&market().candles("BTC-USD", Interval::OneMinute, 120, MARCH_FIRST_MS));
        let fast_moves =
            total_move(&fast.candles("BTC-USD", Interval::OneMinute, 120, MARCH_FIRST_MS));
        assert!(fast_moves > 3.0 * slow_moves);
    }

    fn total_move(candles: &[Candle]) -> f64 {
        candles.iter().map(|c| (c.close / c.open).ln().abs()).sum()
    }

    #[test]
    fn symbols_must_be_base_dash_quote() {
        for good in ["BTC-USD", "ETH-USDT", "1INCH-USD", "A-B"] {
            assert!(validate_symbol(good).is_ok(), "{good}");
        }
        for bad in [
            "btc-usd",
            "BTCUSD",
            "BTC-",
            "-USD",
            "BTC-USD-X",
            "BTC/USD",
            "",
            "BTC-US D",
            "ÄBC-USD",
        ] {
            assert!(validate_symbol(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn intervals() {
        assert_eq!(Interval::parse("1m"), Some(Interval::OneMinute));
        assert_eq!(Interval::parse("5m").map(Interval::millis), Some(300_000));
        assert_eq!(Interval::parse("1h").map(Interval::minutes), Some(60));
        assert_eq!(Interval::parse("15m"), None);
        assert_eq!(Interval::parse("1H"), None);
    }
}
