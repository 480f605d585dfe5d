//! Checks of a proposed order against the account's limits.

use tradehost_sdk::risk_rule::{ProposedOrder, RiskContext};
use tradehost_sdk::types::Verdict;

use crate::{
    DAILY_LOSS_LIMIT_PCT, MAX_CONCURRENT_POSITIONS, MAX_POSITION_SIZE_PCT, MAX_TOTAL_EXPOSURE_PCT,
    MIN_ACCOUNT_BALANCE, Thresholds,
};

/// An order smaller than this (account currency) is not worth placing.
pub const MIN_ORDER_USD: f64 = 1.0;

/// Allows, shrinks or refuses `order`.
///
/// In order: the order's own numbers must be positive and finite; the account's equity must
/// reach `min_account_balance`; today's loss must stay under `daily_loss_limit_pct` of equity;
/// fewer than `max_concurrent_positions` may be open. Then the size is cut to
/// `max_position_size_pct` of equity and to what `max_total_exposure_pct` of equity leaves
/// beside the open positions; a cut below 1 USD refuses the order.
pub fn check_order(order: &ProposedOrder, ctx: &RiskContext) -> Verdict {
    let limits = Thresholds::new(&ctx.thresholds);

    if !is_positive(order.size_usd) {
        return deny(format!(
            "order size must be a positive amount, got {}",
            order.size_usd
        ));
    }
    if !is_positive(order.price) {
        return deny(format!(
            "order price must be a positive number, got {}",
            order.price
        ));
    }
    if let Some(stop) = order.stop_loss
        && !is_positive(stop)
    {
        return deny(format!("stop loss must be a positive price, got {stop}"));
    }

    let equity = ctx.account.equity;
    if !equity.is_finite() || !ctx.daily_pnl.is_finite() {
        return deny("account figures are not valid numbers".into());
    }
    let min_balance = limits.get(MIN_ACCOUNT_BALANCE);
    if equity < min_balance || equity <= 0.0 {
        return deny(format!(
            "account equity {equity:.2} is below the minimum balance of {min_balance:.2}"
        ));
    }

    let daily_loss_pct = -ctx.daily_pnl / equity * 100.0;
    let daily_loss_limit = limits.get(DAILY_LOSS_LIMIT_PCT);
    if daily_loss_pct >= daily_loss_limit {
        return deny(format!(
            "daily loss limit reached: {daily_loss_pct:.2}% of equity lost today (limit {daily_loss_limit}%)"
        ));
    }

    let max_positions = limits.get(MAX_CONCURRENT_POSITIONS);
    if ctx.positions.len() as f64 >= max_positions {
        return deny(format!(
            "{} positions are open, the limit is {max_positions}",
            ctx.positions.len()
        ));
    }

    let mut exposure = 0.0;
    for position in &ctx.positions {
        let notional = (position.quantity * position.current_price).abs();
        if !notional.is_finite() {
            return deny(format!(
                "position {} has no valid notional value",
                position.position_id
            ));
        }
        exposure += notional;
    }

    let position_pct = limits.get(MAX_POSITION_SIZE_PCT);
    let position_cap = equity * position_pct / 100.0;
    let exposure_pct = limits.get(MAX_TOTAL_EXPOSURE_PCT);
    let exposure_limit = equity * exposure_pct / 100.0;
    let exposure_room = (exposure_limit - exposure).max(0.0);

    let allowed = order.size_usd.min(position_cap).min(exposure_room);
    if allowed >= order.size_usd {
        Verdict::Allow
    } else if allowed >= MIN_ORDER_USD {
        Verdict::Resize(allowed)
    } else if exposure_room <= position_cap {
        deny(format!(
            "total exposure limit reached: open positions hold {exposure:.2} of the {exposure_limit:.2} allowed ({exposure_pct}% of equity)"
        ))
    } else {
        deny(format!(
            "position size limit of {position_pct}% of equity ({position_cap:.2}) is under {MIN_ORDER_USD:.2}"
        ))
    }
}

fn is_positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

fn deny(reason: String) -> Verdict {
    Verdict::Deny(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tradehost_sdk::types::{Account, Position, Side, Threshold};

    fn order(size_usd: f64) -> ProposedOrder {
        ProposedOrder {
            symbol: "BTC-USD".into(),
            side: Side::Long,
            size_usd,
            price: 60_000.0,
            stop_loss: Some(59_000.0),
        }
    }

    fn position(id: &str, quantity: f64, current_price: f64) -> Position {
        Position {
            position_id: id.into(),
            symbol: "ETH-USD".into(),
            side: Side::Long,
            quantity,
            entry_price: current_price,
            current_price,
            stop_loss: None,
            take_profit: None,
            opened_at_ms: 0,
        }
    }

    fn context(equity: f64) -> RiskContext {
        RiskContext {
            account: Account {
                cash: equity,
                equity,
                buying_power: equity,
                currency: "USD".into(),
            },
            positions: Vec::new(),
            daily_pnl: 0.0,
            trades_today: 0,
            thresholds: Vec::new(),
        }
    }

    fn threshold(name: &str, value: f64) -> Threshold {
        Threshold {
            name: name.into(),
            value,
        }
    }

    fn denial(verdict: Verdict) -> String {
        match verdict {
            Verdict::Deny(reason) => reason,
            other => panic!("expected a denial, got {other:?}"),
        }
    }

    #[test]
    fn an_order_within_every_limit_is_allowed() {
        assert_eq!(
            check_order(&order(500.0), &context(10_000.0)),
            Verdict::Allow
        );
        // Exactly at the position size limit is still within it.
        assert_eq!(
            check_order(&order(1_000.0), &context(10_000.0)),
            Verdict::Allow
        );
    }

    #[test]
    fn bad_numbers_are_denied() {
        let ctx = context(10_000.0);
        for size in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            assert!(denial(check_order(&order(size), &ctx)).starts_with("order size"));
        }
        let bad_price = ProposedOrder {
            price: f64::NAN,
            ..order(100.0)
        };
        assert!(denial(check_order(&bad_price, &ctx)).starts_with("order price"));
        let bad_stop = ProposedOrder {
            stop_loss: Some(-1.0),
            ..order(100.0)
        };
        assert!(denial(check_order(&bad_stop, &ctx)).starts_with("stop loss"));
        let mut broken = context(f64::NAN);
        assert!(denial(check_order(&order(100.0), &broken)).contains("not valid numbers"));
        broken.account.equity = 1_000.0;
        broken.daily_pnl = f64::NEG_INFINITY;
        assert!(denial(check_order(&order(100.0), &broken)).contains("not valid numbers"));
    }

    #[test]
    fn a_small_account_is_denied() {
        let reason = denial(check_order(&order(5.0), &context(99.5)));
        assert_eq!(
            reason,
            "account equity 99.50 is below the minimum balance of 100.00"
        );
        let mut custom = context(99.5);
        custom.thresholds = vec![threshold("min_account_balance", 50.0)];
        assert_eq!(check_order(&order(5.0), &custom), Verdict::Allow);
        let mut empty = context(0.0);
        empty.thresholds = vec![threshold("min_account_balance", 0.0)];
        assert!(matches!(check_order(&order(5.0), &empty), Verdict::Deny(_)));
    }

    #[test]
    fn the_daily_loss_limit_stops_new_orders() {
        let mut ctx = context(10_000.0);
        ctx.daily_pnl = -499.0;
        assert_eq!(check_order(&order(100.0), &ctx), Verdict::Allow);
        ctx.daily_pnl = -500.0;
        assert_eq!(
            denial(check_order(&order(100.0), &ctx)),
            "daily loss limit reached: 5.00% of equity lost today (limit 5%)"
        );
        ctx.thresholds = vec![threshold("daily_loss_limit_pct", 10.0)];
        assert_eq!(check_order(&order(100.0), &ctx), Verdict::Allow);
    }

    #[test]
    fn the_position_count_is_limited() {
        let mut ctx = context(100_000.0);
        ctx.positions = (0..5)
            .map(|i| position(&format!("p{i}"), 1.0, 100.0))
            .collect();
        assert_eq!(
            denial(check_order(&order(100.0), &ctx)),
            "5 positions are open, the limit is 5"
        );
        ctx.positions.pop();
        assert_eq!(check_order(&order(100.0), &ctx), Verdict::Allow);
        ctx.thresholds = vec![threshold("max_concurrent_positions", 3.0)];
        assert!(matches!(check_order(&order(100.0), &ctx), Verdict::Deny(_)));
    }

    #[test]
    fn oversized_orders_are_resized_to_the_position_limit() {
        assert_eq!(
            check_order(&order(2_500.0), &context(10_000.0)),
            Verdict::Resize(1_000.0)
        );
        let mut tiny_limit = context(10_000.0);
        tiny_limit.thresholds = vec![threshold("max_position_size_pct", 0.005)];
        assert_eq!(
            denial(check_order(&order(100.0), &tiny_limit)),
            "position size limit of 0.005% of equity (0.50) is under 1.00"
        );
    }

    #[test]
    fn total_exposure_is_capped() {
        let mut ctx = context(10_000.0);
        // 7 500 already held, 8 000 allowed: 500 left.
        ctx.positions = vec![position("p1", 2.0, 2_500.0), position("p2", -10.0, 250.0)];
        assert_eq!(check_order(&order(400.0), &ctx), Verdict::Allow);
        assert_eq!(check_order(&order(900.0), &ctx), Verdict::Resize(500.0));

        ctx.positions.push(position("p3", 1.0, 499.5));
        assert_eq!(
            denial(check_order(&order(900.0), &ctx)),
            "total exposure limit reached: open positions hold 7999.50 of the 8000.00 allowed (80% of equity)"
        );
        ctx.positions.push(position("p4", 1.0, 1_000.0));
        assert!(denial(check_order(&order(10.0), &ctx)).starts_with("total exposure"));
    }

    #[test]
    fn positions_without_a_valid_value_block_orders() {
        let mut ctx = context(10_000.0);
        ctx.positions = vec![position("p1", 1.0, f64::NAN)];
        assert_eq!(
            denial(check_order(&order(100.0), &ctx)),
            "position p1 has no valid notional value"
        );
    }
}
