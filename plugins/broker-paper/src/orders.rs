//! Order validation and fills against the simulated market.

use tradehost_sdk::types::{BrokerError, Fill, OrderKind, OrderRequest, OrderSide};

use crate::market::{Market, hash_bytes, validate_symbol};

/// Longest accepted client order id, in bytes.
const MAX_CLIENT_ORDER_ID_LEN: usize = 128;

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

/// Fills `order` at once at host time `now_ms`, or rejects it.
///
/// Buys pay the ask (mid plus half the spread) plus slippage, sells receive the bid minus
/// slippage. A limit order fills only when its limit reaches the bid or ask, and never at a
/// price worse than the limit. `reduce-only` is for the host to enforce: the paper account
/// (and so the position) lives in the host's database.
pub fn place_order(
    market: &Market,
    costs: &Costs,
    order: &OrderRequest,
    now_ms: i64,
) -> Result<Fill, BrokerError> {
    validate_order(order)?;
    let mid = market.mid_price(&order.symbol, now_ms);
    let half_spread = costs.spread_bps / 2.0 / 10_000.0;
    let slippage = costs.slippage_bps / 10_000.0;
    let (quote, taker_price) = match order.side {
        OrderSide::Buy => {
            let ask = mid * (1.0 + half_spread);
            (ask, ask * (1.0 + slippage))
        }
        OrderSide::Sell => {
            let bid = mid * (1.0 - half_spread);
            (bid, bid * (1.0 - slippage))
        }
    };
    let price = match (order.kind, order.limit_price) {
        (OrderKind::Market, _) => taker_price,
        (OrderKind::Limit, None) => {
            return Err(BrokerError::Rejected(
                "a limit order needs a limit price".into(),
            ));
        }
        (OrderKind::Limit, Some(limit)) => match order.side {
            OrderSide::Buy if limit >= quote => taker_price.min(limit),
            OrderSide::Sell if limit <= quote => taker_price.max(limit),
            _ => return Err(BrokerError::Rejected("limit not marketable".into())),
        },
    };
    Ok(Fill {
        order_id: order_id(&order.client_order_id),
        client_order_id: order.client_order_id.clone(),
        symbol: order.symbol.clone(),
        side: order.side,
        quantity: order.quantity,
        price,
        fee: order.quantity * price * costs.fee_bps / 10_000.0,
        timestamp_ms: now_ms,
    })
}

fn validate_order(order: &OrderRequest) -> Result<(), BrokerError> {
    let reject = |message: String| Err(BrokerError::Rejected(message));
    if order.client_order_id.trim().is_empty() {
        return reject("client order id is empty".into());
    }
    if order.client_order_id.len() > MAX_CLIENT_ORDER_ID_LEN {
        return reject(format!(
            "client order id is longer than {MAX_CLIENT_ORDER_ID_LEN} bytes"
        ));
    }
    validate_symbol(&order.symbol).map_err(BrokerError::Rejected)?;
    if !order.quantity.is_finite() || order.quantity <= 0.0 {
        return reject(format!(
            "quantity must be a positive number, got {}",
            order.quantity
        ));
    }
    if let Some(limit) = order.limit_price
        && (!limit.is_finite() || limit <= 0.0)
    {
        return reject(format!(
            "limit price must be a positive number, got {limit}"
        ));
    }
    Ok(())
}

/// The broker's id for an order: the same client order id always gets the same id, so a
/// retried order is recognisable.
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

    fn order(side: OrderSide, quantity: f64) -> OrderRequest {
        OrderRequest {
            client_order_id: "order-1".into(),
            symbol: "BTC-USD".into(),
            side,
            quantity,
            kind: OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        }
    }

    fn limit(side: OrderSide, limit_price: f64) -> OrderRequest {
        OrderRequest {
            kind: OrderKind::Limit,
            limit_price: Some(limit_price),
            ..order(side, 0.5)
        }
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() <= expected.abs() * 1e-12,
            "expected {expected}, got {actual}"
        );
    }

    #[test]
    fn market_orders_pay_half_the_spread_plus_slippage() {
        let mid = market().mid_price("BTC-USD", NOW_MS);
        let buy = place_order(&market(), &costs(), &order(OrderSide::Buy, 0.5), NOW_MS).unwrap();
        let sell = place_order(&market(), &costs(), &order(OrderSide::Sell, 0.5), NOW_MS).unwrap();
        assert_close(buy.price, mid * 1.0001 * 1.0005);
        assert_close(sell.price, mid * 0.9999 * 0.9995);
        assert!(sell.price < mid && mid < buy.price);
        assert_close(buy.fee, 0.5 * buy.price * 0.001);
        assert_close(sell.fee, 0.5 * sell.price * 0.001);
        assert_eq!(buy.quantity, 0.5);
        assert_eq!(buy.timestamp_ms, NOW_MS);
        assert_eq!(buy.symbol, "BTC-USD");
        assert_eq!(buy.client_order_id, "order-1");
    }

    #[test]
    fn free_trading_fills_at_the_mid() {
        let free = Costs {
            fee_bps: 0.0,
            slippage_bps: 0.0,
            spread_bps: 0.0,
        };
        let fill = place_order(&market(), &free, &order(OrderSide::Buy, 2.0), NOW_MS).unwrap();
        assert_eq!(fill.price, market().mid_price("BTC-USD", NOW_MS));
        assert_eq!(fill.fee, 0.0);
    }

    #[test]
    fn order_ids_follow_the_client_order_id() {
        let first = place_order(&market(), &costs(), &order(OrderSide::Buy, 1.0), NOW_MS).unwrap();
        let retried = place_order(
            &market(),
            &costs(),
            &order(OrderSide::Buy, 1.0),
            NOW_MS + 5_000,
        )
        .unwrap();
        assert_eq!(first.order_id, retried.order_id);
        assert!(first.order_id.starts_with("paper-"));
        assert_eq!(first.order_id.len(), "paper-".len() + 16);
        assert_ne!(order_id("order-1"), order_id("order-2"));
    }

    #[test]
    fn limit_orders_fill_only_when_marketable() {
        let mid = market().mid_price("BTC-USD", NOW_MS);
        let buy = place_order(
            &market(),
            &costs(),
            &limit(OrderSide::Buy, mid * 1.01),
            NOW_MS,
        );
        assert_close(buy.unwrap().price, mid * 1.0001 * 1.0005);
        // Between ask and ask + slippage: fills at the limit, not worse.
        let tight = mid * 1.0003;
        let fill = place_order(&market(), &costs(), &limit(OrderSide::Buy, tight), NOW_MS).unwrap();
        assert_eq!(fill.price, tight);
        let sell = place_order(
            &market(),
            &costs(),
            &limit(OrderSide::Sell, mid * 0.99),
            NOW_MS,
        );
        assert_close(sell.unwrap().price, mid * 0.9999 * 0.9995);

        let below_ask = place_order(&market(), &costs(), &limit(OrderSide::Buy, mid), NOW_MS);
        assert_eq!(
            below_ask,
            Err(BrokerError::Rejected("limit not marketable".into()))
        );
        let above_bid = place_order(&market(), &costs(), &limit(OrderSide::Sell, mid), NOW_MS);
        assert_eq!(
            above_bid,
            Err(BrokerError::Rejected("limit not marketable".into()))
        );
    }

    #[test]
    fn bad_orders_are_rejected() {
        let cases = [
            OrderRequest {
                client_order_id: " ".into(),
                ..order(OrderSide::Buy, 1.0)
            },
            OrderRequest {
                client_order_id: "x".repeat(129),
                ..order(OrderSide::Buy, 1.0)
            },
            OrderRequest {
                symbol: "btc-usd".into(),
                ..order(OrderSide::Buy, 1.0)
            },
            order(OrderSide::Buy, 0.0),
            order(OrderSide::Buy, -1.0),
            order(OrderSide::Sell, f64::NAN),
            order(OrderSide::Sell, f64::INFINITY),
            limit(OrderSide::Buy, f64::NAN),
            limit(OrderSide::Buy, -5.0),
            OrderRequest {
                limit_price: None,
                ..limit(OrderSide::Buy, 1.0)
            },
        ];
        for case in cases {
            let result = place_order(&market(), &costs(), &case, NOW_MS);
            assert!(
                matches!(result, Err(BrokerError::Rejected(_))),
                "{case:?} gave {result:?}"
            );
        }
    }
}
