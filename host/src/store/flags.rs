//! Platform flags: named values an operator sets (the kill switch) or the server keeps (one-off
//! migrations done).

use super::Executes;

pub async fn flag<'e>(exec: impl Executes<'e>, name: &str) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT value FROM platform_flags WHERE name = $1"
    ))
    .bind(name)
    .fetch_optional(c)
    .await)
}

pub async fn set_flag<'e>(
    exec: impl Executes<'e>,
    name: &str,
    value: &str,
    by: &str,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO platform_flags (name, value, updated_by, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (name) DO UPDATE SET value = $2, updated_by = $3, updated_at = $4"
    ))
    .bind(name)
    .bind(value)
    .bind(by)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// Removes a flag; whether it was set.
pub async fn clear_flag<'e>(exec: impl Executes<'e>, name: &str) -> sqlx::Result<bool> {
    let result = on!(exec, |c| sqlx::query(schema_checked!(
        "DELETE FROM platform_flags WHERE name = $1"
    ))
    .bind(name)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(result > 0)
}
