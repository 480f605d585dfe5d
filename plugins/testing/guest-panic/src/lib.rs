//! Test guest: a strategy whose `evaluate` panics. The message goes to the guest's stderr,
//! then the instance traps.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo};

struct Panic;

impl Guest for Panic {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-panic".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: panic".into(),
            description: "evaluate panics with a message".into(),
        }
    }

    fn evaluate(ctx: ScanContext) -> Result<Evaluation, PluginError> {
        panic!(
            "guest-panic: evaluate panicked on purpose (scan {})",
            ctx.scan_id
        )
    }
}

tradehost_sdk::export_strategy!(Panic);
