//! Kraken's request signature (`API-Sign`): the base64 HMAC-SHA512, keyed with the base64-decoded
//! private key, of the URI path (`/0/private/<Method>`) followed by the SHA-256 of the nonce and
//! the whole form-encoded body.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use tradehost_sdk::types::BrokerError;

/// The private key as Kraken shows it (base64), decoded.
pub fn decode_secret(secret: &str) -> Result<Vec<u8>, BrokerError> {
    match STANDARD.decode(secret.trim()) {
        Ok(key) if !key.is_empty() => Ok(key),
        _ => Err(BrokerError::Auth(
            "the private key is not base64 as Kraken shows it".into(),
        )),
    }
}

/// `API-Sign` of a request to `path` whose body is `body` (which carries `nonce`).
pub fn signature(secret: &[u8], path: &str, nonce: &str, body: &str) -> String {
    let digest = Sha256::new()
        .chain_update(nonce.as_bytes())
        .chain_update(body.as_bytes())
        .finalize();
    let mut mac = Hmac::<Sha512>::new_from_slice(secret).expect("HMAC takes any key");
    mac.update(path.as_bytes());
    mac.update(&digest);
    STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kraken's published example ("Spot REST Authentication", Examples): a limit order to buy
    /// 1.25 XBTUSD at 37500 signed with this private key and nonce gives this API-Sign.
    #[test]
    fn matches_the_example_kraken_publishes() {
        let secret = decode_secret(
            "kQH5HW/8p1uGOVjbgWA7FunAmGO8lsSUXNsu3eow76sz84Q18fWxnyRzBHCd3pd5nE9qa99HAZtuZuj6F1huXg==",
        )
        .unwrap();
        let body =
            "nonce=1616492376594&ordertype=limit&pair=XBTUSD&price=37500&type=buy&volume=1.25";
        assert_eq!(
            signature(&secret, "/0/private/AddOrder", "1616492376594", body),
            "4/dpxb3iT4tp/ZCVEwSnEsLxx0bqyhLpdfOpc6fn7OR8+UClSV5n9E6aSS8MPtnRfp32bAb0nmbRn6H8ndwLUQ=="
        );
    }

    #[test]
    fn a_key_that_is_not_base64_is_an_auth_error() {
        assert!(matches!(
            decode_secret("not base64!"),
            Err(BrokerError::Auth(_))
        ));
        assert!(matches!(decode_secret(""), Err(BrokerError::Auth(_))));
    }
}
