//! The component's exports: read the configuration from the host, then run the pure strategy.
//! An instance's configuration never changes, so it is read once per instance (a backtest
//! calls one instance for a whole run).

use std::cell::OnceCell;

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
        CONFIG.with(|cell| {
            let config = cell.get_or_init(|| Config::read(&config::from_host()));
            crate::evaluate(&ctx, config.as_ref().map_err(Clone::clone)?)
        })
    }
}

thread_local! {
    static CONFIG: OnceCell<Result<Config, PluginError>> = const { OnceCell::new() };
}

tradehost_sdk::export_strategy!(Apex);
