//! EMA crossover strategy.
//!
//! For each symbol's series at the configured interval: when the fast EMA of the closes
//! crosses above the slow EMA, open a long (or, holding a short, close it first and open the
//! long on a later scan while the fast EMA stays above); when it crosses below, the mirror
//! image, with shorts only when `allow_short` is set. Without a crossover nothing changes.
//!
//! At most one signal per symbol per scan, and no hold signals: a symbol without a signal is
//! held. The state blob remembers the last crossover acted on per symbol, so a retried scan,
//! or a scan that sees the same candles again, does not signal twice.

#[cfg(target_arch = "wasm32")]
mod component;

use tradehost_sdk::MAX_STATE_BYTES;
use tradehost_sdk::config::ConfigReader;
use tradehost_sdk::indicators::Ema;
use tradehost_sdk::state::StateMap;
use tradehost_sdk::strategy::{Evaluation, ScanContext};
use tradehost_sdk::types::{
    Account, Candle, PluginError, PluginInfo, Position, Series, Side, Signal, SignalAction,
};

pub const NAME: &str = "ema-cross";

/// A crossover on one of this many last candles still counts, so a scan that runs a little
/// late (the next candle already closed) does not miss it.
pub const CROSS_LOOKBACK_CANDLES: usize = 3;

pub fn describe() -> PluginInfo {
    PluginInfo {
        name: NAME.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        display_name: "EMA crossover".into(),
        description: "Trades crossovers of a fast and a slow exponential moving average.".into(),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub interval: String,
    pub fast_period: usize,
    pub slow_period: usize,
    /// Entry size in percent of equity.
    pub size_pct: f64,
    /// Stop distance from the entry in percent; 0 for none.
    pub stop_loss_pct: f64,
    /// Take-profit distance from the entry in percent; 0 for none.
    pub take_profit_pct: f64,
    pub allow_short: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interval: "1m".into(),
            fast_period: 9,
            slow_period: 21,
            size_pct: 2.0,
            stop_loss_pct: 1.5,
            take_profit_pct: 3.0,
            allow_short: true,
        }
    }
}

impl Config {
    pub fn read<F: Fn(&str) -> Option<String>>(
        config: &ConfigReader<F>,
    ) -> Result<Self, PluginError> {
        let defaults = Self::default();
        let invalid =
            |err: tradehost_sdk::config::ConfigError| PluginError::InvalidInput(err.to_string());
        let read = Self {
            interval: config.string("interval", &defaults.interval),
            fast_period: config
                .integer_in("fast_period", defaults.fast_period as i64, 2, 200)
                .map_err(invalid)? as usize,
            slow_period: config
                .integer_in("slow_period", defaults.slow_period as i64, 3, 500)
                .map_err(invalid)? as usize,
            size_pct: config
                .number_in("size_pct", defaults.size_pct, 0.01, 100.0)
                .map_err(invalid)?,
            stop_loss_pct: config
                .number_in("stop_loss_pct", defaults.stop_loss_pct, 0.0, 50.0)
                .map_err(invalid)?,
            take_profit_pct: config
                .number_in("take_profit_pct", defaults.take_profit_pct, 0.0, 500.0)
                .map_err(invalid)?,
            allow_short: config
                .boolean("allow_short", defaults.allow_short)
                .map_err(invalid)?,
        };
        read.validate()?;
        Ok(read)
    }

    pub fn validate(&self) -> Result<(), PluginError> {
        if self.fast_period < 1 || self.fast_period >= self.slow_period {
            return Err(PluginError::InvalidInput(format!(
                "fast_period ({}) must be at least 1 and shorter than slow_period ({})",
                self.fast_period, self.slow_period
            )));
        }
        let percentages = [
            ("size_pct", self.size_pct),
            ("stop_loss_pct", self.stop_loss_pct),
            ("take_profit_pct", self.take_profit_pct),
        ];
        for (name, value) in percentages {
            if !value.is_finite() || value < 0.0 {
                return Err(PluginError::InvalidInput(format!(
                    "{name} must be a non-negative number, got {value}"
                )));
            }
        }
        Ok(())
    }
}

/// One scan: signals for the symbols whose EMAs crossed, and the updated memo of crossovers.
pub fn evaluate(ctx: &ScanContext, config: &Config) -> Result<Evaluation, PluginError> {
    config.validate()?;
    LAST_STATE.with_borrow_mut(|last| {
        if last.blob != ctx.state {
            last.memos = StateMap::decode(&ctx.state);
            last.blob.clone_from(&ctx.state);
        }
        let evaluation = evaluate_with(ctx, config, &last.memos);
        if evaluation.state != last.blob {
            // A changed state is decoded when it comes back (a crossover's scan, rarely).
            *last = LastState::default();
        }
        Ok(evaluation)
    })
}

/// The state blob an instance was last given, decoded: a backtest's instance is handed back
/// the state it returned on every step, and decoding it again cost a few per cent of a step.
#[derive(Default)]
struct LastState {
    blob: Vec<u8>,
    memos: StateMap,
}

thread_local! {
    static LAST_STATE: std::cell::RefCell<LastState> = std::cell::RefCell::default();
}

fn evaluate_with(ctx: &ScanContext, config: &Config, previous: &StateMap) -> Evaluation {
    // Most scans change no memo: the state is then the previous one, not written again.
    let mut memos: Vec<(&str, Memo)> = Vec::new();
    let mut unchanged = true;
    let mut signals = Vec::new();
    let ours = |s: &&Series| s.interval == config.interval;
    for (i, series) in ctx.market.iter().enumerate().filter(|(_, s)| ours(s)) {
        // The first series of a symbol decides; duplicates cannot add a second signal.
        if ctx.market[..i]
            .iter()
            .filter(ours)
            .any(|earlier| earlier.symbol == series.symbol)
        {
            continue;
        }
        let memo = previous.get(&series.symbol).and_then(Memo::parse);
        let decision = decide(series, &ctx.positions, &ctx.account, config, memo);
        signals.extend(decision.signal);
        unchanged &= decision.memo == memo;
        memos.extend(decision.memo.map(|memo| (series.symbol.as_str(), memo)));
    }
    let state = if unchanged && memos.len() == previous.len() {
        previous.encode(MAX_STATE_BYTES)
    } else {
        let mut next = StateMap::new();
        for (symbol, memo) in memos {
            next.insert(symbol, &memo.encode());
        }
        next.encode(MAX_STATE_BYTES)
    };
    Evaluation { signals, state }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Fast EMA crossed above the slow one.
    Up,
    /// Fast EMA crossed below the slow one.
    Down,
}

impl Direction {
    fn side(self) -> Side {
        match self {
            Self::Up => Side::Long,
            Self::Down => Side::Short,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Self::Up => "above",
            Self::Down => "below",
        }
    }
}

/// What the state remembers per symbol: the last crossover acted on, and whether its entry is
/// still to come (the opposite position had to be closed first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Memo {
    cross_ms: i64,
    direction: Direction,
    entry_pending: bool,
}

impl Memo {
    fn parse(text: &str) -> Option<Self> {
        let mut fields = text.split(' ');
        let cross_ms = fields.next()?.parse().ok()?;
        let direction = match fields.next()? {
            "up" => Direction::Up,
            "down" => Direction::Down,
            _ => return None,
        };
        let entry_pending = match fields.next()? {
            "pending" => true,
            "done" => false,
            _ => return None,
        };
        Some(Self {
            cross_ms,
            direction,
            entry_pending,
        })
    }

    fn encode(&self) -> String {
        let direction = match self.direction {
            Direction::Up => "up",
            Direction::Down => "down",
        };
        let entry = if self.entry_pending {
            "pending"
        } else {
            "done"
        };
        format!("{} {direction} {entry}", self.cross_ms)
    }
}

/// The crossover picture of one series.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    /// The latest crossover within the lookback, by the open time of its candle.
    latest_cross: Option<(i64, Direction)>,
    /// Which side of the slow EMA the fast one is on now (`None` when equal).
    trend: Option<Direction>,
    fast_ema: f64,
    slow_ema: f64,
    price: f64,
}

/// The seeded EMA's first value (the SDK's seed: the mean of the first `period` closes).
fn ema_seed(candles: &[Candle], period: usize) -> Option<f64> {
    Ema::new(candles.iter().map(|candle| candle.close), period)?.next()
}

/// Candles an EMA is moved over in one jump.
const JUMP: usize = 4;

/// An EMA's smoothing `a` and the weights of a jump over [`JUMP`] candles.
///
/// One candle moves the EMA by `a × (close − ema)`; [`JUMP`] candles move it by the sum of
/// `a × (1 − a)^(JUMP − k) × (close_k − ema)` over the jump's closes (`k` = 1 … JUMP), all taken from the EMA
/// before the jump. The update is then one dependent step per jump instead of one per candle
/// (the per-candle chain was most of a scan's time), and a flat market leaves the EMA exactly
/// at its price, as the per-candle update does.
#[derive(Clone, Copy)]
struct Smoothing {
    a: f64,
    jump: [f64; JUMP],
}

impl Smoothing {
    fn new(period: usize) -> Self {
        let a = 2.0 / (period as f64 + 1.0);
        let mut jump = [a; JUMP];
        for k in (0..JUMP - 1).rev() {
            jump[k] = jump[k + 1] * (1.0 - a);
        }
        Smoothing { a, jump }
    }

    fn step(&self, ema: f64, close: f64) -> f64 {
        ema + (close - ema) * self.a
    }

    fn jump(&self, ema: f64, closes: &[Candle]) -> f64 {
        let [m0, m1, m2, m3]: [f64; JUMP] =
            std::array::from_fn(|k| (closes[k].close - ema) * self.jump[k]);
        ema + ((m0 + m1) + (m2 + m3))
    }

    /// The EMA after every candle of `candles`.
    fn over(&self, mut ema: f64, candles: &[Candle]) -> f64 {
        let mut jumps = candles.chunks_exact(JUMP);
        for closes in &mut jumps {
            ema = self.jump(ema, closes);
        }
        for candle in jumps.remainder() {
            ema = self.step(ema, candle.close);
        }
        ema
    }
}

/// Both EMAs (seeded with the mean of their first period, as the SDK's `Ema`), keeping only the
/// last gaps the lookback reads.
fn read_crossovers(candles: &[Candle], config: &Config) -> Option<Reading> {
    let (fast_period, slow_period) = (config.fast_period, config.slow_period);
    let n = candles.len();
    if fast_period == 0 || slow_period == 0 || n < fast_period.max(slow_period) {
        return None;
    }
    // Both series end at the last candle: the longer period's starts later, at `offset`.
    let offset = fast_period.max(slow_period) - 1;
    let len = n - offset;
    if len < 2 {
        return None;
    }
    let (fast, slow) = (Smoothing::new(fast_period), Smoothing::new(slow_period));
    let mut fast_ema = fast.over(
        ema_seed(candles, fast_period)?,
        &candles[fast_period..=offset],
    );
    let mut slow_ema = slow.over(
        ema_seed(candles, slow_period)?,
        &candles[slow_period..=offset],
    );
    // gaps[k] belongs to candle offset + first + k, for the last LOOKBACK + 1 positions; both
    // EMAs jump together up to the first of them, their chains side by side.
    let first = len.saturating_sub(CROSS_LOOKBACK_CANDLES + 1);
    let mut jumps = candles[offset + 1..=offset + first].chunks_exact(JUMP);
    for closes in &mut jumps {
        fast_ema = fast.jump(fast_ema, closes);
        slow_ema = slow.jump(slow_ema, closes);
    }
    for candle in jumps.remainder() {
        fast_ema = fast.step(fast_ema, candle.close);
        slow_ema = slow.step(slow_ema, candle.close);
    }
    let mut gaps = [0.0; CROSS_LOOKBACK_CANDLES + 1];
    gaps[0] = fast_ema - slow_ema;
    for (k, candle) in candles[offset + first + 1..].iter().enumerate() {
        fast_ema = fast.step(fast_ema, candle.close);
        slow_ema = slow.step(slow_ema, candle.close);
        gaps[k + 1] = fast_ema - slow_ema;
    }
    let kept = len - first;
    let gap = |j: usize| gaps[j - first];
    let earliest = len.saturating_sub(CROSS_LOOKBACK_CANDLES).max(1);
    let latest_cross = (earliest..len).rev().find_map(|j| {
        let direction = if gap(j - 1) <= 0.0 && gap(j) > 0.0 {
            Direction::Up
        } else if gap(j - 1) >= 0.0 && gap(j) < 0.0 {
            Direction::Down
        } else {
            return None;
        };
        Some((candles[offset + j].timestamp_ms, direction))
    });
    let last_gap = gaps[kept - 1];
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
        fast_ema,
        slow_ema,
        price: candles[n - 1].close,
    })
}

struct Decision {
    signal: Option<Signal>,
    memo: Option<Memo>,
}

fn decide(
    series: &Series,
    positions: &[Position],
    account: &Account,
    config: &Config,
    memo: Option<Memo>,
) -> Decision {
    let Some(reading) = read_crossovers(&series.candles, config) else {
        // Too little data: keep what we knew.
        return Decision { signal: None, memo };
    };
    let held = positions
        .iter()
        .find(|p| p.symbol == series.symbol)
        .map(|p| p.side);
    let symbol = series.symbol.as_str();

    if let Some((cross_ms, direction)) = reading.latest_cross
        && memo.is_none_or(|m| cross_ms > m.cross_ms)
    {
        let opposite_held = held.is_some_and(|side| side != direction.side());
        let signal = match held {
            Some(side) if side == direction.side() => None,
            Some(_) => Some(close_signal(symbol, direction, &reading, config)),
            None if direction == Direction::Down && !config.allow_short => None,
            None => entry_signal(symbol, direction, &reading, account, config),
        };
        let entry_pending = opposite_held && (direction == Direction::Up || config.allow_short);
        return Decision {
            signal,
            memo: Some(Memo {
                cross_ms,
                direction,
                entry_pending,
            }),
        };
    }

    match memo {
        Some(pending) if pending.entry_pending => {
            let done = Memo {
                entry_pending: false,
                ..pending
            };
            if reading.trend != Some(pending.direction) {
                // The move that crossed has faded; no late entry.
                return Decision {
                    signal: None,
                    memo: Some(done),
                };
            }
            match held {
                // Still waiting for the opposite position to be closed.
                Some(side) if side != pending.direction.side() => Decision {
                    signal: None,
                    memo: Some(pending),
                },
                Some(_) => Decision {
                    signal: None,
                    memo: Some(done),
                },
                None => Decision {
                    signal: entry_signal(symbol, pending.direction, &reading, account, config),
                    memo: Some(done),
                },
            }
        }
        other => Decision {
            signal: None,
            memo: other,
        },
    }
}

fn entry_signal(
    symbol: &str,
    direction: Direction,
    reading: &Reading,
    account: &Account,
    config: &Config,
) -> Option<Signal> {
    let price = reading.price;
    let size_usd = account.equity * config.size_pct / 100.0;
    if !(price.is_finite() && price > 0.0 && size_usd.is_finite() && size_usd > 0.0) {
        return None;
    }
    // Long positions lose below the entry, shorts above it.
    let against = match direction {
        Direction::Up => -1.0,
        Direction::Down => 1.0,
    };
    let stop_loss = (config.stop_loss_pct > 0.0)
        .then(|| price * (1.0 + against * config.stop_loss_pct / 100.0))
        .filter(|stop| *stop > 0.0);
    let take_profit = (config.take_profit_pct > 0.0)
        .then(|| price * (1.0 - against * config.take_profit_pct / 100.0))
        .filter(|target| *target > 0.0)
        .into_iter()
        .collect();
    let (action, side) = match direction {
        Direction::Up => (SignalAction::OpenLong, "long"),
        Direction::Down => (SignalAction::OpenShort, "short"),
    };
    Some(Signal {
        symbol: symbol.into(),
        action,
        size_usd,
        stop_loss,
        take_profit,
        // A crossover is a single yes/no rule; there is no graded evidence to report.
        confidence: 1.0,
        reason: format!(
            "EMA{} crossed {} EMA{} ({} vs {}); open {side} at {}",
            config.fast_period,
            direction.word(),
            config.slow_period,
            format_price(reading.fast_ema),
            format_price(reading.slow_ema),
            format_price(price),
        ),
    })
}

fn close_signal(symbol: &str, direction: Direction, reading: &Reading, config: &Config) -> Signal {
    let closed = match direction {
        Direction::Up => "short",
        Direction::Down => "long",
    };
    Signal {
        symbol: symbol.into(),
        action: SignalAction::Close,
        size_usd: 0.0,
        stop_loss: None,
        take_profit: Vec::new(),
        confidence: 1.0,
        reason: format!(
            "EMA{} crossed {} EMA{} ({} vs {}); close the {closed}",
            config.fast_period,
            direction.word(),
            config.slow_period,
            format_price(reading.fast_ema),
            format_price(reading.slow_ema),
        ),
    }
}

/// Enough decimals to be meaningful for prices from fractions of a cent to tens of thousands.
fn format_price(price: f64) -> String {
    let decimals = if price.abs() >= 100.0 {
        2
    } else if price.abs() >= 1.0 {
        4
    } else {
        6
    };
    format!("{price:.decimals$}")
}

#[cfg(test)]
mod tests;
