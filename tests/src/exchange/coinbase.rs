//! Coinbase Advanced Trade's face: the REST API (`/api/v3/brokerage/...`) as Coinbase documents
//! it, for the subset the `coinbase` plugin uses. Every authenticated request must carry
//! `Authorization: Bearer <JWT>`, checked the way Coinbase checks it: an ES256 signature by the
//! private key of the API key named in `kid`, verified with that key's public key; `sub` the
//! same key name, `iss` `cdp`, valid now (`nbf`, `exp`, at most two minutes apart), a nonce not
//! seen before, and `uri` naming exactly this request's method, host and path. Anything else is
//! 401 `Unauthorized`. Over the request budget the answer is 429 (without `Retry-After`, so the
//! client's default back-off is what keeps it from calling again too soon).

use std::collections::HashSet;
use std::sync::Mutex;

use chrono::SecondsFormat;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rust_decimal::Decimal;
use serde_json::{Value, json};

use super::{Answer, Call, Exchange, Face, Order, Refusal, Side, State, Status, Trade, now_ms};

const API: &str = "/api/v3/brokerage";
/// The longest a token may be valid.
const MAX_TOKEN_LIFETIME_SECS: i64 = 120;

#[derive(Default)]
pub struct Coinbase {
    /// Nonces of the tokens accepted (a token is good for one request).
    nonces: Mutex<HashSet<String>>,
}

fn error(status: u16, code: &str, message: &str) -> Answer {
    Answer::json(
        status,
        json!({"error": code, "code": grpc_code(code), "message": message, "error_details": message, "details": []}),
    )
}

fn grpc_code(code: &str) -> u8 {
    match code {
        "INVALID_ARGUMENT" => 3,
        "NOT_FOUND" => 5,
        "PERMISSION_DENIED" => 7,
        "RATE_LIMIT_EXCEEDED" => 8,
        "UNAUTHENTICATED" => 16,
        _ => 2,
    }
}

/// Coinbase answers a refused token in plain text.
fn unauthorized() -> Answer {
    Answer {
        status: 401,
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: "Unauthorized\n".into(),
        delay: None,
    }
}

fn fixed(value: Decimal) -> String {
    format!("{:.8}", value)
}

fn time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("a time in range")
        .to_rfc3339_opts(SecondsFormat::Micros, true)
}

fn parse_time(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// Coinbase's ids are UUIDs: the engine's numbers are kept in their last group.
pub fn order_uuid(id: u64) -> String {
    format!("6f1c0a2e-0000-4000-8000-{id:012x}")
}

fn trade_uuid(id: u64) -> String {
    format!("b07e5d31-0000-4000-9000-{id:012x}")
}

fn id_of(uuid: &str, prefix: &str) -> Option<u64> {
    let rest = uuid.strip_prefix(prefix)?;
    (rest.len() == 12)
        .then(|| u64::from_str_radix(rest, 16).ok())
        .flatten()
}

fn order_number(uuid: &str) -> Option<u64> {
    id_of(uuid, "6f1c0a2e-0000-4000-8000-")
}

/// `BTC-USD` → (`BTC`, `USD`), among the listed instruments.
fn pair_of(state: &State, product_id: &str) -> Option<(String, String)> {
    state
        .instruments
        .keys()
        .find(|(base, quote)| format!("{base}-{quote}") == product_id)
        .cloned()
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "BUY",
        Side::Sell => "SELL",
    }
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::New | Status::PartiallyFilled => "OPEN",
        Status::Filled => "FILLED",
        Status::Canceled => "CANCELLED",
        Status::Rejected => "FAILED",
        Status::Expired => "EXPIRED",
    }
}

fn order_json(order: &Order, trades: &[Trade]) -> Value {
    let mine: Vec<&Trade> = trades.iter().filter(|t| t.order_id == order.id).collect();
    let fees: Decimal = mine.iter().map(|t| t.fee).sum();
    let average = if order.filled.is_zero() {
        Decimal::ZERO
    } else {
        (order.filled_value / order.filled).round_dp(8)
    };
    let configuration = match order.limit {
        None => json!({"market_market_ioc": {"base_size": fixed(order.quantity)}}),
        Some(limit) => json!({"limit_limit_gtc": {
            "base_size": fixed(order.quantity), "limit_price": fixed(limit), "post_only": false
        }}),
    };
    let held = match (order.working(), order.side) {
        (false, _) => Decimal::ZERO,
        (true, Side::Buy) => (order.quantity - order.filled) * order.limit.unwrap_or_default(),
        (true, Side::Sell) => order.quantity - order.filled,
    };
    json!({
        "order_id": order_uuid(order.id),
        "product_id": format!("{}-{}", order.base, order.quote),
        "user_id": "2c5f8b1e-0000-4000-8000-000000000001",
        "order_configuration": configuration,
        "side": side_name(order.side),
        "client_order_id": order.client_order_id,
        "status": status_name(order.status),
        "time_in_force": if order.limit.is_some() { "GOOD_UNTIL_CANCELLED" } else { "IMMEDIATE_OR_CANCEL" },
        "created_time": time(order.created_at),
        "completion_percentage": fixed((order.filled / order.quantity * Decimal::ONE_HUNDRED).round_dp(2)),
        "filled_size": fixed(order.filled),
        "average_filled_price": fixed(average),
        "fee": "",
        "number_of_fills": mine.len().to_string(),
        "filled_value": fixed(order.filled_value),
        "pending_cancel": false,
        "size_in_quote": false,
        "total_fees": fixed(fees),
        "size_inclusive_of_fees": false,
        "total_value_after_fees": fixed(match order.side {
            Side::Buy => order.filled_value + fees,
            Side::Sell => order.filled_value - fees,
        }),
        "trigger_status": "INVALID_ORDER_TYPE",
        "order_type": if order.limit.is_some() { "LIMIT" } else { "MARKET" },
        "reject_reason": "REJECT_REASON_UNSPECIFIED",
        "settled": !order.working(),
        "product_type": "SPOT",
        "reject_message": "",
        "cancel_message": if order.status == Status::Canceled { "User requested cancel" } else { "" },
        "order_placement_source": "RETAIL_ADVANCED",
        "outstanding_hold_amount": fixed(held),
        "is_liquidation": false,
        "last_fill_time": mine.iter().map(|t| t.at).max().map(time),
        "edit_history": [],
        "leverage": "",
        "margin_type": "UNKNOWN_MARGIN_TYPE",
        "retail_portfolio_id": "7d3c2f10-0000-4000-8000-000000000001",
    })
}

fn fill_json(trade: &Trade) -> Value {
    json!({
        "entry_id": format!("e{}", trade_uuid(trade.id)),
        "trade_id": trade_uuid(trade.id),
        "order_id": order_uuid(trade.order_id),
        "trade_time": time(trade.at),
        "trade_type": "FILL",
        "price": fixed(trade.price),
        "size": fixed(trade.quantity),
        "commission": fixed(trade.fee),
        "product_id": format!("{}-{}", trade.base, trade.quote),
        "sequence_timestamp": time(trade.at),
        "liquidity_indicator": "TAKER",
        "size_in_quote": false,
        "user_id": "2c5f8b1e-0000-4000-8000-000000000001",
        "side": side_name(trade.side),
        "retail_portfolio_id": "7d3c2f10-0000-4000-8000-000000000001",
    })
}

/// A create-order refusal: `success: false` with Coinbase's reason.
fn order_failure(error: &str, message: &str, preview: &str) -> Answer {
    Answer::json(
        200,
        json!({
            "success": false,
            "failure_reason": "UNKNOWN_FAILURE_REASON",
            "order_id": "",
            "error_response": {
                "error": error,
                "message": message,
                "error_details": message,
                "preview_failure_reason": preview,
                "new_order_failure_reason": error,
            },
        }),
    )
}

fn refusal(refused: Refusal) -> Answer {
    match refused {
        Refusal::UnknownInstrument => order_failure(
            "INVALID_PRODUCT_ID",
            "Invalid product_id",
            "PREVIEW_INVALID_PRODUCT_ID",
        ),
        Refusal::InsufficientFunds => order_failure(
            "INSUFFICIENT_FUND",
            "Insufficient balance in source account",
            "PREVIEW_INSUFFICIENT_FUND",
        ),
        Refusal::Filter(detail) if detail.starts_with("PRICE_FILTER") => order_failure(
            "INVALID_PRICE_PRECISION",
            "Too many decimals in order price",
            "PREVIEW_INVALID_PRICE_PRECISION",
        ),
        Refusal::Filter(detail) if detail.contains("step") => order_failure(
            "INVALID_SIZE_PRECISION",
            "Too many decimals in order amount",
            "PREVIEW_INVALID_SIZE_PRECISION",
        ),
        Refusal::Filter(detail) if detail.starts_with("NOTIONAL") => order_failure(
            "INVALID_LIMIT_PRICE",
            "Order value is too small",
            "PREVIEW_INVALID_QUOTE_SIZE_TOO_SMALL",
        ),
        Refusal::Filter(_) => order_failure(
            "INVALID_SIZE_PRECISION",
            "Order size is too small",
            "PREVIEW_INVALID_BASE_SIZE_TOO_SMALL",
        ),
        Refusal::DuplicateClientOrderId | Refusal::UnknownOrder => order_failure(
            "UNKNOWN_FAILURE_REASON",
            "Duplicate client order id",
            "UNKNOWN_PREVIEW_FAILURE_REASON",
        ),
        Refusal::Rejected(reason) => order_failure(
            "UNKNOWN_FAILURE_REASON",
            &reason,
            "UNKNOWN_PREVIEW_FAILURE_REASON",
        ),
    }
}

fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// Every value of a repeated parameter (`order_ids=a&order_ids=b`).
fn params_of<'a>(params: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    params
        .iter()
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
        .collect()
}

fn invalid(message: &str) -> Answer {
    error(400, "INVALID_ARGUMENT", message)
}

/// One page of `rows` from the `cursor` (an offset) on, at most `limit`.
fn page(
    rows: Vec<Value>,
    params: &[(String, String)],
    default_limit: usize,
) -> (Vec<Value>, Option<String>) {
    let limit = param(params, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0)
        .unwrap_or(default_limit);
    let from = param(params, "cursor")
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(0);
    let end = (from + limit).min(rows.len());
    let next = (end < rows.len()).then(|| end.to_string());
    (rows.into_iter().skip(from).take(limit).collect(), next)
}

/// A product as "Get Product" (and its public twin) describes it.
fn product_answer(exchange: &Exchange, product: &str) -> Answer {
    let state = exchange.state.lock().unwrap();
    let Some(pair) = pair_of(&state, product) else {
        return error(404, "NOT_FOUND", "ProductID is invalid");
    };
    let instrument = &state.instruments[&pair];
    let price = state.prices.get(&pair).copied().unwrap_or_default();
    Answer::json(
        200,
        json!({
            "product_id": product, "price": fixed(price),
            "price_percentage_change_24h": "0.5", "volume_24h": "1234.5",
            "volume_percentage_change_24h": "1.2",
            "base_increment": fixed(instrument.lot), "quote_increment": fixed(instrument.tick),
            "quote_min_size": fixed(instrument.min_notional), "quote_max_size": "10000000",
            "base_min_size": fixed(instrument.min_quantity), "base_max_size": "9000",
            "base_name": instrument.base, "quote_name": "US Dollar", "watched": false,
            "is_disabled": false, "new": false, "status": "online", "cancel_only": false,
            "limit_only": false, "post_only": false, "trading_disabled": false,
            "auction_mode": false, "product_type": "SPOT",
            "quote_currency_id": instrument.quote, "base_currency_id": instrument.base,
            "fcm_trading_session_details": null, "mid_market_price": "", "alias": "",
            "alias_to": [], "base_display_symbol": instrument.base,
            "quote_display_symbol": instrument.quote, "view_only": false,
            "price_increment": fixed(instrument.tick), "display_name": product,
            "product_venue": "CBE",
        }),
    )
}

impl Coinbase {
    /// The key name a request's token claims to be signed by (unverified: for counting).
    fn claimed_key(call: &Call) -> Option<String> {
        let token = call.header("Authorization")?.strip_prefix("Bearer ")?;
        jsonwebtoken::decode_header(token.trim()).ok()?.kid
    }

    /// Checks an authenticated request; the account it acts for.
    fn authenticate(&self, exchange: &Exchange, call: &Call) -> Result<String, Answer> {
        let Some(token) = call
            .header("Authorization")
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
        else {
            return Err(unauthorized());
        };
        let header = jsonwebtoken::decode_header(token).map_err(|_| unauthorized())?;
        let (Some(kid), Some(nonce)) = (header.kid.clone(), header.nonce.clone()) else {
            return Err(unauthorized());
        };
        if header.alg != Algorithm::ES256
            || header.typ.as_deref() != Some("JWT")
            || nonce.is_empty()
        {
            return Err(unauthorized());
        }
        let Some(key) = exchange.with_state(|s| s.keys.get(&kid).cloned()) else {
            return Err(unauthorized());
        };
        let decoding =
            DecodingKey::from_ec_der(&hex::decode(&key.secret).expect("the key's public point"));
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = 0;
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp", "nbf", "iss", "sub"]);
        validation.set_issuer(&["cdp"]);
        validation.sub = Some(kid.clone());
        let claims = jsonwebtoken::decode::<Value>(token, &decoding, &validation)
            .map_err(|_| unauthorized())?
            .claims;
        let (Some(nbf), Some(exp)) = (claims["nbf"].as_i64(), claims["exp"].as_i64()) else {
            return Err(unauthorized());
        };
        if exp - nbf > MAX_TOKEN_LIFETIME_SECS {
            return Err(unauthorized());
        }
        let host = call.header("Host").unwrap_or_default();
        if claims["uri"].as_str() != Some(&format!("{} {host}{}", call.method, call.path)) {
            return Err(unauthorized());
        }
        if !self.nonces.lock().unwrap().insert(format!("{kid} {nonce}")) {
            return Err(unauthorized());
        }
        Ok(key.account)
    }

    fn route(&self, exchange: &Exchange, call: &Call) -> Answer {
        let params = call.params();
        let now = now_ms();
        let Some(path) = call.path.strip_prefix(API) else {
            return error(404, "NOT_FOUND", "Not Found");
        };
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        // Market data is public; everything else needs a token.
        if let ("GET", ["market", "products", product, "candles"]) =
            (call.method.as_str(), segments.as_slice())
        {
            return self.candles(exchange, product, &params, now);
        }
        if let ("GET", ["market", "products", product]) =
            (call.method.as_str(), segments.as_slice())
        {
            return product_answer(exchange, product);
        }
        let account = match self.authenticate(exchange, call) {
            Ok(account) => account,
            Err(answer) => {
                exchange.with_state(|s| s.auth_refusals += 1);
                return answer;
            }
        };
        match (call.method.as_str(), segments.as_slice()) {
            ("GET", ["key_permissions"]) => Answer::json(
                200,
                json!({"can_view": true, "can_trade": true, "can_transfer": false,
                       "portfolio_uuid": "7d3c2f10-0000-4000-8000-000000000001", "portfolio_type": "DEFAULT"}),
            ),
            ("GET", ["accounts"]) => {
                let mut state = exchange.state.lock().unwrap();
                let balances = state.balances_of(&account, now);
                let locked = state.locked_of(&account);
                let rows: Vec<Value> = balances
                    .iter()
                    .map(|(currency, total)| {
                        let held = locked.get(currency).copied().unwrap_or_default();
                        json!({
                            "uuid": format!("a11c0000-0000-4000-8000-{:012x}", currency.bytes().fold(0u64, |h, b| h * 31 + u64::from(b)) & 0xffff_ffff_ffff),
                            "name": format!("{currency} Wallet"),
                            "currency": currency,
                            "available_balance": {"value": fixed(*total - held), "currency": currency},
                            "default": true,
                            "active": true,
                            "created_at": time(0),
                            "updated_at": time(now),
                            "deleted_at": null,
                            "type": if currency == "USD" { "ACCOUNT_TYPE_FIAT" } else { "ACCOUNT_TYPE_CRYPTO" },
                            "ready": true,
                            "hold": {"value": fixed(held), "currency": currency},
                            "retail_portfolio_id": "7d3c2f10-0000-4000-8000-000000000001",
                            "platform": "ACCOUNT_PLATFORM_CONSUMER",
                        })
                    })
                    .collect();
                let (rows, next) = page(rows, &params, 49);
                let size = rows.len();
                Answer::json(
                    200,
                    json!({"accounts": rows, "has_next": next.is_some(), "cursor": next.unwrap_or_default(), "size": size}),
                )
            }
            ("GET", ["products", product]) => product_answer(exchange, product),
            ("POST", ["orders"]) => self.create(exchange, &account, call, now),
            ("POST", ["orders", "batch_cancel"]) => {
                let body: Value = serde_json::from_slice(&call.body).unwrap_or_default();
                let Some(ids) = body["order_ids"].as_array() else {
                    return invalid("order_ids is required");
                };
                let mut state = exchange.state.lock().unwrap();
                let results: Vec<Value> = ids
                    .iter()
                    .map(|id| {
                        let text = id.as_str().unwrap_or_default();
                        let cancelled = order_number(text)
                            .map(|number| state.cancel(&account, None, Some(number), now).is_ok())
                            .unwrap_or(false);
                        json!({
                            "success": cancelled,
                            "failure_reason": if cancelled { "UNKNOWN_CANCEL_FAILURE_REASON" } else { "UNKNOWN_CANCEL_ORDER" },
                            "order_id": text,
                        })
                    })
                    .collect();
                Answer::json(200, json!({"results": results}))
            }
            ("GET", ["orders", "historical", "batch"]) => {
                let mut state = exchange.state.lock().unwrap();
                state.advance(now);
                let ids = params_of(&params, "order_ids");
                let products = params_of(&params, "product_ids");
                let statuses = params_of(&params, "order_status");
                let start = param(&params, "start_date").map(parse_time);
                let end = param(&params, "end_date").map(parse_time);
                if matches!(start, Some(None)) || matches!(end, Some(None)) {
                    return invalid("start_date and end_date must be RFC 3339 times");
                }
                let (start, end) = (start.flatten(), end.flatten());
                let rows: Vec<Value> = state
                    .orders
                    .iter()
                    .rev()
                    .filter(|o| o.account == account)
                    .filter(|o| ids.is_empty() || ids.contains(&order_uuid(o.id).as_str()))
                    .filter(|o| {
                        products.is_empty()
                            || products.contains(&format!("{}-{}", o.base, o.quote).as_str())
                    })
                    .filter(|o| statuses.is_empty() || statuses.contains(&status_name(o.status)))
                    .filter(|o| start.is_none_or(|s| o.created_at >= s))
                    .filter(|o| end.is_none_or(|e| o.created_at <= e))
                    .map(|o| order_json(o, &state.trades))
                    .collect();
                let (rows, next) = page(rows, &params, 100);
                Answer::json(
                    200,
                    json!({"orders": rows, "sequence": "0", "has_next": next.is_some(), "cursor": next.unwrap_or_default()}),
                )
            }
            ("GET", ["orders", "historical", "fills"]) => {
                let mut state = exchange.state.lock().unwrap();
                let ids = params_of(&params, "order_ids");
                let products = params_of(&params, "product_ids");
                let start = param(&params, "start_sequence_timestamp").map(parse_time);
                let end = param(&params, "end_sequence_timestamp").map(parse_time);
                if matches!(start, Some(None)) || matches!(end, Some(None)) {
                    return invalid(
                        "start_sequence_timestamp and end_sequence_timestamp must be RFC 3339 times",
                    );
                }
                let (start, end) = (start.flatten(), end.flatten());
                let mut trades = state.trades_of(&account, now);
                // Newest first, as Coinbase lists them.
                trades.reverse();
                let rows: Vec<Value> = trades
                    .iter()
                    .filter(|t| ids.is_empty() || ids.contains(&order_uuid(t.order_id).as_str()))
                    .filter(|t| {
                        products.is_empty()
                            || products.contains(&format!("{}-{}", t.base, t.quote).as_str())
                    })
                    .filter(|t| start.is_none_or(|s| t.at >= s))
                    .filter(|t| end.is_none_or(|e| t.at <= e))
                    .map(fill_json)
                    .collect();
                let (rows, next) = page(rows, &params, 100);
                Answer::json(
                    200,
                    json!({"fills": rows, "cursor": next.unwrap_or_default()}),
                )
            }
            ("GET", ["orders", "historical", id]) => {
                let mut state = exchange.state.lock().unwrap();
                let found = order_number(id)
                    .ok_or(Refusal::UnknownOrder)
                    .and_then(|number| state.find(&account, None, Some(number), now));
                match found {
                    Ok(order) => {
                        Answer::json(200, json!({"order": order_json(&order, &state.trades)}))
                    }
                    Err(_) => error(404, "NOT_FOUND", "order with this orderID was not found"),
                }
            }
            _ => error(404, "NOT_FOUND", "Not Found"),
        }
    }

    fn candles(
        &self,
        exchange: &Exchange,
        product: &str,
        params: &[(String, String)],
        now: i64,
    ) -> Answer {
        let seconds = match param(params, "granularity") {
            Some("ONE_MINUTE") => 60,
            Some("FIVE_MINUTE") => 300,
            Some("FIFTEEN_MINUTE") => 900,
            Some("THIRTY_MINUTE") => 1_800,
            Some("ONE_HOUR") => 3_600,
            Some("TWO_HOUR") => 7_200,
            Some("FOUR_HOUR") => 14_400,
            Some("SIX_HOUR") => 21_600,
            Some("ONE_DAY") => 86_400,
            _ => return invalid("granularity is required"),
        };
        let number = |name: &str| param(params, name).and_then(|v| v.parse::<i64>().ok());
        let (Some(start), Some(end)) = (number("start"), number("end")) else {
            return invalid("start and end are required, in UNIX seconds");
        };
        let wanted = (end - start) / seconds;
        if wanted > 350 || number("limit").is_some_and(|l| l > 350) {
            return invalid("number of candles requested should be less than or equal to 350");
        }
        let limit = number("limit").unwrap_or(350).min(wanted.max(0)) as usize;
        let state = exchange.state.lock().unwrap();
        let Some((base, quote)) = pair_of(&state, product) else {
            return error(404, "NOT_FOUND", "ProductID is invalid");
        };
        let end_ms = (end * 1_000).min(now + seconds * 1_000);
        let mut candles = state
            .candles(&base, &quote, seconds * 1_000, limit, end_ms)
            .unwrap_or_default();
        candles.reverse();
        Answer::json(
            200,
            json!({"candles": candles.into_iter().map(|(start, [o, h, l, c, v])| json!({
                "start": (start / 1_000).to_string(),
                "low": fixed(l), "high": fixed(h), "open": fixed(o), "close": fixed(c), "volume": fixed(v),
            })).collect::<Vec<_>>()}),
        )
    }

    fn create(&self, exchange: &Exchange, account: &str, call: &Call, now: i64) -> Answer {
        let Ok(body) = serde_json::from_slice::<Value>(&call.body) else {
            return invalid("the body must be JSON");
        };
        let Some(client_order_id) = body["client_order_id"].as_str().filter(|c| !c.is_empty())
        else {
            return invalid("client_order_id is required");
        };
        let Some(product) = body["product_id"].as_str() else {
            return invalid("product_id is required");
        };
        let side = match body["side"].as_str() {
            Some("BUY") => Side::Buy,
            Some("SELL") => Side::Sell,
            _ => {
                return order_failure(
                    "INVALID_SIDE",
                    "Invalid side",
                    "UNKNOWN_PREVIEW_FAILURE_REASON",
                );
            }
        };
        let configuration = &body["order_configuration"];
        let decimal = |value: &Value| value.as_str().and_then(|v| v.parse::<Decimal>().ok());
        let (quantity, limit) = if let Some(market) = configuration.get("market_market_ioc") {
            match decimal(&market["base_size"]) {
                Some(size) => (size, None),
                None => {
                    return order_failure(
                        "UNSUPPORTED_ORDER_CONFIGURATION",
                        "market orders here are sized in the base currency",
                        "UNKNOWN_PREVIEW_FAILURE_REASON",
                    );
                }
            }
        } else if let Some(gtc) = configuration.get("limit_limit_gtc") {
            match (decimal(&gtc["base_size"]), decimal(&gtc["limit_price"])) {
                (Some(size), Some(price)) => (size, Some(price)),
                _ => return invalid("limit_limit_gtc needs base_size and limit_price"),
            }
        } else {
            return order_failure(
                "UNSUPPORTED_ORDER_CONFIGURATION",
                "Unsupported order configuration",
                "UNKNOWN_PREVIEW_FAILURE_REASON",
            );
        };
        let placed = {
            let mut state = exchange.state.lock().unwrap();
            // The same client order id again creates nothing: the order it named is answered.
            if let Some(existing) = state
                .orders
                .iter()
                .find(|o| o.account == account && o.client_order_id == client_order_id)
            {
                Ok(existing.clone())
            } else {
                let Some((base, quote)) = pair_of(&state, product) else {
                    return refusal(Refusal::UnknownInstrument);
                };
                state.place(
                    account,
                    client_order_id,
                    &base,
                    &quote,
                    side,
                    quantity,
                    limit,
                    now,
                )
            }
        };
        match placed {
            Err(refused) => refusal(refused),
            Ok(order) => Answer::json(
                200,
                json!({
                    "success": true,
                    "success_response": {
                        "order_id": order_uuid(order.id),
                        "product_id": product,
                        "side": side_name(order.side),
                        "client_order_id": order.client_order_id,
                    },
                    "order_configuration": configuration,
                }),
            )
            .delayed(exchange.take_stall()),
        }
    }
}

impl Face for Coinbase {
    fn answer(&self, exchange: &Exchange, call: &Call) -> Answer {
        // Private endpoints are limited per key, public ones per caller.
        let client = Self::claimed_key(call).unwrap_or_else(|| "public".into());
        match exchange.admit(&client) {
            super::Admission::Admitted(_) => self.route(exchange, call),
            super::Admission::Throttled(_) | super::Admission::Banned(_) => {
                error(429, "RATE_LIMIT_EXCEEDED", "Too many requests")
            }
        }
    }

    fn trade_id(&self, trade: &Trade) -> String {
        trade_uuid(trade.id)
    }
}

/// The CDP API key of the simulator's funded account: its name, its private key (what the user
/// connects with) and its public key (what Coinbase keeps).
pub const KEY_NAME: &str = "organizations/3f1e9a52-0000-4000-8000-000000000001/apiKeys/8a7b6c5d-0000-4000-8000-000000000002";
const PRIVATE_KEY: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIPKjbYETx6cCUfb7j9WLdY0Z3C2OTqVFU7YJ/UKEGw7+oAoGCCqGSM49
AwEHoUQDQgAErA6eYej0yTOLWRHsUWH9iu1Z97tknvY79OhmyX3dhB10T8dg/kEV
Xiju4Z5w5FucEqwr3wAOR5kSWze2X8rIAA==
-----END EC PRIVATE KEY-----
";
/// The public key as Coinbase keeps it: the uncompressed SEC1 point, in hex.
const PUBLIC_KEY: &str = "04ac0e9e61e8f4c9338b5911ec5161fd8aed59f7bb649ef63bf4e866c97ddd841d744fc760fe41155e28eee19e70e45b9c12ac2bdf000e4799125b37b65fcac800";
/// A well-formed private key that is not the key's: Coinbase refuses what it signs.
const OTHER_PRIVATE_KEY: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEILeXoUZRKiti+SxXQhwB//GsTrq8SkMfhYgcibIA0vkgoAoGCCqGSM49
AwEHoUQDQgAEp+Q2zE60DhkAP1yPRjfMy80HZQxRdyVcN54V6E++i/PCYQ2rBng2
bDdXDCEAFNHQpsiWvTFuXHduEBiCgWQI9w==
-----END EC PRIVATE KEY-----
";

/// Coinbase spot against USD, fees in USD.
pub fn case() -> super::VenueCase {
    let exchange = Exchange::standard("USD", KEY_NAME, PUBLIC_KEY);
    super::VenueCase {
        broker: "coinbase",
        symbols: ["BTC-USD", "ETH-USD"],
        exchange,
        face: std::sync::Arc::new(Coinbase::default()),
        account: "main",
        connect: json!({"broker": "coinbase", "api_key": KEY_NAME, "api_secret": PRIVATE_KEY}),
        connect_bad: json!({"broker": "coinbase", "api_key": KEY_NAME, "api_secret": OTHER_PRIVATE_KEY}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};

    fn call(method: &str, path: &str, token: &str) -> Call {
        Call {
            method: method.into(),
            path: path.into(),
            query: String::new(),
            headers: vec![
                ("Host".into(), "127.0.0.1:9".into()),
                ("Authorization".into(), format!("Bearer {token}")),
            ],
            body: Vec::new(),
        }
    }

    /// The private keys as PKCS#8 DER (what the signing side of the JWT library reads).
    const PRIVATE_PKCS8: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8qNtgRPHpwJR9vuP1Yt1jRncLY5OpUVTtgn9QoQbDv6hRANCAASsDp5h6PTJM4tZEexRYf2K7Vn3u2Se9jv06GbJfd2EHXRPx2D+QRVeKO7hnnDkW5wSrCvfAA5HmRJbN7ZfysgA";
    const OTHER_PKCS8: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgt5ehRlEqK2L5LFdCHAH/8axOurxKQx+FiByJsgDS+SChRANCAASn5DbMTrQOGQA/XI9GN8zLzQdlDFF3JVw3nhXoT76L88JhDasGeDZsN1cMIQAU0dCmyJa9MW5cd24QGIKBZAj3";

    fn token(private: &str, uri: &str, nonce: &str, nbf: i64) -> String {
        use base64::Engine;
        let der = base64::engine::general_purpose::STANDARD
            .decode(private)
            .unwrap();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(KEY_NAME.into());
        header.nonce = Some(nonce.into());
        let claims =
            json!({"sub": KEY_NAME, "iss": "cdp", "nbf": nbf, "exp": nbf + 120, "uri": uri});
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&der)).unwrap()
    }

    /// Tokens are checked as Coinbase checks them: signature, key, uri, time and nonce.
    #[test]
    fn checks_tokens_as_coinbase_does() {
        let case = case();
        let face = Coinbase::default();
        let path = "/api/v3/brokerage/accounts";
        let uri = format!("GET 127.0.0.1:9{path}");
        let now = now_ms() / 1_000;
        let good = token(PRIVATE_PKCS8, &uri, "n1", now);
        assert!(
            face.authenticate(&case.exchange, &call("GET", path, &good))
                .is_ok()
        );
        // The same token (its nonce) again.
        assert!(
            face.authenticate(&case.exchange, &call("GET", path, &good))
                .is_err()
        );
        for bad in [
            token(OTHER_PKCS8, &uri, "n2", now),
            token(
                PRIVATE_PKCS8,
                "GET api.coinbase.com/api/v3/brokerage/accounts",
                "n3",
                now,
            ),
            token(PRIVATE_PKCS8, &format!("POST 127.0.0.1:9{path}"), "n4", now),
            token(PRIVATE_PKCS8, &uri, "n5", now - 600),
            token(PRIVATE_PKCS8, &uri, "n6", now + 600),
        ] {
            let refused = face.authenticate(&case.exchange, &call("GET", path, &bad));
            assert_eq!(refused.err().map(|a| a.status), Some(401));
        }
        assert_eq!(order_number(&order_uuid(1_042)), Some(1_042));
        assert_eq!(order_number("nope"), None);
    }
}
