//! The `paper` broker plugin: the simulated venue of `paper-venue` as a component. The
//! configuration and the account's store come from the host.

use tradehost_sdk::broker::BrokerInfo;

pub const NAME: &str = "paper";

pub fn describe() -> BrokerInfo {
    BrokerInfo {
        name: NAME.into(),
        display_name: "Paper trading".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: [
            "spot",
            "short",
            "market-orders",
            "limit-orders",
            "simulated",
        ]
        .map(String::from)
        .to_vec(),
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    use paper_venue::PaperConfig;
    use paper_venue::venue::{HostStore, Venue};
    use tradehost_sdk::broker::{AccountCheck, BrokerInfo, BrokerPosition, Credentials, Guest};
    use tradehost_sdk::host;
    use tradehost_sdk::types::{
        AssetBalance, BrokerError, Candle, Fill, Instrument, OrderQuery, OrderReport, OrderRequest,
    };

    struct PaperBroker;

    fn configuration() -> Result<PaperConfig, BrokerError> {
        paper_venue::configuration()
    }

    /// Runs `work` on the venue account of this call.
    fn with_venue<T>(
        work: impl FnOnce(&mut Venue<'_, HostStore>) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let config = configuration()?;
        let mut store = HostStore;
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: host::now_ms(),
        };
        work(&mut venue)
    }

    impl Guest for PaperBroker {
        fn describe() -> BrokerInfo {
            super::describe()
        }

        fn validate_credentials(creds: Credentials) -> Result<AccountCheck, BrokerError> {
            paper_venue::validate_credentials(&creds)
        }

        fn balances(_creds: Credentials) -> Result<Vec<AssetBalance>, BrokerError> {
            with_venue(|venue| venue.balances())
        }

        fn positions(_creds: Credentials) -> Result<Vec<BrokerPosition>, BrokerError> {
            with_venue(|venue| venue.positions())
        }

        fn instrument(_creds: Credentials, symbol: String) -> Result<Instrument, BrokerError> {
            paper_venue::instrument(&configuration()?, &symbol)
        }

        fn candles(
            symbol: String,
            interval: String,
            limit: u32,
            end_ms: i64,
        ) -> Result<Vec<Candle>, BrokerError> {
            let market = configuration()?.market();
            paper_venue::candles(&market, &symbol, &interval, limit, end_ms)
        }

        fn place_order(
            _creds: Credentials,
            order: OrderRequest,
        ) -> Result<OrderReport, BrokerError> {
            with_venue(|venue| venue.place(&order))
        }

        fn get_order(_creds: Credentials, query: OrderQuery) -> Result<OrderReport, BrokerError> {
            with_venue(|venue| venue.get(&query))
        }

        fn open_orders(
            _creds: Credentials,
            symbol: Option<String>,
        ) -> Result<Vec<OrderReport>, BrokerError> {
            with_venue(|venue| venue.open_orders(symbol.as_deref()))
        }

        fn fills_since(
            _creds: Credentials,
            since_ms: i64,
            symbol: Option<String>,
        ) -> Result<Vec<Fill>, BrokerError> {
            with_venue(|venue| venue.fills_since(since_ms, symbol.as_deref()))
        }

        fn cancel_order(
            _creds: Credentials,
            query: OrderQuery,
        ) -> Result<OrderReport, BrokerError> {
            with_venue(|venue| venue.cancel(&query))
        }
    }

    tradehost_sdk::export_broker!(PaperBroker);
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
        for key in [
            "seed",
            "fee_bps",
            "slippage_bps",
            "spread_bps",
            "speed",
            "fill_parts",
            "fill_delay_ms",
            "tick_size",
            "lot_size",
            "min_notional",
        ] {
            assert!(manifest.contains(&format!("[config.{key}]")), "{key}");
        }
        assert_eq!(
            info.capabilities,
            [
                "spot",
                "short",
                "market-orders",
                "limit-orders",
                "simulated"
            ]
        );
    }
}
