//! Test guest: a strategy whose `evaluate` allocates without bound, for the host's memory
//! limits. Running out of memory aborts, which traps.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo};

const CHUNK_BYTES: usize = 1 << 20;
const WASM_PAGE_BYTES: usize = 1 << 16;

struct Alloc;

impl Guest for Alloc {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-alloc".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: unbounded allocation".into(),
            description: "evaluate allocates 1 MiB chunks forever".into(),
        }
    }

    fn evaluate(_ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut chunk = vec![0u8; CHUNK_BYTES];
            // Write to every page so the memory is really used, not only reserved.
            for byte in chunk.iter_mut().step_by(WASM_PAGE_BYTES) {
                *byte = 1;
            }
            hoard.push(chunk);
            // Keeps the optimiser from dropping allocations nobody reads.
            std::hint::black_box(&mut hoard);
        }
    }
}

tradehost_sdk::export_strategy!(Alloc);
