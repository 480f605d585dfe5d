//! Performance / KPI figures for the trading API, computed in one place.
//!
//! Every public function returns finite numbers only: a figure that is
//! undefined (empty input, zero denominator, overflow) is reported as 0.0 so it
//! serialises to JSON and never poisons arithmetic downstream.

use std::collections::BTreeMap;

use chrono::{DateTime, Months, NaiveDate};
use serde::{Deserialize, Serialize};
use statrs::statistics::Statistics;

const MS_PER_DAY: f64 = 86_400_000.0;
const MS_PER_MINUTE: f64 = 60_000.0;
/// Trading days per year used to annualise daily Sharpe / Sortino.
const TRADING_DAYS: f64 = 252.0;
/// Annual risk-free rate subtracted (per day) from returns in Sharpe / Sortino.
const RISK_FREE_RATE: f64 = 0.02;
/// A deviation below this is float noise from constant returns, not risk:
/// dividing by it would report an absurd ratio, so the ratio is 0.
const MIN_DEVIATION: f64 = 1e-12;
/// Profit factor reported when there are wins but no losses (and the ceiling
/// of any ratio): infinity cannot be sent as JSON.
pub const PROFIT_FACTOR_CAP: f64 = 999.99;
/// Ceiling of the annualised return, in percent: compounding a short lucky
/// window over a year overflows quickly and the figure means nothing beyond this.
pub const ANNUAL_RETURN_CAP_PCT: f64 = 1_000_000.0;

/// One closed trade; amounts in account currency (USD).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosedTrade {
    pub net_pnl: f64,
    pub gross_pnl: f64,
    pub fees: f64,
    pub size_usd: f64,
    pub opened_at_ms: i64,
    pub closed_at_ms: i64,
}

/// One account equity snapshot; series are in ascending time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EquityPoint {
    pub at_ms: i64,
    pub equity: f64,
}

/// The figures of the performance endpoint, all finite. `win_rate` is a
/// fraction (0..1); losses and drawdowns are negative numbers (or 0);
/// `total_pnl` is the gross sum, `net_pnl` the net one.
#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PerformanceMetrics {
    pub total_trades: u64,
    pub winning_trades: u64,
    pub losing_trades: u64,
    pub win_rate: f64,
    pub total_pnl: f64,
    pub total_pnl_pct: f64,
    pub avg_win: f64,
    pub avg_loss: f64,
    pub largest_win: f64,
    pub largest_loss: f64,
    pub profit_factor: f64,
    pub sharpe_ratio: f64,
    pub max_drawdown: f64,
    pub max_drawdown_pct: f64,
    pub recovery_time_days: f64,
    pub avg_trade_duration_minutes: f64,
    pub total_fees: f64,
    pub net_pnl: f64,
}

/// Drawdown figures of an equity series; falls are negative numbers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Drawdown {
    /// Largest peak-to-trough fall in currency (≤ 0).
    pub max_drawdown: f64,
    /// Largest peak-to-trough fall in percent of its peak (≤ 0). Chosen
    /// independently of `max_drawdown`: after growth, a small early percentage
    /// fall can be the largest one while a later fall is larger in currency.
    pub max_drawdown_pct: f64,
    /// Fall of the last point below the running peak, in percent (≤ 0).
    pub current_drawdown_pct: f64,
    /// Highest equity of the series.
    pub peak: f64,
    /// Days from the trough of `max_drawdown` to the first later point at or
    /// above its peak; to the last point if not recovered yet; 0 without a fall.
    pub recovery_time_days: f64,
    /// When the fall of `max_drawdown_pct` started (its peak) and reached bottom (its trough).
    #[serde(skip)]
    pub max_drawdown_pct_window: Option<(i64, i64)>,
}

/// The current run of winners or losers at the end of the trade list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Streak {
    /// "win", "loss" or "none".
    pub kind: &'static str,
    pub count: u64,
    /// Close time of the first trade of the run: a trade only counts as a win
    /// or loss once it is closed.
    pub started_ms: Option<i64>,
}

/// Net pnl of one calendar month (UTC).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MonthlyPnl {
    /// "YYYY-MM".
    pub month: String,
    pub pnl: f64,
    pub pnl_pct: f64,
}

/// 0.0 for NaN or ±infinity, `x` otherwise: the guard on every output.
pub fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// `a / b`, or 0.0 when undefined (zero denominator, overflow).
fn div(a: f64, b: f64) -> f64 {
    finite(a / b)
}

fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn utc_date(ms: i64) -> Option<NaiveDate> {
    DateTime::from_timestamp_millis(ms).map(|d| d.date_naive())
}

fn days_between(from_ms: i64, to_ms: i64) -> f64 {
    to_ms.saturating_sub(from_ms) as f64 / MS_PER_DAY
}

/// `part` in percent of `base`; 0 when the base is ≤ 0, where a percentage
/// of it means nothing.
fn pct_of(part: f64, base: f64) -> f64 {
    if positive(base) {
        div(part * 100.0, base)
    } else {
        0.0
    }
}

/// Every figure of the performance endpoint. Sharpe is computed from the
/// daily closes of `equity`; `total_pnl_pct` is 0 when `initial_capital` ≤ 0.
pub fn performance(
    trades: &[ClosedTrade],
    equity: &[EquityPoint],
    initial_capital: f64,
) -> PerformanceMetrics {
    let mut m = PerformanceMetrics {
        total_trades: trades.len() as u64,
        ..PerformanceMetrics::default()
    };
    let (mut wins, mut losses, mut minutes) = (0.0, 0.0, 0.0);
    for t in trades {
        m.total_pnl += t.gross_pnl;
        m.net_pnl += t.net_pnl;
        m.total_fees += t.fees;
        minutes += t.closed_at_ms.saturating_sub(t.opened_at_ms) as f64 / MS_PER_MINUTE;
        if t.net_pnl > 0.0 {
            m.winning_trades += 1;
            wins += t.net_pnl;
            m.largest_win = m.largest_win.max(t.net_pnl);
        } else if t.net_pnl < 0.0 {
            m.losing_trades += 1;
            losses += t.net_pnl;
            m.largest_loss = m.largest_loss.min(t.net_pnl);
        }
    }
    let total = m.total_trades as f64;
    m.win_rate = div(m.winning_trades as f64, total);
    m.total_pnl = finite(m.total_pnl);
    m.net_pnl = finite(m.net_pnl);
    m.total_fees = finite(m.total_fees);
    m.total_pnl_pct = pct_of(m.net_pnl, initial_capital);
    m.avg_win = div(wins, m.winning_trades as f64);
    m.avg_loss = div(losses, m.losing_trades as f64);
    m.largest_win = finite(m.largest_win);
    m.largest_loss = finite(m.largest_loss);
    m.profit_factor = profit_factor(wins, losses);
    m.avg_trade_duration_minutes = div(minutes, total);

    m.sharpe_ratio = sharpe(&daily_returns(&daily_close(equity)));
    let dd = drawdown(equity);
    m.max_drawdown = dd.max_drawdown;
    m.max_drawdown_pct = dd.max_drawdown_pct;
    m.recovery_time_days = dd.recovery_time_days;
    m
}

/// Sum of net wins over |sum of net losses|. Without losses it is
/// [`PROFIT_FACTOR_CAP`] if anything was won (unbounded, but JSON has no
/// infinity) and 0 otherwise; every ratio is capped there too.
pub fn profit_factor(gross_wins: f64, gross_losses: f64) -> f64 {
    if gross_losses < 0.0 {
        div(gross_wins, -gross_losses).min(PROFIT_FACTOR_CAP)
    } else if gross_wins > 0.0 {
        PROFIT_FACTOR_CAP
    } else {
        0.0
    }
}

/// Last equity of each UTC day, ascending. Points with a non-finite equity or
/// a time chrono cannot represent are skipped.
pub fn daily_close(equity: &[EquityPoint]) -> Vec<(NaiveDate, f64)> {
    let mut by_day: BTreeMap<NaiveDate, (i64, f64)> = BTreeMap::new();
    for p in equity.iter().filter(|p| p.equity.is_finite()) {
        let Some(day) = utc_date(p.at_ms) else {
            continue;
        };
        let slot = by_day.entry(day).or_insert((p.at_ms, p.equity));
        if p.at_ms >= slot.0 {
            *slot = (p.at_ms, p.equity);
        }
    }
    by_day.into_iter().map(|(d, (_, e))| (d, e)).collect()
}

/// Simple decimal returns between consecutive days. A pair whose previous
/// value is ≤ 0 is skipped: a return on nothing is undefined.
pub fn daily_returns(daily: &[(NaiveDate, f64)]) -> Vec<f64> {
    daily
        .windows(2)
        .filter(|w| positive(w[0].1))
        .map(|w| w[1].1 / w[0].1 - 1.0)
        .filter(|r| r.is_finite())
        .collect()
}

/// Sum of net pnl by UTC close day, ascending, only days with trades.
pub fn daily_pnl(trades: &[ClosedTrade]) -> Vec<(NaiveDate, f64)> {
    let mut by_day: BTreeMap<NaiveDate, f64> = BTreeMap::new();
    for t in trades {
        if let Some(day) = utc_date(t.closed_at_ms) {
            *by_day.entry(day).or_default() += t.net_pnl;
        }
    }
    by_day.into_iter().map(|(d, p)| (d, finite(p))).collect()
}

fn excess_returns(returns: &[f64]) -> Vec<f64> {
    let daily_rf = RISK_FREE_RATE / TRADING_DAYS;
    returns.iter().map(|r| r - daily_rf).collect()
}

/// `mean / deviation × √252`, 0 when the deviation is (numerically) 0 or not
/// finite: no measured risk means no meaningful ratio.
fn annualised_ratio(mean: f64, deviation: f64) -> f64 {
    if deviation.is_finite() && deviation > MIN_DEVIATION {
        finite(mean / deviation * TRADING_DAYS.sqrt())
    } else {
        0.0
    }
}

/// Annualised Sharpe ratio of daily returns: excess over a 2 % risk-free rate,
/// divided by the sample (n−1) standard deviation. 0 with fewer than 2 returns.
pub fn sharpe(returns: &[f64]) -> f64 {
    if returns.len() < 2 {
        return 0.0;
    }
    let excess = excess_returns(returns);
    annualised_ratio(excess.iter().mean(), excess.iter().std_dev())
}

/// Annualised Sortino ratio: like [`sharpe`] but divided by the downside
/// deviation `sqrt(Σ min(excess, 0)² / n)`. 0 with fewer than 2 returns or
/// no excess below 0.
pub fn sortino(returns: &[f64]) -> f64 {
    if returns.len() < 2 {
        return 0.0;
    }
    let excess = excess_returns(returns);
    let n = excess.len() as f64;
    let downside = (excess.iter().map(|e| e.min(0.0).powi(2)).sum::<f64>() / n).sqrt();
    annualised_ratio(excess.iter().mean(), downside)
}

/// Annual return over |max drawdown|, both in percent; 0 without a drawdown.
pub fn calmar(annual_return_pct: f64, max_drawdown_pct: f64) -> f64 {
    div(annual_return_pct, max_drawdown_pct.abs())
}

/// Compound annual growth between two points, in percent. 0 when less than a
/// day apart (too short to extrapolate) or an equity is ≤ 0; capped at
/// [`ANNUAL_RETURN_CAP_PCT`].
pub fn annualized_return_pct(first: &EquityPoint, last: &EquityPoint) -> f64 {
    let days = days_between(first.at_ms, last.at_ms);
    if days < 1.0 || !positive(first.equity) || !positive(last.equity) {
        return 0.0;
    }
    let pct = ((last.equity / first.equity).powf(365.0 / days) - 1.0) * 100.0;
    if pct.is_nan() {
        0.0
    } else {
        pct.min(ANNUAL_RETURN_CAP_PCT)
    }
}

/// Drawdown figures of an equity series (ascending time). Points with a
/// non-finite equity are ignored; an empty series gives all zeros.
pub fn drawdown(equity: &[EquityPoint]) -> Drawdown {
    let pts: Vec<&EquityPoint> = equity.iter().filter(|p| p.equity.is_finite()).collect();
    let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
        return Drawdown::default();
    };
    let mut out = Drawdown::default();
    let mut peak = first.equity;
    // Trough index of the largest fall in currency, and the peak before it.
    let mut episode: Option<(usize, f64)> = None;
    let mut peak_at = first.at_ms;
    for (i, p) in pts.iter().enumerate() {
        if p.equity > peak {
            (peak, peak_at) = (p.equity, p.at_ms);
        }
        let fall = p.equity - peak;
        if fall < out.max_drawdown {
            out.max_drawdown = fall;
            episode = Some((i, peak));
        }
        let fall_pct = pct_of(fall, peak);
        if fall_pct < out.max_drawdown_pct {
            out.max_drawdown_pct = fall_pct;
            out.max_drawdown_pct_window = Some((peak_at, p.at_ms));
        }
    }
    out.peak = finite(peak);
    out.max_drawdown = finite(out.max_drawdown);
    out.current_drawdown_pct = pct_of(last.equity - peak, peak);
    if let Some((trough, prev_peak)) = episode {
        let end = pts[trough + 1..]
            .iter()
            .find(|p| p.equity >= prev_peak)
            .unwrap_or(last);
        out.recovery_time_days = finite(days_between(pts[trough].at_ms, end.at_ms));
    }
    out
}

/// `(at_ms, percent below the running peak)` for each point (≤ 0); points with
/// a non-finite equity are skipped.
pub fn drawdown_curve(equity: &[EquityPoint]) -> Vec<(i64, f64)> {
    let mut peak = f64::NEG_INFINITY;
    equity
        .iter()
        .filter(|p| p.equity.is_finite())
        .map(|p| {
            peak = peak.max(p.equity);
            (p.at_ms, pct_of(p.equity - peak, peak))
        })
        .collect()
}

/// The deepest drawdown of each UTC day, in percent below the running peak (≤ 0): the daily view
/// of `drawdown_curve`, whose lowest value is `drawdown(equity).max_drawdown_pct`.
pub fn daily_drawdown(equity: &[EquityPoint]) -> Vec<(NaiveDate, f64)> {
    let mut by_day: BTreeMap<NaiveDate, f64> = BTreeMap::new();
    for (at_ms, pct) in drawdown_curve(equity) {
        if let Some(day) = utc_date(at_ms) {
            let deepest = by_day.entry(day).or_insert(pct);
            *deepest = deepest.min(pct);
        }
    }
    by_day.into_iter().collect()
}

/// The UTC month with the highest net pnl of `months` (net pnl per month, keyed
/// by its first day; the earliest on a tie); `None` without trades. `pnl_pct`
/// is relative to the equity as the month began: the last point before it, else
/// the first point in it, else `initial_capital`; 0 when that base is ≤ 0.
pub fn best_month(
    months: &BTreeMap<NaiveDate, f64>,
    equity: &[EquityPoint],
    initial_capital: f64,
) -> Option<MonthlyPnl> {
    let (start, pnl) = months
        .iter()
        .map(|(m, p)| (*m, finite(*p)))
        .reduce(|best, m| if m.1 > best.1 { m } else { best })?;

    let start_ms = start.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    let end_ms = start
        .checked_add_months(Months::new(1))
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map_or(i64::MAX, |d| d.and_utc().timestamp_millis());
    let valid = || equity.iter().filter(|p| p.equity.is_finite());
    let base = valid()
        .rfind(|p| p.at_ms < start_ms)
        .or_else(|| valid().find(|p| p.at_ms < end_ms))
        .map_or(initial_capital, |p| p.equity);
    let month = start.format("%Y-%m").to_string();
    let pnl_pct = pct_of(pnl, base);
    Some(MonthlyPnl {
        month,
        pnl,
        pnl_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Datelike;

    const DAY: i64 = 86_400_000;
    /// 2024-01-01T00:00:00Z.
    const T0: i64 = 1_704_067_200_000;

    #[track_caller]
    fn assert_close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} != {b}");
    }

    fn pt(at_ms: i64, equity: f64) -> EquityPoint {
        EquityPoint { at_ms, equity }
    }

    /// One point per day from T0.
    fn daily(values: &[f64]) -> Vec<EquityPoint> {
        (0..)
            .zip(values)
            .map(|(i, &e)| pt(T0 + i * DAY, e))
            .collect()
    }

    fn trade(net_pnl: f64, closed_at_ms: i64) -> ClosedTrade {
        let opened_at_ms = closed_at_ms - 60_000;
        let (gross_pnl, fees, size_usd) = (net_pnl, 0.0, 1000.0);
        ClosedTrade {
            net_pnl,
            gross_pnl,
            fees,
            size_usd,
            opened_at_ms,
            closed_at_ms,
        }
    }

    /// Trades closed 1 ms apart from T0.
    fn trades(pnls: &[f64]) -> Vec<ClosedTrade> {
        (0..).zip(pnls).map(|(i, &p)| trade(p, T0 + i)).collect()
    }

    fn jan(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2024, 1, d).unwrap()
    }

    /// Net pnl per month (keyed by its first day), as the day totals give it.
    fn months(trades: &[ClosedTrade]) -> BTreeMap<NaiveDate, f64> {
        let mut months = BTreeMap::new();
        for t in trades {
            let first = utc_date(t.closed_at_ms)
                .and_then(|d| d.with_day(1))
                .unwrap();
            *months.entry(first).or_default() += t.net_pnl;
        }
        months
    }

    #[test]
    fn drawdown_of_reference_series() {
        // Peak 120 on day 1, trough 90 on day 2: -30 = -25 % of 120.
        // Back at or above 120 on day 4 (130): recovery 4 - 2 = 2 days.
        let dd = drawdown(&daily(&[100.0, 120.0, 90.0, 95.0, 130.0]));
        assert_close(dd.max_drawdown, -30.0);
        assert_close(dd.max_drawdown_pct, -25.0);
        assert_close(dd.recovery_time_days, 2.0);
        assert_close(dd.peak, 130.0);
        assert_close(dd.current_drawdown_pct, 0.0);
        assert_eq!(dd.max_drawdown_pct_window, Some((T0 + DAY, T0 + 2 * DAY)));
        // The curve: 95 vs 120 is -25 / 120 = -20.8333… %.
        let curve = drawdown_curve(&daily(&[100.0, 120.0, 90.0, 95.0, 130.0]));
        let expected = [0.0, 0.0, -25.0, -25.0 / 120.0 * 100.0, 0.0];
        assert_eq!(curve.len(), expected.len());
        for (c, e) in curve.iter().zip(expected) {
            assert_close(c.1, e);
        }
        assert_eq!(curve[2].0, T0 + 2 * DAY);
    }

    #[test]
    fn the_daily_drawdown_is_each_days_deepest_and_reaches_the_max_drawdown() {
        // Two points a day: the second day dips to 90 and recovers to 110 below its peak of 120.
        let equity = [
            pt(T0, 100.0),
            pt(T0 + DAY / 2, 120.0),
            pt(T0 + DAY, 90.0),
            pt(T0 + DAY + DAY / 2, 110.0),
            pt(T0 + 2 * DAY, 125.0),
        ];
        let days = daily_drawdown(&equity);
        assert_eq!(days.len(), 3);
        assert_close(days[0].1, 0.0);
        assert_close(days[1].1, -25.0);
        assert_close(days[2].1, 0.0);
        let deepest = days.iter().map(|d| d.1).fold(0.0, f64::min);
        assert_close(deepest, drawdown(&equity).max_drawdown_pct);
    }

    #[test]
    fn drawdown_cases() {
        // Trough 80 on day 1, never back to 100: days 1 → 3 = 2; now 90 = -10 %.
        let dd = drawdown(&daily(&[100.0, 80.0, 85.0, 90.0]));
        assert_close(dd.max_drawdown, -20.0);
        assert_close(dd.max_drawdown_pct, -20.0);
        assert_close(dd.recovery_time_days, 2.0);
        assert_close(dd.current_drawdown_pct, -10.0);
        // 100 → 50 is -50 (-50 %); 1000 → 800 is -200 (-20 %): each figure is
        // its own largest. Recovery follows the -200 fall: day 3 → day 5.
        let dd = drawdown(&daily(&[100.0, 50.0, 1000.0, 800.0, 900.0, 1000.0]));
        assert_close(dd.max_drawdown, -200.0);
        assert_close(dd.max_drawdown_pct, -50.0);
        assert_close(dd.recovery_time_days, 2.0);
        // The window is the percentage fall's (100 on day 0 to 50 on day 1), not the larger one.
        assert_eq!(dd.max_drawdown_pct_window, Some((T0, T0 + DAY)));
        // Rising or empty: nothing.
        let rising = drawdown(&daily(&[1.0, 2.0, 3.0]));
        assert_eq!(
            rising,
            Drawdown {
                peak: 3.0,
                ..Drawdown::default()
            }
        );
        assert_eq!(drawdown(&[]), Drawdown::default());
        assert!(drawdown_curve(&[]).is_empty());
    }

    #[test]
    fn sharpe_and_sortino_hand_computed() {
        // returns 0.01, 0.02, -0.01, 0.02; daily rf = 0.02 / 252 = 0.0000793651
        // mean excess = 0.06 / 4 - 0.0000793651 = 0.0099206349
        // deviations from the mean (0.01): 0, 0.01, -0.02, 0.01
        // sample variance = (0 + 1e-4 + 4e-4 + 1e-4) / 3 = 2e-4, std = 0.0141421356
        // Sharpe = 0.0099206349 / 0.0141421356 × √252 (15.8745079) = 11.1358851
        // Sortino: only excess below 0 is -0.01 - 0.0000793651 = -0.0100793651
        // downside = sqrt(0.0100793651² / 4) = 0.0050396825
        // Sortino = 0.0099206349 / 0.0050396825 × 15.8745079 = 31.2490312
        let r = [0.01, 0.02, -0.01, 0.02];
        assert!((sharpe(&r) - 11.1358851).abs() < 1e-6);
        assert!((sortino(&r) - 31.2490312).abs() < 1e-6);
    }

    #[test]
    fn sharpe_and_sortino_degenerate_inputs_are_zero() {
        assert_eq!([sharpe(&[]), sharpe(&[0.05]), sortino(&[0.05])], [0.0; 3]);
        // Constant returns: std 0. No excess below 0: downside deviation 0.
        assert_eq!(sharpe(&[0.01, 0.01, 0.01]), 0.0);
        assert_eq!(sortino(&[0.01, 0.02, 0.03]), 0.0);
        assert_eq!(sharpe(&[f64::NAN, 0.01]), 0.0);
    }

    #[test]
    fn daily_series() {
        let pts = [
            pt(T0 + 1_000, 100.0),
            pt(T0 + DAY - 1, 105.0),
            pt(T0 + DAY, 110.0),
            pt(T0 + DAY + 5, f64::NAN),
            pt(T0 + 3 * DAY, 99.0),
        ];
        let closes = daily_close(&pts);
        assert_eq!(closes, [(jan(1), 105.0), (jan(2), 110.0), (jan(4), 99.0)]);
        assert!(daily_close(&[]).is_empty());
        // 110 / 105 - 1 and 99 / 110 - 1 (= -0.1).
        let r = daily_returns(&closes);
        assert_eq!(r.len(), 2);
        assert_close(r[0], 110.0 / 105.0 - 1.0);
        assert_close(r[1], -0.1);
        // 0 → 50 has no return; 50 → 100 is +100 %.
        let d = [(jan(1), 0.0), (jan(2), 50.0), (jan(3), 100.0)];
        assert_eq!(daily_returns(&d), vec![1.0]);
        assert!(daily_returns(&d[..1]).is_empty());
        let t = [
            trade(10.0, T0 + 5),
            trade(-4.0, T0 + DAY - 1),
            trade(7.0, T0 + 2 * DAY),
        ];
        assert_eq!(daily_pnl(&t), [(jan(1), 6.0), (jan(3), 7.0)]);
        assert!(daily_pnl(&[]).is_empty());
    }

    #[test]
    fn calmar_and_annualized_return() {
        assert_close(calmar(50.0, -25.0), 2.0);
        assert_eq!(calmar(50.0, 0.0), 0.0);
        let a = pt(T0, 100.0);
        // 100 → 121 over 730 days: 1.21^(1/2) = 1.1 → 10 %; 100 → 110 in 365: 10 %.
        assert_close(annualized_return_pct(&a, &pt(T0 + 730 * DAY, 121.0)), 10.0);
        assert_close(annualized_return_pct(&a, &pt(T0 + 365 * DAY, 110.0)), 10.0);
        assert_eq!(annualized_return_pct(&a, &pt(T0 + DAY - 1, 200.0)), 0.0);
        let broke = pt(T0 + 10 * DAY, 0.0);
        assert_eq!(annualized_return_pct(&a, &broke), 0.0);
        assert_eq!(annualized_return_pct(&broke, &a), 0.0);
        // ×10 000 in a day overflows the compounding: capped.
        let moon = pt(T0 + DAY, 1e6);
        assert_eq!(annualized_return_pct(&a, &moon), ANNUAL_RETURN_CAP_PCT);
    }

    #[test]
    fn profit_factor_cases() {
        assert_close(profit_factor(30.0, -10.0), 3.0);
        assert_eq!(profit_factor(30.0, 0.0), PROFIT_FACTOR_CAP);
        assert_eq!(profit_factor(0.0, 0.0), 0.0);
        assert_eq!(profit_factor(0.0, -10.0), 0.0);
        assert_eq!(profit_factor(1e9, -1.0), PROFIT_FACTOR_CAP);
        let pf = |pnls: &[f64]| performance(&trades(pnls), &[], 0.0).profit_factor;
        assert_eq!(pf(&[5.0, 0.0]), PROFIT_FACTOR_CAP);
        assert_eq!(pf(&[-5.0]), 0.0);
        assert_close(pf(&[30.0, -5.0, -5.0, 0.0]), 3.0);
    }

    #[test]
    fn performance_hand_computed() {
        let t = |net: f64, gross: f64, fees: f64, minutes: i64, i: i64| ClosedTrade {
            net_pnl: net,
            gross_pnl: gross,
            fees,
            size_usd: 500.0,
            opened_at_ms: T0 + i * DAY,
            closed_at_ms: T0 + i * DAY + minutes * 60_000,
        };
        let trades = [
            t(100.0, 110.0, 10.0, 60, 0),
            t(-50.0, -45.0, 5.0, 30, 1),
            t(0.0, 2.0, 2.0, 90, 2),
            t(200.0, 204.0, 4.0, 60, 3),
            t(-25.0, -24.0, 1.0, 60, 4),
        ];
        let values = [1000.0, 1200.0, 900.0, 950.0, 1300.0];
        let m = performance(&trades, &daily(&values), 1000.0);
        let counts = (m.total_trades, m.winning_trades, m.losing_trades);
        assert_eq!(counts, (5, 2, 2));
        assert_close(m.win_rate, 0.4);
        assert_close(m.total_pnl, 247.0); // 110 - 45 + 2 + 204 - 24
        assert_close(m.net_pnl, 225.0); // 100 - 50 + 0 + 200 - 25
        assert_close(m.total_fees, 22.0);
        assert_close(m.total_pnl_pct, 22.5); // 225 / 1000
        assert_close(m.avg_win, 150.0);
        assert_close(m.avg_loss, -37.5);
        assert_close(m.largest_win, 200.0);
        assert_close(m.largest_loss, -50.0);
        assert_close(m.profit_factor, 4.0); // 300 / 75
        assert_close(m.avg_trade_duration_minutes, 60.0); // 300 / 5
        assert_close(m.max_drawdown, -300.0);
        assert_close(m.max_drawdown_pct, -25.0);
        assert_close(m.recovery_time_days, 2.0);
        let r: Vec<f64> = values.windows(2).map(|w| w[1] / w[0] - 1.0).collect();
        assert_close(m.sharpe_ratio, sharpe(&r));
        assert!(m.sharpe_ratio > 0.0);
    }

    #[test]
    fn empty_and_constant_inputs_give_zeros() {
        assert_eq!(performance(&[], &[], 1000.0), PerformanceMetrics::default());
        assert_eq!(performance(&[], &[], 0.0), PerformanceMetrics::default());
        assert_eq!(performance(&trades(&[10.0]), &[], -5.0).total_pnl_pct, 0.0);
        // Constant equity: no return, no risk, no drawdown.
        let m = performance(&[], &daily(&[500.0; 10]), 500.0);
        assert_eq!(m, PerformanceMetrics::default());
    }

    #[test]
    fn non_finite_inputs_never_leak() {
        let odd = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -3.5];
        assert_eq!(odd.map(finite), [0.0, 0.0, 0.0, -3.5]);
        let trades = trades(&odd);
        let equity = daily(&[100.0, f64::NAN, f64::INFINITY, 90.0]);
        let shown = format!("{:?}", performance(&trades, &equity, f64::NAN));
        assert!(!shown.contains("NaN") && !shown.contains("inf"), "{shown}");
        assert!(daily_pnl(&trades).iter().all(|d| d.1.is_finite()));
        assert!(drawdown_curve(&equity).iter().all(|d| d.1.is_finite()));
        assert!(best_month(&months(&trades), &equity, 1.0).is_some_and(|m| m.pnl.is_finite()));
    }

    #[test]
    fn best_month_by_net_pnl() {
        let day = |d: i64| T0 + d * DAY; // 2024-01-01 + d days
        // January 50, February 100 - 20 = 80, March 30.
        let t = [(50.0, 3), (100.0, 35), (-20.0, 40), (30.0, 61)].map(|(p, d)| trade(p, day(d)));
        // February's base is the last point before 2024-02-01: 1000 on Jan 31.
        let equity = [pt(day(0), 900.0), pt(day(30), 1000.0), pt(day(50), 1100.0)];
        let best = best_month(&months(&t), &equity, 500.0).unwrap();
        assert_eq!(best.month, "2024-02");
        assert_close(best.pnl, 80.0);
        assert_close(best.pnl_pct, 8.0); // 80 / 1000
        // No equity before February: the first point in it (1100).
        let best = best_month(&months(&t), &equity[2..], 500.0).unwrap();
        assert_close(best.pnl_pct, 80.0 / 1100.0 * 100.0);
        // No equity at all: initial capital (80 / 400); none (≤ 0): 0.
        assert_close(best_month(&months(&t), &[], 400.0).unwrap().pnl_pct, 20.0);
        assert_eq!(best_month(&months(&t), &[], 0.0).unwrap().pnl_pct, 0.0);
        assert_eq!(best_month(&BTreeMap::new(), &equity, 400.0), None);
        // Tie: the earliest month.
        let tie = [trade(10.0, day(40)), trade(10.0, day(3))];
        assert_eq!(
            best_month(&months(&tie), &[], 100.0).unwrap().month,
            "2024-01"
        );
    }
}
