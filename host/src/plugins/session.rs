//! One strategy instance kept for a run of many calls (a backtest replaying thousands of
//! candles): the instance is made once, and every call gets its own fuel, deadline and memory
//! limit as a fresh store would. A session belongs to one run; runs never share an instance, so
//! what one run leaves in the guest's memory cannot reach another.

use wasmtime::Store;

use super::bindings::strategy::{Evaluation, ScanContext, Strategy};
use super::bindings::v0_1;
use super::calls::{Active, check_evaluation, contract, guest};
use super::error::PluginError;
use super::legacy;
use super::runtime::{CallStore, CallTarget, PluginRuntime, Prepared};
use super::state::PluginState;

enum Instance {
    Current(Strategy),
    V0_1(v0_1::strategy::Strategy),
}

pub struct StrategySession<'a> {
    runtime: &'a PluginRuntime,
    target: CallTarget,
    call_store: CallStore<'a>,
    instance: Instance,
    /// A call failed: the guest may be left half-way, so the session takes no more calls.
    broken: bool,
}

impl<'a> StrategySession<'a> {
    /// Instantiates `active` (a strategy) with `target`'s configuration.
    pub fn start(
        runtime: &'a PluginRuntime,
        active: &Active,
        target: CallTarget,
    ) -> Result<Self, PluginError> {
        let mut call_store = runtime.store(&target, None, false);
        let store = &mut call_store.store;
        let instance = match &active.plugin.prepared {
            Prepared::Strategy(pre) => pre.instantiate(&mut *store).map(Instance::Current),
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
            broken: false,
        })
    }

    /// One evaluation, checked against the world's contract as a scan's is.
    pub fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, PluginError> {
        if self.broken {
            return Err(contract(&self.target, "an earlier call of this run failed"));
        }
        let store: &mut Store<PluginState> = &mut self.call_store.store;
        self.runtime.rearm(store);
        store.data_mut().clock_ms = Some(ctx.now_ms);
        let called = match &self.instance {
            Instance::Current(strategy) => strategy.call_evaluate(&mut *store, ctx),
            Instance::V0_1(strategy) => strategy
                .call_evaluate(&mut *store, &legacy::scan_context(ctx))
                .map(|result| result.map(legacy::evaluation).map_err(legacy::plugin_error)),
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
}
