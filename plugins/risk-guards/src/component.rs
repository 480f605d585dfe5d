//! The component's exports. Risk guards have no configuration of their own: every threshold
//! arrives with the call.

use tradehost_sdk::risk_rule::{Guest, ProposedOrder, RiskContext};
use tradehost_sdk::types::{Alarm, KpiSnapshot, PluginInfo, Threshold, Verdict};

struct RiskGuards;

impl Guest for RiskGuards {
    fn describe() -> PluginInfo {
        crate::describe()
    }

    fn check_order(order: ProposedOrder, ctx: RiskContext) -> Verdict {
        crate::orders::check_order(&order, &ctx)
    }

    fn evaluate_alarms(kpi: KpiSnapshot, thresholds: Vec<Threshold>) -> Vec<Alarm> {
        crate::alarms::evaluate_alarms(&kpi, &thresholds)
    }
}

tradehost_sdk::export_risk_rule!(RiskGuards);
