//! The `users` table.

use sqlx::{Any, Executor, FromRow};

use super::{Db, now_ms};

#[derive(Debug, Clone, FromRow)]
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

macro_rules! select_user {
    ($where:literal) => {
        concat!(
            "SELECT id, email, full_name, password_hash, role, status, subscription_tier, ",
            "trial_ends_at, created_at, last_active_at FROM users WHERE ",
            $where
        )
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
pub async fn insert<'e>(
    exec: impl Executor<'e, Database = Any>,
    user: &NewUser<'_>,
) -> sqlx::Result<bool> {
    let result = sqlx::query(
        "INSERT INTO users (id, email, email_lower, full_name, password_hash, role, status, \
         subscription_tier, trial_ends_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, 'active', 'free', $7, $8, $8) \
         ON CONFLICT (email_lower) DO NOTHING",
    )
    .bind(user.id)
    .bind(user.email)
    .bind(user.email.to_lowercase())
    .bind(user.full_name)
    .bind(user.password_hash)
    .bind(user.role)
    .bind(user.trial_ends_at)
    .bind(user.created_at)
    .execute(exec)
    .await?;
    Ok(result.rows_affected() == 1)
}

pub async fn by_email(db: &Db, email: &str) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as(select_user!("email_lower = $1"))
        .bind(email.to_lowercase())
        .fetch_optional(&db.pool)
        .await
}

pub async fn by_id<'e>(
    exec: impl Executor<'e, Database = Any>,
    id: &str,
) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as(select_user!("id = $1"))
        .bind(id)
        .fetch_optional(exec)
        .await
}

pub async fn set_password<'e>(
    exec: impl Executor<'e, Database = Any>,
    id: &str,
    password_hash: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $1, updated_at = $2 WHERE id = $3")
        .bind(password_hash)
        .bind(now_ms())
        .bind(id)
        .execute(exec)
        .await?;
    Ok(())
}

pub async fn set_role<'e>(
    exec: impl Executor<'e, Database = Any>,
    id: &str,
    role: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET role = $1, updated_at = $2 WHERE id = $3")
        .bind(role)
        .bind(now_ms())
        .bind(id)
        .execute(exec)
        .await?;
    Ok(())
}

/// Records activity at most once a minute per user, so reads stay reads.
pub async fn touch_last_active(db: &Db, id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE users SET last_active_at = $1 WHERE id = $2 \
         AND (last_active_at IS NULL OR last_active_at < $3)",
    )
    .bind(now)
    .bind(id)
    .bind(now - 60_000)
    .execute(&db.pool)
    .await?;
    Ok(())
}
