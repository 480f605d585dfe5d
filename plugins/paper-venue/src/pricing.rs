//! What an execution costs on the simulated market: the bid and ask around the mid price,
//! slippage against the taker, and the fee.

use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use tradehost_sdk::types::OrderSide;

use crate::market::{Market, hash_bytes};

/// Decimal places of prices, quantities and money on the paper venue.
pub const SCALE: u32 = 8;

/// What trading costs, in basis points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// Fee charged on the notional.
    pub fee_bps: f64,
    /// Price movement against the taker on top of the spread.
    pub slippage_bps: f64,
    /// Distance between bid and ask; a taker pays half of it.
    pub spread_bps: f64,
}

/// The quote a taker on `side` faces at `at_ms` (ask for buys, bid for sells), and the price a
/// market order gets (the quote moved by slippage against the taker).
pub fn quotes(
    market: &Market,
    costs: &Costs,
    symbol: &str,
    side: OrderSide,
    at_ms: i64,
) -> (f64, f64) {
    let mid = market.mid_price(symbol, at_ms);
    let half_spread = costs.spread_bps / 2.0 / 10_000.0;
    let slippage = costs.slippage_bps / 10_000.0;
    match side {
        OrderSide::Buy => {
            let ask = mid * (1.0 + half_spread);
            (ask, ask * (1.0 + slippage))
        }
        OrderSide::Sell => {
            let bid = mid * (1.0 - half_spread);
            (bid, bid * (1.0 - slippage))
        }
    }
}

/// The price a market order on `side` fills at, `at_ms`.
pub fn market_price(
    market: &Market,
    costs: &Costs,
    symbol: &str,
    side: OrderSide,
    at_ms: i64,
) -> Decimal {
    exact(quotes(market, costs, symbol, side, at_ms).1)
}

/// The price a limit order fills at `at_ms` when it is marketable then: the taker price, never
/// worse than the limit.
pub fn limit_price(
    market: &Market,
    costs: &Costs,
    symbol: &str,
    side: OrderSide,
    limit: Decimal,
    at_ms: i64,
) -> Option<Decimal> {
    let (quote, taker) = quotes(market, costs, symbol, side, at_ms);
    let (quote, taker) = (exact(quote), exact(taker));
    match side {
        OrderSide::Buy if limit >= quote => Some(taker.min(limit)),
        OrderSide::Sell if limit <= quote => Some(taker.max(limit)),
        _ => None,
    }
}

pub fn fee(costs: &Costs, quantity: Decimal, price: Decimal) -> Decimal {
    let bps = Decimal::from_f64(costs.fee_bps).unwrap_or_default();
    (quantity * price * bps / Decimal::from(10_000)).round_dp(SCALE)
}

/// A simulated price as an exact decimal at [`SCALE`] places.
pub fn exact(price: f64) -> Decimal {
    Decimal::from_f64(price).unwrap_or_default().round_dp(SCALE)
}

/// The venue's id for an order: the same client order id always gets the same id.
pub fn order_id(client_order_id: &str) -> String {
    format!("paper-{:016x}", hash_bytes(client_order_id.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: i64 = 1_709_251_234_567;

    fn market() -> Market {
        Market::new(42, 1.0)
    }

    fn costs() -> Costs {
        Costs {
            fee_bps: 10.0,
            slippage_bps: 5.0,
            spread_bps: 2.0,
        }
    }

    fn assert_close(actual: Decimal, expected: f64) {
        let actual: f64 = actual.to_string().parse().unwrap();
        assert!(
            (actual - expected).abs() <= expected.abs() * 1e-9,
            "expected {expected}, got {actual}"
        );
    }

    #[test]
    fn market_orders_pay_half_the_spread_plus_slippage() {
        let mid = market().mid_price("BTC-USD", NOW_MS);
        let buy = market_price(&market(), &costs(), "BTC-USD", OrderSide::Buy, NOW_MS);
        let sell = market_price(&market(), &costs(), "BTC-USD", OrderSide::Sell, NOW_MS);
        assert_close(buy, mid * 1.0001 * 1.0005);
        assert_close(sell, mid * 0.9999 * 0.9995);
        assert_eq!(buy.scale(), SCALE.min(buy.scale()));
        assert_eq!(
            fee(&costs(), Decimal::new(5, 1), Decimal::from(100)),
            Decimal::new(5, 2)
        );
    }

    #[test]
    fn limit_orders_fill_only_when_marketable_and_never_worse_than_the_limit() {
        let mid = exact(market().mid_price("BTC-USD", NOW_MS));
        let at =
            |limit: Decimal, side| limit_price(&market(), &costs(), "BTC-USD", side, limit, NOW_MS);
        let generous = mid * Decimal::new(101, 2);
        assert_eq!(
            at(generous, OrderSide::Buy),
            Some(market_price(
                &market(),
                &costs(),
                "BTC-USD",
                OrderSide::Buy,
                NOW_MS
            ))
        );
        // Between ask and ask + slippage: fills at the limit.
        let tight = (mid * Decimal::new(10003, 4)).round_dp(SCALE);
        assert_eq!(at(tight, OrderSide::Buy), Some(tight));
        assert_eq!(at(mid, OrderSide::Buy), None);
        assert_eq!(at(mid, OrderSide::Sell), None);
        assert!(at(mid * Decimal::new(99, 2), OrderSide::Sell).is_some());
    }

    #[test]
    fn order_ids_follow_the_client_order_id() {
        assert_eq!(order_id("order-1"), order_id("order-1"));
        assert_ne!(order_id("order-1"), order_id("order-2"));
        assert!(order_id("x").starts_with("paper-") && order_id("x").len() == 22);
    }
}
