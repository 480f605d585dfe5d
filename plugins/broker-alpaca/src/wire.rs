//! Alpaca's JSON as the broker world's records: symbols both ways, orders, `FILL` activities
//! with the crypto fee, asset rules, bars.
//!
//! Symbols: a US stock is `AAPL` at Alpaca and `AAPL-USD` here; a crypto pair is `BTC/USD`
//! (older answers and positions write `BTCUSD`) and `BTC-USD` here. Which `BASE-USD` is a coin
//! is the configured list of crypto assets; a pair against another quote is always crypto.
//!
//! Fees: stocks trade commission-free. Alpaca keeps its crypto fee out of the asset received (a
//! buy pays it in the coin bought, a sell in the quote) and lists it only at the end of the day
//! (`CFEE` activities), not with the fill. A crypto fill is reported net of the fee at the
//! configured rate, the whole fee valued in the quote at the fill price.

use exchange_kit::numbers::{self, field, required};
use exchange_kit::symbols;
use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::types::{
    BrokerError, Candle, Fill, Instrument, OrderReport, OrderSide, OrderStatus,
};

use crate::time;

/// The coins Alpaca trades (the `crypto_assets` default).
pub const CRYPTO_ASSETS: &str = "AAVE,AVAX,BAT,BCH,BTC,CRV,DOGE,DOT,ETH,GRT,LINK,LTC,MKR,PEPE,SHIB,SOL,SUSHI,TRUMP,UNI,USDC,USDT,XRP,XTZ,YFI";

/// The quotes of Alpaca's crypto pairs.
const CRYPTO_QUOTES: [&str; 4] = ["USD", "USDT", "USDC", "BTC"];

/// Decimal places Alpaca keeps of a crypto fee.
const FEE_PLACES: u32 = 8;

fn unexpected(what: &str, value: &Value) -> BrokerError {
    BrokerError::Unavailable(format!("Alpaca answered an unexpected {what}: {value}"))
}

/// An instrument as Alpaca names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VenueSymbol {
    /// `AAPL` or `BTC/USD`.
    pub name: String,
    pub crypto: bool,
}

/// tradehost's `BASE-QUOTE` as Alpaca's symbol.
pub fn venue_symbol(symbol: &str, crypto_assets: &[String]) -> Result<VenueSymbol, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    if quote != "USD" || crypto_assets.iter().any(|coin| coin == base) {
        if !CRYPTO_QUOTES.contains(&quote) {
            return Err(BrokerError::NotFound(format!(
                "Alpaca has no {base}/{quote} pair (its crypto quotes are {})",
                CRYPTO_QUOTES.join(", ")
            )));
        }
        return Ok(VenueSymbol {
            name: format!("{base}/{quote}"),
            crypto: true,
        });
    }
    Ok(VenueSymbol {
        name: base.to_string(),
        crypto: false,
    })
}

/// Alpaca's symbol (`AAPL`, `BTC/USD`, `BTCUSD`) as tradehost's.
pub fn tradehost_symbol(venue: &str, crypto_assets: &[String]) -> Option<String> {
    if let Some((base, quote)) = venue.split_once('/') {
        let joined = symbols::join(base, quote);
        return symbols::split(&joined).is_ok().then_some(joined);
    }
    let upper = venue.to_ascii_uppercase();
    for quote in CRYPTO_QUOTES {
        if let Some(base) = upper.strip_suffix(quote)
            && crypto_assets.iter().any(|coin| coin == base)
        {
            return Some(symbols::join(base, quote));
        }
    }
    let joined = symbols::join(&upper, "USD");
    symbols::split(&joined).is_ok().then_some(joined)
}

pub fn side_name(side: OrderSide) -> &'static str {
    match side {
        OrderSide::Buy => "buy",
        OrderSide::Sell => "sell",
    }
}

fn side_of(value: &Value) -> Result<OrderSide, BrokerError> {
    match value.as_str() {
        Some("buy") => Ok(OrderSide::Buy),
        Some("sell" | "sell_short") => Ok(OrderSide::Sell),
        _ => Err(unexpected("side", value)),
    }
}

/// An order's status; one that may still fill is working (open or partly filled).
pub fn status_of(
    value: &Value,
    filled: Decimal,
    quantity: Decimal,
) -> Result<OrderStatus, BrokerError> {
    let working = if filled > Decimal::ZERO {
        OrderStatus::PartiallyFilled
    } else {
        OrderStatus::Open
    };
    Ok(match value.as_str() {
        Some(
            "new"
            | "accepted"
            | "pending_new"
            | "accepted_for_bidding"
            | "held"
            | "done_for_day"
            | "pending_cancel"
            | "pending_replace"
            | "stopped"
            | "suspended",
        ) => working,
        Some("partially_filled") => OrderStatus::PartiallyFilled,
        Some("filled") => OrderStatus::Filled,
        // Done for the day and being settled: filled if all of it filled.
        Some("calculated") if filled >= quantity => OrderStatus::Filled,
        Some("calculated") => working,
        // A replaced order ends; its replacement is another order.
        Some("canceled" | "replaced") => OrderStatus::Cancelled,
        Some("expired") => OrderStatus::Expired,
        Some("rejected") => OrderStatus::Rejected,
        _ => return Err(unexpected("order status", value)),
    })
}

/// A `FILL` activity.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// The activity id (`20210510100104650::88b5f678-...`).
    pub id: String,
    pub order_id: String,
    /// tradehost's symbol.
    pub symbol: String,
    pub side: OrderSide,
    pub quantity: Decimal,
    pub price: Decimal,
    pub time_ms: i64,
}

impl Execution {
    pub fn parse(value: &Value, crypto_assets: &[String]) -> Result<Execution, BrokerError> {
        let venue = value["symbol"]
            .as_str()
            .ok_or_else(|| unexpected("fill", value))?;
        Ok(Execution {
            id: value["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .ok_or_else(|| unexpected("activity id", value))?
                .to_string(),
            order_id: value["order_id"].as_str().unwrap_or_default().to_string(),
            symbol: tradehost_symbol(venue, crypto_assets)
                .ok_or_else(|| unexpected("symbol", value))?,
            side: side_of(&value["side"])?,
            quantity: required(value, "qty")?,
            price: required(value, "price")?,
            time_ms: value["transaction_time"]
                .as_str()
                .and_then(time::parse_ms)
                .ok_or_else(|| unexpected("transaction time", value))?,
        })
    }

    /// The fee kept of the asset received: (in the base asset, in the quote asset).
    pub fn fee(&self, crypto: bool, rate: Decimal) -> (Decimal, Decimal) {
        if !crypto || rate.is_zero() {
            return (Decimal::ZERO, Decimal::ZERO);
        }
        match self.side {
            OrderSide::Buy => ((self.quantity * rate).round_dp(FEE_PLACES), Decimal::ZERO),
            OrderSide::Sell => (
                Decimal::ZERO,
                (self.quantity * self.price * rate).round_dp(FEE_PLACES),
            ),
        }
    }

    /// As the broker world's fill: the quantity received or given, the whole fee in the quote.
    pub fn to_fill(&self, client_order_id: &str, crypto: bool, rate: Decimal) -> Fill {
        let (in_base, in_quote) = self.fee(crypto, rate);
        Fill {
            trade_id: self.id.clone(),
            order_id: self.order_id.clone(),
            client_order_id: client_order_id.to_string(),
            symbol: self.symbol.clone(),
            side: self.side,
            quantity: numbers::text(self.quantity - in_base),
            price: numbers::text(self.price),
            fee: numbers::text(in_base * self.price + in_quote),
            timestamp_ms: self.time_ms,
        }
    }
}

/// An order as Alpaca describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct VenueOrder {
    pub id: String,
    pub client_order_id: String,
    /// tradehost's symbol.
    pub symbol: String,
    pub crypto: bool,
    pub side: OrderSide,
    pub status: OrderStatus,
    pub quantity: Decimal,
    pub filled: Decimal,
    pub submitted_ms: i64,
    pub updated_ms: i64,
    /// Alpaca's own status word, kept as the reason of an order that ended unfilled.
    pub venue_status: String,
}

impl VenueOrder {
    pub fn parse(value: &Value, crypto_assets: &[String]) -> Result<VenueOrder, BrokerError> {
        let venue = value["symbol"]
            .as_str()
            .ok_or_else(|| unexpected("order", value))?;
        let stamp = |name: &str| value[name].as_str().and_then(time::parse_ms);
        let quantity = required(value, "qty")?;
        let filled = field(&value["filled_qty"]).unwrap_or_default();
        let submitted_ms = stamp("submitted_at")
            .or_else(|| stamp("created_at"))
            .unwrap_or_default();
        Ok(VenueOrder {
            id: value["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .ok_or_else(|| unexpected("order id", value))?
                .to_string(),
            client_order_id: value["client_order_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            symbol: tradehost_symbol(venue, crypto_assets)
                .ok_or_else(|| unexpected("symbol", value))?,
            crypto: value["asset_class"] == "crypto" || venue.contains('/'),
            side: side_of(&value["side"])?,
            status: status_of(&value["status"], filled, quantity)?,
            quantity,
            filled,
            submitted_ms,
            updated_ms: stamp("updated_at")
                .or_else(|| stamp("filled_at"))
                .unwrap_or(submitted_ms),
            venue_status: value["status"].as_str().unwrap_or_default().to_string(),
        })
    }

    /// The broker world's report with `executions` (the order's known fills) as fills.
    pub fn report(
        &self,
        executions: &[Execution],
        rate: Decimal,
        reason: Option<String>,
    ) -> OrderReport {
        let fills: Vec<Fill> = executions
            .iter()
            .map(|e| e.to_fill(&self.client_order_id, self.crypto, rate))
            .collect();
        // What filled, less the fee kept of the coin bought by the listed fills: fills not
        // listed (yet) still count, so the host waits for them.
        let kept: Decimal = executions.iter().map(|e| e.fee(self.crypto, rate).0).sum();
        let filled = (self.filled - kept).max(Decimal::ZERO);
        let reason = reason.or_else(|| {
            matches!(
                self.status,
                OrderStatus::Rejected | OrderStatus::Cancelled | OrderStatus::Expired
            )
            .then(|| format!("Alpaca: {}", self.venue_status))
        });
        OrderReport {
            order_id: self.id.clone(),
            client_order_id: self.client_order_id.clone(),
            symbol: self.symbol.clone(),
            side: self.side,
            status: self.status,
            quantity: numbers::text(self.quantity),
            filled_quantity: numbers::text(filled),
            fills,
            reason,
            updated_at_ms: self.updated_ms,
        }
    }
}

/// The rules of an asset (`GET /v2/assets/{symbol}`).
pub fn instrument(symbol: &str, asset: &Value) -> Result<Instrument, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    if asset["tradable"] == false || asset["status"] == "inactive" {
        return Err(BrokerError::NotFound(format!(
            "Alpaca does not trade {} now",
            asset["symbol"].as_str().unwrap_or(symbol)
        )));
    }
    let (tick, lot, min_quantity, min_notional) = if asset["class"] == "crypto" {
        let lot = field(&asset["min_trade_increment"]).unwrap_or(Decimal::new(1, 9));
        (
            field(&asset["price_increment"]).unwrap_or(Decimal::new(1, 2)),
            lot,
            field(&asset["min_order_size"]).unwrap_or(lot),
            // Alpaca refuses orders worth less than $1 ("cost basis must be >= minimal amount
            // of order 1"); the asset does not say so.
            Decimal::ONE,
        )
    } else if asset["fractionable"] == true {
        // Fractional shares: nine decimal places, at least $1 an order. Prices of $1 and more
        // are in cents.
        (
            Decimal::new(1, 2),
            Decimal::new(1, 9),
            Decimal::new(1, 9),
            Decimal::ONE,
        )
    } else {
        (
            Decimal::new(1, 2),
            Decimal::ONE,
            Decimal::ONE,
            Decimal::ZERO,
        )
    };
    Ok(Instrument {
        symbol: symbol.to_string(),
        base_asset: base.to_string(),
        quote_asset: quote.to_string(),
        tick_size: numbers::text(tick),
        lot_size: numbers::text(lot),
        min_quantity: numbers::text(min_quantity),
        min_notional: numbers::text(min_notional),
        price_precision: numbers::places(tick),
        quantity_precision: numbers::places(lot),
    })
}

/// A bar (`{"t": "...", "o": .., "h": .., "l": .., "c": .., "v": ..}`).
pub fn candle(bar: &Value) -> Result<Candle, BrokerError> {
    let number = |name: &str| {
        field(&bar[name])
            .and_then(|d| d.to_string().parse::<f64>().ok())
            .ok_or_else(|| unexpected("bar", bar))
    };
    Ok(Candle {
        timestamp_ms: bar["t"]
            .as_str()
            .and_then(time::parse_ms)
            .ok_or_else(|| unexpected("bar time", bar))?,
        open: number("o")?,
        high: number("h")?,
        low: number("l")?,
        close: number("c")?,
        volume: number("v")?,
    })
}

/// Alpaca's timeframe of a candle interval, and its length in milliseconds.
pub fn timeframe(interval: &str) -> Option<(&'static str, i64)> {
    Some(match interval {
        "1m" => ("1Min", 60_000),
        "5m" => ("5Min", 300_000),
        "15m" => ("15Min", 900_000),
        "30m" => ("30Min", 1_800_000),
        "1h" => ("1Hour", 3_600_000),
        "2h" => ("2Hour", 7_200_000),
        "4h" => ("4Hour", 14_400_000),
        "6h" => ("6Hour", 21_600_000),
        "12h" => ("12Hour", 43_200_000),
        "1d" => ("1Day", 86_400_000),
        "1w" => ("1Week", 604_800_000),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    fn coins() -> Vec<String> {
        CRYPTO_ASSETS.split(',').map(String::from).collect()
    }

    #[test]
    fn symbols_map_both_ways() {
        let coins = coins();
        let venue = |s: &str| venue_symbol(s, &coins).unwrap();
        assert_eq!(
            venue("AAPL-USD"),
            VenueSymbol {
                name: "AAPL".into(),
                crypto: false
            }
        );
        assert_eq!(
            venue("BTC-USD"),
            VenueSymbol {
                name: "BTC/USD".into(),
                crypto: true
            }
        );
        assert_eq!(venue("ETH-BTC").name, "ETH/BTC");
        assert_eq!(venue("LINK-USDT").name, "LINK/USDT");
        assert!(matches!(
            venue_symbol("BTC-EUR", &coins),
            Err(BrokerError::NotFound(_))
        ));
        assert!(venue_symbol("AAPL", &coins).is_err());
        assert_eq!(
            tradehost_symbol("AAPL", &coins).as_deref(),
            Some("AAPL-USD")
        );
        assert_eq!(
            tradehost_symbol("BTC/USD", &coins).as_deref(),
            Some("BTC-USD")
        );
        assert_eq!(
            tradehost_symbol("BTCUSD", &coins).as_deref(),
            Some("BTC-USD")
        );
        assert_eq!(
            tradehost_symbol("ETHBTC", &coins).as_deref(),
            Some("ETH-BTC")
        );
        assert_eq!(tradehost_symbol("BRK.B", &coins), None);
    }

    /// The order object of "Orders" in Alpaca's Trading API reference.
    #[test]
    fn documented_orders_parse() {
        let coins = coins();
        let order = VenueOrder::parse(
            &json!({
                "id": "61e69015-8549-4bfd-b9c3-01e75843f47d",
                "client_order_id": "eb9e2aaa-f71a-4f51-b5b4-52a6c565dad4",
                "created_at": "2021-03-16T18:38:01.942282Z",
                "updated_at": "2021-03-16T18:38:01.942282Z",
                "submitted_at": "2021-03-16T18:38:01.937734Z",
                "filled_at": null, "expired_at": null, "canceled_at": null, "failed_at": null,
                "replaced_at": null, "replaced_by": null, "replaces": null,
                "asset_id": "b0b6dd9d-8b9b-48a9-ba46-b9d54906e415", "symbol": "AAPL",
                "asset_class": "us_equity", "notional": null, "qty": "2", "filled_qty": "0",
                "filled_avg_price": null, "order_class": "", "order_type": "market",
                "type": "market", "side": "buy", "time_in_force": "day", "limit_price": null,
                "stop_price": null, "status": "accepted", "extended_hours": false, "legs": null,
                "trail_percent": null, "trail_price": null, "hwm": null
            }),
            &coins,
        )
        .unwrap();
        assert_eq!(order.symbol, "AAPL-USD");
        assert!(!order.crypto);
        assert_eq!((order.status, order.quantity), (OrderStatus::Open, d("2")));
        assert_eq!(
            order.submitted_ms,
            time::parse_ms("2021-03-16T18:38:01.937Z").unwrap()
        );
        let report = order.report(&[], d("0.0025"), None);
        assert_eq!(
            (report.filled_quantity.as_str(), report.reason),
            ("0", None)
        );

        let crypto = VenueOrder::parse(
            &json!({
                "id": "a1", "client_order_id": "c1", "symbol": "BTC/USD", "asset_class": "crypto",
                "qty": "0.5", "filled_qty": "0.5", "side": "buy", "status": "filled",
                "submitted_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:01Z"
            }),
            &coins,
        )
        .unwrap();
        let fill = Execution {
            id: "20240101000000000::f1".into(),
            order_id: "a1".into(),
            symbol: "BTC-USD".into(),
            side: OrderSide::Buy,
            quantity: d("0.2"),
            price: d("40000"),
            time_ms: 1,
        };
        // One fill of 0.2 listed (the rest not yet): the fee on it comes off the coin bought.
        let report = crypto.report(std::slice::from_ref(&fill), d("0.0025"), None);
        assert_eq!(report.status, OrderStatus::Filled);
        assert_eq!(report.filled_quantity, "0.4995");
        assert_eq!(
            (
                report.fills[0].quantity.as_str(),
                report.fills[0].fee.as_str()
            ),
            ("0.1995", "20")
        );
        assert_eq!(report.fills[0].client_order_id, "c1");
        let cancelled = VenueOrder::parse(
            &json!({"id": "a2", "client_order_id": "c2", "symbol": "ETHUSD", "qty": "1",
                    "filled_qty": "0", "side": "sell", "status": "canceled"}),
            &coins,
        )
        .unwrap();
        assert_eq!(cancelled.status, OrderStatus::Cancelled);
        assert_eq!(
            cancelled.report(&[], d("0.0025"), None).reason.as_deref(),
            Some("Alpaca: canceled")
        );
        assert_eq!(
            status_of(&json!("pending_cancel"), d("0.1"), d("1")).unwrap(),
            OrderStatus::PartiallyFilled
        );
    }

    /// A `FILL` activity as "Account Activities" documents it; a crypto sale pays its fee in USD.
    #[test]
    fn documented_fill_activities_parse() {
        let coins = coins();
        let execution = Execution::parse(
            &json!({
                "activity_type": "FILL", "cum_qty": "1",
                "id": "20190524113406977::8efc7b9a-8b2b-4000-9955-d36e7db0df74",
                "leaves_qty": "0", "price": "1.63", "qty": "1", "side": "buy", "symbol": "LPCN",
                "transaction_time": "2019-05-24T15:34:06.977Z",
                "order_id": "904837e3-3b76-47ec-b432-046db621571b", "type": "fill"
            }),
            &coins,
        )
        .unwrap();
        assert_eq!(execution.symbol, "LPCN-USD");
        assert_eq!(
            execution.time_ms,
            time::parse_ms("2019-05-24T15:34:06.977Z").unwrap()
        );
        let fill = execution.to_fill("", false, d("0.0025"));
        assert_eq!((fill.quantity.as_str(), fill.fee.as_str()), ("1", "0"));
        assert_eq!(fill.order_id, "904837e3-3b76-47ec-b432-046db621571b");

        let sold = Execution::parse(
            &json!({
                "activity_type": "FILL", "id": "20240101000000000::aa", "price": "3000",
                "qty": "0.5", "side": "sell", "symbol": "ETH/USD", "order_id": "o",
                "transaction_time": "2024-01-01T00:00:00Z", "type": "fill"
            }),
            &coins,
        )
        .unwrap();
        let fill = sold.to_fill("", true, d("0.0025"));
        assert_eq!((fill.quantity.as_str(), fill.fee.as_str()), ("0.5", "3.75"));
        assert!(Execution::parse(&json!({"symbol": "AAPL"}), &coins).is_err());
    }

    #[test]
    fn assets_become_instrument_rules_and_bars_candles() {
        let btc = json!({
            "id": "276e2673-764b-4ab6-a611-caf665ca6340", "class": "crypto", "exchange": "ALPACA",
            "symbol": "BTC/USD", "name": "BTC/USD pair", "status": "active", "tradable": true,
            "marginable": false, "shortable": false, "easy_to_borrow": false, "fractionable": true,
            "min_order_size": "0.0001", "min_trade_increment": "0.0001", "price_increment": "1"
        });
        let rules = instrument("BTC-USD", &btc).unwrap();
        assert_eq!(
            (
                rules.tick_size.as_str(),
                rules.lot_size.as_str(),
                rules.min_quantity.as_str()
            ),
            ("1", "0.0001", "0.0001")
        );
        assert_eq!((rules.price_precision, rules.quantity_precision), (0, 4));
        assert_eq!(rules.min_notional, "1");
        let aapl = json!({"class": "us_equity", "symbol": "AAPL", "status": "active",
                          "tradable": true, "fractionable": true});
        let rules = instrument("AAPL-USD", &aapl).unwrap();
        assert_eq!(
            (
                rules.tick_size.as_str(),
                rules.lot_size.as_str(),
                rules.min_notional.as_str()
            ),
            ("0.01", "0.000000001", "1")
        );
        let whole = json!({"class": "us_equity", "symbol": "XYZ", "status": "active",
                           "tradable": true, "fractionable": false});
        assert_eq!(instrument("XYZ-USD", &whole).unwrap().lot_size, "1");
        let halted = json!({"class": "us_equity", "symbol": "XYZ", "tradable": false});
        assert!(matches!(
            instrument("XYZ-USD", &halted),
            Err(BrokerError::NotFound(_))
        ));

        let bar = candle(
            &json!({"t": "2021-02-01T16:01:00Z", "o": 133.32, "h": 133.74,
                                 "l": 133.31, "c": 133.5, "v": 9876, "n": 12, "vw": 133.4}),
        )
        .unwrap();
        assert_eq!(
            bar.timestamp_ms,
            time::parse_ms("2021-02-01T16:01:00Z").unwrap()
        );
        assert!((bar.high - 133.74).abs() < 1e-9 && (bar.volume - 9876.0).abs() < 1e-9);
        assert_eq!(timeframe("1h"), Some(("1Hour", 3_600_000)));
        assert_eq!(timeframe("7m"), None);
    }
}
