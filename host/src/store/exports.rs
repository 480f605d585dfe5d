//! `exports`: finished data exports and the hash of each one's download token.

use sqlx::FromRow;

use super::Executes;

/// An export as written: whose it is, its name, and until when its link works.
#[derive(Debug, Clone, FromRow)]
pub struct ExportRow {
    pub id: String,
    pub user_id: String,
    pub token_hash: String,
    pub file_name: String,
    pub format: String,
    pub data_type: String,
    pub size_bytes: i64,
    pub created_at: i64,
    pub expires_at: i64,
}

/// The columns of [`ExportRow`], in its order.
macro_rules! columns {
    () => {
        "id, user_id, token_hash, file_name, format, data_type, size_bytes, created_at, expires_at"
    };
}

/// Writes an export with its bytes.
pub async fn insert<'e>(exec: impl Executes<'e>, row: &ExportRow, body: &[u8]) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(concat!(
        "INSERT INTO exports (",
        columns!(),
        ", body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(&row.id)
    .bind(&row.user_id)
    .bind(&row.token_hash)
    .bind(&row.file_name)
    .bind(&row.format)
    .bind(&row.data_type)
    .bind(row.size_bytes)
    .bind(row.created_at)
    .bind(row.expires_at)
    .bind(body)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

pub async fn by_id<'e>(exec: impl Executes<'e>, id: &str) -> sqlx::Result<Option<ExportRow>> {
    on!(exec, |c| sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM exports WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(c)
    .await)
}

/// An export's bytes; none for one an earlier release wrote to the data directory.
pub async fn body<'e>(exec: impl Executes<'e>, id: &str) -> sqlx::Result<Option<Vec<u8>>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT body FROM exports WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(c)
    .await
    .map(Option::flatten))
}

/// Exports whose links expired at or before `now`.
pub async fn expired<'e>(exec: impl Executes<'e>, now: i64) -> sqlx::Result<Vec<ExportRow>> {
    on!(exec, |c| sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM exports WHERE expires_at <= $1"
    ))
    .bind(now)
    .fetch_all(c)
    .await)
}

pub async fn delete<'e>(exec: impl Executes<'e>, id: &str) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "DELETE FROM exports WHERE id = $1"
    ))
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}
