//! Host bindings of the plugin worlds in `wit/`: the current package (`tradehost:plugin@0.2.0`)
//! and, in [`v0_1`], the frozen 0.1.0 package in `wit/0.1.0`, so components built against it keep
//! loading (`legacy.rs` adapts their calls). Within a version the shared `types`, `host` and
//! `http` interfaces are generated once (with the strategy world) and reused by the others.

pub mod strategy {
    wasmtime::component::bindgen!({
        world: "strategy",
        path: "../wit",
        additional_derives: [PartialEq],
    });
}

pub mod risk_rule {
    wasmtime::component::bindgen!({
        world: "risk-rule",
        path: "../wit",
        additional_derives: [PartialEq],
        with: {
            "tradehost:plugin/types": super::strategy::tradehost::plugin::types,
            "tradehost:plugin/host": super::strategy::tradehost::plugin::host,
        },
    });
}

/// The `replay` export a backtest calls instead of `evaluate` when a strategy has it.
pub mod strategy_replay {
    wasmtime::component::bindgen!({
        world: "strategy-replay",
        path: "../wit",
        additional_derives: [PartialEq],
        with: {
            "tradehost:plugin/types": super::strategy::tradehost::plugin::types,
            "tradehost:plugin/host": super::strategy::tradehost::plugin::host,
        },
    });
}

pub mod broker {
    wasmtime::component::bindgen!({
        world: "broker",
        path: "../wit",
        additional_derives: [PartialEq],
        with: {
            "tradehost:plugin/types": super::strategy::tradehost::plugin::types,
            "tradehost:plugin/host": super::strategy::tradehost::plugin::host,
        },
    });
}

/// The 0.1.0 package: f64 money at the broker boundary, `place-order` answering a fill.
pub mod v0_1 {
    pub mod strategy {
        wasmtime::component::bindgen!({
            world: "strategy",
            path: "../wit/0.1.0",
            additional_derives: [PartialEq],
        });
    }

    pub mod risk_rule {
        wasmtime::component::bindgen!({
            world: "risk-rule",
            path: "../wit/0.1.0",
            additional_derives: [PartialEq],
            with: {
                "tradehost:plugin/types": super::strategy::tradehost::plugin::types,
                "tradehost:plugin/host": super::strategy::tradehost::plugin::host,
            },
        });
    }

    pub mod broker {
        wasmtime::component::bindgen!({
            world: "broker",
            path: "../wit/0.1.0",
            additional_derives: [PartialEq],
            with: {
                "tradehost:plugin/types": super::strategy::tradehost::plugin::types,
                "tradehost:plugin/host": super::strategy::tradehost::plugin::host,
            },
        });
    }

    pub use strategy::tradehost::plugin::types;
}

pub use strategy::tradehost::plugin::host::LogLevel;
pub use strategy::tradehost::plugin::types;

/// The version of the `tradehost:plugin` package a component was built against.
pub const CURRENT_VERSION: &str = "0.2.0";
pub const LEGACY_VERSION: &str = "0.1.0";
