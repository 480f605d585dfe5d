//! Test guest: a stricter `risk-guards` (version 0.2.0) that denies every order and raises no
//! alarms, for testing that a risk rule can be swapped while the server runs.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::risk_rule::{Guest, ProposedOrder, RiskContext};
use tradehost_sdk::types::{Alarm, KpiSnapshot, PluginInfo, Threshold, Verdict};

struct StrictGuards;

impl Guest for StrictGuards {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "risk-guards".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Risk guards (strict)".into(),
            description: "Denies every order.".into(),
        }
    }

    fn check_order(_order: ProposedOrder, _ctx: RiskContext) -> Verdict {
        Verdict::Deny("strict mode: trading halted".into())
    }

    fn evaluate_alarms(_kpi: KpiSnapshot, _thresholds: Vec<Threshold>) -> Vec<Alarm> {
        Vec::new()
    }
}

tradehost_sdk::export_risk_rule!(StrictGuards);
