//! The `users` table.

use super::Executes;
use sqlx::FromRow;

use rust_decimal::Decimal;

use super::{Db, OptionalStoredDecimal, now_ms};

#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub full_name: String,
    pub password_hash: String,
    pub role: String,
    pub status: String,
    pub subscription_tier: String,
    pub trial_ends_at: Option<i64>,
    pub created_at: i64,
    pub last_active_at: Option<i64>,
}

/// The columns of [`UserRow`], each behind `$prefix` (a table alias such as `"u."`, or `""`).
macro_rules! user_columns {
    ($prefix:literal) => {
        concat!(
            $prefix,
            "id, ",
            $prefix,
            "email, ",
            $prefix,
            "full_name, ",
            $prefix,
            "password_hash, ",
            $prefix,
            "role, ",
            $prefix,
            "status, ",
            $prefix,
            "subscription_tier, ",
            $prefix,
            "trial_ends_at, ",
            $prefix,
            "created_at, ",
            $prefix,
            "last_active_at"
        )
    };
}
pub(crate) use user_columns;

macro_rules! select_user {
    ($where:literal) => {
        concat!("SELECT ", user_columns!(""), " FROM users WHERE ", $where)
    };
}

pub struct NewUser<'a> {
    pub id: &'a str,
    pub email: &'a str,
    pub full_name: &'a str,
    pub password_hash: &'a str,
    pub role: &'a str,
    pub trial_ends_at: Option<i64>,
    pub created_at: i64,
}

/// Inserts a user; `Ok(false)` when the e-mail (case-insensitively) is taken.
pub async fn insert<'e>(exec: impl Executes<'e>, user: &NewUser<'_>) -> sqlx::Result<bool> {
    let result = on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO users (id, email, email_lower, full_name, password_hash, role, status, \
         subscription_tier, trial_ends_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'active', 'free', $7, $8, $8) \
         ON CONFLICT (email_lower) DO NOTHING"
    ))
    .bind(user.id)
    .bind(user.email)
    .bind(user.email.to_lowercase())
    .bind(user.full_name)
    .bind(user.password_hash)
    .bind(user.role)
    .bind(user.trial_ends_at)
    .bind(user.created_at)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(result == 1)
}

pub async fn by_email(db: &Db, email: &str) -> sqlx::Result<Option<UserRow>> {
    on!(&db.pool, |c| sqlx::query_as(select_user!(
        "email_lower = $1"
    ))
    .bind(email.to_lowercase())
    .fetch_optional(c)
    .await)
}

pub async fn by_id<'e>(exec: impl Executes<'e>, id: &str) -> sqlx::Result<Option<UserRow>> {
    on!(exec, |c| sqlx::query_as(select_user!("id = $1"))
        .bind(id)
        .fetch_optional(c)
        .await)
}

pub async fn set_password<'e>(
    exec: impl Executes<'e>,
    id: &str,
    password_hash: &str,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3"
    ))
    .bind(password_hash)
    .bind(now_ms())
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

pub async fn set_role<'e>(exec: impl Executes<'e>, id: &str, role: &str) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE users SET role = $1, updated_at = $2 WHERE id = $3"
    ))
    .bind(role)
    .bind(now_ms())
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// Records activity at most once a minute per user, so reads stay reads.
pub async fn touch_last_active(db: &Db, id: &str, now: i64) -> sqlx::Result<()> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE users SET last_active_at = $1 WHERE id = $2 \
         AND (last_active_at IS NULL OR last_active_at < $3)"
    ))
    .bind(now)
    .bind(id)
    .bind(now - 60_000)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

#[derive(Debug, Default, Clone)]
pub struct UserFilter {
    /// Part of an e-mail address, or a whole user id.
    pub search: Option<String>,
    pub tier: Option<String>,
    pub status: Option<String>,
}

/// A user in the admin list, with trading totals.
#[derive(Debug, Clone, FromRow)]
pub struct UserSummaryRow {
    pub id: String,
    pub email: String,
    pub full_name: String,
    pub subscription_tier: String,
    pub status: String,
    pub created_at: i64,
    pub last_active_at: Option<i64>,
    pub total_trades: i64,
    /// The trading account's realized P&L and fees paid (none without an account).
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub realized_pnl: Option<Decimal>,
    #[sqlx(try_from = "OptionalStoredDecimal")]
    pub fees_paid: Option<Decimal>,
}

const USER_FILTER: &str = "($1 IS NULL OR u.email_lower LIKE $1 OR u.id = $2) \
                           AND ($3 IS NULL OR u.subscription_tier = $3) AND ($4 IS NULL OR u.status = $4)";

/// Users matching the filter, newest first, and how many match.
pub async fn list_for_admin(
    db: &Db,
    filter: &UserFilter,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<UserSummaryRow>, i64)> {
    let pattern = filter.search.as_deref().map(|s| {
        format!(
            "%{}%",
            // LIKE wildcards in the search are dropped, not interpreted.
            s.to_lowercase().replace(['\\', '%', '_'], "")
        )
    });
    let rows = on!(&db.pool, |c| {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT u.id, u.email, u.full_name, u.subscription_tier, u.status, u.created_at, u.last_active_at, \
             COALESCE(t.trades, 0) AS total_trades, a.realized_pnl, a.fees_paid \
             FROM users u LEFT JOIN trading_accounts a ON a.user_id = u.id \
             LEFT JOIN account_totals t ON t.user_id = u.id \
             WHERE {USER_FILTER} ORDER BY u.created_at DESC, u.id LIMIT $5 OFFSET $6"
        )))
        .bind(&pattern)
        .bind(&filter.search)
        .bind(&filter.tier)
        .bind(&filter.status)
        .bind(limit)
        .bind(offset)
        .fetch_all(c)
        .await
    })?;
    let total = on!(&db.pool, |c| sqlx::query_scalar(sqlx::AssertSqlSafe(
        format!("SELECT COUNT(*) FROM users u WHERE {USER_FILTER}")
    ))
    .bind(&pattern)
    .bind(&filter.search)
    .bind(&filter.tier)
    .bind(&filter.status)
    .fetch_one(c)
    .await)?;
    Ok((rows, total))
}

pub async fn notes<'e>(exec: impl Executes<'e>, id: &str) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT notes FROM users WHERE id = $1"
    ))
    .bind(id)
    .fetch_one(c)
    .await)
}

/// An admin's change: the tier outright (ending any trial), the status, the notes.
pub async fn update_by_admin<'e>(
    exec: impl Executes<'e>,
    id: &str,
    tier: Option<&str>,
    status: Option<&str>,
    notes: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE users SET subscription_tier = COALESCE($2, subscription_tier), \
         trial_ends_at = CASE WHEN $2 IS NULL THEN trial_ends_at ELSE NULL END, \
         status = COALESCE($3, status), notes = COALESCE($4, notes), updated_at = $5 WHERE id = $1"
    ))
    .bind(id)
    .bind(tier)
    .bind(status)
    .bind(notes)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// Sets the tier billing decided; any trial is over.
pub async fn set_tier<'e>(
    exec: impl Executes<'e>,
    id: &str,
    tier: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(schema_checked!("UPDATE users SET subscription_tier = $2, trial_ends_at = NULL, updated_at = $3 WHERE id = $1"))
            .bind(id)
            .bind(tier)
            .bind(now)
            .execute(c)
            .await
            .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn set_status<'e>(
    exec: impl Executes<'e>,
    id: &str,
    status: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE users SET status = $2, updated_at = $3 WHERE id = $1"
    ))
    .bind(id)
    .bind(status)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// How many users each subscription tier has.
pub async fn count_by_tier<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<(String, i64)>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT subscription_tier, COUNT(*) FROM users GROUP BY subscription_tier"
    ))
    .fetch_all(c)
    .await)
}

/// Users active at or after `since`.
pub async fn count_active_since<'e>(exec: impl Executes<'e>, since: i64) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM users WHERE last_active_at >= $1"
    ))
    .bind(since)
    .fetch_one(c)
    .await)
}
