//! The audit log: one row per security or administrative event.

use super::Executes;
use serde_json::Value;

use super::{new_id, now_ms};

/// Who did it and from where; attached to every audit row of a request.
#[derive(Debug, Clone, Default)]
pub struct Actor<'a> {
    pub user_id: Option<&'a str>,
    pub ip_address: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

pub async fn record<'e>(
    exec: impl Executes<'e>,
    event_type: &str,
    actor: &Actor<'_>,
    metadata: Value,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO audit_log (id, event_type, user_id, ip_address, user_agent, metadata, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)"),
        )
        .bind(new_id())
        .bind(event_type)
        .bind(actor.user_id)
        .bind(actor.ip_address)
        .bind(actor.user_agent)
        .bind(metadata.to_string())
        .bind(now_ms())
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuditRow {
    pub id: String,
    pub event_type: String,
    pub user_id: Option<String>,
    pub ip_address: Option<String>,
    pub user_agent: Option<String>,
    pub metadata: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub event_type: Option<String>,
    pub user_id: Option<String>,
    /// Inclusive, epoch milliseconds.
    pub from_ms: Option<i64>,
    /// Exclusive, epoch milliseconds.
    pub until_ms: Option<i64>,
}

// Absent filters are passed as NULL and match everything, so one statement serves every query.
const FILTER: &str = "($1 IS NULL OR event_type = $1) AND ($2 IS NULL OR user_id = $2) \
                      AND ($3 IS NULL OR created_at >= $3) AND ($4 IS NULL OR created_at < $4)";

/// One page of audit rows, newest first, and the total matching the filter.
pub async fn list(
    db: &super::Db,
    filter: &AuditFilter,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<AuditRow>, i64)> {
    let rows = on!(&db.pool, |c| {
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT id, event_type, user_id, ip_address, user_agent, metadata, created_at FROM audit_log \
             WHERE {FILTER} ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6"
        )))
        .bind(filter.event_type.as_deref())
        .bind(filter.user_id.as_deref())
        .bind(filter.from_ms)
        .bind(filter.until_ms)
        .bind(limit)
        .bind(offset)
        .fetch_all(c)
        .await
    })?;
    let (total,): (i64,) = on!(&db.pool, |c| sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) FROM audit_log WHERE {FILTER}"
    )))
    .bind(filter.event_type.as_deref())
    .bind(filter.user_id.as_deref())
    .bind(filter.from_ms)
    .bind(filter.until_ms)
    .fetch_one(c)
    .await)?;
    Ok((rows, total))
}
