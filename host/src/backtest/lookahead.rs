//! The lookahead check: a backtest run again on data cut short, comparing the signals.
//!
//! A strategy's signal at a time may depend only on the candles closed by then. The check
//! replays the whole range, then replays it again with every candle after a cut removed, at a
//! few cuts spread over the range, and reports each signal up to a cut that differs between the
//! two. The replay hands a strategy closed candles only, so a difference means the signal
//! depended on something else: later data reaching the strategy some other way, or a strategy
//! that does not give the same answer to the same inputs.

use serde::{Deserialize, Serialize};

use super::replay::SignalSeen;
use crate::plugins::bindings::types::Candle;

/// Cuts made when none are asked for.
pub const DEFAULT_CUTS: usize = 4;
/// At most this many changed signals are kept per cut.
const MAX_CHANGES: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Lookahead {
    /// No signal changed at any cut.
    pub clean: bool,
    pub cuts: Vec<LookaheadCut>,
}

/// One rerun on data that ends at `cut_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LookaheadCut {
    /// The last step of the rerun: no candle closing after it was given.
    pub cut_ms: i64,
    /// Signals of the whole run up to the cut.
    pub compared: u64,
    /// Signals up to the cut that the rerun gave differently, or not at all, or only it gave.
    pub changed: u64,
    pub changes: Vec<LookaheadChange>,
}

/// A signal that differs: as the whole run gave it, and as the rerun did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct LookaheadChange {
    pub at_ms: i64,
    pub symbol: String,
    pub with_later_data: Option<String>,
    pub without_later_data: Option<String>,
}

/// The steps the cuts are made after: `cuts` of them spread evenly over the range, on the
/// interval's grid.
pub fn cut_points(from_ms: i64, to_ms: i64, interval_ms: i64, cuts: usize) -> Vec<i64> {
    let steps = (to_ms - from_ms) / interval_ms;
    let mut points: Vec<i64> = (1..=cuts as i64)
        .map(|k| from_ms + steps * k / (cuts as i64 + 1) * interval_ms)
        .filter(|cut| *cut >= from_ms && *cut < to_ms)
        .collect();
    points.dedup();
    points
}

/// The candles that have closed by `cut_ms`.
pub fn truncated(candles: &[Candle], cut_ms: i64, interval_ms: i64) -> &[Candle] {
    let end = candles.partition_point(|c| c.timestamp_ms + interval_ms <= cut_ms);
    &candles[..end]
}

/// Compares the signals of the whole run (`full`) with those of `run(cut)`, the replay on data
/// cut at each of `cuts`.
pub fn check(
    full: &[SignalSeen],
    cuts: &[i64],
    mut run: impl FnMut(i64) -> Result<Vec<SignalSeen>, String>,
) -> Result<Lookahead, String> {
    let mut report = Lookahead {
        clean: true,
        cuts: Vec::new(),
    };
    for &cut_ms in cuts {
        let before: Vec<&SignalSeen> = full.iter().filter(|s| s.at_ms <= cut_ms).collect();
        let rerun = run(cut_ms)?;
        let mut cut = LookaheadCut {
            cut_ms,
            compared: before.len() as u64,
            changed: 0,
            changes: Vec::new(),
        };
        for i in 0..before.len().max(rerun.len()) {
            let (with, without) = (before.get(i).copied(), rerun.get(i));
            if with == without {
                continue;
            }
            cut.changed += 1;
            if cut.changes.len() < MAX_CHANGES {
                let first = with.or(without).expect("one of the two is there");
                cut.changes.push(LookaheadChange {
                    at_ms: first.at_ms,
                    symbol: first.symbol.clone(),
                    with_later_data: with.map(SignalSeen::describe),
                    without_later_data: without.map(SignalSeen::describe),
                });
            }
        }
        report.clean &= cut.changed == 0;
        report.cuts.push(cut);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;
    use crate::backtest::costs::Costs;
    use crate::backtest::replay::{Plugins, Replay, SymbolCandles};
    use crate::engine::Trader;
    use crate::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
    use crate::plugins::bindings::strategy::{Evaluation, ScanContext};
    use crate::plugins::bindings::strategy_replay::exports::tradehost::plugin::replay::{
        SeriesKey, StepContext,
    };
    use crate::plugins::bindings::types::{Signal, SignalAction, Verdict};

    const MINUTE: i64 = 60_000;
    const START: i64 = 1_709_251_200_000;

    /// Long while the next close is higher, out otherwise: with `peek` it reads the candle after
    /// the last closed one from the data it was given; without, it compares the last two closes.
    struct Trend {
        data: Vec<Candle>,
        peek: bool,
    }

    impl Plugins for Trend {
        fn begin(&mut self, _: &[SeriesKey], _: u32) -> Result<bool, String> {
            Ok(false)
        }
        fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, String> {
            let seen = &ctx.market[0].candles;
            let rising = if self.peek {
                let next = self.data.get(seen.len() + self.data_offset(seen));
                next.is_some_and(|next| next.close > seen[seen.len() - 1].close)
            } else {
                seen.len() >= 2 && seen[seen.len() - 1].close > seen[seen.len() - 2].close
            };
            let action = if rising {
                SignalAction::OpenLong
            } else {
                SignalAction::Close
            };
            Ok(Evaluation {
                signals: vec![Signal {
                    symbol: "BTC-USD".into(),
                    action,
                    size_usd: 1000.0,
                    stop_loss: None,
                    take_profit: Vec::new(),
                    confidence: 1.0,
                    reason: String::new(),
                }],
                state: Vec::new(),
            })
        }
        fn step(&mut self, _: &StepContext) -> Result<Vec<Signal>, String> {
            Err("takes whole windows".into())
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

    impl Trend {
        /// Where the window shown starts in the data.
        fn data_offset(&self, seen: &[Candle]) -> usize {
            self.data
                .iter()
                .position(|c| c.timestamp_ms == seen[0].timestamp_ms)
                .unwrap_or(0)
        }
    }

    /// Rising closes: the honest strategy stays long; the peeking one sees a higher next close
    /// everywhere but at the end of the data.
    fn closes() -> Vec<Candle> {
        (0..120)
            .map(|i| {
                let close = 100.0 + i as f64;
                Candle {
                    timestamp_ms: START + i * MINUTE,
                    open: close,
                    high: close,
                    low: close,
                    close,
                    volume: 1.0,
                }
            })
            .collect()
    }

    fn signals(data: &[Candle], peek: bool, to_ms: i64) -> Vec<SignalSeen> {
        let cancel = AtomicBool::new(false);
        let replay = Replay::new(
            Trader::paper_for_tests(10_000),
            Trend {
                data: data.to_vec(),
                peek,
            },
            Costs::default(),
            ("1m".into(), MINUTE),
            vec![SymbolCandles::new("BTC-USD".into(), data)],
            "paper".into(),
            &cancel,
        )
        .with_signal_log();
        let (outcome, _) = replay.run(START + 5 * MINUTE, to_ms, &mut |_| {}).unwrap();
        outcome.signal_log
    }

    fn lookahead(peek: bool) -> Lookahead {
        let data = closes();
        let to_ms = START + 120 * MINUTE;
        let full = signals(&data, peek, to_ms);
        assert!(!full.is_empty());
        let cuts = cut_points(START + 5 * MINUTE, to_ms, MINUTE, DEFAULT_CUTS);
        assert_eq!(cuts.len(), DEFAULT_CUTS);
        check(&full, &cuts, |cut| {
            Ok(signals(truncated(&data, cut, MINUTE), peek, cut))
        })
        .unwrap()
    }

    #[test]
    fn a_strategy_that_reads_only_closed_candles_passes() {
        let report = lookahead(false);
        assert!(report.clean, "{report:?}");
        assert!(report.cuts.iter().all(|cut| cut.compared > 0));
    }

    #[test]
    fn a_strategy_that_peeks_at_the_next_candle_is_flagged_at_every_cut() {
        let report = lookahead(true);
        assert!(!report.clean);
        for cut in &report.cuts {
            assert!(cut.changed > 0, "{cut:?}");
            // The rerun's last step has no next candle to read: that is where they part.
            let change = &cut.changes[0];
            assert_eq!(change.at_ms, cut.cut_ms, "{cut:?}");
            assert_ne!(change.with_later_data, change.without_later_data);
        }
    }

    #[test]
    fn cuts_fall_on_steps_inside_the_range() {
        assert_eq!(
            cut_points(0, 100 * MINUTE, MINUTE, 4),
            [20, 40, 60, 80].map(|m| m * MINUTE)
        );
        assert!(cut_points(0, MINUTE, MINUTE, 4).iter().all(|c| *c < MINUTE));
        let data = closes();
        assert_eq!(truncated(&data, START + 10 * MINUTE, MINUTE).len(), 10);
    }
}
