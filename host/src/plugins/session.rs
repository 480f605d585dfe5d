//! One strategy instance (and one of each risk rule) kept for a run of many calls (a backtest replaying thousands of
//! candles): the instance is made once, and every call gets its own fuel, deadline and memory
//! limit as a fresh store would. A session belongs to one run; runs never share an instance, so
//! what one run leaves in the guest's memory cannot reach another.
//!
//! A strategy that exports `replay` (every one the SDK builds) is called through it: the run's
//! series are named once, each step hands over only the candles that closed since the last,
//! and the guest keeps the windows and the strategy's state. Others are called with `evaluate`
//! and a whole window per series, as a live scan calls them.

use std::collections::HashSet;

use wasmtime::Store;

use super::bindings::risk_rule::{ProposedOrder, RiskContext, RiskRule};
use super::bindings::strategy::{Evaluation, ScanContext, Strategy};
use super::bindings::strategy_replay::StrategyReplay;
use super::bindings::strategy_replay::exports::tradehost::plugin::replay::{
    SeriesKey, StepContext,
};
use super::bindings::types::{Signal, Verdict};
use super::bindings::v0_1;
use super::calls::{Active, check_evaluation, check_signals, check_verdict, contract, guest};
use super::error::PluginError;
use super::legacy;
use super::runtime::{CallStore, CallTarget, PluginRuntime, Prepared};
use super::state::{PluginState, SimulatedTime};

enum Instance {
    Replay(StrategyReplay),
    Current(Strategy),
    V0_1(v0_1::strategy::Strategy),
}

/// How a session calls its strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallPath {
    /// Through `replay` when the strategy exports it, else `evaluate`.
    Preferred,
    /// `evaluate` with whole windows, as a live scan calls it.
    Evaluate,
}

pub struct StrategySession<'a> {
    runtime: &'a PluginRuntime,
    target: CallTarget,
    call_store: CallStore<'a>,
    instance: Instance,
    /// The run's replayed time, which the guest's clocks read.
    time: SimulatedTime,
    /// The symbols of the run's series, which a step's signals may name.
    symbols: HashSet<String>,
    /// A call failed: the guest may be left half-way, so the session takes no more calls.
    broken: bool,
}

impl<'a> StrategySession<'a> {
    /// Instantiates `active` (a strategy) with `target`'s configuration.
    pub fn start(
        runtime: &'a PluginRuntime,
        active: &Active,
        target: CallTarget,
        path: CallPath,
    ) -> Result<Self, PluginError> {
        let time = SimulatedTime::default();
        let mut call_store = runtime.replay_store(&target, time.clone());
        let store = &mut call_store.store;
        let instance = match &active.plugin.prepared {
            Prepared::Strategy(_, Some(replay)) if path == CallPath::Preferred => {
                replay.instantiate(&mut *store).map(Instance::Replay)
            }
            Prepared::Strategy(pre, _) => pre.instantiate(&mut *store).map(Instance::Current),
            Prepared::StrategyV0_1(pre) => pre.instantiate(&mut *store).map(Instance::V0_1),
            _ => {
                return Err(PluginError::NotFound {
                    kind: "strategy",
                    name: target.name.to_string(),
                });
            }
        }
        .map_err(|err| runtime.classify(&target, store, err))?;
        Ok(Self {
            runtime,
            target,
            call_store,
            instance,
            time,
            symbols: HashSet::new(),
            broken: false,
        })
    }

    /// The run's replayed time (set by each call): the clock a run's risk rules read too.
    pub fn time(&self) -> &SimulatedTime {
        &self.time
    }

    /// Whether the strategy takes [`StrategySession::step`]s rather than whole scans.
    pub fn steps(&self) -> bool {
        matches!(self.instance, Instance::Replay(_))
    }

    /// Names the run's series and the candles a scan is shown of each (replay only).
    pub fn begin(&mut self, series: &[SeriesKey], window: u32) -> Result<(), PluginError> {
        self.usable()?;
        let Instance::Replay(strategy) = &self.instance else {
            return Err(contract(
                &self.target,
                "the strategy does not export replay",
            ));
        };
        self.symbols = series.iter().map(|key| key.symbol.clone()).collect();
        let store = arm(self.runtime, &mut self.call_store.store, None, &self.time);
        let called = strategy
            .tradehost_plugin_replay()
            .call_start(&mut *store, series, window);
        if let Err(err) = called {
            self.broken = true;
            return Err(self.runtime.classify(&self.target, store, err));
        }
        Ok(())
    }

    /// One step of the run (replay only): the signals, checked as a scan's are.
    pub fn step(&mut self, ctx: &StepContext) -> Result<Vec<Signal>, PluginError> {
        self.usable()?;
        let Instance::Replay(strategy) = &self.instance else {
            return Err(contract(
                &self.target,
                "the strategy does not export replay",
            ));
        };
        let store = arm(
            self.runtime,
            &mut self.call_store.store,
            Some(ctx.now_ms),
            &self.time,
        );
        let signals = match strategy
            .tradehost_plugin_replay()
            .call_step(&mut *store, ctx)
        {
            Ok(Ok(signals)) => signals,
            Ok(Err(err)) => return Err(guest(&self.target, err)),
            Err(err) => {
                self.broken = true;
                return Err(self.runtime.classify(&self.target, store, err));
            }
        };
        check_signals(&signals, self.symbols.len(), |symbol| {
            self.symbols.contains(symbol)
        })
        .map_err(|detail| contract(&self.target, detail))?;
        Ok(signals)
    }

    /// One evaluation, checked against the world's contract as a scan's is.
    pub fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, PluginError> {
        self.usable()?;
        let store = arm(
            self.runtime,
            &mut self.call_store.store,
            Some(ctx.now_ms),
            &self.time,
        );
        let called = match &self.instance {
            Instance::Current(strategy) => strategy.call_evaluate(&mut *store, ctx),
            Instance::V0_1(strategy) => strategy
                .call_evaluate(&mut *store, &legacy::scan_context(ctx))
                .map(|result| result.map(legacy::evaluation).map_err(legacy::plugin_error)),
            Instance::Replay(_) => {
                return Err(contract(&self.target, "a replay session takes steps"));
            }
        };
        let evaluation = match called {
            Ok(Ok(evaluation)) => evaluation,
            Ok(Err(err)) => return Err(guest(&self.target, err)),
            Err(err) => {
                self.broken = true;
                return Err(self.runtime.classify(&self.target, store, err));
            }
        };
        check_evaluation(ctx, &evaluation).map_err(|detail| contract(&self.target, detail))?;
        Ok(evaluation)
    }

    fn usable(&self) -> Result<(), PluginError> {
        if self.broken {
            return Err(contract(&self.target, "an earlier call of this run failed"));
        }
        Ok(())
    }
}

enum RuleInstance {
    Current(RiskRule),
    V0_1(v0_1::risk_rule::RiskRule),
}

/// One risk rule's instance for a run's order checks.
pub struct RuleSession<'a> {
    runtime: &'a PluginRuntime,
    target: CallTarget,
    call_store: CallStore<'a>,
    instance: RuleInstance,
    time: SimulatedTime,
    broken: bool,
}

impl<'a> RuleSession<'a> {
    /// Instantiates the rule `active`, its clocks reading `time` (the run's strategy session's).
    pub fn start(
        runtime: &'a PluginRuntime,
        active: &Active,
        time: &SimulatedTime,
    ) -> Result<Self, PluginError> {
        let target = active.target.clone();
        let mut call_store = runtime.replay_store(&target, time.clone());
        let store = &mut call_store.store;
        let instance = match &active.plugin.prepared {
            Prepared::RiskRule(pre) => pre.instantiate(&mut *store).map(RuleInstance::Current),
            Prepared::RiskRuleV0_1(pre) => pre.instantiate(&mut *store).map(RuleInstance::V0_1),
            _ => {
                return Err(PluginError::NotFound {
                    kind: "risk rule",
                    name: target.name.to_string(),
                });
            }
        }
        .map_err(|err| runtime.classify(&target, store, err))?;
        Ok(Self {
            runtime,
            target,
            call_store,
            instance,
            time: time.clone(),
            broken: false,
        })
    }

    /// The rule's verdict on an order, checked as a scan's is.
    pub fn check_order(
        &mut self,
        order: &ProposedOrder,
        ctx: &RiskContext,
    ) -> Result<Verdict, PluginError> {
        if self.broken {
            return Err(contract(&self.target, "an earlier call of this run failed"));
        }
        let store = arm(self.runtime, &mut self.call_store.store, None, &self.time);
        let called = match &self.instance {
            RuleInstance::Current(rule) => rule.call_check_order(&mut *store, order, ctx),
            RuleInstance::V0_1(rule) => rule
                .call_check_order(
                    &mut *store,
                    &legacy::proposed_order(order),
                    &legacy::risk_context(ctx),
                )
                .map(legacy::verdict),
        };
        match called {
            Ok(verdict) => check_verdict(&self.target, order, verdict),
            Err(err) => {
                self.broken = true;
                Err(self.runtime.classify(&self.target, store, err))
            }
        }
    }
}

/// The store with fresh fuel and deadline, and `time` moved to `now_ms` when given.
fn arm<'s>(
    runtime: &PluginRuntime,
    store: &'s mut Store<PluginState>,
    now_ms: Option<i64>,
    time: &SimulatedTime,
) -> &'s mut Store<PluginState> {
    runtime.rearm(store);
    if let Some(now_ms) = now_ms {
        time.set(now_ms);
    }
    store
}
