//! Risk guards: limits every proposed order ([`orders`]) and turns KPI figures into alarms
//! ([`alarms`]). Thresholds come from the caller by name; a missing or non-finite one takes
//! its default.

pub mod alarms;
pub mod orders;

#[cfg(target_arch = "wasm32")]
mod component;

use tradehost_sdk::types::{PluginInfo, Threshold};

pub const NAME: &str = "risk-guards";

pub fn describe() -> PluginInfo {
    PluginInfo {
        name: NAME.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        display_name: "Risk guards".into(),
        description: "Order limits and KPI alarms from the user's risk thresholds.".into(),
    }
}

/// A named threshold with the value used when the caller does not send it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub name: &'static str,
    pub default: f64,
}

pub const MIN_ACCOUNT_BALANCE: Limit = Limit {
    name: "min_account_balance",
    default: 100.0,
};
pub const WARNING_ACCOUNT_BALANCE: Limit = Limit {
    name: "warning_account_balance",
    default: 500.0,
};
pub const DAILY_LOSS_LIMIT_PCT: Limit = Limit {
    name: "daily_loss_limit_pct",
    default: 5.0,
};
pub const MAX_CONCURRENT_POSITIONS: Limit = Limit {
    name: "max_concurrent_positions",
    default: 5.0,
};
pub const MAX_POSITION_SIZE_PCT: Limit = Limit {
    name: "max_position_size_pct",
    default: 10.0,
};
pub const MAX_TOTAL_EXPOSURE_PCT: Limit = Limit {
    name: "max_total_exposure_pct",
    default: 80.0,
};
pub const MAX_DRAWDOWN_PCT: Limit = Limit {
    name: "max_drawdown_pct",
    default: 20.0,
};
pub const WARNING_DRAWDOWN_PCT: Limit = Limit {
    name: "warning_drawdown_pct",
    default: 15.0,
};
pub const CONSECUTIVE_LOSSES_LIMIT: Limit = Limit {
    name: "consecutive_losses_limit",
    default: 5.0,
};
pub const MIN_WIN_RATE_PCT: Limit = Limit {
    name: "min_win_rate_pct",
    default: 50.0,
};
pub const WARNING_WIN_RATE_PCT: Limit = Limit {
    name: "warning_win_rate_pct",
    default: 55.0,
};
pub const MIN_SHARPE_RATIO: Limit = Limit {
    name: "min_sharpe_ratio",
    default: 0.5,
};
pub const MIN_PROFIT_FACTOR: Limit = Limit {
    name: "min_profit_factor",
    default: 1.0,
};

/// Threshold values by name.
#[derive(Debug, Clone, Copy)]
pub struct Thresholds<'a> {
    given: &'a [Threshold],
}

impl<'a> Thresholds<'a> {
    pub fn new(given: &'a [Threshold]) -> Self {
        Self { given }
    }

    /// The caller's value for `limit`, or its default when missing or not a finite number.
    pub fn get(&self, limit: Limit) -> f64 {
        self.given
            .iter()
            .find(|threshold| threshold.name == limit.name)
            .map(|threshold| threshold.value)
            .filter(|value| value.is_finite())
            .unwrap_or(limit.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_fall_back_to_defaults() {
        let given = [
            Threshold {
                name: "max_drawdown_pct".into(),
                value: 30.0,
            },
            Threshold {
                name: "min_profit_factor".into(),
                value: f64::NAN,
            },
        ];
        let thresholds = Thresholds::new(&given);
        assert_eq!(thresholds.get(MAX_DRAWDOWN_PCT), 30.0);
        assert_eq!(thresholds.get(MIN_PROFIT_FACTOR), 1.0);
        assert_eq!(thresholds.get(WARNING_DRAWDOWN_PCT), 15.0);
    }

    #[test]
    fn describes_itself_as_in_the_manifest() {
        let info = describe();
        let manifest = include_str!("../plugin.toml");
        assert!(manifest.contains(&format!("name = \"{}\"", info.name)));
        assert!(manifest.contains(&format!("version = \"{}\"", info.version)));
        assert!(manifest.contains(&format!("display_name = \"{}\"", info.display_name)));
        assert!(manifest.contains("kind = \"risk-rule\""));
    }
}
