//! A small key/value memo for a strategy's state blob.
//!
//! The host hands a strategy's previous `state` back on the next scan. [`StateMap`] stores one
//! line per key (`key<TAB>value`), readable when debugging and tolerant of anything it does not
//! understand: a blob that is not in this format decodes to an empty map.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateMap {
    entries: BTreeMap<String, String>,
}

impl StateMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes a blob written by [`StateMap::encode`]; malformed lines are skipped.
    pub fn decode(blob: &[u8]) -> Self {
        let Ok(text) = std::str::from_utf8(blob) else {
            return Self::new();
        };
        let entries = text
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .filter(|(key, _)| !key.is_empty())
            .map(|(key, value)| (key.to_owned(), value.to_owned()))
            .collect();
        Self { entries }
    }

    /// Encodes the entries in key order, leaving out whole entries past `max_bytes`.
    pub fn encode(&self, max_bytes: usize) -> Vec<u8> {
        let mut blob = Vec::new();
        for (key, value) in &self.entries {
            let line_len = key.len() + value.len() + 2;
            if blob.len() + line_len > max_bytes {
                break;
            }
            blob.extend_from_slice(key.as_bytes());
            blob.push(b'\t');
            blob.extend_from_slice(value.as_bytes());
            blob.push(b'\n');
        }
        blob
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }

    /// Sets `key`. Tabs and line breaks would break the format, so such keys and values are
    /// refused (returns false).
    pub fn insert(&mut self, key: &str, value: &str) -> bool {
        let unsafe_char = |c: char| c == '\t' || c == '\n' || c == '\r';
        if key.is_empty() || key.contains(unsafe_char) || value.contains(unsafe_char) {
            return false;
        }
        self.entries.insert(key.to_owned(), value.to_owned());
        true
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let mut map = StateMap::new();
        assert!(map.insert("BTC-USD", "1700000000000 up done"));
        assert!(map.insert("ETH-USD", "1700000060000 down pending"));
        let blob = map.encode(1024);
        assert_eq!(
            blob,
            b"BTC-USD\t1700000000000 up done\nETH-USD\t1700000060000 down pending\n"
        );
        assert_eq!(StateMap::decode(&blob), map);
    }

    #[test]
    fn garbage_decodes_to_empty_or_skips_lines() {
        assert!(StateMap::decode(&[0xff, 0xfe, 0x00]).is_empty());
        let map = StateMap::decode(b"no tab here\nSOL-USD\t1\n\tno key\n");
        assert_eq!(map.len(), 1);
        assert_eq!(map.get("SOL-USD"), Some("1"));
    }

    #[test]
    fn refuses_separator_characters() {
        let mut map = StateMap::new();
        assert!(!map.insert("A\tB", "x"));
        assert!(!map.insert("A", "x\ny"));
        assert!(!map.insert("", "x"));
        assert!(map.is_empty());
    }

    #[test]
    fn encode_respects_the_size_limit() {
        let mut map = StateMap::new();
        map.insert("A", "1234");
        map.insert("B", "5678");
        assert_eq!(map.encode(7), b"A\t1234\n");
        assert_eq!(map.encode(6), b"");
        assert_eq!(map.encode(14).len(), 14);
    }
}
