//! Exact accounting of fills: cash, positions, ledger rows and completed trades.
//!
//! Money and quantities are `rust_decimal::Decimal` (28 significant digits, no binary rounding):
//! prices, quantities and fees enter rounded to [`SCALE`] decimal places, and every later figure
//! is a sum or product of those, so nothing drifts. The one division (allocating a position's
//! entry fee across partial closes) rounds, and the remainder stays with the position, so the
//! fees of a position's trades always add up to what was paid.
//!
//! The invariant the property test checks after any sequence of fills:
//! `cash + Σ signed quantity × mark = initial capital + realized + unrealized − fees`,
//! and every position's quantity equals the sum of its ledger rows.

use rust_decimal::Decimal;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use serde::Serialize;

/// Decimal places kept for prices, quantities and money.
pub const SCALE: u32 = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
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
    pub symbol: String,
    pub side: Side,
    pub quantity: Decimal,
    pub entry_price: Decimal,
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
}

impl Position {
    pub fn unrealized_pnl(&self) -> Decimal {
        self.side.sign() * (self.current_price - self.entry_price) * self.quantity
    }

    pub fn cost_basis(&self) -> Decimal {
        self.entry_price * self.quantity
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
    pub cash_after: Decimal,
    pub at_ms: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CompletedTrade {
    pub id: String,
    pub position_id: String,
    pub broker: String,
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
        let notional = fill.quantity * fill.price;
        self.cash += match request.side {
            Side::Long => -notional,
            Side::Short => notional,
        } - fill.fee;
        self.fees_paid += fill.fee;
        let position = Position {
            id: request.position_id,
            broker: request.broker.to_string(),
            symbol: request.symbol.to_string(),
            side: request.side,
            quantity: fill.quantity,
            entry_price: fill.price,
            entry_fees: fill.fee,
            stop_loss: request.stop_loss,
            take_profit: request.take_profit,
            trail_pct: request.trail_pct,
            extreme_price: fill.price,
            current_price: fill.price,
            opened_at_ms: fill.at_ms,
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
            cash_after: self.cash,
            at_ms: fill.at_ms,
        };
        (position, entry)
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
        let notional = quantity * fill.price;
        self.cash += match position.side {
            Side::Long => notional,
            Side::Short => -notional,
        } - fill.fee;
        self.fees_paid += fill.fee;
        let gross = position.side.sign() * (fill.price - position.entry_price) * quantity;
        self.realized_pnl += gross;

        let entry_fee_share = if quantity == position.quantity {
            position.entry_fees
        } else {
            (position.entry_fees * quantity / position.quantity).round_dp(SCALE)
        };
        position.entry_fees -= entry_fee_share;
        position.quantity -= quantity;
        position.current_price = fill.price;

        let fees = entry_fee_share + fill.fee;
        let net = gross - fees;
        let size_usd = position.entry_price * quantity;
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
            cash_after: self.cash,
            at_ms: fill.at_ms,
        };
        let trade = CompletedTrade {
            id: trade_id,
            position_id: position.id.clone(),
            broker: position.broker.clone(),
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

/// A decimal for JSON and statistics.
pub fn float(value: Decimal) -> f64 {
    value.to_f64().unwrap_or(0.0)
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
            (1u32..10_000_000).prop_map(|price| Step::Mark { price }),
        ]
    }

    /// Integers scaled to 8, 2 and 4 decimal places: quantities, prices and fees as the engine
    /// gets them after rounding.
    fn scaled(value: u32, scale: u32) -> Decimal {
        Decimal::new(value as i64, scale)
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
