//! What an entry must pass before an order is sized: the bot's settings and plan, the account's
//! buying power, every active risk rule, the smallest order. Written once for every caller that
//! opens positions (a bot's scan and, with its own clock and fills, a backtest), so they decide
//! alike.

use rust_decimal::{Decimal, RoundingStrategy};

use super::accounting::{self, Side, decimal, float};
use super::trader::Trader;
use super::wire::{thresholds, wire_account, wire_positions, wire_side};
use crate::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use crate::plugins::bindings::types::{Signal, SignalAction, Verdict};

/// What a strategy's signal asks for: nothing (hold), `Some(None)` to close what is held on its
/// symbol, or a side to hold.
pub fn wanted(action: SignalAction) -> Option<Option<Side>> {
    match action {
        SignalAction::Hold => None,
        SignalAction::Close => Some(None),
        SignalAction::OpenLong => Some(Some(Side::Long)),
        SignalAction::OpenShort => Some(Some(Side::Short)),
    }
}

/// A signal's stop and first take-profit, where they are positive prices.
pub fn protective_levels(signal: &Signal) -> (Option<Decimal>, Option<Decimal>) {
    let positive = |price: f64| decimal(price).filter(|p| *p > Decimal::ZERO);
    (
        signal.stop_loss.and_then(positive),
        signal.take_profit.first().copied().and_then(positive),
    )
}

/// Smallest order worth sending, in account currency.
pub const MIN_ORDER_USD: Decimal = Decimal::ONE;

/// An entry asked for by a signal.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub symbol: &'a str,
    pub side: Side,
    /// The price it is sized at.
    pub price: Decimal,
    /// The notional the signal asks for, account currency.
    pub size_usd: f64,
    pub stop_loss: Option<Decimal>,
}

/// The notional an entry may have before the risk rules see it, or why it may not be made: a
/// usable price, no order working on the symbol, an allowed pair, room under the position limit
/// and the plan's trades per day, a positive size no larger than the settings' maximum and the
/// buying power.
pub fn size_before_rules(trader: &Trader, ask: &Ask<'_>) -> Result<Decimal, String> {
    let symbol = ask.symbol;
    if ask.price <= Decimal::ZERO {
        return Err(format!("no usable price for {symbol}"));
    }
    if let Some(order) = trader.live_order_for(None, Some(symbol)) {
        return Err(format!(
            "order {} on {symbol} is still working",
            order.client_order_id
        ));
    }
    if !trader.settings.allows_pair(symbol) {
        return Err("not in the allowed pairs of the settings".into());
    }
    let max_positions = trader.settings.max_positions(&trader.entitlement);
    if trader.positions.len() as u32 >= max_positions {
        return Err(format!(
            "{} positions open; at most {max_positions} allowed",
            trader.positions.len()
        ));
    }
    let limits = trader.entitlement.limits();
    if trader.stats.opens_today >= limits.max_daily_trades {
        return Err(format!(
            "{} trades today; the plan allows {}",
            trader.stats.opens_today, limits.max_daily_trades
        ));
    }
    let size = decimal(ask.size_usd)
        .filter(|s| *s > Decimal::ZERO)
        .ok_or("size is not a positive number")?;
    let paper = trader.bot.paper_trading != 0;
    let max_size = decimal(
        trader
            .settings
            .max_position_size_usd(&trader.entitlement, paper),
    )
    .unwrap_or_default();
    Ok(size
        .min(max_size)
        .min(accounting::buying_power(&trader.account, &trader.positions)))
}

/// What every risk rule is shown of the account.
pub fn risk_context(trader: &Trader) -> RiskContext {
    RiskContext {
        account: wire_account(trader),
        positions: wire_positions(&trader.positions),
        daily_pnl: float(trader.daily_pnl()),
        trades_today: trader.stats.opens_today,
        thresholds: thresholds(
            &trader.settings,
            trader.settings.max_positions(&trader.entitlement),
        ),
    }
}

/// The order a risk rule judges: the entry at its size so far.
pub fn proposed(ask: &Ask<'_>, size: Decimal) -> ProposedOrder {
    ProposedOrder {
        symbol: ask.symbol.to_string(),
        side: wire_side(ask.side),
        size_usd: float(size),
        price: float(ask.price),
        stop_loss: ask.stop_loss.map(float),
    }
}

/// Whether the rules still have something to judge: an entry already below the smallest order
/// is refused without asking the rest.
pub fn worth_judging(size: Decimal) -> bool {
    size >= MIN_ORDER_USD
}

/// The size after one rule's verdict, or the refusal naming the rule.
pub fn after_verdict(size: Decimal, rule: &str, verdict: Verdict) -> Result<Decimal, String> {
    match verdict {
        Verdict::Allow => Ok(size),
        Verdict::Resize(smaller) => Ok(size.min(decimal(smaller).unwrap_or_default())),
        Verdict::Deny(reason) => Err(format!("risk rule {rule}: {reason}")),
    }
}

/// The quantity an entry of `size` buys at `price` (rounded toward zero to the books' scale), or
/// why there is none: a size below the smallest order, or one that rounds to nothing.
pub fn quantity(symbol: &str, size: Decimal, price: Decimal) -> Result<Decimal, String> {
    if size < MIN_ORDER_USD {
        return Err(format!("size {size} below the minimum order"));
    }
    let quantity = size
        .checked_div(price)
        .ok_or_else(|| format!("no quantity of {symbol} at {price}"))?
        .round_dp_with_strategy(accounting::SCALE, RoundingStrategy::ToZero);
    if quantity.is_zero() {
        return Err("quantity rounds to zero".into());
    }
    Ok(quantity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::accounting::{Fill, OpenRequest};

    fn trader(cash: i64) -> Trader {
        Trader::paper_for_tests(cash)
    }

    fn ask(symbol: &str, price: i64, size_usd: f64) -> Ask<'_> {
        Ask {
            symbol,
            side: Side::Long,
            price: Decimal::from(price),
            size_usd,
            stop_loss: None,
        }
    }

    fn hold(trader: &mut Trader, symbol: &str, notional: i64) {
        let (position, _) = trader.account.open(
            OpenRequest {
                position_id: format!("p-{symbol}-{}", trader.positions.len()),
                ledger_id: "l".into(),
                broker: "paper",
                strategy: "ema-cross",
                symbol,
                side: Side::Long,
                stop_loss: None,
                take_profit: None,
                trail_pct: None,
            },
            Fill {
                quantity: Decimal::ONE,
                price: Decimal::from(notional),
                fee: Decimal::ZERO,
                at_ms: 0,
            },
        );
        trader.positions.push(position);
    }

    #[test]
    fn an_entry_is_sized_to_the_plan_and_the_buying_power() {
        let trader = trader(10_000);
        assert_eq!(
            size_before_rules(&trader, &ask("BTC-USD", 100, 150.5)),
            Ok(Decimal::new(1505, 1))
        );
        // The plan's largest position.
        assert_eq!(
            size_before_rules(&trader, &ask("BTC-USD", 100, 5_000.0)),
            Ok(Decimal::from(2_000))
        );
        // What is left once other positions hold most of the account.
        let mut trader = trader;
        hold(&mut trader, "ETH-USD", 9_700);
        assert_eq!(
            size_before_rules(&trader, &ask("BTC-USD", 100, 1_000.0)),
            Ok(Decimal::from(300))
        );
    }

    #[test]
    fn each_check_refuses_with_its_reason() {
        let mut trader = trader(100_000);
        let refusal = |trader: &Trader, ask: Ask<'_>| size_before_rules(trader, &ask).unwrap_err();
        assert!(refusal(&trader, ask("BTC-USD", 0, 100.0)).contains("no usable price"));
        assert!(refusal(&trader, ask("PEPE-USD", 1, 100.0)).contains("allowed pairs"));
        assert!(refusal(&trader, ask("BTC-USD", 100, 0.0)).contains("not a positive"));
        assert!(refusal(&trader, ask("BTC-USD", 100, f64::NAN)).contains("not a positive"));
        trader.stats.opens_today = 100;
        assert!(refusal(&trader, ask("BTC-USD", 100, 100.0)).contains("100 trades today"));
        trader.stats.opens_today = 0;
        for _ in 0..10 {
            hold(&mut trader, "ETH-USD", 10);
        }
        assert!(refusal(&trader, ask("BTC-USD", 100, 100.0)).contains("at most 10 allowed"));
    }

    #[test]
    fn verdicts_keep_shrink_or_refuse_the_size() {
        let size = Decimal::from(500);
        assert_eq!(after_verdict(size, "guard", Verdict::Allow), Ok(size));
        assert_eq!(
            after_verdict(size, "guard", Verdict::Resize(120.5)),
            Ok(Decimal::new(1205, 1))
        );
        // A resize never grows the entry.
        assert_eq!(
            after_verdict(size, "guard", Verdict::Resize(900.0)),
            Ok(size)
        );
        assert_eq!(
            after_verdict(size, "guard", Verdict::Deny("too much".into())),
            Err("risk rule guard: too much".to_string())
        );
        assert!(worth_judging(MIN_ORDER_USD));
        assert!(!worth_judging(Decimal::new(99, 2)));
    }

    #[test]
    fn a_quantity_rounds_toward_zero_and_refuses_what_is_too_small() {
        assert_eq!(
            quantity("BTC-USD", Decimal::from(100), Decimal::from(3)),
            Ok(Decimal::new(3333333333, 8))
        );
        assert!(
            quantity("BTC-USD", Decimal::new(5, 1), Decimal::from(3))
                .unwrap_err()
                .contains("below the minimum")
        );
        assert_eq!(
            quantity(
                "BTC-USD",
                Decimal::from(1),
                Decimal::from(1_000_000_000_000i64)
            ),
            Err("quantity rounds to zero".to_string())
        );
    }

    #[test]
    fn a_signal_says_what_it_wants_and_only_positive_levels_count() {
        assert_eq!(wanted(SignalAction::Hold), None);
        assert_eq!(wanted(SignalAction::Close), Some(None));
        assert_eq!(wanted(SignalAction::OpenShort), Some(Some(Side::Short)));
        let signal = Signal {
            symbol: "BTC-USD".into(),
            action: SignalAction::OpenLong,
            size_usd: 100.0,
            stop_loss: Some(-1.0),
            take_profit: vec![105.5, 110.0],
            confidence: 1.0,
            reason: String::new(),
        };
        assert_eq!(
            protective_levels(&signal),
            (None, Some(Decimal::new(1055, 1)))
        );
    }
}
