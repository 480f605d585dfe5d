//! Companion set F: KPI snapshots, the tracker's status, and the risk alarms the risk-rule
//! plugins raise on every scan.

use serde_json::{Value, json};

use super::Kpi;
use crate::App;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::performance as rows;
use crate::store::trading::{self, AlarmRow};
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

pub async fn history(app: &App, user: &Principal, hours: i64) -> ApiResult<Value> {
    let since = now_ms() - hours * 3_600_000;
    let history = rows::kpi_since(&app.db.pool, &user.user_id, since)
        .await?
        .iter()
        .map(|text| parse(text))
        .collect::<ApiResult<Vec<Kpi>>>()?;
    Ok(json!({
        "data_points": history.len(),
        "history": history,
        "period_hours": hours,
    }))
}

fn summary_of(kpi: Option<Kpi>) -> Value {
    let Some(k) = kpi else {
        return json!({"status": "no_data", "message": "No KPI data available yet"});
    };
    json!({
        "status": "active",
        "timestamp": k.timestamp,
        "returns": {
            "total": k.total_return_pct,
            "daily": k.daily_return_pct,
            "weekly": k.weekly_return_pct,
            "monthly": k.monthly_return_pct,
        },
        "risk_metrics": {
            "sharpe_ratio": k.sharpe_ratio,
            "sortino_ratio": k.sortino_ratio,
            "max_drawdown": k.max_drawdown_pct,
            "current_drawdown": k.current_drawdown_pct,
        },
        "trade_stats": {
            "total_trades": k.total_trades,
            "winning_trades": k.winning_trades,
            "losing_trades": k.losing_trades,
            "win_rate": k.win_rate_pct,
            "profit_factor": k.profit_factor,
            "avg_win": k.avg_win,
            "avg_loss": k.avg_loss,
        },
        "position_metrics": {
            "active_positions": k.active_positions,
            "total_exposure": k.total_exposure_pct,
        },
        "account": {
            "value": k.account_value,
            "cash": k.cash_balance,
            "unrealized_pnl": k.unrealized_pnl,
            "realized_pnl": k.realized_pnl_total,
        },
    })
}

pub async fn summary(app: &App, user_id: &str) -> ApiResult<Value> {
    let latest = rows::latest_kpi(&app.db.pool, user_id).await?;
    Ok(summary_of(latest.as_deref().map(parse).transpose()?))
}

pub async fn status(app: &App, user: &Principal) -> ApiResult<Value> {
    let (updates, last_update) = rows::tracker_stats(&app.db.pool, &user.user_id).await?;
    let (reports, last_report) = rows::report_stats(&app.db.pool, &user.user_id).await?;
    Ok(json!({
        "running": app.tracker.running(),
        "paused": false,
        "callbacks_configured": true,
        "update_interval": app.config.perf_update_interval.as_secs_f64(),
        "report_interval": app.config.perf_report_interval.as_secs_f64(),
        "last_update": last_update.map(iso8601),
        "last_report": last_report.map(iso8601),
        "update_count": updates,
        "report_count": reports,
    }))
}

fn alarm(a: &AlarmRow) -> Value {
    json!({
        "alarm_id": a.id,
        "timestamp": iso8601(a.raised_at),
        "level": a.level,
        "alarm_type": a.alarm_type,
        "message": a.message,
        "current_value": a.current_value,
        "threshold_value": a.threshold_value,
        "recommended_action": a.recommended_action,
        "status": a.status,
        "cleared_at": a.cleared_at.map(iso8601),
        "metadata": {},
    })
}

async fn active(app: &App, user_id: &str) -> ApiResult<Vec<Value>> {
    let mut alarms = trading::active_alarms(&app.db.pool, user_id).await?;
    alarms.reverse();
    Ok(alarms.iter().map(alarm).collect())
}

pub async fn active_alarms(app: &App, user: &Principal) -> ApiResult<Value> {
    let alarms = active(app, &user.user_id).await?;
    Ok(json!({"count": alarms.len(), "alarms": alarms}))
}

pub async fn alarm_history(app: &App, user: &Principal, hours: i64) -> ApiResult<Value> {
    let since = now_ms() - hours * 3_600_000;
    let alarms: Vec<Value> = rows::alarms_since(&app.db.pool, &user.user_id, since)
        .await?
        .iter()
        .map(alarm)
        .collect();
    Ok(json!({"count": alarms.len(), "alarms": alarms, "period_hours": hours}))
}

pub async fn overview(app: &App, user: &Principal) -> ApiResult<Value> {
    let kpi = summary(app, &user.user_id).await?;
    let tracking = status(app, user).await?;
    let alarms = active(app, &user.user_id).await?;
    let level = |names: &[&str]| {
        alarms
            .iter()
            .any(|a| a["level"].as_str().is_some_and(|l| names.contains(&l)))
    };
    let active_or_not = |on: bool| if on { "active" } else { "inactive" };
    Ok(json!({
        "timestamp": iso8601(now_ms()),
        "system_health": {
            "kpi_tracking": active_or_not(kpi["status"] == "active"),
            "performance_tracking": active_or_not(app.tracker.running()),
            "risk_monitoring": "active",
        },
        "risk_alarms": {
            "active_count": alarms.len(),
            "has_critical": level(&["CRITICAL", "EMERGENCY"]),
            "has_warning": level(&["WARNING"]),
            "active_alarms": alarms,
        },
        "performance_tracking": tracking,
        "kpi": kpi,
    }))
}
