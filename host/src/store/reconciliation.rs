//! What reconciliation keeps: each venue's holdings apart from tradehost's positions
//! (`venue_baselines`), and the differences it could not explain (`discrepancies`).

use super::Executes;
use super::statements::{Statements, statement};
use rust_decimal::Decimal;
use sqlx::FromRow;

use super::StoredDecimal;

/// The venue's quantity of an asset (signed) not from tradehost's positions, if recorded. The
/// `symbol` column holds the asset (`BTC`): spot venues hold assets, not pairs.
pub async fn baseline<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    broker: &str,
    symbol: &str,
) -> sqlx::Result<Option<Decimal>> {
    let quantity: Option<StoredDecimal> = on!(exec, |c| {
        sqlx::query_scalar(
            schema_checked!("SELECT quantity FROM venue_baselines WHERE user_id = $1 AND broker = $2 AND symbol = $3"),
        )
        .bind(user_id)
        .bind(broker)
        .bind(symbol)
        .fetch_optional(c)
        .await
    })?;
    Ok(StoredDecimal::opt(quantity))
}

pub async fn set_baseline<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    broker: &str,
    symbol: &str,
    quantity: Decimal,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO venue_baselines (user_id, broker, symbol, quantity, updated_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (user_id, broker, symbol) DO UPDATE SET quantity = $4, updated_at = $5"),
        )
        .bind(user_id)
        .bind(broker)
        .bind(symbol)
        .bind(StoredDecimal(quantity))
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Adds `quantity` to the asset's baseline where one is recorded (dust a close left at the
/// venue joins what the venue holds apart from tradehost).
pub fn shift_baseline(
    statements: &mut Statements,
    user_id: &str,
    broker: &str,
    symbol: &str,
    quantity: Decimal,
    now: i64,
) {
    statement!(statements, |query| {
        query
            .push("UPDATE venue_baselines SET quantity = quantity + ")
            .push_bind(StoredDecimal(quantity))
            .push(", updated_at = ")
            .push_bind(now)
            .push(" WHERE user_id = ")
            .push_bind(user_id)
            .push(" AND broker = ")
            .push_bind(broker)
            .push(" AND symbol = ")
            .push_bind(symbol);
    })
}

#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct DiscrepancyRow {
    pub id: String,
    pub user_id: String,
    pub broker: String,
    /// `position` (the venue holds other than the books say) or `order` (an order's outcome
    /// cannot be learned from the venue).
    pub kind: String,
    pub symbol: Option<String>,
    pub order_id: Option<String>,
    /// What the books say.
    pub expected: Option<String>,
    /// What the venue says.
    pub actual: Option<String>,
    pub detail: String,
    pub status: String,
    pub found_at: i64,
    pub resolved_at: Option<i64>,
    pub resolved_by: Option<String>,
    pub resolution: Option<String>,
}

const COLUMNS: &str = "id, user_id, broker, kind, symbol, order_id, expected, actual, detail, status, found_at, \
                       resolved_at, resolved_by, resolution";

pub async fn insert<'e>(exec: impl Executes<'e>, d: &DiscrepancyRow) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO discrepancies ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
        )))
        .bind(&d.id)
        .bind(&d.user_id)
        .bind(&d.broker)
        .bind(&d.kind)
        .bind(&d.symbol)
        .bind(&d.order_id)
        .bind(&d.expected)
        .bind(&d.actual)
        .bind(&d.detail)
        .bind(&d.status)
        .bind(d.found_at)
        .bind(d.resolved_at)
        .bind(&d.resolved_by)
        .bind(&d.resolution)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// The user's unresolved discrepancies, oldest first.
pub async fn open<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Vec<DiscrepancyRow>> {
    on!(exec, |c| {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM discrepancies WHERE user_id = $1 AND status = 'open' ORDER BY found_at, id"
        )))
        .bind(user_id)
        .fetch_all(c)
        .await
    })
}

/// The user's discrepancies, newest first (at most `limit`).
pub async fn recent<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<DiscrepancyRow>> {
    on!(exec, |c| {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM discrepancies WHERE user_id = $1 ORDER BY found_at DESC, id DESC LIMIT $2"
        )))
        .bind(user_id)
        .bind(limit)
        .fetch_all(c)
        .await
    })
}

pub async fn resolve<'e>(
    exec: impl Executes<'e>,
    id: &str,
    resolved_by: &str,
    resolution: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE discrepancies SET status = 'resolved', resolved_at = $2, resolved_by = $3, resolution = $4 \
             WHERE id = $1 AND status = 'open'"),
        )
        .bind(id)
        .bind(now)
        .bind(resolved_by)
        .bind(resolution)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn count_open<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM discrepancies WHERE user_id = $1 AND status = 'open'"
    ))
    .bind(user_id)
    .fetch_one(c)
    .await)
}
