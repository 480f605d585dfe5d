//! A small key/value memo for a strategy's state blob.
//!
//! The host hands a strategy's previous `state` back on the next scan. [`StateMap`] stores one
//! line per key (`key<TAB>value`), readable when debugging and tolerant of anything it does not
//! understand: a blob that is not in this format decodes to an empty map.

use std::collections::BTreeMap;
use std::ops::Range;

/// The entries as [`StateMap::encode`] writes them, so a blob that a strategy wrote decodes
/// with one copy and encodes with another: no allocation per entry on every scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateMap {
    /// `key<TAB>value<LF>` lines in key order, each key once.
    text: String,
    /// Where each line of `text` is, in the same order.
    lines: Vec<Line>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Line {
    start: usize,
    tab: usize,
    /// The line feed's offset.
    end: usize,
}

impl Line {
    fn key<'t>(&self, text: &'t str) -> &'t str {
        &text[self.start..self.tab]
    }

    fn value<'t>(&self, text: &'t str) -> &'t str {
        &text[self.tab + 1..self.end]
    }
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
        Self::from_encoded(text).unwrap_or_else(|| {
            // Not as `encode` writes it: the well-formed lines, the last of a repeated key.
            let entries: BTreeMap<&str, &str> = text
                .lines()
                .filter_map(|line| line.split_once('\t'))
                .filter(|(key, _)| !key.is_empty())
                .collect();
            let mut map = Self::new();
            for (key, value) in entries {
                map.push(key, value);
            }
            map
        })
    }

    /// The map of a text exactly as `encode` writes it, or `None` for any other text.
    fn from_encoded(text: &str) -> Option<Self> {
        let mut lines: Vec<Line> = Vec::new();
        let (mut start, mut tab) = (0, None);
        for (at, byte) in text.bytes().enumerate() {
            match byte {
                b'\t' if tab.is_none() => tab = Some(at),
                b'\r' => return None,
                b'\n' => {
                    let line = Line {
                        start,
                        tab: tab.take().filter(|tab| *tab > start)?,
                        end: at,
                    };
                    let key = line.key(text);
                    if lines.last().is_some_and(|last| last.key(text) >= key) {
                        return None;
                    }
                    lines.push(line);
                    start = at + 1;
                }
                _ => {}
            }
        }
        (start == text.len()).then(|| Self {
            text: text.to_owned(),
            lines,
        })
    }

    /// Encodes the entries in key order, leaving out whole entries past `max_bytes`.
    pub fn encode(&self, max_bytes: usize) -> Vec<u8> {
        let whole = self.lines.partition_point(|line| line.end < max_bytes);
        let len = whole
            .checked_sub(1)
            .map_or(0, |last| self.lines[last].end + 1);
        self.text.as_bytes()[..len].to_vec()
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        let index = self.find(key).ok()?;
        Some(self.lines[index].value(&self.text))
    }

    /// Sets `key`. Tabs and line breaks would break the format, so such keys and values are
    /// refused (returns false).
    pub fn insert(&mut self, key: &str, value: &str) -> bool {
        let unsafe_char = |c: char| c == '\t' || c == '\n' || c == '\r';
        if key.is_empty() || key.contains(unsafe_char) || value.contains(unsafe_char) {
            return false;
        }
        match self.find(key) {
            Ok(index) => {
                let value_at = self.lines[index].tab + 1;
                self.splice(value_at..self.lines[index].end, value, index + 1);
                self.lines[index].end = value_at + value.len();
            }
            Err(index) if index == self.lines.len() => self.push(key, value),
            Err(index) => {
                let at = self.lines[index].start;
                let text = format!("{key}\t{value}\n");
                self.splice(at..at, &text, index);
                self.lines.insert(
                    index,
                    Line {
                        start: at,
                        tab: at + key.len(),
                        end: at + text.len() - 1,
                    },
                );
            }
        }
        true
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.lines
            .binary_search_by(|line| line.key(&self.text).cmp(key))
    }

    /// Appends an entry whose key sorts after every key held.
    fn push(&mut self, key: &str, value: &str) {
        let start = self.text.len();
        for part in [key, "\t", value, "\n"] {
            self.text.push_str(part);
        }
        self.lines.push(Line {
            start,
            tab: start + key.len(),
            end: self.text.len() - 1,
        });
    }

    /// Replaces `range` of the text and moves the lines from `index` on by as much as the text
    /// grew or shrank.
    fn splice(&mut self, range: Range<usize>, with: &str, index: usize) {
        let (added, removed) = (with.len(), range.len());
        self.text.replace_range(range, with);
        let moved = |offset: &mut usize| *offset = *offset + added - removed;
        for line in &mut self.lines[index..] {
            moved(&mut line.start);
            moved(&mut line.tab);
            moved(&mut line.end);
        }
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

    #[test]
    fn a_blob_out_of_order_or_with_repeated_keys_decodes_as_its_last_values_in_order() {
        let map = StateMap::decode(b"B\t2\nA\t1\nB\t3\r\nC\tx\ty\n");
        assert_eq!(map.len(), 3);
        assert_eq!(map.get("B"), Some("3"));
        assert_eq!(map.encode(1024), b"A\t1\nB\t3\nC\tx\ty\n");
        assert_eq!(StateMap::decode(b"A\t1"), StateMap::decode(b"A\t1\n"));
    }

    /// Inserts, replacements and lookups against a `BTreeMap` doing the same, through encode and
    /// decode after every change.
    #[test]
    fn behaves_as_a_sorted_map_of_its_entries() {
        let mut map = StateMap::new();
        let mut model = BTreeMap::new();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        for _ in 0..2_000 {
            let key = format!("K{}", next(40));
            let value = "v".repeat(next(12) as usize);
            assert!(map.insert(&key, &value));
            model.insert(key, value);
            let expected: String = model.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
            assert_eq!(map.encode(usize::MAX), expected.as_bytes());
            assert_eq!(StateMap::decode(expected.as_bytes()), map);
            let probe = format!("K{}", next(45));
            assert_eq!(map.get(&probe), model.get(&probe).map(String::as_str));
            assert_eq!(map.len(), model.len());
        }
    }
}
