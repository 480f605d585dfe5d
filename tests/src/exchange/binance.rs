//! Binance spot's face: the REST API (`/api/v3/...`) as Binance documents it, for the subset the
//! `binance` plugin uses. Signed endpoints are checked the way Binance checks them: the
//! `X-MBX-APIKEY` header names a key (`-2015` otherwise, HTTP 401), `timestamp` is within
//! `recvWindow` and not a second ahead (`-1021`), and `signature` is the hex HMAC-SHA256, under
//! the key's secret, of the query string (without `signature`) followed by the body (`-1022`).
//! Every answer carries `X-MBX-USED-WEIGHT-1M`; over the budget the answer is 429 with
//! `Retry-After`, and a client that keeps calling before that wait is over is banned with 418.

use hmac::{Hmac, Mac};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use sha2::Sha256;

use super::{Answer, Call, Exchange, Face, Order, Refusal, Side, State, Status, Trade, now_ms};

/// The recvWindow when a request does not send one.
const DEFAULT_RECV_WINDOW: i64 = 5_000;

/// Binance's signature of `payload` under `secret` (hex HMAC-SHA256).
pub fn sign(secret: &str, payload: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(payload.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

pub struct Binance;

fn error(status: u16, code: i64, msg: &str) -> Answer {
    Answer::json(status, json!({"code": code, "msg": msg}))
}

fn fixed(value: Decimal) -> String {
    format!("{:.8}", value)
}

/// `BTCUSDT` → (`BTC`, `USDT`), among the listed instruments.
fn pair_of(state: &State, symbol: &str) -> Option<(String, String)> {
    state
        .instruments
        .keys()
        .find(|(base, quote)| format!("{base}{quote}") == symbol)
        .cloned()
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::New => "NEW",
        Status::PartiallyFilled => "PARTIALLY_FILLED",
        Status::Filled => "FILLED",
        Status::Canceled => "CANCELED",
        Status::Rejected => "REJECTED",
        Status::Expired => "EXPIRED",
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "BUY",
        Side::Sell => "SELL",
    }
}

fn order_json(order: &Order) -> Value {
    json!({
        "symbol": format!("{}{}", order.base, order.quote),
        "orderId": order.id,
        "orderListId": -1,
        "clientOrderId": order.client_order_id,
        "price": fixed(order.limit.unwrap_or_default()),
        "origQty": fixed(order.quantity),
        "executedQty": fixed(order.filled),
        "cummulativeQuoteQty": fixed(order.filled_value),
        "status": status_name(order.status),
        "timeInForce": "GTC",
        "type": if order.limit.is_some() { "LIMIT" } else { "MARKET" },
        "side": side_name(order.side),
        "stopPrice": fixed(Decimal::ZERO),
        "icebergQty": fixed(Decimal::ZERO),
        "time": order.created_at,
        "updateTime": order.updated_at,
        "isWorking": true,
        "workingTime": order.created_at,
        "origQuoteOrderQty": fixed(Decimal::ZERO),
        "selfTradePreventionMode": "NONE",
    })
}

fn trade_json(trade: &Trade) -> Value {
    json!({
        "symbol": format!("{}{}", trade.base, trade.quote),
        "id": trade.id,
        "orderId": trade.order_id,
        "orderListId": -1,
        "price": fixed(trade.price),
        "qty": fixed(trade.quantity),
        "quoteQty": fixed(trade.quantity * trade.price),
        "commission": fixed(trade.fee),
        "commissionAsset": trade.fee_asset,
        "time": trade.at,
        "isBuyer": trade.side == Side::Buy,
        "isMaker": false,
        "isBestMatch": true,
    })
}

fn refusal(refused: Refusal) -> Answer {
    match refused {
        Refusal::UnknownInstrument => error(400, -1121, "Invalid symbol."),
        Refusal::InsufficientFunds => error(
            400,
            -2010,
            "Account has insufficient balance for requested action.",
        ),
        Refusal::Filter(detail) => {
            let filter = detail.split(':').next().unwrap_or("LOT_SIZE");
            error(400, -1013, &format!("Filter failure: {filter}"))
        }
        Refusal::DuplicateClientOrderId => error(400, -2010, "Duplicate order sent."),
        Refusal::UnknownOrder => error(400, -2013, "Order does not exist."),
        Refusal::Rejected(reason) => error(400, -2010, &reason),
    }
}

/// The parameters of a call: query and body together (the query wins), as Binance reads them.
fn parameters(call: &Call) -> Vec<(String, String)> {
    let mut params = call.params();
    for (key, value) in super::decode_form(call.body_text()) {
        if !params.iter().any(|(k, _)| *k == key) {
            params.push((key, value));
        }
    }
    params
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

fn mandatory(name: &str) -> Answer {
    error(
        400,
        -1102,
        &format!("Mandatory parameter '{name}' was not sent, was empty/null, or malformed."),
    )
}

/// Checks a SIGNED request; the account it acts for.
fn authenticate(
    exchange: &Exchange,
    call: &Call,
    params: &[(String, String)],
) -> Result<String, Answer> {
    let Some(api_key) = call.header("X-MBX-APIKEY") else {
        return Err(error(401, -2014, "API-key format invalid."));
    };
    let Some(key) = exchange.with_state(|s| s.keys.get(api_key).cloned()) else {
        return Err(error(
            401,
            -2015,
            "Invalid API-key, IP, or permissions for action.",
        ));
    };
    let Some(timestamp) = param(params, "timestamp").and_then(|t| t.parse::<i64>().ok()) else {
        return Err(mandatory("timestamp"));
    };
    let recv_window = match param(params, "recvWindow") {
        None => DEFAULT_RECV_WINDOW,
        Some(text) => match text.parse::<i64>() {
            Ok(window) if (1..=60_000).contains(&window) => window,
            _ => return Err(error(400, -1131, "recvWindow must be less than 60000")),
        },
    };
    let now = now_ms();
    if timestamp >= now + 1_000 {
        return Err(error(
            400,
            -1021,
            "Timestamp for this request was 1000ms ahead of the server's time.",
        ));
    }
    if now - timestamp > recv_window {
        return Err(error(
            400,
            -1021,
            "Timestamp for this request is outside of the recvWindow.",
        ));
    }
    let without = |text: &str| {
        text.split('&')
            .filter(|pair| !pair.starts_with("signature="))
            .collect::<Vec<_>>()
            .join("&")
    };
    let Some(signature) = param(params, "signature") else {
        return Err(mandatory("signature"));
    };
    let payload = format!("{}{}", without(&call.query), without(call.body_text()));
    if !sign(&key.secret, &payload).eq_ignore_ascii_case(signature) {
        return Err(error(
            400,
            -1022,
            "Signature for this request is not valid.",
        ));
    }
    Ok(key.account)
}

impl Binance {
    fn route(&self, exchange: &Exchange, call: &Call) -> Answer {
        let params = parameters(call);
        let now = now_ms();
        let signed = |call: &Call| {
            authenticate(exchange, call, &params).inspect_err(|_| {
                exchange.with_state(|s| s.auth_refusals += 1);
            })
        };
        match (call.method.as_str(), call.path.as_str()) {
            ("GET", "/api/v3/ping") => Answer::json(200, json!({})),
            ("GET", "/api/v3/time") => Answer::json(200, json!({"serverTime": now})),
            ("GET", "/api/v3/exchangeInfo") => {
                let state = exchange.state.lock().unwrap();
                let wanted = param(&params, "symbol");
                let symbols: Vec<Value> = state
                    .instruments
                    .values()
                    .filter(|i| wanted.is_none_or(|w| w == format!("{}{}", i.base, i.quote)))
                    .map(|i| {
                        json!({
                            "symbol": format!("{}{}", i.base, i.quote),
                            "status": "TRADING",
                            "baseAsset": i.base,
                            "baseAssetPrecision": 8,
                            "quoteAsset": i.quote,
                            "quotePrecision": 8,
                            "quoteAssetPrecision": 8,
                            "orderTypes": ["LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS_LIMIT", "TAKE_PROFIT_LIMIT"],
                            "isSpotTradingAllowed": true,
                            "filters": [
                                {"filterType": "PRICE_FILTER", "minPrice": fixed(i.tick), "maxPrice": fixed(Decimal::from(1_000_000)), "tickSize": fixed(i.tick)},
                                {"filterType": "LOT_SIZE", "minQty": fixed(i.min_quantity), "maxQty": fixed(Decimal::from(9_000)), "stepSize": fixed(i.lot)},
                                {"filterType": "NOTIONAL", "minNotional": fixed(i.min_notional), "applyMinToMarket": true, "maxNotional": fixed(Decimal::from(9_000_000)), "applyMaxToMarket": false, "avgPriceMins": 5},
                            ],
                            "permissions": [],
                            "permissionSets": [["SPOT"]],
                        })
                    })
                    .collect();
                if wanted.is_some() && symbols.is_empty() {
                    return error(400, -1121, "Invalid symbol.");
                }
                Answer::json(
                    200,
                    json!({"timezone": "UTC", "serverTime": now, "rateLimits": [], "exchangeFilters": [], "symbols": symbols}),
                )
            }
            ("GET", "/api/v3/klines") => {
                let Some(symbol) = param(&params, "symbol") else {
                    return mandatory("symbol");
                };
                let interval_ms = match param(&params, "interval") {
                    Some("1m") => 60_000,
                    Some("3m") => 180_000,
                    Some("5m") => 300_000,
                    Some("15m") => 900_000,
                    Some("30m") => 1_800_000,
                    Some("1h") => 3_600_000,
                    Some("4h") => 14_400_000,
                    Some("1d") => 86_400_000,
                    Some(_) => return error(400, -1120, "Invalid interval."),
                    None => return mandatory("interval"),
                };
                let limit = param(&params, "limit")
                    .and_then(|l| l.parse::<usize>().ok())
                    .unwrap_or(500)
                    .min(1000);
                let end = param(&params, "endTime")
                    .and_then(|e| e.parse::<i64>().ok())
                    .unwrap_or(now);
                let state = exchange.state.lock().unwrap();
                let Some((base, quote)) = pair_of(&state, symbol) else {
                    return error(400, -1121, "Invalid symbol.");
                };
                let candles = state
                    .candles(&base, &quote, interval_ms, limit, end)
                    .unwrap_or_default();
                Answer::json(
                    200,
                    Value::Array(
                        candles
                            .into_iter()
                            .map(|(open_time, [o, h, l, c, v])| {
                                json!([
                                    open_time,
                                    fixed(o),
                                    fixed(h),
                                    fixed(l),
                                    fixed(c),
                                    fixed(v),
                                    open_time + interval_ms - 1,
                                    fixed(v * c),
                                    12,
                                    fixed(v / Decimal::TWO),
                                    fixed(v * c / Decimal::TWO),
                                    "0"
                                ])
                            })
                            .collect(),
                    ),
                )
            }
            ("GET", "/api/v3/account") => {
                let account = match signed(call) {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let omit_zero = param(&params, "omitZeroBalances") == Some("true");
                let mut state = exchange.state.lock().unwrap();
                let balances = state.balances_of(&account, now);
                let locked = state.locked_of(&account);
                let listed: Vec<Value> = balances
                    .iter()
                    .filter(|(_, total)| !omit_zero || !total.is_zero())
                    .map(|(asset, total)| {
                        let held = locked.get(asset).copied().unwrap_or_default();
                        json!({"asset": asset, "free": fixed(*total - held), "locked": fixed(held)})
                    })
                    .collect();
                Answer::json(
                    200,
                    json!({
                        "makerCommission": 10, "takerCommission": 10, "buyerCommission": 0, "sellerCommission": 0,
                        "commissionRates": {"maker": fixed(state.fee_rate), "taker": fixed(state.fee_rate), "buyer": fixed(Decimal::ZERO), "seller": fixed(Decimal::ZERO)},
                        "canTrade": true, "canWithdraw": false, "canDeposit": true, "brokered": false,
                        "requireSelfTradePrevention": false, "preventSor": false, "updateTime": now,
                        "accountType": "SPOT", "balances": listed, "permissions": ["SPOT"], "uid": 1,
                    }),
                )
            }
            ("POST", "/api/v3/order") => {
                let account = match signed(call) {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let Some(symbol) = param(&params, "symbol") else {
                    return mandatory("symbol");
                };
                let side = match param(&params, "side") {
                    Some("BUY") => Side::Buy,
                    Some("SELL") => Side::Sell,
                    _ => return mandatory("side"),
                };
                let Some(quantity) =
                    param(&params, "quantity").and_then(|q| q.parse::<Decimal>().ok())
                else {
                    return mandatory("quantity");
                };
                let limit = match param(&params, "type") {
                    Some("MARKET") => None,
                    Some("LIMIT") => {
                        if param(&params, "timeInForce") != Some("GTC") {
                            return mandatory("timeInForce");
                        }
                        match param(&params, "price").and_then(|p| p.parse::<Decimal>().ok()) {
                            Some(price) => Some(price),
                            None => return mandatory("price"),
                        }
                    }
                    Some(_) => return error(400, -1116, "Invalid orderType."),
                    None => return mandatory("type"),
                };
                let client_order_id = param(&params, "newClientOrderId")
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("web_{now}"));
                let placed = {
                    let mut state = exchange.state.lock().unwrap();
                    let Some((base, quote)) = pair_of(&state, symbol) else {
                        return error(400, -1121, "Invalid symbol.");
                    };
                    state
                        .place(&account, &client_order_id, &base, &quote, side, quantity, limit, now)
                        .map(|order| {
                            let fills: Vec<Value> = state
                                .trades
                                .iter()
                                .filter(|t| t.order_id == order.id)
                                .map(|t| json!({"price": fixed(t.price), "qty": fixed(t.quantity), "commission": fixed(t.fee), "commissionAsset": t.fee_asset, "tradeId": t.id}))
                                .collect();
                            (order, fills)
                        })
                };
                match placed {
                    Err(refused) => refusal(refused),
                    Ok((order, fills)) => {
                        let mut body = order_json(&order);
                        let full = param(&params, "newOrderRespType").is_none_or(|t| t == "FULL");
                        if full {
                            body["fills"] = Value::Array(fills);
                        }
                        body["transactTime"] = json!(now);
                        Answer::json(200, body)
                            .header("X-MBX-ORDER-COUNT-10S", "1")
                            .delayed(exchange.take_stall())
                    }
                }
            }
            ("GET", "/api/v3/order") | ("DELETE", "/api/v3/order") => {
                let account = match signed(call) {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let Some(symbol) = param(&params, "symbol") else {
                    return mandatory("symbol");
                };
                let order_id = param(&params, "orderId").and_then(|id| id.parse::<u64>().ok());
                let client_order_id = param(&params, "origClientOrderId");
                if order_id.is_none() && client_order_id.is_none() {
                    return mandatory("orderId");
                }
                let mut state = exchange.state.lock().unwrap();
                if pair_of(&state, symbol).is_none() {
                    return error(400, -1121, "Invalid symbol.");
                }
                if call.method == "GET" {
                    match state.find(&account, client_order_id, order_id, now) {
                        Ok(order) => Answer::json(200, order_json(&order)),
                        Err(_) => error(400, -2013, "Order does not exist."),
                    }
                } else {
                    match state.cancel(&account, client_order_id, order_id, now) {
                        Ok(order) => {
                            let mut body = order_json(&order);
                            body["origClientOrderId"] = json!(order.client_order_id);
                            body["clientOrderId"] = json!(format!("cancel_{}", order.id));
                            body["transactTime"] = json!(now);
                            Answer::json(200, body)
                        }
                        Err(_) => error(400, -2011, "Unknown order sent."),
                    }
                }
            }
            ("GET", "/api/v3/openOrders") => {
                let account = match signed(call) {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let mut state = exchange.state.lock().unwrap();
                let wanted = param(&params, "symbol");
                if let Some(symbol) = wanted
                    && pair_of(&state, symbol).is_none()
                {
                    return error(400, -1121, "Invalid symbol.");
                }
                let open: Vec<Value> = state
                    .open_orders(&account, now)
                    .iter()
                    .filter(|o| wanted.is_none_or(|w| w == format!("{}{}", o.base, o.quote)))
                    .map(order_json)
                    .collect();
                Answer::json(200, Value::Array(open))
            }
            ("GET", "/api/v3/myTrades") => {
                let account = match signed(call) {
                    Ok(account) => account,
                    Err(answer) => return answer,
                };
                let Some(symbol) = param(&params, "symbol") else {
                    return mandatory("symbol");
                };
                let number = |name: &str| param(&params, name).and_then(|v| v.parse::<i64>().ok());
                let (start, end) = (number("startTime"), number("endTime"));
                if let (Some(start), Some(end)) = (start, end)
                    && end - start > 86_400_000
                {
                    return error(
                        400,
                        -1127,
                        "More than 24 hours between startTime and endTime.",
                    );
                }
                let limit = number("limit").unwrap_or(500).clamp(1, 1000) as usize;
                let mut state = exchange.state.lock().unwrap();
                let Some((base, quote)) = pair_of(&state, symbol) else {
                    return error(400, -1121, "Invalid symbol.");
                };
                let order_id = number("orderId");
                let from_id = number("fromId");
                let trades: Vec<Trade> = state
                    .trades_of(&account, now)
                    .into_iter()
                    .filter(|t| t.base == base && t.quote == quote)
                    .filter(|t| order_id.is_none_or(|id| t.order_id as i64 == id))
                    .filter(|t| from_id.is_none_or(|id| t.id as i64 >= id))
                    .filter(|t| start.is_none_or(|s| t.at >= s))
                    // With a start and no end, Binance answers up to a day after the start.
                    .filter(|t| {
                        end.or(start.map(|s| s + 86_400_000))
                            .is_none_or(|e| t.at <= e)
                    })
                    .collect();
                // Oldest first from a start or an id; otherwise the most recent.
                let chosen: Vec<&Trade> = if start.is_some() || from_id.is_some() {
                    trades.iter().take(limit).collect()
                } else {
                    trades
                        .iter()
                        .skip(trades.len().saturating_sub(limit))
                        .collect()
                };
                Answer::json(
                    200,
                    Value::Array(chosen.into_iter().map(trade_json).collect()),
                )
            }
            _ => error(
                404,
                -1000,
                "An unknown error occurred while processing the request.",
            ),
        }
    }
}

impl Face for Binance {
    fn answer(&self, exchange: &Exchange, call: &Call) -> Answer {
        // Weight is counted per client (the API key, or the caller for public data).
        let client = call.header("X-MBX-APIKEY").unwrap_or("public").to_string();
        match exchange.admit(&client) {
            super::Admission::Admitted(used) => self
                .route(exchange, call)
                .header("X-MBX-USED-WEIGHT-1M", used.to_string()),
            super::Admission::Throttled(retry_ms) => error(
                429,
                -1003,
                "Too much request weight used; current limit is 6000 request weight per 1 MINUTE. Please use WebSocket Streams for live updates to avoid polling the API.",
            )
            .header("Retry-After", ((retry_ms + 999) / 1000).to_string()),
            super::Admission::Banned(retry_ms) => error(
                418,
                -1003,
                &format!("Way too much request weight used; IP banned until {}. Please use WebSocket Streams for live updates to avoid bans.", now_ms() + retry_ms),
            )
            .header("Retry-After", ((retry_ms + 999) / 1000).to_string()),
        }
    }
}

/// A Binance HMAC key of the simulator's funded account.
pub const API_KEY: &str = "tHk3nQ8sVb2LxR7mW4pZ9cF1yJ6dG0aEuK5oT3iN8hB2vX7qM1wS4rC9eY6lA0zD";
const API_SECRET: &str = "Qm7vB2xK9pL4nR8sT1wZ6cY3hF0jD5gA2uE7iO4kN9bV1xM6qW3rS8tC5yH0lP2z";

/// Binance spot against USDT, commissions taken in the asset received.
pub fn case() -> super::VenueCase {
    let exchange = Exchange::standard("USDT", API_KEY, API_SECRET);
    exchange.with_state(|state| state.fee_in_received = true);
    super::VenueCase {
        broker: "binance",
        symbols: ["BTC-USDT", "ETH-USDT"],
        exchange,
        face: std::sync::Arc::new(Binance),
        account: "main",
        connect: json!({"broker": "binance", "api_key": API_KEY, "api_secret": API_SECRET}),
        connect_bad: json!({"broker": "binance", "api_key": API_KEY, "api_secret": "not-the-secret"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Binance's "SIGNED Endpoint Examples for POST /api/v3/order" (HMAC keys).
    #[test]
    fn signs_as_binance_documents() {
        assert_eq!(
            sign(
                "NhqPtmdSJYdKjVHjA7PZj4Mge3R5YNiP1e3UZjInClVN65XAbvqqM6A7H5fATj0j",
                "symbol=LTCBTC&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559"
            ),
            "c8db56825ae71d6d79447849e617115f4a920fa2acdcab2b053c4b2838bd6b71"
        );
    }
}
