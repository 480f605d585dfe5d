//! Performance tracking (companion sets E and F): the KPI tracker that snapshots every trading
//! account each `TRADEHOST_PERF_UPDATE_INTERVAL` and writes reports each
//! `TRADEHOST_PERF_REPORT_INTERVAL`, and the KPI figures computed from the engine's books.
//! Formulas are decisions.md's: decimal returns, Sharpe and Sortino over daily returns with a 2 %
//! risk-free rate (0 when undefined), drawdown from the equity series, winners with net > 0.

pub mod dashboard;
pub mod kpi;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::App;
use crate::companion::round2;
use crate::engine::accounting::{self, float};
use crate::engine::metrics::{self, EquityPoint};
use crate::engine::totals::{AccountTotals, utc_day};
use crate::error::ApiResult;
use crate::store::performance::{self as rows, SnapshotRow};
use crate::store::{accounts, iso8601, new_id, now_ms};

use crate::store::DAY_MS;

/// Whether the tracker task is running (for `/api/performance/status`).
#[derive(Debug, Default)]
pub struct Tracker {
    running: AtomicBool,
}

impl Tracker {
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }
}

/// One KPI snapshot of an account (F's KPISnapshot), all figures finite.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize, Deserialize)]
pub struct Kpi {
    pub timestamp: String,
    pub account_value: f64,
    pub cash_balance: f64,
    pub total_return_pct: f64,
    pub daily_return_pct: f64,
    pub weekly_return_pct: f64,
    pub monthly_return_pct: f64,
    pub sharpe_ratio: f64,
    pub sortino_ratio: f64,
    pub max_drawdown_pct: f64,
    pub current_drawdown_pct: f64,
    pub total_trades: u64,
    pub winning_trades: u64,
    pub losing_trades: u64,
    pub win_rate_pct: f64,
    pub profit_factor: f64,
    pub avg_win: f64,
    pub avg_loss: f64,
    pub active_positions: usize,
    pub total_exposure_pct: f64,
    pub trades_per_day: f64,
    pub avg_hold_time_hours: f64,
    pub unrealized_pnl: f64,
    pub realized_pnl_total: f64,
}

/// The equity `at` (the last point at or before it), or `fallback` before the first point.
pub fn equity_at(series: &[EquityPoint], at: i64, fallback: f64) -> f64 {
    series
        .iter()
        .rev()
        .find(|p| p.at_ms <= at)
        .map_or(fallback, |p| p.equity)
}

/// `now` over `then` as a percentage change (0 when `then` ≤ 0).
pub fn change_pct(then: f64, now: f64) -> f64 {
    if then > 0.0 {
        round2((now - then) / then * 100.0)
    } else {
        0.0
    }
}

/// Win and loss figures of closed trades: counts, averages (losses positive), profit factor
/// (capped like the platform's, 0 without trades) and the longest streaks.
#[derive(Debug, Default, Clone, Copy)]
pub struct TradeFigures {
    pub total: u64,
    pub winners: u64,
    pub losers: u64,
    pub win_rate_pct: f64,
    pub avg_win: f64,
    pub avg_loss: f64,
    pub profit_factor: f64,
    pub longest_winning_streak: u64,
    pub longest_losing_streak: u64,
    pub avg_hold_hours: f64,
    /// Net P&L, rounded to cents.
    pub net_pnl: f64,
}

impl TradeFigures {
    /// The figures of an account's running totals.
    pub fn of_totals(t: &AccountTotals) -> Self {
        let mean = |sum: Decimal, count: u64| {
            if count == 0 {
                0.0
            } else {
                round2(float(sum) / count as f64)
            }
        };
        TradeFigures {
            total: t.sums.trades,
            winners: t.sums.winners,
            losers: t.sums.losers,
            win_rate_pct: t.sums.win_rate_pct(),
            avg_win: mean(t.sums.profit, t.sums.winners),
            avg_loss: mean(-t.sums.loss, t.sums.losers),
            profit_factor: round2(t.sums.profit_factor()),
            longest_winning_streak: t.longest_win_streak,
            longest_losing_streak: t.longest_loss_streak,
            avg_hold_hours: round2(t.avg_hold_ms() / 3_600_000.0),
            net_pnl: round2(float(t.sums.net_pnl)),
        }
    }
}

/// Sharpe and Sortino of the daily closes of an equity series.
pub fn ratios(series: &[EquityPoint]) -> (f64, f64) {
    let returns = metrics::daily_returns(&metrics::daily_close(series));
    (
        round2(metrics::sharpe(&returns)),
        round2(metrics::sortino(&returns)),
    )
}

/// What the engine's books say about an account right now.
struct Books {
    cash: Decimal,
    equity: Decimal,
    unrealized: Decimal,
    realized: Decimal,
    exposure: Decimal,
    positions: usize,
    totals: AccountTotals,
}

async fn books(app: &App, user_id: &str) -> ApiResult<Books> {
    crate::engine::with_trader(app, user_id, |trader| Books {
        cash: trader.account.cash,
        equity: trader.equity(),
        unrealized: accounting::unrealized_pnl(&trader.positions),
        realized: trader.account.realized_pnl,
        exposure: accounting::exposure(&trader.positions),
        positions: trader.positions.len(),
        totals: trader.stats.trades.clone(),
    })
    .await
}

/// The account's KPI snapshot now, and the snapshot row that records it: from the trader's
/// running totals, today's day totals and the equity series, never the account's trades.
pub async fn measure(app: &App, user_id: &str) -> ApiResult<(Kpi, SnapshotRow)> {
    let books = books(app, user_id).await?;
    let now = now_ms();
    let (series, initial) = crate::engine::reports::equity_series(app, user_id, 0).await?;
    let equity = float(books.equity);
    let figures = TradeFigures::of_totals(&books.totals);
    let (sharpe, sortino) = ratios(&series);
    let drawdown = metrics::drawdown(&series);
    let trade_days = books
        .totals
        .first_closed_at
        .map_or(1.0, |first| ((now - first) as f64 / DAY_MS as f64).max(1.0));
    let today: Decimal = crate::store::totals::days_since(&app.db.pool, user_id, utc_day(now))
        .await?
        .iter()
        .map(|d| d.tally.net_pnl)
        .sum();
    let kpi = Kpi {
        timestamp: iso8601(now),
        account_value: round2(equity),
        cash_balance: round2(float(books.cash)),
        total_return_pct: change_pct(initial, equity),
        daily_return_pct: change_pct(equity_at(&series, now - DAY_MS, initial), equity),
        weekly_return_pct: change_pct(equity_at(&series, now - 7 * DAY_MS, initial), equity),
        monthly_return_pct: change_pct(equity_at(&series, now - 30 * DAY_MS, initial), equity),
        sharpe_ratio: sharpe,
        sortino_ratio: sortino,
        max_drawdown_pct: round2(-drawdown.max_drawdown_pct),
        current_drawdown_pct: round2(-drawdown.current_drawdown_pct),
        total_trades: figures.total,
        winning_trades: figures.winners,
        losing_trades: figures.losers,
        win_rate_pct: figures.win_rate_pct,
        profit_factor: figures.profit_factor,
        avg_win: figures.avg_win,
        avg_loss: figures.avg_loss,
        active_positions: books.positions,
        total_exposure_pct: if equity > 0.0 {
            round2(float(books.exposure) / equity * 100.0)
        } else {
            0.0
        },
        trades_per_day: round2(figures.total as f64 / trade_days),
        avg_hold_time_hours: figures.avg_hold_hours,
        unrealized_pnl: round2(float(books.unrealized)),
        realized_pnl_total: round2(float(books.realized)),
    };
    let row = SnapshotRow {
        id: new_id(),
        user_id: user_id.to_string(),
        taken_at: now,
        source: "tracker".into(),
        cash: float(books.cash),
        // Signed market value of the positions, so that cash + positions = equity exactly.
        positions_value: float(books.equity - books.cash),
        unrealized_pnl: float(books.unrealized),
        realized_pnl_today: float(today),
        total_trades: figures.total as i64,
        winning_trades: figures.winners as i64,
        losing_trades: figures.losers as i64,
        kpi: Some(serde_json::to_string(&kpi).expect("a KPI snapshot serialises")),
    };
    Ok((kpi, row))
}

/// Accounts the tracker snapshots now: every bot that is scanning, and any bot whose state
/// changed since its last snapshot (so a stopped bot's final figures are recorded once).
async fn due_accounts(app: &App) -> ApiResult<Vec<String>> {
    let last: HashMap<String, i64> = rows::last_tracked(&app.db.pool)
        .await?
        .into_iter()
        .collect();
    Ok(rows::bots(&app.db.pool)
        .await?
        .into_iter()
        .filter(|(user_id, status, updated_at)| {
            crate::engine::BotStatus::parse(status).is_scanned()
                || last.get(user_id).is_none_or(|at| at < updated_at)
        })
        .map(|(user_id, ..)| user_id)
        .collect())
}

/// One pass of the tracker: a snapshot of each due account.
pub async fn snapshot_all(app: &App) -> ApiResult<usize> {
    let mut written = 0;
    for user_id in due_accounts(app).await? {
        let (_, row) = measure(app, &user_id).await?;
        rows::insert_snapshot(&app.db.pool, &row).await?;
        written += 1;
    }
    Ok(written)
}

/// A report of each account snapshotted since the last report: its KPI summary then.
pub async fn report_all(app: &App, since: i64) -> ApiResult<usize> {
    let mut written = 0;
    let now = now_ms();
    for (user_id, last) in rows::last_tracked(&app.db.pool).await? {
        if last < since {
            continue;
        }
        let summary = kpi::summary(app, &user_id).await?;
        let report = serde_json::json!({
            "period_start": iso8601(since),
            "period_end": iso8601(now),
            "summary": summary,
        });
        rows::insert_report(&app.db.pool, &new_id(), &user_id, now, &report.to_string()).await?;
        written += 1;
    }
    Ok(written)
}

/// The tracker task: snapshots every update interval, reports every report interval (old
/// snapshots are thinned by `retention`).
pub async fn run(app: App) {
    app.tracker.running.store(true, Ordering::Relaxed);
    let mut updates = tokio::time::interval(app.config.perf_update_interval);
    let mut reports = tokio::time::interval(app.config.perf_report_interval);
    updates.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    reports.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick of an interval is immediate; a report needs something to report on.
    reports.tick().await;
    let mut last_report = now_ms();
    loop {
        tokio::select! {
            _ = updates.tick() => {
                if !app.runs_job("kpi_snapshots", app.config.perf_update_interval).await {
                    continue;
                }
                if let Err(err) = snapshot_all(&app).await {
                    tracing::warn!(error = %err, "KPI snapshots failed");
                }
            }
            _ = reports.tick() => {
                let since = last_report;
                last_report = now_ms();
                if !app.runs_job("performance_reports", app.config.perf_report_interval).await {
                    continue;
                }
                if let Err(err) = report_all(&app, since).await {
                    tracing::warn!(error = %err, "performance reports failed");
                }
            }
        }
    }
}

/// The account's initial capital; for a user who never traded, the capital their account will
/// start with.
pub async fn initial_capital(app: &App, user_id: &str) -> ApiResult<f64> {
    let account = accounts::account(&app.db.pool, user_id).await?;
    Ok(float(
        account.map_or(app.config.initial_capital, |a| a.initial_capital),
    ))
}
