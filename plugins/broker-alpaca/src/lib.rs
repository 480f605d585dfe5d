//! The `alpaca` broker plugin: US stocks and crypto through Alpaca's Trading API v2.
//!
//! - [`client`]: requests with the key headers, Alpaca's errors, its per-minute request limit;
//! - [`wire`]: Alpaca's JSON as the broker world's records (symbols, orders, fill activities
//!   net of the crypto fee, asset rules, bars);
//! - [`broker`]: the operations, over any transport and store so they are tested natively;
//! - [`time`]: Alpaca's RFC 3339 timestamps.
//!
//! Alpaca authenticates every request with the key id and secret in headers; there is no
//! request signature.

pub mod broker;
pub mod client;
pub mod time;
pub mod wire;

use tradehost_sdk::broker::BrokerInfo;

pub const NAME: &str = "alpaca";

pub fn describe() -> BrokerInfo {
    BrokerInfo {
        name: NAME.into(),
        display_name: "Alpaca".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: [
            "spot",
            "stocks",
            "crypto",
            "market-orders",
            "limit-orders",
            "paper",
        ]
        .map(String::from)
        .to_vec(),
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    use exchange_kit::request::HostHttp;
    use tradehost_sdk::broker::Credentials;
    use tradehost_sdk::host;
    use tradehost_sdk::store::HostStore;
    use tradehost_sdk::types::BrokerError;

    use crate::broker::Alpaca;
    use crate::client::{Client, Settings};

    /// Runs `work` for the account of `creds` (with its store when `for_user`).
    fn with<T>(
        creds: Option<&Credentials>,
        for_user: bool,
        work: impl FnOnce(&mut Alpaca<'_, HostHttp, HostStore>) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let params = creds.map(|c| c.params.as_slice()).unwrap_or_default();
        let settings = Settings::new(&host::config, params)?;
        let (mut http, mut store) = (HostHttp, HostStore);
        let mut alpaca = Alpaca {
            client: Client {
                http: &mut http,
                store: for_user.then_some(&mut store),
                settings: &settings,
                key_id: creds.map(|c| c.api_key.trim()).unwrap_or_default(),
                secret: creds.map(|c| c.api_secret.trim()).unwrap_or_default(),
                now_ms: host::now_ms(),
                paused_until: None,
            },
        };
        work(&mut alpaca)
    }

    exchange_kit::export_venue!(AlpacaBroker, super::describe, with);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_itself_as_in_the_manifest() {
        let info = describe();
        let manifest = include_str!("../plugin.toml");
        assert!(manifest.contains(&format!("name = \"{}\"", info.name)));
        assert!(manifest.contains(&format!("version = \"{}\"", info.version)));
        assert!(manifest.contains(&format!("display_name = \"{}\"", info.display_name)));
        assert!(manifest.contains("kind = \"broker\""));
        // The manifest's default list of coins is the one the plugin falls back on.
        assert!(manifest.contains(&format!("default = \"{}\"", wire::CRYPTO_ASSETS)));
    }
}
