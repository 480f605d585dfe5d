//! Test guest: a strategy that reports, as its state, what WASI's wall clock and random source
//! read (`<wall clock ms> <random u64>`), so the host can show what a guest sees of them in a
//! backtest and in a live scan. It gives no signals.
#![cfg(target_arch = "wasm32")]

use std::hash::BuildHasher;
use std::time::{SystemTime, UNIX_EPOCH};

use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo};

struct Clocks;

impl Guest for Clocks {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-clocks".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: clocks and random".into(),
            description: "reports what the clock and random source read".into(),
        }
    }

    fn evaluate(_ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let wall_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_millis());
        // A fresh hasher's keys come from WASI's random source.
        let random = std::collections::hash_map::RandomState::new().hash_one(0u8);
        Ok(Evaluation {
            signals: Vec::new(),
            state: format!("{wall_ms} {random}").into_bytes(),
        })
    }
}

tradehost_sdk::export_strategy!(Clocks);
