//! Administration: the audit log view (users, metrics and the kill switch join it).

use serde::Serialize;
use serde_json::Value;

use crate::App;
use crate::api::query::{Page, Pagination};
use crate::auth::{ClientMeta, Principal};
use crate::error::ApiResult;
use crate::store::audit::{self, Actor, AuditFilter};
use crate::store::iso8601;

pub const AUDIT_DEFAULT_PER_PAGE: i64 = 100;
pub const AUDIT_MAX_PER_PAGE: i64 = 500;

#[derive(utoipa::ToSchema, Debug, Serialize)]
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

#[derive(utoipa::ToSchema, Debug, Serialize)]
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

/// Records an admin's action in the audit log.
async fn record(
    app: &App,
    admin: &Principal,
    meta: &ClientMeta,
    event: &str,
    metadata: Value,
) -> ApiResult<()> {
    let actor = Actor {
        user_id: Some(&admin.user_id),
        ip_address: meta.ip.as_deref(),
        user_agent: meta.user_agent.as_deref(),
    };
    audit::record(&app.db.pool, event, &actor, metadata).await?;
    Ok(())
}

pub mod alarms;
pub mod candles;
pub mod metrics;
pub mod users;

/// Plugin administration: upload, activate, roll back, configure. Every change is audited.
pub mod plugins {
    use std::collections::BTreeMap;

    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    use super::record;
    use crate::App;
    use crate::auth::{ClientMeta, Principal};
    use crate::error::{ApiError, ApiResult, ErrorCode};
    use crate::plugins::registry::PluginSummary;
    use crate::plugins::{Description, Manifest};

    #[derive(utoipa::ToSchema, Debug, Deserialize)]
    pub struct UploadRequest {
        pub manifest: Manifest,
        /// The component, base64-encoded.
        pub wasm_base64: String,
        #[serde(default)]
        pub activate: bool,
    }

    #[derive(utoipa::ToSchema, Debug, Serialize)]
    pub struct PluginDetail {
        #[serde(flatten)]
        pub summary: PluginSummary,
        /// What the active version answers to `describe` right now (a real call into it).
        pub live: Description,
    }

    fn summary(app: &App, name: &str) -> ApiResult<PluginSummary> {
        app.plugins
            .list()
            .into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("No plugin named {name}")))
    }

    pub fn list(app: &App) -> Vec<PluginSummary> {
        app.plugins.list()
    }

    pub async fn detail(app: &App, name: &str) -> ApiResult<PluginDetail> {
        let summary = summary(app, name)?;
        let active = app.plugins.active(summary.kind, name)?;
        let registry = app.plugins.clone();
        let live = tokio::task::spawn_blocking(move || {
            registry
                .runtime()
                .describe(&active.target, &active.plugin.prepared)
        })
        .await
        .map_err(|err| ApiError::internal(format!("plugin call task: {err}")))??;
        Ok(PluginDetail { summary, live })
    }

    pub async fn upload(
        app: &App,
        admin: &Principal,
        meta: &ClientMeta,
        request: UploadRequest,
    ) -> ApiResult<PluginSummary> {
        let wasm = BASE64
            .decode(request.wasm_base64.trim())
            .map_err(|_| ApiError::invalid_field("wasm_base64", "must be base64"))?;
        let (name, version) = (
            request.manifest.name.clone(),
            request.manifest.version.clone(),
        );
        let registry = app.plugins.clone();
        let uploaded_by = admin.user_id.clone();
        let outcome = registry
            .upload(&wasm, request.manifest, Some(&uploaded_by))
            .await;
        if let Err(err) = &outcome {
            record(
                app,
                admin,
                meta,
                "plugin.upload_refused",
                json!({"name": name, "version": version, "reason": err.to_string()}),
            )
            .await?;
        }
        let plugin = outcome?;
        app.plugin_changed(&name);
        record(
            app,
            admin,
            meta,
            "plugin.uploaded",
            json!({"name": name, "version": version, "sha256": plugin.sha256}),
        )
        .await?;
        if request.activate {
            return activate(app, admin, meta, &name, &version).await;
        }
        summary(app, &name)
    }

    pub async fn activate(
        app: &App,
        admin: &Principal,
        meta: &ClientMeta,
        name: &str,
        version: &str,
    ) -> ApiResult<PluginSummary> {
        let before = summary(app, name)?.active_version;
        app.plugins.activate(name, version).await?;
        app.plugin_changed(name);
        record(
            app,
            admin,
            meta,
            "plugin.activated",
            json!({"name": name, "version": version, "replaced": before}),
        )
        .await?;
        summary(app, name)
    }

    pub async fn rollback(
        app: &App,
        admin: &Principal,
        meta: &ClientMeta,
        name: &str,
    ) -> ApiResult<PluginSummary> {
        let before = summary(app, name)?.active_version;
        let active = app.plugins.rollback(name).await?;
        app.plugin_changed(name);
        let version = active.plugin.manifest.version.clone();
        record(
            app,
            admin,
            meta,
            "plugin.rolled_back",
            json!({"name": name, "from": before, "to": version}),
        )
        .await?;
        summary(app, name)
    }

    pub async fn configure(
        app: &App,
        admin: &Principal,
        meta: &ClientMeta,
        name: &str,
        values: BTreeMap<String, Value>,
    ) -> ApiResult<PluginSummary> {
        let mut text = BTreeMap::new();
        for (key, value) in values {
            let value = match value {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => {
                    return Err(ApiError::invalid_field(
                        &format!("config.{key}"),
                        "must be a string, number or boolean",
                    ));
                }
            };
            text.insert(key, value);
        }
        app.plugins.configure(name, text.clone()).await?;
        app.plugin_changed(name);
        record(
            app,
            admin,
            meta,
            "plugin.configured",
            json!({"name": name, "config": text}),
        )
        .await?;
        summary(app, name)
    }
}
