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
    use tradehost_sdk::broker::{AccountCheck, BrokerInfo, BrokerPosition, Credentials, Guest};
    use tradehost_sdk::host;
    use tradehost_sdk::store::HostStore;
    use tradehost_sdk::types::{
        AssetBalance, BrokerError, Candle, Fill, Instrument, OrderQuery, OrderReport, OrderRequest,
    };

    use crate::broker::Okx;
    use crate::client::{Client, Settings};

    struct OkxBroker;

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

    impl Guest for OkxBroker {
        fn describe() -> BrokerInfo {
            super::describe()
        }

        fn validate_credentials(creds: Credentials) -> Result<AccountCheck, BrokerError> {
            with(Some(&creds), false, |b| b.validate())
        }

        fn balances(creds: Credentials) -> Result<Vec<AssetBalance>, BrokerError> {
            with(Some(&creds), true, |b| b.balances())
        }

        fn positions(creds: Credentials) -> Result<Vec<BrokerPosition>, BrokerError> {
            with(Some(&creds), true, |b| b.positions())
        }

        fn instrument(creds: Credentials, symbol: String) -> Result<Instrument, BrokerError> {
            with(Some(&creds), false, |b| b.instrument(&symbol))
        }

        fn candles(
            symbol: String,
            interval: String,
            limit: u32,
            end_ms: i64,
        ) -> Result<Vec<Candle>, BrokerError> {
            with(None, false, |b| {
                b.candles(&symbol, &interval, limit, end_ms)
            })
        }

        fn place_order(
            creds: Credentials,
            order: OrderRequest,
        ) -> Result<OrderReport, BrokerError> {
            with(Some(&creds), true, |b| b.place(&order))
        }

        fn get_order(creds: Credentials, query: OrderQuery) -> Result<OrderReport, BrokerError> {
            with(Some(&creds), true, |b| b.get(&query))
        }

        fn open_orders(
            creds: Credentials,
            symbol: Option<String>,
        ) -> Result<Vec<OrderReport>, BrokerError> {
            with(Some(&creds), true, |b| b.open_orders(symbol.as_deref()))
        }

        fn fills_since(
            creds: Credentials,
            since_ms: i64,
            symbol: Option<String>,
        ) -> Result<Vec<Fill>, BrokerError> {
            with(Some(&creds), true, |b| {
                b.fills_since(since_ms, symbol.as_deref())
            })
        }

        fn cancel_order(creds: Credentials, query: OrderQuery) -> Result<OrderReport, BrokerError> {
            with(Some(&creds), true, |b| b.cancel(&query))
        }
    }

    tradehost_sdk::export_broker!(OkxBroker);
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
