//! Persisted plugin versions and settings.

use sqlx::FromRow;

use super::{Db, now_ms};

#[derive(Debug, Clone, FromRow)]
pub struct VersionRow {
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub manifest: String,
    pub file_name: String,
}

#[derive(Debug, Clone, FromRow)]
pub struct SettingsRow {
    pub name: String,
    pub active_version: String,
    pub previous_version: Option<String>,
    pub config: String,
}

pub struct NewVersion<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub sha256: &'a str,
    pub manifest: &'a str,
    pub file_name: &'a str,
    pub uploaded_by: Option<&'a str>,
}

pub async fn insert_version(db: &Db, v: &NewVersion<'_>) -> sqlx::Result<()> {
    on!(&db.pool, |c| {
        sqlx::query(
            "INSERT INTO plugin_versions (name, version, kind, sha256, manifest, file_name, uploaded_by, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(v.name)
        .bind(v.version)
        .bind(v.kind)
        .bind(v.sha256)
        .bind(v.manifest)
        .bind(v.file_name)
        .bind(v.uploaded_by)
        .bind(now_ms())
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn versions(db: &Db) -> sqlx::Result<Vec<VersionRow>> {
    on!(&db.pool, |c| sqlx::query_as(
        "SELECT name, version, sha256, manifest, file_name FROM plugin_versions ORDER BY created_at"
    )
    .fetch_all(c)
    .await)
}

pub async fn settings(db: &Db) -> sqlx::Result<Vec<SettingsRow>> {
    on!(&db.pool, |c| sqlx::query_as(
        "SELECT name, active_version, previous_version, config FROM plugin_settings"
    )
    .fetch_all(c)
    .await)
}

pub async fn save_settings(
    db: &Db,
    name: &str,
    active_version: &str,
    previous_version: Option<&str>,
    config: &str,
) -> sqlx::Result<()> {
    on!(&db.pool, |c| {
        sqlx::query(
            "INSERT INTO plugin_settings (name, active_version, previous_version, config, updated_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (name) DO UPDATE SET active_version = $2, previous_version = $3, config = $4, updated_at = $5",
        )
        .bind(name)
        .bind(active_version)
        .bind(previous_version)
        .bind(config)
        .bind(now_ms())
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}
