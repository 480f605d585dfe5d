//! OKX's request signature: the Base64 HMAC-SHA256, keyed with the API secret, of the timestamp,
//! the method, the request path with its query string, and the body, concatenated. The timestamp
//! is the `OK-ACCESS-TIMESTAMP` header's: ISO 8601 in UTC with milliseconds.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// `OK-ACCESS-SIGN` of one request.
pub fn signature(secret: &str, timestamp: &str, method: &str, path: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(timestamp.as_bytes());
    mac.update(method.to_ascii_uppercase().as_bytes());
    mac.update(path.as_bytes());
    mac.update(body.as_bytes());
    base64(&mac.finalize().into_bytes())
}

/// Standard Base64 with padding (RFC 4648, section 4).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Unix milliseconds as OKX's timestamp, `2020-12-08T09:08:57.715Z`.
pub fn timestamp(ms: i64) -> String {
    let (days, in_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (secs, millis) = (in_day / 1_000, in_day % 1_000);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        secs / 3_600,
        secs / 60 % 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of OKX's "REST Authentication" section (its timestamp, request path and
    /// sample SecretKey) and its "Place order" request body. OKX publishes the inputs, not the
    /// resulting signatures: these were computed separately with a standard HMAC tool.
    #[test]
    fn signs_the_documented_examples() {
        let secret = "22582BD0CFF14C41EDBF1AB98506286D";
        let at = "2020-12-08T09:08:57.715Z";
        assert_eq!(
            signature(secret, at, "GET", "/api/v5/account/balance?ccy=BTC", ""),
            "HiZhvSfMtWJA3uUIVXV3a/bSXNPCWvYFXoGCVS8V4zY="
        );
        let body = r#"{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"b15","side":"buy","ordType":"limit","px":"2.15","sz":"2"}"#;
        assert_eq!(
            signature(secret, at, "post", "/api/v5/trade/order", body),
            "dI6rrL9rXW/HdaPKJ/6LC1OgvH4/PYju6R3CqixMTNQ="
        );
    }

    #[test]
    fn timestamps_are_iso_8601_with_milliseconds() {
        assert_eq!(timestamp(1_607_418_537_715), "2020-12-08T09:08:57.715Z");
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(951_782_400_001), "2000-02-29T00:00:00.001Z");
        assert_eq!(timestamp(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
    }

    /// RFC 4648's test vectors.
    #[test]
    fn base64_as_rfc_4648() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }
}
