//! The `user_settings` table: each user's changed settings as a JSON object.

use super::Executes;
use serde_json::{Map, Value};

/// The stored changes (empty when the user changed nothing).
pub async fn get<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Map<String, Value>> {
    let text: Option<String> = on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT settings FROM user_settings WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)?;
    Ok(text
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|value| value.as_object().cloned())
        .unwrap_or_default())
}

pub async fn put<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    settings: &Map<String, Value>,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO user_settings (user_id, settings, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE SET settings = $2, updated_at = $3"
    ))
    .bind(user_id)
    .bind(Value::Object(settings.clone()).to_string())
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}
