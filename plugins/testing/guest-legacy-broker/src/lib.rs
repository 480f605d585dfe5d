//! Test guest: a broker built against `tradehost:plugin@0.1.0` (f64 money, `place-order`
//! answering a fill), so the host's tests show such plugins keep working. Market orders fill at
//! once at the simulated market's taker price; the account is the host's.
#![cfg(target_arch = "wasm32")]

use paper_venue::PaperConfig;
use paper_venue::pricing;
use tradehost_sdk_v0_1::broker::{
    AccountCheck, Balance, BrokerInfo, BrokerPosition, Credentials, Guest,
};
use tradehost_sdk_v0_1::host;
use tradehost_sdk_v0_1::types::{BrokerError, Candle, Fill, OrderRequest, OrderSide};

struct LegacyBroker;

fn config() -> PaperConfig {
    let speed = host::config("speed")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    PaperConfig {
        speed,
        ..PaperConfig::default()
    }
}

impl Guest for LegacyBroker {
    fn describe() -> BrokerInfo {
        BrokerInfo {
            name: "guest-legacy-broker".into(),
            display_name: "Test: 0.1.0 broker".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            capabilities: vec!["spot".into(), "market-orders".into()],
        }
    }

    fn validate_credentials(creds: Credentials) -> Result<AccountCheck, BrokerError> {
        if creds.api_key.is_empty() || creds.api_secret.is_empty() {
            return Err(BrokerError::Auth("key and secret required".into()));
        }
        Ok(AccountCheck {
            permissions: vec!["read".into(), "trade".into()],
        })
    }

    fn balance(_creds: Credentials) -> Result<Balance, BrokerError> {
        Err(BrokerError::Unsupported(
            "the account is kept by the host".into(),
        ))
    }

    fn positions(_creds: Credentials) -> Result<Vec<BrokerPosition>, BrokerError> {
        Err(BrokerError::Unsupported(
            "the account is kept by the host".into(),
        ))
    }

    fn candles(
        symbol: String,
        interval: String,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let candles = paper_venue::candles(&config().market(), &symbol, &interval, limit, end_ms)
            .map_err(|_| {
            BrokerError::Rejected(format!("no candles for {symbol} {interval}"))
        })?;
        Ok(candles
            .into_iter()
            .map(|c| Candle {
                timestamp_ms: c.timestamp_ms,
                open: c.open,
                high: c.high,
                low: c.low,
                close: c.close,
                volume: c.volume,
            })
            .collect())
    }

    fn place_order(_creds: Credentials, order: OrderRequest) -> Result<Fill, BrokerError> {
        let config = config();
        let side = match order.side {
            OrderSide::Buy => tradehost_sdk::types::OrderSide::Buy,
            OrderSide::Sell => tradehost_sdk::types::OrderSide::Sell,
        };
        let now = host::now_ms();
        let (_, price) = pricing::quotes(&config.market(), &config.costs, &order.symbol, side, now);
        Ok(Fill {
            order_id: pricing::order_id(&order.client_order_id),
            client_order_id: order.client_order_id,
            symbol: order.symbol,
            side: order.side,
            quantity: order.quantity,
            price,
            fee: order.quantity * price * config.costs.fee_bps / 10_000.0,
            timestamp_ms: now,
        })
    }

    fn cancel_order(_creds: Credentials, _order_id: String) -> Result<(), BrokerError> {
        Ok(())
    }
}

tradehost_sdk_v0_1::export_broker!(LegacyBroker);
