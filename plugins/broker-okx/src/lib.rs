//! The `okx` broker plugin: OKX spot through its v5 REST API.
//!
//! - [`client`]: signed and public requests, OKX's answers and error codes, rate limits;
//! - [`wire`]: OKX's JSON as the broker world's records (instrument ids, client order ids,
//!   orders, fills net of their fees, instrument rules, candles);
//! - [`broker`]: the operations, over any transport and store so they are tested natively;
//! - [`sign`]: the Base64 HMAC-SHA256 signature and OKX's timestamps.

pub mod broker;
pub mod client;
pub mod sign;
pub mod wire;

use tradehost_sdk::broker::BrokerInfo;

pub const NAME: &str = "okx";

pub fn describe() -> BrokerInfo {
    BrokerInfo {
        name: NAME.into(),
        display_name: "OKX".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: ["spot", "market-orders", "limit-orders", "testnet"]
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

    use crate::broker::Okx;
    use crate::client::{Client, Settings};

    /// Runs `work` for the account of `creds` (with its store when `for_user`).
    fn with<T>(
        creds: Option<&Credentials>,
        for_user: bool,
        work: impl FnOnce(&mut Okx<'_, HostHttp, HostStore>) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let params = creds.map(|c| c.params.as_slice()).unwrap_or_default();
        let settings = Settings::new(&host::config, params)?;
        let (mut http, mut store) = (HostHttp, HostStore);
        let mut okx = Okx {
            client: Client {
                http: &mut http,
                store: for_user.then_some(&mut store),
                settings: &settings,
                api_key: creds.map(|c| c.api_key.trim()).unwrap_or_default(),
                secret: creds.map(|c| c.api_secret.trim()).unwrap_or_default(),
                now_ms: host::now_ms(),
            },
        };
        work(&mut okx)
    }

    exchange_kit::export_venue!(OkxBroker, super::describe, with);
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
