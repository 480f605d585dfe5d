//! Exact accounting of fills: cash, positions, ledger rows and completed trades.
//!
//! Money and quantities are `rust_decimal::Decimal` (28 significant digits, no binary rounding):
//! prices, quantities and fees enter rounded to [`SCALE`] decimal places, and each fill's notional
//! (price × quantity) is rounded to it too, half to even, as a venue settles cash to its
//! currency's precision. Every later figure is a sum or difference of those, so nothing drifts,
//! and every booked figure has at most [`SCALE`] places: the store keeps it exactly
//! (`store::decimal`). A position keeps its exact entry `cost`
//! (the sum of price × quantity of its opening fills), so one opened in several fills is as
//! exact as one opened at once; its entry price is that cost's average, for display and exits.
//! The only divisions (allocating a position's cost and entry fee across partial closes) round,
//! and the remainder stays with the position, so a position's trades always add up to what it
//! cost and what was paid.
//!
//! The invariant the property test checks after any sequence of fills:
//! `cash + Σ signed quantity × mark = initial capital + realized + unrealized − fees`,
//! and every position's quantity equals the sum of its ledger rows.

use rust_decimal::Decimal;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use serde::{Deserialize, Serialize};

/// Decimal places kept for prices, quantities and money.
pub const SCALE: u32 = 8;

#[derive(utoipa::ToSchema, Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Long,
    Short,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Long => "long",
            Side::Short => "short",
        }
    }

    pub fn parse(text: &str) -> Option<Side> {
        match text {
            "long" => Some(Side::Long),
            "short" => Some(Side::Short),
            _ => None,
        }
    }

    /// +1 for long, −1 for short: the sign of a position's exposure.
    pub fn sign(self) -> Decimal {
        match self {
            Side::Long => Decimal::ONE,
            Side::Short => Decimal::NEGATIVE_ONE,
        }
    }

    pub fn opening_order(self) -> OrderSide {
        match self {
            Side::Long => OrderSide::Buy,
            Side::Short => OrderSide::Sell,
        }
    }

    pub fn closing_order(self) -> OrderSide {
        match self {
            Side::Long => OrderSide::Sell,
            Side::Short => OrderSide::Buy,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum OrderSide {
    Buy,
    Sell,
}

impl OrderSide {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderSide::Buy => "BUY",
            OrderSide::Sell => "SELL",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LedgerAction {
    Open,
    Close,
}

impl LedgerAction {
    pub fn as_str(self) -> &'static str {
        match self {
            LedgerAction::Open => "OPEN",
            LedgerAction::Close => "CLOSE",
        }
    }
}

/// What the broker reports for an order, already rounded to [`SCALE`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fill {
    pub quantity: Decimal,
    pub price: Decimal,
    pub fee: Decimal,
    pub at_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub id: String,
    pub broker: String,
    /// The strategy whose entry opened it (the bot's strategy, or an inbound signal's).
    pub strategy: String,
    pub symbol: String,
    pub side: Side,
    pub quantity: Decimal,
    /// The average entry price: `cost / quantity`, rounded.
    pub entry_price: Decimal,
    /// The exact entry cost of what is still held (Σ price × quantity of the opening fills, less
    /// the shares closes took).
    pub cost: Decimal,
    /// Entry fees not yet allocated to a completed trade.
    pub entry_fees: Decimal,
    pub stop_loss: Option<Decimal>,
    pub take_profit: Option<Decimal>,
    /// Trailing stop distance as a fraction (0.03 = 3 %), measured from `extreme_price`.
    pub trail_pct: Option<Decimal>,
    /// The best price since entry: the highest for a long, the lowest for a short.
    pub extreme_price: Decimal,
    pub current_price: Decimal,
    pub opened_at_ms: i64,
    /// A close was asked for (and why): it is retried until the position is closed.
    pub closing: Option<Closing>,
}

/// A position's pending close.
#[derive(Debug, Clone, PartialEq)]
pub struct Closing {
    pub reason: String,
    pub attempts: u32,
    /// No new attempt before this.
    pub next_attempt_at: i64,
    pub last_error: Option<String>,
}

impl Position {
    pub fn unrealized_pnl(&self) -> Decimal {
        self.side.sign() * (self.current_price * self.quantity - self.cost)
    }

    pub fn cost_basis(&self) -> Decimal {
        self.cost
    }

    pub fn market_value(&self) -> Decimal {
        self.current_price * self.quantity
    }

    /// Marks the position at `price`, moving the trailing extreme.
    pub fn mark(&mut self, price: Decimal) {
        self.current_price = price;
        self.extreme_price = match self.side {
            Side::Long => self.extreme_price.max(price),
            Side::Short => self.extreme_price.min(price),
        };
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LedgerEntry {
    pub id: String,
    pub position_id: String,
    pub broker: String,
    pub symbol: String,
    pub side: OrderSide,
    pub action: LedgerAction,
    pub quantity: Decimal,
    pub price: Decimal,
    pub notional: Decimal,
    pub fee: Decimal,
    /// Gross profit this row realised (0 for an open).
    pub realized_pnl: Decimal,
    /// The share of the position's entry fee this row closed out (0 for an open).
    pub entry_fee: Decimal,
    pub cash_after: Decimal,
    pub at_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompletedTrade {
    pub id: String,
    pub position_id: String,
    pub broker: String,
    /// The strategy of the position it closes.
    pub strategy: String,
    pub symbol: String,
    pub side: Side,
    pub quantity: Decimal,
    pub entry_price: Decimal,
    pub exit_price: Decimal,
    pub size_usd: Decimal,
    pub gross_pnl: Decimal,
    /// The entry fee share of this quantity plus the exit fee.
    pub fees: Decimal,
    /// The entry fee share alone (`fees` minus it is the exit fee).
    pub entry_fee: Decimal,
    pub net_pnl: Decimal,
    pub pnl_pct: Decimal,
    pub exit_reason: String,
    pub opened_at_ms: i64,
    pub closed_at_ms: i64,
    pub duration_minutes: i64,
}

/// A user's trading account: cash and the running totals the invariant is stated in.
#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub currency: String,
    pub initial_capital: Decimal,
    pub cash: Decimal,
    /// Sum of the gross profit of every close.
    pub realized_pnl: Decimal,
    /// Every fee paid, on opens and closes.
    pub fees_paid: Decimal,
}

pub struct OpenRequest<'a> {
    pub position_id: String,
    pub ledger_id: String,
    pub broker: &'a str,
    pub strategy: &'a str,
    pub symbol: &'a str,
    pub side: Side,
    pub stop_loss: Option<Decimal>,
    pub take_profit: Option<Decimal>,
    pub trail_pct: Option<Decimal>,
}

impl Account {
    pub fn new(initial_capital: Decimal, currency: &str) -> Account {
        Account {
            currency: currency.to_string(),
            initial_capital,
            cash: initial_capital,
            realized_pnl: Decimal::ZERO,
            fees_paid: Decimal::ZERO,
        }
    }

    /// Books the fill that opens a position. A long pays for what it buys; a short receives the
    /// proceeds of what it sells and owes the asset back.
    pub fn open(&mut self, request: OpenRequest<'_>, fill: Fill) -> (Position, LedgerEntry) {
        let notional = (fill.quantity * fill.price).round_dp(SCALE);
        self.cash += match request.side {
            Side::Long => -notional,
            Side::Short => notional,
        } - fill.fee;
        self.fees_paid += fill.fee;
        let position = Position {
            id: request.position_id,
            broker: request.broker.to_string(),
            strategy: request.strategy.to_string(),
            symbol: request.symbol.to_string(),
            side: request.side,
            quantity: fill.quantity,
            entry_price: fill.price,
            cost: notional,
            entry_fees: fill.fee,
            stop_loss: request.stop_loss,
            take_profit: request.take_profit,
            trail_pct: request.trail_pct,
            extreme_price: fill.price,
            current_price: fill.price,
            opened_at_ms: fill.at_ms,
            closing: None,
        };
        let entry = LedgerEntry {
            id: request.ledger_id,
            position_id: position.id.clone(),
            broker: position.broker.clone(),
            symbol: position.symbol.clone(),
            side: request.side.opening_order(),
            action: LedgerAction::Open,
            quantity: fill.quantity,
            price: fill.price,
            notional,
            fee: fill.fee,
            realized_pnl: Decimal::ZERO,
            entry_fee: Decimal::ZERO,
            cash_after: self.cash,
            at_ms: fill.at_ms,
        };
        (position, entry)
    }

    /// Books another opening fill of `position` (its opening order filling in parts).
    pub fn add(&mut self, position: &mut Position, fill: Fill, ledger_id: String) -> LedgerEntry {
        let notional = (fill.quantity * fill.price).round_dp(SCALE);
        self.cash += match position.side {
            Side::Long => -notional,
            Side::Short => notional,
        } - fill.fee;
        self.fees_paid += fill.fee;
        position.quantity += fill.quantity;
        position.cost += notional;
        position.entry_fees += fill.fee;
        position.entry_price = (position.cost / position.quantity).round_dp(SCALE);
        position.current_price = fill.price;
        position.extreme_price = match position.side {
            Side::Long => position.extreme_price.max(fill.price),
            Side::Short => position.extreme_price.min(fill.price),
        };
        LedgerEntry {
            id: ledger_id,
            position_id: position.id.clone(),
            broker: position.broker.clone(),
            symbol: position.symbol.clone(),
            side: position.side.opening_order(),
            action: LedgerAction::Open,
            quantity: fill.quantity,
            price: fill.price,
            notional,
            fee: fill.fee,
            realized_pnl: Decimal::ZERO,
            entry_fee: Decimal::ZERO,
            cash_after: self.cash,
            at_ms: fill.at_ms,
        }
    }

    /// Books a fill that closes `fill.quantity` of `position` (all of it or part). The position
    /// keeps what is left; a quantity of zero means it is closed.
    pub fn close(
        &mut self,
        position: &mut Position,
        fill: Fill,
        exit_reason: &str,
        ledger_id: String,
        trade_id: String,
    ) -> (LedgerEntry, CompletedTrade) {
        let quantity = fill.quantity.min(position.quantity);
        let notional = (quantity * fill.price).round_dp(SCALE);
        self.cash += match position.side {
            Side::Long => notional,
            Side::Short => -notional,
        } - fill.fee;
        self.fees_paid += fill.fee;
        let (cost_share, entry_fee_share) = if quantity == position.quantity {
            (position.cost, position.entry_fees)
        } else {
            (
                (position.cost * quantity / position.quantity).round_dp(SCALE),
                (position.entry_fees * quantity / position.quantity).round_dp(SCALE),
            )
        };
        let gross = position.side.sign() * (notional - cost_share);
        self.realized_pnl += gross;
        position.cost -= cost_share;
        position.entry_fees -= entry_fee_share;
        position.quantity -= quantity;
        position.current_price = fill.price;

        let fees = entry_fee_share + fill.fee;
        let net = gross - fees;
        let size_usd = cost_share;
        let pnl_pct = if size_usd.is_zero() {
            Decimal::ZERO
        } else {
            (net / size_usd * Decimal::ONE_HUNDRED).round_dp(4)
        };
        let entry = LedgerEntry {
            id: ledger_id,
            position_id: position.id.clone(),
            broker: position.broker.clone(),
            symbol: position.symbol.clone(),
            side: position.side.closing_order(),
            action: LedgerAction::Close,
            quantity,
            price: fill.price,
            notional,
            fee: fill.fee,
            realized_pnl: gross,
            entry_fee: entry_fee_share,
            cash_after: self.cash,
            at_ms: fill.at_ms,
        };
        let trade = CompletedTrade {
            id: trade_id,
            position_id: position.id.clone(),
            broker: position.broker.clone(),
            strategy: position.strategy.clone(),
            symbol: position.symbol.clone(),
            side: position.side,
            quantity,
            entry_price: position.entry_price,
            exit_price: fill.price,
            size_usd,
            gross_pnl: gross,
            fees,
            entry_fee: entry_fee_share,
            net_pnl: net,
            pnl_pct,
            exit_reason: exit_reason.to_string(),
            opened_at_ms: position.opened_at_ms,
            closed_at_ms: fill.at_ms,
            duration_minutes: (fill.at_ms - position.opened_at_ms).max(0) / 60_000,
        };
        (entry, trade)
    }
}

/// The completed trade of one closing order: its closing ledger rows (one per fill) taken
/// together. Exit price and entry price are averages; profit and fees are exact sums.
pub fn trade_of_closes(
    id: String,
    exit_reason: &str,
    position: &Position,
    closes: &[LedgerEntry],
) -> Option<CompletedTrade> {
    let (side, opened_at_ms) = (position.side, position.opened_at_ms);
    let first = closes.first()?;
    let quantity: Decimal = closes.iter().map(|e| e.quantity).sum();
    if quantity.is_zero() {
        return None;
    }
    let exit_value: Decimal = closes.iter().map(|e| e.notional).sum();
    let gross: Decimal = closes.iter().map(|e| e.realized_pnl).sum();
    // gross = sign × (notional − cost share), so the cost the closes took is:
    let size_usd = exit_value - side.sign() * gross;
    let entry_fee: Decimal = closes.iter().map(|e| e.entry_fee).sum();
    let fees = entry_fee + closes.iter().map(|e| e.fee).sum::<Decimal>();
    let net = gross - fees;
    let closed_at_ms = closes.iter().map(|e| e.at_ms).max().unwrap_or(first.at_ms);
    Some(CompletedTrade {
        id,
        position_id: first.position_id.clone(),
        broker: first.broker.clone(),
        strategy: position.strategy.clone(),
        symbol: first.symbol.clone(),
        side,
        quantity,
        entry_price: (size_usd / quantity).round_dp(SCALE),
        exit_price: (exit_value / quantity).round_dp(SCALE),
        size_usd,
        gross_pnl: gross,
        fees,
        entry_fee,
        net_pnl: net,
        pnl_pct: if size_usd.is_zero() {
            Decimal::ZERO
        } else {
            (net / size_usd * Decimal::ONE_HUNDRED).round_dp(4)
        },
        exit_reason: exit_reason.to_string(),
        opened_at_ms,
        closed_at_ms,
        duration_minutes: (closed_at_ms - opened_at_ms).max(0) / 60_000,
    })
}

/// Cash plus the marked value of every position (shorts count as what is owed).
pub fn equity(account: &Account, positions: &[Position]) -> Decimal {
    account.cash
        + positions
            .iter()
            .map(|p| p.side.sign() * p.market_value())
            .sum::<Decimal>()
}

pub fn unrealized_pnl(positions: &[Position]) -> Decimal {
    positions.iter().map(Position::unrealized_pnl).sum()
}

/// Gross exposure at the marks.
pub fn exposure(positions: &[Position]) -> Decimal {
    positions.iter().map(Position::market_value).sum()
}

/// What is free for new positions on an unlevered account: equity less what is already exposed.
pub fn buying_power(account: &Account, positions: &[Position]) -> Decimal {
    (equity(account, positions) - exposure(positions)).max(Decimal::ZERO)
}

/// A plugin's or broker's f64 as an exact decimal at [`SCALE`]; `None` for NaN or infinity.
pub fn decimal(value: f64) -> Option<Decimal> {
    Decimal::from_f64(value).map(|d| d.round_dp(SCALE))
}

/// A decimal for JSON and statistics: the `f64` rust_decimal's `to_f64` gives, to the bit.
///
/// A mantissa that fits 64 bits (every booked figure does) takes the same steps in 64-bit
/// integers; rust_decimal divides in 128 bits, which was most of a conversion's cost.
pub fn float(value: Decimal) -> f64 {
    let scale = value.scale();
    let magnitude = value.mantissa().unsigned_abs();
    let Ok(mantissa) = u64::try_from(magnitude) else {
        return value.to_f64().unwrap_or(0.0);
    };
    if scale > 19 {
        return value.to_f64().unwrap_or(0.0);
    }
    let negative = value.is_sign_negative();
    if scale == 0 {
        // An integer converts alike from either width; zero is +0 whatever its sign.
        let integer = mantissa as f64;
        return if negative && mantissa != 0 {
            -integer
        } else {
            integer
        };
    }
    let precision = 10_u64.pow(scale);
    let integral = (mantissa / precision) as f64;
    let fraction = (mantissa % precision) as f64 / precision as f64;
    let value = if fraction == 0.0 {
        integral
    } else {
        let round_to = 10f64.powi(scale as i32);
        ((integral + fraction) * round_to).round() / round_to
    };
    if negative { -value } else { value }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    fn open(account: &mut Account, id: &str, side: Side, fill: Fill) -> (Position, LedgerEntry) {
        account.open(
            OpenRequest {
                position_id: id.into(),
                ledger_id: format!("{id}-open"),
                broker: "paper",
                strategy: "ema-cross",
                symbol: "BTC-USD",
                side,
                stop_loss: None,
                take_profit: None,
                trail_pct: None,
            },
            fill,
        )
    }

    fn fill(quantity: &str, price: &str, fee: &str, at_ms: i64) -> Fill {
        Fill {
            quantity: d(quantity),
            price: d(price),
            fee: d(fee),
            at_ms,
        }
    }

    #[test]
    fn a_long_round_trip_by_hand() {
        let mut account = Account::new(d("10000"), "USD");
        let (mut position, entry) =
            open(&mut account, "p", Side::Long, fill("0.5", "100", "0.05", 0));
        assert_eq!(account.cash, d("9949.95"));
        assert_eq!(entry.notional, d("50"));
        let (exit, trade) = account.close(
            &mut position,
            fill("0.5", "110", "0.055", 600_000),
            "take_profit",
            "l2".into(),
            "t".into(),
        );
        assert_eq!(account.cash, d("10004.895"));
        assert_eq!(exit.realized_pnl, d("5"));
        assert_eq!(trade.fees, d("0.105"));
        assert_eq!(trade.net_pnl, d("4.895"));
        assert_eq!(trade.pnl_pct, d("9.79"));
        assert_eq!(trade.duration_minutes, 10);
        assert!(position.quantity.is_zero());
    }

    #[test]
    fn a_short_gains_when_the_price_falls() {
        let mut account = Account::new(d("1000"), "USD");
        let (mut position, _) = open(&mut account, "p", Side::Short, fill("2", "50", "0.1", 0));
        assert_eq!(account.cash, d("1099.9"));
        position.mark(d("40"));
        assert_eq!(position.unrealized_pnl(), d("20"));
        assert_eq!(equity(&account, &[position.clone()]), d("1019.9"));
        assert_eq!(position.extreme_price, d("40"));
        let (_, trade) = account.close(
            &mut position,
            fill("2", "40", "0.08", 1),
            "signal",
            "l".into(),
            "t".into(),
        );
        assert_eq!(trade.gross_pnl, d("20"));
        assert_eq!(trade.net_pnl, d("19.82"));
        assert_eq!(account.cash, d("1019.82"));
    }

    #[test]
    fn partial_closes_allocate_the_entry_fee_exactly() {
        let mut account = Account::new(d("1000"), "USD");
        let (mut position, _) = open(&mut account, "p", Side::Long, fill("3", "10", "0.1", 0));
        let (_, first) = account.close(
            &mut position,
            fill("1", "10", "0", 1),
            "manual",
            "a".into(),
            "b".into(),
        );
        let (_, second) = account.close(
            &mut position,
            fill("2", "10", "0", 2),
            "manual",
            "c".into(),
            "d".into(),
        );
        assert_eq!(first.fees, d("0.03333333"));
        assert_eq!(first.fees + second.fees, d("0.1"));
        assert!(position.quantity.is_zero() && position.entry_fees.is_zero());
    }

    #[test]
    fn a_position_filled_in_parts_is_as_exact_as_one_filled_at_once() {
        let mut account = Account::new(d("1000"), "USD");
        let (mut position, _) = open(&mut account, "p", Side::Long, fill("1", "10", "0.01", 0));
        account.add(&mut position, fill("2", "10.01", "0.02", 1), "l2".into());
        account.add(&mut position, fill("0.5", "9.99", "0.005", 2), "l3".into());
        assert_eq!(position.quantity, d("3.5"));
        assert_eq!(position.cost, d("35.015"));
        assert_eq!(position.entry_price, d("10.00428571"));
        assert_eq!(position.entry_fees, d("0.035"));
        assert_eq!(account.cash, d("1000") - d("35.015") - d("0.035"));
        position.mark(d("11"));
        assert_eq!(position.unrealized_pnl(), d("3.485"));
        // Closed in two fills: one trade with the exact profit.
        let (first, _) = account.close(
            &mut position,
            fill("1.5", "11", "0.0165", 3),
            "take_profit",
            "c1".into(),
            "s1".into(),
        );
        let (second, _) = account.close(
            &mut position,
            fill("2", "11.1", "0.0222", 4),
            "take_profit",
            "c2".into(),
            "s2".into(),
        );
        assert!(
            position.quantity.is_zero() && position.cost.is_zero() && position.entry_fees.is_zero()
        );
        let trade =
            trade_of_closes("t".into(), "take_profit", &position, &[first, second]).unwrap();
        assert_eq!(trade.quantity, d("3.5"));
        assert_eq!(trade.size_usd, d("35.015"));
        assert_eq!(trade.gross_pnl, d("3.685"));
        assert_eq!(trade.fees, d("0.035") + d("0.0165") + d("0.0222"));
        assert_eq!(trade.net_pnl, trade.gross_pnl - trade.fees);
        assert_eq!(trade.exit_price, d("11.05714286"));
        assert_eq!(trade.gross_pnl, account.realized_pnl);
        assert_eq!(account.cash, d("1000") + trade.net_pnl);
        assert_eq!(trade.closed_at_ms, 4);
        assert_eq!(trade.strategy, "ema-cross");
    }

    #[derive(Debug, Clone)]
    enum Step {
        Open {
            long: bool,
            quantity: u32,
            price: u32,
            fee: u32,
        },
        Close {
            index: usize,
            fraction: u8,
            price: u32,
            fee: u32,
        },
        Add {
            index: usize,
            quantity: u32,
            price: u32,
            fee: u32,
        },
        Mark {
            price: u32,
        },
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (
                any::<bool>(),
                1u32..5_000_000,
                1u32..10_000_000,
                0u32..100_000
            )
                .prop_map(|(long, quantity, price, fee)| Step::Open {
                    long,
                    quantity,
                    price,
                    fee
                }),
            (any::<usize>(), 1u8..=4, 1u32..10_000_000, 0u32..100_000).prop_map(
                |(index, fraction, price, fee)| Step::Close {
                    index,
                    fraction,
                    price,
                    fee
                }
            ),
            (
                any::<usize>(),
                1u32..5_000_000,
                1u32..10_000_000,
                0u32..100_000
            )
                .prop_map(|(index, quantity, price, fee)| Step::Add {
                    index,
                    quantity,
                    price,
                    fee
                }),
            (1u32..10_000_000).prop_map(|price| Step::Mark { price }),
        ]
    }

    /// Integers scaled to 8, 2 and 4 decimal places: quantities, prices and fees as the engine
    /// gets them after rounding.
    fn scaled(value: u32, scale: u32) -> Decimal {
        Decimal::new(value as i64, scale)
    }

    #[test]
    fn float_keeps_the_sign_rust_decimal_gives_a_zero() {
        for scale in [0, 1, 8, 19, 20, 28] {
            let zero = Decimal::from_i128_with_scale(0, scale);
            for value in [zero, -zero] {
                assert_eq!(float(value).to_bits(), value.to_f64().unwrap().to_bits());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]
        #[test]
        fn float_is_rust_decimals_conversion_to_the_bit(
            mantissa in prop_oneof![
                any::<i64>().prop_map(i128::from),
                (-(1_i128 << 95)..(1_i128 << 95)),
                (-1_000_000_000_i128..1_000_000_000),
            ],
            scale in 0_u32..=28,
        ) {
            let value = Decimal::from_i128_with_scale(mantissa, scale);
            prop_assert_eq!(float(value).to_bits(), value.to_f64().unwrap().to_bits());
            prop_assert_eq!(float(-value).to_bits(), (-value).to_f64().unwrap().to_bits());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn books_balance_after_any_sequence_of_fills(steps in prop::collection::vec(step(), 1..120)) {
            let initial = d("100000");
            let mut account = Account::new(initial, "USD");
            let mut open_positions: Vec<Position> = Vec::new();
            let mut ledger: Vec<LedgerEntry> = Vec::new();
            let mut trades: Vec<CompletedTrade> = Vec::new();
            let mut fees_by_position = std::collections::HashMap::<String, Decimal>::new();
            for (n, step) in steps.into_iter().enumerate() {
                let at = n as i64 * 60_000;
                match step {
                    Step::Open { long, quantity, price, fee } => {
                        let side = if long { Side::Long } else { Side::Short };
                        let fill = Fill { quantity: scaled(quantity, 6), price: scaled(price, 2), fee: scaled(fee, 4), at_ms: at };
                        let (position, entry) = open(&mut account, &format!("p{n}"), side, fill);
                        fees_by_position.insert(position.id.clone(), fill.fee);
                        open_positions.push(position);
                        ledger.push(entry);
                    }
                    Step::Close { index, fraction, price, fee } => {
                        if open_positions.is_empty() { continue; }
                        let i = index % open_positions.len();
                        let quantity = if fraction == 4 {
                            open_positions[i].quantity
                        } else {
                            (open_positions[i].quantity * Decimal::from(fraction) / Decimal::from(4)).round_dp(SCALE)
                        };
                        if quantity.is_zero() { continue; }
                        let fill = Fill { quantity, price: scaled(price, 2), fee: scaled(fee, 4), at_ms: at };
                        let (entry, trade) = account.close(&mut open_positions[i], fill, "signal", format!("l{n}"), format!("t{n}"));
                        *fees_by_position.get_mut(&trade.position_id).unwrap() += fill.fee;
                        ledger.push(entry);
                        trades.push(trade);
                        if open_positions[i].quantity.is_zero() {
                            let closed = open_positions.remove(i);
                            // A closed position's trades carry exactly the fees it paid.
                            let charged: Decimal = trades.iter().filter(|t| t.position_id == closed.id).map(|t| t.fees).sum();
                            prop_assert_eq!(charged, fees_by_position[&closed.id]);
                        }
                    }
                    Step::Add { index, quantity, price, fee } => {
                        if open_positions.is_empty() { continue; }
                        let i = index % open_positions.len();
                        let fill = Fill { quantity: scaled(quantity, 6), price: scaled(price, 2), fee: scaled(fee, 4), at_ms: at };
                        let entry = account.add(&mut open_positions[i], fill, format!("a{n}"));
                        *fees_by_position.get_mut(&entry.position_id).unwrap() += fill.fee;
                        ledger.push(entry);
                    }
                    Step::Mark { price } => {
                        for position in &mut open_positions { position.mark(scaled(price, 2)); }
                    }
                }
                // cash + marked positions = initial + realized + unrealized − fees, exactly.
                let left = equity(&account, &open_positions);
                let right = initial + account.realized_pnl + unrealized_pnl(&open_positions) - account.fees_paid;
                prop_assert_eq!(left, right);
                // Realized and net figures agree between the account and the trades.
                let gross: Decimal = trades.iter().map(|t| t.gross_pnl).sum();
                prop_assert_eq!(gross, account.realized_pnl);
                // Every open position is the sum of its ledger rows.
                for position in &open_positions {
                    let from_ledger: Decimal = ledger.iter().filter(|e| e.position_id == position.id).map(|e| match e.action {
                        LedgerAction::Open => e.quantity,
                        LedgerAction::Close => -e.quantity,
                    }).sum();
                    prop_assert_eq!(from_ledger, position.quantity);
                }
                // The last ledger row's running cash is the account's cash.
                if let Some(last) = ledger.last() { prop_assert_eq!(last.cash_after, account.cash); }
            }
        }
    }
}
