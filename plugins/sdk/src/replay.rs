//! The `replay` export every strategy built with the SDK has, derived from its `evaluate`.
//!
//! A backtest starts a run with the series it replays, then calls `step` once per scan with the
//! candles that closed since the previous one. The guest keeps each series' latest `window`
//! candles and the state blob the strategy returned last, and answers a step by calling the
//! strategy's own `evaluate` with the context a live scan would have been given: the same
//! windows, positions, account and state. Only the new candles cross the boundary, once.

use std::cell::RefCell;

use crate::strategy::exports::tradehost::plugin::replay::{
    ClosedCandle, Guest as ReplayGuest, SeriesKey, StepContext,
};
use crate::strategy::{Guest as StrategyGuest, ScanContext};
use crate::types::{Candle, PluginError, Series, Signal};

/// One run's windows and state.
#[derive(Debug, Default)]
pub struct Run {
    series: Vec<SeriesKey>,
    /// Each series' candles, the latest `window` of them at the end; up to twice as many are
    /// kept so the old ones are dropped in batches, not one by one.
    candles: Vec<Vec<Candle>>,
    window: usize,
    state: Vec<u8>,
}

impl Run {
    pub fn new(series: Vec<SeriesKey>, window: u32) -> Self {
        let window = window.max(1) as usize;
        Run {
            candles: series
                .iter()
                .map(|_| Vec::with_capacity(2 * window))
                .collect(),
            series,
            window,
            state: Vec::new(),
        }
    }

    /// Takes the step's closed candles into the windows and gives the scan context they make.
    pub fn context(&mut self, step: StepContext) -> Result<ScanContext, PluginError> {
        for ClosedCandle { series, candle } in step.closed {
            let Some(kept) = self.candles.get_mut(series as usize) else {
                return Err(PluginError::InvalidInput(format!(
                    "a candle for series {series} of {}",
                    self.series.len()
                )));
            };
            if kept.len() == 2 * self.window {
                kept.drain(..self.window);
            }
            kept.push(candle);
        }
        let market = self
            .series
            .iter()
            .zip(&self.candles)
            .map(|(key, kept)| Series {
                symbol: key.symbol.clone(),
                interval: key.interval.clone(),
                candles: kept[kept.len().saturating_sub(self.window)..].to_vec(),
            })
            .collect();
        Ok(ScanContext {
            scan_id: step.scan_id,
            now_ms: step.now_ms,
            market,
            positions: step.positions,
            account: step.account,
            // The strategy hands back the state it leaves; a step that fails ends the run.
            state: std::mem::take(&mut self.state),
        })
    }

    /// Keeps what the strategy returned as state for the next step.
    pub fn keep_state(&mut self, state: Vec<u8>) {
        self.state = state;
    }
}

thread_local! {
    static RUN: RefCell<Run> = RefCell::new(Run::default());
}

/// The run's step for a strategy whose scan is `evaluate`.
pub fn step(
    ctx: StepContext,
    evaluate: impl FnOnce(ScanContext) -> Result<crate::strategy::Evaluation, PluginError>,
) -> Result<Vec<Signal>, PluginError> {
    let scan = RUN.with_borrow_mut(|run| run.context(ctx))?;
    let evaluation = evaluate(scan)?;
    RUN.with_borrow_mut(|run| run.keep_state(evaluation.state));
    Ok(evaluation.signals)
}

impl<T: StrategyGuest> ReplayGuest for T {
    fn start(series: Vec<SeriesKey>, window: u32) {
        RUN.set(Run::new(series, window));
    }

    fn step(ctx: StepContext) -> Result<Vec<Signal>, PluginError> {
        step(ctx, T::evaluate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Account;

    fn candle(at: i64) -> Candle {
        Candle {
            timestamp_ms: at,
            open: 1.0,
            high: 1.0,
            low: 1.0,
            close: at as f64,
            volume: 1.0,
        }
    }

    fn step(closed: Vec<ClosedCandle>) -> StepContext {
        StepContext {
            scan_id: "s".into(),
            now_ms: 0,
            closed,
            positions: Vec::new(),
            account: Account {
                cash: 1.0,
                equity: 1.0,
                buying_power: 1.0,
                currency: "USD".into(),
            },
        }
    }

    #[test]
    fn a_run_keeps_the_latest_window_of_each_series_and_hands_back_the_state() {
        let key = |symbol: &str| SeriesKey {
            symbol: symbol.into(),
            interval: "1m".into(),
        };
        let mut run = Run::new(vec![key("A-USD"), key("B-USD")], 3);
        let closed = (0..5)
            .map(|at| ClosedCandle {
                series: 0,
                candle: candle(at),
            })
            .chain([ClosedCandle {
                series: 1,
                candle: candle(9),
            }])
            .collect();
        let scan = run.context(step(closed)).unwrap();
        let closes = |scan: &ScanContext, i: usize| -> Vec<f64> {
            scan.market[i].candles.iter().map(|c| c.close).collect()
        };
        assert_eq!(closes(&scan, 0), [2.0, 3.0, 4.0]);
        assert_eq!(closes(&scan, 1), [9.0]);
        assert_eq!(scan.market[1].symbol, "B-USD");
        assert!(scan.state.is_empty());
        run.keep_state(b"memo".to_vec());
        let scan = run.context(step(Vec::new())).unwrap();
        assert_eq!(closes(&scan, 0), [2.0, 3.0, 4.0]);
        assert_eq!(scan.state, b"memo");
        for at in 5..17 {
            let closed = ClosedCandle {
                series: 0,
                candle: candle(at),
            };
            let scan = run.context(step(vec![closed])).unwrap();
            let expected: Vec<f64> = (at - 2..=at).map(|c| c as f64).collect();
            assert_eq!(closes(&scan, 0), expected);
        }
        let unknown = ClosedCandle {
            series: 2,
            candle: candle(1),
        };
        assert!(run.context(step(vec![unknown])).is_err());
    }
}
