//! The companion route sets (docs/companion.md): the unversioned backend (A), the mobile gateway
//! (B) and the graceful restart (C) as adapters over the platform's own domain modules. The
//! ledger (D) is [`crate::ledger`]; the dashboard and KPI sets (E, F) are [`crate::performance`].

pub mod backend;
pub mod gateway;
pub mod restart;
pub mod safety;

/// Win and loss totals of closed trades (a winner has net profit > 0).
#[derive(Debug, Default, Clone, Copy)]
pub struct TradeTotals {
    pub total: u64,
    pub winners: u64,
    pub losers: u64,
    /// Sum of net profits.
    pub net: f64,
    /// Sum of the winners' net profits.
    pub profit: f64,
    /// Sum of the losers' net losses, as a positive number.
    pub loss: f64,
}

impl TradeTotals {
    /// From the net profit of each closed trade.
    pub fn of(nets: impl IntoIterator<Item = f64>) -> Self {
        let mut totals = Self::default();
        for net in nets {
            totals.total += 1;
            totals.net += net;
            if net > 0.0 {
                totals.winners += 1;
                totals.profit += net;
            } else if net < 0.0 {
                totals.losers += 1;
                totals.loss -= net;
            }
        }
        totals.net = round2(totals.net);
        totals.profit = round2(totals.profit);
        totals.loss = round2(totals.loss);
        totals
    }

    /// Winners in percent of closed trades (0 without trades).
    pub fn win_rate_pct(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            round2(self.winners as f64 * 100.0 / self.total as f64)
        }
    }
}

/// Rounds a display figure to cents (percentages to hundredths).
pub fn round2(x: f64) -> f64 {
    if x.is_finite() {
        // `+ 0.0` turns a rounded -0.0 into 0.0.
        (x * 100.0).round() / 100.0 + 0.0
    } else {
        0.0
    }
}
