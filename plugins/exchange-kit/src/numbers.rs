//! Exact decimals: parsed from what venues send (strings or JSON numbers), written without
//! trailing zeros, rounded to the venue's steps.

use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::types::BrokerError;

/// A decimal as the interface writes it.
pub fn text(value: Decimal) -> String {
    value.normalize().to_string()
}

/// Parses a decimal string (no exponent).
pub fn parse(text: &str) -> Option<Decimal> {
    let text = text.trim();
    if text.is_empty() || text.contains(['e', 'E', '+']) {
        return None;
    }
    text.parse().ok()
}

/// A JSON field as a decimal, whether the venue sent it as a string or a number.
pub fn field(value: &Value) -> Option<Decimal> {
    match value {
        Value::String(text) => parse(text),
        Value::Number(number) => {
            let text = number.to_string();
            parse(&text).or_else(|| Decimal::from_scientific(&text).ok())
        }
        _ => None,
    }
}

/// A required decimal field, or an error naming it.
pub fn required(value: &Value, name: &str) -> Result<Decimal, BrokerError> {
    field(&value[name]).ok_or_else(|| {
        BrokerError::Unavailable(format!(
            "the venue's answer has no decimal `{name}`: {value}"
        ))
    })
}

/// `value` rounded down to a whole number of `step`s.
pub fn floor_to_step(value: Decimal, step: Decimal) -> Decimal {
    if step <= Decimal::ZERO {
        return value;
    }
    ((value / step).trunc() * step).normalize()
}

/// Whether `value` is a whole number of `step`s.
pub fn on_step(value: Decimal, step: Decimal) -> bool {
    step <= Decimal::ZERO || (value % step).is_zero()
}

/// The decimal places a step has (0.001 → 3).
pub fn places(step: Decimal) -> u8 {
    step.normalize().scale().min(28) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn decimals_from_strings_and_numbers() {
        assert_eq!(field(&json!("0.00100000")), Some(d("0.001")));
        assert_eq!(field(&json!(42.5)), Some(d("42.5")));
        assert_eq!(field(&json!(1e-7)), Some(d("0.0000001")));
        assert_eq!(field(&json!("1e5")), None);
        assert_eq!(field(&json!(null)), None);
        assert_eq!(text(d("1.2300")), "1.23");
        assert_eq!(floor_to_step(d("1.23456"), d("0.001")), d("1.234"));
        assert!(on_step(d("1.25"), d("0.05")) && !on_step(d("1.26"), d("0.05")));
        assert_eq!(places(d("0.00100000")), 3);
        assert!(required(&json!({"a": "x"}), "a").is_err());
    }
}
