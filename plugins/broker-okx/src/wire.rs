//! OKX's JSON as the broker world's records: instrument ids and client order ids both ways,
//! orders, fills with their fees, instrument rules, candles.
//!
//! Fees: OKX takes a spot trade's fee in the asset received (a buy pays in the coin bought) and
//! reports it signed, negative for a charge and positive for a rebate (`fee`, `feeCcy`). A fill
//! is reported with the quantity the account actually received or gave (net of a fee in the base
//! asset) and the fee valued in the quote asset at the fill price (a fee in a third asset at that
//! asset's price), positive for a charge as the broker world counts it.

use exchange_kit::numbers::{self, field, required};
use exchange_kit::symbols;
use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::types::{
    BrokerError, Candle, Fill, Instrument, OrderReport, OrderSide, OrderStatus,
};

use crate::client::text;

/// `BTC-USDT` → OKX's instId `BTC-USDT` (spot instruments are named the same way).
pub fn inst_id(symbol: &str) -> Result<String, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    Ok(format!("{base}-{quote}"))
}

/// A spot instId as tradehost's symbol.
pub fn symbol_of(inst_id: &str) -> Result<String, BrokerError> {
    let (base, quote) = symbols::split(inst_id)?;
    Ok(symbols::join(base, quote))
}

/// tradehost's client order ids are `th-` and 32 lowercase hex digits.
const OUR_PREFIX: &str = "th-";

fn lower_hex_32(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// tradehost's client order id as OKX's `clOrdId` (letters and digits, at most 32): `th-` and
/// 32 hex digits become the digits. Another id that OKX accepts is sent as it is, unless it is
/// itself 32 lowercase hex digits (it would read back as a `th-` id).
pub fn venue_client_id(client_order_id: &str) -> Result<String, BrokerError> {
    if let Some(digits) = client_order_id.strip_prefix(OUR_PREFIX)
        && lower_hex_32(digits)
    {
        return Ok(digits.to_string());
    }
    let accepted = (1..=32).contains(&client_order_id.len())
        && client_order_id.bytes().all(|b| b.is_ascii_alphanumeric())
        && !lower_hex_32(client_order_id);
    if accepted {
        Ok(client_order_id.to_string())
    } else {
        Err(BrokerError::Invalid(format!(
            "client order id `{client_order_id}` cannot be an OKX clOrdId (letters and digits, at most 32)"
        )))
    }
}

/// OKX's `clOrdId` as tradehost's client order id (empty when the order has none).
pub fn client_id_of(cl_ord_id: &str) -> String {
    if lower_hex_32(cl_ord_id) {
        format!("{OUR_PREFIX}{cl_ord_id}")
    } else {
        cl_ord_id.to_string()
    }
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
        Some("sell") => Ok(OrderSide::Sell),
        _ => Err(unexpected("side", value)),
    }
}

fn unexpected(what: &str, value: &Value) -> BrokerError {
    BrokerError::Unavailable(format!("OKX answered an unexpected {what}: {value}"))
}

/// An order's `state`, given what of it filled.
pub fn status_of(value: &Value, filled: Decimal) -> Result<OrderStatus, BrokerError> {
    Ok(match value.as_str() {
        Some("live") if filled > Decimal::ZERO => OrderStatus::PartiallyFilled,
        Some("live") => OrderStatus::Open,
        Some("partially_filled") => OrderStatus::PartiallyFilled,
        Some("filled") => OrderStatus::Filled,
        Some("canceled" | "mmp_canceled") => OrderStatus::Cancelled,
        _ => return Err(unexpected("order state", value)),
    })
}

fn id_of(value: &Value, what: &str) -> Result<String, BrokerError> {
    let id = text(value);
    if id.is_empty() {
        Err(unexpected(what, value))
    } else {
        Ok(id)
    }
}

fn millis(value: &Value) -> Option<i64> {
    text(value).parse::<i64>().ok()
}

/// A decimal field OKX may leave empty (`""`), as zero.
fn or_zero(value: &Value) -> Decimal {
    field(value).unwrap_or_default()
}

/// One fill as `GET /api/v5/trade/fills` (or `fills-history`) lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub trade_id: String,
    /// The cursor of OKX's fill lists.
    pub bill_id: String,
    pub order_id: String,
    /// tradehost's form (empty when the order had none).
    pub client_order_id: String,
    pub inst_id: String,
    pub side: OrderSide,
    pub quantity: Decimal,
    pub price: Decimal,
    /// As OKX reports it: negative for a charge, positive for a rebate.
    pub fee: Decimal,
    pub fee_ccy: String,
    pub time_ms: i64,
}

impl Execution {
    pub fn parse(row: &Value) -> Result<Execution, BrokerError> {
        Ok(Execution {
            trade_id: id_of(&row["tradeId"], "trade id")?,
            bill_id: text(&row["billId"]),
            order_id: id_of(&row["ordId"], "order id")?,
            client_order_id: client_id_of(row["clOrdId"].as_str().unwrap_or_default()),
            inst_id: row["instId"].as_str().unwrap_or_default().to_string(),
            side: side_of(&row["side"])?,
            quantity: required(row, "fillSz")?,
            price: required(row, "fillPx")?,
            fee: or_zero(&row["fee"]),
            fee_ccy: row["feeCcy"].as_str().unwrap_or_default().to_string(),
            time_ms: millis(&row["ts"])
                .or_else(|| millis(&row["fillTime"]))
                .ok_or_else(|| unexpected("fill time", row))?,
        })
    }

    /// What the fee changed of the base asset (negative: kept out of the coin bought).
    pub fn base_fee(&self, base: &str) -> Decimal {
        if self.fee_ccy == base {
            self.fee
        } else {
            Decimal::ZERO
        }
    }

    /// As the broker world's fill of `symbol`. `asset_price` values a fee in a third asset in
    /// the quote asset.
    pub fn to_fill(
        &self,
        symbol: &str,
        asset_price: &mut impl FnMut(&str) -> Result<Decimal, BrokerError>,
    ) -> Result<Fill, BrokerError> {
        let (base, quote) = symbols::split(symbol)?;
        let charged = -self.fee;
        let fee = if charged.is_zero() || self.fee_ccy == quote {
            charged
        } else if self.fee_ccy == base {
            charged * self.price
        } else {
            charged * asset_price(&self.fee_ccy)?
        };
        Ok(Fill {
            trade_id: self.trade_id.clone(),
            order_id: self.order_id.clone(),
            client_order_id: self.client_order_id.clone(),
            symbol: symbol.to_string(),
            side: self.side,
            quantity: numbers::text(self.quantity + self.base_fee(base)),
            price: numbers::text(self.price),
            fee: numbers::text(fee.round_dp(12)),
            timestamp_ms: self.time_ms,
        })
    }
}

/// An order as OKX describes it (`GET /api/v5/trade/order`, `orders-pending`).
#[derive(Debug, Clone, PartialEq)]
pub struct VenueOrder {
    pub order_id: String,
    /// tradehost's form; `okx-` and the order id for an order placed without one.
    pub client_order_id: String,
    pub inst_id: String,
    pub side: OrderSide,
    pub status: OrderStatus,
    /// In the base asset.
    pub quantity: Decimal,
    pub executed: Decimal,
    pub created_ms: i64,
    pub updated_ms: i64,
}

impl VenueOrder {
    pub fn parse(row: &Value) -> Result<VenueOrder, BrokerError> {
        let order_id = id_of(&row["ordId"], "order id")?;
        let executed = or_zero(&row["accFillSz"]);
        let mut quantity = required(row, "sz")?;
        // A market buy sized in the quote asset (placed elsewhere): its size is not a base
        // quantity, what filled of it is.
        if row["tgtCcy"] == "quote_ccy" && row["ordType"] == "market" {
            quantity = executed;
        }
        let client_order_id = match row["clOrdId"].as_str().unwrap_or_default() {
            "" => format!("okx-{order_id}"),
            id => client_id_of(id),
        };
        let created_ms = millis(&row["cTime"]).unwrap_or_default();
        Ok(VenueOrder {
            client_order_id,
            inst_id: row["instId"].as_str().unwrap_or_default().to_string(),
            side: side_of(&row["side"])?,
            status: status_of(&row["state"], executed)?,
            quantity: quantity.max(executed),
            executed,
            created_ms,
            updated_ms: millis(&row["uTime"]).unwrap_or(created_ms),
            order_id,
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
        let mut fills = Vec::with_capacity(executions.len());
        for execution in executions {
            let mut fill = execution.to_fill(symbol, asset_price)?;
            // The fill lists carry the order's clOrdId; the report names it the same way.
            fill.client_order_id = self.client_order_id.clone();
            fills.push(fill);
        }
        // What filled, less what OKX kept of the coin bought: fills not listed (yet) still
        // count, so the host waits for them.
        let kept: Decimal = executions.iter().map(|e| e.base_fee(base)).sum();
        let filled = (self.executed + kept).max(Decimal::ZERO);
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

/// The rules of a `GET /api/v5/public/instruments` entry. OKX publishes no minimum order value
/// for spot: only a minimum size.
pub fn instrument(symbol: &str, entry: &Value) -> Result<Instrument, BrokerError> {
    let tick = required(entry, "tickSz")?;
    let lot = required(entry, "lotSz")?;
    let min_quantity = field(&entry["minSz"]).unwrap_or(lot);
    Ok(Instrument {
        symbol: symbol.to_string(),
        base_asset: entry["baseCcy"].as_str().unwrap_or_default().to_string(),
        quote_asset: entry["quoteCcy"].as_str().unwrap_or_default().to_string(),
        tick_size: numbers::text(tick),
        lot_size: numbers::text(lot),
        min_quantity: numbers::text(min_quantity),
        min_notional: "0".into(),
        price_precision: numbers::places(tick),
        quantity_precision: numbers::places(lot),
    })
}

/// A `GET /api/v5/market/candles` row: `[ts, o, h, l, c, vol, volCcy, volCcyQuote, confirm]`.
pub fn candle(row: &Value) -> Result<Candle, BrokerError> {
    let number = |index: usize| {
        field(&row[index])
            .and_then(|d| d.to_string().parse::<f64>().ok())
            .ok_or_else(|| unexpected("candle", row))
    };
    Ok(Candle {
        timestamp_ms: millis(&row[0]).ok_or_else(|| unexpected("candle", row))?,
        open: number(1)?,
        high: number(2)?,
        low: number(3)?,
        close: number(4)?,
        volume: number(5)?,
    })
}

/// OKX's `bar` for a candle interval, if it has one. Bars of 6 hours and more are asked for in
/// UTC (OKX's plain `1D` starts at midnight in Hong Kong).
pub fn bar(interval: &str) -> Option<&'static str> {
    Some(match interval {
        "1m" => "1m",
        "3m" => "3m",
        "5m" => "5m",
        "15m" => "15m",
        "30m" => "30m",
        "1h" => "1H",
        "2h" => "2H",
        "4h" => "4H",
        "6h" => "6Hutc",
        "12h" => "12Hutc",
        "1d" => "1Dutc",
        "3d" => "3Dutc",
        "1w" => "1Wutc",
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

    fn no_price(asset: &str) -> Result<Decimal, BrokerError> {
        Err(BrokerError::Unavailable(format!("no price for {asset}")))
    }

    #[test]
    fn symbols_and_client_order_ids_map_both_ways() {
        assert_eq!(inst_id("BTC-USDT").unwrap(), "BTC-USDT");
        assert!(inst_id("BTCUSDT").is_err() && inst_id("btc-usdt").is_err());
        assert_eq!(symbol_of("ETH-USDC").unwrap(), "ETH-USDC");
        assert!(symbol_of("BTC-USDT-SWAP").is_err());

        let ours = "th-0123456789abcdef0123456789abcdef";
        let venue = venue_client_id(ours).unwrap();
        assert_eq!(venue, "0123456789abcdef0123456789abcdef");
        assert_eq!(client_id_of(&venue), ours);
        assert_eq!(venue_client_id("manual1").unwrap(), "manual1");
        assert_eq!(client_id_of("manual1"), "manual1");
        assert_eq!(client_id_of(""), "");
        for refused in [
            "th-0123",
            "a-b",
            "0123456789abcdef0123456789abcdef",
            "x0123456789abcdef0123456789abcdef",
            "",
        ] {
            assert!(venue_client_id(refused).is_err(), "{refused}");
        }
    }

    /// A `GET /api/v5/trade/fills` row as OKX documents it (a buy paying its fee in the coin
    /// bought).
    #[test]
    fn a_documented_fill_is_net_of_its_fee() {
        let row = json!({
            "side": "buy", "fillSz": "0.00192834", "fillPx": "51858", "fillPxVol": "",
            "fillFwdPx": "", "fee": "-0.00000192834", "fillPnl": "0", "ordId": "680800019749904384",
            "feeRate": "-0.001", "instType": "SPOT", "fillPxUsd": "", "instId": "BTC-USDT",
            "clOrdId": "", "posSide": "net", "billId": "680800019754098688", "subType": "1",
            "fillMarkVol": "", "tag": "", "fillTime": "1708587373361", "execType": "T",
            "fillIdxPx": "", "tradeId": "744876980", "fillMarkPx": "", "feeCcy": "BTC",
            "ts": "1708587373362"
        });
        let execution = Execution::parse(&row).unwrap();
        assert_eq!(
            (
                execution.trade_id.as_str(),
                execution.bill_id.as_str(),
                execution.time_ms
            ),
            ("744876980", "680800019754098688", 1708587373362)
        );
        let fill = execution.to_fill("BTC-USDT", &mut no_price).unwrap();
        assert_eq!(fill.quantity, "0.00192641166");
        assert_eq!(fill.fee, "0.09999985572");
        assert_eq!(
            (fill.order_id.as_str(), fill.client_order_id.as_str()),
            ("680800019749904384", "")
        );
        assert_eq!(fill.side, OrderSide::Buy);

        // A sell pays in the quote asset; a rebate is a negative fee.
        let sold = Execution {
            side: OrderSide::Sell,
            fee: d("-0.06"),
            fee_ccy: "USDT".into(),
            ..execution.clone()
        };
        let fill = sold.to_fill("BTC-USDT", &mut no_price).unwrap();
        assert_eq!(
            (fill.quantity.as_str(), fill.fee.as_str()),
            ("0.00192834", "0.06")
        );
        let rebated = Execution {
            fee: d("0.01"),
            fee_ccy: "USDT".into(),
            ..execution.clone()
        };
        assert_eq!(
            rebated.to_fill("BTC-USDT", &mut no_price).unwrap().fee,
            "-0.01"
        );
        // In a third asset: valued at its price, the quantity untouched.
        let in_okb = Execution {
            fee: d("-0.002"),
            fee_ccy: "OKB".into(),
            ..execution
        };
        let fill = in_okb
            .to_fill("BTC-USDT", &mut |asset| {
                assert_eq!(asset, "OKB");
                Ok(d("50"))
            })
            .unwrap();
        assert_eq!(
            (fill.quantity.as_str(), fill.fee.as_str()),
            ("0.00192834", "0.1")
        );
        assert!(in_okb.to_fill("BTC-USDT", &mut no_price).is_err());
    }

    /// A `GET /api/v5/trade/order` answer as OKX documents it.
    #[test]
    fn a_documented_order_reports_what_filled_net_of_fees() {
        let row = serde_json::from_str::<Value>(
            r#"{
            "accFillSz": "0.00192834", "algoClOrdId": "", "algoId": "", "attachAlgoClOrdId": "",
            "attachAlgoOrds": [], "avgPx": "51858", "cTime": "1708587373361", "cancelSource": "",
            "cancelSourceReason": "", "category": "normal", "ccy": "", "clOrdId": "0123456789abcdef0123456789abcdef",
            "fee": "-0.00000192834", "feeCcy": "BTC", "fillPx": "51858", "fillSz": "0.00192834",
            "fillTime": "1708587373361", "instId": "BTC-USDT", "instType": "SPOT", "isTpLimit": "false",
            "lever": "", "linkedAlgoOrd": {"algoId": ""}, "ordId": "680800019749904384",
            "ordType": "market", "pnl": "0", "posSide": "net", "px": "", "pxType": "", "pxUsd": "",
            "pxVol": "", "quickMgnType": "", "rebate": "0", "rebateCcy": "USDT", "reduceOnly": "false",
            "side": "buy", "slOrdPx": "", "slTriggerPx": "", "slTriggerPxType": "", "source": "",
            "state": "filled", "stpId": "", "stpMode": "", "sz": "0.00192834", "tag": "",
            "tdMode": "cash", "tgtCcy": "base_ccy", "tpOrdPx": "", "tpTriggerPx": "",
            "tpTriggerPxType": "", "tradeId": "744876980", "uTime": "1708587373362"
        }"#,
        )
        .unwrap();
        let order = VenueOrder::parse(&row).unwrap();
        assert_eq!(order.status, OrderStatus::Filled);
        assert_eq!(order.client_order_id, "th-0123456789abcdef0123456789abcdef");
        let fill = json!({
            "side": "buy", "fillSz": "0.00192834", "fillPx": "51858", "fee": "-0.00000192834",
            "ordId": "680800019749904384", "instId": "BTC-USDT", "clOrdId": "0123456789abcdef0123456789abcdef",
            "billId": "680800019754098688", "tradeId": "744876980", "feeCcy": "BTC", "ts": "1708587373362"
        });
        let executions = vec![Execution::parse(&fill).unwrap()];
        let report = order
            .report("BTC-USDT", &executions, &mut no_price, None)
            .unwrap();
        assert_eq!(
            (
                report.quantity.as_str(),
                report.filled_quantity.as_str(),
                report.updated_at_ms
            ),
            ("0.00192834", "0.00192641166", 1708587373362)
        );
        assert_eq!(report.fills[0].client_order_id, report.client_order_id);
        // Listed without its fills: all of it counts, so the host waits for them.
        let bare = order.report("BTC-USDT", &[], &mut no_price, None).unwrap();
        assert_eq!(bare.filled_quantity, "0.00192834");

        let live = VenueOrder::parse(&json!({
            "ordId": "1", "clOrdId": "", "instId": "ETH-USDT", "side": "sell", "state": "live",
            "sz": "1.5", "accFillSz": "0.5", "ordType": "limit", "px": "3000", "cTime": "10", "uTime": ""
        }))
        .unwrap();
        assert_eq!(
            (live.status, live.client_order_id.as_str(), live.updated_ms),
            (OrderStatus::PartiallyFilled, "okx-1", 10)
        );
        let bought_for_quote = VenueOrder::parse(&json!({
            "ordId": "2", "clOrdId": "x", "instId": "ETH-USDT", "side": "buy", "state": "filled",
            "sz": "100", "accFillSz": "0.033", "ordType": "market", "tgtCcy": "quote_ccy"
        }))
        .unwrap();
        assert_eq!(bought_for_quote.quantity, d("0.033"));
        for (state, status) in [
            ("canceled", OrderStatus::Cancelled),
            ("mmp_canceled", OrderStatus::Cancelled),
            ("partially_filled", OrderStatus::PartiallyFilled),
        ] {
            assert_eq!(status_of(&json!(state), Decimal::ZERO).unwrap(), status);
        }
        assert!(status_of(&json!("unknown"), Decimal::ZERO).is_err());
    }

    #[test]
    fn instruments_become_rules_and_rows_candles() {
        let entry = serde_json::from_str::<Value>(
            r#"{
            "alias": "", "baseCcy": "BTC", "category": "1", "ctMult": "", "ctType": "", "ctVal": "",
            "ctValCcy": "", "expTime": "", "instFamily": "", "instId": "BTC-USDT", "instType": "SPOT",
            "lever": "10", "listTime": "1606468572000", "lotSz": "0.00000001", "maxIcebergSz": "9999999999.0000000000000000",
            "maxLmtAmt": "1000000", "maxLmtSz": "9999999999", "maxMktAmt": "1000000", "maxMktSz": "",
            "maxStopSz": "", "maxTriggerSz": "9999999999.0000000000000000", "maxTwapSz": "9999999999.0000000000000000",
            "minSz": "0.00001", "optType": "", "quoteCcy": "USDT", "settleCcy": "", "state": "live",
            "stk": "", "tickSz": "0.1", "uly": "", "ruleType": "normal"
        }"#,
        )
        .unwrap();
        let rules = instrument("BTC-USDT", &entry).unwrap();
        assert_eq!(
            (
                rules.tick_size.as_str(),
                rules.lot_size.as_str(),
                rules.min_quantity.as_str(),
                rules.min_notional.as_str()
            ),
            ("0.1", "0.00000001", "0.00001", "0")
        );
        assert_eq!((rules.price_precision, rules.quantity_precision), (1, 8));
        assert_eq!(
            (rules.base_asset.as_str(), rules.quote_asset.as_str()),
            ("BTC", "USDT")
        );

        let row = json!([
            "1597026383085",
            "3.721",
            "3.743",
            "3.677",
            "3.708",
            "8422410",
            "22698348.04828491",
            "12698348.04828491",
            "0"
        ]);
        let bar_ = candle(&row).unwrap();
        assert_eq!(bar_.timestamp_ms, 1597026383085);
        assert!((bar_.high - 3.743).abs() < 1e-12 && (bar_.volume - 8422410.0).abs() < 1e-6);
        assert_eq!(bar("1h"), Some("1H"));
        assert_eq!(bar("1d"), Some("1Dutc"));
        assert_eq!(bar("7m"), None);
    }
}
