//! The broker credential vault: AES-256-GCM with a fresh random nonce per secret.
//!
//! A sealed secret is `v1:` followed by base64 of nonce ‖ ciphertext ‖ tag. The owning user's id
//! is the associated data, so a sealed value copied to another user's row does not open.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rand::RngCore;

const PREFIX: &str = "v1:";
const NONCE_BYTES: usize = 12;

pub struct Vault {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Vault(<key redacted>)")
    }
}

#[derive(Debug, thiserror::Error)]
#[error("a stored secret cannot be opened with the configured VAULT_ENCRYPTION_KEY")]
pub struct VaultError;

impl Vault {
    pub fn new(key: &[u8; 32]) -> Vault {
        Vault {
            cipher: Aes256Gcm::new(key.into()),
        }
    }

    pub fn seal(&self, owner: &str, secret: &str) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rng().fill_bytes(&mut nonce);
        let ciphertext = self
            .cipher
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: owner.as_bytes(),
                },
            )
            .expect("AES-GCM encryption of a short secret cannot fail");
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ciphertext);
        format!("{PREFIX}{}", BASE64.encode(sealed))
    }

    pub fn open(&self, owner: &str, sealed: &str) -> Result<String, VaultError> {
        let bytes = sealed
            .strip_prefix(PREFIX)
            .and_then(|b64| BASE64.decode(b64).ok())
            .filter(|bytes| bytes.len() > NONCE_BYTES)
            .ok_or(VaultError)?;
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| VaultError)?;
        let plain = self
            .cipher
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: owner.as_bytes(),
                },
            )
            .map_err(|_| VaultError)?;
        String::from_utf8(plain).map_err(|_| VaultError)
    }
}

/// Re-encrypts every sealed secret under a new key in one transaction, then installs the key:
/// written over the generated one on the embedded default, or reported for the operator to set
/// as `VAULT_ENCRYPTION_KEY`. Returns what happened, for the command line.
pub async fn rotate_key(
    config: &crate::config::AppConfig,
    new_key: Option<&str>,
) -> anyhow::Result<String> {
    use anyhow::Context;

    let current = crate::secrets::resolve(config)?;
    let generated = new_key.is_none();
    let new_raw = match new_key {
        Some(raw) => raw.trim().to_string(),
        None => {
            let mut bytes = [0u8; 32];
            rand::rng().fill_bytes(&mut bytes);
            hex::encode(bytes)
        }
    };
    let new_key = crate::secrets::parse_vault_key(&new_raw)
        .context("the new key must be 32 bytes, written as 64 hex digits or in base64")?;
    if new_key == current.vault_key {
        anyhow::bail!("the new key is the key in use");
    }
    let old = Vault::new(&current.vault_key);
    let new = Vault::new(&new_key);
    let db = crate::store::Db::connect(&config.database_url).await?;
    db.migrate().await?;
    let mut tx = db.begin().await?;
    let rows = crate::store::brokers::all_sealed(&mut *tx).await?;
    for row in &rows {
        let reseal = |sealed: &str| -> anyhow::Result<String> {
            let plain = old.open(&row.user_id, sealed).with_context(|| {
                format!(
                    "broker connection {} does not open with the current key",
                    row.id
                )
            })?;
            Ok(new.seal(&row.user_id, &plain))
        };
        let sealed = crate::store::brokers::Sealed {
            id: row.id.clone(),
            user_id: row.user_id.clone(),
            api_key_sealed: reseal(&row.api_key_sealed)?,
            api_secret_sealed: reseal(&row.api_secret_sealed)?,
            params_sealed: reseal(&row.params_sealed)?,
        };
        crate::store::brokers::update_sealed(&mut *tx, &sealed).await?;
    }
    let key_file = config.data_dir.join("secrets").join("vault_key");
    let message = if config.vault_key_from_env.is_none() && key_file.exists() {
        // The new key is on disk (vault_key.new) before the secrets change, so it cannot be
        // lost: were the process to die between the commit and the rename, renaming that file
        // over vault_key by hand finishes the rotation.
        let staged = key_file.with_extension("new");
        if staged.exists() {
            anyhow::bail!(
                "{} is left from an earlier rotation: if that rotation's secrets were committed it \
                 is the key in use, so rename it over {} (or delete it if not) and run this again",
                staged.display(),
                key_file.display()
            );
        }
        // Created owner-only and synced to disk before the secrets change.
        crate::secrets::write_owner_only(&staged, &new_raw)?;
        tx.commit().await?;
        std::fs::rename(&staged, &key_file)?;
        // The rename itself survives a power loss only once the directory is synced.
        if let Some(dir) = key_file.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
        format!(
            "re-encrypted {} broker connection(s); the new key is stored in {}",
            rows.len(),
            key_file.display()
        )
    } else {
        tx.commit().await?;
        format!(
            "re-encrypted {} broker connection(s); set VAULT_ENCRYPTION_KEY to the new key before starting the server{}",
            rows.len(),
            if generated {
                format!(":\n{new_raw}")
            } else {
                String::new()
            }
        )
    };
    Ok(message)
}

/// What reads show of an API key: its last four characters.
pub fn mask(api_key: &str) -> String {
    let chars: Vec<char> = api_key.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(4)..].iter().collect();
    if chars.len() <= 4 {
        "****".to_string()
    } else {
        format!("****{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_open_only_for_their_owner_and_key() {
        let vault = Vault::new(&[7u8; 32]);
        let sealed = vault.seal("alice", "s3cret-key");
        assert!(!sealed.contains("s3cret"));
        assert_eq!(vault.open("alice", &sealed).unwrap(), "s3cret-key");
        assert!(vault.open("bob", &sealed).is_err());
        assert!(Vault::new(&[8u8; 32]).open("alice", &sealed).is_err());
        assert_ne!(
            sealed,
            vault.seal("alice", "s3cret-key"),
            "fresh nonce per seal"
        );
    }

    #[test]
    fn masks_all_but_the_last_four() {
        assert_eq!(mask("abcdefgh1234"), "****1234");
        assert_eq!(mask("abc"), "****");
    }
}
