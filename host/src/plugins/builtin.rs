//! The plugins compiled from `plugins/` by the build script and embedded in the binary, so the
//! server needs nothing else to run.

pub struct Builtin {
    pub manifest: &'static str,
    pub wasm: &'static [u8],
}

pub const BUILTINS: &[Builtin] = &[
    Builtin {
        manifest: include_str!("../../../plugins/broker-paper/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/broker_paper.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/broker-binance/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/broker_binance.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/broker-kraken/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/broker_kraken.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/broker-coinbase/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/broker_coinbase.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/broker-okx/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/broker_okx.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/broker-alpaca/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/broker_alpaca.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/strategy-ema-cross/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/strategy_ema_cross.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/strategy-apex/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/strategy_apex.wasm")),
    },
    Builtin {
        manifest: include_str!("../../../plugins/risk-guards/plugin.toml"),
        wasm: include_bytes!(concat!(env!("OUT_DIR"), "/risk_guards.wasm")),
    },
];
