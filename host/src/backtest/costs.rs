//! What a backtest's fills cost: the paper venue's model (half the spread and the slippage
//! against the taker, a fee on the notional), computed in the same order and rounding as the
//! paper venue computes it, so a backtest fills at the prices a paper bot gets.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use serde::{Deserialize, Serialize};

use crate::engine::accounting::{OrderSide, SCALE};

/// Costs in basis points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Costs {
    pub fee_bps: f64,
    pub slippage_bps: f64,
    pub spread_bps: f64,
}

/// The most any cost may be (10 %), as the paper venue's configuration allows.
pub const MAX_BPS: f64 = 1000.0;

impl Default for Costs {
    /// The paper venue's defaults.
    fn default() -> Self {
        Costs {
            fee_bps: 10.0,
            slippage_bps: 5.0,
            spread_bps: 2.0,
        }
    }
}

impl Costs {
    /// The costs a paper broker is configured with (its defaults where a value is missing).
    pub fn of_config(config: &BTreeMap<String, String>) -> Costs {
        let read = |key: &str, default: f64| {
            config
                .get(key)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && (0.0..=MAX_BPS).contains(v))
                .unwrap_or(default)
        };
        let defaults = Costs::default();
        Costs {
            fee_bps: read("fee_bps", defaults.fee_bps),
            slippage_bps: read("slippage_bps", defaults.slippage_bps),
            spread_bps: read("spread_bps", defaults.spread_bps),
        }
    }

    /// The price a market order on `side` fills at when the mid price is `mid`.
    pub fn market_price(&self, mid: f64, side: OrderSide) -> Decimal {
        let half_spread = self.spread_bps / 2.0 / 10_000.0;
        let slippage = self.slippage_bps / 10_000.0;
        let price = match side {
            OrderSide::Buy => mid * (1.0 + half_spread) * (1.0 + slippage),
            OrderSide::Sell => mid * (1.0 - half_spread) * (1.0 - slippage),
        };
        Decimal::from_f64(price).unwrap_or_default().round_dp(SCALE)
    }

    /// The fee of a fill.
    pub fn fee(&self, quantity: Decimal, price: Decimal) -> Decimal {
        let bps = Decimal::from_f64(self.fee_bps).unwrap_or_default();
        (quantity * price * bps / Decimal::from(10_000)).round_dp(SCALE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buys_pay_half_the_spread_and_the_slippage_and_sells_get_less() {
        let costs = Costs::default();
        let buy = costs.market_price(100.0, OrderSide::Buy);
        let sell = costs.market_price(100.0, OrderSide::Sell);
        assert_eq!(buy, Decimal::new(100_060_005, 6));
        assert_eq!(sell, Decimal::new(99_940_005, 6));
        assert_eq!(
            costs.fee(Decimal::new(5, 1), Decimal::from(100)),
            Decimal::new(5, 2)
        );
        let free = Costs {
            fee_bps: 0.0,
            slippage_bps: 0.0,
            spread_bps: 0.0,
        };
        assert_eq!(free.market_price(100.0, OrderSide::Buy), Decimal::from(100));
    }

    #[test]
    fn a_paper_brokers_configuration_gives_its_costs() {
        let config = BTreeMap::from([
            ("fee_bps".to_string(), "2.5".to_string()),
            ("spread_bps".to_string(), "not a number".to_string()),
        ]);
        let costs = Costs::of_config(&config);
        assert_eq!(costs.fee_bps, 2.5);
        assert_eq!(costs.spread_bps, 2.0);
        assert_eq!(costs.slippage_bps, 5.0);
    }
}
