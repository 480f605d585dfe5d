//! The broker world's operations against Alpaca's Trading API.
//!
//! - Orders are `market` or `limit`, good till cancelled for crypto and for the day for stocks
//!   (Alpaca takes fractional stock orders for the day only), with the host's client order id
//!   as `client_order_id`. Each id sent is first written to the account's store: an id seen
//!   before is answered with that order's report, never placed again (Alpaca also refuses a
//!   client order id it has seen).
//! - An order's fills are its `FILL` activities; `fills-since` pages through them from a time.
//! - Positions are Alpaca's positions (stocks and coins alike); balances are the account's
//!   cash and what each position holds.

use exchange_kit::numbers::{self, field};
use exchange_kit::request::Http;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tradehost_sdk::broker::{AccountCheck, BrokerPosition};
use tradehost_sdk::store::Store;
use tradehost_sdk::types::{
    AssetBalance, BrokerError, Candle, Fill, Instrument, OrderKind, OrderQuery, OrderReport,
    OrderRequest, OrderStatus, Side,
};

use crate::client::{Action, Client};
use crate::time;
use crate::wire::{self, Execution, VenueOrder};

/// Most activities Alpaca lists per page.
const ACTIVITY_PAGE: usize = 100;
/// Pages read per call (the broker world's 1000 fills).
const MAX_PAGES: usize = 10;
/// Most orders Alpaca lists per request.
const ORDERS_LIMIT: u32 = 500;

fn marker_key(client_order_id: &str) -> String {
    format!("order/{client_order_id}")
}

/// A decimal query or body value as Alpaca reads it.
fn text(value: Decimal) -> String {
    numbers::text(value)
}

pub struct Alpaca<'a, H: Http, S: Store> {
    pub client: Client<'a, H, S>,
}

impl<H: Http, S: Store> Alpaca<'_, H, S> {
    fn coins(&self) -> &[String] {
        &self.client.settings.crypto_assets
    }

    fn account(&mut self) -> Result<Value, BrokerError> {
        self.client
            .trading("GET", "/v2/account", &[], None, Action::Read)
    }

    pub fn validate(&mut self) -> Result<AccountCheck, BrokerError> {
        let account = self.account()?;
        let mut permissions = vec!["read".to_string()];
        let blocked = account["trading_blocked"] == true || account["account_blocked"] == true;
        if account["status"] == "ACTIVE" && !blocked {
            permissions.push("trade".into());
        }
        if account["crypto_status"] == "ACTIVE" && !blocked {
            permissions.push("crypto".into());
        }
        Ok(AccountCheck { permissions })
    }

    pub fn balances(&mut self) -> Result<Vec<AssetBalance>, BrokerError> {
        let account = self.account()?;
        let currency = account["currency"].as_str().unwrap_or("USD").to_string();
        let cash = field(&account["cash"]).unwrap_or_default();
        // Cash not held for open orders: what a cash account may still spend.
        let spendable = field(&account["non_marginable_buying_power"])
            .or_else(|| field(&account["buying_power"]))
            .unwrap_or(cash);
        let free = spendable.min(cash).max(Decimal::ZERO);
        let mut balances = vec![AssetBalance {
            asset: currency,
            free: text(free),
            locked: text((cash - free).max(Decimal::ZERO)),
        }];
        for position in self.open_positions()? {
            let quantity = field(&position["qty"]).unwrap_or_default().abs();
            let available = field(&position["qty_available"])
                .map(|q| q.abs().min(quantity))
                .unwrap_or(quantity);
            let Some(symbol) = position["symbol"]
                .as_str()
                .and_then(|s| wire::tradehost_symbol(s, self.coins()))
            else {
                continue;
            };
            let asset = symbol.split('-').next().unwrap_or_default().to_string();
            if quantity > Decimal::ZERO && position["side"] != "short" {
                balances.push(AssetBalance {
                    asset,
                    free: text(available),
                    locked: text(quantity - available),
                });
            }
        }
        Ok(balances)
    }

    fn open_positions(&mut self) -> Result<Vec<Value>, BrokerError> {
        let rows = self
            .client
            .trading("GET", "/v2/positions", &[], None, Action::Read)?;
        Ok(rows.as_array().cloned().unwrap_or_default())
    }

    pub fn positions(&mut self) -> Result<Vec<BrokerPosition>, BrokerError> {
        let rows = self.open_positions()?;
        Ok(rows
            .iter()
            .filter_map(|row| {
                let symbol = wire::tradehost_symbol(row["symbol"].as_str()?, self.coins())?;
                let quantity = field(&row["qty"])?;
                let short = row["side"] == "short" || quantity < Decimal::ZERO;
                (!quantity.is_zero()).then(|| BrokerPosition {
                    symbol,
                    side: if short { Side::Short } else { Side::Long },
                    quantity: text(quantity.abs()),
                    entry_price: field(&row["avg_entry_price"]).map(text),
                })
            })
            .collect())
    }

    pub fn instrument(&mut self, symbol: &str) -> Result<Instrument, BrokerError> {
        let venue = wire::venue_symbol(symbol, self.coins())?;
        let path = format!("/v2/assets/{}", exchange_kit::query::encode(&venue.name));
        let asset = self.client.trading("GET", &path, &[], None, Action::Read)?;
        let class_matches = (asset["class"] == "crypto") == venue.crypto;
        if !class_matches {
            return Err(BrokerError::NotFound(format!(
                "Alpaca's {} is not the {} {symbol}",
                venue.name,
                if venue.crypto { "crypto pair" } else { "stock" }
            )));
        }
        wire::instrument(symbol, &asset)
    }

    pub fn candles(
        &mut self,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let venue = wire::venue_symbol(symbol, self.coins())?;
        let Some((timeframe, length_ms)) = wire::timeframe(interval) else {
            return Err(BrokerError::Invalid(format!(
                "Alpaca has no {interval} bars"
            )));
        };
        let limit = limit.clamp(1, 1000);
        // From far enough back that closed markets (nights, weekends) still leave `limit` bars;
        // the newest first, so the limit keeps the last ones.
        let span = (i64::from(limit) * length_ms * 3).max(7 * 86_400_000);
        let mut params = vec![
            ("timeframe", timeframe.to_string()),
            ("start", time::format_seconds(end_ms - span)),
            ("end", time::format_seconds(end_ms)),
            ("limit", limit.to_string()),
            ("sort", "desc".to_string()),
        ];
        let bars = if venue.crypto {
            params.insert(0, ("symbols", venue.name.clone()));
            let answer = self.client.data("/v1beta3/crypto/us/bars", &params)?;
            answer["bars"][venue.name.as_str()].clone()
        } else {
            if self.client.settings.data_key.is_empty() {
                return Err(BrokerError::Unsupported(
                    "stock candles need the operator's market data key (data_key_id)".into(),
                ));
            }
            params.push(("feed", self.client.settings.stock_feed.clone()));
            params.push(("adjustment", "raw".into()));
            let path = format!("/v2/stocks/{}/bars", venue.name);
            self.client.data(&path, &params)?["bars"].clone()
        };
        let mut candles = bars
            .as_array()
            .map(|rows| rows.iter().map(wire::candle).collect::<Result<Vec<_>, _>>())
            .transpose()?
            .unwrap_or_default();
        candles.retain(|c| c.timestamp_ms <= end_ms);
        candles.sort_by_key(|c| c.timestamp_ms);
        candles.dedup_by_key(|c| c.timestamp_ms);
        Ok(candles)
    }

    pub fn place(&mut self, order: &OrderRequest) -> Result<OrderReport, BrokerError> {
        let venue = wire::venue_symbol(&order.symbol, self.coins())?;
        let quantity = numbers::parse(&order.quantity)
            .filter(|q| *q > Decimal::ZERO)
            .ok_or_else(|| BrokerError::Invalid(format!("quantity {}", order.quantity)))?;
        let query = OrderQuery {
            symbol: order.symbol.clone(),
            client_order_id: Some(order.client_order_id.clone()),
            order_id: None,
        };
        let marker = marker_key(&order.client_order_id);
        if let Some(store) = self.client.store.as_deref()
            && store.get(&marker).is_some()
        {
            return match self.get(&query) {
                Err(BrokerError::NotFound(_)) => Err(BrokerError::Rejected(format!(
                    "client order id {} was sent before",
                    order.client_order_id
                ))),
                answer => answer,
            };
        }
        let mut body = json!({
            "symbol": venue.name,
            "qty": text(quantity),
            "side": wire::side_name(order.side),
            "time_in_force": if venue.crypto { "gtc" } else { "day" },
            "client_order_id": order.client_order_id,
        });
        match order.kind {
            OrderKind::Market => body["type"] = json!("market"),
            OrderKind::Limit => {
                let price = order
                    .limit_price
                    .as_deref()
                    .and_then(numbers::parse)
                    .filter(|p| *p > Decimal::ZERO)
                    .ok_or_else(|| {
                        BrokerError::Invalid("a limit order needs a limit price".into())
                    })?;
                body["type"] = json!("limit");
                body["limit_price"] = json!(text(price));
            }
        }
        if let Some(store) = self.client.store.as_deref_mut() {
            store
                .write(vec![(marker, Some(self.client.now_ms.to_string()))])
                .map_err(|err| {
                    BrokerError::Rejected(format!(
                        "the order could not be recorded before sending: {err}"
                    ))
                })?;
        }
        let answer =
            match self
                .client
                .trading("POST", "/v2/orders", &[], Some(&body), Action::Place)
            {
                Ok(answer) => answer,
                // Alpaca has an order with this id already: that one is the answer.
                Err(BrokerError::Invalid(message))
                    if message.contains("client_order_id must be unique") =>
                {
                    return self.get(&query);
                }
                Err(err) => return Err(err),
            };
        let placed = VenueOrder::parse(&answer, self.coins())?;
        // The order is placed: its fills are asked for, but not knowing them yet is no error
        // (the report counts them as filled, and the host follows the order up).
        let executions = if placed.filled > Decimal::ZERO {
            self.executions_of(&placed).unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(self.report(&placed, &executions, None))
    }

    fn report(
        &self,
        order: &VenueOrder,
        executions: &[Execution],
        reason: Option<String>,
    ) -> OrderReport {
        order.report(executions, self.client.settings.crypto_fee, reason)
    }

    /// `FILL` activities from `after_ms` (whole seconds, a second early), oldest first, in
    /// pages; `keep` picks the wanted ones and says when enough were found.
    fn fill_activities(
        &mut self,
        after_ms: i64,
        mut keep: impl FnMut(&Execution) -> (bool, bool),
    ) -> Result<Vec<Execution>, BrokerError> {
        let mut found: Vec<Execution> = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = vec![
                ("after", time::format_seconds(after_ms - 1_000)),
                ("direction", "asc".to_string()),
                ("page_size", ACTIVITY_PAGE.to_string()),
            ];
            if let Some(token) = &token {
                params.push(("page_token", token.clone()));
            }
            let rows = self.client.trading(
                "GET",
                "/v2/account/activities/FILL",
                &params,
                None,
                Action::Query,
            )?;
            let rows = rows.as_array().cloned().unwrap_or_default();
            let mut enough = false;
            for row in &rows {
                let execution = Execution::parse(row, self.coins())?;
                let (wanted, done) = keep(&execution);
                if wanted && !found.iter().any(|e| e.id == execution.id) {
                    found.push(execution);
                }
                enough |= done;
            }
            token = rows
                .last()
                .and_then(|row| row["id"].as_str())
                .map(String::from);
            if enough || rows.len() < ACTIVITY_PAGE || token.is_none() {
                break;
            }
        }
        Ok(found)
    }

    /// The fills of one order.
    fn executions_of(&mut self, order: &VenueOrder) -> Result<Vec<Execution>, BrokerError> {
        let (id, filled) = (order.id.clone(), order.filled);
        let mut listed = Decimal::ZERO;
        self.fill_activities(order.submitted_ms, |execution| {
            let ours = execution.order_id == id;
            if ours {
                listed += execution.quantity;
            }
            (ours, listed >= filled)
        })
    }

    fn with_executions(
        &mut self,
        order: VenueOrder,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let executions = if order.filled > Decimal::ZERO {
            self.executions_of(&order)?
        } else {
            Vec::new()
        };
        Ok(self.report(&order, &executions, reason))
    }

    fn fetch(&mut self, query: &OrderQuery) -> Result<VenueOrder, BrokerError> {
        let answer = match (&query.order_id, &query.client_order_id) {
            (Some(id), _) => self.client.trading(
                "GET",
                &format!("/v2/orders/{}", exchange_kit::query::encode(id)),
                &[],
                None,
                Action::Query,
            )?,
            (None, Some(id)) => self.client.trading(
                "GET",
                "/v2/orders:by_client_order_id",
                &[("client_order_id", id.clone())],
                None,
                Action::Query,
            )?,
            (None, None) => {
                return Err(BrokerError::Invalid(
                    "an order id or client order id is required".into(),
                ));
            }
        };
        VenueOrder::parse(&answer, self.coins())
    }

    pub fn get(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let order = self.fetch(query)?;
        self.with_executions(order, None)
    }

    pub fn open_orders(&mut self, symbol: Option<&str>) -> Result<Vec<OrderReport>, BrokerError> {
        let mut params = vec![
            ("status", "open".to_string()),
            ("limit", ORDERS_LIMIT.to_string()),
            ("direction", "asc".to_string()),
        ];
        if let Some(symbol) = symbol {
            params.push(("symbols", wire::venue_symbol(symbol, self.coins())?.name));
        }
        let rows = self
            .client
            .trading("GET", "/v2/orders", &params, None, Action::Read)?;
        let mut reports = Vec::new();
        for row in rows.as_array().cloned().unwrap_or_default() {
            let order = VenueOrder::parse(&row, self.coins())?;
            if symbol.is_some_and(|s| s != order.symbol) {
                continue;
            }
            reports.push(self.with_executions(order, None)?);
        }
        Ok(reports)
    }

    pub fn fills_since(
        &mut self,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Vec<Fill>, BrokerError> {
        if let Some(symbol) = symbol {
            wire::venue_symbol(symbol, self.coins())?;
        }
        let executions = self.fill_activities(since_ms.max(0), |execution| {
            let wanted =
                execution.time_ms >= since_ms && symbol.is_none_or(|s| s == execution.symbol);
            (wanted, false)
        })?;
        let (coins, rate) = (
            self.client.settings.crypto_assets.clone(),
            self.client.settings.crypto_fee,
        );
        let mut fills: Vec<Fill> = executions
            .iter()
            .map(|execution| {
                let crypto = wire::venue_symbol(&execution.symbol, &coins)
                    .map(|v| v.crypto)
                    .unwrap_or(false);
                execution.to_fill("", crypto, rate)
            })
            .collect();
        fills.sort_by_key(|f| f.timestamp_ms);
        Ok(fills)
    }

    pub fn cancel(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let order = self.fetch(query)?;
        if !matches!(
            order.status,
            OrderStatus::Open | OrderStatus::PartiallyFilled
        ) {
            return self.with_executions(order, None);
        }
        let path = format!("/v2/orders/{}", exchange_kit::query::encode(&order.id));
        match self
            .client
            .trading("DELETE", &path, &[], None, Action::Cancel)
        {
            // Accepted (204): the order as it stands now.
            Ok(_) => {}
            // No longer cancelable or known: its report as it ended.
            Err(BrokerError::Invalid(_) | BrokerError::NotFound(_)) => {}
            Err(err) => return Err(err),
        }
        let by_id = OrderQuery {
            symbol: query.symbol.clone(),
            client_order_id: None,
            order_id: Some(order.id.clone()),
        };
        let now = self.fetch(&by_id)?;
        let reason = (now.status == OrderStatus::Cancelled).then(|| "cancelled on request".into());
        self.with_executions(now, reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Settings;
    use exchange_kit::request::{Scripted, header};
    use std::collections::BTreeMap;
    use tradehost_sdk::broker::tradehost::plugin::http::{HttpError, Response};
    use tradehost_sdk::types::OrderSide;

    fn settings() -> Settings {
        Settings::new(
            &|key: &str| (key == "base_url").then(|| "https://alpaca.test".to_string()),
            &[],
        )
        .unwrap()
    }

    fn alpaca<'a>(
        http: &'a mut Scripted,
        store: &'a mut BTreeMap<String, String>,
        settings: &'a Settings,
        now_ms: i64,
    ) -> Alpaca<'a, Scripted, BTreeMap<String, String>> {
        Alpaca {
            client: Client {
                http,
                store: Some(store),
                settings,
                key_id: "AKID",
                secret: "s3cret",
                now_ms,
                paused_until: None,
            },
        }
    }

    fn order(id: &str) -> OrderRequest {
        OrderRequest {
            client_order_id: id.into(),
            symbol: "BTC-USD".into(),
            side: OrderSide::Buy,
            quantity: "0.01".into(),
            kind: OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        }
    }

    fn order_answer(id: &str, status: &str, filled: &str) -> Value {
        json!({
            "id": "904837e3-3b76-47ec-b432-046db621571b", "client_order_id": id,
            "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:01Z",
            "submitted_at": "2024-01-01T00:00:00Z", "symbol": "BTC/USD", "asset_class": "crypto",
            "qty": "0.01", "filled_qty": filled, "type": "market", "order_type": "market",
            "side": "buy", "time_in_force": "gtc", "status": status
        })
    }

    fn fill_activity(id: &str, qty: &str) -> Value {
        json!({
            "activity_type": "FILL", "id": id, "transaction_time": "2024-01-01T00:00:00.500Z",
            "type": "fill", "price": "60000", "qty": qty, "side": "buy", "symbol": "BTC/USD",
            "leaves_qty": "0", "order_id": "904837e3-3b76-47ec-b432-046db621571b",
            "cum_qty": qty, "order_status": "filled"
        })
    }

    #[test]
    fn an_order_is_sent_once_with_the_keys_and_reported_net_of_the_crypto_fee() {
        let settings = settings();
        let (mut http, mut store) = (Scripted::default(), BTreeMap::new());
        http.answer(200, order_answer("c-1", "filled", "0.01"));
        http.answer(200, json!([fill_activity("20240101000000500::a", "0.01")]));
        let report = alpaca(&mut http, &mut store, &settings, 1_704_067_200_000)
            .place(&order("c-1"))
            .unwrap();
        assert_eq!(report.status, OrderStatus::Filled);
        assert_eq!(
            (
                report.filled_quantity.as_str(),
                report.fills[0].quantity.as_str(),
                report.fills[0].fee.as_str()
            ),
            ("0.009975", "0.009975", "1.5")
        );
        let sent = &http.sent[0];
        assert_eq!(
            (sent.method.as_str(), sent.url.as_str()),
            ("POST", "https://alpaca.test/v2/orders")
        );
        let key = |name: &str| {
            sent.headers
                .iter()
                .find(|h| h.name == name)
                .map(|h| h.value.clone())
        };
        assert_eq!(key("APCA-API-KEY-ID").as_deref(), Some("AKID"));
        assert_eq!(key("APCA-API-SECRET-KEY").as_deref(), Some("s3cret"));
        let body: Value = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(
            body,
            json!({"symbol": "BTC/USD", "qty": "0.01", "side": "buy", "type": "market",
                   "time_in_force": "gtc", "client_order_id": "c-1"})
        );
        assert_eq!(
            http.sent[1].url,
            "https://alpaca.test/v2/account/activities/FILL?after=2023-12-31T23%3A59%3A59Z&direction=asc&page_size=100"
        );

        // The same client order id again: asked about, not placed.
        http.answer(200, order_answer("c-1", "filled", "0.01"));
        http.answer(200, json!([fill_activity("20240101000000500::a", "0.01")]));
        let again = alpaca(&mut http, &mut store, &settings, 1_704_067_300_000)
            .place(&order("c-1"))
            .unwrap();
        assert_eq!(again.fills, report.fills);
        assert_eq!(
            http.sent[2].url,
            "https://alpaca.test/v2/orders:by_client_order_id?client_order_id=c-1"
        );
        assert_eq!(http.sent.iter().filter(|r| r.method == "POST").count(), 1);
    }

    #[test]
    fn a_stock_limit_order_is_for_the_day_and_refusals_keep_alpacas_reason() {
        let settings = settings();
        let (mut http, mut store) = (Scripted::default(), BTreeMap::new());
        http.answer(
            422,
            json!({"code": 42210000, "message": "Market is closed."}),
        );
        let limit = OrderRequest {
            symbol: "AAPL-USD".into(),
            kind: OrderKind::Limit,
            limit_price: Some("187.5".into()),
            quantity: "2".into(),
            ..order("c-2")
        };
        let refused = alpaca(&mut http, &mut store, &settings, 1).place(&limit);
        assert_eq!(
            refused,
            Err(BrokerError::Rejected("Market is closed. (42210000)".into()))
        );
        let body: Value = serde_json::from_slice(&http.sent[0].body).unwrap();
        assert_eq!(
            (
                &body["symbol"],
                &body["time_in_force"],
                &body["limit_price"]
            ),
            (&json!("AAPL"), &json!("day"), &json!("187.5"))
        );
        http.answer(
            403,
            json!({"code": 40310000, "message": "insufficient buying power"}),
        );
        assert!(matches!(
            alpaca(&mut http, &mut store, &settings, 2).place(&order("c-3")),
            Err(BrokerError::InsufficientFunds(_))
        ));
        http.answer(
            401,
            json!({"code": 40110000, "message": "request is not authorized"}),
        );
        assert!(matches!(
            alpaca(&mut http, &mut store, &settings, 3).validate(),
            Err(BrokerError::Auth(_))
        ));
    }

    #[test]
    fn a_lost_answer_is_an_unknown_outcome_and_rate_limits_are_waited_out() {
        let settings = settings();
        let (mut http, mut store) = (Scripted::default(), BTreeMap::new());
        http.fail(HttpError::Timeout);
        assert!(matches!(
            alpaca(&mut http, &mut store, &settings, 120_000).place(&order("c-4")),
            Err(BrokerError::Timeout(_))
        ));
        // No requests left until the reset: the next call waits without sending.
        http.answers.push_back(Ok(Response {
            status: 200,
            headers: vec![
                header("X-RateLimit-Remaining", "0"),
                header("X-RateLimit-Reset", "125"),
            ],
            body: json!({"status": "ACTIVE", "currency": "USD", "cash": "10",
                         "buying_power": "10", "trading_blocked": false})
            .to_string()
            .into_bytes(),
        }));
        let check = alpaca(&mut http, &mut store, &settings, 121_000)
            .validate()
            .unwrap();
        assert!(check.permissions.contains(&"trade".to_string()));
        assert_eq!(
            alpaca(&mut http, &mut store, &settings, 122_000).balances(),
            Err(BrokerError::RateLimited(3_000))
        );
        // A 429 without Retry-After: until the reset it names.
        http.answers.push_back(Ok(Response {
            status: 429,
            headers: vec![header("X-RateLimit-Reset", "131")],
            body: b"too many requests".to_vec(),
        }));
        assert_eq!(
            alpaca(&mut http, &mut store, &settings, 130_000).positions(),
            Err(BrokerError::RateLimited(1_000))
        );
        assert_eq!(http.sent.len(), 3);
    }

    #[test]
    fn balances_positions_and_fills_since() {
        let settings = settings();
        let (mut http, mut store) = (Scripted::default(), BTreeMap::new());
        http.answer(
            200,
            json!({"currency": "USD", "cash": "1000", "buying_power": "1800",
                               "non_marginable_buying_power": "900", "status": "ACTIVE"}),
        );
        http.answer(
            200,
            json!([
                {"symbol": "AAPL", "asset_class": "us_equity", "qty": "3", "qty_available": "1",
                 "side": "long", "avg_entry_price": "180.5"},
                {"symbol": "BTCUSD", "asset_class": "crypto", "qty": "0.5", "qty_available": "0.5",
                 "side": "long", "avg_entry_price": "60000"}
            ]),
        );
        let balances = alpaca(&mut http, &mut store, &settings, 1)
            .balances()
            .unwrap();
        let of = |asset: &str| {
            let b = balances.iter().find(|b| b.asset == asset).unwrap();
            (b.free.clone(), b.locked.clone())
        };
        assert_eq!(of("USD"), ("900".into(), "100".into()));
        assert_eq!(of("AAPL"), ("1".into(), "2".into()));
        assert_eq!(of("BTC"), ("0.5".into(), "0".into()));
        http.answer(
            200,
            json!([{"symbol": "TSLA", "qty": "-2", "side": "short",
                                "avg_entry_price": "200"}]),
        );
        let positions = alpaca(&mut http, &mut store, &settings, 2)
            .positions()
            .unwrap();
        assert_eq!(
            (
                positions[0].symbol.as_str(),
                positions[0].side,
                positions[0].quantity.as_str()
            ),
            ("TSLA-USD", Side::Short, "2")
        );
        // Two pages of fills: the second asked for after the first's last activity.
        let page: Vec<Value> = (0..100)
            .map(|i| {
                json!({"activity_type": "FILL", "id": format!("20240101000000{i:03}::x"),
                       "transaction_time": "2024-01-01T00:00:01Z", "price": "10", "qty": "1",
                       "side": "sell", "symbol": "AAPL", "order_id": "o1"})
            })
            .collect();
        http.answer(200, Value::Array(page));
        http.answer(
            200,
            json!([{"activity_type": "FILL", "id": "20240101000002000::y",
            "transaction_time": "2024-01-01T00:00:02Z", "price": "60000", "qty": "0.1",
            "side": "buy", "symbol": "BTC/USD", "order_id": "o2"}]),
        );
        let fills = alpaca(&mut http, &mut store, &settings, 3)
            .fills_since(
                time::parse_ms("2024-01-01T00:00:00Z").unwrap(),
                Some("BTC-USD"),
            )
            .unwrap();
        assert_eq!(fills.len(), 1);
        assert_eq!(
            (fills[0].quantity.as_str(), fills[0].fee.as_str()),
            ("0.09975", "15")
        );
        assert!(
            http.sent
                .last()
                .unwrap()
                .url
                .ends_with("&page_token=20240101000000099%3A%3Ax")
        );
    }
}
