//! The `decimal` type of the plugin interface: exact numbers as text.

use rust_decimal::Decimal;

/// Parses a plugin's decimal: an optional minus sign, digits, an optional fraction; no exponent,
/// no plus sign, no spaces, at most 28 significant digits.
pub fn parse(text: &str) -> Result<Decimal, String> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (digits, None),
    };
    let all_digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if text.len() > 64 || !all_digits(whole) || fraction.is_some_and(|f| !all_digits(f)) {
        return Err(format!(
            "`{}` is not a decimal number",
            text.chars().take(40).collect::<String>()
        ));
    }
    text.parse::<Decimal>()
        .map_err(|_| format!("`{text}` does not fit 28 significant digits"))
}

/// A decimal as the interface writes it (no trailing zeros).
pub fn text(value: Decimal) -> String {
    value.normalize().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_decimals_parse() {
        for (good, value) in [
            ("0", Decimal::ZERO),
            ("42", Decimal::from(42)),
            ("-3.25", Decimal::new(-325, 2)),
            ("0.00000001", Decimal::new(1, 8)),
            ("007.50", Decimal::new(750, 2)),
        ] {
            assert_eq!(parse(good), Ok(value), "{good}");
        }
        for bad in [
            "", "-", ".5", "5.", "+1", "1e5", "1E-3", "NaN", "inf", " 1", "1 ", "1,000", "--1",
            "0x10", "1.2.3", "١",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(&"9".repeat(40)).is_err());
        assert_eq!(text(Decimal::new(1500, 3)), "1.5");
    }
}
