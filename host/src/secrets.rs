//! The secrets policy: on the embedded default (SQLite) missing secrets are generated once and kept
//! under the data directory, readable by the owner only; with PostgreSQL (a shared deployment where
//! several instances must agree) they must come from the environment.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rand::RngCore;

use crate::config::AppConfig;
use crate::store::Backend;

pub const MIN_JWT_SECRET_BYTES: usize = 32;

pub struct Secrets {
    pub jwt_secret: Vec<u8>,
    /// AES-256 key for the broker credential vault.
    pub vault_key: [u8; 32],
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secrets(<redacted>)")
    }
}

pub fn resolve(config: &AppConfig) -> Result<Secrets> {
    let jwt_secret = match &config.jwt_secret_from_env {
        Some(secret) => secret.as_bytes().to_vec(),
        None => generated_or_required(config, "JWT_SECRET_KEY", "jwt_secret")?.into_bytes(),
    };
    if jwt_secret.len() < MIN_JWT_SECRET_BYTES {
        bail!("JWT_SECRET_KEY must be at least {MIN_JWT_SECRET_BYTES} bytes long");
    }
    let vault_raw = match &config.vault_key_from_env {
        Some(key) => key.clone(),
        None => generated_or_required(config, "VAULT_ENCRYPTION_KEY", "vault_key")?,
    };
    let vault_key = parse_vault_key(&vault_raw)
        .context("VAULT_ENCRYPTION_KEY must be 32 bytes, written as 64 hex digits or in base64")?;
    Ok(Secrets {
        jwt_secret,
        vault_key,
    })
}

/// A 32-byte key as 64 hex digits or standard base64.
pub fn parse_vault_key(raw: &str) -> Option<[u8; 32]> {
    let raw = raw.trim();
    let bytes = if raw.len() == 64 && raw.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(raw).ok()?
    } else {
        BASE64.decode(raw).ok()?
    };
    bytes.try_into().ok()
}

fn generated_or_required(config: &AppConfig, variable: &str, file_name: &str) -> Result<String> {
    if config.backend == Backend::Postgres {
        bail!(
            "{variable} must be set in the environment when the database is PostgreSQL \
             (instances sharing a database must share their secrets)"
        );
    }
    let dir = config.data_dir.join("secrets");
    let path = dir.join(file_name);
    if path.exists() {
        let value = fs::read_to_string(&path)
            .with_context(|| format!("cannot read the stored {variable} at {}", path.display()))?;
        return Ok(value.trim().to_string());
    }
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let value = hex::encode(bytes);
    write_owner_only(&path, &value)?;
    tracing::warn!(
        path = %path.display(),
        "{variable} was not set: generated one and stored it (owner-only); keep it with the data directory"
    );
    Ok(value)
}

/// Creates `path` readable by the owner only, with `value`, on disk before it returns.
pub(crate) fn write_owner_only(path: &Path, value: &str) -> Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(value.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path, backend: Backend) -> AppConfig {
        let lookup = |_: &str| None;
        let figment = AppConfig::rocket_figment(&lookup).unwrap();
        let mut config = AppConfig::load(&figment, &lookup).unwrap();
        config.data_dir = dir.to_path_buf();
        config.backend = backend;
        config
    }

    #[test]
    fn sqlite_generates_once_and_reuses() {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path(), Backend::Sqlite);
        let first = resolve(&config).unwrap();
        let second = resolve(&config).unwrap();
        assert_eq!(first.jwt_secret, second.jwt_secret);
        assert_eq!(first.vault_key, second.vault_key);
        let mode = fs::metadata(dir.path().join("secrets/jwt_secret"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn postgres_requires_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let err = resolve(&config(dir.path(), Backend::Postgres))
            .unwrap_err()
            .to_string();
        assert!(err.contains("JWT_SECRET_KEY"), "{err}");
        let mut with_jwt = config(dir.path(), Backend::Postgres);
        with_jwt.jwt_secret_from_env = Some("x".repeat(40));
        let err = resolve(&with_jwt).unwrap_err().to_string();
        assert!(err.contains("VAULT_ENCRYPTION_KEY"), "{err}");
    }

    #[test]
    fn short_jwt_secret_and_bad_vault_key_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut short = config(dir.path(), Backend::Sqlite);
        short.jwt_secret_from_env = Some("too-short".into());
        assert!(
            resolve(&short)
                .unwrap_err()
                .to_string()
                .contains("32 bytes")
        );
        assert!(parse_vault_key(&"ab".repeat(32)).is_some());
        assert!(parse_vault_key(&BASE64.encode([7u8; 32])).is_some());
        assert!(parse_vault_key("not a key").is_none());
        assert!(parse_vault_key(&"ab".repeat(16)).is_none());
    }
}
