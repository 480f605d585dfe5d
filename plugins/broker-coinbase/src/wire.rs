//! Coinbase Advanced Trade's JSON as the broker world's records: product ids, orders, fills,
//! product rules, candles, and the RFC 3339 times the API speaks.
//!
//! Fees: Coinbase charges spot fees in the quote currency (a fill's `commission`), so a fill's
//! quantity is what was bought or sold, and its fee is the commission as it stands.

use exchange_kit::numbers::{self, field};
use exchange_kit::symbols;
use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::types::{
    BrokerError, Candle, Fill, Instrument, OrderReport, OrderSide, OrderStatus,
};

/// tradehost's `BTC-USD` is Coinbase's product id `BTC-USD`: checked, unchanged.
pub fn product_id(symbol: &str) -> Result<String, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    Ok(format!("{base}-{quote}"))
}

/// A product id as tradehost's symbol (`None` for ids that are not BASE-QUOTE, e.g. futures).
pub fn symbol_of(product_id: &str) -> Option<String> {
    symbols::split(product_id)
        .ok()
        .map(|(b, q)| symbols::join(b, q))
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
    BrokerError::Unavailable(format!("Coinbase answered an unexpected {what}: {value}"))
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}

/// Milliseconds since the epoch of an RFC 3339 time (`2021-05-31T09:59:59.123Z`, or with an
/// offset).
pub fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    let bytes = text.as_bytes();
    if bytes.len() < 20
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
    {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let mut scaled = fraction[..digits.min(3)].to_string();
        while scaled.len() < 3 {
            scaled.push('0');
        }
        millis = scaled.parse().ok()?;
        rest = &fraction[digits..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 60 + minutes)
        }
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

/// An RFC 3339 UTC time with milliseconds, as the API takes them in queries.
pub fn format_time(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1_000 % 60,
        in_day % 1_000
    )
}

// Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's algorithms).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn time_of(value: &Value) -> Option<i64> {
    value.as_str().and_then(parse_time)
}

/// Where an order stands. A cancel that is queued has not taken effect yet: still working.
pub fn status_of(value: &Value, filled: Decimal) -> Result<OrderStatus, BrokerError> {
    let working = if filled > Decimal::ZERO {
        OrderStatus::PartiallyFilled
    } else {
        OrderStatus::Open
    };
    Ok(match value.as_str() {
        Some("PENDING" | "OPEN" | "QUEUED" | "CANCEL_QUEUED" | "EDIT_QUEUED") => working,
        Some("FILLED") => OrderStatus::Filled,
        Some("CANCELLED") => OrderStatus::Cancelled,
        Some("EXPIRED") => OrderStatus::Expired,
        Some("FAILED") => OrderStatus::Rejected,
        _ => return Err(unexpected("order status", value)),
    })
}

/// One fill as `GET /orders/historical/fills` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct VenueFill {
    pub trade_id: String,
    pub order_id: String,
    pub product_id: String,
    pub side: OrderSide,
    /// In the base currency (a size given in quote is converted at the fill's price).
    pub quantity: Decimal,
    pub price: Decimal,
    /// In the quote currency.
    pub commission: Decimal,
    pub time_ms: i64,
}

impl VenueFill {
    pub fn parse(value: &Value) -> Result<VenueFill, BrokerError> {
        let price = numbers::required(value, "price")?;
        let size = numbers::required(value, "size")?;
        let quantity = if value["size_in_quote"].as_bool().unwrap_or(false) {
            if price.is_zero() {
                return Err(unexpected("fill", value));
            }
            (size / price).round_dp(12).normalize()
        } else {
            size
        };
        let trade_id = text(&value["trade_id"]);
        let order_id = text(&value["order_id"]);
        if trade_id.is_empty() || order_id.is_empty() {
            return Err(unexpected("fill", value));
        }
        Ok(VenueFill {
            trade_id,
            order_id,
            product_id: text(&value["product_id"]),
            side: side_of(&value["side"])?,
            quantity,
            price,
            commission: field(&value["commission"]).unwrap_or_default(),
            time_ms: time_of(&value["trade_time"])
                .or_else(|| time_of(&value["sequence_timestamp"]))
                .ok_or_else(|| unexpected("fill time", value))?,
        })
    }

    pub fn to_fill(&self, symbol: &str, client_order_id: &str) -> Fill {
        Fill {
            trade_id: self.trade_id.clone(),
            order_id: self.order_id.clone(),
            client_order_id: client_order_id.to_string(),
            symbol: symbol.to_string(),
            side: self.side,
            quantity: numbers::text(self.quantity),
            price: numbers::text(self.price),
            fee: numbers::text(self.commission),
            timestamp_ms: self.time_ms,
        }
    }
}

/// An order as `GET /orders/historical/...` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct VenueOrder {
    pub order_id: String,
    pub client_order_id: String,
    pub product_id: String,
    pub side: OrderSide,
    pub status: OrderStatus,
    /// The base size ordered (for an order sized in quote, what has filled so far).
    pub quantity: Decimal,
    pub filled: Decimal,
    pub reason: Option<String>,
    pub updated_ms: i64,
}

impl VenueOrder {
    pub fn parse(value: &Value) -> Result<VenueOrder, BrokerError> {
        let order_id = text(&value["order_id"]);
        if order_id.is_empty() {
            return Err(unexpected("order", value));
        }
        let filled = field(&value["filled_size"]).unwrap_or_default();
        let status = status_of(&value["status"], filled)?;
        let quantity = value["order_configuration"]
            .as_object()
            .and_then(|config| config.values().find_map(|c| field(&c["base_size"])))
            .unwrap_or(filled);
        let reason = ["reject_message", "cancel_message", "reject_reason"]
            .iter()
            .map(|name| text(&value[*name]))
            .find(|r| {
                !r.is_empty() && !r.starts_with("UNKNOWN_") && r != "REJECT_REASON_UNSPECIFIED"
            })
            .filter(|_| {
                matches!(
                    status,
                    OrderStatus::Rejected | OrderStatus::Cancelled | OrderStatus::Expired
                )
            });
        Ok(VenueOrder {
            order_id,
            client_order_id: text(&value["client_order_id"]),
            product_id: text(&value["product_id"]),
            side: side_of(&value["side"])?,
            status,
            quantity,
            filled,
            reason,
            updated_ms: time_of(&value["last_fill_time"])
                .or_else(|| time_of(&value["created_time"]))
                .unwrap_or_default(),
        })
    }

    /// The broker world's report, with `fills` (all of the order's known so far) listed.
    pub fn report(&self, symbol: &str, fills: &[VenueFill], reason: Option<String>) -> OrderReport {
        let fills: Vec<Fill> = fills
            .iter()
            .filter(|f| f.order_id == self.order_id)
            .map(|f| f.to_fill(symbol, &self.client_order_id))
            .collect();
        let updated = fills
            .iter()
            .map(|f| f.timestamp_ms)
            .max()
            .unwrap_or_default()
            .max(self.updated_ms);
        OrderReport {
            order_id: self.order_id.clone(),
            client_order_id: self.client_order_id.clone(),
            symbol: symbol.to_string(),
            side: self.side,
            status: self.status,
            quantity: numbers::text(self.quantity),
            filled_quantity: numbers::text(self.filled),
            fills,
            reason: reason.or_else(|| self.reason.clone()),
            updated_at_ms: updated,
        }
    }
}

/// What `POST /orders` answered: the new order's id, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    Accepted { order_id: String },
    Refused(BrokerError),
}

/// Reads a create-order answer (`success`, `success_response` or `error_response`).
pub fn created(value: &Value) -> Result<Created, BrokerError> {
    if value["success"].as_bool() == Some(true) {
        let order_id = value["success_response"]["order_id"]
            .as_str()
            .or_else(|| value["order_id"].as_str())
            .filter(|id| !id.is_empty())
            .ok_or_else(|| unexpected("order answer", value))?;
        return Ok(Created::Accepted {
            order_id: order_id.to_string(),
        });
    }
    if value["success"].as_bool() != Some(false) {
        return Err(unexpected("order answer", value));
    }
    Ok(Created::Refused(order_failure(value)))
}

/// Why an order was not created, as a broker error keeping Coinbase's reason.
pub fn order_failure(value: &Value) -> BrokerError {
    let error = &value["error_response"];
    let codes: Vec<String> = [
        &error["error"],
        &error["new_order_failure_reason"],
        &error["preview_failure_reason"],
        &value["failure_reason"],
    ]
    .into_iter()
    .map(text)
    .filter(|c| !c.is_empty() && !c.starts_with("UNKNOWN_"))
    .collect();
    let message = [&error["message"], &error["error_details"]]
        .into_iter()
        .map(text)
        .find(|m| !m.is_empty());
    let code = codes.first().cloned().unwrap_or_else(|| {
        let reason = text(&error["error"]);
        if reason.is_empty() {
            text(&value["failure_reason"])
        } else {
            reason
        }
    });
    let described = match (&message, code.is_empty()) {
        (Some(message), false) => format!("{message} ({code})"),
        (Some(message), true) => message.clone(),
        (None, false) => code.clone(),
        (None, true) => format!("Coinbase refused the order: {value}"),
    };
    let has = |needle: &str| codes.iter().any(|c| c.contains(needle));
    if has("INSUFFICIENT_FUND") || has("INVALID_LEDGER_BALANCE") {
        BrokerError::InsufficientFunds(described)
    } else if has("UNSUPPORTED_ORDER_CONFIGURATION")
        || has("INVALID_SIDE")
        || has("INVALID_PRODUCT_ID")
        || has("INVALID_SIZE_PRECISION")
        || has("INVALID_PRICE_PRECISION")
        || has("INVALID_LIMIT_PRICE")
        || has("TOO_SMALL")
        || has("TOO_LARGE")
        || has("INVALID_REQUEST")
        || has("INVALID_BASE_SIZE")
        || has("INVALID_QUOTE_SIZE")
    {
        BrokerError::Invalid(described)
    } else {
        BrokerError::Rejected(described)
    }
}

/// The trading rules of a product (`GET /products/{product_id}`).
pub fn instrument(symbol: &str, product: &Value) -> Result<Instrument, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    let decimal = |name: &str| field(&product[name]).unwrap_or_default();
    // `price_increment` is the price tick; older answers carry only `quote_increment`.
    let tick = field(&product["price_increment"])
        .filter(|t| *t > Decimal::ZERO)
        .unwrap_or_else(|| decimal("quote_increment"));
    let lot = decimal("base_increment");
    if product["product_id"].as_str().is_none() || lot <= Decimal::ZERO || tick <= Decimal::ZERO {
        return Err(unexpected("product", product));
    }
    let name = |id: &str, fallback: &str| {
        product[id]
            .as_str()
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback)
            .to_ascii_uppercase()
    };
    Ok(Instrument {
        symbol: symbol.to_string(),
        base_asset: name("base_currency_id", base),
        quote_asset: name("quote_currency_id", quote),
        tick_size: numbers::text(tick),
        lot_size: numbers::text(lot),
        min_quantity: numbers::text(decimal("base_min_size")),
        min_notional: numbers::text(decimal("quote_min_size")),
        price_precision: numbers::places(tick),
        quantity_precision: numbers::places(lot),
    })
}

/// Coinbase's granularity for a candle interval, and its length in seconds.
pub fn granularity(interval: &str) -> Option<(&'static str, i64)> {
    Some(match interval {
        "1m" => ("ONE_MINUTE", 60),
        "5m" => ("FIVE_MINUTE", 300),
        "15m" => ("FIFTEEN_MINUTE", 900),
        "30m" => ("THIRTY_MINUTE", 1_800),
        "1h" => ("ONE_HOUR", 3_600),
        "2h" => ("TWO_HOUR", 7_200),
        "4h" => ("FOUR_HOUR", 14_400),
        "6h" => ("SIX_HOUR", 21_600),
        "1d" => ("ONE_DAY", 86_400),
        _ => return None,
    })
}

/// A `candles` entry (`start` in Unix seconds, prices as strings).
pub fn candle(row: &Value) -> Result<Candle, BrokerError> {
    let number = |name: &str| {
        field(&row[name])
            .and_then(|d| d.to_string().parse::<f64>().ok())
            .ok_or_else(|| unexpected("candle", row))
    };
    let start = match &row["start"] {
        Value::String(s) => s.parse::<i64>().ok(),
        other => other.as_i64(),
    }
    .ok_or_else(|| unexpected("candle", row))?;
    Ok(Candle {
        timestamp_ms: start * 1_000,
        open: number("open")?,
        high: number("high")?,
        low: number("low")?,
        close: number("close")?,
        volume: number("volume")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn product_ids_are_tradehost_symbols() {
        assert_eq!(product_id("BTC-USD").unwrap(), "BTC-USD");
        assert!(product_id("BTCUSD").is_err() && product_id("btc-usd").is_err());
        assert_eq!(symbol_of("ETH-USDC").as_deref(), Some("ETH-USDC"));
        assert_eq!(symbol_of("BIT-28JUN24-CDE"), None);
    }

    #[test]
    fn times_read_and_write_rfc_3339() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time("2021-05-31T09:59:59.000Z"),
            Some(1_622_455_199_000)
        );
        assert_eq!(
            parse_time("2021-05-31T09:59:59.123456789Z"),
            Some(1_622_455_199_123)
        );
        assert_eq!(
            parse_time("2021-05-31T11:59:59.5+02:00"),
            Some(1_622_455_199_500)
        );
        assert_eq!(parse_time("2024-02-29T23:59:59Z"), Some(1_709_251_199_000));
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(format_time(1_622_455_199_123), "2021-05-31T09:59:59.123Z");
        assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
        for ms in [1_709_251_199_000, 951_782_400_000, 4_102_444_800_001] {
            assert_eq!(parse_time(&format_time(ms)), Some(ms));
        }
    }

    /// An order as "Get Order" documents it (`GET /orders/historical/{order_id}`).
    #[test]
    fn a_documented_order_parses() {
        let answer = json!({"order": {
            "order_id": "0000-000000-000000", "product_id": "BTC-USD", "user_id": "2222-000000-000000",
            "order_configuration": {"market_market_ioc": {"base_size": "0.001"}},
            "side": "BUY", "client_order_id": "11111-000000-000000", "status": "FILLED",
            "time_in_force": "IMMEDIATE_OR_CANCEL", "created_time": "2021-05-31T09:59:59.000Z",
            "completion_percentage": "100", "filled_size": "0.001", "average_filled_price": "50",
            "fee": "", "number_of_fills": "2", "filled_value": "0.05", "pending_cancel": false,
            "size_in_quote": false, "total_fees": "0.0003", "size_inclusive_of_fees": false,
            "total_value_after_fees": "0.0503", "trigger_status": "INVALID_ORDER_TYPE",
            "order_type": "MARKET", "reject_reason": "REJECT_REASON_UNSPECIFIED", "settled": true,
            "product_type": "SPOT", "reject_message": "", "cancel_message": "",
            "order_placement_source": "RETAIL_ADVANCED", "outstanding_hold_amount": "0",
            "is_liquidation": false, "last_fill_time": "2021-05-31T09:59:59.500Z",
            "edit_history": [], "leverage": "", "margin_type": "UNKNOWN_MARGIN_TYPE",
            "retail_portfolio_id": "11111-000000-000000"
        }});
        let order = VenueOrder::parse(&answer["order"]).unwrap();
        assert_eq!(order.status, OrderStatus::Filled);
        assert_eq!((order.quantity, order.filled), (d("0.001"), d("0.001")));
        assert_eq!(order.updated_ms, 1_622_455_199_500);
        assert_eq!(order.reason, None);
        let fills = json!({"fills": [
            {"entry_id": "22222-2222222-22222222", "trade_id": "1111-11111-111111", "order_id": "0000-000000-000000",
             "trade_time": "2021-05-31T09:59:59.250Z", "trade_type": "FILL", "price": "50", "size": "0.0006",
             "commission": "0.00018", "product_id": "BTC-USD", "sequence_timestamp": "2021-05-31T09:59:59.251Z",
             "liquidity_indicator": "TAKER", "size_in_quote": false, "user_id": "3333-333333-3333333", "side": "BUY",
             "retail_portfolio_id": "4444-444444-4444444"},
            {"entry_id": "22222-2222222-22222223", "trade_id": "1111-11111-111112", "order_id": "0000-000000-000000",
             "trade_time": "2021-05-31T09:59:59.500Z", "trade_type": "FILL", "price": "50", "size": "0.02",
             "commission": "0.00012", "product_id": "BTC-USD", "sequence_timestamp": "2021-05-31T09:59:59.501Z",
             "liquidity_indicator": "TAKER", "size_in_quote": true, "user_id": "3333-333333-3333333", "side": "BUY",
             "retail_portfolio_id": "4444-444444-4444444"}
        ], "cursor": ""});
        let fills: Vec<VenueFill> = fills["fills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| VenueFill::parse(f).unwrap())
            .collect();
        // The second is sized in quote: 0.02 USD at 50 is 0.0004 BTC.
        assert_eq!(fills[1].quantity, d("0.0004"));
        let report = order.report("BTC-USD", &fills, None);
        assert_eq!(report.fills.len(), 2);
        assert_eq!(
            (
                report.fills[0].quantity.as_str(),
                report.fills[0].fee.as_str(),
                report.fills[0].client_order_id.as_str()
            ),
            ("0.0006", "0.00018", "11111-000000-000000")
        );
        assert_eq!(report.fills[0].timestamp_ms, 1_622_455_199_250);
        assert_eq!(report.filled_quantity, "0.001");

        let open = VenueOrder::parse(&json!({
            "order_id": "a", "product_id": "ETH-USD", "side": "SELL", "client_order_id": "c",
            "status": "OPEN", "filled_size": "0.5", "created_time": "2021-05-31T09:59:59Z",
            "order_configuration": {"limit_limit_gtc": {"base_size": "2", "limit_price": "3000", "post_only": false}}
        }))
        .unwrap();
        assert_eq!(
            (open.status, open.quantity),
            (OrderStatus::PartiallyFilled, d("2"))
        );
        let cancelled = VenueOrder::parse(&json!({
            "order_id": "a", "product_id": "ETH-USD", "side": "SELL", "client_order_id": "c",
            "status": "CANCELLED", "filled_size": "0", "cancel_message": "User requested cancel",
            "order_configuration": {"limit_limit_gtc": {"base_size": "2", "limit_price": "3000"}}
        }))
        .unwrap();
        assert_eq!(cancelled.reason.as_deref(), Some("User requested cancel"));
        assert!(
            VenueOrder::parse(&json!({"order_id": "a", "side": "BUY", "status": "WHAT"})).is_err()
        );
    }

    /// The create-order answers "Create Order" documents: success, and failure with its reason.
    #[test]
    fn create_order_answers_and_failures() {
        let ok = json!({
            "success": true,
            "success_response": {"order_id": "11111-00000-000000", "product_id": "BTC-USD", "side": "BUY", "client_order_id": "0000-00000-000000"},
            "order_configuration": {"market_market_ioc": {"base_size": "0.001"}}
        });
        assert_eq!(
            created(&ok).unwrap(),
            Created::Accepted {
                order_id: "11111-00000-000000".into()
            }
        );
        let refused = |error: &str, message: &str| {
            match created(&json!({
                "success": false,
                "failure_reason": "UNKNOWN_FAILURE_REASON",
                "order_id": "",
                "error_response": {"error": error, "message": message, "error_details": message,
                    "preview_failure_reason": "UNKNOWN_PREVIEW_FAILURE_REASON", "new_order_failure_reason": "UNKNOWN_FAILURE_REASON"}
            }))
            .unwrap()
            {
                Created::Refused(err) => err,
                other => panic!("{other:?}"),
            }
        };
        assert!(matches!(
            refused(
                "INSUFFICIENT_FUND",
                "Insufficient balance in source account"
            ),
            BrokerError::InsufficientFunds(_)
        ));
        assert!(matches!(
            refused(
                "INVALID_SIZE_PRECISION",
                "Too many decimals in order amount"
            ),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            refused(
                "PREVIEW_INVALID_BASE_SIZE_TOO_SMALL",
                "Order size too small"
            ),
            BrokerError::Invalid(_)
        ));
        assert_eq!(
            refused("UNKNOWN_FAILURE_REASON", "Market is closed."),
            BrokerError::Rejected("Market is closed. (UNKNOWN_FAILURE_REASON)".into())
        );
        assert!(matches!(
            refused("ORDER_ENTRY_DISABLED", "Trading is disabled"),
            BrokerError::Rejected(m) if m.contains("Trading is disabled")
        ));
        assert!(created(&json!({"what": 1})).is_err());
    }

    /// A product as "Get Product" documents it, and a candle of "Get Product Candles".
    #[test]
    fn products_become_rules_and_candles_bars() {
        let product = json!({
            "product_id": "BTC-USD", "price": "140.21", "price_percentage_change_24h": "9.43%",
            "volume_24h": "1908432", "volume_percentage_change_24h": "9.43%",
            "base_increment": "0.00000001", "quote_increment": "0.01", "quote_min_size": "1",
            "quote_max_size": "150000000", "base_min_size": "0.00000001", "base_max_size": "3400",
            "base_name": "Bitcoin", "quote_name": "US Dollar", "watched": true, "is_disabled": false,
            "new": true, "status": "online", "cancel_only": false, "limit_only": false,
            "post_only": false, "trading_disabled": false, "auction_mode": false,
            "product_type": "SPOT", "quote_currency_id": "USD", "base_currency_id": "BTC",
            "mid_market_price": "140.22", "alias": "", "alias_to": [], "base_display_symbol": "BTC",
            "quote_display_symbol": "USD", "view_only": false, "price_increment": "0.01",
            "display_name": "BTC-USD", "product_venue": "CBE"
        });
        let rules = instrument("BTC-USD", &product).unwrap();
        assert_eq!(
            (
                rules.tick_size.as_str(),
                rules.lot_size.as_str(),
                rules.min_quantity.as_str(),
                rules.min_notional.as_str()
            ),
            ("0.01", "0.00000001", "0.00000001", "1")
        );
        assert_eq!((rules.price_precision, rules.quantity_precision), (2, 8));
        assert_eq!(
            (rules.base_asset.as_str(), rules.quote_asset.as_str()),
            ("BTC", "USD")
        );
        assert!(instrument("BTC-USD", &json!({"error": "NOT_FOUND"})).is_err());

        let bar = candle(&json!({"start": "1639508050", "low": "140.21", "high": "140.21", "open": "140.21", "close": "140.21", "volume": "56437345"})).unwrap();
        assert_eq!(bar.timestamp_ms, 1_639_508_050_000);
        assert!((bar.volume - 56_437_345.0).abs() < 1e-6);
        assert_eq!(granularity("5m"), Some(("FIVE_MINUTE", 300)));
        assert_eq!(granularity("3m"), None);
    }
}
