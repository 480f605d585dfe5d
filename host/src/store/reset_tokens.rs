//! Single-use password reset tokens, stored as SHA-256 hashes.

use super::Executes;

pub async fn insert<'e>(
    exec: impl Executes<'e>,
    token_hash: &str,
    user_id: &str,
    created_at: i64,
    expires_at: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO password_reset_tokens (token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)"),
        )
        .bind(token_hash)
        .bind(user_id)
        .bind(created_at)
        .bind(expires_at)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Uses a token: returns its user when it existed, was unused and unexpired. Atomic, so a token
/// presented twice at once works once.
pub async fn consume<'e>(
    exec: impl Executes<'e>,
    token_hash: &str,
    now: i64,
) -> sqlx::Result<Option<String>> {
    let row: Option<(String,)> = on!(exec, |c| sqlx::query_as(schema_checked!(
        "UPDATE password_reset_tokens SET used_at = $1 \
         WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1 RETURNING user_id"
    ))
    .bind(now)
    .bind(token_hash)
    .fetch_optional(c)
    .await)?;
    Ok(row.map(|(user_id,)| user_id))
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResetToken {
    pub user_id: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
}

pub async fn lookup<'e>(
    exec: impl Executes<'e>,
    token_hash: &str,
) -> sqlx::Result<Option<ResetToken>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT user_id, expires_at, used_at FROM password_reset_tokens WHERE token_hash = $1"
    ))
    .bind(token_hash)
    .fetch_optional(c)
    .await)
}
