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
    Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store,
    Trap,
};

use super::PluginKind;
use super::bindings::broker::{Broker, BrokerPre};
use super::bindings::risk_rule::{RiskRule, RiskRulePre};
use super::bindings::strategy::{Strategy, StrategyPre};
use super::error::PluginError;
use super::state::PluginState;

/// Limits applied to every call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    /// Fuel units (about one per wasm instruction).
    pub fuel: u64,
    pub deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 << 20,
            fuel: 2_000_000_000,
            deadline: Duration::from_secs(2),
        }
    }
}

/// Plugin instances that may exist at once (each call holds one while it runs). Slots are
/// reserved up front, so instantiating is a matter of reusing one (copy-on-write memory images).
const MAX_CONCURRENT_INSTANCES: u32 = 256;

/// How often the epoch advances; the deadline is counted in these ticks.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// A component checked against its world and ready to instantiate.
#[derive(Clone)]
pub enum Prepared {
    Strategy(StrategyPre<PluginState>),
    RiskRule(RiskRulePre<PluginState>),
    Broker(BrokerPre<PluginState>),
}

impl Prepared {
    pub fn kind(&self) -> PluginKind {
        match self {
            Prepared::Strategy(_) => PluginKind::Strategy,
            Prepared::RiskRule(_) => PluginKind::RiskRule,
            Prepared::Broker(_) => PluginKind::Broker,
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
}

impl PluginRuntime {
    /// `cache_dir`: where compiled artifacts are kept, keyed by engine settings and module hash.
    pub fn new(cache_dir: Option<&Path>, limits: Limits) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.consume_fuel(true);
        config.epoch_interruption(true);
        config.max_wasm_stack(1 << 20);
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(MAX_CONCURRENT_INSTANCES)
            .total_core_instances(MAX_CONCURRENT_INSTANCES * 4)
            .total_memories(MAX_CONCURRENT_INSTANCES * 2)
            .total_tables(MAX_CONCURRENT_INSTANCES * 4)
            .max_memory_size(limits.memory_bytes);
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

        let mut strategy_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut strategy_linker)?;
        Strategy::add_to_linker::<_, HasSelf<_>>(&mut strategy_linker, |state| state)?;
        let mut risk_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut risk_linker)?;
        RiskRule::add_to_linker::<_, HasSelf<_>>(&mut risk_linker, |state| state)?;
        let mut broker_linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut broker_linker)?;
        Broker::add_to_linker::<_, HasSelf<_>>(&mut broker_linker, |state| state)?;

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
        })
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
        Ok(match kind {
            PluginKind::Strategy => Prepared::Strategy(
                StrategyPre::new(
                    self.strategy_linker
                        .instantiate_pre(component)
                        .map_err(check)?,
                )
                .map_err(check)?,
            ),
            PluginKind::RiskRule => Prepared::RiskRule(
                RiskRulePre::new(self.risk_linker.instantiate_pre(component).map_err(check)?)
                    .map_err(check)?,
            ),
            PluginKind::Broker => Prepared::Broker(
                BrokerPre::new(
                    self.broker_linker
                        .instantiate_pre(component)
                        .map_err(check)?,
                )
                .map_err(check)?,
            ),
        })
    }

    /// A fresh store for one call, with the limits armed.
    pub fn store(&self, target: &CallTarget) -> Store<PluginState> {
        let state = PluginState::new(
            target.name.clone(),
            target.config.clone(),
            target.allowed_hosts.clone(),
            self.limits.memory_bytes,
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| state as &mut dyn wasmtime::ResourceLimiter);
        // Fuel is enabled on the engine, so this cannot fail.
        let _ = store.set_fuel(self.limits.fuel);
        let ticks = (self.limits.deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64;
        store.set_epoch_deadline(ticks);
        store.epoch_deadline_trap();
        store
    }

    /// Runs `call` in a fresh store and turns any failure into a typed [`PluginError`].
    pub fn call<P, T>(
        &self,
        target: &CallTarget,
        pre: &P,
        call: impl FnOnce(&mut Store<PluginState>, &P) -> wasmtime::Result<T>,
    ) -> Result<T, PluginError> {
        let mut store = self.store(target);
        call(&mut store, pre).map_err(|err| self.classify(target, &store, err))
    }

    fn classify(
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

impl Drop for PluginRuntime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}
