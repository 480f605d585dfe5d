//! A broker whose `validate-credentials` makes one outgoing request to the configured `url`, so
//! tests can show the host lets it reach the hosts its manifest allows and nothing else.
//! The response status comes back as a permission string ("status:200").

use tradehost_sdk::broker::tradehost::plugin::http::{self, HttpError, Request};
use tradehost_sdk::broker::{AccountCheck, BrokerInfo, BrokerPosition, Credentials, Guest};
use tradehost_sdk::host;
use tradehost_sdk::types::{
    AssetBalance, BrokerError, Candle, Fill, Instrument, OrderQuery, OrderReport, OrderRequest,
};

struct HttpBroker;

fn unsupported<T>() -> Result<T, BrokerError> {
    Err(BrokerError::Unsupported(
        "this test broker only validates credentials".into(),
    ))
}

impl Guest for HttpBroker {
    fn describe() -> BrokerInfo {
        BrokerInfo {
            name: "guest-http-broker".into(),
            display_name: "HTTP test broker".into(),
            version: "0.1.0".into(),
            capabilities: vec![],
        }
    }

    fn validate_credentials(_creds: Credentials) -> Result<AccountCheck, BrokerError> {
        let url = host::config("url").unwrap_or_default();
        let request = Request {
            method: "GET".into(),
            url,
            headers: vec![],
            body: vec![],
            timeout_ms: 2_000,
        };
        match http::send(&request) {
            Ok(response) => Ok(AccountCheck {
                permissions: vec![format!("status:{}", response.status)],
            }),
            Err(HttpError::Forbidden(reason)) => {
                Err(BrokerError::Auth(format!("forbidden: {reason}")))
            }
            Err(HttpError::Timeout) => Err(BrokerError::Timeout("timeout".into())),
            Err(HttpError::Unreachable(reason)) => Err(BrokerError::Unreachable(reason)),
            Err(HttpError::Failed(reason)) => Err(BrokerError::Unavailable(reason)),
        }
    }

    fn balances(_creds: Credentials) -> Result<Vec<AssetBalance>, BrokerError> {
        unsupported()
    }

    fn instrument(_creds: Credentials, _symbol: String) -> Result<Instrument, BrokerError> {
        unsupported()
    }

    fn positions(_creds: Credentials) -> Result<Vec<BrokerPosition>, BrokerError> {
        unsupported()
    }

    fn candles(
        _symbol: String,
        _interval: String,
        _limit: u32,
        _end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        unsupported()
    }

    fn place_order(_creds: Credentials, _order: OrderRequest) -> Result<OrderReport, BrokerError> {
        unsupported()
    }

    fn get_order(_creds: Credentials, _query: OrderQuery) -> Result<OrderReport, BrokerError> {
        unsupported()
    }

    fn open_orders(
        _creds: Credentials,
        _symbol: Option<String>,
    ) -> Result<Vec<OrderReport>, BrokerError> {
        unsupported()
    }

    fn fills_since(
        _creds: Credentials,
        _since_ms: i64,
        _symbol: Option<String>,
    ) -> Result<Vec<Fill>, BrokerError> {
        unsupported()
    }

    fn cancel_order(_creds: Credentials, _query: OrderQuery) -> Result<OrderReport, BrokerError> {
        unsupported()
    }
}

tradehost_sdk::export_broker!(HttpBroker);
