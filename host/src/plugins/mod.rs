//! WebAssembly plugins: strategies, risk rules and brokers, sandboxed in wasmtime.
//!
//! - `bindings`: host bindings of the WIT worlds in `wit/` (the current package and 0.1.0);
//! - `runtime`: one Engine, a Linker per world, a fresh Store per call with limits;
//! - `state`: what a call's Store holds, and the host capabilities (log, time, config, http,
//!   store); `storage`: where broker plugins' stores live, `store_cache` what is known of them in
//!   memory, `store_access` what one call reaches (per-user locks, writes held back for the
//!   caller); `egress`: what outgoing HTTP may reach;
//!   `rate_gate`: broker calls held back while a venue asks them to wait;
//! - `calls`: typed calls per world, every answer checked against the contract; `legacy`:
//!   the adapter that lets 0.1.0 components answer them; `decimal`: the interface's numbers;
//! - `registry`: loaded versions, activation, rollback, configuration, persistence;
//! - `manifest`: `plugin.toml`; `builtin`: the plugins compiled into the binary.

pub mod bindings;
pub mod builtin;
pub mod calls;
pub mod decimal;
pub mod egress;
pub mod error;
pub mod legacy;
pub mod manifest;
pub mod rate_gate;
pub mod registry;
pub mod runtime;
pub mod session;
pub mod state;
pub mod storage;
pub mod store_access;
pub mod store_cache;

use serde::{Deserialize, Serialize};

pub use calls::{Active, Description};

/// Runs a plugin call (synchronous, CPU-bound) on the blocking pool, off the async workers.
pub async fn off_thread<T: Send + 'static>(
    call: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(call)
        .await
        .map_err(|err| format!("plugin call task failed: {err}"))
}
pub use error::PluginError;
pub use manifest::Manifest;
pub use registry::Registry;
pub use runtime::{Limits, PluginRuntime};

#[derive(utoipa::ToSchema, Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PluginKind {
    Strategy,
    RiskRule,
    Broker,
}

impl PluginKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PluginKind::Strategy => "strategy",
            PluginKind::RiskRule => "risk-rule",
            PluginKind::Broker => "broker",
        }
    }
}

/// The registry of a server: the built-in plugins, the versions uploaded before, the settings
/// saved for them, and the plugins of `TRADEHOST_PLUGIN_DIR`.
pub async fn load(
    config: &crate::config::AppConfig,
    db: Option<crate::store::Db>,
) -> anyhow::Result<Registry> {
    let mut runtime = PluginRuntime::new(Some(&config.plugin_cache_dir), config.plugin_limits)?
        .with_egress(egress::Egress {
            allow_private_network: config.plugin_allow_private_network,
        });
    if let Some(db) = &db {
        runtime = runtime.with_storage(std::sync::Arc::new(storage::DbStorage::new(db.clone())));
    }
    let runtime = std::sync::Arc::new(runtime);
    let registry = Registry::new(runtime, db, Some(config.data_dir.join("plugins")));
    for builtin in builtin::BUILTINS {
        registry
            .install_builtin(builtin.manifest, builtin.wasm)
            .map_err(|err| anyhow::anyhow!("built-in plugin failed its checks: {err}"))?;
    }
    if let Some(dir) = &config.plugin_dir {
        load_directory(&registry, dir)?;
    }
    registry.restore().await?;
    tracing::info!(
        strategies = ?registry.names(PluginKind::Strategy),
        risk_rules = ?registry.names(PluginKind::RiskRule),
        brokers = ?registry.names(PluginKind::Broker),
        "plugins loaded"
    );
    Ok(registry)
}

/// Each subdirectory of `dir` holding a `plugin.toml` and one `.wasm` file is a plugin.
fn load_directory(registry: &Registry, dir: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("TRADEHOST_PLUGIN_DIR {} cannot be read", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let manifest = path.join("plugin.toml");
        if !manifest.is_file() {
            continue;
        }
        let wasm: Vec<_> = std::fs::read_dir(&path)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|ext| ext == "wasm"))
            .collect();
        let [wasm] = wasm.as_slice() else {
            tracing::error!(dir = %path.display(), "a plugin directory needs exactly one .wasm file");
            continue;
        };
        let loaded = std::fs::read_to_string(&manifest)
            .map_err(|err| PluginError::Load(err.to_string()))
            .and_then(|manifest| Manifest::from_toml(&manifest).map_err(PluginError::Load))
            .and_then(|manifest| {
                let bytes =
                    std::fs::read(wasm).map_err(|err| PluginError::Load(err.to_string()))?;
                registry.install_local(&bytes, &manifest)
            });
        match loaded {
            Ok(plugin) => {
                tracing::info!(plugin = %plugin.manifest.name, version = %plugin.manifest.version, "plugin loaded from the plugin directory")
            }
            Err(err) => tracing::error!(dir = %path.display(), "plugin not loaded: {err}"),
        }
    }
    Ok(())
}
