//! tradehost's instrument names: `BASE-QUOTE`, uppercase letters and digits.

use tradehost_sdk::types::BrokerError;

/// The base and quote of a `BASE-QUOTE` symbol.
pub fn split(symbol: &str) -> Result<(&str, &str), BrokerError> {
    let valid = |part: &str| {
        (1..=12).contains(&part.len())
            && part
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    match symbol.split_once('-') {
        Some((base, quote)) if valid(base) && valid(quote) => Ok((base, quote)),
        _ => Err(BrokerError::Invalid(format!(
            "`{symbol}` is not a symbol of the form BASE-QUOTE"
        ))),
    }
}

pub fn join(base: &str, quote: &str) -> String {
    format!(
        "{}-{}",
        base.to_ascii_uppercase(),
        quote.to_ascii_uppercase()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_split_and_join() {
        assert_eq!(split("BTC-USDT").unwrap(), ("BTC", "USDT"));
        assert!(split("BTCUSDT").is_err() && split("btc-usd").is_err() && split("A-B-C").is_err());
        assert_eq!(join("eth", "usd"), "ETH-USD");
    }
}
