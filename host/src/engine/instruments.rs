//! The venues' trading rules per instrument (tick, lot, minimums), fetched through the broker
//! plugin and kept for an hour, so orders are rounded to what the venue accepts before they are
//! sent rather than refused after.

use dashmap::DashMap;
use rust_decimal::{Decimal, RoundingStrategy};

use super::accounting::{OrderSide, SCALE};
use crate::App;
use crate::plugins::bindings::types::BrokerError;
use crate::plugins::calls::BrokerAccount;
use crate::plugins::{PluginKind, decimal, off_thread};
use crate::store::now_ms;

/// How long fetched rules are used before they are asked for again.
const TTL_MS: i64 = 3_600_000;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    pub tick_size: Decimal,
    pub lot_size: Decimal,
    pub min_quantity: Decimal,
    pub min_notional: Decimal,
}

impl Rules {
    /// For venues that publish no rules (0.1.0 brokers): the books' own precision, no minimums.
    pub const fn unrestricted() -> Rules {
        Rules {
            tick_size: Decimal::from_parts(1, 0, 0, false, SCALE),
            lot_size: Decimal::from_parts(1, 0, 0, false, SCALE),
            min_quantity: Decimal::ZERO,
            min_notional: Decimal::ZERO,
        }
    }

    /// `quantity` rounded down to a whole number of lots.
    pub fn round_quantity(&self, quantity: Decimal) -> Decimal {
        if self.lot_size <= Decimal::ZERO {
            return quantity.round_dp_with_strategy(SCALE, RoundingStrategy::ToZero);
        }
        ((quantity / self.lot_size).trunc() * self.lot_size).normalize()
    }

    /// A limit price on the venue's tick: a buy never above what was asked, a sell never below.
    pub fn round_price(&self, price: Decimal, side: OrderSide) -> Decimal {
        let tick = if self.tick_size > Decimal::ZERO {
            self.tick_size
        } else {
            Rules::unrestricted().tick_size
        };
        let ticks = price / tick;
        let ticks = match side {
            OrderSide::Buy => ticks.floor(),
            OrderSide::Sell => ticks.ceil(),
        };
        (ticks * tick).normalize()
    }

    /// Why an order of `quantity` at about `price` would be refused by the venue, if it would.
    pub fn refusal(&self, quantity: Decimal, price: Decimal) -> Option<String> {
        if quantity <= Decimal::ZERO {
            return Some("the quantity rounds to zero at the venue's lot size".into());
        }
        if quantity < self.min_quantity {
            return Some(format!(
                "quantity {quantity} is below the venue's minimum of {}",
                self.min_quantity
            ));
        }
        let Some(value) = quantity.checked_mul(price) else {
            return Some("the order's value is out of range".into());
        };
        (value < self.min_notional).then(|| {
            format!(
                "order value {} is below the venue's minimum of {}",
                value.round_dp(2),
                self.min_notional
            )
        })
    }
}

/// The asset an instrument trades (`BTC` of `BTC-USD`). Holdings are compared per asset, since
/// a spot venue holds assets, whatever they were bought against.
pub fn asset_of(symbol: &str) -> &str {
    symbol.split_once('-').map_or(symbol, |(base, _)| base)
}

#[derive(Default)]
pub struct Instruments {
    cache: DashMap<(String, String), (Rules, i64)>,
}

impl Instruments {
    /// The rules of `symbol` at `broker` if known, however old.
    pub fn cached(&self, broker: &str, symbol: &str) -> Option<Rules> {
        self.cache
            .get(&(broker.to_string(), symbol.to_string()))
            .map(|entry| entry.0)
    }

    /// The rules of `symbol` at `broker`: cached, or asked of the venue.
    pub async fn rules(
        &self,
        app: &App,
        broker: &str,
        account: &BrokerAccount,
        symbol: &str,
    ) -> Result<Rules, String> {
        let key = (broker.to_string(), symbol.to_string());
        let now = now_ms();
        let cached = self.cache.get(&key).map(|entry| *entry);
        if let Some((rules, at)) = cached
            && now - at < TTL_MS
        {
            return Ok(rules);
        }
        let active = app
            .plugins
            .active(PluginKind::Broker, broker)
            .map_err(|err| err.to_string())?;
        let runtime = app.plugins.runtime().clone();
        let (account, wanted) = (account.clone(), symbol.to_string());
        let answer =
            off_thread(move || runtime.broker_instrument(&active, &account, &wanted)).await?;
        let fetched = match answer {
            Ok(Ok(instrument)) => {
                let field = |text: &str| decimal::parse(text).unwrap_or_default();
                Ok(Rules {
                    tick_size: field(&instrument.tick_size),
                    lot_size: field(&instrument.lot_size),
                    min_quantity: field(&instrument.min_quantity),
                    min_notional: field(&instrument.min_notional),
                })
            }
            Ok(Err(BrokerError::Unsupported(_))) => Ok(Rules::unrestricted()),
            Ok(Err(err)) => Err(format!("instrument rules of {symbol}: {err:?}")),
            Err(err) => Err(err.to_string()),
        };
        match (fetched, cached) {
            (Ok(rules), _) => {
                self.cache.insert(key, (rules, now));
                Ok(rules)
            }
            // Stale rules are better than none while the venue does not answer.
            (Err(_), Some((rules, _))) => Ok(rules),
            (Err(err), None) => Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    #[test]
    fn quantities_round_down_to_the_lot() {
        let rules = Rules {
            tick_size: d("0.01"),
            lot_size: d("0.001"),
            min_quantity: d("0.002"),
            min_notional: d("10"),
        };
        assert_eq!(rules.round_quantity(d("1.23456")), d("1.234"));
        assert_eq!(rules.round_quantity(d("0.0009")), d("0"));
        assert!(rules.refusal(d("0"), d("100")).is_some());
        assert!(
            rules.refusal(d("0.001"), d("100000")).is_some(),
            "below the minimum quantity"
        );
        assert!(
            rules.refusal(d("0.05"), d("100")).is_some(),
            "below the minimum notional"
        );
        assert_eq!(rules.refusal(d("0.2"), d("100")), None);
        let free = Rules::unrestricted();
        assert_eq!(free.round_quantity(d("0.123456789")), d("0.12345678"));
        assert_eq!(free.refusal(d("0.00000001"), d("1")), None);
    }

    #[test]
    fn limit_prices_round_to_the_tick_in_the_traders_favour() {
        let rules = Rules {
            tick_size: d("0.05"),
            lot_size: d("1"),
            min_quantity: d("0"),
            min_notional: d("0"),
        };
        assert_eq!(rules.round_price(d("100.07"), OrderSide::Buy), d("100.05"));
        assert_eq!(rules.round_price(d("100.07"), OrderSide::Sell), d("100.1"));
        assert_eq!(rules.round_price(d("100.05"), OrderSide::Buy), d("100.05"));
        assert_eq!(rules.round_price(d("100.05"), OrderSide::Sell), d("100.05"));
        let free = Rules::unrestricted();
        assert_eq!(
            free.round_price(d("1.123456789"), OrderSide::Buy),
            d("1.12345678")
        );
        assert_eq!(
            free.round_price(d("1.123456781"), OrderSide::Sell),
            d("1.12345679")
        );
    }
}
