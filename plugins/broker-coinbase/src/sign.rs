//! Coinbase's API key authentication: every request carries a fresh JSON Web Token, signed with
//! ES256 (ECDSA on P-256 with SHA-256) by the CDP API key's private key.
//!
//! The token's header names the key (`kid`) and a random `nonce`; its claims say who signs
//! (`sub`, the key name), the issuer `cdp`, when it is valid (`nbf`, and `exp` two minutes
//! later) and what it is for (`uri`: the method, host and path of the one request it
//! authorises). ECDSA signing here is deterministic (RFC 6979): no random source is needed for
//! the signature itself.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::SecretKey;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::DecodePrivateKey;
use serde_json::json;
use sha2::{Digest, Sha256};

/// How long a token is valid after `nbf`, in seconds.
pub const TOKEN_LIFETIME_SECS: i64 = 120;

/// A CDP API key's private key, read from its PEM (SEC1 `EC PRIVATE KEY`, as Coinbase hands it
/// out, or PKCS#8 `PRIVATE KEY`).
pub struct Key {
    signing: SigningKey,
}

impl Key {
    pub fn from_pem(pem: &str) -> Result<Key, String> {
        // Keys pasted from JSON often keep their line breaks escaped.
        let pem = pem.trim().replace("\\n", "\n");
        let secret = if pem.contains("BEGIN EC PRIVATE KEY") {
            SecretKey::from_sec1_pem(&pem).map_err(|err| format!("not an EC private key: {err}"))?
        } else if pem.contains("BEGIN PRIVATE KEY") {
            SecretKey::from_pkcs8_pem(&pem)
                .map_err(|err| format!("not a P-256 private key: {err}"))?
        } else {
            return Err(
                "the API secret must be the key's PEM (-----BEGIN EC PRIVATE KEY-----)".into(),
            );
        };
        Ok(Key {
            signing: SigningKey::from(secret),
        })
    }

    /// The SEC1-encoded public key (for tests and diagnostics).
    pub fn public_sec1(&self) -> Vec<u8> {
        self.signing
            .verifying_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec()
    }

    /// A signed token for one request.
    pub fn token(&self, key_name: &str, uri: &str, now_secs: i64, nonce: &str) -> String {
        let header = json!({"alg": "ES256", "kid": key_name, "nonce": nonce, "typ": "JWT"});
        let claims = json!({
            "sub": key_name,
            "iss": "cdp",
            "nbf": now_secs,
            "exp": now_secs + TOKEN_LIFETIME_SECS,
            "uri": uri,
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature: Signature = self.signing.sign(signing_input.as_bytes());
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        )
    }
}

/// The `uri` claim: `GET api.coinbase.com/api/v3/brokerage/accounts` (no scheme, no query).
pub fn uri(method: &str, host: &str, path: &str) -> String {
    format!("{method} {host}{path}")
}

/// A nonce no other token of this key carries: the hash of the time, a counter and fresh
/// randomness from the host (the time and counter alone when it has none).
pub fn nonce(key_name: &str, now_ms: i64, counter: u64) -> String {
    let mut random = [0u8; 16];
    let _ = getrandom::fill(&mut random);
    let mut hasher = Sha256::new();
    hasher.update(key_name.as_bytes());
    hasher.update(now_ms.to_be_bytes());
    hasher.update(counter.to_be_bytes());
    hasher.update(random);
    hex::encode(hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;
    use serde_json::Value;

    /// A throwaway key in the form the CDP portal hands out.
    pub const PEM: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIPKjbYETx6cCUfb7j9WLdY0Z3C2OTqVFU7YJ/UKEGw7+oAoGCCqGSM49
AwEHoUQDQgAErA6eYej0yTOLWRHsUWH9iu1Z97tknvY79OhmyX3dhB10T8dg/kEV
Xiju4Z5w5FucEqwr3wAOR5kSWze2X8rIAA==
-----END EC PRIVATE KEY-----
";
    /// The same key as PKCS#8.
    const PKCS8: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg8qNtgRPHpwJR9vuP
1Yt1jRncLY5OpUVTtgn9QoQbDv6hRANCAASsDp5h6PTJM4tZEexRYf2K7Vn3u2Se
9jv06GbJfd2EHXRPx2D+QRVeKO7hnnDkW5wSrCvfAA5HmRJbN7ZfysgA
-----END PRIVATE KEY-----
";
    const KEY_NAME: &str = "organizations/9f3c2b1a-0000-4000-8000-000000000001/apiKeys/5e6f7a8b-0000-4000-8000-000000000002";

    fn part(token: &str, index: usize) -> Value {
        let text = token.split('.').nth(index).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).unwrap()).unwrap()
    }

    /// The token as Coinbase's "API Key Authentication" page describes it (Advanced Trade API):
    /// header `{alg: ES256, kid, nonce, typ: JWT}`, claims `{sub, iss: cdp, nbf, exp: nbf + 120,
    /// uri: "GET api.coinbase.com/api/v3/brokerage/accounts"}`, signed over
    /// `base64url(header).base64url(claims)` with the key's ECDSA P-256 SHA-256 signature as r‖s.
    #[test]
    fn tokens_are_signed_as_coinbase_documents() {
        let key = Key::from_pem(PEM).unwrap();
        let uri = uri("GET", "api.coinbase.com", "/api/v3/brokerage/accounts");
        assert_eq!(uri, "GET api.coinbase.com/api/v3/brokerage/accounts");
        let token = key.token(KEY_NAME, &uri, 1_700_000_000, "ab12");
        let header = part(&token, 0);
        assert_eq!(
            header,
            json!({"alg": "ES256", "kid": KEY_NAME, "nonce": "ab12", "typ": "JWT"})
        );
        let claims = part(&token, 1);
        assert_eq!(
            claims,
            json!({"sub": KEY_NAME, "iss": "cdp", "nbf": 1_700_000_000, "exp": 1_700_000_120, "uri": uri})
        );
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        assert_eq!(signature.len(), 64, "ES256 signatures are r‖s");
        let verifying = VerifyingKey::from_sec1_bytes(&key.public_sec1()).unwrap();
        verifying
            .verify(
                signed.as_bytes(),
                &Signature::from_slice(&signature).unwrap(),
            )
            .unwrap();
        // Deterministic: the same input signs the same.
        assert_eq!(token, key.token(KEY_NAME, &uri, 1_700_000_000, "ab12"));
        // The public key openssl derives from this private key.
        assert_eq!(hex::encode(&key.public_sec1()[1..9]), "ac0e9e61e8f4c933");
    }

    #[test]
    fn keys_read_from_sec1_pkcs8_and_escaped_pems() {
        let sec1 = Key::from_pem(PEM).unwrap();
        assert_eq!(
            Key::from_pem(PKCS8).unwrap().public_sec1(),
            sec1.public_sec1()
        );
        let escaped = PEM.replace('\n', "\\n");
        assert_eq!(
            Key::from_pem(&escaped).unwrap().public_sec1(),
            sec1.public_sec1()
        );
        assert!(Key::from_pem("not-a-key").is_err());
        assert!(
            Key::from_pem("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----")
                .is_err()
        );
    }

    #[test]
    fn nonces_differ_per_token() {
        let a = nonce(KEY_NAME, 1, 0);
        let b = nonce(KEY_NAME, 1, 1);
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }
}
