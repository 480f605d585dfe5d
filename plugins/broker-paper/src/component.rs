//! The component's exports: configuration comes from the host, the work from the crate's pure
//! functions.

use tradehost_sdk::broker::{
    AccountCheck, Balance, BrokerInfo, BrokerPosition, Credentials, Guest,
};
use tradehost_sdk::config;
use tradehost_sdk::host;
use tradehost_sdk::types::{BrokerError, Candle, Fill, OrderRequest};

use crate::PaperConfig;

struct PaperBroker;

fn configuration() -> Result<PaperConfig, BrokerError> {
    PaperConfig::read(&config::from_host())
        .map_err(|err| BrokerError::Unavailable(format!("paper broker misconfigured: {err}")))
}

impl Guest for PaperBroker {
    fn describe() -> BrokerInfo {
        crate::describe()
    }

    fn validate_credentials(creds: Credentials) -> Result<AccountCheck, BrokerError> {
        crate::validate_credentials(&creds)
    }

    fn balance(_creds: Credentials) -> Result<Balance, BrokerError> {
        Err(crate::account_is_kept_by_host())
    }

    fn positions(_creds: Credentials) -> Result<Vec<BrokerPosition>, BrokerError> {
        Err(crate::account_is_kept_by_host())
    }

    fn candles(
        symbol: String,
        interval: String,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let market = configuration()?.market();
        crate::candles(&market, &symbol, &interval, limit, end_ms)
    }

    fn place_order(_creds: Credentials, order: OrderRequest) -> Result<Fill, BrokerError> {
        let config = configuration()?;
        crate::orders::place_order(&config.market(), &config.costs, &order, host::now_ms())
    }

    /// Orders fill the moment they are placed, so there is never anything left to cancel.
    fn cancel_order(_creds: Credentials, _order_id: String) -> Result<(), BrokerError> {
        Ok(())
    }
}

tradehost_sdk::export_broker!(PaperBroker);
