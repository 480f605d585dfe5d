//! Test guest: a strategy whose `evaluate` never returns, for the host's time limits.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo};

struct Spin;

impl Guest for Spin {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-spin".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: endless loop".into(),
            description: "evaluate loops forever".into(),
        }
    }

    fn evaluate(_ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let mut turns: u64 = 0;
        loop {
            // `black_box` hides the counter from the optimiser, so the loop cannot be removed.
            turns = std::hint::black_box(turns.wrapping_add(1));
        }
    }
}

tradehost_sdk::export_strategy!(Spin);
