//! The broker world's operations against Coinbase Advanced Trade (spot).
//!
//! - Orders are `market_market_ioc` or `limit_limit_gtc`, sized in the base currency, with the
//!   host's client order id as `client_order_id`. Each id is written to the account's store
//!   before it is sent (and the venue's order id after): an id seen before is answered with that
//!   order's report, never placed again.
//! - An order whose answer was lost is found by its client order id among the account's orders
//!   of that product since shortly before it was sent.
//! - An order's fills are listed by its order id; `fills-since` lists the account's fills from a
//!   time, oldest first.
//! - Spot has no reduce-only orders: a close sells what is held, which cannot go short.
//! - Positions are the account's holdings other than the quote currency, as longs.

use std::collections::BTreeMap;

use exchange_kit::numbers::{self, field};
use exchange_kit::request::Http;
use exchange_kit::venue;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tradehost_sdk::broker::{AccountCheck, BrokerPosition};
use tradehost_sdk::store::Store;
use tradehost_sdk::types::{
    AssetBalance, BrokerError, Candle, Fill, Instrument, OrderKind, OrderQuery, OrderReport,
    OrderRequest, OrderStatus,
};

use crate::client::{Action, Client};
use crate::wire::{self, Created, VenueFill, VenueOrder};

const API: &str = "/api/v3/brokerage";
/// Rows asked for per page of orders, fills and accounts.
const PAGE: usize = 250;
/// Pages read at most in one call.
const MAX_PAGES: usize = 20;
/// Most fills `fills-since` answers.
const MAX_FILLS: usize = 1000;
/// Most candles Coinbase answers per request.
const MAX_CANDLES: u32 = 350;
/// How far before an order was sent its lost answer is looked for (clocks differ).
const SEARCH_SLACK_MS: i64 = 5 * 60_000;

fn marker_key(client_order_id: &str) -> String {
    format!("order/{client_order_id}")
}

/// What the store remembers of an order sent: when, and the venue's id once known.
#[derive(Debug, Clone, Default, PartialEq)]
struct Marker {
    sent_at: i64,
    order_id: Option<String>,
}

impl Marker {
    fn parse(text: &str) -> Marker {
        // Plain times are what the first version of a marker holds.
        if let Ok(sent_at) = text.parse::<i64>() {
            return Marker {
                sent_at,
                order_id: None,
            };
        }
        let value: Value = serde_json::from_str(text).unwrap_or_default();
        Marker {
            sent_at: value["sent_at"].as_i64().unwrap_or_default(),
            order_id: value["order_id"].as_str().map(str::to_string),
        }
    }

    fn text(&self) -> String {
        json!({"sent_at": self.sent_at, "order_id": self.order_id}).to_string()
    }
}

pub struct Coinbase<'a, H: Http, S: Store> {
    pub client: Client<'a, H, S>,
}

impl<H: Http, S: Store> Coinbase<'_, H, S> {
    pub fn validate(&mut self) -> Result<AccountCheck, BrokerError> {
        let answer = self.client.signed(
            "GET",
            &format!("{API}/key_permissions"),
            &[],
            None,
            Action::Read,
        )?;
        let mut permissions = Vec::new();
        for (flag, name) in [
            ("can_view", "read"),
            ("can_trade", "trade"),
            ("can_transfer", "withdraw"),
        ] {
            if answer[flag].as_bool().unwrap_or(false) {
                permissions.push(name.to_string());
            }
        }
        Ok(AccountCheck { permissions })
    }

    pub fn balances(&mut self) -> Result<Vec<AssetBalance>, BrokerError> {
        let mut totals: BTreeMap<String, (Decimal, Decimal)> = BTreeMap::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = vec![("limit", PAGE.to_string())];
            if let Some(cursor) = &cursor {
                params.push(("cursor", cursor.clone()));
            }
            let page = self.client.signed(
                "GET",
                &format!("{API}/accounts"),
                &params,
                None,
                Action::Read,
            )?;
            for account in page["accounts"].as_array().cloned().unwrap_or_default() {
                let Some(currency) = account["currency"].as_str() else {
                    continue;
                };
                let free = field(&account["available_balance"]["value"]).unwrap_or_default();
                let held = field(&account["hold"]["value"]).unwrap_or_default();
                let entry = totals.entry(currency.to_ascii_uppercase()).or_default();
                entry.0 += free;
                entry.1 += held;
            }
            cursor = next_cursor(&page);
            if cursor.is_none() {
                break;
            }
        }
        Ok(totals
            .into_iter()
            .filter(|(_, (free, held))| !free.is_zero() || !held.is_zero())
            .map(|(asset, (free, held))| AssetBalance {
                asset,
                free: numbers::text(free),
                locked: numbers::text(held),
            })
            .collect())
    }

    pub fn positions(&mut self) -> Result<Vec<BrokerPosition>, BrokerError> {
        let held = self.balances()?;
        Ok(venue::holdings_as_positions(
            held,
            &self.client.settings.quote_currency,
        ))
    }

    pub fn instrument(&mut self, symbol: &str) -> Result<Instrument, BrokerError> {
        let product = wire::product_id(symbol)?;
        // The public product: the same rules, without spending the account's request budget.
        let answer = self.client.public(
            &format!("{API}/market/products/{product}"),
            &[],
            Action::Read,
        )?;
        wire::instrument(symbol, &answer)
    }

    pub fn candles(
        &mut self,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let product = wire::product_id(symbol)?;
        let Some((granularity, seconds)) = wire::granularity(interval) else {
            return Err(BrokerError::Invalid(format!(
                "Coinbase has no {interval} candles"
            )));
        };
        let limit = limit.clamp(1, MAX_CANDLES);
        let end = end_ms.div_euclid(1_000);
        let start = end - i64::from(limit) * seconds;
        let answer = self.client.public(
            &format!("{API}/market/products/{product}/candles"),
            &[
                ("start", start.to_string()),
                ("end", end.to_string()),
                ("granularity", granularity.to_string()),
                ("limit", limit.to_string()),
            ],
            Action::Read,
        )?;
        let mut candles = answer["candles"]
            .as_array()
            .map(|rows| rows.iter().map(wire::candle).collect::<Result<Vec<_>, _>>())
            .transpose()?
            .unwrap_or_default();
        // Coinbase lists the newest first.
        candles.sort_by_key(|c| c.timestamp_ms);
        candles.dedup_by_key(|c| c.timestamp_ms);
        candles.retain(|c| c.timestamp_ms <= end_ms);
        let excess = candles.len().saturating_sub(limit as usize);
        candles.drain(..excess);
        Ok(candles)
    }

    fn marker(&self, client_order_id: &str) -> Option<Marker> {
        self.client
            .store
            .as_deref()
            .and_then(|store| store.get(&marker_key(client_order_id)))
            .map(|text| Marker::parse(&text))
    }

    fn remember(&mut self, client_order_id: &str, marker: &Marker) -> Result<(), String> {
        match self.client.store.as_deref_mut() {
            Some(store) => store.write(vec![(marker_key(client_order_id), Some(marker.text()))]),
            None => Ok(()),
        }
    }

    pub fn place(&mut self, order: &OrderRequest) -> Result<OrderReport, BrokerError> {
        let product = wire::product_id(&order.symbol)?;
        let quantity = numbers::parse(&order.quantity)
            .filter(|q| *q > Decimal::ZERO)
            .ok_or_else(|| BrokerError::Invalid(format!("quantity {}", order.quantity)))?;
        if order.client_order_id.is_empty() {
            return Err(BrokerError::Invalid("a client order id is required".into()));
        }
        if self.marker(&order.client_order_id).is_some() {
            let query = OrderQuery {
                symbol: order.symbol.clone(),
                client_order_id: Some(order.client_order_id.clone()),
                order_id: None,
            };
            return match self.get(&query) {
                Err(BrokerError::NotFound(_)) => Err(BrokerError::Rejected(format!(
                    "client order id {} was sent before",
                    order.client_order_id
                ))),
                answer => answer,
            };
        }
        let configuration = match order.kind {
            OrderKind::Market => {
                json!({"market_market_ioc": {"base_size": numbers::text(quantity)}})
            }
            OrderKind::Limit => {
                let price = order
                    .limit_price
                    .as_deref()
                    .and_then(numbers::parse)
                    .filter(|p| *p > Decimal::ZERO)
                    .ok_or_else(|| {
                        BrokerError::Invalid("a limit order needs a limit price".into())
                    })?;
                json!({"limit_limit_gtc": {
                    "base_size": numbers::text(quantity),
                    "limit_price": numbers::text(price),
                    "post_only": false,
                }})
            }
        };
        let body = json!({
            "client_order_id": order.client_order_id,
            "product_id": product,
            "side": wire::side_name(order.side),
            "order_configuration": configuration,
        });
        let mut marker = Marker {
            sent_at: self.client.now_ms,
            order_id: None,
        };
        self.remember(&order.client_order_id, &marker)
            .map_err(|err| {
                BrokerError::Rejected(format!(
                    "the order could not be recorded before sending: {err}"
                ))
            })?;
        let answer = self.client.signed(
            "POST",
            &format!("{API}/orders"),
            &[],
            Some(&body),
            Action::Place,
        )?;
        let order_id = match wire::created(&answer)? {
            Created::Accepted { order_id } => order_id,
            Created::Refused(err) => return Err(err),
        };
        marker.order_id = Some(order_id.clone());
        // Without it the order is still found by its client order id.
        let _ = self.remember(&order.client_order_id, &marker);
        // Coinbase acknowledges the order without saying how it stands: the host asks (asking
        // here would spend the account's request budget on every order).
        Ok(OrderReport {
            order_id,
            client_order_id: order.client_order_id.clone(),
            symbol: order.symbol.clone(),
            side: order.side,
            status: OrderStatus::Open,
            quantity: numbers::text(quantity),
            filled_quantity: "0".into(),
            fills: Vec::new(),
            reason: None,
            updated_at_ms: self.client.now_ms,
        })
    }

    /// The report of the order with the venue's id `order_id`, with its fills.
    fn fetch(
        &mut self,
        symbol: &str,
        order_id: &str,
        client_order_id: Option<&str>,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let answer = self.client.signed(
            "GET",
            &format!(
                "{API}/orders/historical/{}",
                exchange_kit::query::encode(order_id)
            ),
            &[],
            None,
            Action::Query,
        )?;
        let order = VenueOrder::parse(&answer["order"])?;
        if let Some(wanted) = client_order_id
            && !order.client_order_id.is_empty()
            && order.client_order_id != wanted
        {
            return Err(BrokerError::NotFound(format!(
                "order {order_id} is not the one with client order id {wanted}"
            )));
        }
        self.with_fills(symbol, order, reason)
    }

    fn with_fills(
        &mut self,
        symbol: &str,
        order: VenueOrder,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let fills = if order.filled > Decimal::ZERO {
            self.fills_of(&order.order_id)?
        } else {
            Vec::new()
        };
        Ok(order.report(symbol, &fills, reason))
    }

    /// Every fill of one order.
    fn fills_of(&mut self, order_id: &str) -> Result<Vec<VenueFill>, BrokerError> {
        let mut found: Vec<VenueFill> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = vec![
                ("order_ids", order_id.to_string()),
                ("limit", PAGE.to_string()),
            ];
            if let Some(cursor) = &cursor {
                params.push(("cursor", cursor.clone()));
            }
            let page = self.client.signed(
                "GET",
                &format!("{API}/orders/historical/fills"),
                &params,
                None,
                Action::Query,
            )?;
            for row in page["fills"].as_array().cloned().unwrap_or_default() {
                let fill = VenueFill::parse(&row)?;
                if fill.order_id == order_id && !found.iter().any(|f| f.trade_id == fill.trade_id) {
                    found.push(fill);
                }
            }
            cursor = next_cursor(&page);
            if cursor.is_none() {
                break;
            }
        }
        found.sort_by_key(|f| f.time_ms);
        Ok(found)
    }

    /// The venue's id of the order `query` names: given, remembered, or looked up by its client
    /// order id among the account's orders of its product.
    fn order_id_of(&mut self, query: &OrderQuery) -> Result<String, BrokerError> {
        if let Some(id) = query.order_id.as_deref().filter(|id| !id.is_empty()) {
            return Ok(id.to_string());
        }
        let Some(client_order_id) = query.client_order_id.as_deref().filter(|id| !id.is_empty())
        else {
            return Err(BrokerError::Invalid(
                "an order id or client order id is required".into(),
            ));
        };
        let marker = self.marker(client_order_id);
        if let Some(id) = marker.as_ref().and_then(|m| m.order_id.clone()) {
            return Ok(id);
        }
        let product = wire::product_id(&query.symbol)?;
        let mut params_base = vec![("product_ids", product), ("limit", PAGE.to_string())];
        if let Some(marker) = &marker
            && marker.sent_at > 0
        {
            params_base.push((
                "start_date",
                wire::format_time(marker.sent_at - SEARCH_SLACK_MS),
            ));
        }
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = params_base.clone();
            if let Some(cursor) = &cursor {
                params.push(("cursor", cursor.clone()));
            }
            let page = self.client.signed(
                "GET",
                &format!("{API}/orders/historical/batch"),
                &params,
                None,
                Action::Query,
            )?;
            let found = page["orders"].as_array().and_then(|orders| {
                orders
                    .iter()
                    .find(|o| o["client_order_id"].as_str() == Some(client_order_id))
                    .and_then(|o| o["order_id"].as_str())
                    .map(str::to_string)
            });
            if let Some(order_id) = found {
                if let Some(mut marker) = marker {
                    marker.order_id = Some(order_id.clone());
                    let _ = self.remember(client_order_id, &marker);
                }
                return Ok(order_id);
            }
            cursor = next_cursor(&page);
            if cursor.is_none() {
                break;
            }
        }
        Err(BrokerError::NotFound(format!(
            "Coinbase has no order with client order id {client_order_id}"
        )))
    }

    pub fn get(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let order_id = self.order_id_of(query)?;
        self.fetch(
            &query.symbol,
            &order_id,
            query.client_order_id.as_deref(),
            None,
        )
    }

    pub fn open_orders(&mut self, symbol: Option<&str>) -> Result<Vec<OrderReport>, BrokerError> {
        let mut params_base = vec![
            ("order_status", "OPEN".to_string()),
            ("limit", PAGE.to_string()),
        ];
        if let Some(symbol) = symbol {
            params_base.push(("product_ids", wire::product_id(symbol)?));
        }
        let mut open = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = params_base.clone();
            if let Some(cursor) = &cursor {
                params.push(("cursor", cursor.clone()));
            }
            let page = self.client.signed(
                "GET",
                &format!("{API}/orders/historical/batch"),
                &params,
                None,
                Action::Read,
            )?;
            for row in page["orders"].as_array().cloned().unwrap_or_default() {
                open.push(VenueOrder::parse(&row)?);
            }
            cursor = next_cursor(&page);
            if cursor.is_none() {
                break;
            }
        }
        let mut reports = Vec::new();
        for order in open {
            let Some(symbol) = wire::symbol_of(&order.product_id) else {
                continue;
            };
            if !matches!(
                order.status,
                OrderStatus::Open | OrderStatus::PartiallyFilled
            ) {
                continue;
            }
            reports.push(self.with_fills(&symbol, order, None)?);
        }
        Ok(reports)
    }

    pub fn fills_since(
        &mut self,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Vec<Fill>, BrokerError> {
        let since_ms = since_ms.max(0);
        let mut params_base = vec![
            ("start_sequence_timestamp", wire::format_time(since_ms)),
            ("limit", PAGE.to_string()),
        ];
        if let Some(symbol) = symbol {
            params_base.push(("product_ids", wire::product_id(symbol)?));
        }
        let mut found: Vec<VenueFill> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = params_base.clone();
            if let Some(cursor) = &cursor {
                params.push(("cursor", cursor.clone()));
            }
            let page = self.client.signed(
                "GET",
                &format!("{API}/orders/historical/fills"),
                &params,
                None,
                Action::Query,
            )?;
            for row in page["fills"].as_array().cloned().unwrap_or_default() {
                let fill = VenueFill::parse(&row)?;
                if !found
                    .iter()
                    .any(|f| f.trade_id == fill.trade_id && f.order_id == fill.order_id)
                {
                    found.push(fill);
                }
            }
            cursor = next_cursor(&page);
            if cursor.is_none() {
                break;
            }
        }
        found.retain(|f| f.time_ms >= since_ms);
        found.sort_by(|a, b| a.time_ms.cmp(&b.time_ms).then(a.trade_id.cmp(&b.trade_id)));
        Ok(found
            .iter()
            .filter_map(|f| {
                let symbol = wire::symbol_of(&f.product_id)?;
                Some(f.to_fill(&symbol, ""))
            })
            .take(MAX_FILLS)
            .collect())
    }

    pub fn cancel(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let order_id = self.order_id_of(query)?;
        let answer = self.client.signed(
            "POST",
            &format!("{API}/orders/batch_cancel"),
            &[],
            Some(&json!({"order_ids": [order_id]})),
            Action::Cancel,
        )?;
        let result = answer["results"]
            .as_array()
            .and_then(|results| results.iter().find(|r| r["order_id"] == order_id.as_str()))
            .cloned()
            .unwrap_or_default();
        let client_order_id = query.client_order_id.as_deref();
        if result["success"].as_bool() == Some(true) {
            return self.fetch(
                &query.symbol,
                &order_id,
                client_order_id,
                Some("cancelled on request".into()),
            );
        }
        // Not cancelled: ended already (its report as it ended), or refused.
        let report = self.fetch(&query.symbol, &order_id, client_order_id, None)?;
        if !matches!(
            report.status,
            OrderStatus::Open | OrderStatus::PartiallyFilled
        ) {
            return Ok(report);
        }
        let reason = result["failure_reason"]
            .as_str()
            .unwrap_or("no reason given")
            .to_string();
        Err(BrokerError::Rejected(format!(
            "Coinbase did not cancel order {order_id}: {reason}"
        )))
    }
}

/// The cursor of the next page, if the answer says there is one.
fn next_cursor(page: &Value) -> Option<String> {
    if page["has_next"].as_bool() == Some(false) {
        return None;
    }
    page["cursor"]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Settings;
    use exchange_kit::request::Scripted;
    use tradehost_sdk::broker::tradehost::plugin::http::HttpError;
    use tradehost_sdk::types::OrderSide;

    const KEY_NAME: &str = "organizations/org-1/apiKeys/key-1";
    const PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIPKjbYETx6cCUfb7j9WLdY0Z3C2OTqVFU7YJ/UKEGw7+oAoGCCqGSM49
AwEHoUQDQgAErA6eYej0yTOLWRHsUWH9iu1Z97tknvY79OhmyX3dhB10T8dg/kEV
Xiju4Z5w5FucEqwr3wAOR5kSWze2X8rIAA==
-----END EC PRIVATE KEY-----
";

    fn settings() -> Settings {
        Settings::new(
            &|key: &str| (key == "base_url").then(|| "https://coinbase.test".to_string()),
            &[],
        )
        .unwrap()
    }

    fn coinbase<'a>(
        http: &'a mut Scripted,
        store: &'a mut BTreeMap<String, String>,
        settings: &'a Settings,
        now_ms: i64,
    ) -> Coinbase<'a, Scripted, BTreeMap<String, String>> {
        Coinbase {
            client: Client {
                http,
                store: Some(store),
                settings,
                key_name: KEY_NAME,
                secret: PEM,
                now_ms,
                tokens: 0,
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

    fn filled_order(client_order_id: &str) -> Value {
        json!({"order": {
            "order_id": "ord-1", "product_id": "BTC-USD", "side": "BUY", "client_order_id": client_order_id,
            "status": "FILLED", "filled_size": "0.01", "created_time": "2023-11-14T22:13:20Z",
            "last_fill_time": "2023-11-14T22:13:20.100Z",
            "order_configuration": {"market_market_ioc": {"base_size": "0.01"}}
        }})
    }

    fn fills() -> Value {
        json!({"fills": [{
            "entry_id": "e-1", "trade_id": "t-1", "order_id": "ord-1", "trade_time": "2023-11-14T22:13:20.100Z",
            "trade_type": "FILL", "price": "60000", "size": "0.01", "commission": "0.6",
            "product_id": "BTC-USD", "sequence_timestamp": "2023-11-14T22:13:20.101Z",
            "liquidity_indicator": "TAKER", "size_in_quote": false, "side": "BUY"
        }], "cursor": ""})
    }

    fn claims(request: &exchange_kit::request::Request) -> Value {
        use base64::Engine;
        let auth = request
            .headers
            .iter()
            .find(|h| h.name == "Authorization")
            .unwrap();
        let token = auth.value.strip_prefix("Bearer ").unwrap();
        let part = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(part)
                .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn an_order_is_authenticated_sent_once_and_reported_with_its_fills() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        http.answer(
            200,
            json!({"success": true, "success_response": {"order_id": "ord-1", "product_id": "BTC-USD", "side": "BUY", "client_order_id": "c-1"}}),
        );
        let acknowledged = coinbase(&mut http, &mut store, &settings, 1_700_000_000_000)
            .place(&order("c-1"))
            .unwrap();
        assert_eq!(
            (
                acknowledged.order_id.as_str(),
                acknowledged.status,
                acknowledged.quantity.as_str()
            ),
            ("ord-1", OrderStatus::Open, "0.01")
        );
        let sent = &http.sent[0];
        assert_eq!(
            (sent.method.as_str(), sent.url.as_str()),
            ("POST", "https://coinbase.test/api/v3/brokerage/orders")
        );
        let body: Value = serde_json::from_slice(&sent.body).unwrap();
        assert_eq!(
            body,
            json!({"client_order_id": "c-1", "product_id": "BTC-USD", "side": "BUY",
                   "order_configuration": {"market_market_ioc": {"base_size": "0.01"}}})
        );
        let claims = claims(sent);
        assert_eq!(claims["uri"], "POST coinbase.test/api/v3/brokerage/orders");
        assert_eq!(
            (claims["sub"].as_str(), claims["iss"].as_str()),
            (Some(KEY_NAME), Some("cdp"))
        );
        assert_eq!(claims["nbf"], 1_700_000_000);

        // The same client order id again: asked about, not placed.
        http.answer(200, filled_order("c-1"));
        http.answer(200, fills());
        let report = coinbase(&mut http, &mut store, &settings, 1_700_000_000_500)
            .place(&order("c-1"))
            .unwrap();
        assert_eq!(report.status, OrderStatus::Filled);
        assert_eq!(
            (
                report.filled_quantity.as_str(),
                report.fills[0].quantity.as_str(),
                report.fills[0].fee.as_str()
            ),
            ("0.01", "0.01", "0.6")
        );
        assert_eq!(
            http.sent[1].url,
            "https://coinbase.test/api/v3/brokerage/orders/historical/ord-1"
        );
        assert_eq!(
            http.sent[2].url,
            "https://coinbase.test/api/v3/brokerage/orders/historical/fills?order_ids=ord-1&limit=250"
        );
        // The uri claim names the path without the query.
        assert_eq!(
            self::claims(&http.sent[2])["uri"],
            "GET coinbase.test/api/v3/brokerage/orders/historical/fills"
        );
        assert_eq!(http.sent.iter().filter(|r| r.method == "POST").count(), 1);
    }

    #[test]
    fn a_lost_answer_is_found_by_client_order_id_and_refusals_keep_the_reason() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        http.fail(HttpError::Timeout);
        assert!(matches!(
            coinbase(&mut http, &mut store, &settings, 1_700_000_000_000).place(&order("c-2")),
            Err(BrokerError::Timeout(_))
        ));
        // Asked about later: found among the product's orders since shortly before it was sent.
        http.answer(
            200,
            json!({"orders": [
                {"order_id": "ord-0", "client_order_id": "other", "product_id": "BTC-USD", "side": "BUY", "status": "FILLED"},
                {"order_id": "ord-1", "client_order_id": "c-2", "product_id": "BTC-USD", "side": "BUY", "status": "FILLED"}
            ], "has_next": false, "cursor": "", "sequence": "0"}),
        );
        http.answer(200, filled_order("c-2"));
        http.answer(200, fills());
        let query = OrderQuery {
            symbol: "BTC-USD".into(),
            client_order_id: Some("c-2".into()),
            order_id: None,
        };
        let report = coinbase(&mut http, &mut store, &settings, 1_700_000_005_000)
            .get(&query)
            .unwrap();
        assert_eq!(
            (report.order_id.as_str(), report.status),
            ("ord-1", OrderStatus::Filled)
        );
        assert_eq!(
            http.sent[1].url,
            "https://coinbase.test/api/v3/brokerage/orders/historical/batch?product_ids=BTC-USD&limit=250&start_date=2023-11-14T22%3A08%3A20.000Z"
        );
        // Remembered: the next question goes straight to the order.
        http.answer(200, filled_order("c-2"));
        http.answer(200, fills());
        coinbase(&mut http, &mut store, &settings, 1_700_000_006_000)
            .get(&query)
            .unwrap();
        assert!(http.sent[4].url.ends_with("/orders/historical/ord-1"));

        // Refused by Coinbase: its reason kept.
        http.answer(
            200,
            json!({"success": false, "failure_reason": "UNKNOWN_FAILURE_REASON", "order_id": "",
                   "error_response": {"error": "INSUFFICIENT_FUND", "message": "Insufficient balance in source account",
                                      "error_details": "", "preview_failure_reason": "PREVIEW_INSUFFICIENT_FUND"}}),
        );
        assert!(matches!(
            coinbase(&mut http, &mut store, &settings, 1_700_000_007_000).place(&order("c-3")),
            Err(BrokerError::InsufficientFunds(m)) if m.contains("Insufficient balance")
        ));
        // A bad private key never leaves the plugin.
        let sent = http.sent.len();
        let mut client = coinbase(&mut http, &mut store, &settings, 1_700_000_008_000);
        client.client.secret = "-----BEGIN EC PRIVATE KEY-----\nnope\n-----END EC PRIVATE KEY-----";
        assert!(matches!(client.validate(), Err(BrokerError::Auth(_))));
        assert_eq!(http.sent.len(), sent);
    }

    #[test]
    fn a_rate_limit_is_honoured_for_the_account_and_unauthorised_is_auth() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        http.answers.push_back(Ok(exchange_kit::request::Response {
            status: 429,
            headers: vec![exchange_kit::request::header("Retry-After", "2")],
            body: b"{\"error\":\"RATE_LIMIT_EXCEEDED\",\"message\":\"Too many requests\"}".to_vec(),
        }));
        assert_eq!(
            coinbase(&mut http, &mut store, &settings, 10_000).balances(),
            Err(BrokerError::RateLimited(2_000))
        );
        // Asked again before the wait is over: answered without reaching Coinbase.
        assert_eq!(
            coinbase(&mut http, &mut store, &settings, 11_500).validate(),
            Err(BrokerError::RateLimited(500))
        );
        assert_eq!(http.sent.len(), 1);
        http.answers.push_back(Ok(exchange_kit::request::Response {
            status: 401,
            headers: Vec::new(),
            body: b"Unauthorized\n".to_vec(),
        }));
        assert!(matches!(
            coinbase(&mut http, &mut store, &settings, 12_000).validate(),
            Err(BrokerError::Auth(_))
        ));
        http.answer(
            200,
            json!({"can_view": true, "can_trade": true, "can_transfer": false, "portfolio_uuid": "p", "portfolio_type": "DEFAULT"}),
        );
        assert_eq!(
            coinbase(&mut http, &mut store, &settings, 12_000)
                .validate()
                .unwrap()
                .permissions,
            vec!["read".to_string(), "trade".to_string()]
        );
    }

    /// "List Accounts" pages, summed per currency; holdings other than USD are positions.
    #[test]
    fn balances_and_positions_from_accounts() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        let account = |currency: &str, free: &str, hold: &str| {
            json!({"uuid": "8bfc20d7-f7c6-4422-bf07-8243ca4169fe", "name": format!("{currency} Wallet"),
                   "currency": currency, "available_balance": {"value": free, "currency": currency},
                   "default": false, "active": true, "created_at": "2021-05-31T09:59:59.000Z",
                   "updated_at": "2021-05-31T09:59:59.000Z", "deleted_at": null, "type": "ACCOUNT_TYPE_CRYPTO",
                   "ready": true, "hold": {"value": hold, "currency": currency}})
        };
        http.answer(
            200,
            json!({"accounts": [account("USD", "100000", "0"), account("BTC", "0.5", "0.1")], "has_next": true, "cursor": "next-1", "size": 2}),
        );
        http.answer(
            200,
            json!({"accounts": [account("ETH", "0", "0"), account("SOL", "2", "0")], "has_next": false, "cursor": "", "size": 2}),
        );
        let positions = coinbase(&mut http, &mut store, &settings, 1)
            .positions()
            .unwrap();
        assert_eq!(
            positions
                .iter()
                .map(|p| (p.symbol.as_str(), p.quantity.as_str()))
                .collect::<Vec<_>>(),
            vec![("BTC-USD", "0.6"), ("SOL-USD", "2")]
        );
        assert!(
            http.sent[1]
                .url
                .ends_with("/accounts?limit=250&cursor=next-1")
        );
    }

    #[test]
    fn candles_fills_open_orders_and_cancels() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        http.answer(
            200,
            json!({"candles": [
                {"start": "1700000060", "low": "1", "high": "3", "open": "2", "close": "2.5", "volume": "10"},
                {"start": "1700000000", "low": "1", "high": "3", "open": "2", "close": "2", "volume": "10"}
            ]}),
        );
        let candles = coinbase(&mut http, &mut store, &settings, 1)
            .candles("BTC-USD", "1m", 2, 1_700_000_090_000)
            .unwrap();
        assert_eq!(
            candles.iter().map(|c| c.timestamp_ms).collect::<Vec<_>>(),
            vec![1_700_000_000_000, 1_700_000_060_000]
        );
        assert_eq!(
            http.sent[0].url,
            "https://coinbase.test/api/v3/brokerage/market/products/BTC-USD/candles?start=1699999970&end=1700000090&granularity=ONE_MINUTE&limit=2"
        );
        assert!(http.sent[0].headers.is_empty(), "market data is public");

        http.answer(200, fills());
        let listed = coinbase(&mut http, &mut store, &settings, 1)
            .fills_since(1_700_000_000_000, Some("BTC-USD"))
            .unwrap();
        assert_eq!(
            (listed[0].order_id.as_str(), listed[0].timestamp_ms),
            ("ord-1", 1_700_000_000_100)
        );
        assert!(http.sent[1].url.contains(
            "fills?start_sequence_timestamp=2023-11-14T22%3A13%3A20.000Z&limit=250&product_ids=BTC-USD"
        ));

        http.answer(
            200,
            json!({"orders": [{"order_id": "ord-9", "client_order_id": "c-9", "product_id": "ETH-USD", "side": "SELL",
                               "status": "OPEN", "filled_size": "0",
                               "order_configuration": {"limit_limit_gtc": {"base_size": "1", "limit_price": "4000", "post_only": false}}}],
                   "has_next": false}),
        );
        let open = coinbase(&mut http, &mut store, &settings, 1)
            .open_orders(None)
            .unwrap();
        assert_eq!(
            (
                open[0].symbol.as_str(),
                open[0].status,
                open[0].quantity.as_str()
            ),
            ("ETH-USD", OrderStatus::Open, "1")
        );
        assert!(
            http.sent[2]
                .url
                .ends_with("batch?order_status=OPEN&limit=250")
        );

        http.answer(
            200,
            json!({"results": [{"success": true, "failure_reason": "UNKNOWN_CANCEL_FAILURE_REASON", "order_id": "ord-9"}]}),
        );
        http.answer(
            200,
            json!({"order": {"order_id": "ord-9", "client_order_id": "c-9", "product_id": "ETH-USD", "side": "SELL",
                             "status": "CANCELLED", "filled_size": "0",
                             "order_configuration": {"limit_limit_gtc": {"base_size": "1", "limit_price": "4000"}}}}),
        );
        let cancelled = coinbase(&mut http, &mut store, &settings, 1)
            .cancel(&OrderQuery {
                symbol: "ETH-USD".into(),
                client_order_id: Some("c-9".into()),
                order_id: Some("ord-9".into()),
            })
            .unwrap();
        assert_eq!(cancelled.status, OrderStatus::Cancelled);
        assert_eq!(
            serde_json::from_slice::<Value>(&http.sent[3].body).unwrap(),
            json!({"order_ids": ["ord-9"]})
        );
    }
}
