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
    pub wasm: &'a [u8],
}

pub async fn insert_version(db: &Db, v: &NewVersion<'_>) -> sqlx::Result<()> {
    on!(&db.pool, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO plugin_versions (name, version, kind, sha256, manifest, file_name, uploaded_by, created_at, wasm) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"),
        )
        .bind(v.name)
        .bind(v.version)
        .bind(v.kind)
        .bind(v.sha256)
        .bind(v.manifest)
        .bind(v.file_name)
        .bind(v.uploaded_by)
        .bind(now_ms())
        .bind(v.wasm)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn versions(db: &Db) -> sqlx::Result<Vec<VersionRow>> {
    on!(&db.pool, |c| sqlx::query_as(schema_checked!(
        "SELECT name, version, sha256, manifest, file_name FROM plugin_versions ORDER BY created_at"
    ))
    .fetch_all(c)
    .await)
}

/// The stored binary of a version (none: uploaded before binaries were kept in the database).
pub async fn wasm(db: &Db, name: &str, version: &str) -> sqlx::Result<Option<Vec<u8>>> {
    on!(&db.pool, |c| sqlx::query_scalar(schema_checked!(
        "SELECT wasm FROM plugin_versions WHERE name = $1 AND version = $2"
    ))
    .bind(name)
    .bind(version)
    .fetch_optional(c)
    .await
    .map(Option::flatten))
}

/// Keeps the binary of a version uploaded before binaries were stored in the database.
pub async fn store_wasm(db: &Db, name: &str, version: &str, wasm: &[u8]) -> sqlx::Result<()> {
    on!(&db.pool, |c| {
        sqlx::query(schema_checked!(
            "UPDATE plugin_versions SET wasm = $3 WHERE name = $1 AND version = $2 AND wasm IS NULL"
        ))
        .bind(name)
        .bind(version)
        .bind(wasm)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn settings(db: &Db) -> sqlx::Result<Vec<SettingsRow>> {
    on!(&db.pool, |c| sqlx::query_as(schema_checked!(
        "SELECT name, active_version, previous_version, config FROM plugin_settings"
    ))
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
            schema_checked!("INSERT INTO plugin_settings (name, active_version, previous_version, config, updated_at) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (name) DO UPDATE SET active_version = $2, previous_version = $3, config = $4, updated_at = $5"),
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
