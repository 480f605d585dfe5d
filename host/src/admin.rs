//! Administration: the audit log view (users, metrics and the kill switch join it).

use serde::Serialize;
use serde_json::Value;

use crate::App;
use crate::api::query::{Page, Pagination};
use crate::error::ApiResult;
use crate::store::audit::{self, AuditFilter};
use crate::store::iso8601;

pub const AUDIT_DEFAULT_PER_PAGE: i64 = 100;
pub const AUDIT_MAX_PER_PAGE: i64 = 500;

#[derive(Debug, Serialize)]
pub struct AuditEntry {
    pub log_id: String,
    pub event_type: String,
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip_address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    pub metadata: Value,
    pub timestamp: String,
}

#[derive(Debug, Serialize)]
pub struct AuditPage {
    pub logs: Vec<AuditEntry>,
    pub pagination: Pagination,
}

pub async fn audit_logs(app: &App, filter: &AuditFilter, page: Page) -> ApiResult<AuditPage> {
    let (rows, total) = audit::list(&app.db, filter, page.per_page, page.offset()).await?;
    let logs = rows
        .into_iter()
        .map(|row| AuditEntry {
            log_id: row.id,
            event_type: row.event_type,
            user_id: row.user_id,
            ip_address: row.ip_address,
            user_agent: row.user_agent,
            metadata: serde_json::from_str(&row.metadata).unwrap_or(Value::Null),
            timestamp: iso8601(row.created_at),
        })
        .collect();
    Ok(AuditPage {
        logs,
        pagination: page.info(total),
    })
}
