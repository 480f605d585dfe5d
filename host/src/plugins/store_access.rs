//! What one plugin call reaches of a user's store: calls on behalf of a user are serialised per
//! (plugin, user) by [`ScopeLocks`], and a call may hold its writes back ([`HeldWrites`]) for
//! its caller to write with what the call's outcome changes in the books.
//!
//! A held-back write is read back by the call that made it, and is written before anything
//! leaves the call (an outgoing request) and before a scan. The call's lock on the store is kept
//! until the caller has written the held writes (or given them up), so no other call reads the
//! store without them.

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex};

use dashmap::DashMap;

use super::storage::PluginStorage;
use crate::store::plugin_store::Change;

/// A key's change: its new value, or `None` to remove it.
pub type KeyChange = (String, Option<String>);

/// One lock per (plugin, user): a call that can reach a user's store holds it throughout.
#[derive(Default)]
pub struct ScopeLocks {
    locks: DashMap<(Arc<str>, String), Arc<ScopeLock>>,
}

#[derive(Default)]
struct ScopeLock {
    busy: Mutex<bool>,
    freed: Condvar,
}

/// A held lock on one user's store of one plugin; released when dropped, on any thread.
pub struct ScopeGuard(Arc<ScopeLock>);

impl ScopeLocks {
    /// Waits for the lock of (plugin, user) (blocking the thread: plugin calls run on blocking
    /// threads).
    pub fn lock(&self, plugin: &Arc<str>, scope: &str) -> ScopeGuard {
        let lock = self
            .locks
            .entry((plugin.clone(), scope.to_string()))
            .or_default()
            .clone();
        let mut busy = lock.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy {
            busy = lock.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy = true;
        drop(busy);
        ScopeGuard(lock)
    }
}

impl Drop for ScopeGuard {
    fn drop(&mut self) {
        *self.0.busy.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.0.freed.notify_one();
    }
}

/// What one call's store reaches: the backend, the plugin and user it is private to, and the
/// writes the call holds back (when it does).
pub struct StoreAccess {
    backend: Arc<dyn PluginStorage>,
    plugin: Arc<str>,
    scope: String,
    held: Option<Held>,
    /// A key the caller knows is absent until the call writes it (the plugin's record of an
    /// order under a client id never sent before).
    absent: Option<String>,
}

/// Writes held back, in order, and each key's value after them.
#[derive(Default)]
struct Held {
    changes: Vec<KeyChange>,
    latest: BTreeMap<String, Option<String>>,
}

impl StoreAccess {
    /// `hold_writes`: the call's writes wait for its caller ([`StoreAccess::take_held`]).
    pub fn new(
        backend: Arc<dyn PluginStorage>,
        plugin: Arc<str>,
        scope: String,
        hold_writes: bool,
    ) -> Self {
        Self {
            backend,
            plugin,
            scope,
            held: hold_writes.then(Held::default),
            absent: None,
        }
    }

    /// Tells the call that `key` is absent from the store: reading it asks no one.
    pub fn know_absent(&mut self, key: String) {
        self.absent = Some(key);
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, String> {
        if let Some(value) = self.held.as_ref().and_then(|held| held.latest.get(key)) {
            return Ok(value.clone());
        }
        if self.absent.as_deref() == Some(key) {
            return Ok(None);
        }
        self.backend.get(&self.plugin, &self.scope, key)
    }

    /// Writes the changes (checked before), or holds them back.
    pub fn write(&mut self, changes: Vec<KeyChange>) -> Result<(), String> {
        if changes
            .iter()
            .any(|(key, _)| self.absent.as_deref() == Some(key.as_str()))
        {
            self.absent = None;
        }
        match &mut self.held {
            Some(held) => {
                for (key, value) in &changes {
                    held.latest.insert(key.clone(), value.clone());
                }
                held.changes.extend(changes);
                Ok(())
            }
            None => self.backend.write(&self.plugin, &self.scope, &changes),
        }
    }

    /// A scan reads the store as written: what is held back is written first.
    pub fn scan(
        &mut self,
        prefix: &str,
        start_after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<(String, String)>, String> {
        self.flush()?;
        self.backend
            .scan(&self.plugin, &self.scope, prefix, start_after, limit)
    }

    /// Writes what is held back: before anything leaves the call.
    pub fn flush(&mut self) -> Result<(), String> {
        let Some(held) = self.held.as_mut().filter(|held| !held.changes.is_empty()) else {
            return Ok(());
        };
        self.backend
            .write(&self.plugin, &self.scope, &held.changes)?;
        *held = Held::default();
        Ok(())
    }

    /// The writes held back, for the caller to write, with the call's lock on the store.
    pub fn take_held(&mut self, lock: ScopeGuard) -> HeldWrites {
        HeldWrites {
            backend: self.backend.clone(),
            plugin: self.plugin.clone(),
            scope: self.scope.clone(),
            changes: self.held.take().unwrap_or_default().changes,
            lock: Some(lock),
        }
    }
}

/// Writes a call held back, and its lock on the store: the caller writes them in its own
/// transaction and then says so ([`HeldWrites::written`]), or says it does not know whether
/// they were written ([`HeldWrites::unknown`]). The lock is released either way.
pub struct HeldWrites {
    backend: Arc<dyn PluginStorage>,
    plugin: Arc<str>,
    scope: String,
    changes: Vec<KeyChange>,
    lock: Option<ScopeGuard>,
}

impl HeldWrites {
    pub fn plugin(&self) -> &str {
        &self.plugin
    }

    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The changes, in order (the last of a key counts).
    pub fn changes(&self) -> &[KeyChange] {
        &self.changes
    }

    /// The changes as rows of `plugin_store`, for the caller's transaction.
    pub fn rows(&self) -> Vec<Change> {
        self.changes
            .iter()
            .map(|(key, value)| Change {
                plugin: self.plugin.to_string(),
                scope: self.scope.clone(),
                key: key.clone(),
                value: value.clone(),
            })
            .collect()
    }

    /// The changes are durable (written by the caller).
    pub fn written(mut self) {
        self.backend.adopt(&self.plugin, &self.scope, &self.changes);
        self.changes.clear();
        self.lock.take();
    }

    /// Whether the changes were written is not known: what is remembered of the store is
    /// dropped, so it is read as it is.
    pub fn unknown(mut self) {
        self.backend.forget_scope(&self.scope);
        self.changes.clear();
        self.lock.take();
    }
}

impl Drop for HeldWrites {
    fn drop(&mut self) {
        if !self.changes.is_empty() {
            tracing::error!(
                plugin = &*self.plugin,
                changes = self.changes.len(),
                "held plugin store writes were dropped unwritten"
            );
            self.backend.forget_scope(&self.scope);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::storage::MemoryStorage;

    fn change(key: &str, value: Option<&str>) -> KeyChange {
        (key.to_string(), value.map(str::to_string))
    }

    #[test]
    fn held_writes_are_read_back_flushed_before_a_scan_and_handed_over_with_the_lock() {
        let backend: Arc<dyn PluginStorage> = Arc::new(MemoryStorage::default());
        let locks = ScopeLocks::default();
        let plugin: Arc<str> = Arc::from("paper");
        let mut access = StoreAccess::new(backend.clone(), plugin.clone(), "u1".into(), true);

        access.write(vec![change("a", Some("1"))]).unwrap();
        assert_eq!(access.get("a").unwrap().as_deref(), Some("1"));
        assert_eq!(backend.get("paper", "u1", "a").unwrap(), None, "held back");
        let listed = access.scan("", None, 10).unwrap();
        assert_eq!(
            listed,
            [("a".to_string(), "1".to_string())],
            "written first"
        );

        access
            .write(vec![change("b", Some("2")), change("a", None)])
            .unwrap();
        assert_eq!(
            access.get("a").unwrap(),
            None,
            "a removal held back reads as one"
        );
        let held = access.take_held(locks.lock(&plugin, "u1"));
        assert_eq!(held.changes(), [change("b", Some("2")), change("a", None)]);
        assert_eq!(backend.get("paper", "u1", "b").unwrap(), None);

        // Another call waits for the lock until the caller has written them.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _lock = locks.lock(&plugin, "u1");
                tx.send(backend.get("paper", "u1", "b").unwrap()).unwrap();
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(rx.try_recv().is_err(), "the other call waits");
            held.written();
            assert_eq!(rx.recv().unwrap().as_deref(), Some("2"));
        });
        assert_eq!(backend.get("paper", "u1", "a").unwrap(), None);
    }

    #[test]
    fn a_call_that_does_not_hold_writes_writes_at_once() {
        let backend: Arc<dyn PluginStorage> = Arc::new(MemoryStorage::default());
        let mut access = StoreAccess::new(backend.clone(), Arc::from("paper"), "u1".into(), false);
        access.write(vec![change("a", Some("1"))]).unwrap();
        assert_eq!(
            backend.get("paper", "u1", "a").unwrap().as_deref(),
            Some("1")
        );
        let held = access.take_held(ScopeLocks::default().lock(&Arc::from("paper"), "u1"));
        assert!(held.changes().is_empty());
        held.written();
    }

    #[test]
    fn a_key_known_absent_is_read_from_no_store_until_the_call_writes_it() {
        for hold_writes in [true, false] {
            let backend: Arc<dyn PluginStorage> = Arc::new(MemoryStorage::default());
            // What the store would answer, were it asked.
            backend
                .write(
                    "paper",
                    "u1",
                    &[
                        change("order/c1", Some("stale")),
                        change("account", Some("a")),
                    ],
                )
                .unwrap();
            let mut access = StoreAccess::new(
                backend.clone(),
                Arc::from("paper"),
                "u1".into(),
                hold_writes,
            );
            access.know_absent("order/c1".into());
            assert_eq!(
                access.get("order/c1").unwrap(),
                None,
                "the store is not asked"
            );
            assert_eq!(access.get("account").unwrap().as_deref(), Some("a"));

            access.write(vec![change("order/c1", Some("o"))]).unwrap();
            // Written through or flushed, the key is read as written.
            access.flush().unwrap();
            assert_eq!(
                access.get("order/c1").unwrap().as_deref(),
                Some("o"),
                "hold_writes {hold_writes}"
            );
        }
    }
}
