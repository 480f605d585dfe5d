//! Test guest: a strategy whose `evaluate` executes `unreachable`, an immediate trap.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo};

struct Trap;

impl Guest for Trap {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-trap".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: trap".into(),
            description: "evaluate executes an unreachable instruction".into(),
        }
    }

    fn evaluate(_ctx: ScanContext) -> Result<Evaluation, PluginError> {
        core::arch::wasm32::unreachable()
    }
}

tradehost_sdk::export_strategy!(Trap);
