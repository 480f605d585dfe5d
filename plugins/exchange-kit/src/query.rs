//! Query strings and form bodies in the byte-exact form venues sign them: parameters in the
//! order given, each `key=value` percent-encoded (RFC 3986 unreserved characters kept).

/// Percent-encodes one component.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// `k1=v1&k2=v2`, in the order given.
pub fn join(params: &[(&str, String)]) -> String {
    params
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_encode_in_order() {
        assert_eq!(
            join(&[
                ("symbol", "BTCUSDT".into()),
                ("price", "0.1".into()),
                ("id", "a b/c".into())
            ]),
            "symbol=BTCUSDT&price=0.1&id=a%20b%2Fc"
        );
        assert_eq!(encode("XBT/USD"), "XBT%2FUSD");
    }
}
