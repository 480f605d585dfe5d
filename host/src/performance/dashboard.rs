//! Companion set E: the investor dashboard over the user's persisted performance snapshots.

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use serde::Serialize;
use std::collections::BTreeMap;

use serde_json::{Map, Value};
use statrs::statistics::Statistics;

use super::{DAY_MS, TradeFigures, change_pct, equity_at, initial_capital, ratios};
use crate::App;
use crate::auth::Principal;
use crate::companion::round2;
use crate::engine::accounting::float;
use crate::engine::metrics::{self, EquityPoint};
use crate::engine::totals::{self as engine_totals, Tally, utc_day};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::performance::{self as rows, SnapshotRow};
use crate::store::{bots, iso8601, new_id, now_ms, totals};

fn series(snapshots: &[SnapshotRow]) -> Vec<EquityPoint> {
    snapshots
        .iter()
        .map(|s| EquityPoint {
            at_ms: s.taken_at,
            equity: s.equity(),
        })
        .collect()
}

/// How many UTC days the snapshots (oldest first) fall on.
fn distinct_days<'a>(snapshots: impl IntoIterator<Item = &'a SnapshotRow>) -> usize {
    let mut days: Vec<i64> = snapshots.into_iter().map(|s| s.taken_at / DAY_MS).collect();
    days.dedup();
    days.len()
}

#[derive(utoipa::ToSchema, Debug, Default, Serialize)]
#[schema(as = DashboardMetrics)]
pub struct Metrics {
    pub total_return_pct: f64,
    pub annualized_return_pct: f64,
    pub cagr_pct: f64,
    pub daily_return_pct: f64,
    pub monthly_return_pct: f64,
    pub daily_volatility_pct: f64,
    pub annualized_volatility_pct: f64,
    pub sharpe_ratio: f64,
    pub sortino_ratio: f64,
    pub calmar_ratio: f64,
    pub max_drawdown_pct: f64,
    pub current_drawdown_pct: f64,
    pub total_trades: u64,
    pub winning_trades: u64,
    pub losing_trades: u64,
    pub win_rate_pct: f64,
    pub avg_win: f64,
    pub avg_loss: f64,
    pub profit_factor: f64,
    pub longest_winning_streak: u64,
    pub longest_losing_streak: u64,
    pub days_trading: usize,
    pub avg_trades_per_day: f64,
}

struct Figures {
    metrics: Metrics,
    initial: f64,
    current: f64,
    /// Peak and trough of the largest percentage fall.
    drawdown_window: Option<(i64, i64)>,
    regime: Regime,
}

async fn figures(app: &App, user_id: &str) -> ApiResult<Figures> {
    let snapshots = rows::snapshots_since(&app.db.pool, user_id, 0).await?;
    let totals = crate::store::totals::get(&app.db.pool, user_id).await?;
    let points = series(&snapshots);
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        let initial = initial_capital(app, user_id).await?;
        return Ok(Figures {
            metrics: Metrics::default(),
            initial,
            current: initial,
            drawdown_window: None,
            regime: Regime::Ranging,
        });
    };
    let initial = initial_capital(app, user_id).await?;
    let returns = metrics::daily_returns(&metrics::daily_close(&points));
    let daily_volatility = if returns.len() >= 2 {
        returns.iter().std_dev() * 100.0
    } else {
        0.0
    };
    let start = EquityPoint {
        at_ms: first.at_ms,
        equity: initial,
    };
    let annualized = round2(metrics::annualized_return_pct(&start, last));
    let (sharpe, sortino) = ratios(&points);
    let drawdown = metrics::drawdown(&points);
    let trade_figures = TradeFigures::of_totals(&totals);
    let days = distinct_days(&snapshots);
    let metrics = Metrics {
        total_return_pct: change_pct(initial, last.equity),
        annualized_return_pct: annualized,
        cagr_pct: annualized,
        daily_return_pct: returns.last().map_or(0.0, |r| round2(r * 100.0)),
        monthly_return_pct: change_pct(
            equity_at(&points, last.at_ms - 30 * DAY_MS, initial),
            last.equity,
        ),
        daily_volatility_pct: round2(daily_volatility),
        annualized_volatility_pct: round2(daily_volatility * 252f64.sqrt()),
        sharpe_ratio: sharpe,
        sortino_ratio: sortino,
        calmar_ratio: round2(metrics::calmar(annualized, drawdown.max_drawdown_pct)),
        max_drawdown_pct: round2(-drawdown.max_drawdown_pct),
        current_drawdown_pct: round2(-drawdown.current_drawdown_pct),
        total_trades: trade_figures.total,
        winning_trades: trade_figures.winners,
        losing_trades: trade_figures.losers,
        win_rate_pct: trade_figures.win_rate_pct,
        avg_win: trade_figures.avg_win,
        avg_loss: trade_figures.avg_loss,
        profit_factor: if trade_figures.losers == 0 {
            0.0
        } else {
            trade_figures.profit_factor
        },
        longest_winning_streak: trade_figures.longest_winning_streak,
        longest_losing_streak: trade_figures.longest_losing_streak,
        days_trading: days,
        avg_trades_per_day: round2(trade_figures.total as f64 / days.max(1) as f64),
    };
    Ok(Figures {
        metrics,
        initial,
        current: last.equity,
        drawdown_window: drawdown.max_drawdown_pct_window,
        regime: Regime::of(&points),
    })
}

pub async fn metrics(app: &App, user: &Principal) -> ApiResult<Metrics> {
    Ok(figures(app, &user.user_id).await?.metrics)
}

/// The start of a `days` window: a positive whole number of days limits the series to them;
/// anything else (missing, 0, negative, not a whole number) means all data, as the dashboard's
/// original clients expect (companion-shapes.md E.2), so there is no error.
pub fn since(days: Option<&str>) -> i64 {
    match days.and_then(|raw| raw.trim().parse::<i64>().ok()) {
        Some(d) if d > 0 => now_ms() - d.min(36_500) * DAY_MS,
        _ => 0,
    }
}

/// The account's equity at one snapshot.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EquityAt {
    #[schema(format = DateTime)]
    pub timestamp: String,
    pub equity: f64,
}

/// How far below its running peak the equity was at one snapshot (percent, positive).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DrawdownAt {
    #[schema(format = DateTime)]
    pub timestamp: String,
    pub drawdown_pct: f64,
}

pub async fn equity_curve(app: &App, user: &Principal, since: i64) -> ApiResult<Vec<EquityAt>> {
    Ok(rows::snapshots_since(&app.db.pool, &user.user_id, since)
        .await?
        .iter()
        .map(|s| EquityAt {
            timestamp: iso8601(s.taken_at),
            equity: round2(s.equity()),
        })
        .collect())
}

/// Percent below the running peak at each snapshot (positive numbers), peaks taken over the
/// whole history so a window starting mid-drawdown shows it.
pub async fn drawdown_curve(app: &App, user: &Principal, since: i64) -> ApiResult<Vec<DrawdownAt>> {
    let snapshots = rows::snapshots_since(&app.db.pool, &user.user_id, 0).await?;
    Ok(metrics::drawdown_curve(&series(&snapshots))
        .into_iter()
        .filter(|(at, _)| *at >= since)
        .map(|(at, pct)| DrawdownAt {
            timestamp: iso8601(at),
            drawdown_pct: round2(-pct),
        })
        .collect())
}

pub const SNAPSHOT_FIELDS: [&str; 7] = [
    "cash",
    "positions_value",
    "unrealized_pnl",
    "realized_pnl_today",
    "total_trades",
    "winning_trades",
    "losing_trades",
];
/// The fields of `SNAPSHOT_FIELDS` that are counts (whole numbers); the others are amounts.
pub const SNAPSHOT_COUNTS: [&str; 3] = ["total_trades", "winning_trades", "losing_trades"];

/// A snapshot as recorded, with the equity it makes.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SnapshotRecorded {
    #[schema(format = DateTime)]
    pub timestamp: String,
    pub nav: f64,
    pub equity: f64,
    pub cash: f64,
    pub positions_value: f64,
    pub unrealized_pnl: f64,
    pub realized_pnl_today: f64,
    pub total_trades: i64,
    pub winning_trades: i64,
    pub losing_trades: i64,
}

/// Records a snapshot the client gives; every field is required and checked before anything
/// is written.
pub async fn update_snapshot(
    app: &App,
    user: &Principal,
    body: Option<Value>,
) -> ApiResult<SnapshotRecorded> {
    let invalid = |message: String| ApiError::new(ErrorCode::InvalidRequest, message);
    let body: Map<String, Value> = match body {
        Some(Value::Object(map)) if !map.is_empty() => map,
        Some(Value::Object(_)) | Some(Value::Null) | None => {
            return Err(invalid("Request body is required".into()));
        }
        Some(_) => return Err(invalid("The request body must be a JSON object".into())),
    };
    let missing: Vec<&str> = SNAPSHOT_FIELDS
        .iter()
        .copied()
        .filter(|field| body.get(*field).is_none_or(Value::is_null))
        .collect();
    if !missing.is_empty() {
        return Err(invalid(format!(
            "Missing required fields: {}",
            missing.join(", ")
        )));
    }
    let number = |field: &str| -> ApiResult<f64> {
        let value = &body[field];
        value
            .as_f64()
            .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| invalid(format!("Field '{field}' must be a number")))
    };
    let count = |field: &str| -> ApiResult<i64> {
        let value = &body[field];
        value
            .as_i64()
            .or_else(|| value.as_str().and_then(|s| s.trim().parse().ok()))
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                invalid(format!(
                    "Field '{field}' must be a whole number of at least 0"
                ))
            })
    };
    let row = SnapshotRow {
        id: new_id(),
        user_id: user.user_id.clone(),
        taken_at: now_ms(),
        source: "manual".into(),
        cash: number("cash")?,
        positions_value: number("positions_value")?,
        unrealized_pnl: number("unrealized_pnl")?,
        realized_pnl_today: number("realized_pnl_today")?,
        total_trades: count("total_trades")?,
        winning_trades: count("winning_trades")?,
        losing_trades: count("losing_trades")?,
        kpi: None,
    };
    if row
        .winning_trades
        .checked_add(row.losing_trades)
        .is_none_or(|decided| decided > row.total_trades)
    {
        return Err(invalid(
            "winning_trades plus losing_trades cannot exceed total_trades".into(),
        ));
    }
    // Equity is cash plus positions; a sum too large for a number would be stored as 0.
    if !(row.cash + row.positions_value).is_finite()
        || !(row.cash + row.positions_value + row.unrealized_pnl).is_finite()
    {
        return Err(invalid(
            "cash plus positions_value is too large to be a number".into(),
        ));
    }
    rows::insert_snapshot(&app.db.pool, &row).await?;
    Ok(SnapshotRecorded {
        timestamp: iso8601(row.taken_at),
        nav: round2(row.equity()),
        equity: round2(row.equity()),
        cash: row.cash,
        positions_value: row.positions_value,
        unrealized_pnl: row.unrealized_pnl,
        realized_pnl_today: row.realized_pnl_today,
        total_trades: row.total_trades,
        winning_trades: row.winning_trades,
        losing_trades: row.losing_trades,
    })
}

/// Set E's investor summary (companion-shapes.md E.5).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InvestorSummary {
    pub user_id: String,
    pub initial_capital: f64,
    pub current_nav: f64,
    pub current_equity: f64,
    pub total_return_usd: f64,
    pub total_return_pct: f64,
    pub annualized_return_pct: f64,
    pub annualized_volatility_pct: f64,
    pub sharpe_ratio: f64,
    pub sortino_ratio: f64,
    pub max_drawdown_pct: f64,
    #[schema(format = DateTime)]
    pub max_drawdown_start: Option<String>,
    #[schema(format = DateTime)]
    pub max_drawdown_end: Option<String>,
    pub current_drawdown_pct: f64,
    /// bull_trending, bear_trending, ranging, volatile or crisis.
    #[schema(pattern = "^(bull_trending|bear_trending|ranging|volatile|crisis)$")]
    pub current_regime: &'static str,
    pub win_rate_pct: f64,
    pub total_trades: u64,
    pub avg_trades_per_day: f64,
    pub days_trading: usize,
    pub monthly_avg_return_pct: f64,
    pub active_strategies: usize,
    /// Percent of the account each running strategy trades with.
    pub strategy_allocations: BTreeMap<String, f64>,
    pub strategy_performance: BTreeMap<String, StrategyFigures>,
    pub diversification_score: f64,
    #[schema(format = DateTime)]
    pub reporting_date: String,
}

/// One strategy's figures over the trades it opened.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StrategyFigures {
    pub allocation_pct: f64,
    pub sharpe_ratio: f64,
    pub total_pnl: f64,
    pub total_trades: u64,
    /// The integer 0 for a strategy without trades, as the original reports it.
    #[schema(value_type = f64)]
    pub win_rate_pct: serde_json::Number,
}

pub async fn investor_summary(app: &App, user: &Principal) -> ApiResult<InvestorSummary> {
    let figures = figures(app, &user.user_id).await?;
    let m = &figures.metrics;
    let bot = bots::bot(&app.db.pool, &user.user_id).await?;
    let running = bot
        .as_ref()
        .filter(|b| crate::engine::BotStatus::parse(&b.status).is_scanned());
    let allocations: BTreeMap<String, f64> = running
        .map(|b| (b.strategy.clone(), 100.0))
        .into_iter()
        .collect();
    let months = monthly_reports(app, user).await?;
    let monthly_avg = if months.is_empty() {
        0.0
    } else {
        round2(
            months
                .iter()
                .filter_map(MonthReport::return_pct)
                .sum::<f64>()
                / months.len() as f64,
        )
    };
    let strategies = strategy_performance(app, user, &allocations, figures.initial).await?;
    Ok(InvestorSummary {
        user_id: user.user_id.clone(),
        initial_capital: round2(figures.initial),
        current_nav: round2(figures.current),
        current_equity: round2(figures.current),
        total_return_usd: round2(figures.current - figures.initial),
        total_return_pct: m.total_return_pct,
        annualized_return_pct: m.annualized_return_pct,
        annualized_volatility_pct: m.annualized_volatility_pct,
        sharpe_ratio: m.sharpe_ratio,
        sortino_ratio: m.sortino_ratio,
        max_drawdown_pct: m.max_drawdown_pct,
        max_drawdown_start: figures.drawdown_window.map(|(peak, _)| iso8601(peak)),
        max_drawdown_end: figures.drawdown_window.map(|(_, trough)| iso8601(trough)),
        current_drawdown_pct: m.current_drawdown_pct,
        current_regime: figures.regime.as_str(),
        win_rate_pct: m.win_rate_pct,
        total_trades: m.total_trades,
        avg_trades_per_day: m.avg_trades_per_day,
        days_trading: m.days_trading,
        monthly_avg_return_pct: monthly_avg,
        active_strategies: allocations.len(),
        strategy_allocations: allocations,
        strategy_performance: strategies,
        diversification_score: diversification(app, &user.user_id).await?,
        reporting_date: iso8601(now_ms()),
    })
}

/// Figures per strategy: every strategy the user's trades were opened by, and the running bot's,
/// from the account's day totals (never its trades). Sharpe is over the strategy's daily net
/// profit as returns on the initial capital.
async fn strategy_performance(
    app: &App,
    user: &Principal,
    allocations: &BTreeMap<String, f64>,
    initial: f64,
) -> ApiResult<BTreeMap<String, StrategyFigures>> {
    // Each strategy's trades per UTC day of their close.
    let mut groups: BTreeMap<String, BTreeMap<i64, Tally>> = BTreeMap::new();
    for day in totals::days_since(&app.db.pool, &user.user_id, 0).await? {
        groups
            .entry(day.strategy)
            .or_default()
            .entry(day.day)
            .or_default()
            .merge(&day.tally);
    }
    for name in allocations.keys() {
        groups.entry(name.clone()).or_default();
    }
    Ok(groups
        .into_iter()
        .map(|(name, days)| {
            let all = Tally::sum(days.values());
            let returns: Vec<f64> = days
                .values()
                .map(|day| {
                    if initial > 0.0 {
                        float(day.net_pnl) / initial
                    } else {
                        0.0
                    }
                })
                .collect();
            let entry = StrategyFigures {
                allocation_pct: allocations.get(&name).copied().unwrap_or(0.0),
                sharpe_ratio: round2(metrics::sharpe(&returns)),
                total_pnl: round2(float(all.net_pnl)),
                total_trades: all.trades,
                // The original reports the integer 0 for a strategy without trades.
                win_rate_pct: if all.trades == 0 {
                    0.into()
                } else {
                    serde_json::Number::from_f64(all.win_rate_pct()).unwrap_or(0.into())
                },
            };
            (name, entry)
        })
        .collect())
}

/// What the account's equity has been doing over its last 30 days, from its snapshots:
/// `crisis` 20 % or more below its peak, `volatile` above 60 % annualised volatility of daily
/// returns, `bull_trending` / `bear_trending` up or down 5 % or more over the window, otherwise
/// (and with under two days of data) `ranging`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Regime {
    BullTrending,
    BearTrending,
    Ranging,
    Volatile,
    Crisis,
}

impl Regime {
    fn of(points: &[EquityPoint]) -> Regime {
        let Some(last) = points.last() else {
            return Regime::Ranging;
        };
        let window: Vec<EquityPoint> = points
            .iter()
            .filter(|p| p.at_ms >= last.at_ms - 30 * DAY_MS)
            .copied()
            .collect();
        let closes = metrics::daily_close(&window);
        if closes.len() < 2 {
            return Regime::Ranging;
        }
        if metrics::drawdown(points).current_drawdown_pct <= -20.0 {
            return Regime::Crisis;
        }
        let returns = metrics::daily_returns(&closes);
        let volatility = if returns.len() >= 2 {
            returns.iter().std_dev() * 252f64.sqrt()
        } else {
            0.0
        };
        if volatility.is_finite() && volatility > 0.6 {
            return Regime::Volatile;
        }
        let (first, last) = (closes[0].1, closes[closes.len() - 1].1);
        match change_pct(first, last) {
            change if change >= 5.0 => Regime::BullTrending,
            change if change <= -5.0 => Regime::BearTrending,
            _ => Regime::Ranging,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Regime::BullTrending => "bull_trending",
            Regime::BearTrending => "bear_trending",
            Regime::Ranging => "ranging",
            Regime::Volatile => "volatile",
            Regime::Crisis => "crisis",
        }
    }
}

/// 0–100 from how evenly open exposure spreads across symbols: 100 × (1 − HHI) / (1 − 1/n),
/// 0 with fewer than two positions.
async fn diversification(app: &App, user_id: &str) -> ApiResult<f64> {
    let exposures: Vec<f64> = crate::engine::with_trader(app, user_id, |trader| {
        trader
            .positions
            .iter()
            .map(|p| crate::engine::accounting::float(p.market_value().abs()))
            .collect()
    })
    .await?;
    let total: f64 = exposures.iter().sum();
    let n = exposures.len() as f64;
    if exposures.len() < 2 || total <= 0.0 {
        return Ok(0.0);
    }
    let hhi: f64 = exposures.iter().map(|e| (e / total).powi(2)).sum();
    Ok(round2(100.0 * (1.0 - hhi) / (1.0 - 1.0 / n)))
}

fn month_bounds(year: i32, month: u32) -> Option<(i64, i64)> {
    let start = NaiveDate::from_ymd_opt(year, month, 1)?;
    let end = if month == 12 {
        NaiveDate::from_ymd_opt(year + 1, 1, 1)?
    } else {
        NaiveDate::from_ymd_opt(year, month + 1, 1)?
    };
    let ms = |d: NaiveDate| {
        Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight"))
            .timestamp_millis()
    };
    Some((ms(start), ms(end)))
}

/// One calendar month's figures, or why there are none.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum MonthReport {
    NoData {
        year: i32,
        month: u32,
        error: &'static str,
    },
    Figures {
        year: i32,
        month: u32,
        start_equity: f64,
        end_equity: f64,
        monthly_return_pct: f64,
        total_trades: u64,
        winning_trades: u64,
        losing_trades: u64,
        win_rate_pct: f64,
        max_drawdown_pct: f64,
        trading_days: usize,
        net_profit: f64,
    },
}

impl MonthReport {
    fn return_pct(&self) -> Option<f64> {
        match self {
            MonthReport::Figures {
                monthly_return_pct, ..
            } => Some(*monthly_return_pct),
            MonthReport::NoData { .. } => None,
        }
    }
}

/// A month's report from its snapshots and the tally of the trades closed in it.
fn month_report(year: i32, month: u32, snapshots: &[&SnapshotRow], closed: &Tally) -> MonthReport {
    let (Some(first), Some(last)) = (snapshots.first(), snapshots.last()) else {
        return MonthReport::NoData {
            year,
            month,
            error: "No data available for this month",
        };
    };
    let points: Vec<EquityPoint> = snapshots
        .iter()
        .map(|s| EquityPoint {
            at_ms: s.taken_at,
            equity: s.equity(),
        })
        .collect();
    MonthReport::Figures {
        year,
        month,
        start_equity: round2(first.equity()),
        end_equity: round2(last.equity()),
        monthly_return_pct: change_pct(first.equity(), last.equity()),
        total_trades: closed.trades,
        winning_trades: closed.winners,
        losing_trades: closed.losers,
        win_rate_pct: closed.win_rate_pct(),
        max_drawdown_pct: round2(-metrics::drawdown(&points).max_drawdown_pct),
        trading_days: distinct_days(snapshots.iter().copied()),
        net_profit: round2(float(closed.net_pnl)),
    }
}

/// The tally of every trade closed in each month from `from_ms`'s on, from the account's day
/// totals, keyed by (year, month).
async fn monthly_tallies(
    app: &App,
    user_id: &str,
    from_ms: i64,
) -> ApiResult<BTreeMap<(i32, u32), Tally>> {
    let days = totals::days_since(&app.db.pool, user_id, utc_day(from_ms)).await?;
    Ok(engine_totals::monthly(&days)
        .into_iter()
        .map(|(first, tally)| ((first.year(), first.month()), tally))
        .collect())
}

/// The UTC (year, month) of a time in milliseconds.
fn month_of(ms: i64) -> (i32, u32) {
    let date = chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .date_naive();
    (date.year(), date.month())
}

pub async fn monthly_report(
    app: &App,
    user: &Principal,
    year: i64,
    month: i64,
) -> ApiResult<MonthReport> {
    if !(1..=12).contains(&month) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "Month must be between 1 and 12",
        ));
    }
    if !(2000..=2100).contains(&year) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "Year must be between 2000 and 2100",
        ));
    }
    let (year, month) = (year as i32, month as u32);
    let (start, end) = month_bounds(year, month).expect("a valid month");
    let snapshots = rows::snapshots_since(&app.db.pool, &user.user_id, start).await?;
    let in_month: Vec<&SnapshotRow> = snapshots.iter().filter(|s| s.taken_at < end).collect();
    let closed = monthly_tallies(app, &user.user_id, start)
        .await?
        .remove(&(year, month))
        .unwrap_or_default();
    Ok(month_report(year, month, &in_month, &closed))
}

/// A report for every month that has snapshots, oldest first.
pub async fn monthly_reports(app: &App, user: &Principal) -> ApiResult<Vec<MonthReport>> {
    let snapshots = rows::snapshots_since(&app.db.pool, &user.user_id, 0).await?;
    let tallies = monthly_tallies(app, &user.user_id, 0).await?;
    let mut months: Vec<(i32, u32)> = snapshots.iter().map(|s| month_of(s.taken_at)).collect();
    months.dedup();
    Ok(months
        .into_iter()
        .map(|(year, month)| {
            let in_month: Vec<&SnapshotRow> = snapshots
                .iter()
                .filter(|s| month_of(s.taken_at) == (year, month))
                .collect();
            let closed = tallies.get(&(year, month)).cloned().unwrap_or_default();
            month_report(year, month, &in_month, &closed)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn daily(values: &[f64]) -> Vec<EquityPoint> {
        (0..)
            .zip(values)
            .map(|(i, &equity)| EquityPoint {
                at_ms: 1_700_000_000_000 + i * DAY_MS,
                equity,
            })
            .collect()
    }

    #[test]
    fn regimes_of_equity_series() {
        assert_eq!(Regime::of(&[]), Regime::Ranging);
        assert_eq!(Regime::of(&daily(&[1000.0])), Regime::Ranging);
        assert_eq!(
            Regime::of(&daily(&[1000.0, 1010.0, 1020.0])),
            Regime::Ranging
        );
        let rising: Vec<f64> = (0..20).map(|i| 1000.0 + 4.0 * f64::from(i)).collect();
        assert_eq!(Regime::of(&daily(&rising)), Regime::BullTrending);
        let falling: Vec<f64> = (0..20).map(|i| 1000.0 - 4.0 * f64::from(i)).collect();
        assert_eq!(Regime::of(&daily(&falling)), Regime::BearTrending);
        // ±6 % day after day: no trend, but far above 60 % a year.
        let swinging: Vec<f64> = (0..20)
            .map(|i| if i % 2 == 0 { 1000.0 } else { 1060.0 })
            .collect();
        assert_eq!(Regime::of(&daily(&swinging)), Regime::Volatile);
        assert_eq!(Regime::of(&daily(&[1000.0, 1200.0, 900.0])), Regime::Crisis);
        assert_eq!(Regime::BearTrending.as_str(), "bear_trending");
    }
}
