//! The audit log: one row per security or administrative event.

use serde_json::Value;
use sqlx::{Any, Executor};

use super::{new_id, now_ms};

/// Who did it and from where; attached to every audit row of a request.
#[derive(Debug, Clone, Default)]
pub struct Actor<'a> {
    pub user_id: Option<&'a str>,
    pub ip_address: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

pub async fn record<'e>(
    exec: impl Executor<'e, Database = Any>,
    event_type: &str,
    actor: &Actor<'_>,
    metadata: Value,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO audit_log (id, event_type, user_id, ip_address, user_agent, metadata, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(new_id())
    .bind(event_type)
    .bind(actor.user_id)
    .bind(actor.ip_address)
    .bind(actor.user_agent)
    .bind(metadata.to_string())
    .bind(now_ms())
    .execute(exec)
    .await?;
    Ok(())
}
