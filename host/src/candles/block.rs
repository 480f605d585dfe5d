//! How a block of candles is stored: up to [`SLOTS`] consecutive interval slots of one series,
//! each present candle as its slot number and five f64s, 42 bytes.
//!
//! ```text
//! version: u8 (1) | count: u16 LE | count × (slot: u16 LE, open, high, low, close, volume: f64 LE)
//! ```
//!
//! Blocks are aligned: a block starts at a multiple of `SLOTS × interval` since the epoch, so a
//! candle's block and slot follow from its timestamp alone and an import touches only the blocks
//! its candles fall in. Slots are stored in increasing order; a missing candle takes no space.

use crate::plugins::bindings::types::Candle;

/// Interval slots per block.
pub const SLOTS: i64 = 1024;
const VERSION: u8 = 1;
const HEADER: usize = 3;
const RECORD: usize = 2 + 5 * 8;

/// The start of the block a candle opening at `timestamp_ms` falls in.
pub fn block_start(timestamp_ms: i64, interval_ms: i64) -> i64 {
    timestamp_ms - timestamp_ms.rem_euclid(interval_ms * SLOTS)
}

/// Encodes candles of one block: sorted by time, distinct, on the interval's boundaries.
pub fn encode(block_start: i64, interval_ms: i64, candles: &[Candle]) -> Vec<u8> {
    let mut data = Vec::with_capacity(HEADER + RECORD * candles.len());
    data.push(VERSION);
    data.extend_from_slice(&(candles.len() as u16).to_le_bytes());
    for candle in candles {
        let slot = (candle.timestamp_ms - block_start) / interval_ms;
        debug_assert!((0..SLOTS).contains(&slot), "a candle outside its block");
        data.extend_from_slice(&(slot as u16).to_le_bytes());
        for value in [
            candle.open,
            candle.high,
            candle.low,
            candle.close,
            candle.volume,
        ] {
            data.extend_from_slice(&value.to_le_bytes());
        }
    }
    data
}

/// Decodes a block, appending its candles to `out`; a block that is not one this module wrote
/// is refused.
pub fn decode_into(
    block_start: i64,
    interval_ms: i64,
    data: &[u8],
    out: &mut Vec<Candle>,
) -> Result<(), String> {
    let (&version, rest) = data.split_first().ok_or("an empty candle block")?;
    if version != VERSION {
        return Err(format!("candle block version {version} is not known"));
    }
    let count = rest
        .get(..2)
        .map(|bytes| u16::from_le_bytes([bytes[0], bytes[1]]) as usize)
        .ok_or("a candle block without its count")?;
    let records = &rest[2..];
    if records.len() != count * RECORD {
        return Err(format!(
            "a candle block of {count} candles holds {} bytes",
            records.len()
        ));
    }
    out.reserve(count);
    let mut previous = -1i64;
    for record in records.chunks_exact(RECORD) {
        let slot = i64::from(u16::from_le_bytes([record[0], record[1]]));
        if slot <= previous || slot >= SLOTS {
            return Err(format!("candle block slot {slot} out of order"));
        }
        previous = slot;
        let value = |i: usize| {
            let at = 2 + 8 * i;
            f64::from_le_bytes(record[at..at + 8].try_into().expect("8 bytes"))
        };
        out.push(Candle {
            timestamp_ms: block_start + slot * interval_ms,
            open: value(0),
            high: value(1),
            low: value(2),
            close: value(3),
            volume: value(4),
        });
    }
    Ok(())
}

/// Merges `new` into `old` (both sorted by time, each distinct): a candle of `new` replaces the
/// one of `old` at the same time. Returns the merged candles and how many were replaced.
pub fn merge(old: Vec<Candle>, new: &[Candle]) -> (Vec<Candle>, usize) {
    if old.is_empty() {
        return (new.to_vec(), 0);
    }
    let mut merged = Vec::with_capacity(old.len() + new.len());
    let mut replaced = 0;
    let mut old = old.into_iter().peekable();
    for candle in new {
        while let Some(earlier) = old.next_if(|c| c.timestamp_ms < candle.timestamp_ms) {
            merged.push(earlier);
        }
        if old
            .next_if(|c| c.timestamp_ms == candle.timestamp_ms)
            .is_some()
        {
            replaced += 1;
        }
        merged.push(*candle);
    }
    merged.extend(old);
    (merged, replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000;

    fn candle(timestamp_ms: i64, close: f64) -> Candle {
        Candle {
            timestamp_ms,
            open: close - 0.5,
            high: close + 1.0,
            low: close - 1.0,
            close,
            volume: 12.25,
        }
    }

    #[test]
    fn a_block_decodes_to_what_was_encoded_in_42_bytes_a_candle() {
        let start = block_start(1_704_067_200_000 + 5 * MINUTE, MINUTE);
        assert_eq!(start % (SLOTS * MINUTE), 0);
        let candles = vec![
            candle(start, 100.0),
            candle(start + MINUTE, 101.125),
            candle(start + 900 * MINUTE, 0.000_000_01),
            candle(start + (SLOTS - 1) * MINUTE, 42_000.5),
        ];
        let data = encode(start, MINUTE, &candles);
        assert_eq!(data.len(), 3 + 42 * candles.len());
        let mut decoded = Vec::new();
        decode_into(start, MINUTE, &data, &mut decoded).unwrap();
        assert_eq!(decoded, candles);
    }

    #[test]
    fn a_damaged_block_is_refused() {
        let start = 0;
        let data = encode(start, MINUTE, &[candle(0, 1.0), candle(MINUTE, 2.0)]);
        let mut out = Vec::new();
        assert!(decode_into(start, MINUTE, &data[..data.len() - 1], &mut out).is_err());
        let mut other_version = data.clone();
        other_version[0] = 2;
        assert!(decode_into(start, MINUTE, &other_version, &mut out).is_err());
        // The second slot no later than the first.
        let mut swapped = data.clone();
        swapped[3 + 42] = 0;
        assert!(decode_into(start, MINUTE, &swapped, &mut out).is_err());
        assert!(decode_into(start, MINUTE, &[], &mut out).is_err());
    }

    #[test]
    fn blocks_align_to_the_epoch_before_and_after_it() {
        assert_eq!(block_start(0, MINUTE), 0);
        assert_eq!(block_start(SLOTS * MINUTE - MINUTE, MINUTE), 0);
        assert_eq!(block_start(SLOTS * MINUTE, MINUTE), SLOTS * MINUTE);
        assert_eq!(block_start(-MINUTE, MINUTE), -SLOTS * MINUTE);
    }

    #[test]
    fn merging_replaces_candles_at_the_same_time_and_keeps_the_rest_in_order() {
        let old = vec![candle(0, 1.0), candle(MINUTE, 2.0), candle(3 * MINUTE, 4.0)];
        let new = [
            candle(MINUTE, 20.0),
            candle(2 * MINUTE, 30.0),
            candle(5 * MINUTE, 50.0),
        ];
        let (merged, replaced) = merge(old, &new);
        assert_eq!(replaced, 1);
        let closes: Vec<f64> = merged.iter().map(|c| c.close).collect();
        assert_eq!(closes, [1.0, 20.0, 30.0, 4.0, 50.0]);
        let (only_new, none) = merge(Vec::new(), &new);
        assert_eq!((only_new.len(), none), (3, 0));
    }
}
