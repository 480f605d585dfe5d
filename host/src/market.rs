//! Market data for charts: a broker plugin's candles, fetched through the same call a scan makes.
//! Prices here are the venue's quotes for drawing, not amounts in the books.

use serde::Serialize;
use utoipa::ToSchema;

use crate::App;
use crate::brokers::{self, blocking};
use crate::error::{ApiError, ApiResult};
use crate::store::now_ms;

pub const DEFAULT_INTERVAL: &str = "1m";
pub const DEFAULT_LIMIT: u32 = 300;
pub const MAX_LIMIT: u32 = 1000;
pub const DEFAULT_BROKER: &str = "paper";

/// Closed candles of one symbol, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct Chart {
    pub broker: String,
    pub symbol: String,
    pub interval: String,
    pub candles: Vec<Bar>,
}

/// One OHLCV bar; `time` is its open time in Unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct Bar {
    pub time: i64,
    pub open: f64,
    pub high: f64,
    pub low: f64,
    pub close: f64,
    pub volume: f64,
}

/// What a chart request asks for, checked.
#[derive(Debug, PartialEq, Eq)]
pub struct ChartRequest {
    pub broker: String,
    pub symbol: String,
    pub interval: &'static str,
    pub limit: u32,
}

impl ChartRequest {
    /// Checks the query's values; each refusal names its parameter.
    pub fn parse(
        broker: Option<&str>,
        symbol: &str,
        interval: Option<&str>,
        limit: Option<&str>,
    ) -> ApiResult<ChartRequest> {
        let symbol = symbol.trim().to_uppercase();
        if !crate::settings::valid_pair(&symbol) {
            return Err(ApiError::invalid_field(
                "symbol",
                "a symbol of the form BASE-QUOTE, e.g. BTC-USD",
            ));
        }
        let interval = match interval {
            None => DEFAULT_INTERVAL,
            Some(given) => crate::candles::INTERVALS
                .into_iter()
                .map(|(known, _)| known)
                .find(|known| *known == given)
                .ok_or_else(|| ApiError::invalid_field("interval", "one of 1m, 5m, 1h"))?,
        };
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(given) => given
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::invalid_field("limit", format!("an integer from 1 to {MAX_LIMIT}"))
                })?,
        };
        Ok(ChartRequest {
            broker: broker.unwrap_or(DEFAULT_BROKER).to_string(),
            symbol,
            interval,
            limit,
        })
    }
}

/// The last closed candles of the request's symbol at its broker.
pub async fn candles(app: &App, request: ChartRequest) -> ApiResult<Chart> {
    let active = brokers::plugin(app, &request.broker)?;
    let runtime = app.plugins.runtime().clone();
    let (symbol, interval, limit) = (request.symbol.clone(), request.interval, request.limit);
    let answer =
        blocking(move || runtime.broker_candles(&active, &symbol, interval, limit, now_ms()))
            .await??;
    let candles = answer.map_err(brokers::broker_error)?;
    Ok(Chart {
        broker: request.broker,
        symbol: request.symbol,
        interval: request.interval.to_string(),
        candles: candles
            .into_iter()
            .map(|c| Bar {
                time: c.timestamp_ms.div_euclid(1000),
                open: c.open,
                high: c.high,
                low: c.low,
                close: c.close,
                volume: c.volume,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_request_defaults_and_names_what_it_refuses() {
        let request = ChartRequest::parse(None, " btc-usd ", None, None).unwrap();
        assert_eq!(
            request,
            ChartRequest {
                broker: "paper".into(),
                symbol: "BTC-USD".into(),
                interval: "1m",
                limit: DEFAULT_LIMIT,
            }
        );
        let field = |result: ApiResult<ChartRequest>| {
            result.unwrap_err().details["field"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            field(ChartRequest::parse(None, "BTCUSD", None, None)),
            "symbol"
        );
        assert_eq!(
            field(ChartRequest::parse(None, "BTC-USD", Some("2m"), None)),
            "interval"
        );
        assert_eq!(
            field(ChartRequest::parse(None, "BTC-USD", None, Some("0"))),
            "limit"
        );
        assert_eq!(
            field(ChartRequest::parse(None, "BTC-USD", None, Some("1001"))),
            "limit"
        );
        assert_eq!(
            field(ChartRequest::parse(None, "BTC-USD", None, Some("x"))),
            "limit"
        );
        let hourly = ChartRequest::parse(Some("kraken"), "ETH-USD", Some("1h"), Some("1000"));
        assert_eq!(hourly.unwrap().limit, 1000);
    }
}
