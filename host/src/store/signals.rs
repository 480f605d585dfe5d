//! Inbound webhook signals: a row before the sender is answered, processed once by the bot's
//! next scan, with its outcome kept for the sender to read by `trade_id` (the row's id).

use super::Executes;
use super::statements::{Statements, statement};
use rust_decimal::Decimal;
use sqlx::FromRow;

use super::{OptionalStoredDecimal, StoredDecimal};

#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct SignalRow {
    pub id: String,
    pub user_id: String,
    pub symbol: String,
    /// buy, sell or close.
    pub action: String,
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub size_usd: Option<Decimal>,
    pub strategy: Option<String>,
    /// received, ordered, traded, refused, expired.
    pub status: String,
    pub outcome: Option<String>,
    pub order_id: Option<String>,
    pub received_at: i64,
    pub processed_at: Option<i64>,
    /// A limit entry's price; `None`: market.
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub limit_price: Option<Decimal>,
}

const COLUMNS: &str = "id, user_id, symbol, action, size_usd, strategy, status, outcome, order_id, received_at, processed_at, limit_price";

pub async fn insert<'e>(exec: impl Executes<'e>, s: &SignalRow) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO signals ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"
    )))
    .bind(&s.id)
    .bind(&s.user_id)
    .bind(&s.symbol)
    .bind(&s.action)
    .bind(s.size_usd.map(StoredDecimal))
    .bind(&s.strategy)
    .bind(&s.status)
    .bind(&s.outcome)
    .bind(&s.order_id)
    .bind(s.received_at)
    .bind(s.processed_at)
    .bind(s.limit_price.map(StoredDecimal))
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// The user's signals waiting for the bot, oldest first.
pub async fn waiting<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<SignalRow>> {
    on!(exec, |c| {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM signals WHERE user_id = $1 AND status = 'received' ORDER BY received_at, id LIMIT $2"
        )))
        .bind(user_id)
        .bind(limit)
        .fetch_all(c)
        .await
    })
}

pub async fn count_waiting<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM signals WHERE user_id = $1 AND status = 'received'"
    ))
    .bind(user_id)
    .fetch_one(c)
    .await)
}

pub async fn by_id<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    id: &str,
) -> sqlx::Result<Option<SignalRow>> {
    on!(exec, |c| sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM signals WHERE id = $1 AND user_id = $2"
    )))
    .bind(id)
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

/// Records what became of a signal.
pub async fn finish<'e>(
    exec: impl Executes<'e>,
    id: &str,
    status: &str,
    outcome: Option<&str>,
    order_id: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE signals SET status = $2, outcome = $3, order_id = COALESCE($4, order_id), processed_at = $5 WHERE id = $1"),
        )
        .bind(id)
        .bind(status)
        .bind(outcome)
        .bind(order_id)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Marks what a signal's order came to, when it ends.
pub fn order_ended(statements: &mut Statements, id: &str, status: &str, outcome: Option<&str>) {
    statement!(statements, |query| {
        query
            .push("UPDATE signals SET status = ")
            .push_bind(status)
            .push(", outcome = COALESCE(")
            .push_bind(outcome)
            .push(", outcome) WHERE id = ")
            .push_bind(id)
            .push(" AND status = 'ordered'");
    })
}
