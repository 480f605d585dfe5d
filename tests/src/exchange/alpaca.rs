//! Alpaca's face: the Trading API v2 (`/v2/...`) and the market data API's bars, as Alpaca
//! documents them, for the subset the `alpaca` plugin uses. Every Trading API request must carry
//! `APCA-API-KEY-ID` naming a key and `APCA-API-SECRET-KEY` equal to its secret (Alpaca has no
//! request signature): otherwise 401 `request is not authorized`. Crypto bars are public; the
//! simulator lists no stocks.
//!
//! Every answer carries `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix seconds); over the
//! budget the answer is 429 with those headers (Alpaca sends no `Retry-After`).
//!
//! Crypto pairs are `BTC/USD` (`BTCUSD` accepted too, as Alpaca does; positions are written
//! that way); fills are `FILL` activities with ids `YYYYMMDDhhmmssSSS::<uuid>`, without the
//! fee, which Alpaca keeps out of the asset received.

use chrono::{TimeZone, Utc};
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde_json::{Value, json};

use super::{
    Admission, Answer, Call, Exchange, Face, Order, Refusal, Side, State, Status, Trade, now_ms,
};

pub struct Alpaca;

/// The budget a client gets when the test sets none (Alpaca's 200 a minute).
const DEFAULT_LIMIT: u32 = 200;

fn error(status: u16, code: i64, message: &str) -> Answer {
    Answer::json(status, json!({"code": code, "message": message}))
}

fn no_content() -> Answer {
    Answer {
        status: 204,
        headers: Vec::new(),
        body: String::new(),
        delay: None,
    }
}

fn stamp(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms)
        .single()
        .expect("a valid time")
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// RFC 3339 or a bare date, as Alpaca's query parameters take them.
fn parse_time(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .ok()
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_millis())
        })
}

fn order_uuid(id: u64) -> String {
    format!("0a1b2c3d-0000-4000-8000-{id:012x}")
}

fn order_id_of(uuid: &str) -> Option<u64> {
    let hex = uuid.strip_prefix("0a1b2c3d-0000-4000-8000-")?;
    (hex.len() == 12).then(|| u64::from_str_radix(hex, 16).ok())?
}

fn asset_id(base: &str, quote: &str) -> String {
    let tag: u64 = format!("{base}{quote}").bytes().map(u64::from).sum();
    format!("5e6f7a8b-0000-4000-8000-{tag:012x}")
}

/// The activity id of a fill: its time to the millisecond, then a unique id.
pub fn activity_id(trade: &Trade) -> String {
    let at = Utc
        .timestamp_millis_opt(trade.at)
        .single()
        .expect("a valid time");
    format!(
        "{}::7f3e9a10-0000-4000-8000-{:012x}",
        at.format("%Y%m%d%H%M%S%3f"),
        trade.id
    )
}

fn fixed(value: Decimal) -> String {
    value.normalize().to_string()
}

fn number(value: Decimal) -> Value {
    json!(value.to_f64().unwrap_or_default())
}

/// `BTC/USD` or `BTCUSD` → (`BTC`, `USD`), among the listed instruments.
fn pair_of(state: &State, symbol: &str) -> Option<(String, String)> {
    let symbol = symbol.to_ascii_uppercase();
    state
        .instruments
        .keys()
        .find(|(base, quote)| {
            symbol == format!("{base}/{quote}") || symbol == format!("{base}{quote}")
        })
        .cloned()
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::New => "new",
        Status::PartiallyFilled => "partially_filled",
        Status::Filled => "filled",
        Status::Canceled => "canceled",
        Status::Rejected => "rejected",
        Status::Expired => "expired",
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "buy",
        Side::Sell => "sell",
    }
}

fn order_json(order: &Order) -> Value {
    let kind = if order.limit.is_some() {
        "limit"
    } else {
        "market"
    };
    let at = |done: bool| done.then(|| stamp(order.updated_at));
    json!({
        "id": order_uuid(order.id),
        "client_order_id": order.client_order_id,
        "created_at": stamp(order.created_at),
        "updated_at": stamp(order.updated_at),
        "submitted_at": stamp(order.created_at),
        "filled_at": at(order.status == Status::Filled),
        "expired_at": at(order.status == Status::Expired),
        "canceled_at": at(order.status == Status::Canceled),
        "failed_at": null,
        "replaced_at": null,
        "replaced_by": null,
        "replaces": null,
        "asset_id": asset_id(&order.base, &order.quote),
        "symbol": format!("{}/{}", order.base, order.quote),
        "asset_class": "crypto",
        "notional": null,
        "qty": fixed(order.quantity),
        "filled_qty": fixed(order.filled),
        "filled_avg_price": (!order.filled.is_zero())
            .then(|| fixed((order.filled_value / order.filled).round_dp(9))),
        "order_class": "",
        "order_type": kind,
        "type": kind,
        "side": side_name(order.side),
        "position_intent": if order.side == Side::Buy { "buy_to_open" } else { "sell_to_close" },
        "time_in_force": "gtc",
        "limit_price": order.limit.map(fixed),
        "stop_price": null,
        "status": status_name(order.status),
        "extended_hours": false,
        "legs": null,
        "trail_percent": null,
        "trail_price": null,
        "hwm": null,
        "subtag": null,
        "source": null,
        "expires_at": null,
    })
}

fn activity_json(trade: &Trade, leaves: Decimal, cumulative: Decimal, done: bool) -> Value {
    json!({
        "id": activity_id(trade),
        "activity_type": "FILL",
        "transaction_time": stamp(trade.at),
        "type": if done { "fill" } else { "partial_fill" },
        "price": fixed(trade.price),
        "qty": fixed(trade.quantity),
        "side": side_name(trade.side),
        "symbol": format!("{}/{}", trade.base, trade.quote),
        "leaves_qty": fixed(leaves),
        "order_id": order_uuid(trade.order_id),
        "cum_qty": fixed(cumulative),
        "order_status": if done { "filled" } else { "partially_filled" },
    })
}

fn refusal(refused: Refusal, balances: &str) -> Answer {
    match refused {
        Refusal::UnknownInstrument => error(422, 40010001, "asset not found"),
        Refusal::InsufficientFunds => error(403, 40310000, balances),
        Refusal::Filter(detail) => {
            let message = match detail.split(':').next().unwrap_or_default() {
                "LOT_SIZE" => format!("qty must be a multiple of min_trade_increment ({detail})"),
                "PRICE_FILTER" => {
                    format!("limit_price must be a multiple of price_increment ({detail})")
                }
                _ => {
                    return error(
                        403,
                        40310000,
                        "cost basis must be >= minimal amount of order 1",
                    );
                }
            };
            error(422, 40010001, &message)
        }
        Refusal::DuplicateClientOrderId => error(422, 40010001, "client_order_id must be unique"),
        Refusal::UnknownOrder => error(404, 40410000, "order not found"),
        Refusal::Rejected(reason) => error(422, 42210000, &reason),
    }
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

fn not_authorized() -> Answer {
    error(401, 40110000, "request is not authorized")
}

/// The account whose keys the request carries.
fn authenticate(exchange: &Exchange, call: &Call) -> Result<String, Answer> {
    let (Some(key_id), Some(secret)) = (
        call.header("APCA-API-KEY-ID"),
        call.header("APCA-API-SECRET-KEY"),
    ) else {
        return Err(not_authorized());
    };
    match exchange.with_state(|s| s.keys.get(key_id).cloned()) {
        Some(key) if key.secret == secret => Ok(key.account),
        _ => Err(not_authorized()),
    }
}

/// `1Min`, `15T`, `1Hour`, `4H`, `1Day`, `1Week` in milliseconds.
fn timeframe_ms(text: &str) -> Option<i64> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let amount: i64 = digits.parse().ok()?;
    let unit = match &text[digits.len()..] {
        "Min" | "T" => 60_000,
        "Hour" | "H" => 3_600_000,
        "Day" | "D" => 86_400_000,
        "Week" | "W" => 604_800_000,
        _ => return None,
    };
    (amount > 0).then_some(amount * unit)
}

/// Bars of `(base, quote)` as the query asks for them.
fn bars(
    state: &State,
    base: &str,
    quote: &str,
    params: &[(String, String)],
) -> Result<Vec<Value>, Answer> {
    let Some(interval) = param(params, "timeframe").and_then(timeframe_ms) else {
        return Err(error(422, 42210000, "invalid timeframe"));
    };
    let limit = param(params, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(1000)
        .clamp(1, 10_000);
    let end = param(params, "end")
        .and_then(parse_time)
        .unwrap_or_else(now_ms);
    let start = param(params, "start")
        .and_then(parse_time)
        .unwrap_or(end - 86_400_000);
    let span = ((end - start) / interval).max(0) as usize + 1;
    let mut rows: Vec<Value> = state
        .candles(base, quote, interval, span.min(limit), end)
        .unwrap_or_default()
        .into_iter()
        .filter(|(open_time, _)| *open_time >= start)
        .map(|(open_time, [o, h, l, c, v])| {
            json!({"t": stamp(open_time).replace(".000000Z", "Z"), "o": number(o), "h": number(h),
                   "l": number(l), "c": number(c), "v": number(v), "n": 12,
                   "vw": number(((o + c) / Decimal::TWO).round_dp(4))})
        })
        .collect();
    if param(params, "sort") == Some("desc") {
        rows.reverse();
    }
    Ok(rows)
}

impl Alpaca {
    fn route(&self, exchange: &Exchange, call: &Call) -> Answer {
        let params = call.params();
        let now = now_ms();
        let path = call.path.as_str();
        if call.method == "GET" && path == "/v1beta3/crypto/us/bars" {
            // Public, but keys that are sent must be good.
            if call.header("APCA-API-KEY-ID").is_some()
                && let Err(answer) = authenticate(exchange, call)
            {
                exchange.with_state(|s| s.auth_refusals += 1);
                return answer;
            }
            let state = exchange.state.lock().unwrap();
            let mut all = serde_json::Map::new();
            for symbol in param(&params, "symbols").unwrap_or_default().split(',') {
                if let Some((base, quote)) = pair_of(&state, symbol) {
                    match bars(&state, &base, &quote, &params) {
                        Ok(rows) => all.insert(symbol.to_string(), Value::Array(rows)),
                        Err(answer) => return answer,
                    };
                }
            }
            return Answer::json(200, json!({"bars": all, "next_page_token": null}));
        }
        let account = match authenticate(exchange, call) {
            Ok(account) => account,
            Err(answer) => {
                exchange.with_state(|s| s.auth_refusals += 1);
                return answer;
            }
        };
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (call.method.as_str(), segments.as_slice()) {
            ("GET", ["v2", "account"]) => {
                let mut state = exchange.state.lock().unwrap();
                let balances = state.balances_of(&account, now);
                let locked = state.locked_of(&account);
                let cash = balances.get("USD").copied().unwrap_or_default();
                let spendable = cash - locked.get("USD").copied().unwrap_or_default();
                let held: Decimal = balances
                    .iter()
                    .filter(|(asset, _)| asset.as_str() != "USD")
                    .map(|(asset, quantity)| {
                        *quantity
                            * state
                                .prices
                                .get(&(asset.clone(), "USD".to_string()))
                                .copied()
                                .unwrap_or_default()
                    })
                    .sum();
                Answer::json(
                    200,
                    json!({
                        "id": "e6fe16f3-64a4-4921-8928-cadf02f92f98", "admin_configurations": {},
                        "user_configurations": null, "account_number": "PA3717PJAYWN",
                        "status": "ACTIVE", "crypto_status": "ACTIVE", "options_approved_level": 0,
                        "options_trading_level": 0, "currency": "USD",
                        "buying_power": fixed(spendable), "regt_buying_power": fixed(spendable),
                        "daytrading_buying_power": "0", "effective_buying_power": fixed(spendable),
                        "non_marginable_buying_power": fixed(spendable), "options_buying_power": "0",
                        "bod_dtbp": "0", "cash": fixed(cash), "accrued_fees": "0",
                        "portfolio_value": fixed(cash + held), "pattern_day_trader": false,
                        "trading_blocked": false, "transfers_blocked": false, "account_blocked": false,
                        "created_at": "2024-01-02T15:04:05.123456Z", "trade_suspended_by_user": false,
                        "multiplier": "1", "shorting_enabled": false, "equity": fixed(cash + held),
                        "last_equity": fixed(cash + held), "long_market_value": fixed(held),
                        "short_market_value": "0", "position_market_value": fixed(held),
                        "initial_margin": "0", "maintenance_margin": "0", "last_maintenance_margin": "0",
                        "sma": "0", "daytrade_count": 0, "balance_asof": "2024-01-01",
                        "crypto_tier": 1, "intraday_adjustments": "0", "pending_reg_taf_fees": "0",
                    }),
                )
            }
            ("GET", ["v2", "positions"]) => {
                let mut state = exchange.state.lock().unwrap();
                let balances = state.balances_of(&account, now);
                let locked = state.locked_of(&account);
                let trades = state.trades_of(&account, now);
                let mut rows = Vec::new();
                for (asset, quantity) in balances
                    .iter()
                    .filter(|(a, q)| a.as_str() != "USD" && !q.is_zero())
                {
                    let pair = (asset.clone(), "USD".to_string());
                    let price = state.prices.get(&pair).copied().unwrap_or_default();
                    // The average price paid for what is held.
                    let (mut held, mut cost) = (Decimal::ZERO, Decimal::ZERO);
                    for trade in trades.iter().filter(|t| &t.base == asset) {
                        let received = trade.quantity
                            - if trade.fee_asset == trade.base {
                                trade.fee
                            } else {
                                Decimal::ZERO
                            };
                        match trade.side {
                            Side::Buy => {
                                held += received;
                                cost += trade.quantity * trade.price;
                            }
                            Side::Sell if held > Decimal::ZERO => {
                                cost -= cost * (trade.quantity / held).min(Decimal::ONE);
                                held -= trade.quantity;
                            }
                            Side::Sell => {}
                        }
                    }
                    let average = if held > Decimal::ZERO {
                        (cost / held).round_dp(9)
                    } else {
                        price
                    };
                    let available = *quantity - locked.get(asset).copied().unwrap_or_default();
                    let value = *quantity * price;
                    let basis = *quantity * average;
                    rows.push(json!({
                        "asset_id": asset_id(asset, "USD"), "symbol": format!("{asset}USD"),
                        "exchange": "CRYPTO", "asset_class": "crypto", "asset_marginable": false,
                        "qty": fixed(*quantity), "qty_available": fixed(available),
                        "avg_entry_price": fixed(average), "side": "long",
                        "market_value": fixed(value), "cost_basis": fixed(basis),
                        "unrealized_pl": fixed(value - basis), "unrealized_plpc": "0",
                        "unrealized_intraday_pl": fixed(value - basis), "unrealized_intraday_plpc": "0",
                        "current_price": fixed(price), "lastday_price": fixed(price), "change_today": "0",
                    }));
                }
                Answer::json(200, Value::Array(rows))
            }
            ("GET", ["v2", "assets", rest @ ..]) => {
                let symbol = super::decode_form(&format!("s={}", rest.join("/")))
                    .pop()
                    .map(|(_, v)| v)
                    .unwrap_or_default();
                let state = exchange.state.lock().unwrap();
                let Some((base, quote)) = pair_of(&state, &symbol) else {
                    return error(404, 40410000, "asset not found");
                };
                let i = &state.instruments[&(base.clone(), quote.clone())];
                Answer::json(
                    200,
                    json!({
                        "id": asset_id(&base, &quote), "class": "crypto", "exchange": "CRYPTO",
                        "symbol": format!("{base}/{quote}"), "name": format!("{base}/{quote} pair"),
                        "status": "active", "tradable": true, "marginable": false,
                        "maintenance_margin_requirement": 100, "margin_requirement_long": "100",
                        "margin_requirement_short": "100", "shortable": false, "easy_to_borrow": false,
                        "fractionable": true, "attributes": [],
                        "min_order_size": fixed(i.min_quantity),
                        "min_trade_increment": fixed(i.lot),
                        "price_increment": fixed(i.tick),
                    }),
                )
            }
            ("POST", ["v2", "orders"]) => self.place(exchange, call, &account, now),
            ("GET", ["v2", "orders"]) => {
                let mut state = exchange.state.lock().unwrap();
                state.advance(now);
                let wanted: Vec<(String, String)> = param(&params, "symbols")
                    .map(|list| list.split(',').filter_map(|s| pair_of(&state, s)).collect())
                    .unwrap_or_default();
                let status = param(&params, "status").unwrap_or("open");
                let limit = param(&params, "limit")
                    .and_then(|l| l.parse::<usize>().ok())
                    .unwrap_or(50)
                    .clamp(1, 500);
                let mut rows: Vec<&Order> = state
                    .orders
                    .iter()
                    .filter(|o| o.account == account)
                    .filter(|o| match status {
                        "open" => o.working(),
                        "closed" => !o.working(),
                        _ => true,
                    })
                    .filter(|o| {
                        param(&params, "symbols").is_none()
                            || wanted.contains(&(o.base.clone(), o.quote.clone()))
                    })
                    .collect();
                if param(&params, "direction") != Some("asc") {
                    rows.reverse();
                }
                Answer::json(
                    200,
                    Value::Array(rows.into_iter().take(limit).map(order_json).collect()),
                )
            }
            ("GET", ["v2", "orders:by_client_order_id"]) => {
                let Some(client_order_id) = param(&params, "client_order_id") else {
                    return error(422, 40010001, "client_order_id is required");
                };
                let mut state = exchange.state.lock().unwrap();
                match state.find(&account, Some(client_order_id), None, now) {
                    Ok(order) => Answer::json(200, order_json(&order)),
                    Err(_) => error(
                        404,
                        40410000,
                        &format!("order not found for {client_order_id}"),
                    ),
                }
            }
            ("GET", ["v2", "orders", id]) => {
                let mut state = exchange.state.lock().unwrap();
                match order_id_of(id).map(|id| state.find(&account, None, Some(id), now)) {
                    Some(Ok(order)) => Answer::json(200, order_json(&order)),
                    _ => error(404, 40410000, &format!("order not found for {id}")),
                }
            }
            ("DELETE", ["v2", "orders", id]) => {
                let mut state = exchange.state.lock().unwrap();
                let Some(order_id) = order_id_of(id) else {
                    return error(404, 40410000, &format!("order not found for {id}"));
                };
                if state.find(&account, None, Some(order_id), now).is_err() {
                    return error(404, 40410000, &format!("order not found for {id}"));
                }
                match state.cancel(&account, None, Some(order_id), now) {
                    Ok(_) => no_content(),
                    Err(_) => error(422, 42210000, "order is not cancelable"),
                }
            }
            ("GET", ["v2", "account", "activities", "FILL"]) => {
                self.fills(exchange, &params, &account, now)
            }
            ("GET", ["v2", "account", "activities", other]) => {
                error(422, 40010001, &format!("invalid activity type: {other}"))
            }
            // The simulator lists no stocks: a stock has no bars here.
            ("GET", ["v2", "stocks", symbol, "bars"]) => Answer::json(
                200,
                json!({"bars": [], "symbol": symbol, "next_page_token": null}),
            ),
            _ => error(404, 40410000, "endpoint not found"),
        }
    }

    fn place(&self, exchange: &Exchange, call: &Call, account: &str, now: i64) -> Answer {
        let Ok(body) = serde_json::from_slice::<Value>(&call.body) else {
            return error(400, 40010000, "request body format is invalid");
        };
        let text = |name: &str| match &body[name] {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        };
        let decimal = |name: &str| text(name).and_then(|t| t.parse::<Decimal>().ok());
        let Some(symbol) = text("symbol") else {
            return error(422, 40010001, "symbol is required");
        };
        let side = match body["side"].as_str() {
            Some("buy") => Side::Buy,
            Some("sell") => Side::Sell,
            _ => return error(422, 40010001, "invalid side"),
        };
        let Some(quantity) = decimal("qty") else {
            return error(422, 40010001, "qty is required");
        };
        if quantity <= Decimal::ZERO {
            return error(422, 40010001, "qty must be > 0");
        }
        let limit = match body["type"].as_str() {
            Some("market") => {
                if body.get("limit_price").is_some_and(|p| !p.is_null()) {
                    return error(
                        422,
                        40010001,
                        "limit_price must not be given for market orders",
                    );
                }
                None
            }
            Some("limit") => match decimal("limit_price") {
                Some(price) => Some(price),
                None => return error(422, 40010001, "limit_price is required for limit orders"),
            },
            _ => return error(422, 40010001, "invalid order type"),
        };
        // Alpaca takes crypto orders good till cancelled or immediate or cancel.
        match body["time_in_force"].as_str() {
            Some("gtc") => {}
            Some("ioc") => return error(422, 40010001, "ioc is not simulated"),
            _ => return error(422, 40010001, "invalid crypto time_in_force"),
        }
        let client_order_id = text("client_order_id").unwrap_or_else(|| format!("sim-{now}"));
        if client_order_id.len() > 128 {
            return error(
                422,
                40010001,
                "client_order_id must be no more than 128 characters",
            );
        }
        let mut state = exchange.state.lock().unwrap();
        let Some((base, quote)) = pair_of(&state, &symbol) else {
            return error(422, 40010001, &format!("could not find asset \"{symbol}\""));
        };
        // Unique per account for good, not only while the order works.
        if state
            .orders
            .iter()
            .any(|o| o.account == account && o.client_order_id == client_order_id)
        {
            return error(422, 40010001, "client_order_id must be unique");
        }
        let available = {
            let balances = state.balances_of(account, now);
            let locked = state.locked_of(account);
            let asset = if side == Side::Buy { &quote } else { &base };
            let free = balances.get(asset).copied().unwrap_or_default()
                - locked.get(asset).copied().unwrap_or_default();
            let requested = match side {
                Side::Buy => {
                    quantity * limit.unwrap_or_else(|| state.prices[&(base.clone(), quote.clone())])
                }
                Side::Sell => quantity,
            };
            format!(
                "insufficient balance for {asset} (requested: {}, available: {})",
                fixed(requested.round_dp(9)),
                fixed(free.round_dp(9))
            )
        };
        let placed = state.place(
            account,
            &client_order_id,
            &base,
            &quote,
            side,
            quantity,
            limit,
            now,
        );
        // The stall is taken from the engine's state: its lock is released first.
        drop(state);
        match placed {
            Err(refused) => refusal(refused, &available),
            Ok(order) => Answer::json(200, order_json(&order)).delayed(exchange.take_stall()),
        }
    }

    fn fills(
        &self,
        exchange: &Exchange,
        params: &[(String, String)],
        account: &str,
        now: i64,
    ) -> Answer {
        let after = param(params, "after").map(parse_time);
        let until = param(params, "until").map(parse_time);
        if matches!(after, Some(None)) || matches!(until, Some(None)) {
            return error(422, 40010001, "invalid date format");
        }
        let (after, until) = (after.flatten(), until.flatten());
        let ascending = param(params, "direction") == Some("asc");
        let size = param(params, "page_size")
            .and_then(|s| s.parse::<usize>().ok())
            .unwrap_or(100)
            .clamp(1, 100);
        let mut state = exchange.state.lock().unwrap();
        let trades = state.trades_of(account, now);
        // Each fill with what was left of its order and what had filled by then.
        let mut rows: Vec<(String, Value)> = Vec::new();
        for trade in &trades {
            let Some(order) = state.orders.iter().find(|o| o.id == trade.order_id) else {
                continue;
            };
            let cumulative: Decimal = trades
                .iter()
                .filter(|t| t.order_id == trade.order_id && (t.at, t.id) <= (trade.at, trade.id))
                .map(|t| t.quantity)
                .sum();
            let leaves = order.quantity - cumulative;
            rows.push((
                activity_id(trade),
                activity_json(trade, leaves, cumulative, leaves.is_zero()),
            ));
        }
        rows.retain(|(_, row)| {
            let at = parse_time(row["transaction_time"].as_str().unwrap_or_default())
                .unwrap_or_default();
            after.is_none_or(|a| at > a) && until.is_none_or(|u| at < u)
        });
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        if !ascending {
            rows.reverse();
        }
        // After the page token in the order asked for.
        if let Some(token) = param(params, "page_token") {
            match rows.iter().position(|(id, _)| id == token) {
                Some(at) => {
                    rows.drain(..=at);
                }
                None => rows.retain(|(id, _)| {
                    if ascending {
                        id.as_str() > token
                    } else {
                        id.as_str() < token
                    }
                }),
            }
        }
        Answer::json(
            200,
            Value::Array(rows.into_iter().take(size).map(|(_, row)| row).collect()),
        )
    }
}

impl Face for Alpaca {
    fn answer(&self, exchange: &Exchange, call: &Call) -> Answer {
        // Requests are counted per key (market data without one: per caller).
        let client = call
            .header("APCA-API-KEY-ID")
            .unwrap_or("public")
            .to_string();
        // Alpaca's windows follow the clock (its reset is a whole second): a client's new window
        // starts at the window's boundary, not at its first request.
        exchange.with_state(|s| {
            if let Some((_, window)) = s.behaviour.rate_limit {
                let now = now_ms();
                let budget = s.requests.entry(client.clone()).or_default();
                if now - budget.window_start >= window && now >= budget.retry_at {
                    budget.window_start = now - now.rem_euclid(window);
                    budget.used = 0;
                }
            }
        });
        let admitted = exchange.admit(&client);
        let (limit, window, window_start) = exchange.with_state(|s| {
            let (limit, window) = s.behaviour.rate_limit.unwrap_or((DEFAULT_LIMIT, 60_000));
            let start = s.requests.get(&client).map_or(now_ms(), |b| b.window_start);
            (limit, window, start)
        });
        let reset_s = |at_ms: i64| ((at_ms + 999) / 1000).to_string();
        match admitted {
            Admission::Admitted(used) => {
                let remaining = if exchange.with_state(|s| s.behaviour.rate_limit.is_some()) {
                    limit.saturating_sub(used)
                } else {
                    limit - 1
                };
                self.route(exchange, call)
                    .header("X-RateLimit-Limit", limit.to_string())
                    .header("X-RateLimit-Remaining", remaining.to_string())
                    .header("X-RateLimit-Reset", reset_s(window_start + window))
            }
            Admission::Throttled(retry_ms) | Admission::Banned(retry_ms) => {
                error(429, 42910000, "rate limit exceeded")
                    .header("X-RateLimit-Limit", limit.to_string())
                    .header("X-RateLimit-Remaining", "0")
                    .header("X-RateLimit-Reset", reset_s(now_ms() + retry_ms))
            }
        }
    }

    fn trade_id(&self, trade: &Trade) -> String {
        activity_id(trade)
    }
}

/// An Alpaca key id and secret of the simulator's funded account.
pub const API_KEY: &str = "PKZ4H7QW2N8XJ5RT3MBV";
const API_SECRET: &str = "q7Vd2mXk9LpR4sTn8WbZ3cYf6HjA1uE5gK0oI2eN";

/// Alpaca's crypto market against USD, fees (25 bps, the first tier's taker fee) taken in the
/// asset received, as Alpaca charges them.
pub fn case() -> super::VenueCase {
    let exchange = Exchange::standard("USD", API_KEY, API_SECRET);
    exchange.with_state(|state| {
        state.fee_in_received = true;
        state.fee_rate = Decimal::new(25, 4);
        // Alpaca refuses orders worth less than $1.
        for instrument in state.instruments.values_mut() {
            instrument.min_notional = Decimal::ONE;
        }
    });
    super::VenueCase {
        broker: "alpaca",
        symbols: ["BTC-USD", "ETH-USD"],
        exchange,
        face: std::sync::Arc::new(Alpaca),
        account: "main",
        connect: json!({"broker": "alpaca", "api_key": API_KEY, "api_secret": API_SECRET,
                        "additional_params": {"paper": "true"}}),
        connect_bad: json!({"broker": "alpaca", "api_key": API_KEY, "api_secret": "not-the-secret",
                            "additional_params": {"paper": "true"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_times_as_alpaca_writes_them() {
        assert_eq!(order_id_of(&order_uuid(1_001)), Some(1_001));
        assert_eq!(order_id_of("61e69015-8549-4bfd-b9c3-01e75843f47d"), None);
        let trade = Trade {
            id: 7,
            order_id: 1_001,
            client_order_id: "c".into(),
            account: "main".into(),
            base: "BTC".into(),
            quote: "USD".into(),
            side: Side::Buy,
            quantity: Decimal::ONE,
            price: Decimal::ONE,
            fee: Decimal::ZERO,
            fee_asset: "BTC".into(),
            at: 1_620_655_264_650,
        };
        assert_eq!(
            activity_id(&trade),
            "20210510140104650::7f3e9a10-0000-4000-8000-000000000007"
        );
        assert_eq!(stamp(1_620_655_264_650), "2021-05-10T14:01:04.650000Z");
        assert_eq!(parse_time("2021-05-10T14:01:04Z"), Some(1_620_655_264_000));
        assert_eq!(timeframe_ms("15Min"), Some(900_000));
        assert_eq!(timeframe_ms("1Hour"), Some(3_600_000));
    }
}
