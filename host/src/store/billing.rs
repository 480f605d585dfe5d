//! Billing tables: subscriptions, payments, processed provider events and API-call counts.

use super::Executes;
use rust_decimal::Decimal;
use sqlx::FromRow;

use super::StoredDecimal;

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
    #[sqlx(try_from = "StoredDecimal")]
    pub amount: Decimal,
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
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<Option<SubscriptionRow>> {
    on!(exec, |c| sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE user_id = $1"
    )))
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

pub async fn by_customer<'e>(
    exec: impl Executes<'e>,
    customer_id: &str,
) -> sqlx::Result<Option<SubscriptionRow>> {
    on!(exec, |c| sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM subscriptions WHERE customer_id = $1"
    )))
    .bind(customer_id)
    .fetch_optional(c)
    .await)
}

/// Subscriptions whose period ended before `now` and are still running (renewal, a renewal
/// being retried, or the end of a cancellation).
pub async fn due<'e>(exec: impl Executes<'e>, now: i64) -> sqlx::Result<Vec<SubscriptionRow>> {
    on!(exec, |c| {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM subscriptions WHERE status IN ('active', 'past_due') AND current_period_end <= $1"
        )))
        .bind(now)
        .fetch_all(c)
        .await
    })
}

/// Writes the user's subscription (one per user).
pub async fn put<'e>(exec: impl Executes<'e>, s: &SubscriptionRow, now: i64) -> sqlx::Result<()> {
    on!(exec, |c| {
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
        .bind(StoredDecimal(s.amount))
        .bind(&s.currency)
        .bind(&s.payment_method)
        .bind(&s.customer_id)
        .bind(s.cancelled_at)
        .bind(&s.cancel_reason)
        .bind(s.created_at)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// A payment as it is first written: `pending`, under its idempotency key, before the provider
/// is called.
pub struct Payment<'a> {
    pub id: &'a str,
    pub user_id: &'a str,
    pub subscription_id: &'a str,
    /// charge or refund.
    pub kind: &'a str,
    pub amount: Decimal,
    pub currency: &'a str,
    pub provider: &'a str,
    pub description: &'a str,
    /// The same key for the same money movement, however often it is attempted.
    pub idempotency_key: &'a str,
    /// The subscription period the payment is for.
    pub period_start: Option<i64>,
    pub created_at: i64,
}

/// Writes a pending payment; `Ok(false)` when one with its idempotency key exists already.
pub async fn insert_pending<'e>(exec: impl Executes<'e>, p: &Payment<'_>) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO payments (id, user_id, subscription_id, kind, amount, currency, provider, provider_reference, \
             description, created_at, status, idempotency_key, period_start) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, '', $8, $9, 'pending', $10, $11) ON CONFLICT (idempotency_key) DO NOTHING"),
        )
        .bind(p.id)
        .bind(p.user_id)
        .bind(p.subscription_id)
        .bind(p.kind)
        .bind(StoredDecimal(p.amount))
        .bind(p.currency)
        .bind(p.provider)
        .bind(p.description)
        .bind(p.created_at)
        .bind(p.idempotency_key)
        .bind(p.period_start)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

#[derive(Debug, Clone, FromRow)]
pub struct PaymentRow {
    pub id: String,
    pub user_id: String,
    pub subscription_id: String,
    pub kind: String,
    #[sqlx(try_from = "StoredDecimal")]
    pub amount: Decimal,
    pub status: String,
    pub provider_reference: String,
    pub idempotency_key: Option<String>,
    pub period_start: Option<i64>,
    pub created_at: i64,
}

const PAYMENT_COLUMNS: &str = "id, user_id, subscription_id, kind, amount, status, provider_reference, idempotency_key, period_start, created_at";

pub async fn payment_by_key<'e>(
    exec: impl Executes<'e>,
    idempotency_key: &str,
) -> sqlx::Result<Option<PaymentRow>> {
    on!(exec, |c| sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {PAYMENT_COLUMNS} FROM payments WHERE idempotency_key = $1"
    )))
    .bind(idempotency_key)
    .fetch_optional(c)
    .await)
}

/// Marks a pending payment done with the provider's reference; `Ok(false)` when it was not
/// pending (another attempt settled it).
pub async fn settle<'e>(
    exec: impl Executes<'e>,
    id: &str,
    reference: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE payments SET status = 'settled', provider_reference = $2, settled_at = $3 WHERE id = $1 AND status = 'pending'"),
        )
        .bind(id)
        .bind(reference)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

/// Marks a pending payment failed (the provider refused it: nothing was taken).
pub async fn fail<'e>(
    exec: impl Executes<'e>,
    id: &str,
    reason: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE payments SET status = 'failed', description = description || ': ' || $2, settled_at = $3 \
             WHERE id = $1 AND status = 'pending'"),
        )
        .bind(id)
        .bind(reason)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Failed renewal charges of a subscription's period: how many, and when the last was made.
pub async fn failed_renewals<'e>(
    exec: impl Executes<'e>,
    subscription_id: &str,
    period_start: i64,
) -> sqlx::Result<(i64, Option<i64>)> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT COUNT(*), MAX(created_at) FROM payments WHERE subscription_id = $1 AND period_start = $2 \
             AND kind = 'charge' AND status = 'failed'"),
        )
        .bind(subscription_id)
        .bind(period_start)
        .fetch_one(c)
        .await
    })
}

/// Moves a subscription into its next period, if it is still in the one that ended at
/// `period_end` (another instance may have renewed it already); whether it moved.
pub async fn advance_period<'e>(
    exec: impl Executes<'e>,
    id: &str,
    period_end: i64,
    next_end: i64,
    now: i64,
) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE subscriptions SET current_period_start = $2, current_period_end = $3, status = 'active', updated_at = $4 \
             WHERE id = $1 AND current_period_end = $2 AND status IN ('active', 'past_due')"),
        )
        .bind(id)
        .bind(period_end)
        .bind(next_end)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

/// Ends a subscription whose period ended at `period_end` (cancelled at its end, or lapsed
/// after failed renewals), if nothing else has; whether it ended it.
pub async fn end<'e>(
    exec: impl Executes<'e>,
    id: &str,
    period_end: i64,
    reason: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE subscriptions SET status = 'cancelled', cancelled_at = $3, cancel_reason = COALESCE($4, cancel_reason), \
             updated_at = $3 WHERE id = $1 AND current_period_end = $2 AND status IN ('active', 'past_due')"),
        )
        .bind(id)
        .bind(period_end)
        .bind(now)
        .bind(reason)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

pub async fn set_status<'e>(
    exec: impl Executes<'e>,
    id: &str,
    status: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE subscriptions SET status = $2, updated_at = $3 WHERE id = $1"
    ))
    .bind(id)
    .bind(status)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// Records a provider event; `Ok(false)` when it was processed before.
pub async fn record_event<'e>(
    exec: impl Executes<'e>,
    event_id: &str,
    event_type: &str,
    handled: bool,
    user_id: Option<&str>,
    now: i64,
) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO payment_events (event_id, event_type, handled, user_id, received_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (event_id) DO NOTHING"),
        )
        .bind(event_id)
        .bind(event_type)
        .bind(handled as i64)
        .bind(user_id)
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

pub async fn event_seen<'e>(exec: impl Executes<'e>, event_id: &str) -> sqlx::Result<Option<bool>> {
    let handled: Option<i64> = on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT handled FROM payment_events WHERE event_id = $1"
    ))
    .bind(event_id)
    .fetch_optional(c)
    .await)?;
    Ok(handled.map(|h| h != 0))
}

/// Adds API calls to a user's count for a UTC day.
pub async fn add_api_calls<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    day: i64,
    calls: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO api_usage (user_id, day, calls) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id, day) DO UPDATE SET calls = api_usage.calls + $3"
    ))
    .bind(user_id)
    .bind(day)
    .bind(calls)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

pub async fn api_calls_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    day: i64,
) -> sqlx::Result<i64> {
    let calls: i64 = on!(exec, |c| {
        sqlx::query_scalar(schema_checked!("SELECT CAST(COALESCE(SUM(calls), 0) AS BIGINT) FROM api_usage WHERE user_id = $1 AND day >= $2"))
            .bind(user_id)
            .bind(day)
            .fetch_one(c)
            .await
    })?;
    Ok(calls)
}

/// Fills (opening orders) and positions opened since `since`.
pub async fn opens_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM ledger WHERE user_id = $1 AND action = 'OPEN' AND created_at >= $2"
    ))
    .bind(user_id)
    .bind(since)
    .fetch_one(c)
    .await)
}

/// What the recorded subscriptions add up to, for revenue figures.
#[derive(Debug, Clone, PartialEq, FromRow)]
pub struct SubscriptionFigures {
    /// Summed amounts of the active monthly subscriptions.
    #[sqlx(try_from = "StoredDecimal")]
    pub monthly: Decimal,
    /// Summed amounts of the active yearly subscriptions.
    #[sqlx(try_from = "StoredDecimal")]
    pub yearly: Decimal,
    /// Subscriptions cancelled at or after the churn window's start.
    pub churned: i64,
    /// Subscriptions live at the window's start or started since (not cancelled before it).
    pub base: i64,
}

pub async fn subscription_figures<'e>(
    exec: impl Executes<'e>,
    window_start: i64,
) -> sqlx::Result<SubscriptionFigures> {
    on!(exec, |c| {
        sqlx::query_as(
        schema_checked!("SELECT \
           COALESCE(SUM(CASE WHEN status = 'active' AND billing_interval <> 'yearly' THEN amount END), 0) AS monthly, \
           COALESCE(SUM(CASE WHEN status = 'active' AND billing_interval = 'yearly' THEN amount END), 0) AS yearly, \
           COUNT(CASE WHEN status = 'cancelled' AND cancelled_at >= $1 THEN 1 END) AS churned, \
           COUNT(CASE WHEN status <> 'cancelled' OR cancelled_at >= $1 THEN 1 END) AS base \
         FROM subscriptions")
    )
    .bind(window_start)
    .fetch_one(c)
    .await
    })
}
