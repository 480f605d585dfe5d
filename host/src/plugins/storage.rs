//! The `store` capability of broker plugins: durable key-value text private to one plugin and
//! one user. A simulated venue keeps its book of orders and fills here; a live venue's plugin
//! can keep a nonce that must keep growing across restarts.
//!
//! Calls that carry a user are serialised per (plugin, user) (`store_access`), so a plugin's
//! read-modify-write is never interleaved with another call's. Each `write` is one transaction,
//! durable when it returns (or held back by the call for its caller to write with the call's
//! outcome). Reads are answered from memory where this process knows the answer ([`StoreCache`]).

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::store_cache::{Lookup, StoreCache};
use crate::store::Db;

pub const MAX_KEY_BYTES: usize = 256;
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
pub const MAX_CHANGES: usize = 256;
pub const MAX_SCAN: u32 = 1000;

/// Where plugin stores live.
pub trait PluginStorage: Send + Sync {
    fn get(&self, plugin: &str, scope: &str, key: &str) -> Result<Option<String>, String>;
    fn write(
        &self,
        plugin: &str,
        scope: &str,
        changes: &[(String, Option<String>)],
    ) -> Result<(), String>;
    fn scan(
        &self,
        plugin: &str,
        scope: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, String)>, String>;
    /// Takes note of changes a caller wrote in its own transaction, durable now (a call's held
    /// writes: `store_access::HeldWrites`); a store that is not in the server's database
    /// applies them.
    fn adopt(&self, plugin: &str, scope: &str, changes: &[(String, Option<String>)]);
    /// Drops whatever is remembered in memory of the user's stores, so they are read afresh.
    fn forget_scope(&self, _scope: &str) {}
}

/// A key is printable ASCII (so byte order and every database's order agree), 1 to 256 bytes.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_BYTES && key.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Checks a write before it reaches storage.
pub fn check_changes(changes: &[(String, Option<String>)]) -> Result<(), String> {
    if changes.len() > MAX_CHANGES {
        return Err(format!(
            "{} changes in one write; at most {MAX_CHANGES}",
            changes.len()
        ));
    }
    for (key, value) in changes {
        if !valid_key(key) {
            return Err(format!(
                "invalid key {:?}: 1 to {MAX_KEY_BYTES} bytes of printable ASCII",
                key.chars().take(40).collect::<String>()
            ));
        }
        if value.as_ref().is_some_and(|v| v.len() > MAX_VALUE_BYTES) {
            return Err(format!("value of {key} exceeds {MAX_VALUE_BYTES} bytes"));
        }
    }
    Ok(())
}

/// The plugin stores in the server's database (`plugin_store`), with what this process knows of
/// them in memory ([`StoreCache`]).
pub struct DbStorage {
    db: Db,
    runtime: tokio::runtime::Handle,
    known: StoreCache,
}

impl DbStorage {
    /// Must be created inside the server's Tokio runtime: calls block on it from plugin threads.
    pub fn new(db: Db) -> Self {
        Self {
            db,
            runtime: tokio::runtime::Handle::current(),
            known: StoreCache::default(),
        }
    }

    fn block_on<T, E: std::fmt::Display>(
        &self,
        work: impl std::future::Future<Output = Result<T, E>>,
    ) -> Result<T, String> {
        // Plugin calls run on the runtime's blocking threads (`plugins::off_thread`), where
        // blocking on a future is allowed.
        self.runtime.block_on(work).map_err(|err| {
            tracing::error!(error = %err, "plugin store");
            "the plugin store is not available".to_string()
        })
    }
}

impl PluginStorage for DbStorage {
    fn get(&self, plugin: &str, scope: &str, key: &str) -> Result<Option<String>, String> {
        if let Lookup::Known(value) = self.known.get(plugin, scope, key) {
            return Ok(value);
        }
        let value = self.block_on(crate::store::plugin_store::get(
            &self.db.pool,
            plugin,
            scope,
            key,
        ))?;
        self.known.read(plugin, scope, key, value.as_deref());
        Ok(value)
    }

    fn write(
        &self,
        plugin: &str,
        scope: &str,
        changes: &[(String, Option<String>)],
    ) -> Result<(), String> {
        match self.block_on(crate::store::plugin_store::write(
            &self.db, plugin, scope, changes,
        )) {
            Ok(()) => {
                self.known.wrote(plugin, scope, changes);
                Ok(())
            }
            Err(err) => {
                // Whether it was written is not known.
                self.known.forget(plugin, scope);
                Err(err)
            }
        }
    }

    fn scan(
        &self,
        plugin: &str,
        scope: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, String)>, String> {
        let limit = limit.min(MAX_SCAN);
        if let Lookup::Known(entries) =
            self.known
                .scan(plugin, scope, prefix, start_after, limit as usize)
        {
            return Ok(entries);
        }
        let entries = self.block_on(crate::store::plugin_store::scan(
            &self.db.pool,
            plugin,
            scope,
            prefix,
            start_after,
            limit,
        ))?;
        // From the first key of the prefix and short of the limit: every key it has.
        let whole =
            start_after.is_none_or(|after| after < prefix) && entries.len() < limit as usize;
        self.known.scanned(plugin, scope, prefix, &entries, whole);
        Ok(entries)
    }

    fn adopt(&self, plugin: &str, scope: &str, changes: &[(String, Option<String>)]) {
        self.known.wrote(plugin, scope, changes);
    }

    fn forget_scope(&self, scope: &str) {
        self.known.forget_scope(scope);
    }
}

/// Plugin stores in memory: for tools and tests that run plugins without a database.
#[derive(Default)]
pub struct MemoryStorage {
    entries: Mutex<BTreeMap<(String, String), BTreeMap<String, String>>>,
}

impl PluginStorage for MemoryStorage {
    fn get(&self, plugin: &str, scope: &str, key: &str) -> Result<Option<String>, String> {
        let entries = self.entries.lock().map_err(|_| "store lock poisoned")?;
        Ok(entries
            .get(&(plugin.to_string(), scope.to_string()))
            .and_then(|map| map.get(key).cloned()))
    }

    fn write(
        &self,
        plugin: &str,
        scope: &str,
        changes: &[(String, Option<String>)],
    ) -> Result<(), String> {
        let mut entries = self.entries.lock().map_err(|_| "store lock poisoned")?;
        let map = entries
            .entry((plugin.to_string(), scope.to_string()))
            .or_default();
        for (key, value) in changes {
            match value {
                Some(value) => map.insert(key.clone(), value.clone()),
                None => map.remove(key),
            };
        }
        Ok(())
    }

    fn scan(
        &self,
        plugin: &str,
        scope: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, String)>, String> {
        let entries = self.entries.lock().map_err(|_| "store lock poisoned")?;
        let Some(map) = entries.get(&(plugin.to_string(), scope.to_string())) else {
            return Ok(Vec::new());
        };
        Ok(map
            .range(prefix.to_string()..)
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(key, _)| start_after.is_none_or(|after| key.as_str() > after))
            .take(limit.min(MAX_SCAN) as usize)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect())
    }

    fn adopt(&self, plugin: &str, scope: &str, changes: &[(String, Option<String>)]) {
        if let Err(err) = self.write(plugin, scope, changes) {
            tracing::error!(plugin, error = %err, "plugin store");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_store_scans_a_prefix_in_key_order() {
        let store = MemoryStorage::default();
        let changes: Vec<(String, Option<String>)> = ["b/2", "a/1", "b/1", "b/3", "c/1"]
            .iter()
            .map(|k| (k.to_string(), Some(k.to_uppercase())))
            .collect();
        store.write("p", "u", &changes).unwrap();
        let keys = |after: Option<&str>, limit| {
            store
                .scan("p", "u", "b/", after, limit)
                .unwrap()
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(None, 10), ["b/1", "b/2", "b/3"]);
        assert_eq!(keys(Some("b/1"), 1), ["b/2"]);
        assert!(store.scan("p", "other", "b/", None, 10).unwrap().is_empty());
        store.write("p", "u", &[("b/2".into(), None)]).unwrap();
        assert_eq!(keys(None, 10), ["b/1", "b/3"]);
        assert_eq!(store.get("p", "u", "a/1").unwrap().as_deref(), Some("A/1"));
    }

    #[test]
    fn writes_are_checked() {
        assert!(check_changes(&[("ok key".into(), Some("v".into()))]).is_ok());
        assert!(check_changes(&[("".into(), None)]).is_err());
        assert!(check_changes(&[("é".into(), None)]).is_err());
        assert!(check_changes(&[("k".repeat(257), None)]).is_err());
        assert!(check_changes(&[("k".into(), Some("v".repeat(MAX_VALUE_BYTES + 1)))]).is_err());
        let many: Vec<_> = (0..=MAX_CHANGES).map(|i| (format!("k{i}"), None)).collect();
        assert!(check_changes(&many).is_err());
    }
}
