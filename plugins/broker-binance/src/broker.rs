//! The broker world's operations against Binance spot.
//!
//! - Orders are `MARKET` or `LIMIT` (`GTC`) with the host's client order id as
//!   `newClientOrderId`; the answer is `FULL` (with fills). Binance refuses a client order id
//!   only while its order is open, so each id sent is first written to the account's store: an
//!   id seen before is answered with that order's report, never placed again.
//! - An order's fills are its `myTrades` rows; `fills-since` reads `myTrades` of one symbol.
//! - Spot has no reduce-only orders: a close sells what is held, which cannot go short.
//! - Positions are the account's holdings other than the quote asset, as longs.

use std::collections::BTreeMap;

use exchange_kit::numbers::{self, field};
use exchange_kit::request::Http;
use exchange_kit::{symbols, venue};
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tradehost_sdk::broker::{AccountCheck, BrokerPosition};
use tradehost_sdk::store::Store;
use tradehost_sdk::types::{
    AssetBalance, BrokerError, Candle, Fill, Instrument, OrderKind, OrderQuery, OrderReport,
    OrderRequest, OrderSide,
};

use crate::client::{Action, Client};
use crate::wire::{self, Execution, VenueOrder};

/// Most rows Binance lists per `myTrades` page.
const TRADES_PAGE: usize = 1000;

fn marker_key(client_order_id: &str) -> String {
    format!("order/{client_order_id}")
}

pub struct Binance<'a, H: Http, S: Store> {
    pub client: Client<'a, H, S>,
}

impl<H: Http, S: Store> Binance<'_, H, S> {
    pub fn validate(&mut self) -> Result<AccountCheck, BrokerError> {
        let account = self.account()?;
        let mut permissions = vec!["read".to_string()];
        if account["canTrade"].as_bool().unwrap_or(false) {
            permissions.push("trade".into());
        }
        if account["canWithdraw"].as_bool().unwrap_or(false) {
            permissions.push("withdraw".into());
        }
        Ok(AccountCheck { permissions })
    }

    fn account(&mut self) -> Result<Value, BrokerError> {
        self.client.signed(
            "GET",
            "/api/v3/account",
            &[("omitZeroBalances", "true".into())],
            Action::Read,
        )
    }

    pub fn balances(&mut self) -> Result<Vec<AssetBalance>, BrokerError> {
        let account = self.account()?;
        let rows = account["balances"].as_array().cloned().unwrap_or_default();
        Ok(rows
            .iter()
            .filter_map(|row| {
                let free = field(&row["free"])?;
                let locked = field(&row["locked"])?;
                Some(AssetBalance {
                    asset: row["asset"].as_str()?.to_string(),
                    free: numbers::text(free),
                    locked: numbers::text(locked),
                })
            })
            .filter(|b| b.free != "0" || b.locked != "0")
            .collect())
    }

    pub fn positions(&mut self) -> Result<Vec<BrokerPosition>, BrokerError> {
        let held = self.balances()?;
        Ok(venue::holdings_as_positions(
            held,
            &self.client.settings.quote_asset,
        ))
    }

    pub fn instrument(&mut self, symbol: &str) -> Result<Instrument, BrokerError> {
        let venue = wire::venue_symbol(symbol)?;
        let info = self.client.public(
            "/api/v3/exchangeInfo",
            &[("symbol", venue.clone())],
            Action::Read,
        )?;
        let entry = info["symbols"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["symbol"] == venue.as_str()))
            .ok_or_else(|| BrokerError::NotFound(format!("Binance does not list {venue}")))?;
        wire::instrument(symbol, entry)
    }

    pub fn candles(
        &mut self,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let venue = wire::venue_symbol(symbol)?;
        let Some(named) = wire::interval(interval) else {
            return Err(BrokerError::Invalid(format!(
                "Binance has no {interval} candles"
            )));
        };
        let rows = self.client.public(
            "/api/v3/klines",
            &[
                ("symbol", venue),
                ("interval", named.to_string()),
                ("endTime", end_ms.to_string()),
                ("limit", limit.clamp(1, 1000).to_string()),
            ],
            Action::Read,
        )?;
        let mut candles = rows
            .as_array()
            .map(|rows| rows.iter().map(wire::candle).collect::<Result<Vec<_>, _>>())
            .transpose()?
            .unwrap_or_default();
        candles.retain(|c| c.timestamp_ms <= end_ms);
        Ok(candles)
    }

    pub fn place(&mut self, order: &OrderRequest) -> Result<OrderReport, BrokerError> {
        let venue = wire::venue_symbol(&order.symbol)?;
        let quantity = numbers::parse(&order.quantity)
            .filter(|q| *q > Decimal::ZERO)
            .ok_or_else(|| BrokerError::Invalid(format!("quantity {}", order.quantity)))?;
        let marker = marker_key(&order.client_order_id);
        if let Some(store) = self.client.store.as_deref()
            && store.get(&marker).is_some()
        {
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
        let mut params = vec![
            ("symbol", venue),
            ("side", wire::side_name(order.side).to_string()),
        ];
        match order.kind {
            OrderKind::Market => params.push(("type", "MARKET".into())),
            OrderKind::Limit => {
                let price = order
                    .limit_price
                    .as_deref()
                    .and_then(numbers::parse)
                    .filter(|p| *p > Decimal::ZERO)
                    .ok_or_else(|| {
                        BrokerError::Invalid("a limit order needs a limit price".into())
                    })?;
                params.push(("type", "LIMIT".into()));
                params.push(("timeInForce", "GTC".into()));
                params.push(("price", numbers::text(price)));
            }
        }
        params.push(("quantity", numbers::text(quantity)));
        params.push(("newClientOrderId", order.client_order_id.clone()));
        params.push(("newOrderRespType", "FULL".into()));
        if let Some(store) = self.client.store.as_deref_mut() {
            store
                .write(vec![(marker, Some(self.client.now_ms.to_string()))])
                .map_err(|err| {
                    BrokerError::Rejected(format!(
                        "the order could not be recorded before sending: {err}"
                    ))
                })?;
        }
        let answer = self
            .client
            .signed("POST", "/api/v3/order", &params, Action::Place)?;
        let placed = VenueOrder::parse(&answer)?;
        let executions = placed.executions.clone();
        self.report(&order.symbol, &placed, &executions, None)
    }

    /// The report of `order` with `executions` as its fills (commissions in a third asset
    /// valued at its price).
    fn report(
        &mut self,
        symbol: &str,
        order: &VenueOrder,
        executions: &[Execution],
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let (base, quote) = symbols::split(symbol)?;
        let mut prices: BTreeMap<String, Decimal> = BTreeMap::new();
        for execution in executions {
            let asset = &execution.commission_asset;
            if execution.commission.is_zero()
                || asset == base
                || asset == quote
                || prices.contains_key(asset)
            {
                continue;
            }
            let price = self.price_of(asset, quote)?;
            prices.insert(asset.clone(), price);
        }
        order.report(
            symbol,
            executions,
            &mut |asset| {
                prices
                    .get(asset)
                    .copied()
                    .ok_or_else(|| BrokerError::Unavailable(format!("no price for {asset}")))
            },
            reason,
        )
    }

    /// The last price of `asset` in `quote` (to value a commission paid in it).
    fn price_of(&mut self, asset: &str, quote: &str) -> Result<Decimal, BrokerError> {
        let ticker = self.client.public(
            "/api/v3/ticker/price",
            &[("symbol", format!("{asset}{quote}"))],
            Action::Read,
        )?;
        field(&ticker["price"]).ok_or_else(|| {
            BrokerError::Unavailable(format!(
                "no price of {asset}{quote} to value a commission in {asset}"
            ))
        })
    }

    /// Every execution of one order.
    fn executions_of(
        &mut self,
        venue_symbol: &str,
        order_id: &str,
    ) -> Result<Vec<Execution>, BrokerError> {
        let mut found: Vec<Execution> = Vec::new();
        let mut from_id: Option<String> = None;
        loop {
            let mut params = vec![
                ("symbol", venue_symbol.to_string()),
                ("orderId", order_id.to_string()),
                ("limit", TRADES_PAGE.to_string()),
            ];
            if let Some(from) = &from_id {
                params.push(("fromId", from.clone()));
            }
            let rows = self
                .client
                .signed("GET", "/api/v3/myTrades", &params, Action::Query)?;
            let rows = rows.as_array().cloned().unwrap_or_default();
            let full = rows.len() >= TRADES_PAGE;
            for row in &rows {
                let execution = Execution::from_trade(row)?;
                if !found.iter().any(|e| e.trade_id == execution.trade_id) {
                    found.push(execution);
                }
            }
            let last = rows.last().and_then(|row| row["id"].as_u64());
            match last {
                Some(last) if full => from_id = Some((last + 1).to_string()),
                _ => return Ok(found),
            }
        }
    }

    fn with_executions(
        &mut self,
        symbol: &str,
        order: VenueOrder,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let executions = if order.executed > Decimal::ZERO {
            let venue = wire::venue_symbol(symbol)?;
            self.executions_of(&venue, &order.order_id)?
        } else {
            Vec::new()
        };
        self.report(symbol, &order, &executions, reason)
    }

    fn order_params(query: &OrderQuery) -> Result<Vec<(&'static str, String)>, BrokerError> {
        let mut params = vec![("symbol", wire::venue_symbol(&query.symbol)?)];
        match (&query.order_id, &query.client_order_id) {
            (Some(id), _) => params.push(("orderId", id.clone())),
            (None, Some(id)) => params.push(("origClientOrderId", id.clone())),
            (None, None) => {
                return Err(BrokerError::Invalid(
                    "an order id or client order id is required".into(),
                ));
            }
        }
        Ok(params)
    }

    pub fn get(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let params = Self::order_params(query)?;
        let answer = self
            .client
            .signed("GET", "/api/v3/order", &params, Action::Query)?;
        let order = VenueOrder::parse(&answer)?;
        self.with_executions(&query.symbol, order, None)
    }

    pub fn open_orders(&mut self, symbol: Option<&str>) -> Result<Vec<OrderReport>, BrokerError> {
        let params = match symbol {
            Some(symbol) => vec![("symbol", wire::venue_symbol(symbol)?)],
            None => Vec::new(),
        };
        let rows = self
            .client
            .signed("GET", "/api/v3/openOrders", &params, Action::Read)?;
        let rows = rows.as_array().cloned().unwrap_or_default();
        // Binance names symbols without a separator: its listing says where the base ends.
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        if let Some(symbol) = symbol {
            names.insert(wire::venue_symbol(symbol)?, symbol.to_string());
        } else {
            let wanted: Vec<String> = rows
                .iter()
                .filter_map(|r| r["symbol"].as_str().map(str::to_string))
                .collect();
            if !wanted.is_empty() {
                let info = self.client.public(
                    "/api/v3/exchangeInfo",
                    &[("symbols", json!(wanted).to_string())],
                    Action::Read,
                )?;
                for entry in info["symbols"].as_array().cloned().unwrap_or_default() {
                    if let (Some(venue), Some(base), Some(quote)) = (
                        entry["symbol"].as_str(),
                        entry["baseAsset"].as_str(),
                        entry["quoteAsset"].as_str(),
                    ) {
                        names.insert(venue.to_string(), symbols::join(base, quote));
                    }
                }
            }
        }
        let mut reports = Vec::new();
        for row in rows {
            let Some(symbol) = row["symbol"].as_str().and_then(|s| names.get(s)).cloned() else {
                continue;
            };
            let order = VenueOrder::parse(&row)?;
            reports.push(self.with_executions(&symbol, order, None)?);
        }
        Ok(reports)
    }

    pub fn fills_since(
        &mut self,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Vec<Fill>, BrokerError> {
        let Some(symbol) = symbol else {
            return Err(BrokerError::Unsupported(
                "Binance lists fills one symbol at a time".into(),
            ));
        };
        let venue = wire::venue_symbol(symbol)?;
        let rows = self.client.signed(
            "GET",
            "/api/v3/myTrades",
            &[
                ("symbol", venue),
                ("startTime", since_ms.max(0).to_string()),
                ("limit", TRADES_PAGE.to_string()),
            ],
            Action::Query,
        )?;
        let rows = rows.as_array().cloned().unwrap_or_default();
        let (base, quote) = symbols::split(symbol)?;
        let mut prices: BTreeMap<String, Decimal> = BTreeMap::new();
        let mut fills = Vec::with_capacity(rows.len());
        for row in &rows {
            let execution = Execution::from_trade(row)?;
            let asset = execution.commission_asset.clone();
            if !execution.commission.is_zero()
                && asset != base
                && asset != quote
                && !prices.contains_key(&asset)
            {
                let price = self.price_of(&asset, quote)?;
                prices.insert(asset.clone(), price);
            }
            let side = if row["isBuyer"].as_bool().unwrap_or(false) {
                OrderSide::Buy
            } else {
                OrderSide::Sell
            };
            let order_id = match &row["orderId"] {
                Value::Number(n) => n.to_string(),
                other => other.as_str().unwrap_or_default().to_string(),
            };
            fills.push(
                execution.to_fill(&order_id, "", symbol, side, &mut |asset| {
                    prices
                        .get(asset)
                        .copied()
                        .ok_or_else(|| BrokerError::Unavailable(format!("no price for {asset}")))
                })?,
            );
        }
        fills.sort_by_key(|fill| fill.timestamp_ms);
        Ok(fills)
    }

    pub fn cancel(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let params = Self::order_params(query)?;
        match self
            .client
            .signed("DELETE", "/api/v3/order", &params, Action::Cancel)
        {
            Ok(answer) => {
                let order = VenueOrder::parse(&answer)?;
                self.with_executions(&query.symbol, order, Some("cancelled on request".into()))
            }
            // Not open any more: its report as it ended, if Binance knows it.
            Err(BrokerError::NotFound(_)) => self.get(query),
            Err(err) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Settings;
    use exchange_kit::request::Scripted;
    use tradehost_sdk::types::OrderStatus;

    fn settings() -> Settings {
        Settings::new(
            &|key: &str| (key == "base_url").then(|| "https://binance.test".to_string()),
            &[],
        )
        .unwrap()
    }

    fn order(id: &str) -> OrderRequest {
        OrderRequest {
            client_order_id: id.into(),
            symbol: "BTC-USDT".into(),
            side: OrderSide::Buy,
            quantity: "0.01".into(),
            kind: OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        }
    }

    fn filled_answer(id: &str) -> Value {
        json!({
            "symbol": "BTCUSDT", "orderId": 5, "orderListId": -1, "clientOrderId": id,
            "transactTime": 1000, "price": "0", "origQty": "0.01", "executedQty": "0.01",
            "cummulativeQuoteQty": "600", "status": "FILLED", "timeInForce": "GTC", "type": "MARKET",
            "side": "BUY",
            "fills": [{"price": "60000", "qty": "0.01", "commission": "0.00001", "commissionAsset": "BTC", "tradeId": 9}]
        })
    }

    #[test]
    fn an_order_is_signed_sent_once_and_reported_net_of_the_commission() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        http.answer(200, filled_answer("c-1"));
        let report = {
            let mut binance = Binance {
                client: Client {
                    http: &mut http,
                    store: Some(&mut store),
                    settings: &settings,
                    api_key: "key",
                    secret: "secret",
                    now_ms: 1_700_000_000_000,
                },
            };
            binance.place(&order("c-1")).unwrap()
        };
        assert_eq!(report.status, OrderStatus::Filled);
        assert_eq!(
            (
                report.filled_quantity.as_str(),
                report.fills[0].quantity.as_str(),
                report.fills[0].fee.as_str()
            ),
            ("0.00999", "0.00999", "0.6")
        );
        let sent = &http.sent[0];
        assert_eq!(sent.method, "POST");
        let (path, query) = sent.url.split_once('?').unwrap();
        assert_eq!(path, "https://binance.test/api/v3/order");
        let (payload, signature) = query.rsplit_once("&signature=").unwrap();
        assert_eq!(
            payload,
            "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.01&newClientOrderId=c-1&newOrderRespType=FULL&recvWindow=5000&timestamp=1700000000000"
        );
        assert_eq!(signature, crate::sign::signature("secret", payload));
        assert_eq!(sent.headers[0].name, "X-MBX-APIKEY");

        // The same client order id again: asked about, not placed.
        http.answer(200, json!({"symbol": "BTCUSDT", "orderId": 5, "clientOrderId": "c-1", "origQty": "0.01", "executedQty": "0.01", "status": "FILLED", "side": "BUY", "updateTime": 1000}));
        http.answer(200, json!([{"symbol": "BTCUSDT", "id": 9, "orderId": 5, "price": "60000", "qty": "0.01", "commission": "0.00001", "commissionAsset": "BTC", "time": 1000, "isBuyer": true}]));
        let again = {
            let mut binance = Binance {
                client: Client {
                    http: &mut http,
                    store: Some(&mut store),
                    settings: &settings,
                    api_key: "key",
                    secret: "secret",
                    now_ms: 1_700_000_000_500,
                },
            };
            binance.place(&order("c-1")).unwrap()
        };
        assert_eq!(again.fills, report.fills);
        assert!(
            http.sent[1]
                .url
                .contains("/api/v3/order?symbol=BTCUSDT&origClientOrderId=c-1")
        );
        assert_eq!(http.sent[1].method, "GET");
        assert!(http.sent.iter().filter(|r| r.method == "POST").count() == 1);
    }

    #[test]
    fn an_answer_lost_to_a_timeout_is_an_unknown_outcome_and_near_the_weight_limit_calls_wait() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        http.fail(tradehost_sdk::broker::tradehost::plugin::http::HttpError::Timeout);
        let mut binance = Binance {
            client: Client {
                http: &mut http,
                store: Some(&mut store),
                settings: &settings,
                api_key: "key",
                secret: "secret",
                now_ms: 120_000,
            },
        };
        assert!(matches!(
            binance.place(&order("c-2")),
            Err(BrokerError::Timeout(_))
        ));
        // An answer saying 95 % of the minute's weight is used: the next signed call waits.
        binance.client.http.answers.push_back(Ok(tradehost_sdk::broker::tradehost::plugin::http::Response {
            status: 200,
            headers: vec![exchange_kit::request::header("X-MBX-USED-WEIGHT-1M", "5700")],
            body: json!({"balances": [{"asset": "USDT", "free": "10", "locked": "0"}], "canTrade": true}).to_string().into_bytes(),
        }));
        assert_eq!(binance.balances().unwrap().len(), 1);
        assert_eq!(binance.balances(), Err(BrokerError::RateLimited(60_000)));
        assert_eq!(binance.client.http.sent.len(), 2);
    }
}
