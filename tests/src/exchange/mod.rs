//! A local exchange for the live-venue broker plugins to trade against: one matching engine with
//! a face per venue (`binance.rs`, ...), each speaking the subset of that venue's REST API the
//! plugin uses — its paths, parameters, headers, JSON shapes and error bodies — and verifying every
//! signature with its own implementation of the venue's scheme.
//!
//! The engine is venue-neutral: accounts with balances per asset, instruments with tick, lot and
//! minimum order value, a price per instrument the test sets, market orders filling at that price
//! (in parts over time when asked), limit orders resting until the price crosses them, fees in the
//! quote asset, a request budget per key and window (over it: the venue's 429), and on request an
//! answer held back past the client's timeout after an order was accepted.

pub mod alpaca;
pub mod binance;
pub mod coinbase;
pub mod kraken;
pub mod okx;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rust_decimal::Decimal;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Buy,
    Sell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    New,
    PartiallyFilled,
    Filled,
    Canceled,
    Rejected,
    Expired,
}

#[derive(Debug, Clone)]
pub struct Instrument {
    pub base: String,
    pub quote: String,
    pub tick: Decimal,
    pub lot: Decimal,
    pub min_quantity: Decimal,
    pub min_notional: Decimal,
}

#[derive(Debug, Clone)]
pub struct Trade {
    pub id: u64,
    pub order_id: u64,
    pub client_order_id: String,
    pub account: String,
    pub base: String,
    pub quote: String,
    pub side: Side,
    pub quantity: Decimal,
    pub price: Decimal,
    pub fee: Decimal,
    /// The asset the fee was taken in.
    pub fee_asset: String,
    pub at: i64,
}

#[derive(Debug, Clone)]
pub struct Order {
    pub id: u64,
    pub client_order_id: String,
    pub account: String,
    pub base: String,
    pub quote: String,
    pub side: Side,
    pub limit: Option<Decimal>,
    pub quantity: Decimal,
    pub filled: Decimal,
    /// Σ price × quantity of the fills.
    pub filled_value: Decimal,
    pub status: Status,
    pub created_at: i64,
    pub updated_at: i64,
    /// Parts still to fill: (due time, quantity).
    pub parts: Vec<(i64, Decimal)>,
}

impl Order {
    pub fn working(&self) -> bool {
        matches!(self.status, Status::New | Status::PartiallyFilled)
    }
}

/// What the venue refuses.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    UnknownInstrument,
    InsufficientFunds,
    /// Quantity not on the lot, price not on the tick, below the minimums.
    Filter(String),
    DuplicateClientOrderId,
    UnknownOrder,
    /// Asked to by the test.
    Rejected(String),
}

/// What the test makes the venue do.
#[derive(Debug, Clone, Default)]
pub struct Behaviour {
    /// Market orders fill in this many parts (1 or 0: at once)...
    pub fill_parts: u32,
    /// ...this far apart, the first at once.
    pub fill_delay_ms: i64,
    /// The next orders placed are refused with this reason.
    pub reject_next: Vec<String>,
    /// The answer to the next order placed is held back this long after the order is accepted.
    pub stall_next_ms: Option<u64>,
    /// Requests per key and `rate_window_ms` before the venue answers 429.
    pub rate_limit: Option<(u32, i64)>,
}

/// A client's use of its request budget.
#[derive(Debug, Default, Clone)]
pub struct Budget {
    pub window_start: i64,
    pub used: u32,
    /// After a 429: when it was sent, and when the client may call again.
    pub throttled_at: i64,
    pub retry_at: i64,
}

/// Requests that arrive this soon after a 429 were on their way before it was read.
const IN_FLIGHT_MS: i64 = 300;

/// What the venue does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Served; the budget used in the window so far.
    Admitted(u32),
    /// Over the budget: 429, retry after this many milliseconds.
    Throttled(i64),
    /// Called again before the wait was over: banned for this many milliseconds.
    Banned(i64),
}

#[derive(Debug, Default)]
pub struct State {
    /// Secret of each API key, and the account it trades.
    pub keys: HashMap<String, Key>,
    pub balances: HashMap<String, BTreeMap<String, Decimal>>,
    pub instruments: BTreeMap<(String, String), Instrument>,
    pub prices: HashMap<(String, String), Decimal>,
    pub orders: Vec<Order>,
    pub trades: Vec<Trade>,
    pub behaviour: Behaviour,
    /// Requests counted per client (an API key, or the caller of public endpoints).
    pub requests: HashMap<String, Budget>,
    /// Requests answered "too many" (429), requests made before the wait such an answer asked
    /// for was over (banned), and requests seen in all.
    pub throttled: u32,
    pub hammered: u32,
    pub seen: u32,
    /// Requests refused for their key, signature, timestamp, nonce or passphrase.
    pub auth_refusals: u32,
    /// Per key: the last nonce accepted (venues that require them to grow).
    pub nonces: HashMap<String, u64>,
    /// Fee rate charged on each fill's value...
    pub fee_rate: Decimal,
    /// ...in the asset received (a buy pays it in the asset bought), as Binance, OKX and Alpaca
    /// charge spot fees; otherwise in the quote asset.
    pub fee_in_received: bool,
    next_order: u64,
    next_trade: u64,
}

#[derive(Debug, Clone)]
pub struct Key {
    pub secret: String,
    pub passphrase: Option<String>,
    pub account: String,
}

/// The engine, shared by a face's routes and the test.
#[derive(Clone, Default)]
pub struct Exchange {
    pub state: Arc<Mutex<State>>,
}

fn d(text: &str) -> Decimal {
    text.parse().expect("a decimal literal")
}

impl Exchange {
    /// An exchange with BTC, ETH and SOL against `quote`, one funded account under `key`.
    pub fn standard(quote: &str, key: &str, secret: &str) -> Exchange {
        let exchange = Exchange::default();
        {
            let mut state = exchange.state.lock().unwrap();
            state.fee_rate = d("0.001");
            for (base, price, tick, lot, min_quantity) in [
                ("BTC", "60000", "0.01", "0.00001", "0.00001"),
                ("ETH", "3000", "0.01", "0.0001", "0.0001"),
                ("SOL", "150", "0.01", "0.001", "0.001"),
            ] {
                let pair = (base.to_string(), quote.to_string());
                state.instruments.insert(
                    pair.clone(),
                    Instrument {
                        base: base.into(),
                        quote: quote.into(),
                        tick: d(tick),
                        lot: d(lot),
                        min_quantity: d(min_quantity),
                        min_notional: d("5"),
                    },
                );
                state.prices.insert(pair, d(price));
            }
            state.keys.insert(
                key.into(),
                Key {
                    secret: secret.into(),
                    passphrase: None,
                    account: "main".into(),
                },
            );
            state
                .balances
                .entry("main".into())
                .or_default()
                .insert(quote.into(), d("100000"));
        }
        exchange
    }

    pub fn set_price(&self, base: &str, quote: &str, price: &str) {
        let mut state = self.state.lock().unwrap();
        state.prices.insert((base.into(), quote.into()), d(price));
        let now = now_ms();
        state.advance(now);
    }

    pub fn behave(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut self.state.lock().unwrap().behaviour);
    }

    pub fn with_state<T>(&self, read: impl FnOnce(&mut State) -> T) -> T {
        read(&mut self.state.lock().unwrap())
    }

    /// Counts a request of `client` against its budget.
    pub fn admit(&self, client: &str) -> Admission {
        let mut state = self.state.lock().unwrap();
        state.seen += 1;
        let now = now_ms();
        let Some((limit, window)) = state.behaviour.rate_limit else {
            return Admission::Admitted(state.seen);
        };
        let budget = state.requests.entry(client.to_string()).or_default();
        if now < budget.retry_at {
            let left = budget.retry_at - now;
            // Sent before the 429 could have been read: answered the same way.
            if now - budget.throttled_at <= IN_FLIGHT_MS {
                return Admission::Throttled(left);
            }
            // Told to wait, and did not: the venue bans.
            state.hammered += 1;
            return Admission::Banned(left);
        }
        if now - budget.window_start >= window {
            budget.window_start = now;
            budget.used = 0;
        }
        budget.used += 1;
        if budget.used > limit {
            let retry = (window - (now - budget.window_start)).max(1);
            budget.retry_at = now + retry;
            budget.throttled_at = now;
            state.throttled += 1;
            return Admission::Throttled(retry);
        }
        Admission::Admitted(budget.used)
    }

    /// The stall asked for the next order, if any (taken).
    pub fn take_stall(&self) -> Option<Duration> {
        self.state
            .lock()
            .unwrap()
            .behaviour
            .stall_next_ms
            .take()
            .map(Duration::from_millis)
    }
}

impl State {
    /// Brings every working order up to `now`: due parts of market orders fill at the price,
    /// limit orders fill when the price has crossed them.
    pub fn advance(&mut self, now: i64) {
        for index in 0..self.orders.len() {
            if !self.orders[index].working() {
                continue;
            }
            let pair = (
                self.orders[index].base.clone(),
                self.orders[index].quote.clone(),
            );
            let Some(price) = self.prices.get(&pair).copied() else {
                continue;
            };
            loop {
                let order = &self.orders[index];
                let Some(&(due, quantity)) = order.parts.first() else {
                    break;
                };
                let crossed = match (order.limit, order.side) {
                    (None, _) => true,
                    (Some(limit), Side::Buy) => price <= limit,
                    (Some(limit), Side::Sell) => price >= limit,
                };
                if due > now || !crossed {
                    break;
                }
                let fill_price = order.limit.map_or(price, |limit| match order.side {
                    Side::Buy => limit.min(price),
                    Side::Sell => limit.max(price),
                });
                let at = due.max(order.created_at);
                self.orders[index].parts.remove(0);
                self.fill(index, quantity, fill_price, at);
            }
        }
    }

    fn fill(&mut self, index: usize, quantity: Decimal, price: Decimal, at: i64) {
        self.next_trade += 1;
        let value = quantity * price;
        let order = &mut self.orders[index];
        let (fee, fee_asset) = if self.fee_in_received && order.side == Side::Buy {
            ((quantity * self.fee_rate).round_dp(8), order.base.clone())
        } else {
            ((value * self.fee_rate).round_dp(8), order.quote.clone())
        };
        order.filled += quantity;
        order.filled_value += value;
        order.updated_at = at;
        order.status = if order.parts.is_empty() {
            Status::Filled
        } else {
            Status::PartiallyFilled
        };
        let trade = Trade {
            id: self.next_trade,
            order_id: order.id,
            client_order_id: order.client_order_id.clone(),
            account: order.account.clone(),
            base: order.base.clone(),
            quote: order.quote.clone(),
            side: order.side,
            quantity,
            price,
            fee,
            fee_asset: fee_asset.clone(),
            at,
        };
        let balances = self.balances.entry(trade.account.clone()).or_default();
        let (gives, gets, given, got) = match trade.side {
            Side::Buy => (&trade.quote, &trade.base, value, quantity),
            Side::Sell => (&trade.base, &trade.quote, quantity, value),
        };
        *balances.entry(gives.clone()).or_default() -= given;
        *balances.entry(gets.clone()).or_default() += got;
        *balances.entry(fee_asset).or_default() -= fee;
        self.trades.push(trade);
    }

    /// Places an order; its state right after (parts due at once are filled).
    #[allow(clippy::too_many_arguments)]
    pub fn place(
        &mut self,
        account: &str,
        client_order_id: &str,
        base: &str,
        quote: &str,
        side: Side,
        quantity: Decimal,
        limit: Option<Decimal>,
        now: i64,
    ) -> Result<Order, Refusal> {
        self.advance(now);
        let pair = (base.to_string(), quote.to_string());
        let instrument = self
            .instruments
            .get(&pair)
            .cloned()
            .ok_or(Refusal::UnknownInstrument)?;
        if let Some(reason) =
            (!self.behaviour.reject_next.is_empty()).then(|| self.behaviour.reject_next.remove(0))
        {
            return Err(Refusal::Rejected(reason));
        }
        if self
            .orders
            .iter()
            .any(|o| o.account == account && o.client_order_id == client_order_id && o.working())
        {
            return Err(Refusal::DuplicateClientOrderId);
        }
        let price = self.prices[&pair];
        if quantity <= Decimal::ZERO || !(quantity % instrument.lot).is_zero() {
            return Err(Refusal::Filter(format!(
                "LOT_SIZE: step {}",
                instrument.lot
            )));
        }
        if quantity < instrument.min_quantity {
            return Err(Refusal::Filter(format!(
                "LOT_SIZE: minimum {}",
                instrument.min_quantity
            )));
        }
        if let Some(limit) = limit
            && (limit <= Decimal::ZERO || !(limit % instrument.tick).is_zero())
        {
            return Err(Refusal::Filter(format!(
                "PRICE_FILTER: tick {}",
                instrument.tick
            )));
        }
        if quantity * limit.unwrap_or(price) < instrument.min_notional {
            return Err(Refusal::Filter(format!(
                "NOTIONAL: minimum {}",
                instrument.min_notional
            )));
        }
        let balances = self.balances.entry(account.to_string()).or_default();
        let (asset, needed) = match side {
            Side::Buy if self.fee_in_received => (quote, quantity * limit.unwrap_or(price)),
            Side::Buy => (
                quote,
                quantity * limit.unwrap_or(price) * (Decimal::ONE + self.fee_rate),
            ),
            Side::Sell => (base, quantity),
        };
        if balances.get(asset).copied().unwrap_or_default() < needed {
            return Err(Refusal::InsufficientFunds);
        }
        self.next_order += 1;
        let behaviour = &self.behaviour;
        let parts = behaviour.fill_parts.max(1);
        let mut plan = Vec::new();
        let each = ((quantity / Decimal::from(parts)) / instrument.lot).trunc() * instrument.lot;
        let mut left = quantity;
        for part in 0..parts {
            let size = if part + 1 == parts || each.is_zero() {
                left
            } else {
                each
            };
            if size.is_zero() {
                continue;
            }
            plan.push((now + i64::from(part) * behaviour.fill_delay_ms, size));
            left -= size;
            if left.is_zero() {
                break;
            }
        }
        self.orders.push(Order {
            id: 1_000 + self.next_order,
            client_order_id: client_order_id.to_string(),
            account: account.to_string(),
            base: base.to_string(),
            quote: quote.to_string(),
            side,
            limit,
            quantity,
            filled: Decimal::ZERO,
            filled_value: Decimal::ZERO,
            status: Status::New,
            created_at: now,
            updated_at: now,
            parts: plan,
        });
        self.advance(now);
        Ok(self.orders.last().cloned().expect("just placed"))
    }

    /// An order of `account` by client order id or venue order id (the latest with that client
    /// order id).
    pub fn find(
        &mut self,
        account: &str,
        client_order_id: Option<&str>,
        order_id: Option<u64>,
        now: i64,
    ) -> Result<Order, Refusal> {
        self.advance(now);
        self.orders
            .iter()
            .rev()
            .find(|o| {
                o.account == account
                    && client_order_id.is_none_or(|id| o.client_order_id == id)
                    && order_id.is_none_or(|id| o.id == id)
                    && (client_order_id.is_some() || order_id.is_some())
            })
            .cloned()
            .ok_or(Refusal::UnknownOrder)
    }

    pub fn cancel(
        &mut self,
        account: &str,
        client_order_id: Option<&str>,
        order_id: Option<u64>,
        now: i64,
    ) -> Result<Order, Refusal> {
        let order = self.find(account, client_order_id, order_id, now)?;
        if !order.working() {
            return Err(Refusal::UnknownOrder);
        }
        let slot = self
            .orders
            .iter_mut()
            .find(|o| o.id == order.id)
            .expect("found");
        slot.status = Status::Canceled;
        slot.parts.clear();
        slot.updated_at = now;
        Ok(slot.clone())
    }

    pub fn open_orders(&mut self, account: &str, now: i64) -> Vec<Order> {
        self.advance(now);
        self.orders
            .iter()
            .filter(|o| o.account == account && o.working())
            .cloned()
            .collect()
    }

    pub fn trades_of(&mut self, account: &str, now: i64) -> Vec<Trade> {
        self.advance(now);
        self.trades
            .iter()
            .filter(|t| t.account == account)
            .cloned()
            .collect()
    }

    pub fn balances_of(&mut self, account: &str, now: i64) -> BTreeMap<String, Decimal> {
        self.advance(now);
        self.balances.get(account).cloned().unwrap_or_default()
    }

    /// What working orders hold of each asset.
    pub fn locked_of(&self, account: &str) -> BTreeMap<String, Decimal> {
        let mut locked = BTreeMap::new();
        for order in self
            .orders
            .iter()
            .filter(|o| o.account == account && o.working())
        {
            let left = order.quantity - order.filled;
            match order.side {
                Side::Buy => {
                    let price = order
                        .limit
                        .or_else(|| {
                            self.prices
                                .get(&(order.base.clone(), order.quote.clone()))
                                .copied()
                        })
                        .unwrap_or_default();
                    *locked.entry(order.quote.clone()).or_default() += left * price;
                }
                Side::Sell => *locked.entry(order.base.clone()).or_default() += left,
            }
        }
        locked
    }

    /// Candles of `interval_ms` ending at `end_ms`, oldest first: the current price with a
    /// small deterministic wave, so a strategy sees movement.
    pub fn candles(
        &self,
        base: &str,
        quote: &str,
        interval_ms: i64,
        limit: usize,
        end_ms: i64,
    ) -> Option<Vec<(i64, [Decimal; 5])>> {
        let price = *self.prices.get(&(base.to_string(), quote.to_string()))?;
        let last = end_ms.div_euclid(interval_ms) * interval_ms - interval_ms;
        let wave = |at: i64| Decimal::new(((at / interval_ms) % 7 - 3) * 5, 4);
        Some(
            (0..limit as i64)
                .rev()
                .map(|back| {
                    let start = last - back * interval_ms;
                    let open = (price * (Decimal::ONE + wave(start))).round_dp(2);
                    let close = (price * (Decimal::ONE + wave(start + interval_ms))).round_dp(2);
                    let high = (open.max(close) * Decimal::new(10005, 4)).round_dp(2);
                    let low = (open.min(close) * Decimal::new(9995, 4)).round_dp(2);
                    (start, [open, high, low, close, Decimal::new(125, 1)])
                })
                .collect(),
        )
    }
}

/// One HTTP request as a face sees it: the raw query string and body, as signed.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub path: String,
    /// The query string exactly as sent (without `?`), empty when there is none.
    pub query: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Call {
    /// A header's value (names compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The query's parameters, decoded.
    pub fn params(&self) -> Vec<(String, String)> {
        decode_form(&self.query)
    }

    pub fn body_text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap_or_default()
    }
}

/// `k=v&k2=v2`, percent-decoded (`+` as a space).
pub fn decode_form(text: &str) -> Vec<(String, String)> {
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(key), percent_decode(value))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 3;
                    }
                    Err(_) => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A face's answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Held back this long before it is sent (an answer lost to the client's timeout).
    pub delay: Option<Duration>,
}

impl Answer {
    pub fn json(status: u16, body: serde_json::Value) -> Answer {
        Answer {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.to_string(),
            delay: None,
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Answer {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delayed(mut self, delay: Option<Duration>) -> Answer {
        self.delay = delay;
        self
    }
}

/// A venue's API over the engine.
pub trait Face: Send + Sync + 'static {
    fn answer(&self, exchange: &Exchange, call: &Call) -> Answer;

    /// How the venue names a trade (the id its plugin reports for the fill).
    fn trade_id(&self, trade: &Trade) -> String {
        trade.id.to_string()
    }
}

impl Exchange {
    /// The account's record as the books must show it: each order by client order id with its
    /// trades as fills (the quantity received or given, net of a fee taken in the asset bought;
    /// the fee valued in the quote asset), the holdings its trades added, the quote they moved.
    pub fn book(&self, account: &str, face: &dyn Face) -> crate::venue::VenueBook {
        use crate::venue::{VenueBook, VenueFill, VenueOrder};
        let mut state = self.state.lock().unwrap();
        state.advance(now_ms());
        let mut book = VenueBook::default();
        for order in state.orders.iter().filter(|o| o.account == account) {
            let status = match order.status {
                Status::New | Status::PartiallyFilled => "open",
                Status::Filled => "filled",
                Status::Canceled => "cancelled",
                Status::Rejected => "rejected",
                Status::Expired => "expired",
            };
            let fills = state
                .trades
                .iter()
                .filter(|t| t.order_id == order.id)
                .map(|t| {
                    let in_base = t.fee_asset == t.base;
                    VenueFill {
                        trade_id: face.trade_id(t),
                        quantity: if in_base {
                            t.quantity - t.fee
                        } else {
                            t.quantity
                        },
                        price: t.price,
                        fee: if in_base { t.fee * t.price } else { t.fee },
                    }
                })
                .collect();
            book.orders.insert(
                order.client_order_id.clone(),
                VenueOrder {
                    client_order_id: order.client_order_id.clone(),
                    symbol: format!("{}-{}", order.base, order.quote),
                    buy: order.side == Side::Buy,
                    quantity: order.quantity,
                    status: status.into(),
                    fills,
                },
            );
        }
        for trade in state.trades.iter().filter(|t| t.account == account) {
            let value = trade.quantity * trade.price;
            let (base_fee, quote_fee) = if trade.fee_asset == trade.base {
                (trade.fee, Decimal::ZERO)
            } else {
                (Decimal::ZERO, trade.fee)
            };
            let (held, moved) = match trade.side {
                Side::Buy => (trade.quantity - base_fee, -value - quote_fee),
                Side::Sell => (-trade.quantity - base_fee, value - quote_fee),
            };
            *book.holdings.entry(trade.base.clone()).or_default() += held;
            *book.cash.entry(trade.quote.clone()).or_default() += moved;
        }
        book
    }
}

#[derive(Clone)]
struct FaceHandler(Arc<dyn Face>, Exchange);

/// A venue to test a broker plugin against: its face, its exchange (set up the venue's way) and
/// how a user connects to it.
pub struct VenueCase {
    /// The broker plugin's name.
    pub broker: &'static str,
    /// Symbols a bot trades there, in tradehost's form.
    pub symbols: [&'static str; 2],
    pub exchange: Exchange,
    pub face: Arc<dyn Face>,
    /// The exchange's account of the connection below.
    pub account: &'static str,
    /// What a user sends to connect (`broker`, `api_key`, `api_secret`, `additional_params`).
    pub connect: serde_json::Value,
    /// The same with a secret the venue does not accept.
    pub connect_bad: serde_json::Value,
}

#[rocket::async_trait]
impl rocket::route::Handler for FaceHandler {
    async fn handle<'r>(
        &self,
        request: &'r rocket::Request<'_>,
        data: rocket::Data<'r>,
    ) -> rocket::route::Outcome<'r> {
        use rocket::data::ToByteUnit;
        let body = match data.open(2.mebibytes()).into_bytes().await {
            Ok(bytes) => bytes.into_inner(),
            Err(_) => Vec::new(),
        };
        let call = Call {
            method: request.method().as_str().to_string(),
            path: request.uri().path().as_str().to_string(),
            query: request
                .uri()
                .query()
                .map(|q| q.as_str().to_string())
                .unwrap_or_default(),
            headers: request
                .headers()
                .iter()
                .map(|h| (h.name().as_str().to_string(), h.value().to_string()))
                .collect(),
            body,
        };
        let (face, exchange) = (self.0.clone(), self.1.clone());
        let answer = tokio::task::spawn_blocking(move || face.answer(&exchange, &call))
            .await
            .expect("the face answers");
        if let Some(delay) = answer.delay {
            tokio::time::sleep(delay).await;
        }
        rocket::route::Outcome::from(request, Reply(answer))
    }
}

struct Reply(Answer);

impl<'r> rocket::response::Responder<'r, 'static> for Reply {
    fn respond_to(self, _: &'r rocket::Request<'_>) -> rocket::response::Result<'static> {
        let mut response = rocket::Response::build();
        response.status(rocket::http::Status::new(self.0.status));
        for (name, value) in self.0.headers {
            response.raw_header_adjoin(name, value);
        }
        response.sized_body(self.0.body.len(), std::io::Cursor::new(self.0.body));
        response.ok()
    }
}

/// A face of the exchange serving HTTP on a free local port.
pub struct Simulator {
    pub url: String,
    pub exchange: Exchange,
    shutdown: rocket::Shutdown,
}

impl Simulator {
    /// Serves `face` over `exchange` on 127.0.0.1.
    pub async fn start(exchange: Exchange, face: Arc<dyn Face>) -> Simulator {
        use rocket::http::Method;
        let figment = rocket::Config::figment()
            .merge(("address", "127.0.0.1"))
            .merge(("port", 0))
            .merge(("log_level", rocket::config::LogLevel::Off))
            .merge(("workers", 4))
            .merge(("shutdown.ctrlc", false));
        let handler = FaceHandler(face, exchange.clone());
        let routes: Vec<rocket::Route> = [Method::Get, Method::Post, Method::Put, Method::Delete]
            .into_iter()
            .map(|method| rocket::Route::new(method, "/<path..>", handler.clone()))
            .collect();
        let (port_tx, port_rx) = tokio::sync::oneshot::channel::<u16>();
        let port_tx = Mutex::new(Some(port_tx));
        let rocket = rocket::custom(figment)
            .mount("/", routes)
            .attach(rocket::fairing::AdHoc::on_liftoff("port", move |rocket| {
                let port = rocket.config().port;
                let sender = port_tx.lock().unwrap().take();
                Box::pin(async move {
                    if let Some(sender) = sender {
                        let _ = sender.send(port);
                    }
                })
            }))
            .ignite()
            .await
            .expect("the simulator ignites");
        let shutdown = rocket.shutdown();
        tokio::spawn(async move {
            let _ = rocket.launch().await;
        });
        let port = port_rx.await.expect("the simulator listens");
        Simulator {
            url: format!("http://127.0.0.1:{port}"),
            exchange,
            shutdown,
        }
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.shutdown.clone().notify();
    }
}
