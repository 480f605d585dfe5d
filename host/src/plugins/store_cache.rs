//! What this process knows of each plugin store it has read or written: values of keys, keys known
//! absent, and prefixes whose every key it knows. A simulated venue reads its account, its working
//! orders and the order at hand on every call; from here those reads cost no database round trip.
//!
//! It stays true because every write of a plugin store goes through this process's
//! `DbStorage`, which updates it after the write is durable, and calls on one store are
//! serialised ([`super::storage::ScopeLocks`]). A bot's start forgets its user's stores, so the
//! comparison with the venue that follows reads them as they are; an instance that takes a store
//! over from another must forget it too. Each store's part is bounded in bytes; one that grows
//! past the bound starts again from nothing.

use std::collections::BTreeMap;

use dashmap::DashMap;

/// The most bytes of keys and values kept for one store.
pub const MAX_SCOPE_BYTES: usize = 64 * 1024;

#[derive(Default)]
pub struct StoreCache {
    scopes: DashMap<(String, String), Known>,
}

#[derive(Default)]
struct Known {
    /// Keys read or written: their value, or `None` when the key is absent.
    keys: BTreeMap<String, Option<String>>,
    /// Prefixes whose every present key is in `keys` (a scan read them all).
    complete: Vec<String>,
    bytes: usize,
}

/// What the cache says of a read: the answer, or that the database must be asked.
pub enum Lookup<T> {
    Known(T),
    Unknown,
}

impl Known {
    fn covers(&self, prefix: &str) -> bool {
        self.complete.iter().any(|done| prefix.starts_with(done))
    }

    fn set(&mut self, key: &str, value: Option<&str>) {
        let size = |key: &str, value: Option<&str>| key.len() + value.map_or(0, str::len);
        if let Some(old) = self.keys.insert(key.to_string(), value.map(str::to_string)) {
            self.bytes -= size(key, old.as_deref());
        }
        self.bytes += size(key, value);
    }

    fn too_big(&self) -> bool {
        self.bytes > MAX_SCOPE_BYTES
    }
}

impl StoreCache {
    pub fn get(&self, plugin: &str, scope: &str, key: &str) -> Lookup<Option<String>> {
        let Some(known) = self.scopes.get(&(plugin.to_string(), scope.to_string())) else {
            return Lookup::Unknown;
        };
        match known.keys.get(key) {
            Some(value) => Lookup::Known(value.clone()),
            None if known.covers(key) => Lookup::Known(None),
            None => Lookup::Unknown,
        }
    }

    /// Records what the database said of `key`.
    pub fn read(&self, plugin: &str, scope: &str, key: &str, value: Option<&str>) {
        self.update(plugin, scope, |known| known.set(key, value));
    }

    /// Entries with `prefix` after `start_after` in key order, when every key with the prefix
    /// is known.
    pub fn scan(
        &self,
        plugin: &str,
        scope: &str,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
    ) -> Lookup<Vec<(String, String)>> {
        let Some(known) = self.scopes.get(&(plugin.to_string(), scope.to_string())) else {
            return Lookup::Unknown;
        };
        if !known.covers(prefix) {
            return Lookup::Unknown;
        }
        Lookup::Known(
            known
                .keys
                .range(prefix.to_string()..)
                .take_while(|(key, _)| key.starts_with(prefix))
                .filter(|(key, _)| start_after.is_none_or(|after| key.as_str() > after))
                .filter_map(|(key, value)| Some((key.clone(), value.clone()?)))
                .take(limit)
                .collect(),
        )
    }

    /// Records what a scan of the database returned; `whole`: it returned every key with the
    /// prefix.
    pub fn scanned(
        &self,
        plugin: &str,
        scope: &str,
        prefix: &str,
        entries: &[(String, String)],
        whole: bool,
    ) {
        self.update(plugin, scope, |known| {
            for (key, value) in entries {
                known.set(key, Some(value));
            }
            if whole && !known.covers(prefix) {
                known.complete.push(prefix.to_string());
            }
        });
    }

    /// Records changes that are durable.
    pub fn wrote(&self, plugin: &str, scope: &str, changes: &[(String, Option<String>)]) {
        self.update(plugin, scope, |known| {
            for (key, value) in changes {
                known.set(key, value.as_deref());
            }
        });
    }

    /// Drops what is known of a store (after a write whose outcome is unknown, or when another
    /// instance may have written it).
    pub fn forget(&self, plugin: &str, scope: &str) {
        self.scopes.remove(&(plugin.to_string(), scope.to_string()));
    }

    /// Drops what is known of every plugin's store for one user.
    pub fn forget_scope(&self, scope: &str) {
        self.scopes
            .retain(|(_, known_scope), _| known_scope != scope);
    }

    fn update(&self, plugin: &str, scope: &str, change: impl FnOnce(&mut Known)) {
        let mut known = self
            .scopes
            .entry((plugin.to_string(), scope.to_string()))
            .or_default();
        change(&mut known);
        if known.too_big() {
            *known = Known::default();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known<T>(lookup: Lookup<T>) -> Option<T> {
        match lookup {
            Lookup::Known(value) => Some(value),
            Lookup::Unknown => None,
        }
    }

    #[test]
    fn reads_and_writes_are_remembered_and_absent_keys_only_under_a_whole_scan() {
        let cache = StoreCache::default();
        assert!(known(cache.get("p", "u", "account")).is_none());
        cache.read("p", "u", "account", Some("1"));
        cache.read("p", "u", "order/9", None);
        assert_eq!(
            known(cache.get("p", "u", "account")),
            Some(Some("1".into()))
        );
        assert_eq!(known(cache.get("p", "u", "order/9")), Some(None));
        // Another store, and a key never read, are unknown.
        assert!(known(cache.get("p", "other", "account")).is_none());
        assert!(known(cache.get("p", "u", "open/1")).is_none());

        // A partial scan teaches its entries, not the prefix.
        let open = vec![("open/1".to_string(), "x".to_string())];
        cache.scanned("p", "u", "open/", &open, false);
        assert!(known(cache.scan("p", "u", "open/", None, 10)).is_none());
        assert!(known(cache.get("p", "u", "open/2")).is_none());
        cache.scanned("p", "u", "open/", &open, true);
        assert_eq!(known(cache.scan("p", "u", "open/", None, 10)), Some(open));
        assert_eq!(known(cache.get("p", "u", "open/2")), Some(None));

        // Writes keep the whole prefix true: a new key appears, a removed one goes.
        cache.wrote(
            "p",
            "u",
            &[("open/2".into(), Some("y".into())), ("open/1".into(), None)],
        );
        assert_eq!(
            known(cache.scan("p", "u", "open/", None, 10)),
            Some(vec![("open/2".to_string(), "y".to_string())])
        );
        assert_eq!(
            known(cache.scan("p", "u", "open/", Some("open/2"), 10)),
            Some(vec![])
        );
        cache.forget("p", "u");
        assert!(known(cache.get("p", "u", "account")).is_none());
        cache.read("p", "u", "account", Some("1"));
        cache.read("q", "u", "account", Some("2"));
        cache.read("p", "v", "account", Some("3"));
        cache.forget_scope("u");
        assert!(known(cache.get("p", "u", "account")).is_none());
        assert!(known(cache.get("q", "u", "account")).is_none());
        assert!(known(cache.get("p", "v", "account")).is_some());
    }

    #[test]
    fn a_store_past_its_bound_starts_again() {
        let cache = StoreCache::default();
        cache.read("p", "u", "account", Some("1"));
        let big = "v".repeat(MAX_SCOPE_BYTES);
        cache.wrote("p", "u", &[("blob".into(), Some(big))]);
        assert!(known(cache.get("p", "u", "account")).is_none());
        assert!(known(cache.get("p", "u", "blob")).is_none());
        // Replacing a value counts its new size, not both.
        for _ in 0..100 {
            cache.wrote("p", "u", &[("k".into(), Some("v".repeat(1000)))]);
        }
        assert!(known(cache.get("p", "u", "k")).is_some());
    }
}
