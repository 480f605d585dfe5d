//! The wasmtime side: one `Engine` for the process, a `Linker` per world, a `*Pre` per loaded
//! plugin, and a fresh `Store` per call with a memory limit, an instruction (fuel) budget and a
//! wall-clock deadline (epoch interruption).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{
    Cache, CacheConfig, Config, Enabled, Engine, InstanceAllocationStrategy,
    PoolingAllocationConfig, Store, Trap, UpdateDeadline,
};

use super::PluginKind;
use super::bindings::broker::{Broker, BrokerPre};
use super::bindings::risk_rule::{RiskRule, RiskRulePre};
use super::bindings::strategy::{Strategy, StrategyPre};
use super::bindings::strategy_replay::StrategyReplayPre;
use super::bindings::{CURRENT_VERSION, LEGACY_VERSION, v0_1};
use super::egress::{self, Egress};
use super::error::PluginError;
use super::rate_gate::RateGate;
use super::state::{PluginState, SimulatedTime};
use super::storage::{MemoryStorage, PluginStorage};
use super::store_access::{HeldWrites, ScopeLocks, StoreAccess};

/// Limits applied to every call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    /// Fuel units (about one per wasm instruction).
    pub fuel: u64,
    pub deadline: Duration,
    /// Plugin instances that may exist at once (each call holds one while it runs). Slots are
    /// reserved up front, so instantiating is a matter of reusing one (its memory zeroed in
    /// place); a call that finds every slot taken waits for one.
    pub instances: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            fuel: 2_000_000_000,
            deadline: Duration::from_secs(2),
            instances: 256,
        }
    }
}

/// The low part of each pooled linear memory kept mapped between calls, its touched pages zeroed
/// in place: a guest's stack, data and a scan's heap. Only slots in use recently hold pages (a
/// slot is reused by the same plugin first), so this is not multiplied by every slot in practice.
const KEEP_RESIDENT_BYTES: usize = 4 << 20;
/// The same for tables (function tables of a few thousand entries).
const KEEP_RESIDENT_TABLE_BYTES: usize = 64 << 10;

/// How often the epoch advances; the deadline is counted in these ticks.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// The longest a call may last, waits on outgoing HTTP included.
const MAX_CALL_WALL_TIME: Duration = Duration::from_secs(60);

fn ticks(time: Duration) -> u64 {
    (time.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
}

/// A component checked against its world and ready to instantiate: built against the current
/// package, or against 0.1.0 (whose calls `legacy.rs` adapts).
#[derive(Clone)]
pub enum Prepared {
    /// With its `replay` export when it has one (every strategy the SDK builds does).
    Strategy(
        StrategyPre<PluginState>,
        Option<StrategyReplayPre<PluginState>>,
    ),
    RiskRule(RiskRulePre<PluginState>),
    Broker(BrokerPre<PluginState>),
    StrategyV0_1(v0_1::strategy::StrategyPre<PluginState>),
    RiskRuleV0_1(v0_1::risk_rule::RiskRulePre<PluginState>),
    BrokerV0_1(v0_1::broker::BrokerPre<PluginState>),
}

impl Prepared {
    pub fn kind(&self) -> PluginKind {
        match self {
            Prepared::Strategy(..) | Prepared::StrategyV0_1(_) => PluginKind::Strategy,
            Prepared::RiskRule(_) | Prepared::RiskRuleV0_1(_) => PluginKind::RiskRule,
            Prepared::Broker(_) | Prepared::BrokerV0_1(_) => PluginKind::Broker,
        }
    }

    /// The version of the `tradehost:plugin` package the component was built against.
    pub fn interface_version(&self) -> &'static str {
        match self {
            Prepared::Strategy(..) | Prepared::RiskRule(_) | Prepared::Broker(_) => CURRENT_VERSION,
            _ => LEGACY_VERSION,
        }
    }
}

/// Everything a call needs to know about the plugin it calls.
#[derive(Clone)]
pub struct CallTarget {
    pub name: Arc<str>,
    pub config: Arc<BTreeMap<String, String>>,
    pub allowed_hosts: Arc<[String]>,
}

pub struct PluginRuntime {
    engine: Engine,
    strategy_linker: Linker<PluginState>,
    risk_linker: Linker<PluginState>,
    broker_linker: Linker<PluginState>,
    limits: Limits,
    ticker_stop: Arc<AtomicBool>,
    /// Where broker plugins' stores live.
    storage: Arc<dyn PluginStorage>,
    scope_locks: ScopeLocks,
    /// The pool's instance slots: a call takes one before its store exists.
    slots: Slots,
    /// Outgoing HTTP: what it may reach, and its connection pool.
    http: egress::Client,
    /// Closed while a venue has asked a plugin's calls to wait.
    pub(super) rate_gate: RateGate,
}

impl PluginRuntime {
    /// `cache_dir`: where compiled artifacts are kept, keyed by engine settings and module hash.
    /// Broker stores are kept in memory; [`PluginRuntime::with_storage`] puts them elsewhere.
    pub fn new(cache_dir: Option<&Path>, limits: Limits) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(1 << 20);
        // `perf` names the guests' compiled functions (in /tmp/perf-PID.map) when asked to.
        if std::env::var_os("TRADEHOST_PERF_MAP").is_some() {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(limits.instances)
            .total_core_instances(limits.instances * 4)
            .total_memories(limits.instances * 2)
            .total_tables(limits.instances * 4)
            .max_memory_size(limits.memory_bytes)
            // A call's memory is reset by writing zeros over the pages it touched instead of
            // handing them back to the kernel: `madvise` on every call flushed the TLB of every
            // core (an interrupt per core) and faulted the pages in again on the next call.
            .linear_memory_keep_resident(KEEP_RESIDENT_BYTES)
            .table_keep_resident(KEEP_RESIDENT_TABLE_BYTES)
            .pagemap_scan(Enabled::Auto);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        // Every call instantiates afresh; copying the (small) data segments measured faster per
        // call than re-mapping a copy-on-write image into a reused slot (docs/benchmarks.md).
        config.memory_init_cow(false);
        if let Some(dir) = cache_dir {
            std::fs::create_dir_all(dir)?;
            // The cache wants an absolute path; the default data directory is relative.
            let dir = std::path::absolute(dir)?;
            let mut cache = CacheConfig::new();
            cache.with_directory(dir);
            config.cache(Some(Cache::new(cache)?));
        }
        let engine = Engine::new(&config)?;

        // Each world's linker serves the imports of both package versions.
        let mut strategy_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut strategy_linker)?;
        Strategy::add_to_linker::<_, HasSelf<_>>(&mut strategy_linker, |state| state)?;
        v0_1::strategy::Strategy::add_to_linker::<_, HasSelf<_>>(&mut strategy_linker, |state| {
            state
        })?;
        let mut risk_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut risk_linker)?;
        RiskRule::add_to_linker::<_, HasSelf<_>>(&mut risk_linker, |state| state)?;
        v0_1::risk_rule::RiskRule::add_to_linker::<_, HasSelf<_>>(&mut risk_linker, |state| state)?;
        let mut broker_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut broker_linker)?;
        Broker::add_to_linker::<_, HasSelf<_>>(&mut broker_linker, |state| state)?;
        v0_1::broker::Broker::add_to_linker::<_, HasSelf<_>>(&mut broker_linker, |state| state)?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let ticker_engine = engine.clone();
        let stop = ticker_stop.clone();
        std::thread::Builder::new()
            .name("plugin-epoch".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    ticker_engine.increment_epoch();
                }
            })?;

        Ok(Self {
            engine,
            strategy_linker,
            risk_linker,
            broker_linker,
            limits,
            ticker_stop,
            storage: Arc::new(MemoryStorage::default()),
            scope_locks: ScopeLocks::default(),
            slots: Slots::new(limits.instances),
            http: egress::Client::new(Egress::default()),
            rate_gate: RateGate::default(),
        })
    }

    /// How long a venue still wants `broker`'s calls for `user_id` (or its calls without a
    /// user) to wait, if it asked at or after `since`.
    pub fn venue_asked_to_wait(
        &self,
        broker: &str,
        user_id: &str,
        since: std::time::Instant,
    ) -> Option<Duration> {
        [user_id, ""]
            .into_iter()
            .filter_map(|scope| self.rate_gate.asked_since(broker, scope, since))
            .max()
    }

    pub fn egress(&self) -> Egress {
        self.http.egress()
    }

    /// Lets outgoing HTTP reach what `egress` allows.
    pub fn with_egress(mut self, egress: Egress) -> Self {
        self.http = egress::Client::new(egress);
        self
    }

    /// Keeps broker plugins' stores in `storage` (the server's database).
    pub fn with_storage(mut self, storage: Arc<dyn PluginStorage>) -> Self {
        self.storage = storage;
        self
    }

    /// Has broker plugins' stores of user `scope` read afresh from storage.
    pub fn forget_stores(&self, scope: &str) {
        self.storage.forget_scope(scope);
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Compiles a component (or takes it from the on-disk cache).
    pub fn compile(&self, wasm: &[u8]) -> Result<Component, PluginError> {
        Component::new(&self.engine, wasm)
            .map_err(|err| PluginError::Load(format!("not a valid component: {err:#}")))
    }

    /// Type-checks a component against the world of `kind`: every import must be one the host
    /// provides and every export must have the world's type.
    pub fn prepare(
        &self,
        kind: PluginKind,
        component: &Component,
    ) -> Result<Prepared, PluginError> {
        let check = |err: wasmtime::Error| {
            PluginError::Load(format!("does not fit the {} world: {err:#}", kind.as_str()))
        };
        let instance = match kind {
            PluginKind::Strategy => self.strategy_linker.instantiate_pre(component),
            PluginKind::RiskRule => self.risk_linker.instantiate_pre(component),
            PluginKind::Broker => self.broker_linker.instantiate_pre(component),
        }
        .map_err(check)?;
        // The current package first; a component built against 0.1.0 fits its world instead.
        let current = match kind {
            PluginKind::Strategy => StrategyPre::new(instance.clone())
                .map(|pre| Prepared::Strategy(pre, StrategyReplayPre::new(instance.clone()).ok())),
            PluginKind::RiskRule => RiskRulePre::new(instance.clone()).map(Prepared::RiskRule),
            PluginKind::Broker => BrokerPre::new(instance.clone()).map(Prepared::Broker),
        };
        let err = match current {
            Ok(prepared) => return Ok(prepared),
            Err(err) => err,
        };
        let legacy = match kind {
            PluginKind::Strategy => {
                v0_1::strategy::StrategyPre::new(instance).map(Prepared::StrategyV0_1)
            }
            PluginKind::RiskRule => {
                v0_1::risk_rule::RiskRulePre::new(instance).map(Prepared::RiskRuleV0_1)
            }
            PluginKind::Broker => v0_1::broker::BrokerPre::new(instance).map(Prepared::BrokerV0_1),
        };
        legacy.map_err(|_| check(err))
    }

    /// A fresh store for one call, with the limits armed, holding one of the pool's instance
    /// slots until it is dropped (waiting for one if every slot is taken); `scope` gives the call
    /// the store of that user (broker calls made on a user's behalf), `hold_writes` holds its
    /// writes back for the caller ([`PluginRuntime::call_holding_writes`]).
    pub fn store(
        &self,
        target: &CallTarget,
        scope: Option<&str>,
        hold_writes: bool,
    ) -> CallStore<'_> {
        let access = scope.map(|scope| {
            StoreAccess::new(
                self.storage.clone(),
                target.name.clone(),
                scope.to_string(),
                hold_writes,
            )
        });
        self.store_with(target, access, None)
    }

    /// A store for a replay's calls (no user store): its clocks read `time`, its random source
    /// is seeded.
    pub fn replay_store(&self, target: &CallTarget, time: SimulatedTime) -> CallStore<'_> {
        self.store_with(target, None, Some(time))
    }

    fn store_with(
        &self,
        target: &CallTarget,
        access: Option<StoreAccess>,
        simulated: Option<SimulatedTime>,
    ) -> CallStore<'_> {
        let slot = self.slots.take();
        let state = PluginState::new(
            target.name.clone(),
            target.config.clone(),
            target.allowed_hosts.clone(),
            self.limits.memory_bytes,
            access,
            self.http.clone(),
            simulated,
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| state as &mut dyn wasmtime::ResourceLimiter);
        // Fuel is enabled on the engine, so this cannot fail.
        let _ = store.set_fuel(self.limits.fuel);
        store.set_epoch_deadline(ticks(self.limits.deadline));
        // At the deadline, time spent waiting on outgoing HTTP (each request bounded by its own
        // timeout) is given back: the limit is on the plugin's own time, and on the whole call's.
        let limit = self.limits.deadline;
        store.epoch_deadline_callback(move |context| {
            let state = context.data();
            let elapsed = state.started.elapsed();
            let own = elapsed.saturating_sub(state.waited);
            if own < limit && elapsed < MAX_CALL_WALL_TIME {
                Ok(UpdateDeadline::Continue(ticks(limit - own)))
            } else {
                Err(Trap::Interrupt.into())
            }
        });
        CallStore { store, _slot: slot }
    }

    /// Runs `call` in a fresh store and turns any failure into a typed [`PluginError`].
    pub fn call<P, T>(
        &self,
        target: &CallTarget,
        pre: &P,
        call: impl FnOnce(&mut Store<PluginState>, &P) -> wasmtime::Result<T>,
    ) -> Result<T, PluginError> {
        let mut call_store = self.store(target, None, false);
        let store = &mut call_store.store;
        call(store, pre).map_err(|err| self.classify(target, store, err))
    }

    /// As [`PluginRuntime::call`], on behalf of user `scope`: the call reaches that user's store
    /// and runs alone among the plugin's calls for the user.
    pub fn call_for<P, T>(
        &self,
        target: &CallTarget,
        scope: &str,
        pre: &P,
        call: impl FnOnce(&mut Store<PluginState>, &P) -> wasmtime::Result<T>,
    ) -> Result<T, PluginError> {
        let _serialised = self.scope_locks.lock(&target.name, scope);
        let mut call_store = self.store(target, Some(scope), false);
        let store = &mut call_store.store;
        call(store, pre).map_err(|err| self.classify(target, store, err))
    }

    /// As [`PluginRuntime::call_for`], with the call's store writes held back: they come with
    /// the answer, and the call's lock on the user's store stays held until the caller has
    /// written them with what it makes of the answer (one transaction instead of two). Whatever
    /// the call sends out is preceded by a write of what it held back until then.
    pub fn call_holding_writes<P, T>(
        &self,
        target: &CallTarget,
        scope: &str,
        pre: &P,
        call: impl FnOnce(&mut Store<PluginState>, &P) -> wasmtime::Result<T>,
    ) -> (Result<T, PluginError>, HeldWrites) {
        let serialised = self.scope_locks.lock(&target.name, scope);
        let mut call_store = self.store(target, Some(scope), true);
        let store = &mut call_store.store;
        let result = call(store, pre).map_err(|err| self.classify(target, store, err));
        let held = store
            .data_mut()
            .held_writes(serialised)
            .expect("a call for a user has a store");
        (result, held)
    }

    /// Gives a store kept between calls (a [`super::session::StrategySession`]) a new call's
    /// budget: full fuel, a fresh deadline and clock.
    pub(super) fn rearm(&self, store: &mut Store<PluginState>) {
        let _ = store.set_fuel(self.limits.fuel);
        store.set_epoch_deadline(ticks(self.limits.deadline));
        let state = store.data_mut();
        state.started = std::time::Instant::now();
        state.waited = Duration::ZERO;
    }

    pub(super) fn classify(
        &self,
        target: &CallTarget,
        store: &Store<PluginState>,
        err: wasmtime::Error,
    ) -> PluginError {
        let plugin = target.name.to_string();
        if store.data().memory_exceeded {
            return PluginError::MemoryLimit {
                plugin,
                limit_mib: self.limits.memory_bytes >> 20,
            };
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::OutOfFuel) => PluginError::InstructionBudget { plugin },
            Some(Trap::Interrupt) => PluginError::Deadline {
                plugin,
                limit_ms: self.limits.deadline.as_millis() as u64,
            },
            Some(trap) => PluginError::Trap {
                plugin,
                detail: trap.to_string(),
            },
            None => PluginError::Trap {
                plugin,
                detail: format!("{err:#}"),
            },
        }
    }
}

/// A call's store and the instance slot it holds: the store (and any instance in it) is dropped
/// before the slot is given back.
pub struct CallStore<'a> {
    pub store: Store<PluginState>,
    _slot: Slot<'a>,
}

/// A count of free instance slots. Without it, a call made while every slot is in use would fail
/// to instantiate (and a scan would record its venue's answer as unknown) instead of waiting.
struct Slots {
    free: std::sync::Mutex<u32>,
    freed: std::sync::Condvar,
}

struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(count: u32) -> Self {
        Self {
            free: std::sync::Mutex::new(count),
            freed: std::sync::Condvar::new(),
        }
    }

    /// Waits for a free slot (calls run on blocking threads, never on the async workers).
    fn take(&self) -> Slot<'_> {
        let mut free = self
            .free
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut free = self
            .0
            .free
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *free += 1;
        self.0.freed.notify_one();
    }
}

impl Drop for PluginRuntime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}
