//! Placing orders and booking what the venue reports of them.
//!
//! An order is written as `new` before the broker plugin sees it, under a client order id that
//! names what it is for (a scan's entry on a symbol, a signal, the n-th attempt at closing a
//! position), so deciding the same thing again finds the order instead of sending another. The
//! venue's answer moves it through `order_state`: its report is booked at once; a refusal
//! rejects it; a lost answer leaves it `unknown` for reconciliation, which asks the venue and is
//! never a blind re-send.
//!
//! Booking ([`record`]) is one transaction per observation: the order's transition, each new
//! fill (once: fills are unique per venue trade id), the position, its ledger rows, the account
//! and, when a closing order ends, its completed trade. The trader and the events follow only
//! after the commit.

use std::collections::HashMap;

use rust_decimal::Decimal;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::accounting::{
    self, CompletedTrade, Fill, LedgerEntry, OpenRequest, Position, Side, float,
};
use super::instruments;
use super::order_state::{self, OrderEvent, OrderStatus, Progress, VenueStatus};
use super::trader::Trader;
use crate::App;
use crate::events::Channel;
use crate::notices::{self, Kind, TradeNotice};
use crate::plugins::bindings::types::{
    self as wire, BrokerError, OrderKind, OrderReport, OrderRequest, OrderSide as WireSide,
};
use crate::plugins::store_access::HeldWrites;
use crate::plugins::{PluginKind, decimal, off_thread};
use crate::store::accounts::AccountChange;
use crate::store::orders::{self as rows, FillRow, OrderChange, OrderRow};
use crate::store::plugin_store::{self, Change};
use crate::store::writer::{
    BaselineShift, Booking, Job, LedgerWrite, NewOrder, SignalOutcome, WriteError,
};
use crate::store::{iso8601, ledger, new_id, now_ms};

/// The first check of a live order; later ones back off from it.
const FIRST_CHECK_MS: i64 = 100;
/// The longest wait between two checks of a live order.
const MAX_CHECK_MS: i64 = 30_000;

#[derive(Debug, Clone)]
pub enum Intent {
    Open {
        symbol: String,
        side: Side,
        quantity: Decimal,
        /// The price the entry was sized at (for the venue's minimum order value): the limit
        /// price for a limit entry.
        price: Decimal,
        /// A limit entry rests at the venue until its price is reached; `None`: market.
        limit_price: Option<Decimal>,
        stop_loss: Option<Decimal>,
        take_profit: Option<Decimal>,
        trail_pct: Option<Decimal>,
        /// Whose entry it is: the bot's strategy, or an inbound signal's.
        strategy: String,
    },
    Close {
        position_id: String,
        reason: String,
    },
}

/// An order to place.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The broker connection it goes to: the bot's for entries, the position's for closes.
    pub broker: String,
    pub client_order_id: String,
    pub intent: Intent,
    /// The id the new position (entry) or the completed trade (close) gets.
    pub assigned_id: String,
    /// Which attempt at closing the position (1 for entries).
    pub attempt: u32,
    pub signal_id: Option<String>,
}

/// What placing an order came to.
#[derive(Debug, Clone)]
pub struct Placed {
    pub order_id: String,
    pub status: OrderStatus,
    /// Why it was rejected.
    pub reason: Option<String>,
}

/// Why an order was not placed.
#[derive(Debug)]
pub enum OrderFailure {
    /// Not sent: the venue's rules, the kill switch (nothing to retry now).
    Refused(String),
    /// The host could not send it (credentials, instrument rules, the database).
    Failed(String),
}

impl std::fmt::Display for OrderFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OrderFailure::Refused(reason) | OrderFailure::Failed(reason) => f.write_str(reason),
        }
    }
}

/// A client order id: stable for the same purpose, distinct for different ones.
pub fn client_order_id(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    format!("th-{}", &hex::encode(hash.finalize())[..32])
}

/// Whether a broker error means the order was certainly not placed.
pub fn not_placed(err: &BrokerError) -> bool {
    !matches!(err, BrokerError::Timeout(_) | BrokerError::Unavailable(_))
}

pub fn describe_error(err: &BrokerError) -> String {
    match err {
        BrokerError::Auth(m) => format!("credentials refused: {m}"),
        BrokerError::Rejected(m) => format!("rejected: {m}"),
        BrokerError::InsufficientFunds(m) => format!("insufficient funds: {m}"),
        BrokerError::Invalid(m) => format!("invalid: {m}"),
        BrokerError::Unsupported(m) => format!("unsupported: {m}"),
        BrokerError::NotFound(m) => format!("not found: {m}"),
        BrokerError::RateLimited(ms) => format!("rate limited; retry after {ms} ms"),
        BrokerError::Unreachable(m) => format!("unreachable: {m}"),
        BrokerError::Timeout(m) => format!("timed out: {m}"),
        BrokerError::Unavailable(m) => format!("unavailable: {m}"),
    }
}

/// When a live order that has been checked `checks` times is checked next.
pub fn next_check(now: i64, checks: i64) -> i64 {
    now + FIRST_CHECK_MS
        .saturating_mul(1 << checks.clamp(0, 16))
        .min(MAX_CHECK_MS)
}

#[derive(Serialize)]
struct TradeExecuted<'a> {
    trade_id: &'a str,
    position_id: &'a str,
    action: &'a str,
    symbol: &'a str,
    side: Side,
    entry_price: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_price: Option<f64>,
    quantity: f64,
    size_usd: f64,
    fees: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    realized_pnl: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_reason: Option<&'a str>,
    timestamp: String,
}

#[derive(Serialize)]
pub struct PositionUpdate<'a> {
    pub position_id: &'a str,
    pub symbol: &'a str,
    pub side: Side,
    /// open, closing (a close is pending or being retried) or closed.
    pub status: &'a str,
    pub quantity: f64,
    pub current_price: f64,
    pub unrealized_pnl: f64,
    pub unrealized_pnl_pct: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close_error: Option<&'a str>,
    pub timestamp: String,
}

pub fn position_update(position: &Position, at: i64) -> PositionUpdate<'_> {
    let basis = position.cost_basis();
    PositionUpdate {
        position_id: &position.id,
        symbol: &position.symbol,
        side: position.side,
        status: if position.quantity.is_zero() {
            "closed"
        } else if position.closing.is_some() {
            "closing"
        } else {
            "open"
        },
        quantity: float(position.quantity),
        current_price: float(position.current_price),
        unrealized_pnl: float(position.unrealized_pnl()),
        unrealized_pnl_pct: if basis.is_zero() {
            0.0
        } else {
            float((position.unrealized_pnl() / basis * Decimal::ONE_HUNDRED).round_dp(4))
        },
        close_error: position
            .closing
            .as_ref()
            .and_then(|c| c.last_error.as_deref()),
        timestamp: iso8601(at),
    }
}

fn db_failure(err: impl std::fmt::Display) -> OrderFailure {
    tracing::error!(error = %err, "database error while placing an order");
    OrderFailure::Failed("database error while placing the order".into())
}

/// Places one order: rounds it to the venue's rules, writes it, sends it and books the answer.
pub async fn place(app: &App, trader: &mut Trader, plan: Plan) -> Result<Placed, OrderFailure> {
    let now = now_ms();
    let (symbol, side, wanted, price, limit_price, reduce_only) = match &plan.intent {
        Intent::Open {
            symbol,
            side,
            quantity,
            price,
            limit_price,
            ..
        } => (
            symbol.clone(),
            side.opening_order(),
            *quantity,
            *price,
            *limit_price,
            false,
        ),
        Intent::Close { position_id, .. } => {
            let Some(position) = trader.position(position_id) else {
                return Err(OrderFailure::Refused(format!(
                    "no open position {position_id}"
                )));
            };
            (
                position.symbol.clone(),
                position.side.closing_order(),
                position.quantity,
                position.current_price,
                None,
                true,
            )
        }
    };
    if !reduce_only
        && super::kill_switch::blocks_entries(app)
            .await
            .map_err(|e| OrderFailure::Failed(e.message))?
    {
        return Err(OrderFailure::Refused(
            "trading is halted by the kill switch".into(),
        ));
    }
    let account = trader
        .broker_account(app, &plan.broker)
        .await
        .map_err(OrderFailure::Failed)?;
    let rules = app
        .engine
        .instruments
        .rules(app, &plan.broker, &account, &symbol)
        .await
        .map_err(OrderFailure::Failed)?;
    let quantity = rules.round_quantity(wanted);
    // A limit price goes to the venue on its tick, never on the worse side of what was asked.
    let limit_price = limit_price.map(|limit| rules.round_price(limit, side));
    if let Some(refusal) = rules.refusal(quantity, limit_price.unwrap_or(price)) {
        return Err(OrderFailure::Refused(refusal));
    }
    let (position_id, trade_id) = match &plan.intent {
        Intent::Open { .. } => (Some(plan.assigned_id.clone()), None),
        Intent::Close { position_id, .. } => {
            (Some(position_id.clone()), Some(plan.assigned_id.clone()))
        }
    };
    let row = OrderRow {
        id: new_id(),
        user_id: trader.user_id.clone(),
        client_order_id: plan.client_order_id.clone(),
        broker: plan.broker.clone(),
        symbol: symbol.clone(),
        side: side.as_str().into(),
        intent: match &plan.intent {
            Intent::Open {
                side: Side::Long, ..
            } => "open_long",
            Intent::Open {
                side: Side::Short, ..
            } => "open_short",
            Intent::Close { .. } => "close",
        }
        .into(),
        kind: if limit_price.is_some() {
            "limit"
        } else {
            "market"
        }
        .into(),
        quantity,
        limit_price,
        filled_quantity: Decimal::ZERO,
        position_id,
        trade_id,
        stop_loss: match &plan.intent {
            Intent::Open { stop_loss, .. } => *stop_loss,
            Intent::Close { .. } => None,
        },
        take_profit: match &plan.intent {
            Intent::Open { take_profit, .. } => *take_profit,
            Intent::Close { .. } => None,
        },
        trail_pct: match &plan.intent {
            Intent::Open { trail_pct, .. } => *trail_pct,
            Intent::Close { .. } => None,
        },
        exit_reason: match &plan.intent {
            Intent::Close { reason, .. } => Some(reason.clone()),
            Intent::Open { .. } => None,
        },
        strategy: match &plan.intent {
            Intent::Open { strategy, .. } => Some(strategy.clone()),
            Intent::Close { .. } => None,
        },
        attempt: i64::from(plan.attempt),
        signal_id: plan.signal_id.clone(),
        status: OrderStatus::New.as_str().into(),
        broker_order_id: None,
        error: None,
        next_check_at: Some(next_check(now, 0)),
        checks: 0,
        created_at: now,
        updated_at: now,
    };

    // The order is on disk before the venue hears of it: it is never sent twice. A close's
    // attempt is counted with it.
    let closing = match &plan.intent {
        Intent::Close { position_id, .. } => trader.position(position_id).cloned(),
        Intent::Open { .. } => None,
    };
    let new = NewOrder {
        order: row.clone(),
        closing,
    };
    if !app
        .db
        .write_under(trader.fence(), Job::NewOrder(Box::new(new)))
        .await
        .map_err(db_failure)?
    {
        // Decided before: that order stands (it is never sent twice).
        let existing = rows::by_client_id(&app.db.pool, &plan.client_order_id)
            .await
            .map_err(db_failure)?
            .ok_or_else(|| OrderFailure::Failed("an order vanished while being placed".into()))?;
        return Ok(Placed {
            status: OrderStatus::parse(&existing.status).unwrap_or(OrderStatus::Unknown),
            reason: existing.error.clone(),
            order_id: existing.id,
        });
    }
    trader.live.push(row.clone());

    let request = OrderRequest {
        client_order_id: row.client_order_id.clone(),
        symbol,
        side: if side == accounting::OrderSide::Buy {
            WireSide::Buy
        } else {
            WireSide::Sell
        },
        quantity: decimal::text(row.quantity),
        kind: if limit_price.is_some() {
            OrderKind::Limit
        } else {
            OrderKind::Market
        },
        limit_price: row.limit_price.map(decimal::text),
        reduce_only,
    };
    if !trader.may_send() {
        // The lease was not renewed in time: another instance may own the user by now. The
        // order stays unsent; its owner finds the venue never heard of it.
        return Err(OrderFailure::Failed(
            "this server no longer holds the bot; the order was not sent".into(),
        ));
    }
    // What the venue's plugin writes in its store is written with the booking of its answer.
    let (answer, venue_writes) = match app.plugins.active(PluginKind::Broker, &plan.broker) {
        Err(err) => (Err(err.to_string()), None),
        Ok(active) => {
            let runtime = app.plugins.runtime().clone();
            match off_thread(move || runtime.broker_place_new_order(&active, &account, &request))
                .await
            {
                Ok((result, held)) => (result.map_err(|err| err.to_string()), held),
                Err(err) => (Err(err), None),
            }
        }
    };
    let mut observation = match answer {
        Ok(Ok(report)) => Observation::report(report),
        Ok(Err(err)) if not_placed(&err) => {
            Observation::event(OrderEvent::Refused, describe_error(&err))
        }
        Ok(Err(err)) => Observation::event(OrderEvent::OutcomeUnknown, describe_error(&err)),
        // The plugin failed: it may have reached the venue before it did.
        Err(err) => Observation::event(OrderEvent::OutcomeUnknown, err),
    };
    let unknown = observation.event == Some(OrderEvent::OutcomeUnknown);
    let reason = observation
        .error
        .clone()
        .or_else(|| observation.report.as_ref().and_then(|r| r.reason.clone()));
    if let Some(held) = &venue_writes {
        observation.venue_writes = held.rows();
    }
    let booked = record(app, trader, &row, observation).await;
    if let Some(held) = venue_writes {
        settle_venue_writes(app, held, booked.is_ok()).await;
    }
    let status = booked.map_err(OrderFailure::Failed)?;
    if unknown {
        // Not a failure of the scan: the order is followed up by reconciliation, and a venue
        // that stays unreachable fails those follow-ups.
        tracing::warn!(user_id = %trader.user_id, order = %row.client_order_id, reason = reason.as_deref().unwrap_or_default(),
            "the venue's answer to an order was lost; reconciliation follows it up");
    }
    Ok(Placed {
        order_id: row.id,
        status,
        reason: (status == OrderStatus::Rejected).then(|| reason.unwrap_or_default()),
    })
}

/// Settles what the venue's plugin wrote while placing an order: written with its booking, or
/// (the booking failed, so they were not) on their own. Either way the store is free again.
async fn settle_venue_writes(app: &App, held: HeldWrites, booked: bool) {
    if booked || held.changes().is_empty() {
        held.written();
        return;
    }
    match plugin_store::write(&app.db, held.plugin(), held.scope(), held.changes()).await {
        Ok(()) => held.written(),
        Err(err) => {
            tracing::error!(plugin = held.plugin(), error = %err, "a venue's store writes were lost with the booking of its answer");
            held.unknown();
        }
    }
}

/// Asks the venue to cancel a working limit entry and books its answer: what filled until then
/// stays booked (the entry's position keeps it). A venue that cannot say leaves the order to
/// reconciliation. Closes are never cancelled: a position keeps closing until it is closed.
pub async fn cancel(
    app: &App,
    trader: &mut Trader,
    order: &OrderRow,
) -> Result<OrderStatus, String> {
    let account = trader.broker_account(app, &order.broker).await?;
    let query = wire::OrderQuery {
        symbol: order.symbol.clone(),
        client_order_id: Some(order.client_order_id.clone()),
        order_id: order.broker_order_id.clone(),
    };
    let active = app
        .plugins
        .active(PluginKind::Broker, &order.broker)
        .map_err(|err| err.to_string())?;
    let runtime = app.plugins.runtime().clone();
    let answer = off_thread(move || runtime.broker_cancel_order(&active, &account, &query))
        .await
        .and_then(|result| result.map_err(|err| err.to_string()))?;
    match answer {
        Ok(report) => record(app, trader, order, Observation::report(report)).await,
        Err(err) => Err(describe_error(&err)),
    }
}

/// Cancels the trader's limit entries still resting at the venue (a stopped bot opens nothing
/// more); returns how many could not be cancelled (reconciliation follows those up).
pub async fn cancel_resting_entries(app: &App, trader: &mut Trader) -> usize {
    let resting: Vec<OrderRow> = trader
        .live
        .iter()
        .filter(|o| o.kind == "limit" && o.intent != "close")
        .cloned()
        .collect();
    let mut failed = 0;
    for order in resting {
        if let Err(reason) = cancel(app, trader, &order).await {
            tracing::warn!(user_id = %trader.user_id, order = %order.client_order_id, %reason,
                "a resting limit entry could not be cancelled");
            failed += 1;
        }
    }
    failed
}

/// What was learned about an order.
#[derive(Debug, Default)]
pub struct Observation {
    /// The venue's report (status and fills).
    pub report: Option<OrderReport>,
    /// Fills of the order found otherwise (`fills-since`).
    pub fills: Vec<wire::Fill>,
    /// What happened when there is no report.
    pub event: Option<OrderEvent>,
    pub error: Option<String>,
    /// What the venue's plugin wrote in its store while answering (held back by the call), to
    /// be written with the booking.
    pub venue_writes: Vec<Change>,
}

impl Observation {
    pub fn report(report: OrderReport) -> Self {
        Observation {
            report: Some(report),
            ..Observation::default()
        }
    }

    pub fn event(event: OrderEvent, error: String) -> Self {
        Observation {
            event: Some(event),
            error: Some(error),
            ..Observation::default()
        }
    }
}

fn venue_status(status: wire::OrderStatus) -> VenueStatus {
    match status {
        wire::OrderStatus::Open => VenueStatus::Open,
        wire::OrderStatus::PartiallyFilled => VenueStatus::PartiallyFilled,
        wire::OrderStatus::Filled => VenueStatus::Filled,
        wire::OrderStatus::Cancelled => VenueStatus::Cancelled,
        wire::OrderStatus::Rejected => VenueStatus::Rejected,
        wire::OrderStatus::Expired => VenueStatus::Expired,
    }
}

/// A fill as the books take it: exact, rounded to the books' scale once.
struct NewFill {
    trade_id: String,
    fill: Fill,
}

fn parse_fill(
    order: &OrderRow,
    venue_order_id: Option<&str>,
    fill: &wire::Fill,
    now: i64,
) -> Result<NewFill, String> {
    let ours = fill.client_order_id == order.client_order_id
        || venue_order_id.is_some_and(|id| id == fill.order_id)
        || order.broker_order_id.as_deref() == Some(fill.order_id.as_str());
    if !ours || fill.symbol != order.symbol {
        return Err(format!(
            "fill {} is not of order {}",
            fill.trade_id, order.client_order_id
        ));
    }
    let number = |text: &str| decimal::parse(text).map(|d| d.round_dp(accounting::SCALE));
    let (quantity, price, fee) = (
        number(&fill.quantity)?,
        number(&fill.price)?,
        number(&fill.fee)?,
    );
    if quantity <= Decimal::ZERO || price <= Decimal::ZERO {
        return Err(format!("fill {} rounds to nothing", fill.trade_id));
    }
    Ok(NewFill {
        trade_id: fill.trade_id.clone(),
        fill: Fill {
            quantity,
            price,
            fee,
            // The venue's time, within the order's life.
            at_ms: fill
                .timestamp_ms
                .clamp(order.created_at, now.max(order.created_at)),
        },
    })
}

/// Books an observation of `order` in one transaction and applies it to the trader: returns the
/// order's status after it.
pub async fn record(
    app: &App,
    trader: &mut Trader,
    order: &OrderRow,
    observation: Observation,
) -> Result<OrderStatus, String> {
    let now = now_ms();
    let db_err = |err: WriteError| {
        tracing::error!(error = %err, order = %order.client_order_id, "database error while booking");
        "database error while booking the order".to_string()
    };
    let status = OrderStatus::parse(&order.status).unwrap_or(OrderStatus::Unknown);
    let quantity = order.quantity;
    let venue_order_id = observation.report.as_ref().map(|r| r.order_id.clone());

    // The fills to consider: the report's and any found otherwise, each venue trade once.
    let mut fills: Vec<NewFill> = Vec::new();
    for fill in observation
        .report
        .iter()
        .flat_map(|r| r.fills.iter())
        .chain(observation.fills.iter())
    {
        if fills.iter().any(|f| f.trade_id == fill.trade_id) {
            continue;
        }
        match parse_fill(order, venue_order_id.as_deref(), fill, now) {
            Ok(fill) => fills.push(fill),
            Err(err) => tracing::warn!(order = %order.client_order_id, "fill ignored: {err}"),
        }
    }
    fills.sort_by(|a, b| {
        a.fill
            .at_ms
            .cmp(&b.fill.at_ms)
            .then_with(|| a.trade_id.cmp(&b.trade_id))
    });

    // Fills booked before: only an order with something booked has any.
    let booked_before: Vec<String> = if order.filled_quantity > Decimal::ZERO && !fills.is_empty() {
        rows::booked_trade_ids(&app.db.pool, &order.id)
            .await
            .map_err(|err| db_err(err.into()))?
    } else {
        Vec::new()
    };

    let mut account = trader.account.clone();
    let mut touched: HashMap<String, Position> = HashMap::new();
    let mut opened: Option<String> = None;
    let mut booked = order.filled_quantity;
    let mut new_entries: Vec<LedgerEntry> = Vec::new();
    let mut booking = Booking {
        user_id: trader.user_id.clone(),
        plugin_store: observation.venue_writes,
        ..Booking::default()
    };
    // Orders written before positions were named at entry open one under their own id.
    let position_id = order
        .position_id
        .clone()
        .unwrap_or_else(|| order.id.clone());
    for NewFill { trade_id, fill } in fills {
        if booked_before.contains(&trade_id) {
            continue;
        }
        let fill_row = FillRow {
            id: new_id(),
            order_id: order.id.clone(),
            user_id: trader.user_id.clone(),
            venue_trade_id: trade_id,
            quantity: fill.quantity,
            price: fill.price,
            fee: fill.fee,
            filled_at: fill.at_ms,
            booked_at: now,
        };
        let current = touched
            .get(&position_id)
            .cloned()
            .or_else(|| trader.position(&position_id).cloned());
        let (position, entry) = if order.is_close() {
            let Some(mut position) = current else {
                return Err(format!(
                    "a fill of closing order {} for position {position_id}, which is not open",
                    order.client_order_id
                ));
            };
            let (entry, _) = account.close(
                &mut position,
                fill,
                order.exit_reason.as_deref().unwrap_or("signal"),
                new_id(),
                String::new(),
            );
            (position, entry)
        } else if let Some(mut position) = current {
            let entry = account.add(&mut position, fill, new_id());
            (position, entry)
        } else {
            let side = if order.intent == "open_short" {
                Side::Short
            } else {
                Side::Long
            };
            opened = Some(position_id.clone());
            account.open(
                OpenRequest {
                    position_id: position_id.clone(),
                    ledger_id: new_id(),
                    broker: &order.broker,
                    // Orders written before strategies were recorded belong to the bot's.
                    strategy: order.strategy.as_deref().unwrap_or(&trader.bot.strategy),
                    symbol: &order.symbol,
                    side,
                    stop_loss: order.stop_loss,
                    take_profit: order.take_profit,
                    trail_pct: order.trail_pct,
                },
                fill,
            )
        };
        touched.insert(position_id.clone(), position);
        booking.ledger.push(LedgerWrite {
            order_id: order.id.clone(),
            fill_id: Some(fill_row.id.clone()),
            entry: entry.clone(),
        });
        booking.fills.push(fill_row);
        booked += entry.quantity;
        new_entries.push(entry);
    }

    // The transition.
    let event = match (&observation.report, observation.event) {
        (Some(report), _) => Some(OrderEvent::Reported {
            venue: venue_status(report.status),
            venue_filled: decimal::parse(&report.filled_quantity).unwrap_or_default(),
        }),
        (None, Some(event)) => Some(event),
        (None, None) if !new_entries.is_empty() => Some(OrderEvent::FillsBooked),
        (None, None) => None,
    };
    let next = match event {
        None => status,
        Some(event) => match order_state::apply(status, event, Progress { quantity, booked }) {
            Ok(next) => next,
            Err(err) => {
                tracing::warn!(order = %order.client_order_id, %err, "unexpected report kept the order's status");
                status
            }
        },
    };
    // A closing order that filled leaves nothing of its position: the order was sized to the
    // whole position rounded down to the venue's lot, so what remains is dust the venue will not
    // trade. It leaves the books at the last fill's price with its value as a fee (part of this
    // close's trade), and joins what the venue holds apart from tradehost.
    if order.is_close()
        && next == OrderStatus::Filled
        && status.is_live()
        && let Some(mut position) = touched
            .get(&position_id)
            .cloned()
            .or_else(|| trader.position(&position_id).cloned())
        && position.quantity > Decimal::ZERO
        && app
            .engine
            .instruments
            .cached(&order.broker, &order.symbol)
            .is_none_or(|rules| position.quantity < rules.lot_size)
    {
        let dust = position.quantity;
        let price = position.current_price;
        let at_ms = new_entries.last().map_or(now, |e| e.at_ms);
        let (entry, _) = account.close(
            &mut position,
            Fill {
                quantity: dust,
                price,
                fee: (dust * price).round_dp(accounting::SCALE),
                at_ms,
            },
            order.exit_reason.as_deref().unwrap_or("signal"),
            new_id(),
            String::new(),
        );
        booking.ledger.push(LedgerWrite {
            order_id: order.id.clone(),
            fill_id: None,
            entry: entry.clone(),
        });
        booking.baseline = Some(BaselineShift {
            broker: order.broker.clone(),
            asset: instruments::asset_of(&order.symbol).to_string(),
            quantity: position.side.sign() * dust,
        });
        tracing::info!(user_id = %trader.user_id, position_id = %position.id, %dust, "dust below the lot left at the venue");
        touched.insert(position_id.clone(), position);
        new_entries.push(entry);
    }
    let checks = if next.is_live() {
        order.checks + 1
    } else {
        order.checks
    };
    let error = observation.error.as_deref().or_else(|| {
        observation
            .report
            .as_ref()
            .and_then(|r| r.reason.as_deref())
            .filter(|_| next.is_final())
    });
    booking.order = Some(OrderChange {
        order_id: order.id.clone(),
        status: next.as_str(),
        broker_order_id: venue_order_id.clone(),
        filled_quantity: booked,
        error: error.map(str::to_string),
        next_check_at: next.is_live().then(|| next_check(now, checks)),
        checks,
    });

    // A closing order that ended books its completed trade (its fills taken together).
    let mut trade = None;
    if order.is_close() && next.is_final() && status.is_live() {
        let mut closes = if order.filled_quantity > Decimal::ZERO {
            ledger::closes_of_order(&app.db.pool, &order.id)
                .await
                .map_err(|err| db_err(err.into()))?
        } else {
            Vec::new()
        };
        closes.extend(new_entries.iter().cloned());
        closes.sort_by(|a, b| a.at_ms.cmp(&b.at_ms).then_with(|| a.id.cmp(&b.id)));
        let position = touched
            .get(&position_id)
            .cloned()
            .or_else(|| trader.position(&position_id).cloned());
        if let Some(position) = position {
            trade = accounting::trade_of_closes(
                order.trade_id.clone().unwrap_or_else(new_id),
                order.exit_reason.as_deref().unwrap_or("signal"),
                &position,
                &closes,
            );
        }
    }
    if let Some(signal_id) = &order.signal_id
        && next.is_final()
        && status.is_live()
    {
        let (signal_status, outcome) = if booked > Decimal::ZERO {
            ("traded", None)
        } else {
            ("refused", Some(format!("the order {}", next.as_str())))
        };
        booking.signal = Some(SignalOutcome {
            signal_id: signal_id.clone(),
            status: signal_status,
            outcome: outcome.or_else(|| error.map(str::to_string)),
        });
    }
    if !new_entries.is_empty() {
        booking.account = Some(AccountChange::between(
            &trader.user_id,
            &trader.account,
            &account,
        ));
    }
    // What the user is told of is recorded with the books.
    let at = new_entries.last().map_or(now, |e| e.at_ms);
    let opened_position = opened.as_ref().and_then(|id| touched.get(id));
    if let Some(position) = opened_position {
        booking.events.push(notices::event(
            Some(&trader.user_id),
            Kind::TradeOpened,
            &opened_notice(position, at),
            now,
        ));
    }
    if let Some(trade) = &trade {
        booking.events.push(notices::event(
            Some(&trader.user_id),
            Kind::TradeClosed,
            &closed_notice(trade),
            now,
        ));
        booking.trade = Some(trade.clone());
    }
    booking.positions = touched.values().cloned().collect();
    // Durable, its commit and flush shared with the bookings of the moment, before anything
    // goes out on it.
    app.db
        .write_under(trader.fence(), Job::Booking(Box::new(booking)))
        .await
        .map_err(db_err)?;
    if opened_position.is_some() || trade.is_some() {
        app.notifier.wake();
    }

    // The books committed: the trader and the stream follow.
    trader.account = account;
    if let Some(live) = trader.live.iter_mut().find(|o| o.id == order.id) {
        live.status = next.as_str().into();
        live.filled_quantity = booked;
        live.checks = checks;
        live.next_check_at = next.is_live().then(|| next_check(now, checks));
        if let Some(id) = &venue_order_id {
            live.broker_order_id = Some(id.clone());
        }
    }
    if next.is_final() {
        trader.live.retain(|o| o.id != order.id);
    }
    let events = &app.events;
    for (id, position) in touched {
        if opened.as_deref() == Some(id.as_str()) {
            trader.stats.opens_today += 1;
            events.publish(
                &trader.user_id,
                Channel::Trades,
                "trade_executed",
                &TradeExecuted {
                    trade_id: &position.id,
                    position_id: &position.id,
                    action: "opened",
                    symbol: &position.symbol,
                    side: position.side,
                    entry_price: float(position.entry_price),
                    exit_price: None,
                    quantity: float(position.quantity),
                    size_usd: float(position.cost_basis()),
                    fees: float(position.entry_fees),
                    realized_pnl: None,
                    exit_reason: None,
                    timestamp: iso8601(at),
                },
            );
        }
        events.publish(
            &trader.user_id,
            Channel::Positions,
            "position_update",
            &position_update(&position, at),
        );
        if position.quantity.is_zero() {
            trader.positions.retain(|p| p.id != id);
        } else if let Some(slot) = trader.positions.iter_mut().find(|p| p.id == id) {
            *slot = position;
        } else {
            trader.positions.push(position);
        }
    }
    if let Some(trade) = trade {
        trader.stats.record(&trade);
        events.publish(
            &trader.user_id,
            Channel::Trades,
            "trade_executed",
            &TradeExecuted {
                trade_id: &trade.id,
                position_id: &trade.position_id,
                action: "closed",
                symbol: &trade.symbol,
                side: trade.side,
                entry_price: float(trade.entry_price),
                exit_price: Some(float(trade.exit_price)),
                quantity: float(trade.quantity),
                size_usd: float(trade.size_usd),
                fees: float(trade.fees),
                realized_pnl: Some(float(trade.net_pnl)),
                exit_reason: Some(&trade.exit_reason),
                timestamp: iso8601(trade.closed_at_ms),
            },
        );
    }
    if next != status {
        tracing::debug!(user_id = %trader.user_id, order = %order.client_order_id, from = status.as_str(), to = next.as_str(), "order moved");
    }
    Ok(next)
}

/// The notice of a position opened. Money is decimal text, exactly as booked.
pub(crate) fn opened_notice(position: &Position, at: i64) -> TradeNotice<'_> {
    TradeNotice {
        action: "opened",
        trade_id: &position.id,
        position_id: &position.id,
        symbol: &position.symbol,
        side: position.side.as_str(),
        strategy: &position.strategy,
        broker: &position.broker,
        quantity: position.quantity,
        entry_price: position.entry_price,
        exit_price: None,
        size_usd: position.cost_basis(),
        fees: position.entry_fees,
        realized_pnl: None,
        pnl_pct: None,
        exit_reason: None,
        timestamp: iso8601(at),
    }
}

/// The notice of a completed trade.
pub(crate) fn closed_notice(trade: &CompletedTrade) -> TradeNotice<'_> {
    TradeNotice {
        action: "closed",
        trade_id: &trade.id,
        position_id: &trade.position_id,
        symbol: &trade.symbol,
        side: trade.side.as_str(),
        strategy: &trade.strategy,
        broker: &trade.broker,
        quantity: trade.quantity,
        entry_price: trade.entry_price,
        exit_price: Some(trade.exit_price),
        size_usd: trade.size_usd,
        fees: trade.fees,
        realized_pnl: Some(trade.net_pnl),
        pnl_pct: Some(trade.pnl_pct),
        exit_reason: Some(&trade.exit_reason),
        timestamp: iso8601(trade.closed_at_ms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_order_ids_are_stable_and_distinct() {
        let a = client_order_id(&["bot", "position", "close", "1"]);
        assert_eq!(a, client_order_id(&["bot", "position", "close", "1"]));
        assert_ne!(a, client_order_id(&["bot", "position", "close", "2"]));
        // Parts are separated, so shifting text between them changes the id.
        assert_ne!(client_order_id(&["ab", "c"]), client_order_id(&["a", "bc"]));
        assert!(a.starts_with("th-") && a.len() == 35);
    }

    #[test]
    fn checks_back_off_to_a_ceiling() {
        assert_eq!(next_check(0, 0), FIRST_CHECK_MS);
        assert_eq!(next_check(0, 1), 2 * FIRST_CHECK_MS);
        assert_eq!(next_check(0, 40), MAX_CHECK_MS);
        assert_eq!(next_check(1_000, 3), 1_000 + 8 * FIRST_CHECK_MS);
    }

    #[test]
    fn only_timeouts_and_outages_leave_the_outcome_unknown() {
        assert!(!not_placed(&BrokerError::Timeout("t".into())));
        assert!(!not_placed(&BrokerError::Unavailable("u".into())));
        for err in [
            BrokerError::Rejected("r".into()),
            BrokerError::InsufficientFunds("f".into()),
            BrokerError::Invalid("i".into()),
            BrokerError::Auth("a".into()),
            BrokerError::RateLimited(100),
            BrokerError::Unsupported("u".into()),
            BrokerError::Unreachable("no route".into()),
        ] {
            assert!(not_placed(&err), "{err:?}");
        }
    }
}
