//! Companion set E: the investor dashboard over the user's persisted performance snapshots.

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use serde::Serialize;
use serde_json::{Map, Value, json};
use statrs::statistics::Statistics;

use super::{DAY_MS, TradeFigures, change_pct, closed_trades, equity_at, initial_capital, ratios};
use crate::App;
use crate::auth::Principal;
use crate::companion::round2;
use crate::engine::metrics::{self, EquityPoint};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::performance::{self as rows, SnapshotRow};
use crate::store::{iso8601, new_id, now_ms, trading};

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

#[derive(Debug, Default, Serialize)]
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
}

async fn figures(app: &App, user_id: &str) -> ApiResult<Figures> {
    let snapshots = rows::snapshots_since(&app.db.pool, user_id, 0).await?;
    let trades = closed_trades(app, user_id, 0).await?;
    let points = series(&snapshots);
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        let initial = initial_capital(app, user_id).await?;
        return Ok(Figures {
            metrics: Metrics::default(),
            initial,
            current: initial,
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
    let trade_figures = TradeFigures::of(&trades);
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
    })
}

pub async fn metrics(app: &App, user: &Principal) -> ApiResult<Metrics> {
    Ok(figures(app, &user.user_id).await?.metrics)
}

/// `days` absent or 0: all snapshots; otherwise the last `days` days.
pub fn since(days: Option<i64>) -> ApiResult<i64> {
    match days.unwrap_or(0) {
        0 => Ok(0),
        d if d > 0 => Ok(now_ms() - d.min(36_500) * DAY_MS),
        _ => Err(
            ApiError::invalid_field("days", "must be a whole number of at least 0")
                .detail("in", "query"),
        ),
    }
}

pub async fn equity_curve(app: &App, user: &Principal, since: i64) -> ApiResult<Vec<Value>> {
    Ok(rows::snapshots_since(&app.db.pool, &user.user_id, since)
        .await?
        .iter()
        .map(|s| json!({"timestamp": iso8601(s.taken_at), "equity": round2(s.equity())}))
        .collect())
}

/// Percent below the running peak at each snapshot (positive numbers), peaks taken over the
/// whole history so a window starting mid-drawdown shows it.
pub async fn drawdown_curve(app: &App, user: &Principal, since: i64) -> ApiResult<Vec<Value>> {
    let snapshots = rows::snapshots_since(&app.db.pool, &user.user_id, 0).await?;
    Ok(metrics::drawdown_curve(&series(&snapshots))
        .into_iter()
        .filter(|(at, _)| *at >= since)
        .map(|(at, pct)| json!({"timestamp": iso8601(at), "drawdown_pct": round2(-pct)}))
        .collect())
}

const SNAPSHOT_FIELDS: [&str; 7] = [
    "cash",
    "positions_value",
    "unrealized_pnl",
    "realized_pnl_today",
    "total_trades",
    "winning_trades",
    "losing_trades",
];

/// Records a snapshot the client gives; every field is required and checked before anything
/// is written.
pub async fn update_snapshot(app: &App, user: &Principal, body: Option<Value>) -> ApiResult<Value> {
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
    if row.winning_trades + row.losing_trades > row.total_trades {
        return Err(invalid(
            "winning_trades plus losing_trades cannot exceed total_trades".into(),
        ));
    }
    rows::insert_snapshot(&app.db.pool, &row).await?;
    Ok(json!({
        "timestamp": iso8601(row.taken_at),
        "nav": round2(row.equity()),
        "equity": round2(row.equity()),
        "cash": row.cash,
        "positions_value": row.positions_value,
        "unrealized_pnl": row.unrealized_pnl,
        "realized_pnl_today": row.realized_pnl_today,
        "total_trades": row.total_trades,
        "winning_trades": row.winning_trades,
        "losing_trades": row.losing_trades,
    }))
}

pub async fn investor_summary(app: &App, user: &Principal) -> ApiResult<Value> {
    let figures = figures(app, &user.user_id).await?;
    let m = &figures.metrics;
    let bot = trading::bot(&app.db.pool, &user.user_id).await?;
    let running = bot
        .as_ref()
        .filter(|b| crate::engine::BotStatus::parse(&b.status).is_scanned());
    let allocations: Map<String, Value> = running
        .map(|b| (b.strategy.clone(), json!(100.0)))
        .into_iter()
        .collect();
    let months = monthly_reports(app, user).await?;
    let monthly_avg = if months.is_empty() {
        0.0
    } else {
        round2(
            months
                .iter()
                .filter_map(|m| m["monthly_return_pct"].as_f64())
                .sum::<f64>()
                / months.len() as f64,
        )
    };
    Ok(json!({
        "user_id": user.user_id,
        "initial_capital": round2(figures.initial),
        "current_nav": round2(figures.current),
        "current_equity": round2(figures.current),
        "total_return_usd": round2(figures.current - figures.initial),
        "total_return_pct": m.total_return_pct,
        "annualized_return_pct": m.annualized_return_pct,
        "annualized_volatility_pct": m.annualized_volatility_pct,
        "sharpe_ratio": m.sharpe_ratio,
        "sortino_ratio": m.sortino_ratio,
        "max_drawdown_pct": m.max_drawdown_pct,
        "current_drawdown_pct": m.current_drawdown_pct,
        "win_rate_pct": m.win_rate_pct,
        "total_trades": m.total_trades,
        "avg_trades_per_day": m.avg_trades_per_day,
        "days_trading": m.days_trading,
        "monthly_avg_return_pct": monthly_avg,
        "active_strategies": allocations.len(),
        "strategy_allocations": allocations,
        "diversification_score": diversification(app, &user.user_id).await?,
        "reporting_date": iso8601(now_ms()),
    }))
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

fn month_report(
    year: i32,
    month: u32,
    snapshots: &[&SnapshotRow],
    trades: &[metrics::ClosedTrade],
) -> Value {
    let (Some(first), Some(last)) = (snapshots.first(), snapshots.last()) else {
        return json!({"year": year, "month": month, "error": "No data available for this month"});
    };
    let points: Vec<EquityPoint> = snapshots
        .iter()
        .map(|s| EquityPoint {
            at_ms: s.taken_at,
            equity: s.equity(),
        })
        .collect();
    let figures = TradeFigures::of(trades);
    let net: f64 = trades.iter().map(|t| t.net_pnl).sum();
    json!({
        "year": year,
        "month": month,
        "start_equity": round2(first.equity()),
        "end_equity": round2(last.equity()),
        "monthly_return_pct": change_pct(first.equity(), last.equity()),
        "total_trades": figures.total,
        "winning_trades": figures.winners,
        "losing_trades": figures.losers,
        "win_rate_pct": figures.win_rate_pct,
        "max_drawdown_pct": round2(-metrics::drawdown(&points).max_drawdown_pct),
        "trading_days": distinct_days(snapshots.iter().copied()),
        "net_profit": round2(net),
    })
}

pub async fn monthly_report(
    app: &App,
    user: &Principal,
    year: i64,
    month: i64,
) -> ApiResult<Value> {
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
    let trades: Vec<_> = closed_trades(app, &user.user_id, start)
        .await?
        .into_iter()
        .filter(|t| t.closed_at_ms < end)
        .collect();
    Ok(month_report(year, month, &in_month, &trades))
}

/// A report for every month that has snapshots, oldest first.
pub async fn monthly_reports(app: &App, user: &Principal) -> ApiResult<Vec<Value>> {
    let snapshots = rows::snapshots_since(&app.db.pool, &user.user_id, 0).await?;
    let trades = closed_trades(app, &user.user_id, 0).await?;
    let month_of = |ms: i64| {
        let date = chrono::DateTime::from_timestamp_millis(ms)
            .unwrap_or_default()
            .date_naive();
        (date.year(), date.month())
    };
    let mut months: Vec<(i32, u32)> = snapshots.iter().map(|s| month_of(s.taken_at)).collect();
    months.dedup();
    Ok(months
        .into_iter()
        .map(|(year, month)| {
            let in_month: Vec<&SnapshotRow> = snapshots
                .iter()
                .filter(|s| month_of(s.taken_at) == (year, month))
                .collect();
            let closed: Vec<_> = trades
                .iter()
                .filter(|t| month_of(t.closed_at_ms) == (year, month))
                .cloned()
                .collect();
            month_report(year, month, &in_month, &closed)
        })
        .collect())
}
