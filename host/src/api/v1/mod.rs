//! The platform API under `/api/v1`.

pub mod account;
pub mod admin;
pub mod analytics;
pub mod auth;
pub mod backtests;
pub mod candles;
pub mod config;
pub mod market;
pub mod notifications;
pub mod plugins;
pub mod subscription;
pub mod trading;
pub mod webhooks;

// The platform API's routes and their documentation.
crate::api::route_sets![
    auth,
    admin,
    plugins,
    trading,
    account,
    analytics,
    market,
    candles,
    backtests,
    config,
    notifications,
    subscription,
    webhooks,
];
