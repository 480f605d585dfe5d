//! The paper venue's book: each account's orders, fills, holdings and cash, kept in the host's
//! store for the plugin, so the venue remembers what it accepted whatever happens to the host.
//!
//! An order is planned when it is accepted: it fills in `fill_parts` parts (sizes split
//! deterministically from the seed and the client order id), the first at once and each next one
//! `fill_delay_ms` later. Nothing runs in the background: every call first brings the account up
//! to the present, filling the parts that have come due at the prices of the moments they came due,
//! so the book is the same however often, or how late, anyone looks. A limit order's part fills
//! once it is due and the market has reached the limit.
//!
//! Keys of one account's store:
//! - `order/<client order id>`: an [`Order`] as JSON;
//! - `id/<venue order id>`: its client order id;
//! - `open/<client order id>`: present while the order works;
//! - `fill/<time, 13 digits>/<trade id>`: a [`Fill`] as JSON (for `fills-since`);
//! - `account`: the [`Account`] (cash per asset, holdings).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde::{Deserialize, Serialize};
use tradehost_sdk::broker::BrokerPosition;
use tradehost_sdk::types::{
    AssetBalance, BrokerError, Fill as WireFill, OrderKind, OrderQuery, OrderReport, OrderRequest,
    OrderSide, OrderStatus, Side,
};

use crate::PaperConfig;
use crate::market::{Interval, hash_bytes, validate_symbol};
use crate::pricing::{self, SCALE};

/// Longest accepted client order id, in bytes.
const MAX_CLIENT_ORDER_ID_LEN: usize = 64;
/// Most fills `fills-since` answers at once.
const MAX_FILLS: u32 = 1000;
/// Minutes of market a resting limit order is checked against per call.
const LIMIT_SCAN_MINUTES: u32 = 1000;
/// Most changes one store write may carry.
const MAX_CHANGES: usize = 256;

// The account's durable storage: the host's `store` inside the component, a map in tests.
#[cfg(target_arch = "wasm32")]
pub use tradehost_sdk::store::HostStore;
pub use tradehost_sdk::store::Store;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    PartiallyFilled,
    Filled,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub due_at: i64,
    pub quantity: Decimal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fill {
    pub trade_id: String,
    pub order_id: String,
    pub client_order_id: String,
    pub symbol: String,
    pub buy: bool,
    pub quantity: Decimal,
    pub price: Decimal,
    pub fee: Decimal,
    pub at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub order_id: String,
    pub client_order_id: String,
    pub symbol: String,
    pub buy: bool,
    pub limit_price: Option<Decimal>,
    pub quantity: Decimal,
    pub reduce_only: bool,
    pub placed_at: i64,
    pub status: Status,
    pub parts: Vec<Part>,
    pub fills: Vec<Fill>,
    /// A resting limit order has been checked against the market up to here.
    pub checked_until: i64,
    pub reason: Option<String>,
    pub updated_at: i64,
}

impl Order {
    fn side(&self) -> OrderSide {
        if self.buy {
            OrderSide::Buy
        } else {
            OrderSide::Sell
        }
    }

    pub fn filled(&self) -> Decimal {
        self.fills.iter().map(|f| f.quantity).sum()
    }

    pub fn working(&self) -> bool {
        matches!(self.status, Status::Open | Status::PartiallyFilled)
    }

    pub fn report(&self) -> OrderReport {
        OrderReport {
            order_id: self.order_id.clone(),
            client_order_id: self.client_order_id.clone(),
            symbol: self.symbol.clone(),
            side: self.side(),
            status: match self.status {
                Status::Open => OrderStatus::Open,
                Status::PartiallyFilled => OrderStatus::PartiallyFilled,
                Status::Filled => OrderStatus::Filled,
                Status::Cancelled => OrderStatus::Cancelled,
            },
            quantity: text(self.quantity),
            filled_quantity: text(self.filled()),
            fills: self.fills.iter().map(Fill::wire).collect(),
            reason: self.reason.clone(),
            updated_at_ms: self.updated_at,
        }
    }

    /// Whether `request` asks for this same order (a retry of it).
    fn same_as(&self, request: &Request) -> bool {
        self.symbol == request.symbol
            && self.buy == request.buy
            && self.quantity == request.quantity
            && self.limit_price == request.limit_price
            && self.reduce_only == request.reduce_only
    }
}

impl Fill {
    pub fn wire(&self) -> WireFill {
        WireFill {
            trade_id: self.trade_id.clone(),
            order_id: self.order_id.clone(),
            client_order_id: self.client_order_id.clone(),
            symbol: self.symbol.clone(),
            side: if self.buy {
                OrderSide::Buy
            } else {
                OrderSide::Sell
            },
            quantity: text(self.quantity),
            price: text(self.price),
            fee: text(self.fee),
            timestamp_ms: self.at,
        }
    }

    fn key(&self) -> String {
        format!("fill/{:013}/{}", self.at.max(0), self.trade_id)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Holding {
    /// Signed: negative is short.
    pub quantity: Decimal,
    pub entry_price: Decimal,
}

/// The cash the venue's fills moved, per asset (an account starts at zero: the paper account's
/// capital is the host's), and what it holds of each symbol.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Account {
    pub cash: BTreeMap<String, Decimal>,
    pub holdings: BTreeMap<String, Holding>,
}

impl Account {
    fn apply(&mut self, fill: &Fill) {
        let quote = fill.symbol.split_once('-').map_or("USD", |(_, q)| q);
        // Cash settles to SCALE places, half to even, as the books do.
        let notional = (fill.quantity * fill.price).round_dp(SCALE);
        let cash = self.cash.entry(quote.to_string()).or_default();
        *cash += if fill.buy { -notional } else { notional } - fill.fee;
        let holding = self.holdings.entry(fill.symbol.clone()).or_default();
        let signed = if fill.buy {
            fill.quantity
        } else {
            -fill.quantity
        };
        let before = holding.quantity;
        let after = before + signed;
        holding.entry_price = if before.is_zero()
            || (before.is_sign_negative() != after.is_sign_negative() && !after.is_zero())
        {
            // Opened, or flipped through zero: the rest is at this fill's price.
            fill.price
        } else if before.is_sign_negative() == signed.is_sign_negative() {
            // Grown: the weighted average.
            ((before.abs() * holding.entry_price + fill.quantity * fill.price) / after.abs())
                .round_dp(SCALE)
        } else {
            holding.entry_price
        };
        holding.quantity = after;
        if after.is_zero() {
            self.holdings.remove(&fill.symbol);
        }
    }
}

/// An order request with its numbers parsed.
struct Request {
    client_order_id: String,
    symbol: String,
    buy: bool,
    quantity: Decimal,
    limit_price: Option<Decimal>,
    reduce_only: bool,
}

/// A decimal as the interface writes it: no trailing zeros.
fn text(value: Decimal) -> String {
    value.normalize().to_string()
}

fn invalid<T>(message: impl Into<String>) -> Result<T, BrokerError> {
    Err(BrokerError::Invalid(message.into()))
}

fn parse_decimal(field: &str, text: &str) -> Result<Decimal, BrokerError> {
    let valid = !text.is_empty()
        && text.len() <= 40
        && text.trim_start_matches('-').split('.').count() <= 2
        && text
            .trim_start_matches('-')
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
        && !text.trim_start_matches('-').starts_with('.')
        && !text.ends_with('.');
    match text.parse::<Decimal>() {
        Ok(value) if valid => Ok(value),
        _ => invalid(format!("{field} `{text}` is not a decimal number")),
    }
}

/// Whether `value` is a whole number of `step`s.
fn on_step(value: Decimal, step: Decimal) -> bool {
    step.is_zero() || (value % step).is_zero()
}

fn unavailable(err: String) -> BrokerError {
    BrokerError::Unavailable(format!("the paper venue's store failed: {err}"))
}

/// One account of the paper venue.
pub struct Venue<'a, S: Store> {
    pub store: &'a mut S,
    pub config: &'a PaperConfig,
    pub now: i64,
}

impl<S: Store> Venue<'_, S> {
    fn load_order(&self, client_order_id: &str) -> Result<Option<Order>, BrokerError> {
        match self.store.get(&format!("order/{client_order_id}")) {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|err| unavailable(format!("order {client_order_id}: {err}"))),
        }
    }

    pub fn account(&self) -> Result<Account, BrokerError> {
        match self.store.get("account") {
            None => Ok(Account::default()),
            Some(text) => {
                serde_json::from_str(&text).map_err(|err| unavailable(format!("account: {err}")))
            }
        }
    }

    fn encode<T: Serialize>(value: &T) -> String {
        serde_json::to_string(value).expect("venue records serialise")
    }

    /// Brings every working order up to now: the parts that came due fill.
    pub fn advance(&mut self) -> Result<Account, BrokerError> {
        let mut account = self.account()?;
        let mut after: Option<String> = None;
        loop {
            let page = self.store.scan("open/", after.as_deref(), 1000);
            let Some((last, _)) = page.last() else { break };
            after = Some(last.clone());
            for (key, _) in &page {
                let client_order_id = &key["open/".len()..];
                let Some(mut order) = self.load_order(client_order_id)? else {
                    self.store
                        .write(vec![(key.clone(), None)])
                        .map_err(unavailable)?;
                    continue;
                };
                let before = order.fills.len();
                let checked = order.checked_until;
                self.fill_due(&mut order, &mut account);
                if order.fills.len() != before || order.checked_until != checked {
                    let changes = self.order_changes(&order, before, &account, true);
                    self.store.write(changes).map_err(unavailable)?;
                }
            }
            if page.len() < 1000 {
                break;
            }
        }
        Ok(account)
    }

    /// Writes for an order whose fills from `first_new` on are new. `listed`: the order may be
    /// among the working ones (`open/`), so an order that stopped working is taken off; a new
    /// order that never worked has nothing there to remove.
    fn order_changes(
        &self,
        order: &Order,
        first_new: usize,
        account: &Account,
        listed: bool,
    ) -> Vec<(String, Option<String>)> {
        let mut changes = vec![
            (
                format!("order/{}", order.client_order_id),
                Some(Self::encode(order)),
            ),
            ("account".to_string(), Some(Self::encode(account))),
        ];
        if listed || order.working() {
            changes.push((
                format!("open/{}", order.client_order_id),
                order.working().then(String::new),
            ));
        }
        for fill in &order.fills[first_new..] {
            changes.push((fill.key(), Some(Self::encode(fill))));
        }
        debug_assert!(changes.len() <= MAX_CHANGES);
        changes
    }

    /// Fills the parts of `order` that are due, at the prices of their moments.
    fn fill_due(&self, order: &mut Order, account: &mut Account) {
        let market = self.config.market();
        let costs = &self.config.costs;
        while order.working() {
            let index = order.fills.len();
            let Some(part) = order.parts.get(index).cloned() else {
                break;
            };
            if part.due_at > self.now {
                break;
            }
            let fill_at_price = match order.limit_price {
                None => Some((
                    part.due_at,
                    pricing::market_price(&market, costs, &order.symbol, order.side(), part.due_at),
                )),
                Some(limit) => self.limit_fill(order, limit, part.due_at),
            };
            let Some((at, price)) = fill_at_price else {
                break;
            };
            let fill = Fill {
                trade_id: format!("{}-{}", order.order_id, index + 1),
                order_id: order.order_id.clone(),
                client_order_id: order.client_order_id.clone(),
                symbol: order.symbol.clone(),
                buy: order.buy,
                quantity: part.quantity,
                price,
                fee: pricing::fee(costs, part.quantity, price),
                at,
            };
            account.apply(&fill);
            order.fills.push(fill);
            order.updated_at = at;
            order.status = if order.fills.len() == order.parts.len() {
                Status::Filled
            } else {
                Status::PartiallyFilled
            };
        }
    }

    /// When and at what price a limit order's part due at `due_at` fills: at once if marketable
    /// then, else in the first later minute whose range reaches the limit.
    fn limit_fill(&self, order: &mut Order, limit: Decimal, due_at: i64) -> Option<(i64, Decimal)> {
        let market = self.config.market();
        let costs = &self.config.costs;
        let side = order.side();
        if due_at >= order.checked_until
            && let Some(price) =
                pricing::limit_price(&market, costs, &order.symbol, side, limit, due_at)
        {
            return Some((due_at, price));
        }
        let from = order.checked_until.max(due_at);
        let minute = Interval::OneMinute.millis();
        let first_start = from.div_euclid(minute) * minute + minute;
        let last_end = self.now.div_euclid(minute) * minute;
        if last_end <= first_start {
            return None;
        }
        let count = (((last_end - first_start) / minute) as u32).min(LIMIT_SCAN_MINUTES);
        let end = first_start + i64::from(count) * minute;
        for candle in market.candles(&order.symbol, Interval::OneMinute, count, end) {
            let price = pricing::exact(if order.buy { candle.low } else { candle.high });
            let reached = if order.buy {
                price <= limit
            } else {
                price >= limit
            };
            if reached {
                return Some((candle.timestamp_ms + minute - 1, limit));
            }
        }
        order.checked_until = end;
        None
    }

    fn request(&self, order: &OrderRequest) -> Result<Request, BrokerError> {
        let id = order.client_order_id.trim();
        if id.is_empty()
            || id.len() > MAX_CLIENT_ORDER_ID_LEN
            || !id.bytes().all(|b| b.is_ascii_graphic())
        {
            return invalid(format!(
                "client order id must be 1 to {MAX_CLIENT_ORDER_ID_LEN} printable characters"
            ));
        }
        validate_symbol(&order.symbol).map_err(BrokerError::Invalid)?;
        let quantity = parse_decimal("quantity", &order.quantity)?;
        if quantity <= Decimal::ZERO {
            return invalid(format!("quantity must be positive, got {quantity}"));
        }
        let rules = &self.config.rules;
        if !on_step(quantity, rules.lot_size) {
            return invalid(format!(
                "quantity {quantity} is not a multiple of the lot size {}",
                rules.lot_size
            ));
        }
        let limit_price = match (order.kind, &order.limit_price) {
            (OrderKind::Market, _) => None,
            (OrderKind::Limit, None) => return invalid("a limit order needs a limit price"),
            (OrderKind::Limit, Some(text)) => {
                let limit = parse_decimal("limit price", text)?;
                if limit <= Decimal::ZERO {
                    return invalid(format!("limit price must be positive, got {limit}"));
                }
                if !on_step(limit, rules.tick_size) {
                    return invalid(format!(
                        "limit price {limit} is not on the tick {}",
                        rules.tick_size
                    ));
                }
                Some(limit)
            }
        };
        let buy = order.side == OrderSide::Buy;
        let reference = limit_price.unwrap_or_else(|| {
            pricing::exact(self.config.market().mid_price(&order.symbol, self.now))
        });
        if quantity * reference < rules.min_notional {
            return invalid(format!(
                "order value {} is below the minimum of {}",
                (quantity * reference).round_dp(2),
                rules.min_notional
            ));
        }
        Ok(Request {
            client_order_id: id.to_string(),
            symbol: order.symbol.clone(),
            buy,
            quantity,
            limit_price,
            reduce_only: order.reduce_only,
        })
    }

    /// The sizes and due times of an order's parts.
    fn plan(&self, request: &Request) -> Vec<Part> {
        let parts = self.config.fill_parts.max(1);
        let lot = self.config.rules.lot_size.max(Decimal::new(1, SCALE));
        // Every part at least one lot.
        let lots = (request.quantity / lot)
            .trunc()
            .to_u32()
            .unwrap_or(u32::MAX);
        let parts = parts.min(lots.max(1));
        let weights: Vec<Decimal> = (0..parts)
            .map(|i| {
                let hash = hash_bytes(
                    format!("{}:{}:{i}", self.config.seed, request.client_order_id).as_bytes(),
                );
                Decimal::from(1000 + hash % 1000)
            })
            .collect();
        let total: Decimal = weights.iter().sum();
        let mut left = request.quantity;
        let mut plan = Vec::new();
        for (i, weight) in weights.iter().enumerate() {
            let quantity = if i + 1 == weights.len() {
                left
            } else {
                let share = (request.quantity * weight / total / lot).trunc() * lot;
                share
                    .max(lot)
                    .min(left - lot * Decimal::from(weights.len() - i - 1))
            };
            left -= quantity;
            plan.push(Part {
                due_at: self.now + i as i64 * self.config.fill_delay_ms,
                quantity: quantity.normalize(),
            });
        }
        plan
    }

    pub fn place(&mut self, order: &OrderRequest) -> Result<OrderReport, BrokerError> {
        let request = self.request(order)?;
        let mut account = self.advance()?;
        if let Some(existing) = self.load_order(&request.client_order_id)? {
            if existing.same_as(&request) {
                return Ok(existing.report());
            }
            return Err(BrokerError::Rejected(format!(
                "client order id {} was used for a different order",
                request.client_order_id
            )));
        }
        // A reduce-only order never grows or flips what the venue holds. When it holds nothing of
        // the symbol the order is taken as closing a position the venue has no record of (one
        // opened before it kept a book).
        let held = account
            .holdings
            .get(&request.symbol)
            .map_or(Decimal::ZERO, |h| h.quantity);
        if request.reduce_only && !held.is_zero() {
            let reserved = self.working_reduce_only(&request.symbol, request.buy)?;
            let reducible = if request.buy { -held } else { held };
            if reducible <= Decimal::ZERO || request.quantity + reserved > reducible {
                return Err(BrokerError::Rejected(format!(
                    "reduce-only order for {} {} would not reduce the position of {held}",
                    request.quantity, request.symbol
                )));
            }
        }
        let order_id = pricing::order_id(&request.client_order_id);
        let mut order = Order {
            order_id: order_id.clone(),
            client_order_id: request.client_order_id.clone(),
            symbol: request.symbol.clone(),
            buy: request.buy,
            limit_price: request.limit_price,
            quantity: request.quantity,
            reduce_only: request.reduce_only,
            placed_at: self.now,
            status: Status::Open,
            parts: self.plan(&request),
            fills: Vec::new(),
            checked_until: self.now,
            reason: None,
            updated_at: self.now,
        };
        self.fill_due(&mut order, &mut account);
        let mut changes = self.order_changes(&order, 0, &account, false);
        changes.push((
            format!("id/{order_id}"),
            Some(order.client_order_id.clone()),
        ));
        self.store.write(changes).map_err(unavailable)?;
        Ok(order.report())
    }

    /// What working reduce-only orders on `symbol` and side still have to fill.
    fn working_reduce_only(&self, symbol: &str, buy: bool) -> Result<Decimal, BrokerError> {
        let mut reserved = Decimal::ZERO;
        for order in self.working_orders()? {
            if order.symbol == symbol && order.buy == buy && order.reduce_only {
                reserved += order.quantity - order.filled();
            }
        }
        Ok(reserved)
    }

    fn working_orders(&self) -> Result<Vec<Order>, BrokerError> {
        let mut orders = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.store.scan("open/", after.as_deref(), 1000);
            for (key, _) in &page {
                if let Some(order) = self.load_order(&key["open/".len()..])? {
                    orders.push(order);
                }
            }
            match page.last() {
                Some((last, _)) if page.len() == 1000 => after = Some(last.clone()),
                _ => return Ok(orders),
            }
        }
    }

    fn find(&self, query: &OrderQuery) -> Result<Order, BrokerError> {
        let client_order_id = match (&query.client_order_id, &query.order_id) {
            (Some(id), _) => Some(id.clone()),
            (None, Some(order_id)) => self.store.get(&format!("id/{order_id}")),
            (None, None) => return invalid("name the order by client order id or order id"),
        };
        let order = match client_order_id {
            Some(id) => self.load_order(&id)?,
            None => None,
        };
        match order {
            Some(order)
                if order.symbol == query.symbol
                    && query
                        .order_id
                        .as_ref()
                        .is_none_or(|id| *id == order.order_id) =>
            {
                Ok(order)
            }
            _ => Err(BrokerError::NotFound(format!(
                "no order {} on {}",
                query
                    .client_order_id
                    .as_deref()
                    .or(query.order_id.as_deref())
                    .unwrap_or_default(),
                query.symbol
            ))),
        }
    }

    pub fn get(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        self.advance()?;
        Ok(self.find(query)?.report())
    }

    pub fn open_orders(&mut self, symbol: Option<&str>) -> Result<Vec<OrderReport>, BrokerError> {
        self.advance()?;
        Ok(self
            .working_orders()?
            .iter()
            .filter(|o| symbol.is_none_or(|s| o.symbol == s))
            .map(Order::report)
            .collect())
    }

    pub fn cancel(&mut self, query: &OrderQuery) -> Result<OrderReport, BrokerError> {
        let account = self.advance()?;
        let mut order = self.find(query)?;
        if order.working() {
            order.status = Status::Cancelled;
            order.reason = Some("cancelled by request".into());
            order.updated_at = self.now;
            let first_new = order.fills.len();
            let changes = self.order_changes(&order, first_new, &account, true);
            self.store.write(changes).map_err(unavailable)?;
        }
        Ok(order.report())
    }

    pub fn fills_since(
        &mut self,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Vec<WireFill>, BrokerError> {
        self.advance()?;
        let mut fills = Vec::new();
        let mut after = format!("fill/{:013}/", since_ms.max(0));
        while fills.len() < MAX_FILLS as usize {
            let page = self.store.scan("fill/", Some(&after), 1000);
            for (_, value) in &page {
                let fill: Fill =
                    serde_json::from_str(value).map_err(|err| unavailable(err.to_string()))?;
                if symbol.is_none_or(|s| fill.symbol == s) && fills.len() < MAX_FILLS as usize {
                    fills.push(fill.wire());
                }
            }
            match page.last() {
                Some((last, _)) if page.len() == 1000 => after = last.clone(),
                _ => break,
            }
        }
        Ok(fills)
    }

    pub fn positions(&mut self) -> Result<Vec<BrokerPosition>, BrokerError> {
        let account = self.advance()?;
        Ok(account
            .holdings
            .iter()
            .map(|(symbol, holding)| BrokerPosition {
                symbol: symbol.clone(),
                side: if holding.quantity.is_sign_negative() {
                    Side::Short
                } else {
                    Side::Long
                },
                quantity: text(holding.quantity.abs()),
                entry_price: Some(text(holding.entry_price)),
            })
            .collect())
    }

    pub fn balances(&mut self) -> Result<Vec<AssetBalance>, BrokerError> {
        let account = self.advance()?;
        let mut balances: Vec<AssetBalance> = account
            .cash
            .iter()
            .map(|(asset, cash)| AssetBalance {
                asset: asset.clone(),
                free: text(*cash),
                locked: "0".into(),
            })
            .collect();
        for (symbol, holding) in &account.holdings {
            let base = symbol.split_once('-').map_or(symbol.as_str(), |(b, _)| b);
            balances.push(AssetBalance {
                asset: base.to_string(),
                free: text(holding.quantity),
                locked: "0".into(),
            });
        }
        Ok(balances)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PaperConfig, Rules};

    const NOW: i64 = 1_709_251_200_000;

    fn config(parts: u32, delay: i64) -> PaperConfig {
        PaperConfig {
            fill_parts: parts,
            fill_delay_ms: delay,
            ..PaperConfig::default()
        }
    }

    fn request(id: &str, side: OrderSide, quantity: &str) -> OrderRequest {
        OrderRequest {
            client_order_id: id.into(),
            symbol: "BTC-USD".into(),
            side,
            quantity: quantity.into(),
            kind: OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        }
    }

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    fn query(id: &str) -> OrderQuery {
        OrderQuery {
            symbol: "BTC-USD".into(),
            client_order_id: Some(id.into()),
            order_id: None,
        }
    }

    /// A store that keeps every key a write touched.
    #[derive(Default)]
    struct Recording {
        entries: BTreeMap<String, String>,
        written: Vec<(String, Option<String>)>,
    }

    impl Store for Recording {
        fn get(&self, key: &str) -> Option<String> {
            self.entries.get(key).cloned()
        }

        fn write(&mut self, changes: Vec<(String, Option<String>)>) -> Result<(), String> {
            self.written.extend(changes.iter().cloned());
            self.entries.write(changes)
        }

        fn scan(&self, prefix: &str, after: Option<&str>, limit: u32) -> Vec<(String, String)> {
            self.entries.scan(prefix, after, limit)
        }
    }

    impl Recording {
        fn touched(&self, key: &str) -> Vec<Option<String>> {
            self.written
                .iter()
                .filter(|(k, _)| k == key)
                .map(|(_, value)| value.clone())
                .collect()
        }
    }

    #[test]
    fn only_an_order_that_worked_is_listed_and_taken_off_the_working_ones() {
        let config = config(2, 60_000);
        let mut store = Recording::default();
        // Filled at once (one part): never among the working orders, so nothing to take off.
        let mut venue = Venue {
            store: &mut store,
            config: &PaperConfig {
                fill_parts: 1,
                ..config
            },
            now: NOW,
        };
        venue
            .place(&request("once", OrderSide::Buy, "0.5"))
            .unwrap();
        assert!(store.touched("open/once").is_empty());

        // Two parts a minute apart: listed while it works, taken off when the last part fills.
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: NOW,
        };
        let report = venue.place(&request("two", OrderSide::Buy, "0.5")).unwrap();
        assert_eq!(report.status, OrderStatus::PartiallyFilled);
        assert_eq!(store.touched("open/two"), vec![Some(String::new())]);
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: NOW + 60_000,
        };
        assert_eq!(
            venue.get(&query("two")).unwrap().status,
            OrderStatus::Filled
        );
        assert_eq!(store.touched("open/two"), vec![Some(String::new()), None]);
        assert!(store.entries.keys().all(|key| !key.starts_with("open/")));
    }

    #[test]
    fn a_market_order_fills_at_once_and_moves_cash_and_holdings() {
        let config = config(1, 0);
        let mut store = BTreeMap::new();
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: NOW,
        };
        let report = venue.place(&request("a", OrderSide::Buy, "0.5")).unwrap();
        assert_eq!(report.status, OrderStatus::Filled);
        assert_eq!(report.filled_quantity, "0.5");
        assert_eq!(report.fills.len(), 1);
        let fill = &report.fills[0];
        assert_eq!(fill.trade_id, format!("{}-1", report.order_id));
        let (price, fee) = (d(&fill.price), d(&fill.fee));
        assert_eq!(fee, (d("0.5") * price * d("0.001")).round_dp(8));
        let account = venue.account().unwrap();
        assert_eq!(account.cash["USD"], -(d("0.5") * price) - fee);
        assert_eq!(account.holdings["BTC-USD"].quantity, d("0.5"));
        // The same client order id again is the same order, not a second one.
        let again = venue.place(&request("a", OrderSide::Buy, "0.5")).unwrap();
        assert_eq!(again, report);
        assert_eq!(venue.account().unwrap(), account);
        assert!(matches!(
            venue.place(&request("a", OrderSide::Buy, "0.6")),
            Err(BrokerError::Rejected(_))
        ));
    }

    #[test]
    fn parts_fill_as_they_come_due_at_their_own_prices_however_late_anyone_looks() {
        let config = config(3, 60_000);
        let mut early = BTreeMap::new();
        let mut late = BTreeMap::new();
        let placed = Venue {
            store: &mut early,
            config: &config,
            now: NOW,
        }
        .place(&request("p", OrderSide::Buy, "1"))
        .unwrap();
        assert_eq!(placed.status, OrderStatus::PartiallyFilled);
        assert_eq!(placed.fills.len(), 1);
        Venue {
            store: &mut late,
            config: &config,
            now: NOW,
        }
        .place(&request("p", OrderSide::Buy, "1"))
        .unwrap();
        // One store is looked at after every part, the other only at the end.
        for minutes in [1, 2] {
            let report = Venue {
                store: &mut early,
                config: &config,
                now: NOW + minutes * 60_000,
            }
            .get(&query("p"))
            .unwrap();
            assert_eq!(report.fills.len() as i64, minutes + 1);
        }
        let early_report = Venue {
            store: &mut early,
            config: &config,
            now: NOW + 600_000,
        }
        .get(&query("p"))
        .unwrap();
        let late_report = Venue {
            store: &mut late,
            config: &config,
            now: NOW + 600_000,
        }
        .get(&query("p"))
        .unwrap();
        assert_eq!(early_report, late_report);
        assert_eq!(early_report.status, OrderStatus::Filled);
        let total: Decimal = early_report.fills.iter().map(|f| d(&f.quantity)).sum();
        assert_eq!(total, d("1"));
        assert!(
            early_report
                .fills
                .iter()
                .all(|f| d(&f.quantity) > Decimal::ZERO)
        );
        let times: Vec<i64> = early_report.fills.iter().map(|f| f.timestamp_ms).collect();
        assert_eq!(times, [NOW, NOW + 60_000, NOW + 120_000]);
        // fills-since lists each once, from the cursor on.
        let mut venue = Venue {
            store: &mut early,
            config: &config,
            now: NOW + 600_000,
        };
        assert_eq!(venue.fills_since(NOW, None).unwrap().len(), 3);
        assert_eq!(venue.fills_since(NOW + 1, None).unwrap().len(), 2);
        assert!(venue.fills_since(NOW, Some("ETH-USD")).unwrap().is_empty());
    }

    #[test]
    fn a_working_order_can_be_cancelled_keeping_what_filled() {
        let config = config(2, 60_000);
        let mut store = BTreeMap::new();
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: NOW,
        };
        venue.place(&request("c", OrderSide::Sell, "2")).unwrap();
        assert_eq!(venue.open_orders(None).unwrap().len(), 1);
        let cancelled = venue.cancel(&query("c")).unwrap();
        assert_eq!(cancelled.status, OrderStatus::Cancelled);
        assert_eq!(cancelled.fills.len(), 1);
        assert!(venue.open_orders(None).unwrap().is_empty());
        let later = Venue {
            store: &mut store,
            config: &config,
            now: NOW + 600_000,
        }
        .get(&query("c"))
        .unwrap();
        assert_eq!(later.fills.len(), 1);
        let positions = Venue {
            store: &mut store,
            config: &config,
            now: NOW + 600_000,
        }
        .positions()
        .unwrap();
        assert_eq!(positions[0].side, Side::Short);
        assert_eq!(d(&positions[0].quantity), d(&later.filled_quantity));
    }

    #[test]
    fn reduce_only_orders_never_grow_or_flip_a_position() {
        let config = config(1, 0);
        let mut store = BTreeMap::new();
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: NOW,
        };
        venue.place(&request("b", OrderSide::Buy, "1")).unwrap();
        let grow = OrderRequest {
            reduce_only: true,
            ..request("r0", OrderSide::Buy, "1")
        };
        assert!(matches!(venue.place(&grow), Err(BrokerError::Rejected(_))));
        let too_much = OrderRequest {
            reduce_only: true,
            ..request("r2", OrderSide::Sell, "1.5")
        };
        assert!(matches!(
            venue.place(&too_much),
            Err(BrokerError::Rejected(_))
        ));
        let close = OrderRequest {
            reduce_only: true,
            ..request("r1", OrderSide::Sell, "1")
        };
        venue.place(&close).unwrap();
        assert!(venue.positions().unwrap().is_empty());
        assert!(venue.get(&query("r2")).is_err());
        // Holding nothing, the venue takes a reduce-only order as closing a position it never saw.
        let unknown = OrderRequest {
            reduce_only: true,
            ..request("r3", OrderSide::Sell, "0.5")
        };
        venue.place(&unknown).unwrap();
        assert_eq!(venue.positions().unwrap()[0].side, Side::Short);
    }

    #[test]
    fn limit_orders_rest_until_the_market_reaches_them() {
        let config = config(1, 0);
        let mut store = BTreeMap::new();
        let mid = pricing::exact(config.market().mid_price("BTC-USD", NOW));
        let limit = (mid * d("0.995")).round_dp(2);
        let order = OrderRequest {
            kind: OrderKind::Limit,
            limit_price: Some(limit.to_string()),
            ..request("l", OrderSide::Buy, "0.1")
        };
        let placed = Venue {
            store: &mut store,
            config: &config,
            now: NOW,
        }
        .place(&order)
        .unwrap();
        assert_eq!(placed.status, OrderStatus::Open);
        // Find when the market first trades at or below the limit, and check the order fills then.
        let candles =
            config
                .market()
                .candles("BTC-USD", Interval::OneMinute, 1000, NOW + 1000 * 60_000);
        let crossing = candles
            .iter()
            .find(|c| c.timestamp_ms >= NOW && pricing::exact(c.low) <= limit)
            .expect("the simulated market moves half a percent within 1000 minutes");
        let after = crossing.timestamp_ms + 60_000;
        let report = Venue {
            store: &mut store,
            config: &config,
            now: after,
        }
        .get(&query("l"))
        .unwrap();
        assert_eq!(report.status, OrderStatus::Filled, "{report:?}");
        assert_eq!(d(&report.fills[0].price), limit);
        assert_eq!(report.fills[0].timestamp_ms, after - 1);
    }

    #[test]
    fn orders_outside_the_rules_are_invalid() {
        let config = PaperConfig {
            rules: Rules {
                tick_size: d("0.5"),
                lot_size: d("0.001"),
                min_notional: d("10"),
            },
            ..PaperConfig::default()
        };
        let mut store = BTreeMap::new();
        let mut venue = Venue {
            store: &mut store,
            config: &config,
            now: NOW,
        };
        for quantity in ["0.0005", "-1", "abc", "1e3", "", ".5", "0.00000001"] {
            assert!(
                matches!(
                    venue.place(&request("x", OrderSide::Buy, quantity)),
                    Err(BrokerError::Invalid(_))
                ),
                "{quantity}"
            );
        }
        let off_tick = OrderRequest {
            kind: OrderKind::Limit,
            limit_price: Some("100.25".into()),
            ..request("y", OrderSide::Buy, "1")
        };
        assert!(matches!(
            venue.place(&off_tick),
            Err(BrokerError::Invalid(_))
        ));
        let tiny = OrderRequest {
            kind: OrderKind::Limit,
            limit_price: Some("5".into()),
            ..request("z", OrderSide::Buy, "1")
        };
        assert!(matches!(venue.place(&tiny), Err(BrokerError::Invalid(_))));
        assert!(venue.store.is_empty());
    }
}
