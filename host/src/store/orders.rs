//! Orders and their fills. An order row is written before the venue sees the order and follows it
//! through the state machine of `engine::order_state`; each fill is a row of its own, unique per
//! (order, venue trade id), so a fill the venue reports twice is booked once.

use super::Executes;
use rust_decimal::Decimal;
use sqlx::FromRow;

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

/// Writes an order before it is sent. `Ok(false)`: an order with this client id exists already.
pub async fn insert<'e>(exec: impl Executes<'e>, o: &OrderRow) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(sql!(
            "INSERT INTO orders ({ORDER_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
             $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27) ON CONFLICT (client_order_id) DO NOTHING"
        ))
        .bind(&o.id)
        .bind(&o.user_id)
        .bind(&o.client_order_id)
        .bind(&o.broker)
        .bind(&o.symbol)
        .bind(&o.side)
        .bind(&o.intent)
        .bind(&o.kind)
        .bind(StoredDecimal(o.quantity))
        .bind(o.limit_price.map(StoredDecimal))
        .bind(StoredDecimal(o.filled_quantity))
        .bind(&o.position_id)
        .bind(&o.trade_id)
        .bind(o.stop_loss.map(StoredDecimal))
        .bind(o.take_profit.map(StoredDecimal))
        .bind(o.trail_pct.map(StoredDecimal))
        .bind(&o.exit_reason)
        .bind(o.attempt)
        .bind(&o.signal_id)
        .bind(&o.status)
        .bind(&o.broker_order_id)
        .bind(&o.error)
        .bind(o.next_check_at)
        .bind(o.checks)
        .bind(o.created_at)
        .bind(o.updated_at)
        .bind(&o.strategy)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
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

/// What a transition changes on the order row.
#[derive(Debug, Clone)]
pub struct OrderUpdate<'a> {
    pub status: &'a str,
    pub broker_order_id: Option<&'a str>,
    pub filled_quantity: Decimal,
    pub error: Option<&'a str>,
    pub next_check_at: Option<i64>,
    pub checks: i64,
}

pub async fn update<'e>(
    exec: impl Executes<'e>,
    id: &str,
    u: &OrderUpdate<'_>,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            "UPDATE orders SET status = $2, broker_order_id = COALESCE($3, broker_order_id), filled_quantity = $4, \
             error = COALESCE($5, error), next_check_at = $6, checks = $7, updated_at = $8 WHERE id = $1",
        )
        .bind(id)
        .bind(u.status)
        .bind(u.broker_order_id)
        .bind(StoredDecimal(u.filled_quantity))
        .bind(u.error)
        .bind(u.next_check_at)
        .bind(u.checks)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Postpones a live order's next check (the venue could not be asked).
pub async fn postpone_check<'e>(
    exec: impl Executes<'e>,
    id: &str,
    next_check_at: i64,
    checks: i64,
    error: &str,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(
        "UPDATE orders SET next_check_at = $2, checks = $3, error = $4 WHERE id = $1"
    )
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
            "SELECT COUNT(*) FROM orders WHERE user_id = $1 AND intent <> 'close' AND filled_quantity <> 0 \
             AND created_at >= $2",
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
    let total = on!(exec, |c| sqlx::query_scalar(
        "SELECT COUNT(*) FROM orders WHERE user_id = $1 AND ($2 IS NULL OR status = $2)",
    )
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

/// Records a fill; `Ok(false)` when this (order, venue trade id) was booked before.
pub async fn insert_fill<'e>(exec: impl Executes<'e>, f: &FillRow) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(
            "INSERT INTO fills (id, order_id, user_id, venue_trade_id, quantity, price, fee, filled_at, booked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (order_id, venue_trade_id) DO NOTHING",
        )
        .bind(&f.id)
        .bind(&f.order_id)
        .bind(&f.user_id)
        .bind(&f.venue_trade_id)
        .bind(StoredDecimal(f.quantity))
        .bind(StoredDecimal(f.price))
        .bind(StoredDecimal(f.fee))
        .bind(f.filled_at)
        .bind(f.booked_at)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

/// The fills booked for an order, in time order.
pub async fn fills_of<'e>(exec: impl Executes<'e>, order_id: &str) -> sqlx::Result<Vec<FillRow>> {
    on!(exec, |c| {
        sqlx::query_as(
            "SELECT id, order_id, user_id, venue_trade_id, quantity, price, fee, filled_at, booked_at FROM fills \
             WHERE order_id = $1 ORDER BY filled_at, id",
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
    on!(exec, |c| sqlx::query_scalar(
        "SELECT venue_trade_id FROM fills WHERE order_id = $1"
    )
    .bind(order_id)
    .fetch_all(c)
    .await)
}
