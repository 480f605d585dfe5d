//! Load-test guest: a strategy that trades on every scan. Each symbol without a position gets a
//! small long entry and each held one is closed, so every scan of a bot fills orders. Used by the
//! engine benchmark's "with trades" case.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::config;
use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo, Signal, SignalAction};

struct Churn;

impl Guest for Churn {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-churn".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: churn".into(),
            description: "Enters when flat and exits when holding, on every scan".into(),
        }
    }

    fn evaluate(ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let size_usd = config::from_host()
            .number("size_usd", 50.0)
            .map_err(|err| PluginError::InvalidInput(err.to_string()))?;
        let signals = ctx
            .market
            .iter()
            .map(|series| {
                let held = ctx.positions.iter().any(|p| p.symbol == series.symbol);
                Signal {
                    symbol: series.symbol.clone(),
                    action: if held {
                        SignalAction::Close
                    } else {
                        SignalAction::OpenLong
                    },
                    size_usd,
                    stop_loss: None,
                    take_profit: Vec::new(),
                    confidence: 1.0,
                    reason: "churn".into(),
                }
            })
            .collect();
        Ok(Evaluation {
            signals,
            state: Vec::new(),
        })
    }
}

tradehost_sdk::export_strategy!(Churn);
