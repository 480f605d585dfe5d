//! The broker world's operations against OKX spot (trade mode `cash`).
//!
//! - Orders are `market` (sized in the base asset: `tgtCcy` `base_ccy`, which a market buy
//!   otherwise is not) or `limit` (good till cancelled), with tradehost's client order id as
//!   `clOrdId`. OKX refuses a `clOrdId` only while its order is live, so each id sent is first
//!   written to the account's store: an id seen before is answered with that order's report,
//!   never placed again.
//! - OKX acknowledges an order without its outcome: `place-order` answers it as open and the
//!   host follows it up. An order's fills are its rows of `GET /api/v5/trade/fills` (the last 3
//!   days; `fills-history` for older orders), which `fills-since` reads too. A market order's
//!   follow-up reads its fills first: when they add up to all of it, that one request answers.
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
    OrderRequest, OrderSide, OrderStatus,
};

use crate::client::{Action, Client, item_error, text};
use crate::wire::{self, Execution, VenueOrder};

/// Most rows OKX lists per page of fills and of pending orders.
const PAGE: usize = 100;
/// Pages of fills read before the window is narrowed (the host takes at most 1000 per call).
const FILL_PAGES: usize = 10;
const MAX_FILLS: usize = 1000;
/// Pages of pending orders read at most.
const PENDING_PAGES: usize = 10;
/// `GET /api/v5/trade/fills` covers the last 3 days; older fills are in `fills-history`. An
/// hour of margin for clocks and for fills still being archived.
const RECENT_FILLS_MS: i64 = 3 * 86_400_000 - 3_600_000;
/// Candles per request: `candles` answers up to 300, `history-candles` up to 100.
const CANDLES_PAGE: u32 = 300;
const HISTORY_CANDLES_PAGE: u32 = 100;

/// Prices of assets fees were paid in, by asset and quote asset.
type Prices = BTreeMap<(String, String), Decimal>;

/// Looks up the price in `symbol`'s quote asset of an asset a fee was paid in.
fn priced<'a>(
    prices: &'a Prices,
    symbol: &'a str,
) -> impl FnMut(&str) -> Result<Decimal, BrokerError> + 'a {
    let quote = symbol.split_once('-').map_or("", |(_, quote)| quote);
    move |asset| {
        prices
            .get(&(asset.to_string(), quote.to_string()))
            .copied()
            .ok_or_else(|| BrokerError::Unavailable(format!("no price for {asset}")))
    }
}

fn marker_key(client_order_id: &str) -> String {
    format!("order/{client_order_id}")
}

/// What the store keeps of an order sent (under its marker): enough to tell from its fills
/// alone that a market order is complete.
#[derive(Debug, Clone, PartialEq)]
struct Sent {
    symbol: String,
    side: OrderSide,
    quantity: Decimal,
    market: bool,
    sent_ms: i64,
    /// OKX's id, once acknowledged.
    order_id: Option<String>,
}

impl Sent {
    fn text(&self) -> String {
        json!({
            "symbol": self.symbol,
            "side": wire::side_name(self.side),
            "sz": numbers::text(self.quantity),
            "market": self.market,
            "sent_ms": self.sent_ms,
            "ordId": self.order_id,
        })
        .to_string()
    }

    fn parse(text: &str) -> Option<Sent> {
        let value: Value = serde_json::from_str(text).ok()?;
        Some(Sent {
            symbol: value["symbol"].as_str()?.to_string(),
            side: match value["side"].as_str()? {
                "buy" => OrderSide::Buy,
                "sell" => OrderSide::Sell,
                _ => return None,
            },
            quantity: field(&value["sz"])?,
            market: value["market"].as_bool()?,
            sent_ms: value["sent_ms"].as_i64()?,
            order_id: value["ordId"].as_str().map(str::to_string),
        })
    }
}

pub struct Okx<'a, H: Http, S: Store> {
    pub client: Client<'a, H, S>,
}

impl<H: Http, S: Store> Okx<'_, H, S> {
    /// The key's permissions, from the account's configuration (`perm`: `read_only`, `trade`,
    /// `withdraw`).
    pub fn validate(&mut self) -> Result<AccountCheck, BrokerError> {
        let config =
            self.client
                .signed("GET", "/api/v5/account/config", &[], None, Action::Read)?;
        let perm = config
            .first()
            .and_then(|c| c["perm"].as_str())
            .unwrap_or_default()
            .to_string();
        let mut permissions = vec!["read".to_string()];
        for granted in perm.split(',').map(str::trim) {
            if matches!(granted, "trade" | "withdraw") {
                permissions.push(granted.to_string());
            }
        }
        Ok(AccountCheck { permissions })
    }

    pub fn balances(&mut self) -> Result<Vec<AssetBalance>, BrokerError> {
        let account =
            self.client
                .signed("GET", "/api/v5/account/balance", &[], None, Action::Read)?;
        let details = account
            .first()
            .and_then(|a| a["details"].as_array())
            .cloned()
            .unwrap_or_default();
        Ok(details
            .iter()
            .filter_map(|row| {
                let locked = field(&row["frozenBal"]).unwrap_or_default();
                let free = field(&row["availBal"])
                    .or_else(|| field(&row["cashBal"]).map(|cash| cash - locked))?;
                Some(AssetBalance {
                    asset: row["ccy"].as_str()?.to_string(),
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

    /// The rules of `symbol`: the account's own view of the instrument when it has keys
    /// (counted against the account's limits, as the host's waits are), the public one
    /// otherwise (counted per address).
    pub fn instrument(&mut self, symbol: &str) -> Result<Instrument, BrokerError> {
        let inst = wire::inst_id(symbol)?;
        let params = [("instType", "SPOT".to_string()), ("instId", inst.clone())];
        let listed = if self.client.api_key.is_empty() {
            self.client
                .public("/api/v5/public/instruments", &params, Action::Read)?
        } else {
            self.client.signed(
                "GET",
                "/api/v5/account/instruments",
                &params,
                None,
                Action::Read,
            )?
        };
        let entry = listed
            .iter()
            .find(|entry| entry["instId"] == inst.as_str())
            .ok_or_else(|| BrokerError::NotFound(format!("OKX does not list {inst}")))?;
        wire::instrument(symbol, entry)
    }

    pub fn candles(
        &mut self,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let inst = wire::inst_id(symbol)?;
        let Some(bar) = wire::bar(interval) else {
            return Err(BrokerError::Invalid(format!(
                "OKX has no {interval} candles"
            )));
        };
        let wanted = limit.clamp(1, 1000) as usize;
        let mut candles: Vec<Candle> = Vec::new();
        // Newest first, each page older than the oldest so far (`after`: earlier than).
        let mut after = end_ms.saturating_add(1);
        let mut path = "/api/v5/market/candles";
        let mut page_size = CANDLES_PAGE;
        while candles.len() < wanted {
            let asked = page_size.min((wanted - candles.len()) as u32);
            let rows = self.client.public(
                path,
                &[
                    ("instId", inst.clone()),
                    ("bar", bar.to_string()),
                    ("after", after.to_string()),
                    ("limit", asked.to_string()),
                ],
                Action::Read,
            )?;
            let page = rows
                .iter()
                .map(wire::candle)
                .collect::<Result<Vec<_>, _>>()?;
            // The recent candles are kept for a while; older ones are in the history.
            if page.is_empty() && candles.is_empty() && path != "/api/v5/market/history-candles" {
                path = "/api/v5/market/history-candles";
                page_size = HISTORY_CANDLES_PAGE;
                continue;
            }
            let Some(oldest) = page.iter().map(|c| c.timestamp_ms).min() else {
                break;
            };
            let short = page.len() < asked as usize;
            candles.extend(page.into_iter().filter(|c| c.timestamp_ms < after));
            if short || oldest >= after {
                break;
            }
            after = oldest;
        }
        candles.retain(|c| c.timestamp_ms <= end_ms);
        candles.sort_by_key(|c| c.timestamp_ms);
        candles.dedup_by_key(|c| c.timestamp_ms);
        let surplus = candles.len().saturating_sub(wanted);
        candles.drain(..surplus);
        Ok(candles)
    }

    pub fn place(&mut self, order: &OrderRequest) -> Result<OrderReport, BrokerError> {
        let inst = wire::inst_id(&order.symbol)?;
        let cl_ord_id = wire::venue_client_id(&order.client_order_id)?;
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
        let mut body = json!({
            "instId": inst,
            "tdMode": "cash",
            "clOrdId": cl_ord_id,
            "side": wire::side_name(order.side),
            "sz": numbers::text(quantity),
        });
        match order.kind {
            OrderKind::Market => {
                body["ordType"] = json!("market");
                body["tgtCcy"] = json!("base_ccy");
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
                body["ordType"] = json!("limit");
                body["px"] = json!(numbers::text(price));
            }
        }
        let mut sent = Sent {
            symbol: order.symbol.clone(),
            side: order.side,
            quantity,
            market: order.kind == OrderKind::Market,
            sent_ms: self.client.now_ms,
            order_id: None,
        };
        if let Some(store) = self.client.store.as_deref_mut() {
            store
                .write(vec![(marker.clone(), Some(sent.text()))])
                .map_err(|err| {
                    BrokerError::Rejected(format!(
                        "the order could not be recorded before sending: {err}"
                    ))
                })?;
        }
        let answer = self.client.signed(
            "POST",
            "/api/v5/trade/order",
            &[],
            Some(&body),
            Action::Place,
        )?;
        let placed = answer.first().ok_or_else(|| {
            BrokerError::Unavailable("OKX acknowledged the order without its id".into())
        })?;
        if let Some(error) = item_error(placed, Action::Place) {
            return Err(error);
        }
        let order_id = text(&placed["ordId"]);
        if order_id.is_empty() {
            return Err(BrokerError::Unavailable(format!(
                "OKX acknowledged the order without its id: {placed}"
            )));
        }
        // Its id, for the follow-ups (without it they ask by client order id).
        sent.order_id = Some(order_id.clone());
        if let Some(store) = self.client.store.as_deref_mut() {
            let _ = store.write(vec![(marker, Some(sent.text()))]);
        }
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
            updated_at_ms: text(&placed["ts"]).parse().unwrap_or(self.client.now_ms),
        })
    }

    /// The path listing fills at or after `since_ms`.
    fn fills_path(&self, since_ms: i64) -> &'static str {
        if self.client.now_ms - since_ms < RECENT_FILLS_MS {
            "/api/v5/trade/fills"
        } else {
            "/api/v5/trade/fills-history"
        }
    }

    /// Prices of the assets, other than its base and quote, that `execution` paid its fee in,
    /// added to `prices` (by asset and quote).
    fn price_fee(
        &mut self,
        execution: &Execution,
        symbol: &str,
        prices: &mut Prices,
    ) -> Result<(), BrokerError> {
        let (base, quote) = symbols::split(symbol)?;
        let asset = &execution.fee_ccy;
        let key = (asset.clone(), quote.to_string());
        if execution.fee.is_zero()
            || asset.is_empty()
            || asset == base
            || asset == quote
            || prices.contains_key(&key)
        {
            return Ok(());
        }
        let price = self.price_of(asset, quote)?;
        prices.insert(key, price);
        Ok(())
    }

    /// The last price of `asset` in `quote` (to value a fee paid in it).
    fn price_of(&mut self, asset: &str, quote: &str) -> Result<Decimal, BrokerError> {
        let ticker = self.client.public(
            "/api/v5/market/ticker",
            &[("instId", format!("{asset}-{quote}"))],
            Action::Read,
        )?;
        ticker
            .first()
            .and_then(|t| field(&t["last"]))
            .ok_or_else(|| {
                BrokerError::Unavailable(format!(
                    "no price of {asset}-{quote} to value a fee in {asset}"
                ))
            })
    }

    /// Every fill of one order.
    fn executions_of(&mut self, order: &VenueOrder) -> Result<Vec<Execution>, BrokerError> {
        let path = self.fills_path(order.created_ms);
        let mut found: Vec<Execution> = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let mut params = vec![
                ("instType", "SPOT".to_string()),
                ("instId", order.inst_id.clone()),
                ("ordId", order.order_id.clone()),
                ("limit", PAGE.to_string()),
            ];
            if let Some(after) = &after {
                params.push(("after", after.clone()));
            }
            let rows = self
                .client
                .signed("GET", path, &params, None, Action::Query)?;
            for row in &rows {
                let execution = Execution::parse(row)?;
                if !found.iter().any(|e| e.trade_id == execution.trade_id) {
                    found.push(execution);
                }
            }
            match rows.last().map(|row| text(&row["billId"])) {
                Some(last) if rows.len() >= PAGE && !last.is_empty() => after = Some(last),
                _ => break,
            }
        }
        found.sort_by_key(|e| e.time_ms);
        Ok(found)
    }

    fn report(
        &mut self,
        symbol: &str,
        order: &VenueOrder,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let executions = if order.executed > Decimal::ZERO {
            self.executions_of(order)?
        } else {
            Vec::new()
        };
        self.report_with(symbol, order, executions, reason)
    }

    fn report_with(
        &mut self,
        symbol: &str,
        order: &VenueOrder,
        executions: Vec<Execution>,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let mut prices = Prices::new();
        for execution in &executions {
            self.price_fee(execution, symbol, &mut prices)?;
        }
        order.report(symbol, &executions, &mut priced(&prices, symbol), reason)
    }

    /// `instId` and the order's id (OKX's, else the client order id) of a query.
    fn named(query: &OrderQuery) -> Result<Vec<(&'static str, String)>, BrokerError> {
        let mut params = vec![("instId", wire::inst_id(&query.symbol)?)];
        match (&query.order_id, &query.client_order_id) {
            (Some(id), _) => params.push(("ordId", id.clone())),
            (None, Some(id)) => params.push(("clOrdId", wire::venue_client_id(id)?)),
            (None, None) => {
                return Err(BrokerError::Invalid(
                    "an order id or client order id is required".into(),
                ));
            }
        }
        Ok(params)
    }

    /// What the store kept of an order this plugin sent.
    fn sent(&self, client_order_id: &str) -> Option<Sent> {
        let store = self.client.store.as_deref()?;
        Sent::parse(&store.get(&marker_key(client_order_id))?)
    }

    /// The order's report. A market order this plugin sent is looked for among its fills
    /// first: when they add up to all of it, it is filled, and that one request (of OKX's
    /// per-account budget) answers; otherwise the order itself is asked for too.
    pub fn get(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let mut listed: Option<Vec<Execution>> = None;
        if let Some(client_order_id) = &query.client_order_id
            && let Some(sent) = self.sent(client_order_id)
            && sent.market
            && sent.symbol == query.symbol
            && let Some(order_id) = query.order_id.clone().or(sent.order_id.clone())
        {
            let mut order = VenueOrder {
                order_id,
                client_order_id: client_order_id.clone(),
                inst_id: wire::inst_id(&query.symbol)?,
                side: sent.side,
                status: OrderStatus::Filled,
                quantity: sent.quantity,
                executed: Decimal::ZERO,
                created_ms: sent.sent_ms,
                updated_ms: sent.sent_ms,
            };
            let executions = self.executions_of(&order)?;
            order.executed = executions.iter().map(|e| e.quantity).sum();
            if order.executed == order.quantity {
                order.updated_ms = executions
                    .iter()
                    .map(|e| e.time_ms)
                    .max()
                    .unwrap_or_default();
                return self.report_with(&query.symbol, &order, executions, None);
            }
            listed = Some(executions);
        }
        let params = Self::named(query)?;
        let answer =
            self.client
                .signed("GET", "/api/v5/trade/order", &params, None, Action::Query)?;
        let row = answer
            .first()
            .ok_or_else(|| BrokerError::NotFound("OKX does not know the order".into()))?;
        let order = VenueOrder::parse(row)?;
        match listed {
            // Nothing filled since its fills were read.
            Some(executions)
                if executions.iter().map(|e| e.quantity).sum::<Decimal>() == order.executed =>
            {
                self.report_with(&query.symbol, &order, executions, None)
            }
            _ => self.report(&query.symbol, &order, None),
        }
    }

    pub fn open_orders(&mut self, symbol: Option<&str>) -> Result<Vec<OrderReport>, BrokerError> {
        let mut params = vec![("instType", "SPOT".to_string())];
        if let Some(symbol) = symbol {
            params.push(("instId", wire::inst_id(symbol)?));
        }
        params.push(("limit", PAGE.to_string()));
        let mut orders: Vec<VenueOrder> = Vec::new();
        for _ in 0..PENDING_PAGES {
            let rows = self.client.signed(
                "GET",
                "/api/v5/trade/orders-pending",
                &params,
                None,
                Action::Read,
            )?;
            for row in &rows {
                let order = VenueOrder::parse(row)?;
                if !orders.iter().any(|o| o.order_id == order.order_id) {
                    orders.push(order);
                }
            }
            let Some(last) = orders.last().map(|o| o.order_id.clone()) else {
                break;
            };
            if rows.len() < PAGE {
                break;
            }
            // The next page: orders older than the last one listed.
            params.retain(|(key, _)| *key != "after");
            params.push(("after", last));
        }
        let mut reports = Vec::with_capacity(orders.len());
        for order in orders {
            // Instruments that are not BASE-QUOTE spot pairs are not tradehost's.
            let Ok(symbol) = wire::symbol_of(&order.inst_id) else {
                continue;
            };
            reports.push(self.report(&symbol, &order, None)?);
        }
        Ok(reports)
    }

    /// Fills at or after `since_ms`, oldest first, at most 1000. OKX lists fills newest first
    /// and pages back in time (`after` a `billId`); when more than fit are newer than
    /// `since_ms`, the window is narrowed (`end`) until its oldest ones are all read.
    pub fn fills_since(
        &mut self,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Vec<Fill>, BrokerError> {
        let since_ms = since_ms.max(0);
        let inst = symbol.map(wire::inst_id).transpose()?;
        let path = self.fills_path(since_ms);
        let mut end: Option<i64> = None;
        let mut found: Vec<Execution>;
        loop {
            found = Vec::new();
            let mut after: Option<String> = None;
            let mut complete = false;
            for _ in 0..FILL_PAGES {
                let mut params = vec![("instType", "SPOT".to_string())];
                if let Some(inst) = &inst {
                    params.push(("instId", inst.clone()));
                }
                // Whether OKX's `begin` includes its instant or not, nothing at `since_ms` is
                // missed.
                params.push(("begin", (since_ms - 1).max(0).to_string()));
                if let Some(end) = end {
                    params.push(("end", end.to_string()));
                }
                params.push(("limit", PAGE.to_string()));
                if let Some(after) = &after {
                    params.push(("after", after.clone()));
                }
                let rows = self
                    .client
                    .signed("GET", path, &params, None, Action::Query)?;
                for row in &rows {
                    found.push(Execution::parse(row)?);
                }
                match rows.last().map(|row| text(&row["billId"])) {
                    Some(last) if rows.len() >= PAGE && !last.is_empty() => after = Some(last),
                    _ => {
                        complete = true;
                        break;
                    }
                }
            }
            let oldest = found.iter().map(|e| e.time_ms).min().unwrap_or(since_ms);
            let narrower = since_ms + (oldest - since_ms) / 2;
            if complete || narrower <= since_ms || end.is_some_and(|end| narrower >= end) {
                break;
            }
            end = Some(narrower);
        }
        found.retain(|e| e.time_ms >= since_ms);
        found.sort_by(|a, b| {
            a.time_ms
                .cmp(&b.time_ms)
                .then_with(|| a.bill_id.len().cmp(&b.bill_id.len()))
                .then_with(|| a.bill_id.cmp(&b.bill_id))
        });
        found.dedup_by(|a, b| a.trade_id == b.trade_id && a.inst_id == b.inst_id);
        found.truncate(MAX_FILLS);

        let mut prices = Prices::new();
        let mut fills = Vec::with_capacity(found.len());
        for execution in &found {
            // Instruments that are not BASE-QUOTE spot pairs are not tradehost's.
            let Ok(symbol) = wire::symbol_of(&execution.inst_id) else {
                continue;
            };
            self.price_fee(execution, &symbol, &mut prices)?;
            fills.push(execution.to_fill(&symbol, &mut priced(&prices, &symbol))?);
        }
        Ok(fills)
    }

    pub fn cancel(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let params = Self::named(query)?;
        let body = Value::Object(
            params
                .iter()
                .map(|(key, value)| (key.to_string(), json!(value)))
                .collect(),
        );
        match self.client.signed(
            "POST",
            "/api/v5/trade/cancel-order",
            &[],
            Some(&body),
            Action::Cancel,
        ) {
            Ok(answer) => {
                if let Some(error) = answer.first().and_then(|a| item_error(a, Action::Cancel)) {
                    return match error {
                        BrokerError::NotFound(_) => self.get(query),
                        other => Err(other),
                    };
                }
                let mut report = self.get(query)?;
                if report.status == OrderStatus::Cancelled {
                    report.reason = Some("cancelled on request".into());
                }
                Ok(report)
            }
            // Not live any more: its report as it ended, if OKX knows it.
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
    use tradehost_sdk::types::OrderSide;

    const ID: &str = "th-0123456789abcdef0123456789abcdef";
    const CL_ORD_ID: &str = "0123456789abcdef0123456789abcdef";
    const NOW: i64 = 1_700_000_000_000;

    fn settings() -> Settings {
        Settings::new(
            &|key: &str| (key == "base_url").then(|| "https://okx.test".to_string()),
            &[("passphrase".into(), "phrase".into())],
        )
        .unwrap()
    }

    fn okx<'a>(
        http: &'a mut Scripted,
        store: &'a mut BTreeMap<String, String>,
        settings: &'a Settings,
    ) -> Okx<'a, Scripted, BTreeMap<String, String>> {
        Okx {
            client: Client {
                http,
                store: Some(store),
                settings,
                api_key: "key",
                secret: "secret",
                now_ms: NOW,
            },
        }
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

    fn ok(data: Value) -> Value {
        json!({"code": "0", "msg": "", "data": data})
    }

    fn filled_order() -> Value {
        json!({
            "instType": "SPOT", "instId": "BTC-USDT", "ordId": "612", "clOrdId": CL_ORD_ID,
            "px": "", "sz": "0.01", "ordType": "market", "side": "buy", "tdMode": "cash",
            "accFillSz": "0.01", "avgPx": "60000", "state": "filled", "tgtCcy": "base_ccy",
            "fee": "-0.00001", "feeCcy": "BTC", "cTime": (NOW - 1000).to_string(), "uTime": (NOW - 900).to_string()
        })
    }

    fn fill_rows() -> Value {
        json!([
            {"instType": "SPOT", "instId": "BTC-USDT", "tradeId": "92", "ordId": "612", "clOrdId": CL_ORD_ID,
             "billId": "7002", "side": "buy", "fillSz": "0.004", "fillPx": "60000", "fee": "-0.000004",
             "feeCcy": "BTC", "ts": (NOW - 800).to_string(), "fillTime": (NOW - 800).to_string(), "execType": "T"},
            {"instType": "SPOT", "instId": "BTC-USDT", "tradeId": "91", "ordId": "612", "clOrdId": CL_ORD_ID,
             "billId": "7001", "side": "buy", "fillSz": "0.006", "fillPx": "60000", "fee": "-0.000006",
             "feeCcy": "BTC", "ts": (NOW - 900).to_string(), "fillTime": (NOW - 900).to_string(), "execType": "T"}
        ])
    }

    fn body_of(request: &exchange_kit::request::Request) -> Value {
        serde_json::from_slice(&request.body).unwrap()
    }

    #[test]
    fn an_order_is_signed_sent_once_and_followed_up_net_of_its_fee() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(
            200,
            ok(json!([{"clOrdId": CL_ORD_ID, "ordId": "612", "tag": "", "ts": "1695190491421", "sCode": "0", "sMsg": "Order placed"}])),
        );
        let placed = okx(&mut http, &mut store, &settings)
            .place(&order(ID))
            .unwrap();
        assert_eq!(
            (
                placed.order_id.as_str(),
                placed.status,
                placed.filled_quantity.as_str(),
                placed.updated_at_ms
            ),
            ("612", OrderStatus::Open, "0", 1695190491421)
        );
        let sent = &http.sent[0];
        assert_eq!(
            (sent.method.as_str(), sent.url.as_str()),
            ("POST", "https://okx.test/api/v5/trade/order")
        );
        assert_eq!(
            body_of(sent),
            json!({"instId": "BTC-USDT", "tdMode": "cash", "clOrdId": CL_ORD_ID, "side": "buy",
                   "ordType": "market", "tgtCcy": "base_ccy", "sz": "0.01"})
        );
        let header = |name: &str| {
            sent.headers
                .iter()
                .find(|h| h.name == name)
                .map(|h| h.value.clone())
                .unwrap()
        };
        assert_eq!(
            header("OK-ACCESS-SIGN"),
            crate::sign::signature(
                "secret",
                &header("OK-ACCESS-TIMESTAMP"),
                "POST",
                "/api/v5/trade/order",
                std::str::from_utf8(&sent.body).unwrap()
            )
        );
        assert!(store.contains_key(&format!("order/{ID}")));

        // The same client order id again: asked about, not placed. Its fills add up to all of
        // it, so they alone answer.
        http.answer(200, ok(fill_rows()));
        let again = okx(&mut http, &mut store, &settings)
            .place(&order(ID))
            .unwrap();
        assert_eq!(
            (
                again.status,
                again.client_order_id.as_str(),
                again.order_id.as_str()
            ),
            (OrderStatus::Filled, ID, "612")
        );
        assert_eq!(
            (again.filled_quantity.as_str(), again.updated_at_ms),
            ("0.00999", NOW - 800)
        );
        assert_eq!(
            again
                .fills
                .iter()
                .map(|f| (f.trade_id.as_str(), f.quantity.as_str(), f.fee.as_str()))
                .collect::<Vec<_>>(),
            vec![("91", "0.005994", "0.36"), ("92", "0.003996", "0.24")]
        );
        assert_eq!(
            http.sent[1].url,
            "https://okx.test/api/v5/trade/fills?instType=SPOT&instId=BTC-USDT&ordId=612&limit=100"
        );
        assert_eq!(http.sent.iter().filter(|r| r.method == "POST").count(), 1);

        // Part of it listed: the order itself says where it stands.
        let query = OrderQuery {
            symbol: "BTC-USDT".into(),
            client_order_id: Some(ID.into()),
            order_id: Some("612".into()),
        };
        let mut partly = filled_order();
        partly["state"] = json!("partially_filled");
        partly["accFillSz"] = json!("0.006");
        http.answer(200, ok(json!([fill_rows()[1].clone()])));
        http.answer(200, ok(json!([partly])));
        let report = okx(&mut http, &mut store, &settings).get(&query).unwrap();
        assert_eq!(
            (
                report.status,
                report.filled_quantity.as_str(),
                report.fills.len()
            ),
            (OrderStatus::PartiallyFilled, "0.005994", 1)
        );
        assert_eq!(
            http.sent[3].url,
            "https://okx.test/api/v5/trade/order?instId=BTC-USDT&ordId=612"
        );
        assert_eq!(http.sent.len(), 4);

        // An order it did not send (no record): the order, then its fills.
        store.clear();
        http.answer(200, ok(json!([filled_order()])));
        http.answer(200, ok(fill_rows()));
        let report = okx(&mut http, &mut store, &settings).get(&query).unwrap();
        assert_eq!(
            (
                report.status,
                report.filled_quantity.as_str(),
                report.updated_at_ms
            ),
            (OrderStatus::Filled, "0.00999", NOW - 900)
        );
        assert!(http.sent[4].url.contains("/api/v5/trade/order?"));
        assert!(http.sent[5].url.contains("/api/v5/trade/fills?"));
    }

    #[test]
    fn a_refused_order_keeps_the_venues_reason_and_limits_carry_their_price() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(
            200,
            json!({"code": "1", "msg": "All operations failed", "data": [
                {"clOrdId": CL_ORD_ID, "ordId": "", "tag": "", "ts": "1695190491421", "sCode": "51009", "sMsg": "Market is closed."}
            ]}),
        );
        assert_eq!(
            okx(&mut http, &mut store, &settings).place(&order(ID)),
            Err(BrokerError::Rejected("Market is closed. (51009)".into()))
        );
        http.answer(
            200,
            ok(json!([{"clOrdId": "manual7", "ordId": "613", "ts": "1", "sCode": "0", "sMsg": ""}])),
        );
        let mut limit = order("manual7");
        limit.kind = OrderKind::Limit;
        limit.side = OrderSide::Sell;
        limit.limit_price = Some("61000.50".into());
        okx(&mut http, &mut store, &settings).place(&limit).unwrap();
        assert_eq!(
            body_of(&http.sent[1]),
            json!({"instId": "BTC-USDT", "tdMode": "cash", "clOrdId": "manual7", "side": "sell",
                   "ordType": "limit", "px": "61000.5", "sz": "0.01"})
        );
        limit.limit_price = None;
        limit.client_order_id = "manual8".into();
        assert!(matches!(
            okx(&mut http, &mut store, &settings).place(&limit),
            Err(BrokerError::Invalid(_))
        ));
        assert_eq!(http.sent.len(), 2);
    }

    #[test]
    fn an_answer_lost_to_a_timeout_is_an_unknown_outcome() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.fail(tradehost_sdk::broker::tradehost::plugin::http::HttpError::Timeout);
        assert!(matches!(
            okx(&mut http, &mut store, &settings).place(&order(ID)),
            Err(BrokerError::Timeout(_))
        ));
        // Rate limited: nothing read, the configured wait (no Retry-After from OKX).
        http.answer(429, json!({"code": "50011", "msg": "Too Many Requests"}));
        assert_eq!(
            okx(&mut http, &mut store, &settings).balances(),
            Err(BrokerError::RateLimited(1_000))
        );
    }

    #[test]
    fn cancel_asks_for_the_report_afterwards() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        let query = OrderQuery {
            symbol: "BTC-USDT".into(),
            client_order_id: Some(ID.into()),
            order_id: None,
        };
        http.answer(
            200,
            ok(json!([{"clOrdId": CL_ORD_ID, "ordId": "612", "ts": "1", "sCode": "0", "sMsg": ""}])),
        );
        let mut cancelled = filled_order();
        cancelled["state"] = json!("canceled");
        cancelled["accFillSz"] = json!("0");
        http.answer(200, ok(json!([cancelled])));
        let report = okx(&mut http, &mut store, &settings)
            .cancel(&query)
            .unwrap();
        assert_eq!(report.status, OrderStatus::Cancelled);
        assert_eq!(report.reason.as_deref(), Some("cancelled on request"));
        assert_eq!(
            body_of(&http.sent[0]),
            json!({"instId": "BTC-USDT", "clOrdId": CL_ORD_ID})
        );
        // Already done: its report as it ended.
        http.answer(
            200,
            json!({"code": "1", "msg": "", "data": [{"clOrdId": CL_ORD_ID, "ordId": "612", "sCode": "51400", "sMsg": "Order cancellation failed as the order has been filled, canceled or does not exist"}]}),
        );
        http.answer(200, ok(json!([filled_order()])));
        http.answer(200, ok(fill_rows()));
        let report = okx(&mut http, &mut store, &settings)
            .cancel(&query)
            .unwrap();
        assert_eq!((report.status, report.reason), (OrderStatus::Filled, None));
        // Unknown to OKX.
        http.answer(
            200,
            json!({"code": "51603", "msg": "Order does not exist", "data": []}),
        );
        assert!(matches!(
            okx(&mut http, &mut store, &settings).get(&query),
            Err(BrokerError::NotFound(_))
        ));
    }

    #[test]
    fn fills_since_read_back_in_time_and_answer_oldest_first() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(200, ok(fill_rows()));
        let fills = okx(&mut http, &mut store, &settings)
            .fills_since(NOW - 900, None)
            .unwrap();
        assert_eq!(
            fills
                .iter()
                .map(|f| (
                    f.trade_id.as_str(),
                    f.client_order_id.as_str(),
                    f.timestamp_ms
                ))
                .collect::<Vec<_>>(),
            vec![("91", ID, NOW - 900), ("92", ID, NOW - 800)]
        );
        assert_eq!(
            http.sent[0].url,
            format!(
                "https://okx.test/api/v5/trade/fills?instType=SPOT&begin={}&limit=100",
                NOW - 901
            )
        );
        // A full page: the next one is older than its last bill; old fills are in the history.
        let page: Vec<Value> = (0..100)
            .map(|i| {
                json!({"instId": "ETH-USDT", "tradeId": (500 - i).to_string(), "ordId": "1",
                       "clOrdId": "", "billId": (9000 - i).to_string(), "side": "sell",
                       "fillSz": "0.1", "fillPx": "3000", "fee": "-0.3", "feeCcy": "USDT",
                       "ts": (NOW - i).to_string()})
            })
            .collect();
        http.answer(200, ok(Value::Array(page)));
        http.answer(200, ok(json!([])));
        let since = NOW - 5 * 86_400_000;
        let fills = okx(&mut http, &mut store, &settings)
            .fills_since(since, Some("ETH-USDT"))
            .unwrap();
        assert_eq!(fills.len(), 100);
        assert_eq!(fills[0].trade_id, "401");
        assert_eq!(
            (fills[0].fee.as_str(), fills[0].quantity.as_str()),
            ("0.3", "0.1")
        );
        assert_eq!(
            http.sent[2].url,
            format!(
                "https://okx.test/api/v5/trade/fills-history?instType=SPOT&instId=ETH-USDT&begin={}&limit=100&after=8901",
                since - 1
            )
        );
    }

    #[test]
    fn balances_positions_permissions_instruments_and_candles() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(
            200,
            ok(json!([{"uid": "44", "acctLv": "1", "perm": "read_only,trade", "posMode": "net_mode"}])),
        );
        let balance = ok(json!([{"totalEq": "100000", "uTime": "1", "details": [
            {"ccy": "USDT", "availBal": "99000", "frozenBal": "1000", "cashBal": "100000", "eq": "100000"},
            {"ccy": "BTC", "availBal": "0.5", "frozenBal": "0", "cashBal": "0.5", "eq": "0.5"},
            {"ccy": "ETH", "availBal": "0", "frozenBal": "0", "cashBal": "0", "eq": "0"}
        ]}]));
        http.answer(200, balance.clone());
        http.answer(200, balance);
        http.answer(
            200,
            ok(json!([{"instId": "BTC-USDT", "instType": "SPOT", "baseCcy": "BTC", "quoteCcy": "USDT",
                        "tickSz": "0.1", "lotSz": "0.00000001", "minSz": "0.00001", "state": "live"}])),
        );
        http.answer(
            200,
            ok(json!([
                ["1700000060000", "2", "3", "1", "2.5", "10", "25", "25", "0"],
                ["1700000000000", "1", "2", "1", "2", "10", "20", "20", "1"]
            ])),
        );
        let mut okx = okx(&mut http, &mut store, &settings);
        assert_eq!(okx.validate().unwrap().permissions, ["read", "trade"]);
        let balances = okx.balances().unwrap();
        assert_eq!(balances.len(), 2);
        assert_eq!(
            (balances[0].free.as_str(), balances[0].locked.as_str()),
            ("99000", "1000")
        );
        let positions = okx.positions().unwrap();
        assert_eq!(
            (positions[0].symbol.as_str(), positions[0].quantity.as_str()),
            ("BTC-USDT", "0.5")
        );
        assert_eq!(okx.instrument("BTC-USDT").unwrap().tick_size, "0.1");
        let candles = okx.candles("BTC-USDT", "1m", 2, 1_700_000_060_000).unwrap();
        assert_eq!(
            candles.iter().map(|c| c.timestamp_ms).collect::<Vec<_>>(),
            [1_700_000_000_000, 1_700_000_060_000]
        );
        assert_eq!(
            okx.client.http.sent[4].url,
            "https://okx.test/api/v5/market/candles?instId=BTC-USDT&bar=1m&after=1700000060001&limit=2"
        );
        assert!(okx.client.http.sent[3].url.starts_with(
            "https://okx.test/api/v5/account/instruments?instType=SPOT&instId=BTC-USDT"
        ));
        assert!(okx.client.http.sent[4].headers.is_empty());
    }
}
