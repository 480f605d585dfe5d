//! Binance's JSON as the broker world's records: symbols both ways, orders, trades with their
//! commissions, instrument filters, klines.
//!
//! Commissions: Binance takes a spot trade's commission in the asset received (a buy pays in the
//! coin bought) unless the account pays fees in BNB. A fill is reported with the quantity the
//! account actually received or gave (net of a commission in the base asset) and the whole
//! commission valued in the quote asset at the fill price (or, for BNB, at BNB's price).

use exchange_kit::numbers::{self, field, required};
use exchange_kit::symbols;
use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::types::{
    BrokerError, Candle, Fill, Instrument, OrderReport, OrderSide, OrderStatus,
};

/// `BTC-USDT` → `BTCUSDT`.
pub fn venue_symbol(symbol: &str) -> Result<String, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    Ok(format!("{base}{quote}"))
}

pub fn side_name(side: OrderSide) -> &'static str {
    match side {
        OrderSide::Buy => "BUY",
        OrderSide::Sell => "SELL",
    }
}

fn side_of(value: &Value) -> Result<OrderSide, BrokerError> {
    match value.as_str() {
        Some("BUY") => Ok(OrderSide::Buy),
        Some("SELL") => Ok(OrderSide::Sell),
        _ => Err(unexpected("side", value)),
    }
}

fn unexpected(what: &str, value: &Value) -> BrokerError {
    BrokerError::Unavailable(format!("Binance answered an unexpected {what}: {value}"))
}

pub fn status_of(value: &Value) -> Result<OrderStatus, BrokerError> {
    Ok(match value.as_str() {
        Some("NEW" | "PENDING_NEW") => OrderStatus::Open,
        Some("PARTIALLY_FILLED") => OrderStatus::PartiallyFilled,
        Some("FILLED") => OrderStatus::Filled,
        Some("CANCELED" | "PENDING_CANCEL") => OrderStatus::Cancelled,
        Some("REJECTED") => OrderStatus::Rejected,
        Some("EXPIRED" | "EXPIRED_IN_MATCH") => OrderStatus::Expired,
        _ => return Err(unexpected("order status", value)),
    })
}

fn id_text(value: &Value) -> Result<String, BrokerError> {
    match value {
        Value::Number(number) => Ok(number.to_string()),
        Value::String(text) if !text.is_empty() => Ok(text.clone()),
        _ => Err(unexpected("id", value)),
    }
}

/// One execution as Binance lists it (an order answer's `fills` entry or a `myTrades` row).
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub trade_id: String,
    pub quantity: Decimal,
    pub price: Decimal,
    pub commission: Decimal,
    pub commission_asset: String,
    pub time_ms: i64,
}

impl Execution {
    /// From a `fills` entry of an order answer (no time of its own: the order's).
    pub fn from_order_fill(value: &Value, time_ms: i64) -> Result<Execution, BrokerError> {
        Ok(Execution {
            trade_id: id_text(&value["tradeId"])?,
            quantity: required(value, "qty")?,
            price: required(value, "price")?,
            commission: field(&value["commission"]).unwrap_or_default(),
            commission_asset: value["commissionAsset"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            time_ms,
        })
    }

    /// From a `myTrades` row.
    pub fn from_trade(value: &Value) -> Result<Execution, BrokerError> {
        Ok(Execution {
            trade_id: id_text(&value["id"])?,
            quantity: required(value, "qty")?,
            price: required(value, "price")?,
            commission: field(&value["commission"]).unwrap_or_default(),
            commission_asset: value["commissionAsset"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            time_ms: value["time"]
                .as_i64()
                .ok_or_else(|| unexpected("trade time", value))?,
        })
    }

    /// The part of the commission taken out of the base asset.
    pub fn base_commission(&self, base: &str) -> Decimal {
        if self.commission_asset == base {
            self.commission
        } else {
            Decimal::ZERO
        }
    }

    /// As the broker world's fill. `asset_price` values a commission in a third asset (BNB) in
    /// the quote asset.
    pub fn to_fill(
        &self,
        order_id: &str,
        client_order_id: &str,
        symbol: &str,
        side: OrderSide,
        asset_price: &mut impl FnMut(&str) -> Result<Decimal, BrokerError>,
    ) -> Result<Fill, BrokerError> {
        let (base, quote) = symbols::split(symbol)?;
        let base_fee = self.base_commission(base);
        let fee = if self.commission.is_zero() || self.commission_asset == quote {
            self.commission
        } else if self.commission_asset == base {
            self.commission * self.price
        } else {
            self.commission * asset_price(&self.commission_asset)?
        };
        Ok(Fill {
            trade_id: self.trade_id.clone(),
            order_id: order_id.to_string(),
            client_order_id: client_order_id.to_string(),
            symbol: symbol.to_string(),
            side,
            quantity: numbers::text(self.quantity - base_fee),
            price: numbers::text(self.price),
            fee: numbers::text(fee.round_dp(12)),
            timestamp_ms: self.time_ms,
        })
    }
}

/// An order as Binance describes it (order answers, order queries, open orders).
#[derive(Debug, Clone, PartialEq)]
pub struct VenueOrder {
    pub order_id: String,
    pub client_order_id: String,
    pub side: OrderSide,
    pub status: OrderStatus,
    pub quantity: Decimal,
    pub executed: Decimal,
    pub updated_ms: i64,
    /// The `fills` of an order answer (`newOrderRespType=FULL`).
    pub executions: Vec<Execution>,
}

impl VenueOrder {
    pub fn parse(value: &Value) -> Result<VenueOrder, BrokerError> {
        let updated_ms = value["updateTime"]
            .as_i64()
            .or_else(|| value["transactTime"].as_i64())
            .or_else(|| value["time"].as_i64())
            .unwrap_or_default();
        let executions = match value["fills"].as_array() {
            Some(fills) => fills
                .iter()
                .map(|fill| Execution::from_order_fill(fill, updated_ms))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(VenueOrder {
            order_id: id_text(&value["orderId"])?,
            // A cancel answer names the cancelled order by `origClientOrderId`.
            client_order_id: value["origClientOrderId"]
                .as_str()
                .or_else(|| value["clientOrderId"].as_str())
                .unwrap_or_default()
                .to_string(),
            side: side_of(&value["side"])?,
            status: status_of(&value["status"])?,
            quantity: required(value, "origQty")?,
            executed: required(value, "executedQty")?,
            updated_ms,
            executions,
        })
    }

    /// The broker world's report, with `executions` (all of the order's, or none) as fills.
    pub fn report(
        &self,
        symbol: &str,
        executions: &[Execution],
        asset_price: &mut impl FnMut(&str) -> Result<Decimal, BrokerError>,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let (base, _) = symbols::split(symbol)?;
        let fills = executions
            .iter()
            .map(|e| {
                e.to_fill(
                    &self.order_id,
                    &self.client_order_id,
                    symbol,
                    self.side,
                    asset_price,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        // What filled, less what Binance kept of the coin bought: fills not listed (yet) still
        // count, so the host waits for them.
        let kept: Decimal = executions.iter().map(|e| e.base_commission(base)).sum();
        let filled = (self.executed - kept).max(Decimal::ZERO);
        Ok(OrderReport {
            order_id: self.order_id.clone(),
            client_order_id: self.client_order_id.clone(),
            symbol: symbol.to_string(),
            side: self.side,
            status: self.status,
            quantity: numbers::text(self.quantity),
            filled_quantity: numbers::text(filled),
            fills,
            reason,
            updated_at_ms: self.updated_ms,
        })
    }
}

/// The instrument rules of an `exchangeInfo` symbol entry.
pub fn instrument(symbol: &str, entry: &Value) -> Result<Instrument, BrokerError> {
    let filter = |name: &str| {
        entry["filters"]
            .as_array()
            .and_then(|filters| filters.iter().find(|f| f["filterType"] == name))
    };
    let price = filter("PRICE_FILTER");
    let lot = filter("LOT_SIZE");
    let notional = filter("NOTIONAL").or_else(|| filter("MIN_NOTIONAL"));
    let tick = price
        .and_then(|f| field(&f["tickSize"]))
        .unwrap_or_default();
    let step = lot.and_then(|f| field(&f["stepSize"])).unwrap_or_default();
    let min_quantity = lot.and_then(|f| field(&f["minQty"])).unwrap_or_default();
    let min_notional = notional
        .and_then(|f| field(&f["minNotional"]))
        .unwrap_or_default();
    let precision = |step: Decimal, fallback: &str| {
        if step > Decimal::ZERO {
            numbers::places(step)
        } else {
            entry[fallback].as_u64().unwrap_or(8).min(18) as u8
        }
    };
    Ok(Instrument {
        symbol: symbol.to_string(),
        base_asset: entry["baseAsset"].as_str().unwrap_or_default().to_string(),
        quote_asset: entry["quoteAsset"].as_str().unwrap_or_default().to_string(),
        tick_size: numbers::text(tick),
        lot_size: numbers::text(step),
        min_quantity: numbers::text(min_quantity),
        min_notional: numbers::text(min_notional),
        price_precision: precision(tick, "quoteAssetPrecision"),
        quantity_precision: precision(step, "baseAssetPrecision"),
    })
}

/// A `klines` row.
pub fn candle(row: &Value) -> Result<Candle, BrokerError> {
    let number = |index: usize| {
        field(&row[index])
            .and_then(|d| d.to_string().parse::<f64>().ok())
            .ok_or_else(|| unexpected("kline", row))
    };
    Ok(Candle {
        timestamp_ms: row[0].as_i64().ok_or_else(|| unexpected("kline", row))?,
        open: number(1)?,
        high: number(2)?,
        low: number(3)?,
        close: number(4)?,
        volume: number(5)?,
    })
}

/// Binance's name of a candle interval, if it has one.
pub fn interval(interval: &str) -> Option<&'static str> {
    [
        "1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "6h", "8h", "12h", "1d", "3d", "1w",
    ]
    .into_iter()
    .find(|known| *known == interval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    fn no_price(asset: &str) -> Result<Decimal, BrokerError> {
        Err(BrokerError::Unavailable(format!("no price for {asset}")))
    }

    /// The FULL answer of `POST /api/v3/order` as Binance documents it.
    #[test]
    fn a_documented_order_answer_reports_its_fills() {
        let answer = json!({
            "symbol": "BTCUSDT", "orderId": 28, "orderListId": -1,
            "clientOrderId": "6gCrw2kRUAF9CvJDGP16IP", "transactTime": 1507725176595u64,
            "price": "0.00000000", "origQty": "10.00000000", "executedQty": "10.00000000",
            "origQuoteOrderQty": "0.000000", "cummulativeQuoteQty": "10.00000000", "status": "FILLED",
            "timeInForce": "GTC", "type": "MARKET", "side": "SELL", "workingTime": 1507725176595u64,
            "selfTradePreventionMode": "NONE",
            "fills": [
                {"price": "4000.00000000", "qty": "1.00000000", "commission": "4.00000000", "commissionAsset": "USDT", "tradeId": 56},
                {"price": "3999.00000000", "qty": "5.00000000", "commission": "19.99500000", "commissionAsset": "USDT", "tradeId": 57},
                {"price": "3998.00000000", "qty": "2.00000000", "commission": "7.99600000", "commissionAsset": "USDT", "tradeId": 58},
                {"price": "3997.00000000", "qty": "1.00000000", "commission": "3.99700000", "commissionAsset": "USDT", "tradeId": 59},
                {"price": "3995.00000000", "qty": "1.00000000", "commission": "3.99500000", "commissionAsset": "USDT", "tradeId": 60}
            ]
        });
        let order = VenueOrder::parse(&answer).unwrap();
        let report = order
            .report("BTC-USDT", &order.executions.clone(), &mut no_price, None)
            .unwrap();
        assert_eq!(report.status, OrderStatus::Filled);
        assert_eq!(
            (report.quantity.as_str(), report.filled_quantity.as_str()),
            ("10", "10")
        );
        assert_eq!(report.fills.len(), 5);
        assert_eq!(report.fills[1].trade_id, "57");
        assert_eq!(report.fills[1].fee, "19.995");
        assert_eq!(report.fills[1].quantity, "5");
        assert_eq!(report.fills[0].side, OrderSide::Sell);
        assert_eq!(report.fills[0].client_order_id, "6gCrw2kRUAF9CvJDGP16IP");
    }

    #[test]
    fn a_commission_in_the_coin_bought_is_taken_from_the_quantity() {
        let bought = Execution {
            trade_id: "7".into(),
            quantity: d("0.5"),
            price: d("60000"),
            commission: d("0.0005"),
            commission_asset: "BTC".into(),
            time_ms: 1,
        };
        let fill = bought
            .to_fill("1", "c", "BTC-USDT", OrderSide::Buy, &mut no_price)
            .unwrap();
        assert_eq!(
            (fill.quantity.as_str(), fill.fee.as_str()),
            ("0.4995", "30")
        );
        let order = VenueOrder {
            order_id: "1".into(),
            client_order_id: "c".into(),
            side: OrderSide::Buy,
            status: OrderStatus::Filled,
            quantity: d("1"),
            executed: d("1"),
            updated_ms: 1,
            executions: Vec::new(),
        };
        // Half of it listed: the report counts the rest as filled, so the host waits for it.
        let report = order
            .report("BTC-USDT", &[bought], &mut no_price, None)
            .unwrap();
        assert_eq!(report.filled_quantity, "0.9995");
        // Paid in BNB: valued at BNB's price, the quantity untouched.
        let in_bnb = Execution {
            commission: d("0.01"),
            commission_asset: "BNB".into(),
            ..order_fill()
        };
        let fill = in_bnb
            .to_fill("1", "c", "BTC-USDT", OrderSide::Buy, &mut |asset| {
                assert_eq!(asset, "BNB");
                Ok(d("600"))
            })
            .unwrap();
        assert_eq!((fill.quantity.as_str(), fill.fee.as_str()), ("0.5", "6"));
        assert!(
            in_bnb
                .to_fill("1", "c", "BTC-USDT", OrderSide::Buy, &mut no_price)
                .is_err()
        );
    }

    fn order_fill() -> Execution {
        Execution {
            trade_id: "8".into(),
            quantity: d("0.5"),
            price: d("60000"),
            commission: Decimal::ZERO,
            commission_asset: String::new(),
            time_ms: 2,
        }
    }

    /// A `myTrades` row and an order query as Binance documents them.
    #[test]
    fn documented_trades_and_order_queries_parse() {
        let trade = Execution::from_trade(&json!({
            "symbol": "BNBBTC", "id": 28457, "orderId": 100234, "orderListId": -1,
            "price": "4.00000100", "qty": "12.00000000", "quoteQty": "48.000012",
            "commission": "10.10000000", "commissionAsset": "BNB", "time": 1499865549590u64,
            "isBuyer": true, "isMaker": false, "isBestMatch": true
        }))
        .unwrap();
        assert_eq!(
            (trade.trade_id.as_str(), trade.time_ms),
            ("28457", 1499865549590)
        );
        // The commission is in the coin bought (BNB of BNBBTC): 10.1 kept, valued at the price.
        let fill = trade
            .to_fill("100234", "", "BNB-BTC", OrderSide::Buy, &mut no_price)
            .unwrap();
        assert_eq!(fill.quantity, "1.9");
        assert_eq!(fill.fee, "40.4000101");
        let order = VenueOrder::parse(&json!({
            "symbol": "LTCBTC", "orderId": 1, "orderListId": -1, "clientOrderId": "myOrder1",
            "price": "0.1", "origQty": "1.0", "executedQty": "0.0", "cummulativeQuoteQty": "0.0",
            "status": "NEW", "timeInForce": "GTC", "type": "LIMIT", "side": "BUY",
            "stopPrice": "0.0", "icebergQty": "0.0", "time": 1499827319559u64,
            "updateTime": 1499827319559u64, "isWorking": true, "workingTime": 1499827319559u64,
            "origQuoteOrderQty": "0.000000", "selfTradePreventionMode": "NONE"
        }))
        .unwrap();
        assert_eq!(
            (order.status, order.client_order_id.as_str()),
            (OrderStatus::Open, "myOrder1")
        );
        let cancelled = VenueOrder::parse(&json!({
            "symbol": "LTCBTC", "origClientOrderId": "myOrder1", "orderId": 4, "orderListId": -1,
            "clientOrderId": "cancelMyOrder1", "transactTime": 1684804350068u64, "price": "2.00000000",
            "origQty": "1.00000000", "executedQty": "0.00000000", "origQuoteOrderQty": "0.000000",
            "cummulativeQuoteQty": "0.00000000", "status": "CANCELED", "timeInForce": "GTC",
            "type": "LIMIT", "side": "BUY", "selfTradePreventionMode": "NONE"
        }))
        .unwrap();
        assert_eq!(cancelled.client_order_id, "myOrder1");
        assert_eq!(cancelled.status, OrderStatus::Cancelled);
    }

    #[test]
    fn filters_become_instrument_rules_and_klines_candles() {
        let entry = json!({
            "symbol": "ETHBTC", "status": "TRADING", "baseAsset": "ETH", "baseAssetPrecision": 8,
            "quoteAsset": "BTC", "quoteAssetPrecision": 8,
            "filters": [
                {"filterType": "PRICE_FILTER", "minPrice": "0.00000100", "maxPrice": "100000.00000000", "tickSize": "0.00000100"},
                {"filterType": "LOT_SIZE", "minQty": "0.00100000", "maxQty": "100000.00000000", "stepSize": "0.00100000"},
                {"filterType": "NOTIONAL", "minNotional": "10.00000000", "applyMinToMarket": false, "maxNotional": "10000.00000000", "applyMaxToMarket": false, "avgPriceMins": 5}
            ]
        });
        let rules = instrument("ETH-BTC", &entry).unwrap();
        assert_eq!(
            (
                rules.tick_size.as_str(),
                rules.lot_size.as_str(),
                rules.min_quantity.as_str(),
                rules.min_notional.as_str()
            ),
            ("0.000001", "0.001", "0.001", "10")
        );
        assert_eq!((rules.price_precision, rules.quantity_precision), (6, 3));
        assert_eq!(
            (rules.base_asset.as_str(), rules.quote_asset.as_str()),
            ("ETH", "BTC")
        );
        let row = json!([
            1499040000000u64,
            "0.01634790",
            "0.80000000",
            "0.01575800",
            "0.01577100",
            "148976.11427815",
            1499644799999u64,
            "2434.19055334",
            308,
            "1756.87402397",
            "28.46694368",
            "0"
        ]);
        let bar = candle(&row).unwrap();
        assert_eq!(bar.timestamp_ms, 1499040000000);
        assert!((bar.high - 0.8).abs() < 1e-12 && (bar.volume - 148976.11427815).abs() < 1e-6);
        assert_eq!(venue_symbol("BTC-USDT").unwrap(), "BTCUSDT");
        assert!(venue_symbol("BTCUSDT").is_err());
        assert_eq!(interval("1h"), Some("1h"));
        assert_eq!(interval("7m"), None);
    }
}
