//! A broker's durable key-value storage for the account a call is made for: the host's `store`
//! import inside a component ([`HostStore`]), a map in native tests.

use std::collections::BTreeMap;

pub trait Store {
    fn get(&self, key: &str) -> Option<String>;
    /// Sets or (for `None`) deletes each key: all or none.
    fn write(&mut self, changes: Vec<(String, Option<String>)>) -> Result<(), String>;
    /// Entries under `prefix` after `start_after`, in key order, at most `limit`.
    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> Vec<(String, String)>;
}

impl Store for BTreeMap<String, String> {
    fn get(&self, key: &str) -> Option<String> {
        BTreeMap::get(self, key).cloned()
    }

    fn write(&mut self, changes: Vec<(String, Option<String>)>) -> Result<(), String> {
        for (key, value) in changes {
            match value {
                Some(value) => self.insert(key, value),
                None => self.remove(&key),
            };
        }
        Ok(())
    }

    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> Vec<(String, String)> {
        self.range(prefix.to_string()..)
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter(|(key, _)| start_after.is_none_or(|after| key.as_str() > after))
            .take(limit as usize)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// The host's store for the account a call is made for (inside a component).
#[cfg(target_arch = "wasm32")]
pub struct HostStore;

#[cfg(target_arch = "wasm32")]
impl Store for HostStore {
    fn get(&self, key: &str) -> Option<String> {
        crate::broker::tradehost::plugin::store::get(key)
    }

    fn write(&mut self, changes: Vec<(String, Option<String>)>) -> Result<(), String> {
        crate::broker::tradehost::plugin::store::write(&changes)
    }

    fn scan(&self, prefix: &str, start_after: Option<&str>, limit: u32) -> Vec<(String, String)> {
        crate::broker::tradehost::plugin::store::scan(prefix, start_after, limit)
            .into_iter()
            .map(|entry| (entry.key, entry.value))
            .collect()
    }
}
