//! The `broker_connections` table. Secrets are stored sealed by the vault, never in clear.

use super::Executes;
use sqlx::FromRow;

#[derive(Debug, Clone, FromRow)]
pub struct BrokerRow {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub display_name: String,
    pub status: String,
    pub api_key_sealed: String,
    pub api_secret_sealed: String,
    pub api_key_masked: String,
    /// Sealed JSON object of extra connection parameters.
    pub params_sealed: String,
    /// JSON array of strings.
    pub permissions: String,
    pub last_connected_at: Option<i64>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, user_id, name, display_name, status, api_key_sealed, api_secret_sealed, \
                       api_key_masked, params_sealed, permissions, last_connected_at, created_at";

/// Inserts a connection; `Ok(false)` when the user already has one for this broker.
pub async fn insert<'e>(exec: impl Executes<'e>, row: &BrokerRow) -> sqlx::Result<bool> {
    let result = on!(exec, |c| {
        sqlx::query(sql!(
            "INSERT INTO broker_connections ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
             ON CONFLICT (user_id, name) DO NOTHING"
        ))
        .bind(&row.id)
        .bind(&row.user_id)
        .bind(&row.name)
        .bind(&row.display_name)
        .bind(&row.status)
        .bind(&row.api_key_sealed)
        .bind(&row.api_secret_sealed)
        .bind(&row.api_key_masked)
        .bind(&row.params_sealed)
        .bind(&row.permissions)
        .bind(row.last_connected_at)
        .bind(row.created_at)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(result == 1)
}

pub async fn list<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Vec<BrokerRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM broker_connections WHERE user_id = $1 ORDER BY created_at, id"
    ))
    .bind(user_id)
    .fetch_all(c)
    .await)
}

pub async fn by_id<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    id: &str,
) -> sqlx::Result<Option<BrokerRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM broker_connections WHERE user_id = $1 AND id = $2"
    ))
    .bind(user_id)
    .bind(id)
    .fetch_optional(c)
    .await)
}

pub async fn by_name<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    name: &str,
) -> sqlx::Result<Option<BrokerRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM broker_connections WHERE user_id = $1 AND name = $2"
    ))
    .bind(user_id)
    .bind(name)
    .fetch_optional(c)
    .await)
}

pub async fn delete<'e>(exec: impl Executes<'e>, user_id: &str, id: &str) -> sqlx::Result<bool> {
    let result = on!(exec, |c| sqlx::query(schema_checked!(
        "DELETE FROM broker_connections WHERE user_id = $1 AND id = $2"
    ))
    .bind(user_id)
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(result == 1)
}

pub async fn mark_connected<'e>(
    exec: impl Executes<'e>,
    id: &str,
    status: &str,
    permissions: &str,
    at: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE broker_connections SET status = $2, permissions = $3, last_connected_at = $4 WHERE id = $1"),
        )
        .bind(id)
        .bind(status)
        .bind(permissions)
        .bind(at)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// The sealed secrets of one connection (for re-encryption under a new key).
#[derive(Debug, Clone, FromRow)]
pub struct Sealed {
    pub id: String,
    pub user_id: String,
    pub api_key_sealed: String,
    pub api_secret_sealed: String,
    pub params_sealed: String,
}

pub async fn all_sealed<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<Sealed>> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT id, user_id, api_key_sealed, api_secret_sealed, params_sealed FROM broker_connections ORDER BY id"),
        )
        .fetch_all(c)
        .await
    })
}

pub async fn update_sealed<'e>(exec: impl Executes<'e>, sealed: &Sealed) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("UPDATE broker_connections SET api_key_sealed = $2, api_secret_sealed = $3, params_sealed = $4 WHERE id = $1"),
        )
        .bind(&sealed.id)
        .bind(&sealed.api_key_sealed)
        .bind(&sealed.api_secret_sealed)
        .bind(&sealed.params_sealed)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}
