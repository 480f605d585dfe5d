//! The registry: every loaded plugin version, which one is active, and hot swap.
//!
//! A new version is compiled, type-checked against its world and asked to describe itself before
//! it can become active. Activation swaps one pointer (`ArcSwap`): calls that already resolved
//! the active version finish on it, the next call sees the new one, and nothing waits. The
//! version that was active stays loaded for rollback.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

use arc_swap::ArcSwap;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::PluginKind;
use super::calls::{Active, Description};
use super::error::PluginError;
use super::manifest::{ConfigField, Manifest};
use super::runtime::{CallTarget, PluginRuntime, Prepared};
use crate::store::{self, Db};

/// One compiled, checked version of a plugin.
pub struct LoadedPlugin {
    pub manifest: Manifest,
    pub sha256: String,
    pub description: Description,
    pub prepared: Prepared,
    pub builtin: bool,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.manifest.name)
            .field("kind", &self.manifest.kind)
            .field("version", &self.manifest.version)
            .field("sha256", &self.sha256)
            .finish()
    }
}

struct Slot {
    kind: PluginKind,
    versions: Mutex<BTreeMap<String, Arc<LoadedPlugin>>>,
    active: ArcSwap<Active>,
    previous: Mutex<Option<String>>,
    /// The operator's configuration values (before defaults).
    config_values: Mutex<BTreeMap<String, String>>,
    /// Serialises changes (activate, rollback, configure) of this plugin.
    changes: tokio::sync::Mutex<()>,
}

/// A plugin as the admin API lists it.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize)]
pub struct PluginSummary {
    pub name: String,
    pub kind: PluginKind,
    pub active_version: String,
    pub previous_version: Option<String>,
    pub display_name: String,
    pub description: String,
    pub sha256: String,
    pub builtin: bool,
    pub versions: Vec<VersionSummary>,
    pub config: BTreeMap<String, String>,
    pub config_schema: BTreeMap<String, ConfigField>,
    pub allowed_hosts: Vec<String>,
    /// The `tradehost:plugin` package version the active version was built against (0.1.0
    /// components run through an adapter).
    pub interface_version: &'static str,
}

#[derive(utoipa::ToSchema, Debug, Clone, Serialize)]
pub struct VersionSummary {
    pub version: String,
    pub sha256: String,
    pub builtin: bool,
}

pub struct Registry {
    runtime: Arc<PluginRuntime>,
    slots: RwLock<BTreeMap<String, Arc<Slot>>>,
    db: Option<Db>,
    /// Where versions uploaded before binaries were kept in the database were written
    /// (`<dir>/<name>/<version>.wasm`); read once to copy them in.
    upload_dir: Option<PathBuf>,
}

/// Validates a plugin and compiles, prepares and describes it (the slow part: call it off the
/// async workers for uploads).
fn check_with(
    runtime: &PluginRuntime,
    wasm: &[u8],
    manifest: &Manifest,
    builtin: bool,
) -> Result<LoadedPlugin, PluginError> {
    manifest.validate().map_err(PluginError::Load)?;
    if let Some(refusal) = unreachable_host(&manifest.allowed_hosts, runtime.egress()) {
        return Err(PluginError::Load(format!("allowed_hosts: {refusal}")));
    }
    let component = runtime.compile(wasm)?;
    let prepared = runtime.prepare(manifest.kind, &component)?;
    let defaults = manifest
        .resolve_config(&BTreeMap::new())
        .map_err(PluginError::Load)?;
    let target = CallTarget {
        name: Arc::from(manifest.name.as_str()),
        config: Arc::new(defaults),
        allowed_hosts: manifest.allowed_hosts.clone().into(),
    };
    let description = runtime.describe(&target, &prepared)?;
    if description.name != manifest.name || description.version != manifest.version {
        return Err(PluginError::Load(format!(
            "the component describes itself as {} {}, the manifest says {} {}",
            description.name, description.version, manifest.name, manifest.version
        )));
    }
    Ok(LoadedPlugin {
        manifest: manifest.clone(),
        sha256: sha256_hex(wasm),
        description,
        prepared,
        builtin,
    })
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn make_active(plugin: Arc<LoadedPlugin>, config: BTreeMap<String, String>) -> Active {
    let target = CallTarget {
        name: Arc::from(plugin.manifest.name.as_str()),
        allowed_hosts: reachable_hosts(&plugin.manifest, &config),
        config: Arc::new(config),
    };
    Active { plugin, target }
}

/// The hosts a plugin's calls may reach: its manifest's, and the host of the `base_url` the
/// operator configured (a testnet, a proxy, a local simulator). A plugin's configuration is set
/// by operators only; users never choose where their keys are sent.
fn reachable_hosts(manifest: &Manifest, config: &BTreeMap<String, String>) -> Arc<[String]> {
    let mut hosts = manifest.allowed_hosts.clone();
    if let Some(host) = config
        .get("base_url")
        .filter(|url| !url.trim().is_empty())
        .and_then(|url| super::state::host_of(url))
        && !hosts.contains(&host)
    {
        hosts.push(host);
    }
    hosts.into()
}

/// Why the hosts of a manifest (or a configured base URL) may not be reached under `egress`:
/// an address in a private, loopback, link-local or metadata range, or a local name.
fn unreachable_host(hosts: &[String], egress: super::egress::Egress) -> Option<String> {
    if egress.allow_private_network {
        return None;
    }
    hosts.iter().find_map(|host| {
        let local_name = host == "localhost"
            || host.ends_with(".localhost")
            || host.ends_with(".local")
            || host.ends_with(".internal");
        let why = match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
            Ok(ip) => super::egress::forbidden(ip),
            Err(_) => local_name.then_some("local"),
        }?;
        Some(format!(
            "{host} is a {why} address; set TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK=true to allow it"
        ))
    })
}

impl Registry {
    pub fn new(runtime: Arc<PluginRuntime>, db: Option<Db>, upload_dir: Option<PathBuf>) -> Self {
        Self {
            runtime,
            slots: RwLock::new(BTreeMap::new()),
            db,
            upload_dir,
        }
    }

    pub fn runtime(&self) -> &Arc<PluginRuntime> {
        &self.runtime
    }

    fn slot(&self, name: &str) -> Option<Arc<Slot>> {
        self.slots.read().ok()?.get(name).cloned()
    }

    /// The active version of `name`, which must be of `kind`.
    pub fn active(&self, kind: PluginKind, name: &str) -> Result<Arc<Active>, PluginError> {
        match self.slot(name) {
            Some(slot) if slot.kind == kind => Ok(slot.active.load_full()),
            _ => Err(PluginError::NotFound {
                kind: kind.as_str(),
                name: name.to_string(),
            }),
        }
    }

    /// Names of the plugins of a kind, sorted.
    pub fn names(&self, kind: PluginKind) -> Vec<String> {
        self.slots
            .read()
            .map(|slots| {
                slots
                    .iter()
                    .filter(|(_, slot)| slot.kind == kind)
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Compiles, type-checks and describes a component: the checks every version passes before
    /// it is loaded. `describe` runs with the manifest's default configuration.
    pub fn check(
        &self,
        wasm: &[u8],
        manifest: &Manifest,
        builtin: bool,
    ) -> Result<LoadedPlugin, PluginError> {
        check_with(&self.runtime, wasm, manifest, builtin)
    }

    /// Adds a checked version. The first version of a plugin becomes active at once; later ones
    /// wait for [`Registry::activate`].
    fn add(&self, plugin: LoadedPlugin) -> Result<Arc<LoadedPlugin>, PluginError> {
        let plugin = Arc::new(plugin);
        let name = plugin.manifest.name.clone();
        let mut slots = self
            .slots
            .write()
            .map_err(|_| PluginError::Load("registry lock poisoned".into()))?;
        match slots.get(&name) {
            Some(slot) => {
                if slot.kind != plugin.manifest.kind {
                    return Err(PluginError::Load(format!(
                        "{name} is a {} plugin; this version is a {}",
                        slot.kind.as_str(),
                        plugin.manifest.kind.as_str()
                    )));
                }
                let mut versions = slot
                    .versions
                    .lock()
                    .map_err(|_| PluginError::Load("lock poisoned".into()))?;
                if let Some(existing) = versions.get(&plugin.manifest.version) {
                    if existing.sha256 == plugin.sha256 {
                        return Ok(existing.clone());
                    }
                    return Err(PluginError::Load(format!(
                        "{name} {} already exists with different content; give the new build a new version",
                        plugin.manifest.version
                    )));
                }
                versions.insert(plugin.manifest.version.clone(), plugin.clone());
            }
            None => {
                let config = plugin
                    .manifest
                    .resolve_config(&BTreeMap::new())
                    .map_err(PluginError::Load)?;
                let slot = Slot {
                    kind: plugin.manifest.kind,
                    versions: Mutex::new(BTreeMap::from([(
                        plugin.manifest.version.clone(),
                        plugin.clone(),
                    )])),
                    active: ArcSwap::from_pointee(make_active(plugin.clone(), config)),
                    previous: Mutex::new(None),
                    config_values: Mutex::new(BTreeMap::new()),
                    changes: tokio::sync::Mutex::new(()),
                };
                slots.insert(name, Arc::new(slot));
            }
        }
        Ok(plugin)
    }

    /// Loads a built-in plugin (shipped inside the binary).
    pub fn install_builtin(
        &self,
        manifest_toml: &str,
        wasm: &[u8],
    ) -> Result<Arc<LoadedPlugin>, PluginError> {
        let manifest = Manifest::from_toml(manifest_toml).map_err(PluginError::Load)?;
        self.add(self.check(wasm, &manifest, true)?)
    }

    /// Loads a plugin from the operator's plugin directory (read at every start, not stored).
    pub fn install_local(
        &self,
        wasm: &[u8],
        manifest: &Manifest,
    ) -> Result<Arc<LoadedPlugin>, PluginError> {
        self.add(self.check(wasm, manifest, false)?)
    }

    /// Checks and stores an uploaded version; it becomes active only when activated (or when it
    /// is the plugin's first version).
    pub async fn upload(
        &self,
        wasm: &[u8],
        manifest: Manifest,
        uploaded_by: Option<&str>,
    ) -> Result<Arc<LoadedPlugin>, PluginError> {
        // Compiling takes long: on a blocking thread, so the async workers keep serving.
        let checked = {
            let runtime = self.runtime.clone();
            let (wasm, manifest) = (wasm.to_vec(), manifest.clone());
            tokio::task::spawn_blocking(move || check_with(&runtime, &wasm, &manifest, false))
                .await
                .map_err(|err| PluginError::Load(format!("checking the upload failed: {err}")))??
        };
        let existing = self
            .slot(&manifest.name)
            .and_then(|slot| slot.versions.lock().ok()?.get(&manifest.version).cloned());
        if let Some(existing) = existing {
            if existing.sha256 == checked.sha256 {
                return Ok(existing);
            }
            return Err(PluginError::Load(format!(
                "{} {} already exists with different content; give the new build a new version",
                manifest.name, manifest.version
            )));
        }
        if let Some(db) = &self.db {
            // The binary goes into the database, where every instance sharing it finds it.
            let file_name = format!("{}/{}.wasm", manifest.name, manifest.version);
            let manifest_json = serde_json::to_string(&manifest)
                .map_err(|err| PluginError::Load(err.to_string()))?;
            store::plugins::insert_version(
                db,
                &store::plugins::NewVersion {
                    name: &manifest.name,
                    version: &manifest.version,
                    kind: manifest.kind.as_str(),
                    sha256: &checked.sha256,
                    manifest: &manifest_json,
                    file_name: &file_name,
                    uploaded_by,
                    wasm,
                },
            )
            .await
            .map_err(|err| PluginError::Load(format!("cannot record the upload: {err}")))?;
        }
        let first = self.slot(&manifest.name).is_none();
        let plugin = self.add(checked)?;
        if first {
            self.persist(&manifest.name).await?;
        }
        Ok(plugin)
    }

    /// Makes `version` the active version of `name`; the version it replaces is kept for rollback.
    pub async fn activate(&self, name: &str, version: &str) -> Result<Arc<Active>, PluginError> {
        let slot = self.slot(name).ok_or_else(|| PluginError::NotFound {
            kind: "plugin",
            name: name.to_string(),
        })?;
        let _change = slot.changes.lock().await;
        let plugin = slot
            .versions
            .lock()
            .ok()
            .and_then(|versions| versions.get(version).cloned())
            .ok_or_else(|| PluginError::NotFound {
                kind: "version of",
                name: format!("{name} {version}"),
            })?;
        let current = slot.active.load_full();
        if current.plugin.manifest.version == version {
            return Ok(current);
        }
        let values = slot
            .config_values
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        let config = plugin.manifest.resolve_config(&values).map_err(|err| {
            PluginError::Load(format!(
                "the current configuration does not fit {name} {version}: {err}"
            ))
        })?;
        let previous = current.plugin.manifest.version.clone();
        self.save(name, version, Some(&previous), &values).await?;
        slot.active.store(Arc::new(make_active(plugin, config)));
        if let Ok(mut slot_previous) = slot.previous.lock() {
            *slot_previous = Some(previous);
        }
        Ok(slot.active.load_full())
    }

    /// Swaps back to the version active before the last activation.
    pub async fn rollback(&self, name: &str) -> Result<Arc<Active>, PluginError> {
        let slot = self.slot(name).ok_or_else(|| PluginError::NotFound {
            kind: "plugin",
            name: name.to_string(),
        })?;
        let previous = slot.previous.lock().ok().and_then(|p| p.clone());
        let Some(previous) = previous else {
            return Err(PluginError::Load(format!(
                "{name} has no previous version to roll back to"
            )));
        };
        self.activate(name, &previous).await
    }

    /// Sets the operator's configuration of a plugin (checked against the active version's schema).
    pub async fn configure(
        &self,
        name: &str,
        values: BTreeMap<String, String>,
    ) -> Result<Arc<Active>, PluginError> {
        let slot = self.slot(name).ok_or_else(|| PluginError::NotFound {
            kind: "plugin",
            name: name.to_string(),
        })?;
        let _change = slot.changes.lock().await;
        let current = slot.active.load_full();
        let config = current
            .plugin
            .manifest
            .resolve_config(&values)
            .map_err(PluginError::Load)?;
        if let Some(url) = config.get("base_url").filter(|url| !url.trim().is_empty()) {
            let host = super::state::host_of(url).ok_or_else(|| {
                PluginError::Load(format!("base_url {url} is not an http(s) URL"))
            })?;
            if let Some(refusal) = unreachable_host(&[host], self.runtime.egress()) {
                return Err(PluginError::Load(format!("base_url: {refusal}")));
            }
        }
        let previous = slot.previous.lock().ok().and_then(|p| p.clone());
        self.save(
            name,
            &current.plugin.manifest.version,
            previous.as_deref(),
            &values,
        )
        .await?;
        slot.active
            .store(Arc::new(make_active(current.plugin.clone(), config)));
        if let Ok(mut stored) = slot.config_values.lock() {
            *stored = values;
        }
        Ok(slot.active.load_full())
    }

    async fn persist(&self, name: &str) -> Result<(), PluginError> {
        let Some(slot) = self.slot(name) else {
            return Ok(());
        };
        let version = slot.active.load().plugin.manifest.version.clone();
        let previous = slot.previous.lock().ok().and_then(|p| p.clone());
        let values = slot
            .config_values
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        self.save(name, &version, previous.as_deref(), &values)
            .await
    }

    async fn save(
        &self,
        name: &str,
        version: &str,
        previous: Option<&str>,
        values: &BTreeMap<String, String>,
    ) -> Result<(), PluginError> {
        let Some(db) = &self.db else { return Ok(()) };
        let config = serde_json::to_string(values).unwrap_or_else(|_| "{}".into());
        store::plugins::save_settings(db, name, version, previous, &config)
            .await
            .map_err(|err| PluginError::Load(format!("cannot save plugin settings: {err}")))
    }

    /// Loads uploaded versions and applies the saved settings (at start, after the built-ins).
    pub async fn restore(&self) -> anyhow::Result<()> {
        self.refresh(None).await
    }

    /// Catches up with what another instance changed of plugin `only` (or of every plugin): a
    /// version uploaded, one activated or rolled back, the configuration. Loads the versions
    /// stored since and applies the stored settings.
    pub async fn refresh(&self, only: Option<&str>) -> anyhow::Result<()> {
        let Some(db) = &self.db else {
            return Ok(());
        };
        for row in store::plugins::versions(db).await? {
            let loaded = self
                .slot(&row.name)
                .and_then(|slot| {
                    slot.versions
                        .lock()
                        .ok()
                        .map(|v| v.contains_key(&row.version))
                })
                .unwrap_or(false);
            if only.is_some_and(|name| name != row.name) || loaded {
                continue;
            }
            if let Err(err) = self.load_stored(db, &row).await {
                tracing::error!(plugin = %row.name, version = %row.version, "stored plugin version not loaded: {err}");
            }
        }
        for settings in store::plugins::settings(db).await? {
            if only.is_none_or(|name| name == settings.name) {
                self.apply_settings(settings);
            }
        }
        Ok(())
    }

    /// Loads a stored version: its binary from the database, or for a version uploaded before
    /// binaries were kept there, from this instance's upload directory (and copies it in).
    async fn load_stored(&self, db: &Db, row: &store::plugins::VersionRow) -> Result<(), String> {
        let stored = store::plugins::wasm(db, &row.name, &row.version)
            .await
            .map_err(|err| format!("cannot read its binary: {err}"))?;
        let wasm = match stored {
            Some(wasm) => wasm,
            None => {
                let dir = self
                    .upload_dir
                    .as_ref()
                    .ok_or_else(|| "no binary stored".to_string())?;
                let wasm = std::fs::read(dir.join(&row.file_name))
                    .map_err(|err| format!("cannot read {}: {err}", row.file_name))?;
                if sha256_hex(&wasm) == row.sha256
                    && let Err(err) =
                        store::plugins::store_wasm(db, &row.name, &row.version, &wasm).await
                {
                    tracing::warn!(plugin = %row.name, version = %row.version, "cannot copy the binary into the database: {err}");
                }
                wasm
            }
        };
        if sha256_hex(&wasm) != row.sha256 {
            return Err(format!(
                "{} does not match its recorded sha256",
                row.file_name
            ));
        }
        let manifest: Manifest =
            serde_json::from_str(&row.manifest).map_err(|err| err.to_string())?;
        // Compiling takes long: on a blocking thread, so the async workers keep serving.
        let runtime = self.runtime.clone();
        let checked =
            tokio::task::spawn_blocking(move || check_with(&runtime, &wasm, &manifest, false))
                .await
                .map_err(|err| format!("checking it failed: {err}"))?
                .map_err(|err| err.to_string())?;
        self.add(checked).map(|_| ()).map_err(|err| err.to_string())
    }

    /// Makes a plugin's stored settings (active version, previous one, configuration) current.
    fn apply_settings(&self, settings: store::plugins::SettingsRow) {
        let Some(slot) = self.slot(&settings.name) else {
            tracing::warn!(plugin = %settings.name, "settings for a plugin that is not loaded");
            return;
        };
        let values: BTreeMap<String, String> =
            serde_json::from_str(&settings.config).unwrap_or_default();
        let plugin = slot
            .versions
            .lock()
            .ok()
            .and_then(|v| v.get(&settings.active_version).cloned());
        let plugin = match plugin {
            Some(plugin) => plugin,
            None => {
                // A built-in whose version moved with an upgrade: its configuration carries over.
                let current = slot.active.load_full().plugin.clone();
                tracing::warn!(plugin = %settings.name, saved = %settings.active_version,
                    active = %current.manifest.version, "the saved active version is not loaded; keeping the default version with the saved configuration");
                current
            }
        };
        match plugin.manifest.resolve_config(&values) {
            Ok(config) => {
                slot.active.store(Arc::new(make_active(plugin, config)));
                if let Ok(mut stored) = slot.config_values.lock() {
                    *stored = values;
                }
                if let Ok(mut previous) = slot.previous.lock() {
                    *previous = settings.previous_version.clone();
                }
            }
            Err(err) => {
                tracing::error!(plugin = %settings.name, "saved configuration refused: {err}")
            }
        }
    }

    pub fn list(&self) -> Vec<PluginSummary> {
        let Ok(slots) = self.slots.read() else {
            return Vec::new();
        };
        slots
            .iter()
            .map(|(name, slot)| {
                let active = slot.active.load();
                let manifest = &active.plugin.manifest;
                let versions = slot
                    .versions
                    .lock()
                    .map(|versions| {
                        versions
                            .values()
                            .map(|v| VersionSummary {
                                version: v.manifest.version.clone(),
                                sha256: v.sha256.clone(),
                                builtin: v.builtin,
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                PluginSummary {
                    name: name.clone(),
                    kind: slot.kind,
                    active_version: manifest.version.clone(),
                    previous_version: slot.previous.lock().ok().and_then(|p| p.clone()),
                    display_name: active.plugin.description.display_name.clone(),
                    description: active.plugin.description.description.clone(),
                    sha256: active.plugin.sha256.clone(),
                    builtin: active.plugin.builtin,
                    versions,
                    config: (*active.target.config).clone(),
                    config_schema: manifest.config.clone(),
                    allowed_hosts: manifest.allowed_hosts.clone(),
                    interface_version: active.plugin.prepared.interface_version(),
                }
            })
            .collect()
    }
}
