//! Orders and their fills. An order row is written before the venue sees the order and follows it
//! through the state machine of `engine::order_state`; each fill is a row of its own, unique per
//! (order, venue trade id), so a fill the venue reports twice is booked once.

use super::Executes;
use rust_decimal::Decimal;
use sqlx::FromRow;

use super::statements::{Statements, statement};
use super::{OptionalStoredDecimal, StoredDecimal};

/// Statuses of orders that may still fill.
pub const LIVE: &str = "('new', 'submitted', 'partially_filled', 'unknown')";

#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct OrderRow {
    pub id: String,
    pub user_id: String,
    pub client_order_id: String,
    pub broker: String,
    pub symbol: String,
    /// BUY or SELL.
    pub side: String,
    /// open_long, open_short or close.
    pub intent: String,
    /// market or limit.
    pub kind: String,
    #[sqlx(try_from = "StoredDecimal")]
    pub quantity: Decimal,
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub limit_price: Option<Decimal>,
    #[sqlx(try_from = "StoredDecimal")]
    pub filled_quantity: Decimal,
    /// The position the order opens (named before it fills) or closes.
    pub position_id: Option<String>,
    /// The completed trade a closing order books (named before it fills).
    pub trade_id: Option<String>,
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub stop_loss: Option<Decimal>,
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub take_profit: Option<Decimal>,
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub trail_pct: Option<Decimal>,
    pub exit_reason: Option<String>,
    /// The strategy of an opening order.
    pub strategy: Option<String>,
    /// Which attempt at closing its position (1 for opening orders).
    pub attempt: i64,
    pub signal_id: Option<String>,
    pub status: String,
    pub broker_order_id: Option<String>,
    pub error: Option<String>,
    pub next_check_at: Option<i64>,
    pub checks: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl OrderRow {
    pub fn is_close(&self) -> bool {
        self.intent == "close"
    }
}

const ORDER_COLUMNS: &str = "id, user_id, client_order_id, broker, symbol, side, intent, kind, quantity, limit_price, \
    filled_quantity, position_id, trade_id, stop_loss, take_profit, trail_pct, exit_reason, attempt, signal_id, status, \
    broker_order_id, error, next_check_at, checks, created_at, updated_at, strategy";

/// Writes orders before they are sent, in one statement, which returns the client order ids
/// written (an order whose client id exists already is not). Client ids must be distinct.
pub fn insert(statements: &mut Statements, orders: &[&OrderRow]) {
    if orders.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(format!("INSERT INTO orders ({ORDER_COLUMNS}) "));
        query.push_values(orders, |mut row, o| {
            row.push_bind(o.id.clone())
                .push_bind(o.user_id.clone())
                .push_bind(o.client_order_id.clone())
                .push_bind(o.broker.clone())
                .push_bind(o.symbol.clone())
                .push_bind(o.side.clone())
                .push_bind(o.intent.clone())
                .push_bind(o.kind.clone())
                .push_bind(StoredDecimal(o.quantity))
                .push_bind(o.limit_price.map(StoredDecimal))
                .push_bind(StoredDecimal(o.filled_quantity))
                .push_bind(o.position_id.clone())
                .push_bind(o.trade_id.clone())
                .push_bind(o.stop_loss.map(StoredDecimal))
                .push_bind(o.take_profit.map(StoredDecimal))
                .push_bind(o.trail_pct.map(StoredDecimal))
                .push_bind(o.exit_reason.clone())
                .push_bind(o.attempt)
                .push_bind(o.signal_id.clone())
                .push_bind(o.status.clone())
                .push_bind(o.broker_order_id.clone())
                .push_bind(o.error.clone())
                .push_bind(o.next_check_at)
                .push_bind(o.checks)
                .push_bind(o.created_at)
                .push_bind(o.updated_at)
                .push_bind(o.strategy.clone());
        });
        query.push(" ON CONFLICT (client_order_id) DO NOTHING RETURNING client_order_id");
    })
}

pub async fn by_client_id<'e>(
    exec: impl Executes<'e>,
    client_order_id: &str,
) -> sqlx::Result<Option<OrderRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {ORDER_COLUMNS} FROM orders WHERE client_order_id = $1"
    ))
    .bind(client_order_id)
    .fetch_optional(c)
    .await)
}

pub async fn by_id<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    id: &str,
) -> sqlx::Result<Option<OrderRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {ORDER_COLUMNS} FROM orders WHERE id = $1 AND user_id = $2"
    ))
    .bind(id)
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

/// The user's orders that may still fill, oldest first.
pub async fn live<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Vec<OrderRow>> {
    on!(exec, |c| {
        sqlx::query_as(sql!(
            "SELECT {ORDER_COLUMNS} FROM orders WHERE user_id = $1 AND status IN {LIVE} ORDER BY created_at, id"
        ))
        .bind(user_id)
        .fetch_all(c)
        .await
    })
}

/// Users with work for the order supervisor at `now`: a live order due for a check, or a
/// requested close due for an attempt.
pub async fn users_with_due_work<'e>(
    exec: impl Executes<'e>,
    now: i64,
) -> sqlx::Result<Vec<String>> {
    on!(exec, |c| sqlx::query_scalar(sql!(
        "SELECT user_id FROM orders WHERE status IN {LIVE} AND COALESCE(next_check_at, 0) <= $1 \
         UNION SELECT user_id FROM positions WHERE status = 'open' AND close_reason IS NOT NULL \
         AND COALESCE(next_close_at, 0) <= $1"
    ))
    .bind(now)
    .fetch_all(c)
    .await)
}

/// What a transition changes on an order's row.
#[derive(Debug, Clone)]
pub struct OrderChange {
    pub order_id: String,
    pub status: &'static str,
    /// The venue's id, once known (an absent one keeps what the row has).
    pub broker_order_id: Option<String>,
    pub filled_quantity: Decimal,
    /// Why it ended or what went wrong (an absent one keeps what the row has).
    pub error: Option<String>,
    pub next_check_at: Option<i64>,
    pub checks: i64,
}

/// Applies transitions to their orders (distinct), in one statement.
pub fn update(statements: &mut Statements, changes: &[&OrderChange], now: i64) {
    if changes.is_empty() {
        return;
    }
    statement!(statements, |query| {
        // VALUES columns are column1, column2, … on both backends.
        query.push(
            "UPDATE orders SET status = v.column2, broker_order_id = COALESCE(v.column3, orders.broker_order_id), \
             filled_quantity = v.column4, error = COALESCE(v.column5, orders.error), next_check_at = v.column6, \
             checks = v.column7, updated_at = v.column8 FROM (",
        );
        query.push_values(changes, |mut row, u| {
            row.push_bind(u.order_id.clone())
                .push_bind(u.status)
                .push_bind(u.broker_order_id.clone())
                .push_bind(StoredDecimal(u.filled_quantity))
                .push_bind(u.error.clone())
                .push_bind(u.next_check_at)
                .push_bind(u.checks)
                .push_bind(now);
        });
        query.push(") AS v WHERE orders.id = v.column1");
    })
}

/// Postpones a live order's next check (the venue could not be asked).
pub async fn postpone_check<'e>(
    exec: impl Executes<'e>,
    id: &str,
    next_check_at: i64,
    checks: i64,
    error: &str,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE orders SET next_check_at = $2, checks = $3, error = $4 WHERE id = $1"
    ))
    .bind(id)
    .bind(next_check_at)
    .bind(checks)
    .bind(error)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// Opening orders that filled (at least partly) since `since`: the day's trade count.
pub async fn count_opens_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<i64> {
    on!(exec, |c| {
        sqlx::query_scalar(
            schema_checked!("SELECT COUNT(*) FROM orders WHERE user_id = $1 AND intent <> 'close' AND filled_quantity <> 0 \
             AND created_at >= $2"),
        )
        .bind(user_id)
        .bind(since)
        .fetch_one(c)
        .await
    })
}

/// A user's orders, newest first, with the total count (`status` filters).
pub async fn page<'e>(
    exec: impl Executes<'e> + Copy,
    user_id: &str,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<OrderRow>, i64)> {
    let rows = on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {ORDER_COLUMNS} FROM orders WHERE user_id = $1 AND ($2 IS NULL OR status = $2) \
         ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
    ))
    .bind(user_id)
    .bind(status)
    .bind(limit)
    .bind(offset)
    .fetch_all(c)
    .await)?;
    let total = on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM orders WHERE user_id = $1 AND ($2 IS NULL OR status = $2)"
    ))
    .bind(user_id)
    .bind(status)
    .fetch_one(c)
    .await)?;
    Ok((rows, total))
}

// ----- fills -----

#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct FillRow {
    pub id: String,
    pub order_id: String,
    pub user_id: String,
    pub venue_trade_id: String,
    #[sqlx(try_from = "StoredDecimal")]
    pub quantity: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub price: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub fee: Decimal,
    pub filled_at: i64,
    pub booked_at: i64,
}

/// Records fills, in one statement. Each (order, venue trade id) is booked once: one booked
/// before fails the statement (the booking reads what was booked first).
pub fn insert_fills(statements: &mut Statements, fills: &[&FillRow]) {
    if fills.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(
            "INSERT INTO fills (id, order_id, user_id, venue_trade_id, quantity, price, fee, filled_at, booked_at) ",
        );
        query.push_values(fills, |mut row, f| {
            row.push_bind(f.id.clone())
                .push_bind(f.order_id.clone())
                .push_bind(f.user_id.clone())
                .push_bind(f.venue_trade_id.clone())
                .push_bind(StoredDecimal(f.quantity))
                .push_bind(StoredDecimal(f.price))
                .push_bind(StoredDecimal(f.fee))
                .push_bind(f.filled_at)
                .push_bind(f.booked_at);
        });
    })
}

/// The fills booked for an order, in time order.
pub async fn fills_of<'e>(exec: impl Executes<'e>, order_id: &str) -> sqlx::Result<Vec<FillRow>> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT id, order_id, user_id, venue_trade_id, quantity, price, fee, filled_at, booked_at FROM fills \
             WHERE order_id = $1 ORDER BY filled_at, id"),
        )
        .bind(order_id)
        .fetch_all(c)
        .await
    })
}

/// The venue trade ids already booked for an order.
pub async fn booked_trade_ids<'e>(
    exec: impl Executes<'e>,
    order_id: &str,
) -> sqlx::Result<Vec<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT venue_trade_id FROM fills WHERE order_id = $1"
    ))
    .bind(order_id)
    .fetch_all(c)
    .await)
}
