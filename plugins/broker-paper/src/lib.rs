//! The paper broker: trading against a deterministic simulated market.
//!
//! The market ([`market`]) is a pure function of the configured seed, the symbol and the time,
//! so every call agrees with every other. Orders ([`orders`]) fill at once at the simulated
//! price plus spread, slippage and fees. The paper account itself (cash, positions) is kept by
//! the host, so `balance` and `positions` are unsupported here.

pub mod market;
pub mod orders;

#[cfg(target_arch = "wasm32")]
mod component;

use tradehost_sdk::broker::{AccountCheck, BrokerInfo, Credentials};
use tradehost_sdk::config::{ConfigError, ConfigReader};
use tradehost_sdk::types::{BrokerError, Candle};

use market::{Interval, MAX_END_MS, Market, validate_symbol};
use orders::Costs;

pub const NAME: &str = "paper";

pub fn describe() -> BrokerInfo {
    BrokerInfo {
        name: NAME.into(),
        display_name: "Paper trading".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: [
            "spot",
            "short",
            "market-orders",
            "limit-orders",
            "simulated",
        ]
        .map(String::from)
        .to_vec(),
    }
}

/// The paper broker's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperConfig {
    pub seed: u64,
    pub costs: Costs,
    /// Simulated time runs this many times faster than the host clock.
    pub speed: f64,
}

impl Default for PaperConfig {
    fn default() -> Self {
        Self {
            seed: 42,
            costs: Costs {
                fee_bps: 10.0,
                slippage_bps: 5.0,
                spread_bps: 2.0,
            },
            speed: 1.0,
        }
    }
}

impl PaperConfig {
    pub fn read<F: Fn(&str) -> Option<String>>(
        config: &ConfigReader<F>,
    ) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        Ok(Self {
            // Any integer seeds the market; negative ones are as good as positive ones.
            seed: config.integer("seed", defaults.seed as i64)? as u64,
            costs: Costs {
                fee_bps: config.number_in("fee_bps", defaults.costs.fee_bps, 0.0, 1000.0)?,
                slippage_bps: config.number_in(
                    "slippage_bps",
                    defaults.costs.slippage_bps,
                    0.0,
                    1000.0,
                )?,
                spread_bps: config.number_in(
                    "spread_bps",
                    defaults.costs.spread_bps,
                    0.0,
                    1000.0,
                )?,
            },
            speed: config.number_in("speed", defaults.speed, 0.001, 100_000.0)?,
        })
    }

    pub fn market(&self) -> Market {
        Market::new(self.seed, self.speed)
    }
}

/// Any non-empty key and secret connect: there is no real account behind them.
pub fn validate_credentials(credentials: &Credentials) -> Result<AccountCheck, BrokerError> {
    if credentials.api_key.trim().is_empty() || credentials.api_secret.trim().is_empty() {
        return Err(BrokerError::Auth(
            "paper trading needs a non-empty api key and api secret".into(),
        ));
    }
    Ok(AccountCheck {
        permissions: vec!["read".into(), "trade".into()],
    })
}

pub fn account_is_kept_by_host() -> BrokerError {
    BrokerError::Unsupported("the paper account is kept by the host".into())
}

pub fn candles(
    market: &Market,
    symbol: &str,
    interval: &str,
    limit: u32,
    end_ms: i64,
) -> Result<Vec<Candle>, BrokerError> {
    validate_symbol(symbol).map_err(BrokerError::Rejected)?;
    let Some(interval) = Interval::parse(interval) else {
        return Err(BrokerError::Unsupported(format!(
            "interval `{interval}` is not supported; use 1m, 5m or 1h"
        )));
    };
    if !(0..=MAX_END_MS).contains(&end_ms) {
        return Err(BrokerError::Rejected(format!(
            "end-ms {end_ms} is outside the years 1970 to 3000"
        )));
    }
    Ok(market.candles(symbol, interval, limit, end_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn reader(pairs: &[(&str, &str)]) -> ConfigReader<impl Fn(&str) -> Option<String>> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ConfigReader::new(move |key: &str| map.get(key).cloned())
    }

    fn credentials(key: &str, secret: &str) -> Credentials {
        Credentials {
            api_key: key.into(),
            api_secret: secret.into(),
            params: Vec::new(),
        }
    }

    #[test]
    fn describes_itself_as_in_the_manifest() {
        let info = describe();
        let manifest = include_str!("../plugin.toml");
        assert!(manifest.contains(&format!("name = \"{}\"", info.name)));
        assert!(manifest.contains(&format!("version = \"{}\"", info.version)));
        assert!(manifest.contains(&format!("display_name = \"{}\"", info.display_name)));
        assert!(manifest.contains("kind = \"broker\""));
        for key in ["seed", "fee_bps", "slippage_bps", "spread_bps", "speed"] {
            assert!(manifest.contains(&format!("[config.{key}]")), "{key}");
        }
        assert_eq!(
            info.capabilities,
            [
                "spot",
                "short",
                "market-orders",
                "limit-orders",
                "simulated"
            ]
        );
    }

    #[test]
    fn configuration_defaults_and_overrides() {
        assert_eq!(PaperConfig::read(&reader(&[])), Ok(PaperConfig::default()));
        let config = PaperConfig::read(&reader(&[
            ("seed", "-7"),
            ("fee_bps", "0"),
            ("speed", "60"),
        ]))
        .unwrap();
        assert_eq!(config.seed, (-7i64) as u64);
        assert_eq!(config.costs.fee_bps, 0.0);
        assert_eq!(config.speed, 60.0);
        assert!(PaperConfig::read(&reader(&[("speed", "0")])).is_err());
        assert!(PaperConfig::read(&reader(&[("fee_bps", "-1")])).is_err());
        assert!(PaperConfig::read(&reader(&[("seed", "abc")])).is_err());
    }

    #[test]
    fn credentials_need_a_key_and_a_secret() {
        let check = validate_credentials(&credentials("key", "secret")).unwrap();
        assert_eq!(check.permissions, ["read", "trade"]);
        for (key, secret) in [("", "secret"), ("key", ""), (" ", " ")] {
            assert!(matches!(
                validate_credentials(&credentials(key, secret)),
                Err(BrokerError::Auth(_))
            ));
        }
    }

    #[test]
    fn candle_requests_are_checked() {
        let market = PaperConfig::default().market();
        let now = 1_709_251_200_000;
        assert_eq!(
            candles(&market, "BTC-USD", "5m", 10, now).unwrap().len(),
            10
        );
        assert!(matches!(
            candles(&market, "BTC-USD", "15m", 10, now),
            Err(BrokerError::Unsupported(_))
        ));
        assert!(matches!(
            candles(&market, "BTCUSD", "1m", 10, now),
            Err(BrokerError::Rejected(_))
        ));
        assert!(matches!(
            candles(&market, "BTC-USD", "1m", 10, -1),
            Err(BrokerError::Rejected(_))
        ));
        assert!(matches!(
            candles(&market, "BTC-USD", "1m", 10, i64::MAX),
            Err(BrokerError::Rejected(_))
        ));
    }
}
