//! Companion set F: KPI snapshots, the tracker's status, and the risk alarms the risk-rule
//! plugins raise on every scan.

use std::collections::BTreeMap;

use serde::Serialize;
use utoipa::ToSchema;

use super::Kpi;
use crate::App;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::performance as rows;
use crate::store::{alarms, alarms::AlarmRow};
use crate::store::{iso8601, now_ms};

fn parse(text: &str) -> ApiResult<Kpi> {
    serde_json::from_str(text)
        .map_err(|err| ApiError::internal(format!("a stored KPI snapshot does not parse: {err}")))
}

pub async fn current(app: &App, user: &Principal) -> ApiResult<Kpi> {
    let latest = rows::latest_kpi(&app.db.pool, &user.user_id).await?;
    match latest {
        Some(text) => parse(&text),
        None => Err(ApiError::new(ErrorCode::NotFound, "No KPI data available")),
    }
}

/// `hours` must be a positive whole number (default 24).
pub fn hours(raw: Option<i64>) -> ApiResult<i64> {
    match raw.unwrap_or(24) {
        h if (1..=24 * 366).contains(&h) => Ok(h),
        _ => Err(
            ApiError::invalid_field("hours", "must be a whole number from 1 to 8784")
                .detail("in", "query"),
        ),
    }
}

/// The snapshots of the last `hours`, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct KpiHistory {
    pub data_points: usize,
    pub history: Vec<Kpi>,
    pub period_hours: i64,
}

pub async fn history(app: &App, user: &Principal, hours: i64) -> ApiResult<KpiHistory> {
    let since = now_ms() - hours * 3_600_000;
    let history = rows::kpi_since(&app.db.pool, &user.user_id, since)
        .await?
        .iter()
        .map(|text| parse(text))
        .collect::<ApiResult<Vec<Kpi>>>()?;
    Ok(KpiHistory {
        data_points: history.len(),
        history,
        period_hours: hours,
    })
}

/// The latest snapshot grouped as the original's summary, or `no_data` before the first one.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum KpiSummary {
    NoData {
        /// `no_data`.
        status: &'static str,
        message: &'static str,
    },
    Active {
        /// `active`.
        status: &'static str,
        timestamp: String,
        returns: Returns,
        risk_metrics: RiskMetrics,
        trade_stats: TradeStats,
        position_metrics: PositionMetrics,
        account: AccountFigures,
    },
}

impl KpiSummary {
    pub fn is_active(&self) -> bool {
        matches!(self, KpiSummary::Active { .. })
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Returns {
    pub total: f64,
    pub daily: f64,
    pub weekly: f64,
    pub monthly: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RiskMetrics {
    pub sharpe_ratio: f64,
    pub sortino_ratio: f64,
    pub max_drawdown: f64,
    pub current_drawdown: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TradeStats {
    pub total_trades: u64,
    pub winning_trades: u64,
    pub losing_trades: u64,
    pub win_rate: f64,
    pub profit_factor: f64,
    pub avg_win: f64,
    pub avg_loss: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PositionMetrics {
    pub active_positions: usize,
    pub total_exposure: f64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountFigures {
    pub value: f64,
    pub cash: f64,
    pub unrealized_pnl: f64,
    pub realized_pnl: f64,
}

fn summary_of(kpi: Option<Kpi>) -> KpiSummary {
    let Some(k) = kpi else {
        return KpiSummary::NoData {
            status: "no_data",
            message: "No KPI data available yet",
        };
    };
    KpiSummary::Active {
        status: "active",
        timestamp: k.timestamp,
        returns: Returns {
            total: k.total_return_pct,
            daily: k.daily_return_pct,
            weekly: k.weekly_return_pct,
            monthly: k.monthly_return_pct,
        },
        risk_metrics: RiskMetrics {
            sharpe_ratio: k.sharpe_ratio,
            sortino_ratio: k.sortino_ratio,
            max_drawdown: k.max_drawdown_pct,
            current_drawdown: k.current_drawdown_pct,
        },
        trade_stats: TradeStats {
            total_trades: k.total_trades,
            winning_trades: k.winning_trades,
            losing_trades: k.losing_trades,
            win_rate: k.win_rate_pct,
            profit_factor: k.profit_factor,
            avg_win: k.avg_win,
            avg_loss: k.avg_loss,
        },
        position_metrics: PositionMetrics {
            active_positions: k.active_positions,
            total_exposure: k.total_exposure_pct,
        },
        account: AccountFigures {
            value: k.account_value,
            cash: k.cash_balance,
            unrealized_pnl: k.unrealized_pnl,
            realized_pnl: k.realized_pnl_total,
        },
    }
}

pub async fn summary(app: &App, user_id: &str) -> ApiResult<KpiSummary> {
    let latest = rows::latest_kpi(&app.db.pool, user_id).await?;
    Ok(summary_of(latest.as_deref().map(parse).transpose()?))
}

/// The tracker: whether it runs, its intervals (seconds) and what it has written.
#[derive(Debug, Serialize, ToSchema)]
pub struct TrackerStatus {
    pub running: bool,
    pub paused: bool,
    pub callbacks_configured: bool,
    pub update_interval: f64,
    pub report_interval: f64,
    #[schema(format = DateTime)]
    pub last_update: Option<String>,
    #[schema(format = DateTime)]
    pub last_report: Option<String>,
    pub update_count: i64,
    pub report_count: i64,
}

pub async fn status(app: &App, user: &Principal) -> ApiResult<TrackerStatus> {
    let (updates, last_update) = rows::tracker_stats(&app.db.pool, &user.user_id).await?;
    let (reports, last_report) = rows::report_stats(&app.db.pool, &user.user_id).await?;
    Ok(TrackerStatus {
        running: app.tracker.running(),
        paused: false,
        callbacks_configured: true,
        update_interval: app.config.perf_update_interval.as_secs_f64(),
        report_interval: app.config.perf_report_interval.as_secs_f64(),
        last_update: last_update.map(iso8601),
        last_report: last_report.map(iso8601),
        update_count: updates,
        report_count: reports,
    })
}

/// A risk alarm a risk-rule plugin raised.
#[derive(Debug, Serialize, ToSchema)]
pub struct Alarm {
    pub alarm_id: String,
    #[schema(format = DateTime)]
    pub timestamp: String,
    /// INFO, WARNING, CRITICAL or EMERGENCY.
    pub level: String,
    pub alarm_type: String,
    pub message: String,
    pub current_value: f64,
    pub threshold_value: f64,
    pub recommended_action: String,
    /// `active` or `cleared`.
    pub status: String,
    #[schema(format = DateTime)]
    pub cleared_at: Option<String>,
    /// Always empty; kept for the original's clients.
    pub metadata: BTreeMap<String, String>,
}

fn alarm(a: &AlarmRow) -> Alarm {
    Alarm {
        alarm_id: a.id.clone(),
        timestamp: iso8601(a.raised_at),
        level: a.level.clone(),
        alarm_type: a.alarm_type.clone(),
        message: a.message.clone(),
        current_value: a.current_value,
        threshold_value: a.threshold_value,
        recommended_action: a.recommended_action.clone(),
        status: a.status.clone(),
        cleared_at: a.cleared_at.map(iso8601),
        metadata: BTreeMap::new(),
    }
}

async fn active(app: &App, user_id: &str) -> ApiResult<Vec<Alarm>> {
    let mut alarms = alarms::active_alarms(&app.db.pool, user_id).await?;
    alarms.reverse();
    Ok(alarms.iter().map(alarm).collect())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Alarms {
    pub count: usize,
    pub alarms: Vec<Alarm>,
    /// Only in the history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period_hours: Option<i64>,
}

pub async fn active_alarms(app: &App, user: &Principal) -> ApiResult<Alarms> {
    let alarms = active(app, &user.user_id).await?;
    Ok(Alarms {
        count: alarms.len(),
        alarms,
        period_hours: None,
    })
}

pub async fn alarm_history(app: &App, user: &Principal, hours: i64) -> ApiResult<Alarms> {
    let since = now_ms() - hours * 3_600_000;
    let alarms: Vec<Alarm> = rows::alarms_since(&app.db.pool, &user.user_id, since)
        .await?
        .iter()
        .map(alarm)
        .collect();
    Ok(Alarms {
        count: alarms.len(),
        alarms,
        period_hours: Some(hours),
    })
}

/// Everything set F shows on one screen.
#[derive(Debug, Serialize, ToSchema)]
pub struct Overview {
    #[schema(format = DateTime)]
    pub timestamp: String,
    pub system_health: SystemHealth,
    pub risk_alarms: RiskAlarms,
    pub performance_tracking: TrackerStatus,
    pub kpi: KpiSummary,
}

/// Each part `active` or `inactive`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SystemHealth {
    pub kpi_tracking: &'static str,
    pub performance_tracking: &'static str,
    pub risk_monitoring: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RiskAlarms {
    pub active_count: usize,
    pub has_critical: bool,
    pub has_warning: bool,
    pub active_alarms: Vec<Alarm>,
}

pub async fn overview(app: &App, user: &Principal) -> ApiResult<Overview> {
    let kpi = summary(app, &user.user_id).await?;
    let tracking = status(app, user).await?;
    let alarms = active(app, &user.user_id).await?;
    let level = |names: &[&str]| alarms.iter().any(|a| names.contains(&a.level.as_str()));
    let active_or_not = |on: bool| if on { "active" } else { "inactive" };
    Ok(Overview {
        timestamp: iso8601(now_ms()),
        system_health: SystemHealth {
            kpi_tracking: active_or_not(kpi.is_active()),
            performance_tracking: active_or_not(app.tracker.running()),
            risk_monitoring: "active",
        },
        risk_alarms: RiskAlarms {
            active_count: alarms.len(),
            has_critical: level(&["CRITICAL", "EMERGENCY"]),
            has_warning: level(&["WARNING"]),
            active_alarms: alarms,
        },
        performance_tracking: tracking,
        kpi,
    })
}
