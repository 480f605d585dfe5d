//! Test guest: a strategy built against `tradehost:plugin@0.1.0`, so the host's tests show such
//! plugins keep working. Like `guest-churn`, it enters each flat symbol and exits each held one.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk_v0_1::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk_v0_1::types::{PluginError, PluginInfo, Signal, SignalAction};

struct LegacyStrategy;

impl Guest for LegacyStrategy {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "guest-legacy-strategy".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: 0.1.0 strategy".into(),
            description: "Enters when flat and exits when holding, on every scan".into(),
        }
    }

    fn evaluate(ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let signals = ctx
            .market
            .iter()
            .map(|series| Signal {
                symbol: series.symbol.clone(),
                action: if ctx.positions.iter().any(|p| p.symbol == series.symbol) {
                    SignalAction::Close
                } else {
                    SignalAction::OpenLong
                },
                size_usd: 50.0,
                stop_loss: None,
                take_profit: Vec::new(),
                confidence: 1.0,
                reason: "legacy churn".into(),
            })
            .collect();
        Ok(Evaluation {
            signals,
            state: ctx.state,
        })
    }
}

tradehost_sdk_v0_1::export_strategy!(LegacyStrategy);
