//! Bindings of `tradehost:plugin@0.1.0` (f64 money at the broker boundary, `place-order`
//! answering a fill). The host still loads components built against it; the test guests that
//! show it are built with these.

extern crate self as tradehost_sdk_v0_1;

#[allow(clippy::too_many_arguments)]
pub mod strategy {
    wit_bindgen::generate!({
        path: "../../../wit/0.1.0",
        world: "tradehost:plugin/strategy@0.1.0",
        additional_derives: [PartialEq],
        pub_export_macro: true,
        export_macro_name: "export_strategy",
        default_bindings_module: "tradehost_sdk_v0_1::strategy",
    });
}

#[allow(clippy::too_many_arguments)]
pub mod broker {
    wit_bindgen::generate!({
        path: "../../../wit/0.1.0",
        world: "tradehost:plugin/broker@0.1.0",
        additional_derives: [PartialEq],
        with: {
            "tradehost:plugin/types@0.1.0": tradehost_sdk_v0_1::strategy::tradehost::plugin::types,
            "tradehost:plugin/host@0.1.0": tradehost_sdk_v0_1::strategy::tradehost::plugin::host,
            "tradehost:plugin/http@0.1.0": generate,
        },
        pub_export_macro: true,
        export_macro_name: "export_broker",
        default_bindings_module: "tradehost_sdk_v0_1::broker",
    });
}

pub use broker::export_broker;
pub use strategy::export_strategy;
pub use strategy::tradehost::plugin::{host, types};
