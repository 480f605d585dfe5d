//! The paper venue: trading against a deterministic simulated market. The `paper` broker plugin
//! (`broker-paper`) is a thin component over this crate.
//!
//! The market ([`market`]) is a pure function of the configured seed, the symbol and the time,
//! so every call agrees with every other. The venue ([`venue`]) keeps each account's book of
//! orders and fills in the host's store and fills orders at the simulated price plus spread,
//! slippage and fees ([`pricing`]): at once, or in parts over time when configured, so the
//! host's order handling meets what a real exchange does. The paper account's capital is kept
//! by the host; the venue records what its fills moved.

pub mod market;
pub mod pricing;
pub mod venue;

use rust_decimal::Decimal;
use tradehost_sdk::broker::{AccountCheck, Credentials};
use tradehost_sdk::config::{ConfigError, ConfigReader};
use tradehost_sdk::types::{BrokerError, Candle, Instrument};

use market::{Interval, MAX_END_MS, Market, validate_symbol};
use pricing::Costs;

/// The instrument rules every paper symbol has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    pub tick_size: Decimal,
    pub lot_size: Decimal,
    pub min_notional: Decimal,
}

/// The paper broker's configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperConfig {
    pub seed: u64,
    pub costs: Costs,
    /// Simulated time runs this many times faster than the host clock.
    pub speed: f64,
    /// An order fills in this many parts...
    pub fill_parts: u32,
    /// ...this far apart (the first at once).
    pub fill_delay_ms: i64,
    pub rules: Rules,
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
            fill_parts: 1,
            fill_delay_ms: 0,
            rules: Rules {
                tick_size: Decimal::new(1, 2),
                lot_size: Decimal::new(1, 8),
                min_notional: Decimal::ONE,
            },
        }
    }
}

/// The configuration the host holds for the plugin (inside a component).
#[cfg(target_arch = "wasm32")]
pub fn configuration() -> Result<PaperConfig, BrokerError> {
    PaperConfig::read(&tradehost_sdk::config::from_host())
        .map_err(|err| BrokerError::Unavailable(format!("paper broker misconfigured: {err}")))
}

/// A positive decimal configuration value.
fn decimal_in<F: Fn(&str) -> Option<String>>(
    config: &ConfigReader<F>,
    key: &str,
    default: Decimal,
) -> Result<Decimal, ConfigError> {
    match config.raw(key) {
        None => Ok(default),
        Some(text) => match text.parse::<Decimal>() {
            Ok(value) if value > Decimal::ZERO && value.scale() <= pricing::SCALE => Ok(value),
            _ => Err(ConfigError {
                key: key.into(),
                message: format!("expected a positive decimal with at most 8 places, got `{text}`"),
            }),
        },
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
            fill_parts: config.integer_in("fill_parts", i64::from(defaults.fill_parts), 1, 10)?
                as u32,
            fill_delay_ms: config.integer_in(
                "fill_delay_ms",
                defaults.fill_delay_ms,
                0,
                3_600_000,
            )?,
            rules: Rules {
                tick_size: decimal_in(config, "tick_size", defaults.rules.tick_size)?,
                lot_size: decimal_in(config, "lot_size", defaults.rules.lot_size)?,
                min_notional: decimal_in(config, "min_notional", defaults.rules.min_notional)?,
            },
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

/// The rules of a paper symbol.
pub fn instrument(config: &PaperConfig, symbol: &str) -> Result<Instrument, BrokerError> {
    validate_symbol(symbol).map_err(BrokerError::NotFound)?;
    let (base, quote) = symbol.split_once('-').unwrap_or((symbol, "USD"));
    let Rules {
        tick_size,
        lot_size,
        min_notional,
    } = config.rules;
    Ok(Instrument {
        symbol: symbol.into(),
        base_asset: base.into(),
        quote_asset: quote.into(),
        tick_size: tick_size.to_string(),
        lot_size: lot_size.to_string(),
        min_quantity: lot_size.to_string(),
        min_notional: min_notional.to_string(),
        price_precision: tick_size.normalize().scale() as u8,
        quantity_precision: lot_size.normalize().scale() as u8,
    })
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
        let parts = PaperConfig::read(&reader(&[
            ("fill_parts", "3"),
            ("fill_delay_ms", "250"),
            ("lot_size", "0.001"),
        ]))
        .unwrap();
        assert_eq!((parts.fill_parts, parts.fill_delay_ms), (3, 250));
        assert_eq!(parts.rules.lot_size, Decimal::new(1, 3));
        for bad in [
            ("fill_parts", "0"),
            ("fill_parts", "11"),
            ("lot_size", "0"),
            ("tick_size", "1e-9"),
            ("min_notional", "0.000000001"),
        ] {
            assert!(PaperConfig::read(&reader(&[bad])).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn instruments_carry_the_configured_rules() {
        let instrument = instrument(&PaperConfig::default(), "ETH-USDT").unwrap();
        assert_eq!(
            (
                instrument.base_asset.as_str(),
                instrument.quote_asset.as_str()
            ),
            ("ETH", "USDT")
        );
        assert_eq!(instrument.tick_size, "0.01");
        assert_eq!(instrument.lot_size, "0.00000001");
        assert_eq!(
            (instrument.price_precision, instrument.quantity_precision),
            (2, 8)
        );
        assert!(matches!(
            instrument_of("BTCUSD"),
            Err(BrokerError::NotFound(_))
        ));
    }

    fn instrument_of(symbol: &str) -> Result<Instrument, BrokerError> {
        instrument(&PaperConfig::default(), symbol)
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
