//! OKX's face: the v5 REST API (`/api/v5/...`) as OKX documents it, for the subset the `okx`
//! plugin uses, answering `{"code": "0", "msg": "", "data": [...]}` or OKX's error codes.
//! Private endpoints are checked the way OKX checks them: the `OK-ACCESS-*` headers are present
//! (50103, 50104, 50106, 50107), the timestamp is ISO 8601 with milliseconds (50112) and within
//! 30 seconds of the server's clock (50102), the key exists (50111) in this environment (50101:
//! these are live keys, so `x-simulated-trading` is refused), the passphrase is the key's (50105),
//! and the signature is the Base64 HMAC-SHA256, under the key's secret, of timestamp + method +
//! path with its query string + body (50113), all with HTTP 401. Requests are counted per key
//! (public ones per caller); over the budget the answer is HTTP 429 with code 50011 and, as at
//! OKX, no hint of how long to wait.
//!
//! Client order ids: the engine records orders by tradehost's client order id so the books
//! compare directly; a `clOrdId` of 32 lowercase hex digits is tradehost's `th-` id without its
//! prefix, so it is recorded with the prefix and answered without it.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use sha2::Sha256;

use super::{Answer, Call, Exchange, Face, Order, Refusal, Side, State, Status, Trade, now_ms};

/// How far a request's timestamp may be from the server's clock.
const TIMESTAMP_WINDOW_MS: i64 = 30_000;
/// `GET /api/v5/trade/fills` lists the last 3 days; `fills-history` the last 3 months.
const RECENT_FILLS_MS: i64 = 3 * 86_400_000;
const HISTORY_FILLS_MS: i64 = 90 * 86_400_000;
/// Bill ids are numbers of their own, not the trade ids.
const FIRST_BILL: u64 = 600_000_000;

/// OKX's signature of a request (Base64 HMAC-SHA256 of the prehash string under `secret`).
pub fn sign(secret: &str, prehash: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(prehash.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

pub struct Okx;

fn text(value: Decimal) -> String {
    value.normalize().to_string()
}

fn ok(data: Value) -> Answer {
    Answer::json(200, json!({"code": "0", "msg": "", "data": data}))
}

fn error(status: u16, code: &str, msg: &str) -> Answer {
    Answer::json(status, json!({"code": code, "msg": msg, "data": []}))
}

fn empty(name: &str) -> Answer {
    error(400, "50014", &format!("Parameter {name} can not be empty."))
}

fn wrong(name: &str) -> Answer {
    error(400, "51000", &format!("Parameter {name} error"))
}

fn unknown_instrument() -> Answer {
    error(
        200,
        "51001",
        "Instrument ID, Instrument ID code, or Spread ID doesn't exist.",
    )
}

/// An order's own failure: the request succeeded, the order did not.
fn order_failed(cl_ord_id: &str, code: &str, msg: &str, now: i64) -> Answer {
    Answer::json(
        200,
        json!({
            "code": "1", "msg": "All operations failed",
            "data": [{"clOrdId": cl_ord_id, "ordId": "", "tag": "", "ts": now.to_string(), "sCode": code, "sMsg": msg}],
            "inTime": (now * 1000).to_string(), "outTime": (now * 1000 + 900).to_string(),
        }),
    )
}

fn lower_hex_32(text: &str) -> bool {
    text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The engine's record of a `clOrdId`.
fn recorded_id(cl_ord_id: &str) -> String {
    if lower_hex_32(cl_ord_id) {
        format!("th-{cl_ord_id}")
    } else {
        cl_ord_id.to_string()
    }
}

/// The `clOrdId` of the engine's record.
fn venue_id(recorded: &str) -> String {
    match recorded.strip_prefix("th-") {
        Some(digits) if lower_hex_32(digits) => digits.to_string(),
        _ => recorded.to_string(),
    }
}

/// `BTC-USDT` → (`BTC`, `USDT`), among the listed instruments.
fn pair_of(state: &State, inst_id: &str) -> Option<(String, String)> {
    state
        .instruments
        .keys()
        .find(|(base, quote)| format!("{base}-{quote}") == inst_id)
        .cloned()
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

fn state_name(status: Status) -> &'static str {
    match status {
        Status::New => "live",
        Status::PartiallyFilled => "partially_filled",
        Status::Filled => "filled",
        Status::Canceled | Status::Rejected | Status::Expired => "canceled",
    }
}

fn bill_id(trade: &Trade) -> u64 {
    FIRST_BILL + trade.id
}

fn order_json(state: &State, order: &Order) -> Value {
    let trades: Vec<&Trade> = state
        .trades
        .iter()
        .filter(|t| t.order_id == order.id)
        .collect();
    let last = trades.last();
    let fee: Decimal = trades.iter().map(|t| t.fee).sum();
    let fee_ccy = last.map(|t| t.fee_asset.clone()).unwrap_or_else(|| {
        if order.side == Side::Buy && state.fee_in_received {
            order.base.clone()
        } else {
            order.quote.clone()
        }
    });
    let average = if order.filled.is_zero() {
        String::new()
    } else {
        text((order.filled_value / order.filled).round_dp(8))
    };
    let mut row = json!({
        "instType": "SPOT", "instId": format!("{}-{}", order.base, order.quote), "ccy": "",
        "ordId": order.id.to_string(), "clOrdId": venue_id(&order.client_order_id), "tag": "",
        "px": order.limit.map(text).unwrap_or_default(), "pxUsd": "", "pxVol": "", "pxType": "",
        "sz": text(order.quantity), "pnl": "0",
        "ordType": if order.limit.is_some() { "limit" } else { "market" },
        "side": side_name(order.side), "posSide": "net", "tdMode": "cash",
        "accFillSz": text(order.filled),
        "fillPx": last.map(|t| text(t.price)).unwrap_or_default(),
        "tradeId": last.map(|t| t.id.to_string()).unwrap_or_default(),
        "fillSz": last.map(|t| text(t.quantity)).unwrap_or_default(),
        "fillTime": last.map(|t| t.at.to_string()).unwrap_or_default(),
        "avgPx": average, "state": state_name(order.status), "lever": "",
        "tgtCcy": if order.limit.is_some() { "" } else { "base_ccy" },
        "feeCcy": fee_ccy, "fee": text(-fee), "rebateCcy": order.quote, "rebate": "0",
        "uTime": order.updated_at.to_string(), "cTime": order.created_at.to_string(),
    });
    let rest = json!({
        "source": "", "category": "normal", "reduceOnly": "false", "isTpLimit": "false",
        "cancelSource": "", "cancelSourceReason": "", "quickMgnType": "", "stpId": "", "stpMode": "",
        "algoClOrdId": "", "algoId": "", "attachAlgoClOrdId": "", "attachAlgoOrds": [],
        "linkedAlgoOrd": {"algoId": ""}, "tpTriggerPx": "", "tpTriggerPxType": "", "tpOrdPx": "",
        "slTriggerPx": "", "slTriggerPxType": "", "slOrdPx": "",
    });
    if let (Some(row), Value::Object(rest)) = (row.as_object_mut(), rest) {
        row.extend(rest);
    }
    row
}

fn fill_json(state: &State, trade: &Trade) -> Value {
    json!({
        "instType": "SPOT", "instId": format!("{}-{}", trade.base, trade.quote),
        "tradeId": trade.id.to_string(), "ordId": trade.order_id.to_string(),
        "clOrdId": venue_id(&trade.client_order_id), "billId": bill_id(trade).to_string(),
        "subType": "1", "tag": "", "side": side_name(trade.side), "posSide": "net",
        "fillPx": text(trade.price), "fillSz": text(trade.quantity), "fillIdxPx": "",
        "fillPnl": "0", "fillPxVol": "", "fillPxUsd": "", "fillMarkVol": "", "fillFwdPx": "",
        "fillMarkPx": "", "execType": "T", "feeCcy": trade.fee_asset, "fee": text(-trade.fee),
        "feeRate": text(-state.fee_rate), "ts": trade.at.to_string(),
        "fillTime": trade.at.to_string(),
    })
}

fn refusal(
    refused: Refusal,
    cl_ord_id: &str,
    quote: &str,
    side: Side,
    base: &str,
    now: i64,
) -> Answer {
    let (code, msg) = match refused {
        Refusal::UnknownInstrument => return unknown_instrument(),
        Refusal::InsufficientFunds => (
            "51008".to_string(),
            format!(
                "Order failed. Insufficient {} balance in account.",
                if side == Side::Buy { quote } else { base }
            ),
        ),
        Refusal::Filter(detail) if detail.starts_with("LOT_SIZE: step") => (
            "51121".into(),
            "Order quantity must be a multiple of the lot size.".into(),
        ),
        Refusal::Filter(detail) if detail.starts_with("PRICE_FILTER") => {
            ("51000".into(), "Parameter px error".into())
        }
        Refusal::Filter(_) => (
            "51020".into(),
            "Your order should meet or exceed the minimum order amount.".into(),
        ),
        Refusal::DuplicateClientOrderId => ("51016".into(), "Duplicated clOrdId".into()),
        Refusal::UnknownOrder => ("51603".into(), "Order does not exist".into()),
        Refusal::Rejected(reason) => ("51009".into(), reason),
    };
    order_failed(cl_ord_id, &code, &msg, now)
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .filter(|value| !value.is_empty())
}

fn body_field<'a>(body: &'a Value, name: &str) -> Option<&'a str> {
    body[name].as_str().filter(|value| !value.is_empty())
}

fn unauthorized(code: &str, msg: &str) -> Answer {
    error(401, code, msg)
}

/// Checks a private request; the account it acts for.
fn authenticate(exchange: &Exchange, call: &Call) -> Result<String, Answer> {
    let header = |name: &str| call.header(name).filter(|v| !v.is_empty());
    let Some(api_key) = header("OK-ACCESS-KEY") else {
        return Err(unauthorized(
            "50103",
            "Request header \"OK-ACCESS-KEY\" cannot be empty.",
        ));
    };
    let Some(passphrase) = header("OK-ACCESS-PASSPHRASE") else {
        return Err(unauthorized(
            "50104",
            "Request header \"OK-ACCESS-PASSPHRASE\" cannot be empty.",
        ));
    };
    let Some(signature) = header("OK-ACCESS-SIGN") else {
        return Err(unauthorized(
            "50106",
            "Request header \"OK-ACCESS-SIGN\" cannot be empty.",
        ));
    };
    let Some(timestamp) = header("OK-ACCESS-TIMESTAMP") else {
        return Err(unauthorized(
            "50107",
            "Request header \"OK-ACCESS-TIMESTAMP\" cannot be empty.",
        ));
    };
    let at = chrono::NaiveDateTime::parse_from_str(timestamp, "%Y-%m-%dT%H:%M:%S%.3fZ")
        .ok()
        .filter(|_| timestamp.len() == 24)
        .map(|at| at.and_utc().timestamp_millis());
    let Some(at) = at else {
        return Err(unauthorized("50112", "Invalid OK-ACCESS-TIMESTAMP"));
    };
    if (now_ms() - at).abs() > TIMESTAMP_WINDOW_MS {
        return Err(unauthorized("50102", "Timestamp request expired"));
    }
    let Some(key) = exchange.with_state(|s| s.keys.get(api_key).cloned()) else {
        return Err(unauthorized("50111", "Invalid OK-ACCESS-KEY"));
    };
    if call.header("x-simulated-trading") == Some("1") {
        return Err(unauthorized(
            "50101",
            "APIKey does not match current environment.",
        ));
    }
    if key.passphrase.as_deref() != Some(passphrase) {
        return Err(unauthorized(
            "50105",
            "Request header \"OK-ACCESS-PASSPHRASE\" incorrect.",
        ));
    }
    let path = if call.query.is_empty() {
        call.path.clone()
    } else {
        format!("{}?{}", call.path, call.query)
    };
    let prehash = format!("{timestamp}{}{path}{}", call.method, call.body_text());
    if sign(&key.secret, &prehash) != signature {
        return Err(unauthorized("50113", "Invalid Sign"));
    }
    Ok(key.account)
}

/// An order placement's parameters, as the body names them.
struct Placement {
    inst_id: String,
    side: Side,
    size: Decimal,
    limit: Option<Decimal>,
    /// A market buy's size in the quote asset (`tgtCcy` other than `base_ccy`).
    quote_sized: bool,
    cl_ord_id: String,
}

fn placement(body: &Value) -> Result<Placement, Answer> {
    let Some(inst_id) = body_field(body, "instId") else {
        return Err(empty("instId"));
    };
    match body_field(body, "tdMode") {
        None => return Err(empty("tdMode")),
        Some("cash") => {}
        Some(_) => return Err(wrong("tdMode")),
    }
    let side = match body_field(body, "side") {
        None => return Err(empty("side")),
        Some("buy") => Side::Buy,
        Some("sell") => Side::Sell,
        Some(_) => return Err(wrong("side")),
    };
    let Some(size) = body_field(body, "sz") else {
        return Err(empty("sz"));
    };
    let Some(size) = size.parse::<Decimal>().ok().filter(|s| *s > Decimal::ZERO) else {
        return Err(wrong("sz"));
    };
    let limit = match body_field(body, "ordType") {
        None => return Err(empty("ordType")),
        Some("market") => None,
        Some("limit") => match body_field(body, "px").map(str::parse::<Decimal>) {
            None => return Err(empty("px")),
            Some(Ok(price)) if price > Decimal::ZERO => Some(price),
            Some(_) => return Err(wrong("px")),
        },
        Some(_) => return Err(wrong("ordType")),
    };
    let cl_ord_id = body_field(body, "clOrdId").unwrap_or_default().to_string();
    if cl_ord_id.len() > 32 || !cl_ord_id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(wrong("clOrdId"));
    }
    let quote_sized = match body_field(body, "tgtCcy") {
        None => limit.is_none() && side == Side::Buy,
        Some("base_ccy") => false,
        Some("quote_ccy") => limit.is_none(),
        Some(_) => return Err(wrong("tgtCcy")),
    };
    Ok(Placement {
        inst_id: inst_id.to_string(),
        side,
        size,
        limit,
        quote_sized,
        cl_ord_id,
    })
}

/// A cancel's or query's order: its instrument and its id (`ordId` first, as OKX reads them).
fn named_order(
    instrument: Option<&str>,
    ord_id: Option<&str>,
    cl_ord_id: Option<&str>,
) -> Result<(String, Option<u64>, Option<String>), Answer> {
    let Some(inst_id) = instrument else {
        return Err(empty("instId"));
    };
    match (ord_id, cl_ord_id) {
        (Some(id), _) => match id.parse::<u64>() {
            Ok(id) => Ok((inst_id.to_string(), Some(id), None)),
            Err(_) => Err(wrong("ordId")),
        },
        (None, Some(id)) => Ok((inst_id.to_string(), None, Some(recorded_id(id)))),
        (None, None) => Err(error(
            400,
            "50015",
            "Either parameter ordId or clOrdId is required.",
        )),
    }
}

/// A candle `bar` in milliseconds (the UTC variants too).
fn bar_ms(bar: &str) -> Option<i64> {
    Some(match bar.trim_end_matches("utc") {
        "1m" => 60_000,
        "3m" => 180_000,
        "5m" => 300_000,
        "15m" => 900_000,
        "30m" => 1_800_000,
        "1H" => 3_600_000,
        "2H" => 7_200_000,
        "4H" => 14_400_000,
        "6H" => 21_600_000,
        "12H" => 43_200_000,
        "1D" => 86_400_000,
        "3D" => 259_200_000,
        "1W" => 604_800_000,
        _ => return None,
    })
}

/// The spot instruments listed (`instType`, optionally one `instId`).
fn instruments(exchange: &Exchange, params: &[(String, String)]) -> Answer {
    match param(params, "instType") {
        None => return empty("instType"),
        Some("SPOT") => {}
        Some(_) => return wrong("instType"),
    }
    let state = exchange.state.lock().unwrap();
    let wanted = param(params, "instId");
    let listed: Vec<Value> = state
        .instruments
        .values()
        .filter(|i| wanted.is_none_or(|w| w == format!("{}-{}", i.base, i.quote)))
        .map(|i| {
            json!({
                "alias": "", "baseCcy": i.base, "category": "1", "ctMult": "", "ctType": "",
                "ctVal": "", "ctValCcy": "", "expTime": "", "instFamily": "",
                "instId": format!("{}-{}", i.base, i.quote), "instType": "SPOT", "lever": "",
                "listTime": "1606468572000", "lotSz": text(i.lot), "maxIcebergSz": "9999999999",
                "maxLmtAmt": "1000000", "maxLmtSz": "9999999999", "maxMktAmt": "1000000",
                "maxMktSz": "1000000", "maxStopSz": "1000000", "maxTriggerSz": "9999999999",
                "maxTwapSz": "9999999999", "minSz": text(i.min_quantity), "optType": "",
                "quoteCcy": i.quote, "ruleType": "normal", "settleCcy": "", "state": "live",
                "stk": "", "tickSz": text(i.tick), "uly": "",
            })
        })
        .collect();
    if wanted.is_some() && listed.is_empty() {
        return unknown_instrument();
    }
    ok(Value::Array(listed))
}

impl Okx {
    fn route(&self, exchange: &Exchange, call: &Call) -> Answer {
        let params = call.params();
        let now = now_ms();
        let signed = || {
            authenticate(exchange, call).inspect_err(|_| {
                exchange.with_state(|s| s.auth_refusals += 1);
            })
        };
        let body: Value = serde_json::from_str(call.body_text()).unwrap_or(Value::Null);
        match (call.method.as_str(), call.path.as_str()) {
            ("GET", "/api/v5/public/time") => ok(json!([{"ts": now.to_string()}])),
            ("GET", "/api/v5/public/instruments") => instruments(exchange, &params),
            // The instruments the account may trade: all of them here.
            ("GET", "/api/v5/account/instruments") => match signed() {
                Ok(_) => instruments(exchange, &params),
                Err(answer) => answer,
            },
            ("GET", "/api/v5/market/candles" | "/api/v5/market/history-candles") => {
                let Some(inst_id) = param(&params, "instId") else {
                    return empty("instId");
                };
                let Some(interval_ms) = bar_ms(param(&params, "bar").unwrap_or("1m")) else {
                    return wrong("bar");
                };
                let most = if call.path.ends_with("history-candles") {
                    100
                } else {
                    300
                };
                let limit = match param(&params, "limit").map(str::parse::<usize>) {
                    None => 100,
                    Some(Ok(limit)) => limit.clamp(1, most),
                    Some(Err(_)) => return wrong("limit"),
                };
                let number = |name: &str| param(&params, name).and_then(|v| v.parse::<i64>().ok());
                let state = exchange.state.lock().unwrap();
                let Some((base, quote)) = pair_of(&state, inst_id) else {
                    return unknown_instrument();
                };
                // `after`: candles that opened before it.
                let end = number("after").unwrap_or(now + interval_ms);
                let before = number("before");
                let mut candles = state
                    .candles(&base, &quote, interval_ms, limit, end)
                    .unwrap_or_default();
                candles.retain(|(open, _)| before.is_none_or(|b| *open > b));
                let rows: Vec<Value> = candles
                    .into_iter()
                    .rev()
                    .map(|(open, [o, h, l, c, v])| {
                        json!([
                            open.to_string(),
                            text(o),
                            text(h),
                            text(l),
                            text(c),
                            text(v),
                            text(v),
                            text(v * c),
                            "1"
                        ])
                    })
                    .collect();
                ok(Value::Array(rows))
            }
            ("GET", "/api/v5/market/ticker") => {
                let Some(inst_id) = param(&params, "instId") else {
                    return empty("instId");
                };
                let state = exchange.state.lock().unwrap();
                let Some(pair) = pair_of(&state, inst_id) else {
                    return unknown_instrument();
                };
                let last = text(state.prices[&pair]);
                ok(json!([{
                    "instType": "SPOT", "instId": inst_id, "last": last, "lastSz": "0.1",
                    "askPx": last, "askSz": "1", "bidPx": last, "bidSz": "1", "open24h": last,
                    "high24h": last, "low24h": last, "volCcy24h": "0", "vol24h": "0",
                    "sodUtc0": last, "sodUtc8": last, "ts": now.to_string(),
                }]))
            }
            ("GET", "/api/v5/account/config") => {
                if let Err(answer) = signed() {
                    return answer;
                }
                ok(json!([{
                    "acctLv": "1", "autoLoan": false, "ctIsoMode": "automatic", "enableSpotBorrow": false,
                    "greeksType": "PA", "ip": "", "kycLv": "2", "label": "tradehost", "level": "Lv1",
                    "levelTmp": "", "liquidationGear": "-1", "mainUid": "44705892343619584",
                    "mgnIsoMode": "automatic", "opAuth": "0", "perm": "read_only,trade", "posMode": "net_mode",
                    "roleType": "0", "spotBorrowAutoRepay": false, "spotOffsetType": "", "spotRoleType": "0",
                    "spotTraderInsts": [], "traderInsts": [], "type": "0", "uid": "44705892343619584",
                }]))
            }
            ("GET", "/api/v5/account/balance") => {
                let account = match signed() {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let wanted: Option<Vec<&str>> =
                    param(&params, "ccy").map(|c| c.split(',').collect());
                let mut state = exchange.state.lock().unwrap();
                let balances = state.balances_of(&account, now);
                let locked = state.locked_of(&account);
                let details: Vec<Value> = balances
                    .iter()
                    .filter(|(asset, total)| {
                        !total.is_zero()
                            && wanted.as_ref().is_none_or(|w| w.contains(&asset.as_str()))
                    })
                    .map(|(asset, total)| {
                        let held = locked.get(asset).copied().unwrap_or_default();
                        json!({
                            "availBal": text(*total - held), "availEq": "", "borrowFroz": "",
                            "cashBal": text(*total), "ccy": asset, "crossLiab": "", "disEq": text(*total),
                            "eq": text(*total), "eqUsd": "", "fixedBal": "0", "frozenBal": text(held),
                            "imr": "", "interest": "", "isoEq": "0", "isoLiab": "", "isoUpl": "0",
                            "liab": "", "maxLoan": "", "mgnRatio": "", "mmr": "", "notionalLever": "",
                            "ordFrozen": text(held), "spotInUseAmt": "", "stgyEq": "0", "twap": "0",
                            "uTime": now.to_string(), "upl": "0", "uplLiab": "",
                        })
                    })
                    .collect();
                ok(json!([{
                    "adjEq": "", "borrowFroz": "", "details": details, "imr": "", "isoEq": "0",
                    "mgnRatio": "", "mmr": "", "notionalUsd": "", "ordFroz": "", "totalEq": "",
                    "uTime": now.to_string(), "upl": "0",
                }]))
            }
            ("POST", "/api/v5/trade/order") => {
                let account = match signed() {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let order = match placement(&body) {
                    Ok(order) => order,
                    Err(answer) => return answer,
                };
                let client_order_id = if order.cl_ord_id.is_empty() {
                    format!("okx{now}")
                } else {
                    recorded_id(&order.cl_ord_id)
                };
                let placed = {
                    let mut state = exchange.state.lock().unwrap();
                    let Some((base, quote)) = pair_of(&state, &order.inst_id) else {
                        return unknown_instrument();
                    };
                    let quantity = if order.quote_sized {
                        // Spent in the quote asset: what that buys, in whole lots.
                        let pair = (base.clone(), quote.clone());
                        let lot = state.instruments[&pair].lot;
                        ((order.size / state.prices[&pair]) / lot).trunc() * lot
                    } else {
                        order.size
                    };
                    state
                        .place(
                            &account,
                            &client_order_id,
                            &base,
                            &quote,
                            order.side,
                            quantity,
                            order.limit,
                            now,
                        )
                        .map_err(|refused| {
                            refusal(refused, &order.cl_ord_id, &quote, order.side, &base, now)
                        })
                };
                match placed {
                    Err(answer) => answer,
                    Ok(placed) => Answer::json(
                        200,
                        json!({
                            "code": "0", "msg": "",
                            "data": [{"clOrdId": order.cl_ord_id, "ordId": placed.id.to_string(), "tag": "",
                                      "ts": now.to_string(), "sCode": "0", "sMsg": "Order placed"}],
                            "inTime": (now * 1000).to_string(), "outTime": (now * 1000 + 900).to_string(),
                        }),
                    )
                    .delayed(exchange.take_stall()),
                }
            }
            ("POST", "/api/v5/trade/cancel-order") => {
                let account = match signed() {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let (inst_id, order_id, client_order_id) = match named_order(
                    body_field(&body, "instId"),
                    body_field(&body, "ordId"),
                    body_field(&body, "clOrdId"),
                ) {
                    Ok(named) => named,
                    Err(answer) => return answer,
                };
                let cl_ord_id = body_field(&body, "clOrdId").unwrap_or_default();
                let mut state = exchange.state.lock().unwrap();
                if pair_of(&state, &inst_id).is_none() {
                    return unknown_instrument();
                }
                let found = state
                    .find(&account, client_order_id.as_deref(), order_id, now)
                    .ok()
                    .filter(|o| format!("{}-{}", o.base, o.quote) == inst_id);
                let (code, msg) = match &found {
                    None => (
                        "51400",
                        "Order cancellation failed as the order has been filled, canceled or does not exist",
                    ),
                    Some(o) if o.status == Status::Filled => (
                        "51402",
                        "Order cancellation failed as the order has been completed.",
                    ),
                    Some(o) if !o.working() => (
                        "51401",
                        "Order cancellation failed as the order has been canceled.",
                    ),
                    Some(o) => {
                        let cancelled = state
                            .cancel(&account, None, Some(o.id), now)
                            .expect("a working order cancels");
                        return ok(json!([{
                            "clOrdId": venue_id(&cancelled.client_order_id),
                            "ordId": cancelled.id.to_string(), "ts": now.to_string(),
                            "sCode": "0", "sMsg": "",
                        }]));
                    }
                };
                let ord_id = found.map(|o| o.id.to_string()).unwrap_or_default();
                Answer::json(
                    200,
                    json!({
                        "code": "1", "msg": "All operations failed",
                        "data": [{"clOrdId": cl_ord_id, "ordId": ord_id, "ts": now.to_string(), "sCode": code, "sMsg": msg}],
                    }),
                )
            }
            ("GET", "/api/v5/trade/order") => {
                let account = match signed() {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let (inst_id, order_id, client_order_id) = match named_order(
                    param(&params, "instId"),
                    param(&params, "ordId"),
                    param(&params, "clOrdId"),
                ) {
                    Ok(named) => named,
                    Err(answer) => return answer,
                };
                let mut state = exchange.state.lock().unwrap();
                if pair_of(&state, &inst_id).is_none() {
                    return unknown_instrument();
                }
                match state
                    .find(&account, client_order_id.as_deref(), order_id, now)
                    .ok()
                    .filter(|o| format!("{}-{}", o.base, o.quote) == inst_id)
                {
                    Some(order) => ok(json!([order_json(&state, &order)])),
                    None => error(200, "51603", "Order does not exist"),
                }
            }
            ("GET", "/api/v5/trade/orders-pending") => {
                let account = match signed() {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                if param(&params, "instType").is_some_and(|t| t != "SPOT") {
                    return ok(json!([]));
                }
                let number = |name: &str| param(&params, name).and_then(|v| v.parse::<u64>().ok());
                let (after, before) = (number("after"), number("before"));
                let limit = number("limit").unwrap_or(100).clamp(1, 100) as usize;
                let wanted = param(&params, "instId");
                let mut state = exchange.state.lock().unwrap();
                let open = state.open_orders(&account, now);
                let rows: Vec<Value> = open
                    .iter()
                    .rev()
                    .filter(|o| wanted.is_none_or(|w| w == format!("{}-{}", o.base, o.quote)))
                    .filter(|o| after.is_none_or(|a| o.id < a))
                    .filter(|o| before.is_none_or(|b| o.id > b))
                    .take(limit)
                    .map(|o| order_json(&state, o))
                    .collect();
                ok(Value::Array(rows))
            }
            ("GET", "/api/v5/trade/fills" | "/api/v5/trade/fills-history") => {
                let account = match signed() {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let history = call.path.ends_with("history");
                match param(&params, "instType") {
                    None if history => return empty("instType"),
                    None | Some("SPOT") => {}
                    Some(_) => return ok(json!([])),
                }
                let number = |name: &str| param(&params, name).and_then(|v| v.parse::<i64>().ok());
                let (after, before) = (number("after"), number("before"));
                let (begin, end) = (number("begin"), number("end"));
                let order_id = number("ordId");
                let limit = number("limit").unwrap_or(100).clamp(1, 100) as usize;
                let wanted = param(&params, "instId");
                let kept = if history {
                    HISTORY_FILLS_MS
                } else {
                    RECENT_FILLS_MS
                };
                let mut state = exchange.state.lock().unwrap();
                let trades = state.trades_of(&account, now);
                let rows: Vec<Value> = trades
                    .iter()
                    .rev()
                    .filter(|t| t.at >= now - kept)
                    .filter(|t| wanted.is_none_or(|w| w == format!("{}-{}", t.base, t.quote)))
                    .filter(|t| order_id.is_none_or(|id| t.order_id as i64 == id))
                    .filter(|t| after.is_none_or(|a| (bill_id(t) as i64) < a))
                    .filter(|t| before.is_none_or(|b| (bill_id(t) as i64) > b))
                    .filter(|t| begin.is_none_or(|b| t.at >= b))
                    .filter(|t| end.is_none_or(|e| t.at <= e))
                    .take(limit)
                    .map(|t| fill_json(&state, t))
                    .collect();
                ok(Value::Array(rows))
            }
            _ => error(404, "404", "Not Found"),
        }
    }
}

impl Face for Okx {
    fn answer(&self, exchange: &Exchange, call: &Call) -> Answer {
        // Private requests count per key (OKX counts per account), public ones per caller.
        let client = call.header("OK-ACCESS-KEY").unwrap_or("public").to_string();
        match exchange.admit(&client) {
            super::Admission::Admitted(_) => self.route(exchange, call),
            super::Admission::Throttled(_) | super::Admission::Banned(_) => {
                Answer::json(429, json!({"msg": "Too Many Requests", "code": "50011"}))
            }
        }
    }
}

/// An OKX API key of the simulator's funded account, its secret and passphrase.
pub const API_KEY: &str = "5b1e7c2a-9d4f-4a83-b6e0-3f8c1d2a7e95";
const API_SECRET: &str = "8E4C1A97F02B6D35C9A1E7F40B2D86C3";
const PASSPHRASE: &str = "Sim-Passphrase-7";

/// OKX spot against USDT, fees taken in the asset received; minimum sizes worth a few USDT and
/// no minimum order value (OKX publishes minimum sizes only).
pub fn case() -> super::VenueCase {
    let exchange = Exchange::standard("USDT", API_KEY, API_SECRET);
    exchange.with_state(|state| {
        state.fee_in_received = true;
        if let Some(key) = state.keys.get_mut(API_KEY) {
            key.passphrase = Some(PASSPHRASE.into());
        }
        // OKX publishes minimum sizes, no minimum order value.
        for (pair, minimum) in [("BTC", "0.0001"), ("ETH", "0.001"), ("SOL", "0.01")] {
            if let Some(instrument) = state.instruments.get_mut(&(pair.into(), "USDT".into())) {
                instrument.min_quantity = minimum.parse().expect("a decimal");
            }
        }
        for instrument in state.instruments.values_mut() {
            instrument.min_notional = Decimal::ZERO;
        }
    });
    super::VenueCase {
        broker: "okx",
        symbols: ["BTC-USDT", "ETH-USDT"],
        exchange,
        face: std::sync::Arc::new(Okx),
        account: "main",
        connect: json!({"broker": "okx", "api_key": API_KEY, "api_secret": API_SECRET,
                        "additional_params": {"passphrase": PASSPHRASE}}),
        connect_bad: json!({"broker": "okx", "api_key": API_KEY, "api_secret": "not-the-secret",
                            "additional_params": {"passphrase": PASSPHRASE}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OKX's "REST Authentication" example inputs (its timestamp, request path and sample
    /// SecretKey); the signature computed separately with a standard HMAC tool.
    #[test]
    fn signs_as_okx_documents() {
        assert_eq!(
            sign(
                "22582BD0CFF14C41EDBF1AB98506286D",
                "2020-12-08T09:08:57.715ZGET/api/v5/account/balance?ccy=BTC"
            ),
            "HiZhvSfMtWJA3uUIVXV3a/bSXNPCWvYFXoGCVS8V4zY="
        );
    }

    #[test]
    fn client_order_ids_are_recorded_in_tradehosts_form() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(recorded_id(hex), format!("th-{hex}"));
        assert_eq!(venue_id(&recorded_id(hex)), hex);
        assert_eq!(recorded_id("manual1"), "manual1");
        assert_eq!(venue_id("manual1"), "manual1");
    }
}
