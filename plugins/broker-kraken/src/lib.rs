//! The `kraken` broker plugin: Kraken spot through its REST API.
//!
//! - [`client`]: public and private requests (signed, a growing nonce, the waits Kraken asks
//!   for), Kraken's errors;
//! - [`wire`]: Kraken's JSON as the broker world's records (asset and pair names, client order
//!   ids, orders, trades, pair rules, OHLC);
//! - [`broker`]: the operations, over any transport and store so they are tested natively;
//! - [`sign`]: the HMAC-SHA512 signature, tested against Kraken's published example.

pub mod broker;
pub mod client;
pub mod sign;
pub mod wire;

use tradehost_sdk::broker::BrokerInfo;

pub const NAME: &str = "kraken";

pub fn describe() -> BrokerInfo {
    BrokerInfo {
        name: NAME.into(),
        display_name: "Kraken".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: ["spot", "market-orders", "limit-orders"]
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

    use crate::broker::Kraken;
    use crate::client::{Client, Settings};

    /// Runs `work` for the account of `creds` (with its store when `for_user`; the check of new
    /// credentials has none, so its nonces come from the clock alone).
    fn with<T>(
        creds: Option<&Credentials>,
        for_user: bool,
        work: impl FnOnce(&mut Kraken<'_, HostHttp, HostStore>) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let params = creds.map(|c| c.params.as_slice()).unwrap_or_default();
        let settings = Settings::new(&host::config, params)?;
        let (mut http, mut store) = (HostHttp, HostStore);
        let mut kraken = Kraken {
            client: Client {
                http: &mut http,
                store: for_user.then_some(&mut store),
                settings: &settings,
                api_key: creds.map(|c| c.api_key.trim()).unwrap_or_default(),
                secret: creds.map(|c| c.api_secret.trim()).unwrap_or_default(),
                now_ms: host::now_ms(),
                last_nonce: 0,
            },
        };
        work(&mut kraken)
    }

    exchange_kit::export_venue!(KrakenBroker, super::describe, with);
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
        assert!(manifest.contains("allowed_hosts = [\"api.kraken.com\"]"));
    }
}
