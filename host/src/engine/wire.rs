//! The engine's state as plugins see it: positions, the account and the risk thresholds in the
//! plugin worlds' types (market figures as f64, as the worlds carry them).

use super::accounting::{self, Position, Side, float};
use super::trader::Trader;
use crate::plugins::bindings::types::{self as wire, Threshold};
use crate::settings::Settings;

/// The thresholds handed to risk rules: the user's settings, and their position limit.
pub fn thresholds(settings: &Settings, max_positions: u32) -> Vec<Threshold> {
    settings
        .risk_thresholds
        .iter()
        .map(|(name, value)| Threshold {
            name: name.clone(),
            value: *value,
        })
        .chain(std::iter::once(Threshold {
            name: "max_concurrent_positions".into(),
            value: max_positions as f64,
        }))
        .collect()
}

/// A position's side.
pub fn wire_side(side: Side) -> wire::Side {
    match side {
        Side::Long => wire::Side::Long,
        Side::Short => wire::Side::Short,
    }
}

/// Open positions, at their marks.
pub fn wire_positions(positions: &[Position]) -> Vec<wire::Position> {
    positions
        .iter()
        .map(|p| wire::Position {
            position_id: p.id.clone(),
            symbol: p.symbol.clone(),
            side: wire_side(p.side),
            quantity: float(p.quantity),
            entry_price: float(p.entry_price),
            current_price: float(p.current_price),
            stop_loss: p.stop_loss.map(float),
            take_profit: p.take_profit.map(float),
            opened_at_ms: p.opened_at_ms,
        })
        .collect()
}

/// The account's cash, equity and buying power.
pub fn wire_account(trader: &Trader) -> wire::Account {
    wire::Account {
        cash: float(trader.account.cash),
        equity: float(trader.equity()),
        buying_power: float(accounting::buying_power(&trader.account, &trader.positions)),
        currency: trader.account.currency.clone(),
    }
}
