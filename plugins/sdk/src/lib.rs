//! Guest-side SDK for tradehost plugins.
//!
//! - [`strategy`], [`risk_rule`] and [`broker`] hold the bindings of the three plugin worlds of
//!   `tradehost:plugin@0.2.0`. A plugin crate implements the world's `Guest` trait and exports
//!   it with one line, e.g. `tradehost_sdk::export_strategy!(MyStrategy);`.
//! - [`types`] and [`host`] are the shared interfaces (generated once, used by all three worlds);
//!   brokers also import `http` and `store` ([`broker::tradehost::plugin`]).
//! - [`replay`] is the backtest's way of calling a strategy, derived from its `evaluate`.
//! - [`indicators`] are pure technical indicators; [`config`] reads typed configuration values;
//!   [`state`] keeps small per-symbol memos in a strategy's state blob; [`store`] is a broker's
//!   durable storage for the account a call is made for.
//! - [`allocator`] is every guest's global allocator for small objects (the default feature
//!   `small-object-allocator`; a guest that brings its own builds the SDK without it).
//!
//! Everything except the `host` imports is plain Rust and works on any target, so plugin logic
//! can be unit-tested natively; the imports only do something inside a component.

// Lets the generated bindings and export macros name this crate the same way from inside and
// from plugin crates.
extern crate self as tradehost_sdk;

pub mod allocator;
pub mod config;
pub mod indicators;
pub mod replay;
pub mod state;
pub mod store;

// The generated canonical-ABI glue takes records flattened into many scalar arguments.

/// Bindings of the `strategy` world with the `replay` export ([`replay`] derives it from the
/// strategy's `evaluate`). Also the home of the shared `types` and `host` interfaces.
#[allow(clippy::too_many_arguments)]
pub mod strategy {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "tradehost:plugin/replayable-strategy@0.2.0",
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "export_strategy",
        default_bindings_module: "tradehost_sdk::strategy",
    });
}

/// Bindings of the `risk-rule` world.
#[allow(clippy::too_many_arguments)]
pub mod risk_rule {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "tradehost:plugin/risk-rule@0.2.0",
        additional_derives: [PartialEq],
        with: {
            "tradehost:plugin/types@0.2.0": tradehost_sdk::strategy::tradehost::plugin::types,
            "tradehost:plugin/host@0.2.0": tradehost_sdk::strategy::tradehost::plugin::host,
        },
        pub_export_macro: true,
        export_macro_name: "export_risk_rule",
        default_bindings_module: "tradehost_sdk::risk_rule",
    });
}

/// Bindings of the `broker` world, including the `http` and `store` imports.
#[allow(clippy::too_many_arguments)]
pub mod broker {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "tradehost:plugin/broker@0.2.0",
        additional_derives: [PartialEq],
        with: {
            "tradehost:plugin/types@0.2.0": tradehost_sdk::strategy::tradehost::plugin::types,
            "tradehost:plugin/host@0.2.0": tradehost_sdk::strategy::tradehost::plugin::host,
            "tradehost:plugin/http@0.2.0": generate,
            "tradehost:plugin/store@0.2.0": generate,
        },
        pub_export_macro: true,
        export_macro_name: "export_broker",
        default_bindings_module: "tradehost_sdk::broker",
    });
}

pub use broker::export_broker;
pub use risk_rule::export_risk_rule;
pub use strategy::export_strategy;
pub use strategy::tradehost::plugin::{host, types};

#[cfg(all(
    feature = "small-object-allocator",
    target_arch = "wasm32",
    not(target_feature = "atomics")
))]
#[global_allocator]
static ALLOCATOR: allocator::SmallObjects = allocator::SmallObjects::new();

/// The most a strategy may hand back as `state` (the host refuses more).
pub const MAX_STATE_BYTES: usize = 64 * 1024;
