//! Billing tables: subscriptions, payments, processed provider events and API-call counts.

use sqlx::{Any, Executor, FromRow};

#[derive(Debug, Clone, FromRow)]
pub struct SubscriptionRow {
    pub id: String,
    pub user_id: String,
    pub tier: String,
    pub billing_interval: String,
    pub status: String,
    pub current_period_start: i64,
    pub current_period_end: i64,
    pub cancel_at_period_end: i64,
    pub amount: String,
    pub currency: String,
    /// JSON object: type, last4, brand, exp_month, exp_year.
    pub payment_method: Option<String>,
    pub customer_id: String,
    pub cancelled_at: Option<i64>,
    pub cancel_reason: Option<String>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, user_id, tier, billing_interval, status, current_period_start, current_period_end, \
                       cancel_at_period_end, amount, currency, payment_method, customer_id, cancelled_at, \
                       cancel_reason, created_at";

pub async fn subscription<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Option<SubscriptionRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE user_id = $1"
    )))
    .bind(user_id)
    .fetch_optional(exec)
    .await
}

pub async fn by_customer<'e>(
    exec: impl Executor<'e, Database = Any>,
    customer_id: &str,
) -> sqlx::Result<Option<SubscriptionRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE customer_id = $1"
    )))
    .bind(customer_id)
    .fetch_optional(exec)
    .await
}

/// Subscriptions whose period ended before `now` and are still running (renewal or the end of a
/// cancellation).
pub async fn due<'e>(
    exec: impl Executor<'e, Database = Any>,
    now: i64,
) -> sqlx::Result<Vec<SubscriptionRow>> {
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE status = 'active' AND current_period_end <= $1"
    )))
    .bind(now)
    .fetch_all(exec)
    .await
}

/// Writes the user's subscription (one per user).
pub async fn put<'e>(
    exec: impl Executor<'e, Database = Any>,
    s: &SubscriptionRow,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO subscriptions ({COLUMNS}, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) \
         ON CONFLICT (user_id) DO UPDATE SET id = $1, tier = $3, billing_interval = $4, status = $5, \
         current_period_start = $6, current_period_end = $7, cancel_at_period_end = $8, amount = $9, \
         currency = $10, payment_method = $11, customer_id = $12, cancelled_at = $13, cancel_reason = $14, \
         updated_at = $16"
    )))
    .bind(&s.id)
    .bind(&s.user_id)
    .bind(&s.tier)
    .bind(&s.billing_interval)
    .bind(&s.status)
    .bind(s.current_period_start)
    .bind(s.current_period_end)
    .bind(s.cancel_at_period_end)
    .bind(&s.amount)
    .bind(&s.currency)
    .bind(&s.payment_method)
    .bind(&s.customer_id)
    .bind(s.cancelled_at)
    .bind(&s.cancel_reason)
    .bind(s.created_at)
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

pub struct Payment<'a> {
    pub id: &'a str,
    pub user_id: &'a str,
    pub subscription_id: &'a str,
    pub kind: &'a str,
    pub amount: &'a str,
    pub currency: &'a str,
    pub provider: &'a str,
    pub provider_reference: &'a str,
    pub description: &'a str,
    pub created_at: i64,
}

pub async fn insert_payment<'e>(
    exec: impl Executor<'e, Database = Any>,
    p: &Payment<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO payments (id, user_id, subscription_id, kind, amount, currency, provider, provider_reference, \
         description, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(p.id)
    .bind(p.user_id)
    .bind(p.subscription_id)
    .bind(p.kind)
    .bind(p.amount)
    .bind(p.currency)
    .bind(p.provider)
    .bind(p.provider_reference)
    .bind(p.description)
    .bind(p.created_at)
    .execute(exec)
    .await?;
    Ok(())
}

/// Records a provider event; `Ok(false)` when it was processed before.
pub async fn record_event<'e>(
    exec: impl Executor<'e, Database = Any>,
    event_id: &str,
    event_type: &str,
    handled: bool,
    user_id: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let result = sqlx::query(
        "INSERT INTO payment_events (event_id, event_type, handled, user_id, received_at) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (event_id) DO NOTHING",
    )
    .bind(event_id)
    .bind(event_type)
    .bind(handled as i64)
    .bind(user_id)
    .bind(now)
    .execute(exec)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub async fn event_seen<'e>(
    exec: impl Executor<'e, Database = Any>,
    event_id: &str,
) -> sqlx::Result<Option<bool>> {
    let handled: Option<i64> =
        sqlx::query_scalar("SELECT handled FROM payment_events WHERE event_id = $1")
            .bind(event_id)
            .fetch_optional(exec)
            .await?;
    Ok(handled.map(|h| h != 0))
}

/// Adds API calls to a user's count for a UTC day.
pub async fn add_api_calls<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    day: i64,
    calls: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO api_usage (user_id, day, calls) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id, day) DO UPDATE SET calls = api_usage.calls + $3",
    )
    .bind(user_id)
    .bind(day)
    .bind(calls)
    .execute(exec)
    .await?;
    Ok(())
}

pub async fn api_calls_since<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    day: i64,
) -> sqlx::Result<i64> {
    let calls: i64 = sqlx::query_scalar("SELECT CAST(COALESCE(SUM(calls), 0) AS BIGINT) FROM api_usage WHERE user_id = $1 AND day >= $2")
        .bind(user_id)
        .bind(day)
        .fetch_one(exec)
        .await?;
    Ok(calls)
}

/// Fills (opening orders) and positions opened since `since`.
pub async fn opens_since<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM ledger WHERE user_id = $1 AND action = 'OPEN' AND created_at >= $2",
    )
    .bind(user_id)
    .bind(since)
    .fetch_one(exec)
    .await
}
