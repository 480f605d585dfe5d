//! Running totals of an account's completed trades: counts, exact sums, the best and worst
//! trade and the current streak. They are kept in the transaction that books each trade
//! (`store::totals`), so the figures built on them read one row instead of summing the history,
//! and they are computed here only, so every route that shows them agrees.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, NaiveDate};
use rust_decimal::Decimal;

use super::accounting::{CompletedTrade, SCALE};
use super::metrics::Streak;
use super::trader::DAY_MS;

/// A winner has net profit above zero, a loser below; a flat trade is neither and ends a streak.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountTotals {
    /// Counts and profit sums: what a window of the trades has as well.
    pub sums: Sums,
    pub fees: Decimal,
    /// Notional traded: each trade's entry size plus its exit value.
    pub volume: Decimal,
    pub best_trade: Option<Decimal>,
    pub worst_trade: Option<Decimal>,
    /// Trades in a row at the end with the same result: positive for winners, negative for
    /// losers, zero after a flat trade or before any trade.
    pub streak: i64,
    /// When the first trade of the current streak closed.
    pub streak_started_at: Option<i64>,
    pub longest_win_streak: u64,
    pub longest_loss_streak: u64,
    /// Time the trades were held, summed (for the average hold).
    pub hold_ms: i64,
    pub first_closed_at: Option<i64>,
    pub last_closed_at: Option<i64>,
}

/// The counts and sums of a group of completed trades, without runs or extremes: what the
/// database adds up over a window of an account's trades, and part of its running totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums {
    pub trades: u64,
    pub winners: u64,
    pub losers: u64,
    /// Sum of net profits (after fees).
    pub net_pnl: Decimal,
    /// The winners' net profit.
    pub profit: Decimal,
    /// The losers' net loss (zero or negative).
    pub loss: Decimal,
}

impl Sums {
    /// Counts one more trade of net profit `net`: a sign of zero is neither a winner nor a loser.
    fn add(&mut self, net: Decimal) {
        self.trades += 1;
        self.net_pnl += net;
        if net > Decimal::ZERO {
            self.winners += 1;
            self.profit += net;
        } else if net < Decimal::ZERO {
            self.losers += 1;
            self.loss += net;
        }
    }

    fn merge(&mut self, other: &Sums) {
        self.trades += other.trades;
        self.winners += other.winners;
        self.losers += other.losers;
        self.net_pnl += other.net_pnl;
        self.profit += other.profit;
        self.loss += other.loss;
    }

    /// Winners in percent of the trades, to hundredths (0 without trades).
    pub fn win_rate_pct(&self) -> f64 {
        win_rate_pct(self.winners, self.trades)
    }

    /// Winners as a fraction of the trades (0 without trades).
    pub fn win_rate(&self) -> f64 {
        win_rate(self.winners, self.trades)
    }

    /// Net profit of the winners over the losers' net loss (`metrics::profit_factor`: capped, and
    /// the cap when nothing was lost but something won).
    pub fn profit_factor(&self) -> f64 {
        super::metrics::profit_factor(
            super::accounting::float(self.profit),
            super::accounting::float(self.loss),
        )
    }

    /// Mean net profit per trade, to 8 decimal places (none without trades).
    pub fn avg_pnl(&self) -> Option<Decimal> {
        (self.trades > 0).then(|| (self.net_pnl / Decimal::from(self.trades)).round_dp(8))
    }
}

impl AccountTotals {
    /// Counts one more completed trade (trades are added in the order they close).
    pub fn add(&mut self, trade: &CompletedTrade) {
        let net = trade.net_pnl;
        self.sums.add(net);
        self.fees += trade.fees;
        self.volume += trade.size_usd + (trade.exit_price * trade.quantity).round_dp(SCALE);
        self.best_trade = Some(self.best_trade.map_or(net, |best| best.max(net)));
        self.worst_trade = Some(self.worst_trade.map_or(net, |worst| worst.min(net)));
        let sign = i64::from(net > Decimal::ZERO) - i64::from(net < Decimal::ZERO);
        if sign == 0 {
            self.streak = 0;
            self.streak_started_at = None;
        } else if self.streak.signum() == sign {
            self.streak += sign;
        } else {
            self.streak = sign;
            self.streak_started_at = Some(trade.closed_at_ms);
        }
        if self.streak > 0 {
            self.longest_win_streak = self.longest_win_streak.max(self.streak as u64);
        } else {
            self.longest_loss_streak = self.longest_loss_streak.max(self.streak.unsigned_abs());
        }
        self.hold_ms += (trade.closed_at_ms - trade.opened_at_ms).max(0);
        self.first_closed_at.get_or_insert(trade.closed_at_ms);
        self.last_closed_at = Some(trade.closed_at_ms);
    }

    /// The totals of several accounts together (an operator's view of the platform). Streaks
    /// belong to one account and are left out.
    pub fn combine<'a>(accounts: impl IntoIterator<Item = &'a AccountTotals>) -> Self {
        let mut all = Self::default();
        for t in accounts {
            all.sums.merge(&t.sums);
            all.fees += t.fees;
            all.volume += t.volume;
            all.hold_ms += t.hold_ms;
            all.best_trade = max_of(all.best_trade, t.best_trade, Decimal::max);
            all.worst_trade = max_of(all.worst_trade, t.worst_trade, Decimal::min);
            all.first_closed_at = match (all.first_closed_at, t.first_closed_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            all.last_closed_at = all.last_closed_at.max(t.last_closed_at);
        }
        all
    }

    /// The run at the end as the statistics show it.
    pub fn current_streak(&self) -> Streak {
        Streak {
            kind: match self.streak.signum() {
                1 => "win",
                -1 => "loss",
                _ => "none",
            },
            count: self.streak.unsigned_abs(),
            started_ms: self.streak_started_at,
        }
    }

    /// Mean hold of a completed trade in milliseconds (0 without trades).
    pub fn avg_hold_ms(&self) -> f64 {
        if self.sums.trades == 0 {
            0.0
        } else {
            self.hold_ms as f64 / self.sums.trades as f64
        }
    }
}

fn win_rate(winners: u64, trades: u64) -> f64 {
    if trades == 0 {
        0.0
    } else {
        winners as f64 / trades as f64
    }
}

fn win_rate_pct(winners: u64, trades: u64) -> f64 {
    (win_rate(winners, trades) * 10_000.0).round() / 100.0
}

/// Days since 1970-01-01 of a UTC time in milliseconds.
pub fn utc_day(at_ms: i64) -> i64 {
    at_ms.div_euclid(DAY_MS)
}

/// An account's trades of one symbol closed on one UTC day (`store::totals` keeps one row of
/// these per account, day and symbol in the transaction that books each trade), or any other
/// group of trades summed the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub trades: u64,
    pub winners: u64,
    pub losers: u64,
    pub net_pnl: Decimal,
    /// The trades' entry sizes, summed (the base of a group's return).
    pub size_usd: Decimal,
}

impl Tally {
    pub fn add(&mut self, trade: &CompletedTrade) {
        self.trades += 1;
        self.winners += u64::from(trade.net_pnl > Decimal::ZERO);
        self.losers += u64::from(trade.net_pnl < Decimal::ZERO);
        self.net_pnl += trade.net_pnl;
        self.size_usd += trade.size_usd;
    }

    pub fn merge(&mut self, other: &Tally) {
        self.trades += other.trades;
        self.winners += other.winners;
        self.losers += other.losers;
        self.net_pnl += other.net_pnl;
        self.size_usd += other.size_usd;
    }

    /// Winners as a fraction of the trades (0 without trades).
    pub fn win_rate(&self) -> f64 {
        win_rate(self.winners, self.trades)
    }

    /// Winners in percent of the trades, to hundredths (0 without trades).
    pub fn win_rate_pct(&self) -> f64 {
        win_rate_pct(self.winners, self.trades)
    }

    /// Several groups taken together.
    pub fn sum<'a>(tallies: impl IntoIterator<Item = &'a Tally>) -> Tally {
        let mut all = Tally::default();
        for tally in tallies {
            all.merge(tally);
        }
        all
    }
}

/// Per-day totals summed per UTC month (a UTC day lies in one month), keyed by the month's
/// first day.
pub fn monthly(days: &[DayTotals]) -> BTreeMap<NaiveDate, Tally> {
    let mut months: BTreeMap<NaiveDate, Tally> = BTreeMap::new();
    for d in days {
        let first = DateTime::from_timestamp_millis(d.day * DAY_MS)
            .and_then(|at| at.date_naive().with_day(1));
        if let Some(first) = first {
            months.entry(first).or_default().merge(&d.tally);
        }
    }
    months
}

/// One row of an account's per-day totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayTotals {
    /// Days since 1970-01-01 (UTC) of the trades' close.
    pub day: i64,
    pub symbol: String,
    /// The strategy that opened the trades.
    pub strategy: String,
    pub tally: Tally,
}

fn max_of(
    a: Option<Decimal>,
    b: Option<Decimal>,
    pick: fn(Decimal, Decimal) -> Decimal,
) -> Option<Decimal> {
    match (a, b) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

/// A completed BTC-USD trade of `net` profit closed at `closed_at`, for tests.
#[cfg(test)]
pub(crate) fn sample_trade(net: &str, closed_at: i64) -> CompletedTrade {
    use crate::engine::accounting::Side;
    CompletedTrade {
        id: format!("t{closed_at}"),
        position_id: "p".into(),
        broker: "paper".into(),
        strategy: "s".into(),
        symbol: "BTC-USD".into(),
        side: Side::Long,
        quantity: "0.5".parse().unwrap(),
        entry_price: "100".parse().unwrap(),
        exit_price: "110".parse().unwrap(),
        size_usd: "50".parse().unwrap(),
        gross_pnl: net.parse().unwrap(),
        fees: "0.1".parse().unwrap(),
        entry_fee: "0.05".parse().unwrap(),
        net_pnl: net.parse().unwrap(),
        pnl_pct: Decimal::ZERO,
        exit_reason: "signal".into(),
        opened_at_ms: 0,
        closed_at_ms: closed_at,
        duration_minutes: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(nets: &[&str]) -> AccountTotals {
        let mut totals = AccountTotals::default();
        for (i, net) in nets.iter().enumerate() {
            totals.add(&sample_trade(net, i as i64 + 1));
        }
        totals
    }

    #[test]
    fn sums_are_exact_and_results_are_counted_by_sign() {
        let t = totals(&["0.1", "0.2", "-0.3", "0", "1.005"]);
        assert_eq!(t.sums.trades, 5);
        assert_eq!((t.sums.winners, t.sums.losers), (3, 1));
        assert_eq!(t.sums.net_pnl, "1.005".parse::<Decimal>().unwrap());
        assert_eq!(t.sums.profit, "1.305".parse::<Decimal>().unwrap());
        assert_eq!(t.sums.loss, "-0.3".parse::<Decimal>().unwrap());
        assert_eq!(t.fees, "0.5".parse::<Decimal>().unwrap());
        // 50 entry + 0.5 × 110 exit, five times.
        assert_eq!(t.volume, Decimal::from(525));
        assert_eq!(t.best_trade, Some("1.005".parse().unwrap()));
        assert_eq!(t.worst_trade, Some("-0.3".parse().unwrap()));
        assert_eq!(t.sums.win_rate_pct(), 60.0);
        assert!((t.sums.profit_factor() - 1.305 / 0.3).abs() < 1e-12);
        // Winners only: the cap, never 0 (a risk rule on a low profit factor must not fire).
        assert_eq!(
            totals(&["1", "2"]).sums.profit_factor(),
            crate::engine::metrics::PROFIT_FACTOR_CAP
        );
        assert_eq!(totals(&["0"]).sums.profit_factor(), 0.0);
        assert_eq!(t.sums.avg_pnl(), Some("0.201".parse().unwrap()));
    }

    #[test]
    fn the_streak_is_the_run_at_the_end_and_a_flat_trade_ends_it() {
        let cases: [(&[&str], i64, Option<i64>); 6] = [
            (&[], 0, None),
            (&["1", "-1", "-2", "-3"], -3, Some(2)),
            (&["-1", "2", "3"], 2, Some(2)),
            (&["-1", "0"], 0, None),
            (&["1", "0", "1"], 1, Some(3)),
            (&["1", "1", "1", "1"], 4, Some(1)),
        ];
        for (nets, streak, started) in cases {
            let t = totals(nets);
            assert_eq!(
                (t.streak, t.streak_started_at),
                (streak, started),
                "{nets:?}"
            );
            let view = t.current_streak();
            let kind = ["loss", "none", "win"][(streak.signum() + 1) as usize];
            assert_eq!(
                (view.kind, view.count, view.started_ms),
                (kind, streak.unsigned_abs(), started)
            );
        }
    }

    #[test]
    fn longest_runs_and_hold_time_are_kept() {
        // Each trade was opened at 0 and closed at its position (1 ms, 2 ms, ...).
        let t = totals(&["1", "2", "-1", "-1", "-1", "0", "3", "4", "5", "-2"]);
        assert_eq!((t.longest_win_streak, t.longest_loss_streak), (3, 3));
        assert_eq!(t.hold_ms, (1..=10).sum::<i64>());
        assert_eq!(t.avg_hold_ms(), 5.5);
        assert_eq!((t.first_closed_at, t.last_closed_at), (Some(1), Some(10)));
        let winners_only = totals(&["1", "1"]);
        assert_eq!(
            (
                winners_only.longest_win_streak,
                winners_only.longest_loss_streak
            ),
            (2, 0)
        );
    }

    #[test]
    fn a_tally_counts_and_sums_a_group_and_merges_with_another() {
        let mut a = Tally::default();
        for net in ["2", "-1", "0"] {
            a.add(&sample_trade(net, 1));
        }
        assert_eq!((a.trades, a.winners, a.losers), (3, 1, 1));
        assert_eq!(a.net_pnl, Decimal::ONE);
        assert_eq!(a.size_usd, Decimal::from(150));
        let mut b = Tally::default();
        b.add(&sample_trade("5", 2));
        assert_eq!(Tally::sum([&a, &b]).net_pnl, Decimal::from(6));
        a.merge(&b);
        assert_eq!((a.trades, a.winners), (4, 2));
        assert_eq!(a.win_rate(), 0.5);
        assert_eq!(Tally::default().win_rate(), 0.0);
        assert_eq!(utc_day(-1), -1);
        // 2024-01-31 and 2024-02-01 (days 19753, 19754) fall in two months.
        let day = |day: i64, net: i64| DayTotals {
            day,
            symbol: "X".into(),
            strategy: "s".into(),
            tally: Tally {
                net_pnl: Decimal::from(net),
                ..Tally::default()
            },
        };
        let months = monthly(&[day(19753, 1), day(19754, 2), day(19755, 3)]);
        let first = |m: u32| NaiveDate::from_ymd_opt(2024, m, 1).unwrap();
        assert_eq!(
            months
                .into_iter()
                .map(|(month, tally)| (month, tally.net_pnl))
                .collect::<Vec<_>>(),
            [(first(1), Decimal::ONE), (first(2), Decimal::from(5))]
        );
        assert_eq!(utc_day(DAY_MS), 1);
    }

    #[test]
    fn no_trades_means_no_rates_and_combined_accounts_add_up() {
        let none = AccountTotals::default();
        assert_eq!(none.sums.win_rate_pct(), 0.0);
        assert_eq!(none.sums.avg_pnl(), None);
        let a = totals(&["2", "-1"]);
        let b = totals(&["5"]);
        let all = AccountTotals::combine([&a, &b, &none]);
        assert_eq!(
            (all.sums.trades, all.sums.winners, all.sums.losers),
            (3, 2, 1)
        );
        assert_eq!(all.sums.net_pnl, Decimal::from(6));
        assert_eq!(all.best_trade, Some(Decimal::from(5)));
        assert_eq!(all.worst_trade, Some(Decimal::from(-1)));
        assert_eq!(all.streak, 0);
    }
}
