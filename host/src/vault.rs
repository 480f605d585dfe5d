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
