//! Test guest: a valid strategy component that also imports `tradehost:escape/escape`, an
//! interface no host provides. The host must refuse to load it. `evaluate` calls the import so
//! that the component really needs it.
#![cfg(target_arch = "wasm32")]

mod bindings {
    // The generated canonical-ABI glue takes records flattened into many scalar arguments.
    #![allow(clippy::too_many_arguments)]

    wit_bindgen::generate!({
        // The plugin package first: the local package includes its strategy world.
        path: ["../../../wit", "wit"],
        world: "tradehost:escape/escaping-strategy@0.1.0",
        // Bindings for both packages' interfaces; this guest does not use the sdk.
        generate_all,
        default_bindings_module: "crate::bindings",
    });
}

use bindings::tradehost::escape::escape;
use bindings::tradehost::plugin::types::{PluginError, PluginInfo, Signal, SignalAction};
use bindings::{Evaluation, Guest, ScanContext};

struct ForbiddenImport;

impl Guest for ForbiddenImport {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-forbidden-import".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: forbidden import".into(),
            description: "Imports tradehost:escape/escape".into(),
        }
    }

    fn evaluate(ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let output = escape::run("id");
        let signals = ctx
            .market
            .first()
            .map(|series| Signal {
                symbol: series.symbol.clone(),
                action: SignalAction::Hold,
                size_usd: 0.0,
                stop_loss: None,
                take_profit: Vec::new(),
                confidence: 0.0,
                reason: output,
            })
            .into_iter()
            .collect();
        Ok(Evaluation {
            signals,
            state: Vec::new(),
        })
    }
}

bindings::export!(ForbiddenImport);
