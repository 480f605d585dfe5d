//! The backtest loop: candles replayed in simulated time through what a bot's scan does, with
//! the engine's own parts (exit rules, the entry checks and sizing, the risk rules' verdicts,
//! the books) and fills at the paper venue's prices.
//!
//! A step is the close of a candle. At each step every position is marked at its symbol's last
//! close, exits are taken, and the strategy is asked with the closed candles only (at most
//! [`CANDLE_HISTORY`] per symbol, as a scan gets them). A live bot scans several times while a
//! candle is the last one; when a step's pass changed the books (a fill), the step is scanned
//! again with the same candles, as the bot's next scan would, until a pass changes nothing.
//! Fills are at the last close moved by the costs: the price a paper bot's market order gets
//! in the minute after that close.
//!
//! Nothing here reads a clock, a random number or the database: the same inputs give the same
//! trades, byte for byte.

use std::sync::atomic::{AtomicBool, Ordering};

use rust_decimal::Decimal;

use super::costs::Costs;
use crate::engine::accounting::{self, CompletedTrade, Fill, OpenRequest, Side, decimal};
use crate::engine::alarms::{daily_loss_beyond, daily_loss_limit};
use crate::engine::entry;
use crate::engine::metrics::EquityPoint;
use crate::engine::scan::{CANDLE_HISTORY, exit_reason, trail_pct};
use crate::engine::wire::{wire_account, wire_positions};
use crate::engine::{DAY_MS, Trader};
use crate::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use crate::plugins::bindings::strategy::{Evaluation, ScanContext};
use crate::plugins::bindings::strategy_replay::exports::tradehost::plugin::replay::{
    ClosedCandle, SeriesKey, StepContext,
};
use crate::plugins::bindings::types::{Candle, Series, Signal, SignalAction, Verdict};

/// Scans of one step at most: a close and the entry that follows it take two; a third finds
/// nothing left to do unless the strategy answers the same candles differently each time.
pub const MAX_PASSES: usize = 3;

/// What the loop asks of plugins: the strategy's evaluation and each risk rule's verdict.
pub trait Plugins {
    /// Begins a run over `series`, each shown with its latest `window` candles. `true`: the
    /// strategy keeps the windows and its state itself and takes [`Plugins::step`]s; `false`:
    /// it is asked with [`Plugins::evaluate`] and whole windows.
    fn begin(&mut self, series: &[SeriesKey], window: u32) -> Result<bool, String>;
    fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, String>;
    /// The signals of one step: the candles that closed since the previous step, the books.
    fn step(&mut self, ctx: &StepContext) -> Result<Vec<Signal>, String>;
    /// The verdicts of the active risk rules in order, each with its rule's name; the loop stops
    /// asking when `stop` says the entry is decided.
    fn rule_names(&self) -> Vec<String>;
    fn check(
        &mut self,
        rule: &str,
        order: &ProposedOrder,
        ctx: &RiskContext,
    ) -> Result<Verdict, String>;
}

/// One symbol's candles, oldest first, and how many of them have closed.
pub struct SymbolCandles<'c> {
    pub symbol: String,
    pub candles: &'c [Candle],
    closed: usize,
    /// Candles before this one have been handed to a strategy that takes steps.
    sent: usize,
    /// The last close as the books' decimal: converted once per candle, and only when a
    /// position is marked with it (`None` until then).
    mark: Option<Option<Decimal>>,
}

impl<'c> SymbolCandles<'c> {
    pub fn new(symbol: String, candles: &'c [Candle]) -> Self {
        SymbolCandles {
            symbol,
            candles,
            closed: 0,
            sent: 0,
            mark: None,
        }
    }

    /// The closed candles a scan is shown.
    fn window(&self) -> &[Candle] {
        let start = self.closed.saturating_sub(CANDLE_HISTORY as usize);
        &self.candles[start..self.closed]
    }

    fn close_through(&mut self, closed: usize) {
        self.closed = closed;
        self.mark = None;
    }

    fn mark(&mut self) -> Option<Decimal> {
        if self.mark.is_none() {
            self.mark = Some(self.last_close().and_then(decimal));
        }
        self.mark.flatten()
    }

    fn last_close(&self) -> Option<f64> {
        self.closed
            .checked_sub(1)
            .map(|i| self.candles[i].close)
            .filter(|c| c.is_finite() && *c > 0.0)
    }
}

/// A refused entry or an ignored signal, for the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct Skipped {
    pub at_ms: i64,
    pub symbol: String,
    pub reason: String,
}

/// A signal the strategy gave, as the lookahead check compares them.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalSeen {
    pub at_ms: i64,
    pub symbol: String,
    pub action: SignalAction,
    pub size_usd: f64,
    pub stop_loss: Option<f64>,
    pub take_profit: Vec<f64>,
}

impl SignalSeen {
    pub fn describe(&self) -> String {
        let mut text = format!("{:?} {}", self.action, self.symbol);
        if matches!(
            self.action,
            SignalAction::OpenLong | SignalAction::OpenShort
        ) {
            text.push_str(&format!(" for {}", self.size_usd));
        }
        if let Some(stop) = self.stop_loss {
            text.push_str(&format!(", stop {stop}"));
        }
        if !self.take_profit.is_empty() {
            text.push_str(&format!(", targets {:?}", self.take_profit));
        }
        text
    }
}

/// What a replay produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub trades: Vec<CompletedTrade>,
    /// Equity after each step.
    pub equity: Vec<EquityPoint>,
    /// Candles that closed inside the range (warm-up candles not counted).
    pub candles: u64,
    pub steps: u64,
    pub signals: u64,
    /// Every entry and exit signal in order, when asked for (the lookahead check).
    pub signal_log: Vec<SignalSeen>,
    pub skipped: Vec<Skipped>,
    /// Skipped entries beyond the ones kept.
    pub skipped_more: u64,
    /// Days the daily loss limit stopped new entries.
    pub loss_limit_days: u64,
    pub cancelled: bool,
    /// Threads the strategy's symbols were evaluated on (set by the run's plugins).
    pub threads: usize,
}

/// At most this many skipped entries are kept with their reasons.
const MAX_SKIPPED: usize = 200;

pub struct Replay<'a, P: Plugins> {
    pub trader: Trader,
    pub plugins: P,
    pub costs: Costs,
    pub interval: String,
    pub interval_ms: i64,
    pub symbols: Vec<SymbolCandles<'a>>,
    /// The strategy the bot runs (its config already set on the plugin).
    pub strategy: String,
    /// The series' source, named as the broker on positions.
    pub source: String,
    pub cancel: &'a AtomicBool,
    outcome: Outcome,
    next_id: u64,
    /// The UTC day the loss limit stopped entries on.
    paused_day: Option<i64>,
    /// The strategy takes steps (see [`Plugins::begin`]).
    steps: bool,
    /// Today's loss limit and the day's starting equity it was worked out from.
    loss_limit: Option<(Decimal, Decimal)>,
    /// Signals are logged for the lookahead check.
    log_signals: bool,
}

impl<'a, P: Plugins> Replay<'a, P> {
    pub fn new(
        trader: Trader,
        plugins: P,
        costs: Costs,
        (interval, interval_ms): (String, i64),
        symbols: Vec<SymbolCandles<'a>>,
        source: String,
        cancel: &'a AtomicBool,
    ) -> Self {
        Replay {
            strategy: trader.bot.strategy.clone(),
            trader,
            plugins,
            costs,
            interval,
            interval_ms,
            symbols,
            source,
            cancel,
            outcome: Outcome::default(),
            next_id: 0,
            paused_day: None,
            steps: false,
            loss_limit: None,
            log_signals: false,
        }
    }

    /// Keeps every signal in [`Outcome::signal_log`] (for the lookahead check).
    pub fn with_signal_log(mut self) -> Self {
        self.log_signals = true;
        self
    }

    /// Replays the candles closing from `from_ms` through `to_ms`; `progress` is told the share
    /// done now and then. Candles closing before `from_ms` are history the strategy sees, not
    /// steps.
    pub fn run(
        mut self,
        from_ms: i64,
        to_ms: i64,
        progress: &mut dyn FnMut(f64),
    ) -> Result<(Outcome, Trader), String> {
        let step = self.interval_ms;
        // Candles that closed before the first step are history.
        for series in &mut self.symbols {
            let history = series
                .candles
                .partition_point(|c| c.timestamp_ms + step < from_ms);
            series.close_through(history);
        }
        let keys: Vec<SeriesKey> = self
            .symbols
            .iter()
            .map(|series| SeriesKey {
                symbol: series.symbol.clone(),
                interval: self.interval.clone(),
            })
            .collect();
        self.steps = self.plugins.begin(&keys, CANDLE_HISTORY)?;
        let first = from_ms.div_euclid(step) * step + if from_ms % step == 0 { 0 } else { step };
        let total = ((to_ms - first) / step + 1).max(1);
        let mut at = first;
        let mut reported = 0;
        while at <= to_ms {
            if self.cancel.load(Ordering::Relaxed) {
                self.outcome.cancelled = true;
                break;
            }
            let mut advanced = 0;
            for series in &mut self.symbols {
                let mut closed = series.closed;
                while closed < series.candles.len()
                    && series.candles[closed].timestamp_ms + step <= at
                {
                    closed += 1;
                }
                if closed > series.closed {
                    advanced += (closed - series.closed) as u64;
                    series.close_through(closed);
                }
            }
            if advanced > 0 {
                self.outcome.candles += advanced;
                self.step(at)?;
            }
            let done = (at - first) / step + 1;
            if done * 100 / total > reported {
                reported = done * 100 / total;
                progress(done as f64 / total as f64);
            }
            at += step;
        }
        Ok((self.outcome, self.trader))
    }

    /// One candle close: marks, exits and the strategy, scanned again while a pass changed the
    /// books; then the day's figures and the loss limit.
    fn step(&mut self, now: i64) -> Result<(), String> {
        self.outcome.steps += 1;
        for pass in 0..MAX_PASSES {
            let trades_before = self.outcome.trades.len();
            let opens_before = self.trader.stats.opens_today;
            self.mark();
            self.exits(now);
            if self.paused_day != Some(now.div_euclid(DAY_MS)) {
                self.strategy(now, pass)?;
            }
            let changed = self.outcome.trades.len() != trades_before
                || self.trader.stats.opens_today != opens_before;
            if !changed {
                break;
            }
        }
        let equity = self.trader.equity();
        self.trader.stats.observe(now, equity);
        self.outcome.equity.push(EquityPoint {
            at_ms: now,
            equity: accounting::float(equity),
        });
        let today = now.div_euclid(DAY_MS);
        if self.paused_day != Some(today) && self.daily_loss_reached() {
            // A user resumes a bot the loss limit paused on the next day at the earliest.
            self.paused_day = Some(today);
            self.outcome.loss_limit_days += 1;
        }
        Ok(())
    }

    fn daily_loss_reached(&mut self) -> bool {
        let day_start = self.trader.stats.day_start_equity;
        let limit = match self.loss_limit {
            Some((from, limit)) if from == day_start => limit,
            _ => {
                let limit = daily_loss_limit(&self.trader);
                self.loss_limit = Some((day_start, limit));
                limit
            }
        };
        daily_loss_beyond(&self.trader, limit).is_some()
    }

    fn price_of(&self, symbol: &str) -> Option<f64> {
        self.symbols
            .iter()
            .find(|s| s.symbol == symbol)
            .and_then(SymbolCandles::last_close)
    }

    fn mark(&mut self) {
        for position in &mut self.trader.positions {
            let price = self
                .symbols
                .iter_mut()
                .find(|s| s.symbol == position.symbol)
                .and_then(SymbolCandles::mark);
            if let Some(price) = price {
                position.mark(price);
            }
        }
    }

    fn exits(&mut self, now: i64) {
        let exits: Vec<(String, &'static str)> = self
            .trader
            .positions
            .iter()
            .filter_map(|p| exit_reason(p, p.current_price).map(|reason| (p.id.clone(), reason)))
            .collect();
        for (position_id, reason) in exits {
            self.close(&position_id, reason, now);
        }
    }

    fn strategy(&mut self, now: i64, pass: usize) -> Result<(), String> {
        let signals = if self.steps {
            let closed = self.newly_closed();
            let ctx = StepContext {
                scan_id: format!("backtest:{now}:{pass}"),
                now_ms: now,
                closed,
                positions: wire_positions(&self.trader.positions),
                account: wire_account(&self.trader),
            };
            self.plugins.step(&ctx)?
        } else {
            let market = self
                .symbols
                .iter()
                .map(|s| Series {
                    symbol: s.symbol.clone(),
                    interval: self.interval.clone(),
                    candles: s.window().to_vec(),
                })
                .collect();
            let ctx = ScanContext {
                scan_id: format!("backtest:{now}:{pass}"),
                now_ms: now,
                market,
                positions: wire_positions(&self.trader.positions),
                account: wire_account(&self.trader),
                state: self.trader.strategy_state(),
            };
            let evaluation = self.plugins.evaluate(&ctx)?;
            self.trader.set_strategy_state(&evaluation.state);
            evaluation.signals
        };
        for signal in signals {
            let Some(side) = entry::wanted(signal.action) else {
                continue;
            };
            self.outcome.signals += 1;
            if self.log_signals {
                self.outcome.signal_log.push(SignalSeen {
                    at_ms: now,
                    symbol: signal.symbol.clone(),
                    action: signal.action,
                    size_usd: signal.size_usd,
                    stop_loss: signal.stop_loss,
                    take_profit: signal.take_profit.clone(),
                });
            }
            let held = self
                .trader
                .positions
                .iter()
                .find(|p| p.symbol == signal.symbol)
                .map(|p| (p.id.clone(), p.side));
            match (side, held) {
                (None, Some((id, _))) => self.close(&id, "signal", now),
                (Some(side), Some((id, held))) if held != side => self.close(&id, "signal", now),
                (Some(side), None) => {
                    let levels = entry::protective_levels(&signal);
                    if let Err(why) =
                        self.open(&signal.symbol, side, signal.size_usd, levels, now)?
                    {
                        self.skip(now, &signal.symbol, why);
                    }
                }
                (None, None) => {}
                (Some(_), Some(_)) => {}
            }
        }
        Ok(())
    }

    /// The candles that closed since the strategy was last asked, the window's worth at most
    /// per series, and marks them handed over.
    fn newly_closed(&mut self) -> Vec<ClosedCandle> {
        let mut closed = Vec::new();
        for (index, series) in self.symbols.iter_mut().enumerate() {
            let from = series
                .sent
                .max(series.closed.saturating_sub(CANDLE_HISTORY as usize));
            closed.extend(
                series.candles[from..series.closed]
                    .iter()
                    .map(|candle| ClosedCandle {
                        series: index as u32,
                        candle: *candle,
                    }),
            );
            series.sent = series.closed;
        }
        closed
    }

    fn skip(&mut self, at_ms: i64, symbol: &str, reason: String) {
        if self.outcome.skipped.len() < MAX_SKIPPED {
            self.outcome.skipped.push(Skipped {
                at_ms,
                symbol: symbol.to_string(),
                reason,
            });
        } else {
            self.outcome.skipped_more += 1;
        }
    }

    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    /// An entry through the checks every entry passes, then filled at the last close moved by
    /// the costs. `Ok(Err(why))`: refused.
    fn open(
        &mut self,
        symbol: &str,
        side: Side,
        size_usd: f64,
        (stop_loss, take_profit): (Option<Decimal>, Option<Decimal>),
        now: i64,
    ) -> Result<Result<(), String>, String> {
        let Some(mid) = self.price_of(symbol) else {
            return Ok(Err(format!("no price for {symbol}")));
        };
        let price = decimal(mid).unwrap_or_default();
        let ask = entry::Ask {
            symbol,
            side,
            price,
            size_usd,
            stop_loss,
        };
        let mut size = match entry::size_before_rules(&self.trader, &ask) {
            Ok(size) => size,
            Err(why) => return Ok(Err(why)),
        };
        let ctx = entry::risk_context(&self.trader);
        for rule in self.plugins.rule_names() {
            if !entry::worth_judging(size) {
                break;
            }
            let verdict = self
                .plugins
                .check(&rule, &entry::proposed(&ask, size), &ctx)?;
            size = match entry::after_verdict(size, &rule, verdict) {
                Ok(size) => size,
                Err(why) => return Ok(Err(why)),
            };
        }
        let quantity = match entry::quantity(symbol, size, price) {
            Ok(quantity) => quantity,
            Err(why) => return Ok(Err(why)),
        };
        let fill_price = self.costs.market_price(mid, side.opening_order());
        let fill = Fill {
            quantity,
            price: fill_price,
            fee: self.costs.fee(quantity, fill_price),
            at_ms: now,
        };
        let position_id = self.id("p");
        let (position, _) = self.trader.account.open(
            OpenRequest {
                position_id,
                ledger_id: String::new(),
                broker: &self.source,
                strategy: &self.strategy,
                symbol,
                side,
                stop_loss,
                take_profit,
                trail_pct: Some(trail_pct(&self.trader.bot.risk_profile)),
            },
            fill,
        );
        self.trader.positions.push(position);
        self.trader.stats.opens_today += 1;
        Ok(Ok(()))
    }

    /// Closes a whole position at the last close moved by the costs, and books its trade as a
    /// closing order's fills are booked.
    fn close(&mut self, position_id: &str, reason: &str, now: i64) {
        let Some(index) = self
            .trader
            .positions
            .iter()
            .position(|p| p.id == position_id)
        else {
            return;
        };
        let mut position = self.trader.positions.remove(index);
        let mid = self
            .price_of(&position.symbol)
            .unwrap_or_else(|| accounting::float(position.current_price));
        let price = self.costs.market_price(mid, position.side.closing_order());
        let fill = Fill {
            quantity: position.quantity,
            price,
            fee: self.costs.fee(position.quantity, price),
            at_ms: now,
        };
        let (entry, _) =
            self.trader
                .account
                .close(&mut position, fill, reason, String::new(), String::new());
        let trade_id = self.id("t");
        if let Some(trade) = accounting::trade_of_closes(trade_id, reason, &position, &[entry]) {
            self.trader.stats.record(&trade);
            self.outcome.trades.push(trade);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::*;
    use crate::plugins::bindings::types::{Signal, SignalAction};

    const MINUTE: i64 = 60_000;
    const START: i64 = 1_709_251_200_000;

    /// A strategy written in Rust for the loop's tests: `decide` sees each context; every rule
    /// allows. With `windows` it takes steps, keeping the windows and state itself as the SDK's
    /// replay does; every market it was shown is kept in `shown`.
    struct Fake<F: FnMut(&ScanContext) -> Vec<Signal>> {
        decide: F,
        windows: Option<(Vec<Series>, usize)>,
        state: Vec<u8>,
        shown: Rc<RefCell<Vec<Vec<Series>>>>,
    }

    impl<F: FnMut(&ScanContext) -> Vec<Signal>> Plugins for Fake<F> {
        fn begin(&mut self, series: &[SeriesKey], window: u32) -> Result<bool, String> {
            let Some(windows) = &mut self.windows else {
                return Ok(false);
            };
            *windows = (
                series
                    .iter()
                    .map(|key| Series {
                        symbol: key.symbol.clone(),
                        interval: key.interval.clone(),
                        candles: Vec::new(),
                    })
                    .collect(),
                window as usize,
            );
            Ok(true)
        }

        fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, String> {
            for series in &ctx.market {
                assert!(
                    series
                        .candles
                        .iter()
                        .all(|c| c.timestamp_ms + MINUTE <= ctx.now_ms),
                    "a candle that had not closed"
                );
            }
            self.shown.borrow_mut().push(ctx.market.clone());
            let signals = (self.decide)(ctx);
            // A state that changes every scan, which the strategy must get back as it left it.
            assert_eq!(ctx.state, self.state);
            self.state = format!("{}", self.shown.borrow().len()).into_bytes();
            Ok(Evaluation {
                signals,
                state: self.state.clone(),
            })
        }

        fn step(&mut self, ctx: &StepContext) -> Result<Vec<Signal>, String> {
            let (market, window) = self.windows.as_mut().expect("begun with windows");
            for closed in &ctx.closed {
                let candles = &mut market[closed.series as usize].candles;
                candles.push(closed.candle);
                if candles.len() > *window {
                    candles.remove(0);
                }
            }
            let scan = ScanContext {
                scan_id: ctx.scan_id.clone(),
                now_ms: ctx.now_ms,
                market: market.clone(),
                positions: ctx.positions.clone(),
                account: ctx.account.clone(),
                state: self.state.clone(),
            };
            self.evaluate(&scan).map(|evaluation| evaluation.signals)
        }

        fn rule_names(&self) -> Vec<String> {
            Vec::new()
        }
        fn check(
            &mut self,
            _: &str,
            _: &ProposedOrder,
            _: &RiskContext,
        ) -> Result<Verdict, String> {
            Ok(Verdict::Allow)
        }
    }

    fn signal(action: SignalAction, stop_loss: Option<f64>) -> Signal {
        Signal {
            symbol: "BTC-USD".into(),
            action,
            size_usd: 1000.0,
            stop_loss,
            take_profit: Vec::new(),
            confidence: 1.0,
            reason: String::new(),
        }
    }

    /// One-minute BTC-USD candles from START with these closes.
    fn candles(closes: &[f64]) -> Vec<Candle> {
        closes
            .iter()
            .enumerate()
            .map(|(i, close)| Candle {
                timestamp_ms: START + i as i64 * MINUTE,
                open: *close,
                high: *close,
                low: *close,
                close: *close,
                volume: 1.0,
            })
            .collect()
    }

    /// The replay over these closes with the strategy asked both ways (whole windows, and
    /// steps): the outcomes and every market the strategy was shown must be the same.
    fn replay<F: FnMut(&ScanContext) -> Vec<Signal> + Clone>(closes: &[f64], decide: F) -> Outcome {
        let (by_windows, shown) = replay_with(closes, decide.clone(), false);
        let (by_steps, shown_by_steps) = replay_with(closes, decide, true);
        assert_eq!(format!("{by_windows:?}"), format!("{by_steps:?}"));
        assert_eq!(shown, shown_by_steps);
        by_windows
    }

    fn replay_with<F: FnMut(&ScanContext) -> Vec<Signal>>(
        closes: &[f64],
        decide: F,
        steps: bool,
    ) -> (Outcome, Vec<Vec<Series>>) {
        let cancel = AtomicBool::new(false);
        let shown = Rc::new(RefCell::new(Vec::new()));
        let fake = Fake {
            decide,
            windows: steps.then(|| (Vec::new(), 0)),
            state: Vec::new(),
            shown: shown.clone(),
        };
        let data = candles(closes);
        let replay = Replay::new(
            Trader::paper_for_tests(10_000),
            fake,
            Costs::default(),
            ("1m".into(), MINUTE),
            vec![SymbolCandles::new("BTC-USD".into(), &data)],
            "paper".into(),
            &cancel,
        );
        // The first candle is history; steps are the closes of the rest.
        let (outcome, _) = replay
            .run(
                START + 2 * MINUTE,
                START + closes.len() as i64 * MINUTE,
                &mut |_| {},
            )
            .unwrap();
        (outcome, shown.take())
    }

    #[test]
    fn entries_and_exits_fill_at_the_close_moved_by_the_costs() {
        let outcome = replay(&[100.0, 100.0, 110.0, 120.0], |ctx| {
            let close = ctx.market[0].candles.last().unwrap().close;
            match (close, ctx.positions.is_empty()) {
                (100.0, true) => vec![signal(SignalAction::OpenLong, None)],
                (120.0, false) => vec![signal(SignalAction::Close, None)],
                _ => Vec::new(),
            }
        });
        assert_eq!(outcome.steps, 3);
        assert_eq!(outcome.candles, 3);
        let [trade] = outcome.trades.as_slice() else {
            panic!("{:?}", outcome.trades)
        };
        let costs = Costs::default();
        assert_eq!(trade.quantity, Decimal::from(10));
        assert_eq!(
            trade.entry_price,
            costs.market_price(100.0, accounting::OrderSide::Buy)
        );
        assert_eq!(
            trade.exit_price,
            costs.market_price(120.0, accounting::OrderSide::Sell)
        );
        let fees = costs.fee(trade.quantity, trade.entry_price)
            + costs.fee(trade.quantity, trade.exit_price);
        assert_eq!(trade.fees, fees);
        assert_eq!(
            trade.net_pnl,
            (trade.exit_price - trade.entry_price) * trade.quantity - fees
        );
        assert_eq!(trade.exit_reason, "signal");
        assert_eq!(
            (trade.opened_at_ms, trade.closed_at_ms),
            (START + 2 * MINUTE, START + 4 * MINUTE)
        );
        assert_eq!(outcome.equity.len(), 3);
    }

    #[test]
    fn a_reversal_closes_then_enters_at_the_same_close_as_the_next_scan_would() {
        let outcome = replay(&[100.0, 100.0, 90.0], |ctx| {
            let close = ctx.market[0].candles.last().unwrap().close;
            let action = if close == 100.0 {
                SignalAction::OpenShort
            } else {
                SignalAction::OpenLong
            };
            vec![signal(action, None)]
        });
        let [short] = outcome.trades.as_slice() else {
            panic!("{:?}", outcome.trades)
        };
        assert_eq!(short.side, Side::Short);
        assert_eq!(short.closed_at_ms, START + 3 * MINUTE);
        // Each step is scanned until a pass changes nothing: the short and its repeat, then the
        // reversal that closed it, the long after it and its repeat.
        assert_eq!(outcome.signals, 5);
        assert_eq!(outcome.steps, 2);
    }

    #[test]
    fn a_stop_is_taken_at_the_first_close_beyond_it() {
        let outcome = replay(&[100.0, 100.0, 97.0, 94.0, 90.0], |ctx| {
            if ctx.positions.is_empty() && ctx.market[0].candles.len() == 2 {
                vec![signal(SignalAction::OpenLong, Some(95.0))]
            } else {
                Vec::new()
            }
        });
        let [trade] = outcome.trades.as_slice() else {
            panic!("{:?}", outcome.trades)
        };
        assert_eq!(trade.exit_reason, "stop_loss");
        assert_eq!(trade.closed_at_ms, START + 4 * MINUTE);
        assert_eq!(
            trade.exit_price,
            Costs::default().market_price(94.0, accounting::OrderSide::Sell)
        );
    }

    #[test]
    fn a_strategy_taking_steps_is_shown_the_windows_a_scan_is_shown() {
        // More candles than a window holds, and trades changing the books on some steps.
        let closes: Vec<f64> = (0..260)
            .map(|i| 100.0 + ((i * 37) % 23) as f64 - (i % 5) as f64)
            .collect();
        let outcome = replay(&closes, |ctx| {
            let action = match (ctx.now_ms / MINUTE) % 7 {
                0 => SignalAction::OpenLong,
                3 => SignalAction::Close,
                5 => SignalAction::OpenShort,
                _ => return Vec::new(),
            };
            vec![signal(action, None)]
        });
        assert!(outcome.trades.len() > 10, "{}", outcome.trades.len());
        assert_eq!(outcome.steps, 259);
    }
}
