//! Kraken spot's face: the REST API (`/0/public/...`, `/0/private/...`) as Kraken documents it,
//! for the subset the `kraken` plugin uses. Every answer is HTTP 200 with Kraken's envelope
//! (`{"error": [...], "result": ...}`). Private requests are checked the way Kraken checks them:
//! `API-Key` names a key (`EAPI:Invalid key`), `API-Sign` is the base64 HMAC-SHA512, keyed with
//! the base64-decoded private key, of the URI path followed by SHA-256 of the nonce and the form
//! body (`EAPI:Invalid signature`), and the body's `nonce` is greater than the last one the key
//! used (`EAPI:Invalid nonce`). Over the request budget, private calls are refused with
//! `EAPI:Rate limit exceeded` (orders and cancels with `EOrder:Rate limit exceeded`), public ones
//! with `EGeneral:Too many requests` (Kraken sends no wait); a client that keeps calling before
//! the budget recovered is locked out (`EGeneral:Temporary lockout`).
//!
//! Names are Kraken's: bitcoin is XBT, the older assets carry X/Z prefixes in balances and pair
//! keys (`XXBT`, `ZUSD`, `XXBTZUSD`), newer ones do not (`SOL`, `SOLUSD`); order and trade ids
//! look like `OQCLML-BW3P3-BUCMWZ`. The engine records an order under tradehost's client order
//! id (`th-` + 32 hex digits), which reaches Kraken as the UUID of those digits (`cl_ord_id`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use rust_decimal::Decimal;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256, Sha512};

use super::{Answer, Call, Exchange, Face, Order, Refusal, Side, State, Status, Trade, now_ms};

/// Kraken's signature of a request to `path` (`/0/private/...`) with `nonce` and form `body`.
pub fn sign(secret_base64: &str, path: &str, nonce: &str, body: &str) -> Option<String> {
    let secret = STANDARD.decode(secret_base64).ok()?;
    let digest = Sha256::new()
        .chain_update(nonce.as_bytes())
        .chain_update(body.as_bytes())
        .finalize();
    let mut mac = Hmac::<Sha512>::new_from_slice(&secret).ok()?;
    mac.update(path.as_bytes());
    mac.update(&digest);
    Some(STANDARD.encode(mac.finalize().into_bytes()))
}

pub struct Kraken;

/// Assets the simulator lists: (tradehost's name, Kraken's key, Kraken's altname).
const ASSETS: [(&str, &str, &str); 4] = [
    ("USD", "ZUSD", "USD"),
    ("BTC", "XXBT", "XBT"),
    ("ETH", "XETH", "ETH"),
    ("SOL", "SOL", "SOL"),
];

fn asset_key(asset: &str) -> String {
    ASSETS
        .iter()
        .find(|(ours, ..)| *ours == asset)
        .map_or(asset.to_string(), |(_, key, _)| key.to_string())
}

fn asset_altname(asset: &str) -> String {
    ASSETS
        .iter()
        .find(|(ours, ..)| *ours == asset)
        .map_or(asset.to_string(), |(.., alt)| alt.to_string())
}

/// The pair's key: the assets' keys when both are of the prefixed kind, else the altname.
fn pair_key(base: &str, quote: &str) -> String {
    let (base_key, quote_key) = (asset_key(base), asset_key(quote));
    if base_key != asset_altname(base) && quote_key != asset_altname(quote) {
        format!("{base_key}{quote_key}")
    } else {
        pair_altname(base, quote)
    }
}

fn pair_altname(base: &str, quote: &str) -> String {
    format!("{}{}", asset_altname(base), asset_altname(quote))
}

/// The listed pair a request names by key or altname.
fn pair_of(state: &State, name: &str) -> Option<(String, String)> {
    state
        .instruments
        .keys()
        .find(|(base, quote)| pair_key(base, quote) == name || pair_altname(base, quote) == name)
        .cloned()
}

/// A Kraken-looking id (`OQCLML-BW3P3-BUCMWZ`), distinct for each `n`.
fn kraken_id(prefix: char, n: u64) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut bits = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut chars = String::from(prefix);
    for _ in 0..16 {
        chars.push(ALPHABET[(bits & 31) as usize] as char);
        bits = bits.rotate_right(5);
    }
    format!("{}-{}-{}", &chars[..6], &chars[6..11], &chars[11..])
}

fn order_txid(order: &Order) -> String {
    kraken_id('O', order.id)
}

fn is_uuid(text: &str) -> bool {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    let dashes_ok = !text.contains('-')
        || text.split('-').map(str::len).collect::<Vec<_>>() == [8, 4, 4, 4, 12];
    hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) && dashes_ok
}

/// Whether Kraken takes `text` as a `cl_ord_id`: a UUID (with or without dashes) or up to 18
/// characters of free text.
fn valid_cl_ord_id(text: &str) -> bool {
    is_uuid(text)
        || (!text.is_empty() && text.len() <= 18 && text.bytes().all(|b| b.is_ascii_graphic()))
}

/// The id the engine records an order under.
fn book_id(cl_ord_id: &str) -> String {
    if is_uuid(cl_ord_id) {
        let hex: String = cl_ord_id.chars().filter(|c| *c != '-').collect();
        format!("th-{}", hex.to_ascii_lowercase())
    } else {
        cl_ord_id.to_string()
    }
}

/// The `cl_ord_id` Kraken shows for an order the engine records under `id`.
fn shown_cl_ord_id(id: &str) -> String {
    match id.strip_prefix("th-") {
        Some(hex) if hex.len() == 32 => format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        ),
        _ => id.to_string(),
    }
}

fn error(message: &str) -> Answer {
    Answer::json(200, json!({"error": [message]}))
}

fn ok(result: Value) -> Answer {
    Answer::json(200, json!({"error": [], "result": result}))
}

/// A decimal as Kraken writes it: at least `places` decimals, never rounded.
fn amount(value: Decimal, places: usize) -> String {
    let value = value.normalize();
    if value.scale() as usize > places {
        value.to_string()
    } else {
        format!("{value:.places$}")
    }
}

/// Milliseconds as Kraken's seconds (a JSON number with a fraction).
fn seconds(ms: i64) -> Value {
    serde_json::Number::from_f64(ms as f64 / 1000.0).map_or(Value::Null, Value::Number)
}

fn places(step: Decimal) -> u32 {
    step.normalize().scale()
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

fn order_json(state: &State, order: &Order, with_trades: bool) -> Value {
    let closed = !order.working();
    let status = match order.status {
        Status::New | Status::PartiallyFilled => "open",
        Status::Filled => "closed",
        Status::Canceled | Status::Rejected => "canceled",
        Status::Expired => "expired",
    };
    let trades: Vec<&Trade> = state
        .trades
        .iter()
        .filter(|t| t.order_id == order.id)
        .collect();
    let fee: Decimal = trades.iter().map(|t| t.fee).sum();
    let average = if order.filled.is_zero() {
        Decimal::ZERO
    } else {
        (order.filled_value / order.filled).round_dp(5)
    };
    let altname = pair_altname(&order.base, &order.quote);
    let kind = if order.limit.is_some() {
        "limit"
    } else {
        "market"
    };
    let described = match order.limit {
        Some(limit) => format!(
            "{} {} {altname} @ limit {}",
            side_name(order.side),
            amount(order.quantity, 8),
            limit
        ),
        None => format!(
            "{} {} {altname} @ market",
            side_name(order.side),
            amount(order.quantity, 8)
        ),
    };
    let mut body = json!({
        "refid": null,
        "userref": 0,
        "cl_ord_id": shown_cl_ord_id(&order.client_order_id),
        "status": status,
        "reason": if order.status == Status::Canceled { json!("User requested") } else { Value::Null },
        "opentm": seconds(order.created_at),
        "starttm": 0,
        "expiretm": 0,
        "descr": {
            "pair": altname,
            "type": side_name(order.side),
            "ordertype": kind,
            "price": amount(order.limit.unwrap_or_default(), 1),
            "price2": "0",
            "leverage": "none",
            "order": described,
            "close": "",
        },
        "vol": amount(order.quantity, 8),
        "vol_exec": amount(order.filled, 8),
        "cost": amount(order.filled_value, 5),
        "fee": amount(fee, 5),
        "price": amount(average, 5),
        "stopprice": "0.00000",
        "limitprice": "0.00000",
        "misc": "",
        "oflags": "fciq",
    });
    if closed {
        body["closetm"] = seconds(order.updated_at);
    }
    if with_trades && !trades.is_empty() {
        body["trades"] = json!(
            trades
                .iter()
                .map(|t| kraken_id('T', t.id))
                .collect::<Vec<_>>()
        );
    }
    body
}

fn trade_json(state: &State, trade: &Trade) -> Value {
    let order = state.orders.iter().find(|o| o.id == trade.order_id);
    json!({
        "ordertxid": kraken_id('O', trade.order_id),
        "postxid": "TKH2SE-M7IF5-CFI7LT",
        "pair": pair_key(&trade.base, &trade.quote),
        "time": seconds(trade.at),
        "type": side_name(trade.side),
        "ordertype": if order.is_some_and(|o| o.limit.is_some()) { "limit" } else { "market" },
        "price": amount(trade.price, 5),
        "cost": amount(trade.quantity * trade.price, 5),
        "fee": amount(trade.fee, 5),
        "vol": amount(trade.quantity, 8),
        "margin": "0.00000",
        "leverage": "0",
        "misc": "",
        "trade_id": trade.id,
        "maker": order.is_some_and(|o| o.limit.is_some()),
    })
}

fn refusal(refused: Refusal) -> Answer {
    match refused {
        Refusal::UnknownInstrument => error("EQuery:Unknown asset pair"),
        Refusal::InsufficientFunds => error("EOrder:Insufficient funds"),
        Refusal::Filter(detail) if detail.starts_with("LOT_SIZE: minimum") => {
            error("EOrder:Order minimum not met")
        }
        Refusal::Filter(detail) if detail.starts_with("LOT_SIZE") => {
            error("EGeneral:Invalid arguments:volume")
        }
        Refusal::Filter(detail) if detail.starts_with("PRICE_FILTER") => {
            error("EOrder:Tick size check failed")
        }
        Refusal::Filter(_) => error("EOrder:Cost minimum not met"),
        Refusal::DuplicateClientOrderId => error("EOrder:Duplicate cl_ord_id"),
        Refusal::UnknownOrder => error("EOrder:Unknown order"),
        Refusal::Rejected(reason) => error(&format!("EOrder:{reason}")),
    }
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

fn flag(params: &[(String, String)], name: &str) -> bool {
    matches!(param(params, name), Some("true" | "1"))
}

fn list(params: &[(String, String)], name: &str) -> Vec<String> {
    param(params, name)
        .map(|all| {
            all.split(',')
                .map(|item| item.trim().to_string())
                .filter(|item| !item.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Checks a private request; the account it acts for.
fn authenticate(
    exchange: &Exchange,
    call: &Call,
    params: &[(String, String)],
) -> Result<String, Answer> {
    let Some(api_key) = call.header("API-Key") else {
        return Err(error("EAPI:Invalid key"));
    };
    let Some(key) = exchange.with_state(|s| s.keys.get(api_key).cloned()) else {
        return Err(error("EAPI:Invalid key"));
    };
    let Some(nonce_text) = param(params, "nonce") else {
        return Err(error("EAPI:Invalid nonce"));
    };
    let Ok(nonce) = nonce_text.parse::<u64>() else {
        return Err(error("EAPI:Invalid nonce"));
    };
    let expected = sign(&key.secret, &call.path, nonce_text, call.body_text());
    if expected.is_none() || call.header("API-Sign") != expected.as_deref() {
        return Err(error("EAPI:Invalid signature"));
    }
    exchange.with_state(|s| {
        let last = s.nonces.entry(api_key.to_string()).or_default();
        if nonce <= *last {
            return Err(error("EAPI:Invalid nonce"));
        }
        *last = nonce;
        Ok(key.account.clone())
    })
}

impl Kraken {
    fn public(&self, exchange: &Exchange, method: &str, params: &[(String, String)]) -> Answer {
        let now = now_ms();
        let state = exchange.state.lock().unwrap();
        match method {
            "Time" => ok(json!({"unixtime": now / 1000, "rfc1123": ""})),
            "Assets" => {
                let wanted = list(params, "asset");
                let mut listed = Map::new();
                for (_, key, altname) in ASSETS {
                    if wanted.is_empty() || wanted.iter().any(|w| w == key || w == altname) {
                        listed.insert(
                            key.to_string(),
                            json!({"aclass": "currency", "altname": altname, "decimals": 10, "display_decimals": 5, "status": "enabled"}),
                        );
                    }
                }
                if listed.len() < wanted.len() {
                    return error("EQuery:Unknown asset");
                }
                ok(Value::Object(listed))
            }
            "AssetPairs" => {
                let wanted = list(params, "pair");
                let fee_percent = (state.fee_rate * Decimal::from(100))
                    .to_string()
                    .parse::<f64>()
                    .unwrap_or_default();
                let mut listed = Map::new();
                for instrument in state.instruments.values() {
                    let (base, quote) = (&instrument.base, &instrument.quote);
                    let (key, altname) = (pair_key(base, quote), pair_altname(base, quote));
                    if !wanted.is_empty() && !wanted.iter().any(|w| *w == key || *w == altname) {
                        continue;
                    }
                    listed.insert(
                        key,
                        json!({
                            "altname": altname,
                            "wsname": format!("{}/{}", asset_altname(base), asset_altname(quote)),
                            "aclass_base": "currency",
                            "base": asset_key(base),
                            "aclass_quote": "currency",
                            "quote": asset_key(quote),
                            "lot": "unit",
                            "cost_decimals": 5,
                            "pair_decimals": places(instrument.tick),
                            "lot_decimals": places(instrument.lot),
                            "lot_multiplier": 1,
                            "leverage_buy": [],
                            "leverage_sell": [],
                            "fees": [[0, fee_percent]],
                            "fees_maker": [[0, fee_percent]],
                            "fee_volume_currency": asset_key(quote),
                            "margin_call": 80,
                            "margin_stop": 40,
                            "ordermin": amount(instrument.min_quantity, 0),
                            "costmin": amount(instrument.min_notional, 0),
                            "tick_size": amount(instrument.tick, 0),
                            "status": "online",
                        }),
                    );
                }
                if listed.len() < wanted.len() {
                    return error("EQuery:Unknown asset pair");
                }
                ok(Value::Object(listed))
            }
            "OHLC" => {
                let Some((base, quote)) = param(params, "pair").and_then(|p| pair_of(&state, p))
                else {
                    return error("EQuery:Unknown asset pair");
                };
                let minutes = match param(params, "interval").unwrap_or("1") {
                    m @ ("1" | "5" | "15" | "30" | "60" | "240" | "1440" | "10080" | "21600") => {
                        m.parse::<i64>().expect("listed")
                    }
                    _ => return error("EGeneral:Invalid arguments"),
                };
                let since = param(params, "since")
                    .and_then(|s| s.parse::<i64>().ok())
                    .unwrap_or(0);
                let interval_ms = minutes * 60_000;
                // Up to 720 entries; the last one is the interval still forming.
                let rows: Vec<Value> = state
                    .candles(&base, &quote, interval_ms, 720, now + interval_ms)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(start, _)| start / 1000 > since)
                    .map(|(start, [o, h, l, c, v])| {
                        json!([
                            start / 1000,
                            amount(o, 1),
                            amount(h, 1),
                            amount(l, 1),
                            amount(c, 1),
                            amount(((o + c) / Decimal::TWO).round_dp(2), 1),
                            amount(v, 8),
                            12
                        ])
                    })
                    .collect();
                let last = rows
                    .iter()
                    .rev()
                    .nth(1)
                    .and_then(|row| row[0].as_i64())
                    .unwrap_or(since);
                let mut result = Map::new();
                result.insert(pair_key(&base, &quote), Value::Array(rows));
                result.insert("last".into(), json!(last));
                ok(Value::Object(result))
            }
            _ => error("EGeneral:Unknown method"),
        }
    }

    fn private(
        &self,
        exchange: &Exchange,
        account: &str,
        method: &str,
        params: &[(String, String)],
    ) -> Answer {
        let now = now_ms();
        let mut state = exchange.state.lock().unwrap();
        match method {
            "Balance" | "BalanceEx" => {
                let balances = state.balances_of(account, now);
                let locked = state.locked_of(account);
                let mut listed = Map::new();
                for (asset, total) in balances {
                    let places = if asset == "USD" { 4 } else { 10 };
                    let held = locked.get(&asset).copied().unwrap_or_default();
                    let row = if method == "Balance" {
                        json!(amount(total, places))
                    } else {
                        json!({"balance": amount(total, places), "hold_trade": amount(held, places)})
                    };
                    listed.insert(asset_key(&asset), row);
                }
                ok(Value::Object(listed))
            }
            "AddOrder" => {
                let Some((base, quote)) = param(params, "pair").and_then(|p| pair_of(&state, p))
                else {
                    return error("EQuery:Unknown asset pair");
                };
                let side = match param(params, "type") {
                    Some("buy") => Side::Buy,
                    Some("sell") => Side::Sell,
                    _ => return error("EGeneral:Invalid arguments:type"),
                };
                let Some(volume) = param(params, "volume").and_then(|v| v.parse::<Decimal>().ok())
                else {
                    return error("EGeneral:Invalid arguments:volume");
                };
                let limit = match param(params, "ordertype") {
                    Some("market") => None,
                    Some("limit") => {
                        match param(params, "price").and_then(|p| p.parse::<Decimal>().ok()) {
                            Some(price) => Some(price),
                            None => return error("EGeneral:Invalid arguments:price"),
                        }
                    }
                    _ => return error("EGeneral:Invalid arguments:ordertype"),
                };
                if param(params, "timeinforce").is_some_and(|tif| tif != "GTC") {
                    return error("EGeneral:Invalid arguments:timeinforce");
                }
                // Fees in the base asset are not modelled: the engine charges the quote asset.
                if param(params, "oflags")
                    .is_some_and(|flags| flags.split(',').any(|f| f == "fcib"))
                {
                    return error("EGeneral:Invalid arguments:oflags");
                }
                let cl_ord_id = param(params, "cl_ord_id");
                if cl_ord_id.is_some_and(|id| !valid_cl_ord_id(id)) {
                    return error("EGeneral:Invalid arguments:cl_ord_id");
                }
                let altname = pair_altname(&base, &quote);
                let described = match limit {
                    Some(price) => format!(
                        "{} {} {altname} @ limit {price}",
                        side_name(side),
                        amount(volume, 8)
                    ),
                    None => format!(
                        "{} {} {altname} @ market",
                        side_name(side),
                        amount(volume, 8)
                    ),
                };
                if flag(params, "validate") {
                    return ok(json!({"descr": {"order": described}}));
                }
                let client_order_id = cl_ord_id.map_or_else(|| format!("web-{now}"), book_id);
                match state.place(
                    account,
                    &client_order_id,
                    &base,
                    &quote,
                    side,
                    volume,
                    limit,
                    now,
                ) {
                    Err(refused) => refusal(refused),
                    Ok(order) => {
                        drop(state);
                        ok(json!({"descr": {"order": described}, "txid": [order_txid(&order)]}))
                            .delayed(exchange.take_stall())
                    }
                }
            }
            "CancelOrder" => {
                let named = param(params, "txid").or_else(|| param(params, "cl_ord_id"));
                let Some(named) = named else {
                    return error("EGeneral:Invalid arguments");
                };
                state.advance(now);
                let found = state
                    .orders
                    .iter()
                    .rev()
                    .find(|o| {
                        o.account == account
                            && (order_txid(o) == named
                                || shown_cl_ord_id(&o.client_order_id) == named)
                    })
                    .map(|o| o.id);
                match found.map(|id| state.cancel(account, None, Some(id), now)) {
                    Some(Ok(_)) => ok(json!({"count": 1, "pending": false})),
                    _ => error("EOrder:Unknown order"),
                }
            }
            "QueryOrders" => {
                let wanted = list(params, "txid");
                if wanted.is_empty() || wanted.len() > 50 {
                    return error("EGeneral:Invalid arguments");
                }
                state.advance(now);
                let mut listed = Map::new();
                for txid in &wanted {
                    let Some(order) = state
                        .orders
                        .iter()
                        .find(|o| o.account == account && order_txid(o) == *txid)
                    else {
                        return error("EOrder:Invalid order");
                    };
                    listed.insert(
                        txid.clone(),
                        order_json(&state, order, flag(params, "trades")),
                    );
                }
                ok(Value::Object(listed))
            }
            "OpenOrders" | "ClosedOrders" => {
                let open = method == "OpenOrders";
                let cl_ord_id = param(params, "cl_ord_id");
                state.advance(now);
                let mut chosen: Vec<&Order> = state
                    .orders
                    .iter()
                    .filter(|o| o.account == account && o.working() == open)
                    .filter(|o| {
                        cl_ord_id.is_none_or(|id| shown_cl_ord_id(&o.client_order_id) == id)
                    })
                    .collect();
                // The most recent first.
                chosen.reverse();
                let count = chosen.len();
                let offset = param(params, "ofs")
                    .and_then(|o| o.parse::<usize>().ok())
                    .unwrap_or(0);
                let listed: Map<String, Value> = chosen
                    .into_iter()
                    .skip(if open { 0 } else { offset })
                    .take(if open { usize::MAX } else { 50 })
                    .map(|o| (order_txid(o), order_json(&state, o, flag(params, "trades"))))
                    .collect();
                if open {
                    ok(json!({"open": listed}))
                } else {
                    ok(json!({"closed": listed, "count": count}))
                }
            }
            "QueryTrades" => {
                let wanted = list(params, "txid");
                if wanted.is_empty() || wanted.len() > 20 {
                    return error("EGeneral:Invalid arguments");
                }
                let trades = state.trades_of(account, now);
                let listed: Map<String, Value> = trades
                    .iter()
                    .filter(|t| wanted.contains(&kraken_id('T', t.id)))
                    .map(|t| (kraken_id('T', t.id), trade_json(&state, t)))
                    .collect();
                ok(Value::Object(listed))
            }
            "TradesHistory" => {
                let number = |name: &str| param(params, name).and_then(|v| v.parse::<i64>().ok());
                let (start, end) = (number("start"), number("end"));
                let offset = number("ofs").unwrap_or(0).max(0) as usize;
                let mut trades: Vec<Trade> = state
                    .trades_of(account, now)
                    .into_iter()
                    // `start` exclusive, `end` inclusive, in seconds.
                    .filter(|t| start.is_none_or(|s| t.at > s * 1000))
                    .filter(|t| end.is_none_or(|e| t.at <= e * 1000))
                    .collect();
                trades.sort_by_key(|t| std::cmp::Reverse((t.at, t.id)));
                let count = trades.len();
                let listed: Map<String, Value> = trades
                    .iter()
                    .skip(offset)
                    .take(50)
                    .map(|t| (kraken_id('T', t.id), trade_json(&state, t)))
                    .collect();
                ok(json!({"trades": listed, "count": count}))
            }
            _ => error("EGeneral:Unknown method"),
        }
    }

    fn route(&self, exchange: &Exchange, call: &Call) -> Answer {
        if let ("GET", Some(method)) = (call.method.as_str(), call.path.strip_prefix("/0/public/"))
        {
            return self.public(exchange, method, &call.params());
        }
        let Some(method) = call.path.strip_prefix("/0/private/") else {
            return Answer::json(404, json!({"error": ["EGeneral:Unknown method"]}));
        };
        if call.method != "POST" {
            return error("EGeneral:Invalid arguments");
        }
        let params = super::decode_form(call.body_text());
        let account = match authenticate(exchange, call, &params) {
            Ok(account) => account,
            Err(answer) => {
                exchange.with_state(|s| s.auth_refusals += 1);
                return answer;
            }
        };
        self.private(exchange, &account, method, &params)
    }
}

impl Face for Kraken {
    fn answer(&self, exchange: &Exchange, call: &Call) -> Answer {
        let private = call.path.starts_with("/0/private/");
        // Private calls count per key; public ones per caller.
        let client = if private {
            call.header("API-Key").unwrap_or("anonymous").to_string()
        } else {
            "public".to_string()
        };
        self.answer_admitted(exchange, call, private, exchange.admit(&client))
    }

    fn trade_id(&self, trade: &Trade) -> String {
        kraken_id('T', trade.id)
    }
}

impl Kraken {
    /// The answer to a request the budget admitted, or Kraken's refusal (it names no wait).
    fn answer_admitted(
        &self,
        exchange: &Exchange,
        call: &Call,
        private: bool,
        admitted: super::Admission,
    ) -> Answer {
        match admitted {
            super::Admission::Admitted(_) => self.route(exchange, call),
            super::Admission::Throttled(_) if !private => error("EGeneral:Too many requests"),
            super::Admission::Throttled(_)
                if call.path.ends_with("/AddOrder") || call.path.ends_with("/CancelOrder") =>
            {
                error("EOrder:Rate limit exceeded")
            }
            super::Admission::Throttled(_) => error("EAPI:Rate limit exceeded"),
            super::Admission::Banned(_) => error("EGeneral:Temporary lockout"),
        }
    }
}

/// A Kraken API key pair of the simulator's funded account (the private key base64, as Kraken
/// shows it).
pub const API_KEY: &str = "uchZar21n2IDDSL06iAyCGe7oVIvu6mLdyDfTU6HPAJrcmFrZW4hIQ==";
const API_SECRET: &str =
    "r7fB1BB47DQ8hbMQGcPyT8D/8p67IRtRGe+blmAddfA2LVBR/DTBhweXDLQ5Q+MLunUV72gK5wreyMhc7i1q3g==";
/// A well-formed private key that is not the key's.
const OTHER_SECRET: &str =
    "D7DdIRtF43PR+dWDBOBsDFL/guujEY1s8XiufpCB3VFImJeMIlwMiqhF47TpVFxokpdrvbOI2vRMu2M7qdNglw==";

/// Kraken spot against USD, fees in the quote asset.
pub fn case() -> super::VenueCase {
    let exchange = Exchange::standard("USD", API_KEY, API_SECRET);
    super::VenueCase {
        broker: "kraken",
        symbols: ["BTC-USD", "ETH-USD"],
        exchange,
        face: std::sync::Arc::new(Kraken),
        account: "main",
        connect: json!({"broker": "kraken", "api_key": API_KEY, "api_secret": API_SECRET}),
        connect_bad: json!({"broker": "kraken", "api_key": API_KEY, "api_secret": OTHER_SECRET}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Kraken's "Spot REST Authentication" guide.
    #[test]
    fn signs_as_kraken_documents() {
        assert_eq!(
            sign(
                "kQH5HW/8p1uGOVjbgWA7FunAmGO8lsSUXNsu3eow76sz84Q18fWxnyRzBHCd3pd5nE9qa99HAZtuZuj6F1huXg==",
                "/0/private/AddOrder",
                "1616492376594",
                "nonce=1616492376594&ordertype=limit&pair=XBTUSD&price=37500&type=buy&volume=1.25"
            )
            .as_deref(),
            Some("4/dpxb3iT4tp/ZCVEwSnEsLxx0bqyhLpdfOpc6fn7OR8+UClSV5n9E6aSS8MPtnRfp32bAb0nmbRn6H8ndwLUQ==")
        );
    }

    fn private_call(path: &str, nonce: u64, params: &str, secret: &str) -> Call {
        let body = format!("nonce={nonce}{params}");
        Call {
            method: "POST".into(),
            path: path.into(),
            query: String::new(),
            headers: vec![
                ("API-Key".into(), API_KEY.into()),
                (
                    "API-Sign".into(),
                    sign(secret, path, &nonce.to_string(), &body).unwrap(),
                ),
            ],
            body: body.into_bytes(),
        }
    }

    fn result(answer: &Answer) -> Value {
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        assert_eq!(body["error"], json!([]), "{}", answer.body);
        body["result"].clone()
    }

    fn refused(answer: &Answer) -> String {
        let body: Value = serde_json::from_str(&answer.body).unwrap();
        body["error"][0].as_str().unwrap_or_default().to_string()
    }

    #[test]
    fn private_requests_are_checked_as_kraken_checks_them() {
        let case = case();
        let balance = |nonce, secret| {
            Kraken.answer(
                &case.exchange,
                &private_call("/0/private/Balance", nonce, "", secret),
            )
        };
        assert_eq!(
            result(&balance(5, API_SECRET)),
            json!({"ZUSD": "100000.0000"})
        );
        assert_eq!(refused(&balance(5, API_SECRET)), "EAPI:Invalid nonce");
        assert_eq!(refused(&balance(4, API_SECRET)), "EAPI:Invalid nonce");
        assert_eq!(refused(&balance(6, OTHER_SECRET)), "EAPI:Invalid signature");
        let mut unknown = private_call("/0/private/Balance", 7, "", API_SECRET);
        unknown.headers[0].1 = "not-a-key".into();
        assert_eq!(
            refused(&Kraken.answer(&case.exchange, &unknown)),
            "EAPI:Invalid key"
        );
        // A refused signature does not use up its nonce.
        assert!(refused(&balance(6, API_SECRET)).is_empty());
        assert_eq!(case.exchange.with_state(|s| s.auth_refusals), 4);
    }

    #[test]
    fn orders_and_trades_answer_in_krakens_shapes() {
        let case = case();
        let cl_ord_id = "01234567-89ab-cdef-0123-456789abcdef";
        let call = |nonce, path: &str, params: &str| {
            Kraken.answer(
                &case.exchange,
                &private_call(path, nonce, params, API_SECRET),
            )
        };
        let placed = result(&call(
            1,
            "/0/private/AddOrder",
            &format!(
                "&pair=XBTUSD&type=buy&ordertype=market&volume=0.01&oflags=fciq&cl_ord_id={cl_ord_id}"
            ),
        ));
        let txid = placed["txid"][0].as_str().unwrap().to_string();
        assert!(txid.starts_with('O') && txid.len() == 19);
        let orders = result(&call(
            2,
            "/0/private/QueryOrders",
            &format!("&trades=true&txid={txid}"),
        ));
        let order = &orders[&txid];
        assert_eq!(
            (order["status"].as_str(), order["cl_ord_id"].as_str()),
            (Some("closed"), Some(cl_ord_id))
        );
        assert_eq!(order["descr"]["pair"], "XBTUSD");
        let trade_id = order["trades"][0].as_str().unwrap().to_string();
        let trades = result(&call(3, "/0/private/TradesHistory", "&start=0"));
        assert_eq!(trades["count"], 1);
        let trade = &trades["trades"][&trade_id];
        assert_eq!(trade["pair"], "XXBTZUSD");
        assert_eq!(trade["ordertxid"], txid.as_str());
        assert_eq!(
            (trade["vol"].as_str(), trade["fee"].as_str()),
            (Some("0.01000000"), Some("0.60000"))
        );
        // The engine records it under tradehost's id.
        let book = case.exchange.book("main", &Kraken);
        assert!(
            book.orders
                .contains_key("th-0123456789abcdef0123456789abcdef")
        );
        let closed = result(&call(
            4,
            "/0/private/ClosedOrders",
            &format!("&trades=true&cl_ord_id={cl_ord_id}"),
        ));
        assert_eq!(closed["count"], 1);
        assert_eq!(
            refused(&call(
                5,
                "/0/private/QueryOrders",
                "&txid=OAAAAA-BBBBB-CCCCCC"
            )),
            "EOrder:Invalid order"
        );
        assert_eq!(
            refused(&call(
                6,
                "/0/private/AddOrder",
                "&pair=XBTUSD&type=buy&ordertype=market&volume=100"
            )),
            "EOrder:Insufficient funds"
        );
    }

    #[test]
    fn names_are_krakens() {
        assert_eq!(pair_key("BTC", "USD"), "XXBTZUSD");
        assert_eq!(pair_altname("BTC", "USD"), "XBTUSD");
        assert_eq!(pair_key("SOL", "USD"), "SOLUSD");
        let (a, b) = (kraken_id('O', 1001), kraken_id('O', 1002));
        assert_ne!(a, b);
        assert_eq!(a.len(), 19);
        assert!(
            a.starts_with('O') && a.chars().nth(6) == Some('-') && a.chars().nth(12) == Some('-')
        );
        let id = "th-0123456789abcdef0123456789abcdef";
        assert_eq!(book_id(&shown_cl_ord_id(id)), id);
        assert!(valid_cl_ord_id(&shown_cl_ord_id(id)) && !valid_cl_ord_id(id));
        assert_eq!(amount("0.001".parse().unwrap(), 5), "0.00100");
        assert_eq!(amount("0.000000123".parse().unwrap(), 5), "0.000000123");
    }
}
