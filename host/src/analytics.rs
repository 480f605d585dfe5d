//! Analytics: the dashboard figures, from the account's day totals, and the trade breakdowns of a
//! period, from its completed trades.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Timelike, Utc};
use rust_decimal::Decimal;
use serde::Serialize;

use crate::App;
use crate::auth::sessions::Principal;
use crate::engine::accounting::{CompletedTrade, float};
use crate::engine::reports::Period;
use crate::engine::totals::{DayTotals, Tally, utc_day};
use crate::engine::{self, metrics};
use crate::error::{ApiError, ApiResult};
use crate::store::now_ms;
use crate::store::{DAY_MS, totals, trades};

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct PeriodFigures {
    pub pnl: f64,
    pub pnl_pct: f64,
    pub trades: usize,
    /// Fraction of closed trades with a net profit (0 to 1).
    pub win_rate: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TopPerformer {
    pub symbol: String,
    pub pnl: f64,
    pub pnl_pct: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Dashboard {
    pub today: PeriodFigures,
    pub week: PeriodFigures,
    pub month: PeriodFigures,
    pub active_positions: usize,
    pub balance: f64,
    pub top_performer: Option<TopPerformer>,
}

fn figures(tally: &Tally, base: f64) -> PeriodFigures {
    PeriodFigures {
        pnl: float(tally.net_pnl.round_dp(8)),
        pnl_pct: if base > 0.0 {
            metrics::finite(float(tally.net_pnl) / base * 100.0)
        } else {
            0.0
        },
        trades: tally.trades as usize,
        win_rate: tally.win_rate(),
    }
}

/// Trades tallied per symbol, best net pnl first (by symbol on a tie).
fn by_symbol(tallies: BTreeMap<String, Tally>) -> Vec<(String, Tally)> {
    let mut rows: Vec<_> = tallies.into_iter().collect();
    rows.sort_by(|a, b| b.1.net_pnl.cmp(&a.1.net_pnl).then_with(|| a.0.cmp(&b.0)));
    rows
}

/// The trades closed from `start` on, tallied per symbol: the whole UTC days after `start`'s
/// from the account's day totals (`days`, read from that day on), and the part of `start`'s own
/// day from its trades.
async fn tally_since(
    app: &App,
    user_id: &str,
    days: &[DayTotals],
    start: i64,
) -> ApiResult<BTreeMap<String, Tally>> {
    let first_day = utc_day(start);
    let whole_first_day = start == first_day * DAY_MS;
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for d in days
        .iter()
        .filter(|d| d.day > first_day || (whole_first_day && d.day == first_day))
    {
        tallies.entry(d.symbol.clone()).or_default().merge(&d.tally);
    }
    if !whole_first_day {
        let next_day = (first_day + 1) * DAY_MS;
        for trade in trades::trades_between(&app.db.pool, user_id, start, next_day).await? {
            tallies.entry(trade.symbol.clone()).or_default().add(&trade);
        }
    }
    Ok(tallies)
}

/// Today, the last 7 and the last 30 days, read from the account's day totals and the trades of
/// two partial days, never its whole history.
pub async fn dashboard(app: &App, user: &Principal) -> ApiResult<Dashboard> {
    let now = now_ms();
    let month_start = now - 30 * DAY_MS;
    let (equity, initial) = engine::reports::equity_series(app, &user.user_id, month_start).await?;
    let equity_at = |at: i64| {
        equity
            .iter()
            .take_while(|p| p.at_ms <= at)
            .last()
            .or(equity.first())
            .map_or(initial, |p| p.equity)
    };
    let days = totals::days_since(&app.db.pool, &user.user_id, utc_day(month_start)).await?;
    let today_start = utc_day(now) * DAY_MS;
    let week_start = now - 7 * DAY_MS;
    let today = tally_since(app, &user.user_id, &days, today_start).await?;
    let week = tally_since(app, &user.user_id, &days, week_start).await?;
    let month = by_symbol(tally_since(app, &user.user_id, &days, month_start).await?);
    let top_performer = month.first().map(|(symbol, tally)| TopPerformer {
        symbol: symbol.clone(),
        pnl: float(tally.net_pnl.round_dp(8)),
        pnl_pct: if tally.size_usd.is_zero() {
            0.0
        } else {
            float((tally.net_pnl / tally.size_usd * Decimal::ONE_HUNDRED).round_dp(4))
        },
    });
    let positions = engine::reports::positions(app, user, None, None).await?;
    Ok(Dashboard {
        today: figures(&Tally::sum(today.values()), equity_at(today_start)),
        week: figures(&Tally::sum(week.values()), equity_at(week_start)),
        month: figures(
            &Tally::sum(month.iter().map(|(_, t)| t)),
            equity_at(month_start),
        ),
        active_positions: positions.summary.total_positions,
        balance: equity.last().map_or(initial, |p| p.equity),
        top_performer,
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GroupBy {
    Hour,
    Day,
    Week,
    Month,
}

impl GroupBy {
    pub fn parse(raw: Option<&str>) -> ApiResult<Option<GroupBy>> {
        match raw {
            None => Ok(None),
            Some("hour") => Ok(Some(GroupBy::Hour)),
            Some("day") => Ok(Some(GroupBy::Day)),
            Some("week") => Ok(Some(GroupBy::Week)),
            Some("month") => Ok(Some(GroupBy::Month)),
            Some(other) => Err(ApiError::invalid_field(
                "group_by",
                format!("`{other}` is not one of hour, day, week, month"),
            )),
        }
    }

    /// The label of the group a close time falls in (UTC).
    fn label(self, at: DateTime<Utc>) -> String {
        match self {
            GroupBy::Hour => at.format("%Y-%m-%dT%H:00:00Z").to_string(),
            GroupBy::Day => at.format("%Y-%m-%d").to_string(),
            GroupBy::Week => {
                let week = at.iso_week();
                format!("{}-W{:02}", week.year(), week.week())
            }
            GroupBy::Month => at.format("%Y-%m").to_string(),
        }
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Outcomes {
    pub wins: usize,
    pub losses: usize,
    pub win_rate: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct SymbolRow {
    pub symbol: String,
    pub trades: usize,
    pub pnl: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct HourRow {
    pub hour: u32,
    pub trades: usize,
    pub avg_pnl: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TradeRef {
    pub trade_id: String,
    pub symbol: String,
    pub pnl: f64,
    pub pnl_pct: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct GroupRow {
    pub period: String,
    pub trades: usize,
    pub pnl: f64,
    pub win_rate: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TradeAnalytics {
    pub period: &'static str,
    pub total_trades: usize,
    pub by_outcome: Outcomes,
    pub by_symbol: Vec<SymbolRow>,
    pub by_hour: Vec<HourRow>,
    pub avg_hold_time_minutes: f64,
    pub best_trade: Option<TradeRef>,
    pub worst_trade: Option<TradeRef>,
    /// With `group_by`: the trades per hour, day, ISO week or month of their close.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<GroupRow>>,
}

fn trade_ref(trade: &CompletedTrade) -> TradeRef {
    TradeRef {
        trade_id: trade.id.clone(),
        symbol: trade.symbol.clone(),
        pnl: float(trade.net_pnl.round_dp(8)),
        pnl_pct: float(trade.pnl_pct),
    }
}

fn closed_at(trade: &CompletedTrade) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(trade.closed_at_ms).unwrap_or_default()
}

pub async fn trades(
    app: &App,
    user: &Principal,
    period: Period,
    symbol: Option<&str>,
    group_by: Option<GroupBy>,
) -> ApiResult<TradeAnalytics> {
    let symbol = symbol.map(str::to_uppercase);
    let all = trades::trades_since(&app.db.pool, &user.user_id, period.since(now_ms())).await?;
    let trades: Vec<&CompletedTrade> = all
        .iter()
        .filter(|t| symbol.as_deref().is_none_or(|s| t.symbol == s))
        .collect();
    let mut hours: BTreeMap<u32, (usize, Decimal)> = BTreeMap::new();
    for trade in &trades {
        let entry = hours.entry(closed_at(trade).hour()).or_default();
        entry.0 += 1;
        entry.1 += trade.net_pnl;
    }
    let groups = group_by.map(|group_by| {
        let mut groups: BTreeMap<String, Tally> = BTreeMap::new();
        for trade in &trades {
            groups
                .entry(group_by.label(closed_at(trade)))
                .or_default()
                .add(trade);
        }
        groups
            .into_iter()
            .map(|(period, tally)| {
                let figures = figures(&tally, 0.0);
                GroupRow {
                    period,
                    trades: figures.trades,
                    pnl: figures.pnl,
                    win_rate: figures.win_rate,
                }
            })
            .collect()
    });
    let mut symbols: BTreeMap<String, Tally> = BTreeMap::new();
    for trade in &trades {
        symbols.entry(trade.symbol.clone()).or_default().add(trade);
    }
    let outcomes = Tally::sum(symbols.values());
    let hold: i64 = trades
        .iter()
        .map(|t| (t.closed_at_ms - t.opened_at_ms).max(0))
        .sum();
    Ok(TradeAnalytics {
        period: period.as_str(),
        total_trades: trades.len(),
        by_outcome: Outcomes {
            wins: outcomes.winners as usize,
            losses: outcomes.losers as usize,
            win_rate: outcomes.win_rate(),
        },
        by_symbol: by_symbol(symbols)
            .into_iter()
            .map(|(symbol, tally)| SymbolRow {
                symbol,
                trades: tally.trades as usize,
                pnl: float(tally.net_pnl.round_dp(8)),
            })
            .collect(),
        by_hour: hours
            .into_iter()
            .map(|(hour, (count, pnl))| HourRow {
                hour,
                trades: count,
                avg_pnl: metrics::finite(float(pnl) / count as f64),
            })
            .collect(),
        avg_hold_time_minutes: if trades.is_empty() {
            0.0
        } else {
            hold as f64 / trades.len() as f64 / 60_000.0
        },
        best_trade: trades
            .iter()
            .max_by_key(|t| t.net_pnl)
            .map(|t| trade_ref(t)),
        worst_trade: trades
            .iter()
            .min_by_key(|t| t.net_pnl)
            .map(|t| trade_ref(t)),
        groups,
    })
}
