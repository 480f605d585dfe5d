//! The broker world's operations against Kraken spot.
//!
//! - Orders are `market` or `limit` (`GTC`) with tradehost's client order id as `cl_ord_id` and
//!   `oflags=fciq` (the fee in the quote currency). Kraken holds a `cl_ord_id` unique only among
//!   open orders, so each id is first written to the account's store: an id seen before is
//!   answered with that order's report, never placed again. The order's txid is remembered
//!   beside it once Kraken answers.
//! - An order is found by txid (`QueryOrders`), or by client order id among open then closed
//!   orders (`OpenOrders`, `ClosedOrders` filtered by `cl_ord_id`) when its answer was lost; its
//!   fills are its trades (`QueryTrades`).
//! - `fills-since` reads `TradesHistory` from the cursor (50 trades a page, oldest pages first).
//! - Spot has no reduce-only orders: a close sells what is held, which cannot go short.
//! - Positions are the account's holdings other than the quote asset, as longs.
//! - Asset and pair names Kraken answers with are looked up once (`Assets`, `AssetPairs`) and
//!   remembered in the account's store.

use std::collections::{BTreeMap, BTreeSet};

use exchange_kit::numbers::{self, field};
use exchange_kit::request::Http;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tradehost_sdk::broker::{AccountCheck, BrokerPosition};
use tradehost_sdk::store::Store;
use tradehost_sdk::types::{
    AssetBalance, BrokerError, Candle, Fill, Instrument, OrderKind, OrderQuery, OrderReport,
    OrderRequest, OrderStatus,
};

use crate::client::{Action, Client};
use crate::wire::{self, Execution, Pair, VenueOrder};

/// Trades Kraken lists per `TradesHistory` page.
const TRADES_PAGE: usize = 50;
/// Most fills one `fills-since` answer holds.
const MOST_FILLS: usize = 1_000;
/// Most trade ids one `QueryTrades` takes.
const QUERY_TRADES_MAX: usize = 20;

fn marker_key(client_order_id: &str) -> String {
    format!("placed/{client_order_id}")
}

fn txid_key(txid: &str) -> String {
    format!("txid/{txid}")
}

pub struct Kraken<'a, H: Http, S: Store> {
    pub client: Client<'a, H, S>,
}

impl<H: Http, S: Store> Kraken<'_, H, S> {
    fn remembered(&self, key: &str) -> Option<String> {
        self.client
            .store
            .as_deref()
            .and_then(|store| store.get(key))
    }

    /// Writes what is only remembered to save a request: a failure costs a lookup later.
    fn remember(&mut self, changes: Vec<(String, Option<String>)>) {
        if let Some(store) = self.client.store.as_deref_mut() {
            let _ = store.write(changes);
        }
    }

    pub fn validate(&mut self) -> Result<AccountCheck, BrokerError> {
        self.client.private("BalanceEx", &[], Action::Read)?;
        let mut permissions = vec!["read".to_string()];
        // Whether the key may trade: an order validated only (`validate=true`), never placed.
        let quote = wire::kraken_asset(&self.client.settings.quote_asset).to_string();
        let probe = [
            ("ordertype", "limit".to_string()),
            ("type", "buy".to_string()),
            ("volume", "1".to_string()),
            ("pair", format!("XBT{quote}")),
            ("price", "1".to_string()),
            ("validate", "true".to_string()),
        ];
        match self.client.private("AddOrder", &probe, Action::Place) {
            Err(BrokerError::Auth(_)) => {}
            Err(
                err @ (BrokerError::RateLimited(_)
                | BrokerError::Timeout(_)
                | BrokerError::Unavailable(_)
                | BrokerError::Unreachable(_)),
            ) => return Err(err),
            // Accepted, or refused for its content once the permission was granted.
            _ => permissions.push("trade".into()),
        }
        Ok(AccountCheck { permissions })
    }

    /// tradehost's names of Kraken's asset keys (`XXBT` → `BTC`).
    fn asset_names(&mut self, keys: &[String]) -> Result<BTreeMap<String, String>, BrokerError> {
        let mut names = BTreeMap::new();
        let mut unknown = Vec::new();
        for key in keys {
            let known = wire::known_altname(key)
                .map(wire::asset_name)
                .or_else(|| self.remembered(&format!("asset/{key}")));
            match known {
                Some(name) => {
                    names.insert(key.clone(), name);
                }
                None => unknown.push(key.clone()),
            }
        }
        if unknown.is_empty() {
            return Ok(names);
        }
        let listed = self
            .client
            .public("Assets", &[("asset", unknown.join(","))], Action::Read)?;
        let mut learned = Vec::new();
        for key in unknown {
            let Some(altname) = listed[&key]["altname"].as_str() else {
                continue;
            };
            let name = wire::asset_name(altname);
            learned.push((format!("asset/{key}"), Some(name.clone())));
            names.insert(key, name);
        }
        self.remember(learned);
        Ok(names)
    }

    pub fn balances(&mut self) -> Result<Vec<AssetBalance>, BrokerError> {
        let result = self.client.private("BalanceEx", &[], Action::Read)?;
        let rows: Vec<(String, Decimal, Decimal)> = result
            .as_object()
            .map(|all| {
                all.iter()
                    .filter_map(|(key, row)| {
                        // `BalanceEx` rows; `Balance` answers bare amounts.
                        let total = field(&row["balance"]).or_else(|| field(row))?;
                        let held = field(&row["hold_trade"]).unwrap_or_default();
                        Some((key.clone(), total, held))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let plain: Vec<String> = rows
            .iter()
            .filter(|(key, ..)| !key.contains('.'))
            .map(|(key, ..)| key.clone())
            .collect();
        let names = self.asset_names(&plain)?;
        let mut held: BTreeMap<String, (Decimal, Decimal)> = BTreeMap::new();
        for (key, total, locked) in rows {
            let name = match key.split_once('.') {
                None => names.get(&key).cloned(),
                // Auto Earn's flexible balances (`.F`) can be traded; staked ones cannot.
                Some((altname, "F")) => Some(wire::asset_name(altname)),
                Some(_) => None,
            };
            let Some(name) = name else { continue };
            let entry = held.entry(name).or_default();
            entry.0 += total - locked;
            entry.1 += locked;
        }
        Ok(held
            .into_iter()
            .filter(|(_, (free, locked))| !free.is_zero() || !locked.is_zero())
            .map(|(asset, (free, locked))| AssetBalance {
                asset,
                free: numbers::text(free),
                locked: numbers::text(locked),
            })
            .collect())
    }

    pub fn positions(&mut self) -> Result<Vec<BrokerPosition>, BrokerError> {
        let quote = self.client.settings.quote_asset.clone();
        let held = self.balances()?;
        Ok(exchange_kit::venue::holdings_as_positions(held, &quote))
    }

    /// The `AssetPairs` entry of `symbol`, and its names.
    fn pair_entry(&mut self, symbol: &str) -> Result<(Pair, Value), BrokerError> {
        let altname = wire::venue_pair(symbol)?;
        let listed =
            self.client
                .public("AssetPairs", &[("pair", altname.clone())], Action::Read)?;
        let found = listed.as_object().and_then(|all| {
            all.iter().find_map(|(key, entry)| {
                Pair::parse(key, entry)
                    .filter(|pair| pair.symbol == symbol)
                    .map(|pair| (pair, entry.clone()))
            })
        });
        let (pair, entry) = found
            .ok_or_else(|| BrokerError::NotFound(format!("Kraken does not list {altname}")))?;
        self.remember(vec![
            (format!("pair/{}", pair.key), Some(pair.symbol.clone())),
            (format!("pair/{}", pair.altname), Some(pair.symbol.clone())),
            (
                format!("pair-of/{symbol}"),
                Some(format!("{} {}", pair.key, pair.altname)),
            ),
        ]);
        Ok((pair, entry))
    }

    /// The names of `symbol`'s pair.
    fn pair(&mut self, symbol: &str) -> Result<Pair, BrokerError> {
        if let Some(names) = self.remembered(&format!("pair-of/{symbol}"))
            && let Some((key, altname)) = names.split_once(' ')
        {
            return Ok(Pair {
                key: key.to_string(),
                altname: altname.to_string(),
                symbol: symbol.to_string(),
            });
        }
        self.pair_entry(symbol).map(|(pair, _)| pair)
    }

    /// tradehost's symbol of a pair Kraken names by key or altname (`None`: not a pair it
    /// lists, or not one tradehost can name).
    fn symbol_of(&mut self, name: &str) -> Result<Option<String>, BrokerError> {
        if name.is_empty() {
            return Ok(None);
        }
        if let Some(symbol) = self.remembered(&format!("pair/{name}")) {
            return Ok(Some(symbol));
        }
        let listed =
            match self
                .client
                .public("AssetPairs", &[("pair", name.to_string())], Action::Read)
            {
                Err(BrokerError::NotFound(_)) => return Ok(None),
                other => other?,
            };
        let Some(pair) = listed
            .as_object()
            .and_then(|all| all.iter().find_map(|(key, entry)| Pair::parse(key, entry)))
        else {
            return Ok(None);
        };
        self.remember(vec![
            (format!("pair/{}", pair.key), Some(pair.symbol.clone())),
            (format!("pair/{}", pair.altname), Some(pair.symbol.clone())),
            (
                format!("pair-of/{}", pair.symbol),
                Some(format!("{} {}", pair.key, pair.altname)),
            ),
        ]);
        Ok(Some(pair.symbol))
    }

    pub fn instrument(&mut self, symbol: &str) -> Result<Instrument, BrokerError> {
        let (_, entry) = self.pair_entry(symbol)?;
        wire::instrument(symbol, &entry)
    }

    pub fn candles(
        &mut self,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Vec<Candle>, BrokerError> {
        let altname = wire::venue_pair(symbol)?;
        let Some(minutes) = wire::interval_minutes(interval) else {
            return Err(BrokerError::Invalid(format!(
                "Kraken has no {interval} candles"
            )));
        };
        let limit = limit.clamp(1, 720) as i64;
        let since = end_ms.div_euclid(1_000) - (limit + 1) * i64::from(minutes) * 60;
        let result = self.client.public(
            "OHLC",
            &[
                ("pair", altname),
                ("interval", minutes.to_string()),
                ("since", since.max(0).to_string()),
            ],
            Action::Read,
        )?;
        let rows = result
            .as_object()
            .and_then(|all| {
                all.iter()
                    .find(|(key, _)| key.as_str() != "last")
                    .and_then(|(_, rows)| rows.as_array())
            })
            .cloned()
            .unwrap_or_default();
        let mut candles = rows
            .iter()
            .map(wire::candle)
            .collect::<Result<Vec<_>, _>>()?;
        candles.retain(|c| c.timestamp_ms <= end_ms);
        let extra = candles.len().saturating_sub(limit as usize);
        candles.drain(..extra);
        Ok(candles)
    }

    pub fn place(&mut self, order: &OrderRequest) -> Result<OrderReport, BrokerError> {
        let pair = wire::venue_pair(&order.symbol)?;
        let quantity = numbers::parse(&order.quantity)
            .filter(|q| *q > Decimal::ZERO)
            .ok_or_else(|| BrokerError::Invalid(format!("quantity {}", order.quantity)))?;
        let cl_ord_id = wire::cl_ord_id(&order.client_order_id)?;
        let marker = marker_key(&order.client_order_id);
        if self.remembered(&marker).is_some() {
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
            ("pair", pair),
            ("type", wire::side_name(order.side).to_string()),
        ];
        match order.kind {
            OrderKind::Market => params.push(("ordertype", "market".into())),
            OrderKind::Limit => {
                let price = order
                    .limit_price
                    .as_deref()
                    .and_then(numbers::parse)
                    .filter(|p| *p > Decimal::ZERO)
                    .ok_or_else(|| {
                        BrokerError::Invalid("a limit order needs a limit price".into())
                    })?;
                params.push(("ordertype", "limit".into()));
                params.push(("price", numbers::text(price)));
                params.push(("timeinforce", "GTC".into()));
            }
        }
        params.push(("volume", numbers::text(quantity)));
        params.push(("oflags", "fciq".into()));
        params.push(("cl_ord_id", cl_ord_id));
        let placed_at = self.client.now_ms;
        if let Some(store) = self.client.store.as_deref_mut() {
            let record = json!({"symbol": order.symbol, "at": placed_at});
            store
                .write(vec![(marker.clone(), Some(record.to_string()))])
                .map_err(|err| {
                    BrokerError::Rejected(format!(
                        "the order could not be recorded before sending: {err}"
                    ))
                })?;
        }
        let answer = self.client.private("AddOrder", &params, Action::Place)?;
        let txid = answer["txid"]
            .as_array()
            .and_then(|ids| ids.first())
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                // Accepted without an id to follow it by: found later by client order id.
                BrokerError::Unavailable(format!(
                    "Kraken accepted the order without a txid: {answer}"
                ))
            })?;
        self.remember_txid(&order.client_order_id, &order.symbol, &txid, placed_at);
        // Kraken's answer names the order only: the host follows it up for its fills.
        Ok(OrderReport {
            order_id: txid,
            client_order_id: order.client_order_id.clone(),
            symbol: order.symbol.clone(),
            side: order.side,
            status: OrderStatus::Open,
            quantity: numbers::text(quantity),
            filled_quantity: "0".into(),
            fills: Vec::new(),
            reason: None,
            updated_at_ms: placed_at,
        })
    }

    fn remember_txid(&mut self, client_order_id: &str, symbol: &str, txid: &str, at: i64) {
        let record = json!({"symbol": symbol, "at": at, "txid": txid});
        self.remember(vec![
            (marker_key(client_order_id), Some(record.to_string())),
            (txid_key(txid), Some(client_order_id.to_string())),
        ]);
    }

    /// The client order id of the order `txid`, when tradehost placed it.
    fn client_order_id_of(&self, order: &VenueOrder) -> String {
        order
            .client_order_id
            .clone()
            .or_else(|| self.remembered(&txid_key(&order.order_id)))
            .unwrap_or_default()
    }

    /// The order a query names, with its trades' ids.
    fn find(&mut self, query: &OrderQuery) -> Result<VenueOrder, BrokerError> {
        let txid = query.order_id.clone().or_else(|| {
            let client_order_id = query.client_order_id.as_deref()?;
            let record = self.remembered(&marker_key(client_order_id))?;
            let record: Value = serde_json::from_str(&record).ok()?;
            record["txid"].as_str().map(str::to_string)
        });
        if let Some(txid) = txid {
            let result = self.client.private(
                "QueryOrders",
                &[("trades", "true".into()), ("txid", txid.clone())],
                Action::Query,
            )?;
            return wire::orders(&result)?
                .into_iter()
                .find(|o| o.order_id == txid)
                .ok_or_else(|| {
                    BrokerError::NotFound(format!("Kraken does not know order {txid}"))
                });
        }
        let Some(client_order_id) = query.client_order_id.clone() else {
            return Err(BrokerError::Invalid(
                "an order id or client order id is required".into(),
            ));
        };
        let cl_ord_id = wire::cl_ord_id(&client_order_id)?;
        for (method, listed) in [("OpenOrders", "open"), ("ClosedOrders", "closed")] {
            let result = self.client.private(
                method,
                &[("trades", "true".into()), ("cl_ord_id", cl_ord_id.clone())],
                Action::Query,
            )?;
            let found = wire::orders(&result[listed])?
                .into_iter()
                .filter(|o| o.client_order_id.as_deref() == Some(client_order_id.as_str()))
                .max_by_key(|o| o.updated_ms);
            if let Some(order) = found {
                self.remember_txid(
                    &client_order_id,
                    &query.symbol,
                    &order.order_id,
                    order.updated_ms,
                );
                return Ok(order);
            }
        }
        Err(BrokerError::NotFound(format!(
            "Kraken knows no order with client order id {client_order_id}"
        )))
    }

    /// The trades of `order`.
    fn executions_of(&mut self, order: &VenueOrder) -> Result<Vec<Execution>, BrokerError> {
        let mut found: Vec<Execution> = Vec::new();
        for ids in order.trades.chunks(QUERY_TRADES_MAX) {
            let result =
                self.client
                    .private("QueryTrades", &[("txid", ids.join(","))], Action::Query)?;
            found.extend(wire::executions(&result)?);
        }
        found.sort_by(|a, b| (a.time_ms, &a.trade_id).cmp(&(b.time_ms, &b.trade_id)));
        found.dedup_by(|a, b| a.trade_id == b.trade_id);
        Ok(found)
    }

    fn report(
        &mut self,
        symbol: &str,
        order: &VenueOrder,
        client_order_id: &str,
        reason: Option<String>,
    ) -> Result<OrderReport, BrokerError> {
        let executions = self.executions_of(order)?;
        Ok(order.report(symbol, client_order_id, &executions, reason))
    }

    pub fn get(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let order = self.find(query)?;
        let client_order_id = query
            .client_order_id
            .clone()
            .unwrap_or_else(|| self.client_order_id_of(&order));
        self.report(&query.symbol, &order, &client_order_id, None)
    }

    pub fn open_orders(&mut self, symbol: Option<&str>) -> Result<Vec<OrderReport>, BrokerError> {
        let wanted = symbol.map(|s| self.pair(s)).transpose()?;
        let result =
            self.client
                .private("OpenOrders", &[("trades", "true".into())], Action::Read)?;
        let mut reports = Vec::new();
        for order in wire::orders(&result["open"])? {
            let symbol = match &wanted {
                Some(pair) if pair.names(&order.pair) => pair.symbol.clone(),
                Some(_) => continue,
                None => match self.symbol_of(&order.pair)? {
                    Some(symbol) => symbol,
                    None => continue,
                },
            };
            let client_order_id = self.client_order_id_of(&order);
            reports.push(self.report(&symbol, &order, &client_order_id, None)?);
        }
        Ok(reports)
    }

    /// One `TradesHistory` page: its trades and how many there are since `start` in all.
    fn trades_page(
        &mut self,
        start: i64,
        offset: usize,
    ) -> Result<(Vec<Execution>, usize), BrokerError> {
        let result = self.client.private(
            "TradesHistory",
            &[("start", start.to_string()), ("ofs", offset.to_string())],
            Action::Query,
        )?;
        let count = result["count"].as_u64().unwrap_or(0) as usize;
        Ok((wire::executions(&result["trades"])?, count))
    }

    pub fn fills_since(
        &mut self,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Vec<Fill>, BrokerError> {
        let wanted = symbol.map(|s| self.pair(s)).transpose()?;
        // Kraken's start is a whole second, exclusive; trades before `since_ms` are dropped below.
        let start = since_ms.div_euclid(1_000) - 1;
        let (first, count) = self.trades_page(start, 0)?;
        let mut trades = first;
        if count > TRADES_PAGE {
            // Newest first: the oldest MOST_FILLS are the last pages.
            let from = count.saturating_sub(MOST_FILLS);
            let mut offset = if from == 0 {
                TRADES_PAGE
            } else {
                trades.clear();
                from
            };
            while offset < count {
                let (page, _) = self.trades_page(start, offset)?;
                trades.extend(page);
                offset += TRADES_PAGE;
            }
        }
        let mut seen = BTreeSet::new();
        trades.retain(|t| t.time_ms >= since_ms && seen.insert(t.trade_id.clone()));
        trades.sort_by(|a, b| (a.time_ms, &a.trade_id).cmp(&(b.time_ms, &b.trade_id)));
        let mut fills = Vec::with_capacity(trades.len());
        for trade in trades {
            let symbol = match &wanted {
                Some(pair) if pair.names(&trade.pair) => pair.symbol.clone(),
                Some(_) => continue,
                None => match self.symbol_of(&trade.pair)? {
                    Some(symbol) => symbol,
                    None => continue,
                },
            };
            let client_order_id = self
                .remembered(&txid_key(&trade.order_id))
                .unwrap_or_default();
            fills.push(trade.to_fill(&client_order_id, &symbol));
            if fills.len() >= MOST_FILLS {
                break;
            }
        }
        Ok(fills)
    }

    pub fn cancel(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let order = self.find(query)?;
        if !matches!(
            order.status,
            OrderStatus::Open | OrderStatus::PartiallyFilled
        ) {
            let client_order_id = query
                .client_order_id
                .clone()
                .unwrap_or_else(|| self.client_order_id_of(&order));
            return self.report(&query.symbol, &order, &client_order_id, None);
        }
        match self.client.private(
            "CancelOrder",
            &[("txid", order.order_id.clone())],
            Action::Cancel,
        ) {
            // Gone already, or now cancelled: its report as it ended.
            Ok(_) | Err(BrokerError::NotFound(_)) => {}
            Err(err) => return Err(err),
        }
        let query = OrderQuery {
            order_id: Some(order.order_id.clone()),
            ..query.clone()
        };
        let mut report = self.get(&query)?;
        if report.status == OrderStatus::Cancelled && report.reason.is_none() {
            report.reason = Some("cancelled on request".into());
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Settings;
    use exchange_kit::request::{HttpError, Scripted};
    use tradehost_sdk::types::OrderSide;

    const SECRET: &str =
        "kQH5HW/8p1uGOVjbgWA7FunAmGO8lsSUXNsu3eow76sz84Q18fWxnyRzBHCd3pd5nE9qa99HAZtuZuj6F1huXg==";
    const ID: &str = "th-0123456789abcdef0123456789abcdef";
    const CL_ORD_ID: &str = "01234567-89ab-cdef-0123-456789abcdef";

    fn settings() -> Settings {
        Settings::new(
            &|key: &str| (key == "base_url").then(|| "https://kraken.test".to_string()),
            &[],
        )
        .unwrap()
    }

    fn kraken<'a>(
        http: &'a mut Scripted,
        store: &'a mut BTreeMap<String, String>,
        settings: &'a Settings,
    ) -> Kraken<'a, Scripted, BTreeMap<String, String>> {
        Kraken {
            client: Client {
                http,
                store: Some(store),
                settings,
                api_key: "key",
                secret: SECRET,
                now_ms: 1_700_000_000_000,
                last_nonce: 0,
            },
        }
    }

    fn ok(result: Value) -> Value {
        json!({"error": [], "result": result})
    }

    fn body(request: &exchange_kit::request::Request) -> String {
        String::from_utf8(request.body.clone()).unwrap()
    }

    fn order() -> OrderRequest {
        OrderRequest {
            client_order_id: ID.into(),
            symbol: "BTC-USD".into(),
            side: OrderSide::Buy,
            quantity: "0.01".into(),
            kind: OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        }
    }

    fn filled_order() -> Value {
        json!({
            "OABC12-DEF34-GHI567": {
                "refid": null, "userref": 0, "cl_ord_id": CL_ORD_ID, "status": "closed", "reason": null,
                "opentm": 1700000000.0, "closetm": 1700000000.3, "starttm": 0, "expiretm": 0,
                "descr": {"pair": "XBTUSD", "type": "buy", "ordertype": "market", "price": "0", "price2": "0", "leverage": "none", "order": "buy 0.01000000 XBTUSD @ market", "close": ""},
                "vol": "0.01000000", "vol_exec": "0.01000000", "cost": "600.0", "fee": "0.6", "price": "60000.0",
                "stopprice": "0", "limitprice": "0", "misc": "", "oflags": "fciq",
                "trades": ["TAAAAA-BBBBB-CCCCC1", "TAAAAA-BBBBB-CCCCC2"]
            }
        })
    }

    fn trades() -> Value {
        json!({
            "TAAAAA-BBBBB-CCCCC2": {"ordertxid": "OABC12-DEF34-GHI567", "pair": "XXBTZUSD", "time": 1700000000.3, "type": "buy", "ordertype": "market", "price": "60010.0", "cost": "300.05", "fee": "0.30005", "vol": "0.005", "margin": "0", "misc": ""},
            "TAAAAA-BBBBB-CCCCC1": {"ordertxid": "OABC12-DEF34-GHI567", "pair": "XXBTZUSD", "time": 1700000000.1, "type": "buy", "ordertype": "market", "price": "60000.0", "cost": "300.0", "fee": "0.3", "vol": "0.005", "margin": "0", "misc": ""}
        })
    }

    #[test]
    fn an_order_is_signed_sent_once_and_followed_by_its_txid() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(
            200,
            ok(json!({"descr": {"order": "buy 0.01000000 XBTUSD @ market"}, "txid": ["OABC12-DEF34-GHI567"]})),
        );
        let placed = kraken(&mut http, &mut store, &settings)
            .place(&order())
            .unwrap();
        // Kraken's answer names the order only: the host follows it up.
        assert_eq!(
            (
                placed.order_id.as_str(),
                placed.status,
                placed.filled_quantity.as_str()
            ),
            ("OABC12-DEF34-GHI567", OrderStatus::Open, "0")
        );
        let sent = &http.sent[0];
        assert_eq!(sent.url, "https://kraken.test/0/private/AddOrder");
        assert_eq!(
            body(sent),
            format!(
                "nonce=1700000000000500&pair=XBTUSD&type=buy&ordertype=market&volume=0.01&oflags=fciq&cl_ord_id={CL_ORD_ID}"
            )
        );
        let sign = sent.headers.iter().find(|h| h.name == "API-Sign").unwrap();
        assert_eq!(
            sign.value,
            crate::sign::signature(
                &crate::sign::decode_secret(SECRET).unwrap(),
                "/0/private/AddOrder",
                "1700000000000500",
                &body(sent)
            )
        );
        assert_eq!(
            store.get("txid/OABC12-DEF34-GHI567").map(String::as_str),
            Some(ID)
        );

        // The same client order id again: asked about by txid, not placed.
        http.answer(200, ok(filled_order()));
        http.answer(200, ok(trades()));
        let again = kraken(&mut http, &mut store, &settings)
            .place(&order())
            .unwrap();
        assert_eq!(again.status, OrderStatus::Filled);
        assert_eq!(again.client_order_id, ID);
        assert_eq!(
            again
                .fills
                .iter()
                .map(|f| f.trade_id.as_str())
                .collect::<Vec<_>>(),
            vec!["TAAAAA-BBBBB-CCCCC1", "TAAAAA-BBBBB-CCCCC2"]
        );
        assert_eq!(again.fills[1].fee, "0.30005");
        assert_eq!(again.fills[0].timestamp_ms, 1_700_000_000_100);
        assert!(http.sent[1].url.ends_with("/0/private/QueryOrders"));
        assert!(body(&http.sent[1]).ends_with("&trades=true&txid=OABC12-DEF34-GHI567"));
        assert!(body(&http.sent[2]).ends_with("&txid=TAAAAA-BBBBB-CCCCC1%2CTAAAAA-BBBBB-CCCCC2"));
        assert_eq!(
            http.sent
                .iter()
                .filter(|r| r.url.ends_with("AddOrder"))
                .count(),
            1
        );
    }

    #[test]
    fn an_order_whose_answer_was_lost_is_found_by_client_order_id() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.fail(HttpError::Timeout);
        assert!(matches!(
            kraken(&mut http, &mut store, &settings).place(&order()),
            Err(BrokerError::Timeout(_))
        ));
        // Not open any more; among the closed orders.
        http.answer(200, ok(json!({"open": {}})));
        http.answer(200, ok(json!({"closed": filled_order(), "count": 1})));
        http.answer(200, ok(trades()));
        let query = OrderQuery {
            symbol: "BTC-USD".into(),
            client_order_id: Some(ID.into()),
            order_id: None,
        };
        let report = kraken(&mut http, &mut store, &settings)
            .get(&query)
            .unwrap();
        assert_eq!(report.order_id, "OABC12-DEF34-GHI567");
        assert_eq!(report.fills.len(), 2);
        assert!(http.sent[1].url.ends_with("/0/private/OpenOrders"));
        assert!(body(&http.sent[1]).ends_with(&format!("&trades=true&cl_ord_id={CL_ORD_ID}")));
        assert!(http.sent[2].url.ends_with("/0/private/ClosedOrders"));
        // Remembered: the next question goes by txid.
        http.answer(200, ok(filled_order()));
        http.answer(200, ok(trades()));
        kraken(&mut http, &mut store, &settings)
            .get(&query)
            .unwrap();
        assert!(http.sent[4].url.ends_with("/0/private/QueryOrders"));
        // An id Kraken never saw.
        http.answer(200, ok(json!({"open": {}})));
        http.answer(200, ok(json!({"closed": {}, "count": 0})));
        let unknown = OrderQuery {
            client_order_id: Some("th-ffffffffffffffffffffffffffffffff".into()),
            ..query
        };
        assert!(matches!(
            kraken(&mut http, &mut store, &settings).get(&unknown),
            Err(BrokerError::NotFound(_))
        ));
    }

    #[test]
    fn balances_name_assets_the_tradehost_way_and_remember_the_names() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        let balance = ok(json!({
            "ZUSD": {"balance": "99399.4", "hold_trade": "100.0"},
            "XXBT": {"balance": "0.0100000000", "hold_trade": "0.0000000000"},
            "XBT.F": {"balance": "0.002", "hold_trade": "0"},
            "ETH2.S": {"balance": "1.5", "hold_trade": "0"},
            "SOL": {"balance": "0.0000000000", "hold_trade": "0.0000000000"},
            "ZFOO": {"balance": "3", "hold_trade": "1"}
        }));
        http.answer(200, balance.clone());
        http.answer(
            200,
            ok(json!({
                "ZFOO": {"aclass": "currency", "altname": "FOO", "decimals": 10, "display_decimals": 5, "status": "enabled"}
            })),
        );
        let balances = kraken(&mut http, &mut store, &settings).balances().unwrap();
        let listed: Vec<(&str, &str, &str)> = balances
            .iter()
            .map(|b| (b.asset.as_str(), b.free.as_str(), b.locked.as_str()))
            .collect();
        assert_eq!(
            listed,
            vec![
                ("BTC", "0.012", "0"),
                ("FOO", "2", "1"),
                ("USD", "99299.4", "100")
            ]
        );
        // Only the asset whose name cannot be told is looked up.
        assert!(http.sent[1].url.ends_with("/0/public/Assets?asset=ZFOO"));
        // Known now: positions need no second lookup.
        http.answer(200, balance);
        let positions = kraken(&mut http, &mut store, &settings)
            .positions()
            .unwrap();
        assert_eq!(
            positions
                .iter()
                .map(|p| (p.symbol.as_str(), p.quantity.as_str()))
                .collect::<Vec<_>>(),
            vec![("BTC-USD", "0.012"), ("FOO-USD", "3")]
        );
        assert_eq!(http.sent.len(), 3);
    }

    #[test]
    fn fills_since_reads_the_oldest_pages_of_one_pair() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(
            200,
            ok(json!({"XXBTZUSD": {"altname": "XBTUSD", "wsname": "XBT/USD", "pair_decimals": 1, "lot_decimals": 8, "ordermin": "0.0001", "costmin": "0.5", "tick_size": "0.1"}})),
        );
        let trade = |n: u32, pair: &str, time: f64| {
            (
                format!("T{n:05}-AAAAA-BBBBBB"),
                json!({"ordertxid": "OABC12-DEF34-GHI567", "pair": pair, "time": time, "type": "sell", "ordertype": "market", "price": "60000", "cost": "60", "fee": "0.06", "vol": "0.001", "misc": ""}),
            )
        };
        // 60 trades since the cursor: the newest 50, then the oldest 10.
        let newest: serde_json::Map<String, Value> = (10..60)
            .map(|n| trade(n, "XXBTZUSD", 1_700_000_100.0 + f64::from(n)))
            .collect();
        let oldest: serde_json::Map<String, Value> = (0..10)
            .map(|n| {
                let pair = if n == 3 { "XETHZUSD" } else { "XXBTZUSD" };
                trade(n, pair, 1_700_000_100.0 + f64::from(n))
            })
            .collect();
        http.answer(200, ok(json!({"trades": newest, "count": 60})));
        http.answer(200, ok(json!({"trades": oldest, "count": 60})));
        store.insert("txid/OABC12-DEF34-GHI567".to_string(), ID.to_string());
        let fills = kraken(&mut http, &mut store, &settings)
            .fills_since(1_700_000_100_500, Some("BTC-USD"))
            .unwrap();
        // Trade 0 is before the cursor, trade 3 is another pair.
        assert_eq!(fills.len(), 58);
        assert_eq!(fills[0].trade_id, "T00001-AAAAA-BBBBBB");
        assert_eq!(fills[0].client_order_id, ID);
        assert!(
            fills
                .windows(2)
                .all(|w| w[0].timestamp_ms <= w[1].timestamp_ms)
        );
        assert!(body(&http.sent[1]).ends_with("&start=1700000099&ofs=0"));
        assert!(body(&http.sent[2]).ends_with("&start=1700000099&ofs=50"));
        assert_eq!(http.sent.len(), 3);
    }

    #[test]
    fn candles_come_from_ohlc_up_to_the_end() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(
            200,
            ok(json!({
                "XXBTZUSD": [
                    [1700000040, "1", "2", "0.5", "1.5", "1.2", "10", 3],
                    [1700000100, "1.5", "2", "1", "1.8", "1.6", "11", 4],
                    [1700000160, "1.8", "2", "1.7", "1.9", "1.8", "12", 5]
                ],
                "last": 1700000100
            })),
        );
        let candles = kraken(&mut http, &mut store, &settings)
            .candles("BTC-USD", "1m", 2, 1_700_000_150_000)
            .unwrap();
        assert_eq!(
            candles.iter().map(|c| c.timestamp_ms).collect::<Vec<_>>(),
            vec![1_700_000_040_000, 1_700_000_100_000]
        );
        assert_eq!(
            http.sent[0].url,
            "https://kraken.test/0/public/OHLC?pair=XBTUSD&interval=1&since=1699999970"
        );
        assert!(matches!(
            kraken(&mut http, &mut store, &settings).candles("BTC-USD", "3m", 2, 0),
            Err(BrokerError::Invalid(_))
        ));
    }

    #[test]
    fn a_limit_order_is_cancelled_and_reported() {
        let settings = settings();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        let limit = OrderRequest {
            kind: OrderKind::Limit,
            limit_price: Some("59000.50".into()),
            ..order()
        };
        http.answer(
            200,
            ok(json!({"descr": {"order": "buy"}, "txid": ["OLIMIT-AAAAA-BBBBBB"]})),
        );
        let resting = kraken(&mut http, &mut store, &settings)
            .place(&limit)
            .unwrap();
        assert_eq!(resting.status, OrderStatus::Open);
        assert!(
            body(&http.sent[0])
                .contains("&ordertype=limit&price=59000.5&timeinforce=GTC&volume=0.01&")
        );
        let open = json!({"OLIMIT-AAAAA-BBBBBB": {"cl_ord_id": CL_ORD_ID, "status": "open", "opentm": 1700000000.0, "descr": {"pair": "XBTUSD", "type": "buy"}, "vol": "0.01", "vol_exec": "0"}});
        let cancelled = json!({"OLIMIT-AAAAA-BBBBBB": {"cl_ord_id": CL_ORD_ID, "status": "canceled", "opentm": 1700000000.0, "closetm": 1700000001.0, "descr": {"pair": "XBTUSD", "type": "buy"}, "vol": "0.01", "vol_exec": "0"}});
        http.answer(200, ok(open));
        http.answer(200, ok(json!({"count": 1, "pending": false})));
        http.answer(200, ok(cancelled));
        let query = OrderQuery {
            symbol: "BTC-USD".into(),
            client_order_id: Some(ID.into()),
            order_id: None,
        };
        let report = kraken(&mut http, &mut store, &settings)
            .cancel(&query)
            .unwrap();
        assert_eq!(report.status, OrderStatus::Cancelled);
        assert_eq!(report.reason.as_deref(), Some("cancelled on request"));
        assert!(body(&http.sent[2]).ends_with("&txid=OLIMIT-AAAAA-BBBBBB"));
        assert!(http.sent[2].url.ends_with("/0/private/CancelOrder"));
        // Open orders of one symbol carry their client order ids.
        http.answer(200, ok(json!({"XXBTZUSD": {"altname": "XBTUSD", "wsname": "XBT/USD", "pair_decimals": 1, "lot_decimals": 8}})));
        http.answer(200, ok(json!({"open": {"OLIMIT-AAAAA-BBBBBB": {"cl_ord_id": CL_ORD_ID, "status": "open", "opentm": 1700000000.0, "descr": {"pair": "XBTUSD", "type": "buy"}, "vol": "0.01", "vol_exec": "0"}, "OOTHER-AAAAA-BBBBBB": {"status": "open", "opentm": 1700000000.0, "descr": {"pair": "ETHUSD", "type": "sell"}, "vol": "1", "vol_exec": "0"}}})));
        let open = kraken(&mut http, &mut store, &settings)
            .open_orders(Some("BTC-USD"))
            .unwrap();
        assert_eq!(open.len(), 1);
        assert_eq!(open[0].client_order_id, ID);
    }

    #[test]
    fn validation_reads_the_account_and_probes_trading_without_placing() {
        let settings = settings();
        let mut http = Scripted::default();
        http.answer(
            200,
            ok(json!({"ZUSD": {"balance": "1", "hold_trade": "0"}})),
        );
        http.answer(
            200,
            ok(json!({"descr": {"order": "buy 1.00000000 XBTUSD @ limit 1.0"}})),
        );
        let mut client = Kraken {
            client: Client {
                http: &mut http,
                store: None::<&mut BTreeMap<String, String>>,
                settings: &settings,
                api_key: "key",
                secret: SECRET,
                now_ms: 1_700_000_000_000,
                last_nonce: 0,
            },
        };
        assert_eq!(
            client.validate().unwrap().permissions,
            vec!["read", "trade"]
        );
        client.client.http.answer(
            200,
            ok(json!({"ZUSD": {"balance": "1", "hold_trade": "0"}})),
        );
        client
            .client
            .http
            .answer(200, json!({"error": ["EGeneral:Permission denied"]}));
        assert_eq!(client.validate().unwrap().permissions, vec!["read"]);
        client
            .client
            .http
            .answer(200, json!({"error": ["EAPI:Invalid signature"]}));
        assert!(matches!(client.validate(), Err(BrokerError::Auth(_))));
        let sent = &client.client.http.sent;
        assert!(body(&sent[1]).ends_with("&validate=true"));
        // Nonces from the clock alone, still growing within the call.
        assert_eq!(
            sent.iter()
                .map(|r| body(r).split('&').next().unwrap().to_string())
                .collect::<Vec<_>>()[..3],
            [
                "nonce=1700000000000000",
                "nonce=1700000000000001",
                "nonce=1700000000000002"
            ]
        );
    }
}
