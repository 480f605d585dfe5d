//! Test guest: a strategy that returns the invalid output named by its `mode` setting, so the
//! host's output validation can be tested. Modes:
//!
//! - `valid` (default): one hold signal for the first symbol of the scan;
//! - `nan`: an entry with NaN size and NaN stop loss;
//! - `negative`: an entry with a negative size;
//! - `unknown-symbol`: an entry for `NOPE-USD`, which is not in the scan;
//! - `flood`: 100 000 signals;
//! - `huge-state`: a valid signal with a 10 MiB state blob;
//! - `describe-lies`: valid output, but `describe` gives another plugin's name.
#![cfg(target_arch = "wasm32")]

use tradehost_sdk::config;
use tradehost_sdk::strategy::{Evaluation, Guest, ScanContext};
use tradehost_sdk::types::{PluginError, PluginInfo, Signal, SignalAction};

const FLOOD_SIGNALS: usize = 100_000;
const HUGE_STATE_BYTES: usize = 10 << 20;
/// The symbol used when the scan carries no market data.
const FALLBACK_SYMBOL: &str = "BTC-USD";

struct BadOutput;

fn mode() -> String {
    config::from_host().string("mode", "valid")
}

fn signal(symbol: &str, action: SignalAction, size_usd: f64, stop_loss: Option<f64>) -> Signal {
    Signal {
        symbol: symbol.into(),
        action,
        size_usd,
        stop_loss,
        take_profit: Vec::new(),
        confidence: 0.5,
        reason: format!("guest-bad-output mode {}", mode()),
    }
}

fn hold(symbol: &str) -> Signal {
    signal(symbol, SignalAction::Hold, 0.0, None)
}

fn output(signals: Vec<Signal>, state: Vec<u8>) -> Result<Evaluation, PluginError> {
    Ok(Evaluation { signals, state })
}

impl Guest for BadOutput {
    fn describe() -> PluginInfo {
        let name = if mode() == "describe-lies" {
            "not-my-name"
        } else {
            "guest-bad-output"
        };
        PluginInfo {
            name: name.into(),
            version: env!("CARGO_PKG_VERSION").into(),
            display_name: "Test: bad output".into(),
            description: "Returns invalid output on request".into(),
        }
    }

    fn evaluate(ctx: ScanContext) -> Result<Evaluation, PluginError> {
        let first_symbol = ctx.market.first().map(|series| series.symbol.as_str());
        let symbol = first_symbol.unwrap_or(FALLBACK_SYMBOL);
        match mode().as_str() {
            "valid" | "describe-lies" => {
                output(first_symbol.map(hold).into_iter().collect(), Vec::new())
            }
            "nan" => output(
                vec![signal(
                    symbol,
                    SignalAction::OpenLong,
                    f64::NAN,
                    Some(f64::NAN),
                )],
                Vec::new(),
            ),
            "negative" => output(
                vec![signal(symbol, SignalAction::OpenLong, -100.0, None)],
                Vec::new(),
            ),
            "unknown-symbol" => output(
                vec![signal("NOPE-USD", SignalAction::OpenLong, 100.0, None)],
                Vec::new(),
            ),
            "flood" => output(vec![hold(symbol); FLOOD_SIGNALS], Vec::new()),
            "huge-state" => output(vec![hold(symbol)], vec![0xab; HUGE_STATE_BYTES]),
            other => Err(PluginError::InvalidInput(format!("unknown mode `{other}`"))),
        }
    }
}

tradehost_sdk::export_strategy!(BadOutput);
