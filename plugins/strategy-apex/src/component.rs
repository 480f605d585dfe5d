//! The component's exports: read the configuration from the host, then run the pure strategy.

use tradehost_sdk::config;
use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo};

use crate::Config;

struct Apex;

impl Guest for Apex {
    fn describe() -> PluginInfo {
        crate::describe()
    }

    fn evaluate(ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let config = Config::read(&config::from_host())?;
        crate::evaluate(&ctx, &config)
    }
}

tradehost_sdk::export_strategy!(Apex);
