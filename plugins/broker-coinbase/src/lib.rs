//! The `coinbase` broker plugin: Coinbase Advanced Trade (spot) through its REST API.
//!
//! - [`client`]: authenticated and public requests, Coinbase's errors, rate limits;
//! - [`wire`]: Coinbase's JSON as the broker world's records (product ids, orders, fills,
//!   product rules, candles, RFC 3339 times);
//! - [`broker`]: the operations, over any transport and store so they are tested natively;
//! - [`sign`]: the ES256 JSON Web Token each request carries.

pub mod broker;
pub mod client;
pub mod sign;
pub mod wire;

use tradehost_sdk::broker::BrokerInfo;

pub const NAME: &str = "coinbase";

pub fn describe() -> BrokerInfo {
    BrokerInfo {
        name: NAME.into(),
        display_name: "Coinbase".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: ["spot", "market-orders", "limit-orders", "sandbox"]
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

    use crate::broker::Coinbase;
    use crate::client::{Client, Settings};

    /// Runs `work` for the account of `creds` (with its store when `for_user`).
    fn with<T>(
        creds: Option<&Credentials>,
        for_user: bool,
        work: impl FnOnce(&mut Coinbase<'_, HostHttp, HostStore>) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let params = creds.map(|c| c.params.as_slice()).unwrap_or_default();
        let settings = Settings::new(&host::config, params)?;
        let (mut http, mut store) = (HostHttp, HostStore);
        let mut coinbase = Coinbase {
            client: Client {
                http: &mut http,
                store: for_user.then_some(&mut store),
                settings: &settings,
                key_name: creds.map(|c| c.api_key.trim()).unwrap_or_default(),
                secret: creds.map(|c| c.api_secret.trim()).unwrap_or_default(),
                now_ms: host::now_ms(),
                tokens: 0,
            },
        };
        work(&mut coinbase)
    }

    exchange_kit::export_venue!(CoinbaseBroker, super::describe, with);
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
    }
}
