//! The `webhook_keys` table: one signal key per user, kept as a SHA-256 hash.

use super::Executes;

/// Sets the user's key (replacing the previous one).
pub async fn put<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    key_hash: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO webhook_keys (user_id, key_hash, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE SET key_hash = $2, created_at = $3"
    ))
    .bind(user_id)
    .bind(key_hash)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// The user a key hash belongs to.
pub async fn user_of<'e>(exec: impl Executes<'e>, key_hash: &str) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT user_id FROM webhook_keys WHERE key_hash = $1"
    ))
    .bind(key_hash)
    .fetch_optional(c)
    .await)
}

pub async fn exists<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<bool> {
    let found: Option<i64> = on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT created_at FROM webhook_keys WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)?;
    Ok(found.is_some())
}
