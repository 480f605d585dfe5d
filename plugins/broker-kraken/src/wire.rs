//! Kraken's JSON as the broker world's records: asset and pair names both ways, client order
//! ids, orders, trades, pair rules, OHLC rows.
//!
//! Names: Kraken calls bitcoin XBT and dogecoin XDG; its older assets carry an X (crypto) or Z
//! (fiat) prefix in balances and pair keys (`XXBT`, `ZUSD`, `XXBTZUSD`), newer ones do not
//! (`SOL`, `SOLUSD`). Requests name a pair by its altname (`XBTUSD`); answers name it by its key
//! or altname, and its wsname (`XBT/USD`) says where the base ends.

use exchange_kit::numbers::{self, field, required};
use exchange_kit::symbols;
use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::types::{
    BrokerError, Candle, Fill, Instrument, OrderReport, OrderSide, OrderStatus,
};

/// Assets Kraken names differently from everyone else: (tradehost, Kraken).
const RENAMED: [(&str, &str); 2] = [("BTC", "XBT"), ("DOGE", "XDG")];

/// Kraken's name (altname) of an asset.
pub fn kraken_asset(asset: &str) -> &str {
    RENAMED
        .iter()
        .find(|(ours, _)| *ours == asset)
        .map_or(asset, |(_, theirs)| theirs)
}

/// tradehost's name of a Kraken asset altname.
pub fn asset_name(altname: &str) -> String {
    let upper = altname.trim().to_ascii_uppercase();
    RENAMED
        .iter()
        .find(|(_, theirs)| *theirs == upper)
        .map_or(upper.clone(), |(ours, _)| ours.to_string())
}

/// Kraken's older assets, whose keys carry an X (crypto) or Z (fiat) prefix: (key, altname).
/// Kraken prefixes no new asset, so this list is complete for the assets that have one.
const PREFIXED: [(&str, &str); 17] = [
    ("XXBT", "XBT"),
    ("XETH", "ETH"),
    ("XLTC", "LTC"),
    ("XXRP", "XRP"),
    ("XXLM", "XLM"),
    ("XXMR", "XMR"),
    ("XZEC", "ZEC"),
    ("XETC", "ETC"),
    ("XREP", "REP"),
    ("XMLN", "MLN"),
    ("XXDG", "XDG"),
    ("ZUSD", "USD"),
    ("ZEUR", "EUR"),
    ("ZGBP", "GBP"),
    ("ZCAD", "CAD"),
    ("ZJPY", "JPY"),
    ("ZAUD", "AUD"),
];

/// The altname of an asset key Kraken answers with, when it can be told without asking
/// (`XXBT` → `XBT`; an unprefixed key is its own altname). A four-letter key starting with X or
/// Z that is not a known prefixed one is left to the `Assets` listing.
pub fn known_altname(key: &str) -> Option<&str> {
    if let Some((_, altname)) = PREFIXED.iter().find(|(k, _)| *k == key) {
        return Some(altname);
    }
    let ambiguous = key.len() == 4 && key.starts_with(['X', 'Z']);
    (!ambiguous && !key.is_empty()).then_some(key)
}

/// `BTC-USD` → `XBTUSD` (the pair's altname).
pub fn venue_pair(symbol: &str) -> Result<String, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    Ok(format!("{}{}", kraken_asset(base), kraken_asset(quote)))
}

/// `XBT/USD` (a pair's wsname) → `BTC-USD`.
pub fn symbol_of_wsname(wsname: &str) -> Option<String> {
    let (base, quote) = wsname.split_once('/')?;
    let symbol = symbols::join(&asset_name(base), &asset_name(quote));
    symbols::split(&symbol).is_ok().then_some(symbol)
}

/// A pair as `AssetPairs` lists it: its key (`XXBTZUSD`), altname (`XBTUSD`) and tradehost's
/// symbol.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub key: String,
    pub altname: String,
    pub symbol: String,
}

impl Pair {
    pub fn parse(key: &str, entry: &Value) -> Option<Pair> {
        Some(Pair {
            key: key.to_string(),
            altname: entry["altname"].as_str()?.to_string(),
            symbol: symbol_of_wsname(entry["wsname"].as_str()?)?,
        })
    }

    pub fn names(&self, name: &str) -> bool {
        name == self.key || name == self.altname
    }
}

/// Prefix of tradehost's client order ids: `th-` and 32 hex digits.
const OURS: &str = "th-";
/// Longest free-text `cl_ord_id` Kraken takes.
const FREE_TEXT_MAX: usize = 18;

/// The `cl_ord_id` carrying tradehost's client order id. Kraken takes a UUID or up to 18
/// characters of free text; tradehost's `th-` + 32 hex digits is sent as the UUID of those
/// digits, and read back by [`client_order_id`].
pub fn cl_ord_id(client_order_id: &str) -> Result<String, BrokerError> {
    if let Some(hex) = client_order_id.strip_prefix(OURS)
        && hex.len() == 32
        && hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        let hex = hex.to_ascii_lowercase();
        return Ok(format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        ));
    }
    let free = !client_order_id.is_empty()
        && client_order_id.len() <= FREE_TEXT_MAX
        && client_order_id.bytes().all(|b| b.is_ascii_graphic())
        && !is_uuid_hex(client_order_id);
    if free {
        Ok(client_order_id.to_string())
    } else {
        Err(BrokerError::Invalid(format!(
            "client order id {client_order_id:?} cannot be carried by Kraken's cl_ord_id"
        )))
    }
}

fn is_uuid_hex(text: &str) -> bool {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// tradehost's client order id of a `cl_ord_id` (the inverse of [`cl_ord_id`]).
pub fn client_order_id(cl_ord_id: &str) -> String {
    if is_uuid_hex(cl_ord_id) {
        let hex: String = cl_ord_id
            .chars()
            .filter(|c| *c != '-')
            .collect::<String>()
            .to_ascii_lowercase();
        format!("{OURS}{hex}")
    } else {
        cl_ord_id.to_string()
    }
}

fn unexpected(what: &str, value: &Value) -> BrokerError {
    BrokerError::Unavailable(format!("Kraken answered an unexpected {what}: {value}"))
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

/// Kraken's times (seconds with a fraction, as JSON numbers) in milliseconds.
pub fn time_ms(value: &Value) -> Option<i64> {
    use rust_decimal::prelude::ToPrimitive;
    (field(value)? * Decimal::from(1_000)).trunc().to_i64()
}

/// One trade as `TradesHistory` and `QueryTrades` list it.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    pub trade_id: String,
    pub order_id: String,
    /// The pair's key (`XXBTZUSD`).
    pub pair: String,
    pub side: OrderSide,
    pub quantity: Decimal,
    pub price: Decimal,
    /// In the quote currency (orders are placed with `fciq`).
    pub fee: Decimal,
    pub time_ms: i64,
}

impl Execution {
    pub fn parse(trade_id: &str, value: &Value) -> Result<Execution, BrokerError> {
        Ok(Execution {
            trade_id: trade_id.to_string(),
            order_id: value["ordertxid"]
                .as_str()
                .ok_or_else(|| unexpected("trade", value))?
                .to_string(),
            pair: value["pair"].as_str().unwrap_or_default().to_string(),
            side: side_of(&value["type"])?,
            quantity: required(value, "vol")?,
            price: required(value, "price")?,
            fee: field(&value["fee"]).unwrap_or_default(),
            time_ms: time_ms(&value["time"]).ok_or_else(|| unexpected("trade time", value))?,
        })
    }

    pub fn to_fill(&self, client_order_id: &str, symbol: &str) -> Fill {
        Fill {
            trade_id: self.trade_id.clone(),
            order_id: self.order_id.clone(),
            client_order_id: client_order_id.to_string(),
            symbol: symbol.to_string(),
            side: self.side,
            quantity: numbers::text(self.quantity),
            price: numbers::text(self.price),
            fee: numbers::text(self.fee),
            timestamp_ms: self.time_ms,
        }
    }
}

/// Trades of a `{txid: trade}` object, oldest first.
pub fn executions(result: &Value) -> Result<Vec<Execution>, BrokerError> {
    let mut found = result
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(id, trade)| Execution::parse(id, trade))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?
        .unwrap_or_default();
    found.sort_by(|a, b| (a.time_ms, &a.trade_id).cmp(&(b.time_ms, &b.trade_id)));
    Ok(found)
}

/// An order as Kraken describes it (`QueryOrders`, `OpenOrders`, `ClosedOrders`).
#[derive(Debug, Clone, PartialEq)]
pub struct VenueOrder {
    pub order_id: String,
    /// tradehost's client order id, when the order carries a `cl_ord_id`.
    pub client_order_id: Option<String>,
    /// The pair as the order's description names it (its altname).
    pub pair: String,
    pub side: OrderSide,
    pub status: OrderStatus,
    pub quantity: Decimal,
    pub executed: Decimal,
    pub updated_ms: i64,
    pub reason: Option<String>,
    /// Its trades' ids (asked for with `trades=true`).
    pub trades: Vec<String>,
}

impl VenueOrder {
    pub fn parse(order_id: &str, value: &Value) -> Result<VenueOrder, BrokerError> {
        let quantity = required(value, "vol")?;
        let executed = required(value, "vol_exec")?;
        let status = match value["status"].as_str() {
            Some("pending") => OrderStatus::Open,
            Some("open") if executed > Decimal::ZERO => OrderStatus::PartiallyFilled,
            Some("open") => OrderStatus::Open,
            Some("closed") if executed >= quantity => OrderStatus::Filled,
            // Closed short of its volume (its time in force ended it).
            Some("closed") => OrderStatus::Expired,
            Some("canceled") => OrderStatus::Cancelled,
            Some("expired") => OrderStatus::Expired,
            _ => return Err(unexpected("order status", value)),
        };
        let updated_ms = time_ms(&value["closetm"])
            .filter(|t| *t > 0)
            .or_else(|| time_ms(&value["opentm"]))
            .unwrap_or_default();
        Ok(VenueOrder {
            order_id: order_id.to_string(),
            client_order_id: value["cl_ord_id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map(client_order_id),
            pair: value["descr"]["pair"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            side: side_of(&value["descr"]["type"])?,
            status,
            quantity,
            executed,
            updated_ms,
            reason: value["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
                .map(str::to_string),
            trades: value["trades"]
                .as_array()
                .map(|ids| {
                    ids.iter()
                        .filter_map(|id| id.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// The broker world's report, with `executions` (all of the order's, or none) as fills.
    pub fn report(
        &self,
        symbol: &str,
        client_order_id: &str,
        executions: &[Execution],
        reason: Option<String>,
    ) -> OrderReport {
        OrderReport {
            order_id: self.order_id.clone(),
            client_order_id: client_order_id.to_string(),
            symbol: symbol.to_string(),
            side: self.side,
            status: self.status,
            quantity: numbers::text(self.quantity),
            // Fills not listed (yet) still count, so the host waits for them.
            filled_quantity: numbers::text(self.executed),
            fills: executions
                .iter()
                .map(|e| e.to_fill(client_order_id, symbol))
                .collect(),
            reason: reason.or_else(|| {
                matches!(
                    self.status,
                    OrderStatus::Cancelled | OrderStatus::Expired | OrderStatus::Rejected
                )
                .then(|| self.reason.clone())
                .flatten()
            }),
            updated_at_ms: self.updated_ms,
        }
    }
}

/// The orders of a `{txid: order}` object.
pub fn orders(result: &Value) -> Result<Vec<VenueOrder>, BrokerError> {
    result
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(id, order)| VenueOrder::parse(id, order))
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map(Option::unwrap_or_default)
}

/// 10^-places.
fn step(places: u64) -> Decimal {
    Decimal::new(1, places.min(28) as u32)
}

/// The instrument rules of an `AssetPairs` entry.
pub fn instrument(symbol: &str, entry: &Value) -> Result<Instrument, BrokerError> {
    let (base, quote) = symbols::split(symbol)?;
    let price_places = entry["pair_decimals"]
        .as_u64()
        .ok_or_else(|| unexpected("pair", entry))?;
    let quantity_places = entry["lot_decimals"]
        .as_u64()
        .ok_or_else(|| unexpected("pair", entry))?;
    let tick = field(&entry["tick_size"]).unwrap_or_else(|| step(price_places));
    Ok(Instrument {
        symbol: symbol.to_string(),
        base_asset: base.to_string(),
        quote_asset: quote.to_string(),
        tick_size: numbers::text(tick),
        lot_size: numbers::text(step(quantity_places)),
        min_quantity: numbers::text(field(&entry["ordermin"]).unwrap_or_default()),
        min_notional: numbers::text(field(&entry["costmin"]).unwrap_or_default()),
        price_precision: price_places.min(28) as u8,
        quantity_precision: quantity_places.min(28) as u8,
    })
}

/// An `OHLC` row: `[time, open, high, low, close, vwap, volume, count]`.
pub fn candle(row: &Value) -> Result<Candle, BrokerError> {
    let number = |index: usize| {
        field(&row[index])
            .and_then(|d| d.to_string().parse::<f64>().ok())
            .ok_or_else(|| unexpected("OHLC row", row))
    };
    Ok(Candle {
        timestamp_ms: row[0]
            .as_i64()
            .and_then(|s| s.checked_mul(1_000))
            .ok_or_else(|| unexpected("OHLC row", row))?,
        open: number(1)?,
        high: number(2)?,
        low: number(3)?,
        close: number(4)?,
        volume: number(6)?,
    })
}

/// Kraken's OHLC interval (minutes) of a candle interval, if it has one.
pub fn interval_minutes(interval: &str) -> Option<u32> {
    Some(match interval {
        "1m" => 1,
        "5m" => 5,
        "15m" => 15,
        "30m" => 30,
        "1h" => 60,
        "4h" => 240,
        "1d" => 1_440,
        "1w" => 10_080,
        "15d" => 21_600,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn symbols_and_assets_map_both_ways() {
        assert_eq!(venue_pair("BTC-USD").unwrap(), "XBTUSD");
        assert_eq!(venue_pair("ETH-USD").unwrap(), "ETHUSD");
        assert_eq!(venue_pair("DOGE-EUR").unwrap(), "XDGEUR");
        assert_eq!(venue_pair("SOL-USDT").unwrap(), "SOLUSDT");
        assert!(venue_pair("XBTUSD").is_err());
        assert_eq!(symbol_of_wsname("XBT/USD").as_deref(), Some("BTC-USD"));
        assert_eq!(symbol_of_wsname("XDG/EUR").as_deref(), Some("DOGE-EUR"));
        assert_eq!(symbol_of_wsname("ETH/USDT").as_deref(), Some("ETH-USDT"));
        assert_eq!(symbol_of_wsname("XBTUSD"), None);
        assert_eq!(asset_name("XBT"), "BTC");
        assert_eq!(asset_name("USD"), "USD");
        assert_eq!(kraken_asset("BTC"), "XBT");
        assert_eq!(kraken_asset("SOL"), "SOL");
        assert_eq!(known_altname("XXBT"), Some("XBT"));
        assert_eq!(known_altname("ZUSD"), Some("USD"));
        assert_eq!(known_altname("USDT"), Some("USDT"));
        assert_eq!(known_altname("XTZ"), Some("XTZ"));
        assert_eq!(known_altname("ZFOO"), None);
    }

    #[test]
    fn client_order_ids_travel_as_uuids_and_come_back() {
        let ours = "th-0123456789abcdef0123456789abcdef";
        let sent = cl_ord_id(ours).unwrap();
        assert_eq!(sent, "01234567-89ab-cdef-0123-456789abcdef");
        assert_eq!(client_order_id(&sent), ours);
        // Also when Kraken writes it back without dashes or in capitals.
        assert_eq!(client_order_id("0123456789ABCDEF0123456789ABCDEF"), ours);
        // Short ids go as free text; longer ones cannot be carried.
        assert_eq!(cl_ord_id("manual-1").unwrap(), "manual-1");
        assert_eq!(client_order_id("manual-1"), "manual-1");
        assert!(cl_ord_id("a-client-order-id-that-is-long").is_err());
    }

    /// The documented answer of `QueryOrders` (a market buy, closed, with its trades).
    #[test]
    fn a_documented_order_parses_and_reports() {
        let result = json!({
            "OBCMZD-JIEE7-77TH3F": {
                "refid": null, "userref": 0, "status": "closed", "reason": null,
                "opentm": 1688665496.7808, "closetm": 1688665499.1922, "starttm": 0, "expiretm": 0,
                "descr": {"pair": "XBTUSD", "type": "buy", "ordertype": "stop-loss-limit", "price": "27500.0", "price2": "0", "leverage": "none", "order": "buy 1.25000000 XBTUSD @ limit 27500.0", "close": ""},
                "vol": "1.25000000", "vol_exec": "1.25000000", "cost": "27526.2", "fee": "26.2", "price": "27500.0",
                "stopprice": "0.00000", "limitprice": "0.00000", "misc": "", "oflags": "fciq",
                "trades": ["TZX2WP-XSEOP-FP7WYR"]
            }
        });
        let orders = orders(&result).unwrap();
        let order = &orders[0];
        assert_eq!(order.status, OrderStatus::Filled);
        assert_eq!(order.updated_ms, 1688665499192);
        assert_eq!(order.trades, vec!["TZX2WP-XSEOP-FP7WYR".to_string()]);
        assert_eq!(order.pair, "XBTUSD");
        assert_eq!(order.client_order_id, None);
        let open = VenueOrder::parse(
            "OQCLML-BW3P3-BUCMWZ",
            &json!({
                "refid": null, "userref": 0, "cl_ord_id": "01234567-89ab-cdef-0123-456789abcdef",
                "status": "open", "opentm": 1688666559.8974, "starttm": 0, "expiretm": 0,
                "descr": {"pair": "XBTUSD", "type": "sell", "ordertype": "limit", "price": "30010.0", "price2": "0", "leverage": "none", "order": "sell 1.25000000 XBTUSD @ limit 30010.0", "close": ""},
                "vol": "1.25000000", "vol_exec": "0.37500000", "cost": "11253.7", "fee": "0.00000", "price": "30010.0",
                "stopprice": "0.00000", "limitprice": "0.00000", "misc": "", "oflags": "fciq"
            }),
        )
        .unwrap();
        assert_eq!(open.status, OrderStatus::PartiallyFilled);
        assert_eq!(open.side, OrderSide::Sell);
        assert_eq!(
            open.client_order_id.as_deref(),
            Some("th-0123456789abcdef0123456789abcdef")
        );
        let report = open.report("BTC-USD", "th-0123456789abcdef0123456789abcdef", &[], None);
        assert_eq!(
            (report.quantity.as_str(), report.filled_quantity.as_str()),
            ("1.25", "0.375")
        );
        assert_eq!(report.updated_at_ms, 1688666559897);
        let cancelled = VenueOrder::parse(
            "O1",
            &json!({"status": "canceled", "reason": "User requested", "opentm": 1.0, "closetm": 2.5,
                    "descr": {"pair": "ETHUSD", "type": "buy"}, "vol": "1", "vol_exec": "0"}),
        )
        .unwrap();
        let report = cancelled.report("ETH-USD", "", &[], None);
        assert_eq!(report.status, OrderStatus::Cancelled);
        assert_eq!(report.reason.as_deref(), Some("User requested"));
        assert_eq!(report.updated_at_ms, 2500);
    }

    /// The documented answer of `TradesHistory` (its `trades` object).
    #[test]
    fn documented_trades_parse_oldest_first() {
        let trades = json!({
            "THVRQM-33VKH-UCI7BS": {
                "ordertxid": "OQCLML-BW3P3-BUCMWZ", "postxid": "TKH2SE-M7IF5-CFI7LT", "pair": "XXBTZUSD",
                "time": 1688667796.8802, "type": "buy", "ordertype": "limit", "price": "30010.00000",
                "cost": "600.20000", "fee": "0.00000", "vol": "0.02000000", "margin": "0.00000",
                "leverage": "0", "misc": "", "trade_id": 93748276, "maker": true
            },
            "TCWJEG-FL4SZ-3FKGH6": {
                "ordertxid": "OQCLML-BW3P3-BUCMWZ", "postxid": "TKH2SE-M7IF5-CFI7LT", "pair": "XXBTZUSD",
                "time": 1688667769.6396, "type": "buy", "ordertype": "limit", "price": "30010.00000",
                "cost": "300.10000", "fee": "0.78026", "vol": "0.01000000", "margin": "0.00000",
                "leverage": "0", "misc": "", "trade_id": 74625834, "maker": false
            }
        });
        let found = executions(&trades).unwrap();
        assert_eq!(found[0].trade_id, "TCWJEG-FL4SZ-3FKGH6");
        assert_eq!(found[0].time_ms, 1688667769639);
        assert_eq!(found[0].pair, "XXBTZUSD");
        let fill = found[0].to_fill("th-x", "BTC-USD");
        assert_eq!(
            (
                fill.quantity.as_str(),
                fill.price.as_str(),
                fill.fee.as_str()
            ),
            ("0.01", "30010", "0.78026")
        );
        assert_eq!(fill.order_id, "OQCLML-BW3P3-BUCMWZ");
        assert_eq!(fill.side, OrderSide::Buy);
    }

    /// A documented `AssetPairs` entry and `OHLC` row.
    #[test]
    fn pairs_become_instrument_rules_and_ohlc_rows_candles() {
        let entry = json!({
            "altname": "XBTUSD", "wsname": "XBT/USD", "aclass_base": "currency", "base": "XXBT",
            "aclass_quote": "currency", "quote": "ZUSD", "lot": "unit", "cost_decimals": 5,
            "pair_decimals": 1, "lot_decimals": 8, "lot_multiplier": 1,
            "leverage_buy": [2, 3, 4, 5], "leverage_sell": [2, 3, 4, 5],
            "fees": [[0, 0.26], [50000, 0.24]], "fees_maker": [[0, 0.16], [50000, 0.14]],
            "fee_volume_currency": "ZUSD", "margin_call": 80, "margin_stop": 40,
            "ordermin": "0.0001", "costmin": "0.5", "tick_size": "0.1", "status": "online",
            "long_position_limit": 270, "short_position_limit": 180
        });
        let pair = Pair::parse("XXBTZUSD", &entry).unwrap();
        assert_eq!(pair.symbol, "BTC-USD");
        assert!(pair.names("XXBTZUSD") && pair.names("XBTUSD") && !pair.names("XBT/USD"));
        let rules = instrument("BTC-USD", &entry).unwrap();
        assert_eq!(
            (
                rules.tick_size.as_str(),
                rules.lot_size.as_str(),
                rules.min_quantity.as_str(),
                rules.min_notional.as_str()
            ),
            ("0.1", "0.00000001", "0.0001", "0.5")
        );
        assert_eq!((rules.price_precision, rules.quantity_precision), (1, 8));
        assert_eq!(
            (rules.base_asset.as_str(), rules.quote_asset.as_str()),
            ("BTC", "USD")
        );
        let bar = candle(&json!([
            1688671200,
            "30306.1",
            "30306.2",
            "30305.7",
            "30305.7",
            "30306.1",
            "3.39243896",
            23
        ]))
        .unwrap();
        assert_eq!(bar.timestamp_ms, 1688671200000);
        assert!((bar.high - 30306.2).abs() < 1e-9 && (bar.volume - 3.39243896).abs() < 1e-9);
        assert_eq!(interval_minutes("1h"), Some(60));
        assert_eq!(interval_minutes("3m"), None);
    }
}
