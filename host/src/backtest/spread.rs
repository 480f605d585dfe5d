//! A run's symbols spread over the cores. A strategy whose manifest declares its symbols
//! independent (each symbol's signals follow from that symbol's candles and position, the
//! account and the strategy's own state entries, in the order of the symbols) is given each
//! group of the run's symbols in an instance of its own, the first group on the run's thread and
//! the others on helper threads. A step sends every group the candles of its symbols with the
//! whole books, and the signals are the groups' answers in group order: the signals one
//! instance would give. The books, exits and risk rules stay on the run's thread, so a step's
//! fills are decided in the same order as without the spread.

use std::ops::Range;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::thread::Scope;

use crate::plugins::bindings::strategy_replay::exports::tradehost::plugin::replay::{
    ClosedCandle, SeriesKey, StepContext,
};
use crate::plugins::bindings::types::Signal;

/// Fewer symbols than this in a group cost more in handing work between threads than the
/// group's evaluation saves (measured: four symbols on two threads ran at 0.76× one thread,
/// twenty at 1.19–1.27×; docs/benchmarks.md).
pub const MIN_SYMBOLS_PER_GROUP: usize = 5;

/// What a group's instance is asked.
pub enum Work {
    /// Begin a run over these series, each shown with its latest `window` candles.
    Begin(Vec<SeriesKey>, u32),
    Step(StepContext),
}

/// How many groups a run of `symbols` on `threads` threads is split into.
pub fn group_count(threads: usize, symbols: usize) -> usize {
    threads.min(symbols / MIN_SYMBOLS_PER_GROUP).max(1)
}

/// `count` contiguous groups of `len` series, the first ones larger by one where it does not
/// divide.
fn groups(len: usize, count: usize) -> Vec<Range<usize>> {
    let count = count.clamp(1, len.max(1));
    let (size, rest) = (len / count, len % count);
    let mut start = 0;
    (0..count)
        .map(|group| {
            let end = start + size + usize::from(group < rest);
            let range = start..end;
            start = end;
            range
        })
        .collect()
}

struct Helper {
    work: Sender<Work>,
    answers: Receiver<Result<Vec<Signal>, String>>,
}

/// The groups after the first, each on a helper thread of `scope`.
pub struct Spread {
    helpers: Vec<Helper>,
    /// Each series' group (the first one the run's own) and its index within the group; set by
    /// [`Spread::begin`].
    place: Vec<(usize, u32)>,
}

impl Spread {
    /// `count - 1` helper threads on `scope`, each answering its group's work with an instance
    /// made by `instance` (called on the helper's thread). The helpers end when the spread is
    /// dropped.
    pub fn new<'scope, 'env, I, A>(
        scope: &'scope Scope<'scope, 'env>,
        count: usize,
        instance: I,
    ) -> Self
    where
        I: Fn() -> A,
        A: FnMut(Work) -> Result<Vec<Signal>, String> + Send + 'scope,
    {
        let helpers = (1..count.max(1))
            .map(|_| {
                let (work, inbox) = channel::<Work>();
                let (outbox, answers) = channel();
                let mut answer = instance();
                scope.spawn(move || {
                    while let Some(work) = receive(&inbox) {
                        if outbox.send(answer(work)).is_err() {
                            break;
                        }
                    }
                });
                Helper { work, answers }
            })
            .collect();
        Spread {
            helpers,
            place: Vec::new(),
        }
    }

    /// The threads the run's symbols are evaluated on, the run's own included.
    pub fn threads(&self) -> usize {
        self.helpers.len() + 1
    }

    /// Begins the run: the helpers and `local` (the first group's instance) each over its
    /// group of `series`.
    pub fn begin(
        &mut self,
        series: &[SeriesKey],
        window: u32,
        local: impl FnOnce(&[SeriesKey]) -> Result<(), String>,
    ) -> Result<(), String> {
        let groups = groups(series.len(), self.helpers.len() + 1);
        self.place = groups
            .iter()
            .enumerate()
            .flat_map(|(group, range)| {
                range
                    .clone()
                    .map(move |i| (group, (i - range.start) as u32))
            })
            .collect();
        for (helper, range) in self.helpers.iter().zip(&groups[1..]) {
            send(helper, Work::Begin(series[range.clone()].to_vec(), window))?;
        }
        let first = local(&series[groups[0].clone()]);
        let rest = self.answers();
        first?;
        rest.map(drop)
    }

    /// One step: each group gets the candles of its series and the whole books; the signals
    /// are `local`'s then each helper's, in group order.
    pub fn step(
        &mut self,
        ctx: &StepContext,
        local: impl FnOnce(&StepContext) -> Result<Vec<Signal>, String>,
    ) -> Result<Vec<Signal>, String> {
        // Groups are contiguous, so the last series' group is the last group.
        let count = self.place.last().map_or(1, |&(group, _)| group + 1);
        let mut closed: Vec<Vec<ClosedCandle>> = vec![Vec::new(); count];
        for candle in &ctx.closed {
            let (group, series) = self.place[candle.series as usize];
            closed[group].push(ClosedCandle {
                series,
                candle: candle.candle,
            });
        }
        let part = |closed| StepContext {
            scan_id: ctx.scan_id.clone(),
            now_ms: ctx.now_ms,
            closed,
            positions: ctx.positions.clone(),
            account: ctx.account.clone(),
        };
        let mut closed = closed.into_iter();
        let own = closed.next().unwrap_or_default();
        for (helper, closed) in self.helpers.iter().zip(closed) {
            send(helper, Work::Step(part(closed)))?;
        }
        let first = local(&part(own));
        // Every helper's answer is taken before an error returns, so none is left behind.
        let rest = self.answers();
        let mut signals = first?;
        signals.extend(rest?);
        Ok(signals)
    }

    /// Every helper's answer in group order; the first error if any failed.
    fn answers(&self) -> Result<Vec<Signal>, String> {
        let mut signals = Vec::new();
        let mut failed = None;
        for helper in &self.helpers {
            match receive(&helper.answers).ok_or(()) {
                Ok(Ok(more)) => signals.extend(more),
                Ok(Err(err)) => {
                    failed.get_or_insert(err);
                }
                Err(_) => {
                    failed.get_or_insert_with(|| "a helper thread of the run stopped".to_string());
                }
            }
        }
        match failed {
            Some(err) => Err(err),
            None => Ok(signals),
        }
    }
}

/// Polls this many times before sleeping on a channel: a step's work arrives within
/// microseconds of the last, and waking a sleeping thread costs more than the wait (tens of
/// microseconds on a virtual machine).
const SPINS: u32 = 4_096;

/// The next message, or `None` once the sender is gone.
fn receive<T>(channel: &Receiver<T>) -> Option<T> {
    for _ in 0..SPINS {
        match channel.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    channel.recv().ok()
}

fn send(helper: &Helper, work: Work) -> Result<(), String> {
    helper
        .work
        .send(work)
        .map_err(|_| "a helper thread of the run stopped".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::bindings::types::{Account, Candle, SignalAction};

    #[test]
    fn groups_are_contiguous_and_even() {
        assert_eq!(groups(5, 2), vec![0..3, 3..5]);
        assert_eq!(groups(6, 3), vec![0..2, 2..4, 4..6]);
        assert_eq!(groups(1, 2), vec![0..1]);
        assert_eq!(groups(0, 2), vec![0..0]);
        assert_eq!(group_count(2, 20), 2);
        assert_eq!(group_count(2, 9), 1);
        assert_eq!(group_count(2, 10), 2);
        assert_eq!(group_count(1, 20), 1);
        assert_eq!(group_count(8, 23), 4);
    }

    fn key(i: usize) -> SeriesKey {
        SeriesKey {
            symbol: format!("S{i}"),
            interval: "1m".into(),
        }
    }

    /// An instance that keeps its series and answers each step with a signal for every series
    /// that got a candle, named by its symbol and sized by the candle's close.
    fn instance() -> impl FnMut(Work) -> Result<Vec<Signal>, String> + Send {
        let mut series: Vec<SeriesKey> = Vec::new();
        move |work| match work {
            Work::Begin(keys, _) => {
                series = keys;
                Ok(Vec::new())
            }
            Work::Step(ctx) => ctx
                .closed
                .iter()
                .map(|closed| {
                    let key = series.get(closed.series as usize).ok_or("unknown series")?;
                    if closed.candle.close < 0.0 {
                        return Err(format!("{} refused", key.symbol));
                    }
                    Ok(Signal {
                        symbol: key.symbol.clone(),
                        action: SignalAction::OpenLong,
                        size_usd: closed.candle.close,
                        stop_loss: None,
                        take_profit: Vec::new(),
                        confidence: 1.0,
                        reason: String::new(),
                    })
                })
                .collect(),
        }
    }

    fn step(closes: &[(u32, f64)]) -> StepContext {
        StepContext {
            scan_id: "s".into(),
            now_ms: 60_000,
            closed: closes
                .iter()
                .map(|&(series, close)| ClosedCandle {
                    series,
                    candle: Candle {
                        timestamp_ms: 0,
                        open: close,
                        high: close,
                        low: close,
                        close,
                        volume: 1.0,
                    },
                })
                .collect(),
            positions: Vec::new(),
            account: Account {
                equity: 1.0,
                cash: 1.0,
                buying_power: 1.0,
                currency: "USD".into(),
            },
        }
    }

    #[test]
    fn spread_signals_equal_one_instance_in_the_order_of_the_series() {
        let keys: Vec<SeriesKey> = (0..7).map(key).collect();
        let ctx = step(&[(0, 1.0), (2, 3.0), (3, 4.0), (5, 6.0), (6, 7.0)]);
        let mut alone = instance();
        alone(Work::Begin(keys.clone(), 200)).unwrap();
        let expected = alone(Work::Step(ctx.clone())).unwrap();
        for count in 1..=4 {
            std::thread::scope(|scope| {
                let mut spread = Spread::new(scope, count, instance);
                let mut local = instance();
                spread
                    .begin(&keys, 200, |keys| {
                        local(Work::Begin(keys.to_vec(), 200)).map(drop)
                    })
                    .unwrap();
                let signals = spread
                    .step(&ctx, |ctx| local(Work::Step(ctx.clone())))
                    .unwrap();
                assert_eq!(signals, expected, "{count} groups");
            });
        }
    }

    #[test]
    fn a_failing_group_fails_the_step_and_the_others_stay_in_step() {
        let keys: Vec<SeriesKey> = (0..4).map(key).collect();
        std::thread::scope(|scope| {
            let mut spread = Spread::new(scope, 2, instance);
            let mut local = instance();
            spread
                .begin(&keys, 200, |keys| {
                    local(Work::Begin(keys.to_vec(), 200)).map(drop)
                })
                .unwrap();
            // S3 is in the helper's group.
            let err = spread
                .step(&step(&[(0, 1.0), (3, -1.0)]), |ctx| {
                    local(Work::Step(ctx.clone()))
                })
                .unwrap_err();
            assert_eq!(err, "S3 refused");
            let signals = spread
                .step(&step(&[(1, 2.0), (2, 3.0)]), |ctx| {
                    local(Work::Step(ctx.clone()))
                })
                .unwrap();
            let symbols: Vec<&str> = signals.iter().map(|s| s.symbol.as_str()).collect();
            assert_eq!(symbols, ["S1", "S2"]);
        });
    }
}
