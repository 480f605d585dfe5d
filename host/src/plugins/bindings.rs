//! Host bindings for the three plugin worlds of `wit/`. The shared `types`, `host` and `http`
//! interfaces are generated once (with the strategy world) and reused by the other two.

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

pub use strategy::tradehost::plugin::host::LogLevel;
pub use strategy::tradehost::plugin::types;
