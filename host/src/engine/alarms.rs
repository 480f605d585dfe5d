//! Risk alarms: the risk-rule plugins' alarms on each scan's KPI figures (fired once per cooldown,
//! cleared when their condition clears, an EMERGENCY pausing the bot), the daily loss limit, and
//! the engine's own alarms (a position that cannot be closed, books that differ from the venue),
//! which stay until what caused them is resolved.

use std::collections::HashMap;

use rust_decimal::Decimal;
use serde::Serialize;

use super::accounting::{self, decimal, float};
use super::metrics;
use super::trader::Trader;
use super::wire::thresholds;
use super::{BotStatus, publish_status};
use crate::App;
use crate::events::Channel;
use crate::notices::{self, AlarmNotice, Kind};
use crate::plugins::PluginKind;
use crate::plugins::bindings::types::{self as wire, AlarmLevel, KpiSnapshot};
use crate::plugins::off_thread as blocking;
use crate::store::writer::{Job, RaisedAlarm, WriteError};
use crate::store::{alarms, alarms::AlarmRow};
use crate::store::{iso8601, new_id};

/// An alarm type does not fire again within this long (decisions.md).
pub const ALARM_COOLDOWN_MS: i64 = 15 * 60 * 1000;

/// Alarms the engine raises itself; the risk rules' evaluation does not clear them.
pub const POSITION_CLOSE_FAILED: &str = "POSITION_CLOSE_FAILED";
pub const RECONCILIATION_MISMATCH: &str = "RECONCILIATION_MISMATCH";
const ENGINE_ALARMS: [&str; 2] = [POSITION_CLOSE_FAILED, RECONCILIATION_MISMATCH];

/// The figures risk rules judge the account by.
pub fn kpi(trader: &Trader, now: i64) -> KpiSnapshot {
    let equity = trader.equity();
    let equity_f = float(equity);
    let initial = float(trader.account.initial_capital);
    let stats = &trader.stats;
    let exposure = float(accounting::exposure(&trader.positions));
    let largest = trader
        .positions
        .iter()
        .map(|p| float(p.market_value()))
        .fold(0.0, f64::max);
    let pct = |part: f64, whole: f64| {
        if whole > 0.0 {
            metrics::finite(part / whole * 100.0)
        } else {
            0.0
        }
    };
    let mut closes: Vec<(chrono::NaiveDate, f64)> = stats
        .daily_closes
        .iter()
        .filter_map(|(day, value)| {
            chrono::DateTime::from_timestamp(day * 86_400, 0).map(|d| (d.date_naive(), *value))
        })
        .collect();
    if let Some(today) = chrono::DateTime::from_timestamp_millis(now) {
        closes.push((today.date_naive(), equity_f));
    }
    KpiSnapshot {
        timestamp_ms: now,
        account_value: equity_f,
        cash_balance: float(trader.account.cash),
        total_return_pct: pct(equity_f - initial, initial),
        daily_return_pct: pct(float(trader.daily_pnl()), float(stats.day_start_equity)),
        current_drawdown_pct: stats.drawdown_pct(equity),
        max_drawdown_pct: stats.max_drawdown_pct,
        win_rate_pct: stats.trades.sums.win_rate_pct(),
        profit_factor: stats.trades.sums.profit_factor(),
        sharpe_ratio: metrics::sharpe(&metrics::daily_returns(&closes)),
        total_trades: stats.trades.sums.trades as u32,
        winning_trades: stats.trades.sums.winners as u32,
        losing_trades: stats.trades.sums.losers as u32,
        consecutive_losses: (-stats.trades.streak).max(0) as u32,
        active_positions: trader.positions.len() as u32,
        exposure_pct: pct(exposure, equity_f),
        largest_position_pct: pct(largest, equity_f),
    }
}

#[derive(Serialize)]
struct AlarmEvent<'a> {
    alarm_id: &'a str,
    alarm_type: &'a str,
    level: &'a str,
    status: &'a str,
    message: &'a str,
    current_value: f64,
    threshold_value: f64,
    recommended_action: &'a str,
    timestamp: String,
}

fn level_name(level: AlarmLevel) -> &'static str {
    match level {
        AlarmLevel::Warning => "WARNING",
        AlarmLevel::Critical => "CRITICAL",
        AlarmLevel::Emergency => "EMERGENCY",
    }
}

/// Saves a raised alarm and records its notice, in one transaction of the books' writer (when a
/// market moves, alarms rise for many users at once while their bookings are written).
async fn save_raised(app: &App, trader: &Trader, row: &AlarmRow) -> Result<(), WriteError> {
    let user_id = trader.user_id.as_str();
    let notice = AlarmNotice {
        alarm_id: &row.id,
        alarm_type: &row.alarm_type,
        level: &row.level,
        message: &row.message,
        current_value: row.current_value,
        threshold_value: row.threshold_value,
        recommended_action: &row.recommended_action,
        timestamp: iso8601(row.raised_at),
    };
    let raised = RaisedAlarm {
        user_id: user_id.to_string(),
        alarm: row.clone(),
        event: notices::event(Some(user_id), Kind::Alarm, &notice, row.raised_at),
    };
    app.db
        .write_under(trader.fence(), Job::Alarm(Box::new(raised)))
        .await?;
    app.notifier.wake();
    Ok(())
}

pub fn publish_alarm(app: &App, user_id: &str, alarm: &AlarmRow, now: i64) {
    app.events.publish(
        user_id,
        Channel::Alarms,
        if alarm.status == "active" {
            "alarm_triggered"
        } else {
            "alarm_cleared"
        },
        &AlarmEvent {
            alarm_id: &alarm.id,
            alarm_type: &alarm.alarm_type,
            level: &alarm.level,
            status: &alarm.status,
            message: &alarm.message,
            current_value: alarm.current_value,
            threshold_value: alarm.threshold_value,
            recommended_action: &alarm.recommended_action,
            timestamp: iso8601(now),
        },
    );
}

/// Runs every risk rule's alarm evaluation: new alarms fire (outside their cooldown), alarms
/// whose condition cleared are cleared, and an EMERGENCY pauses the bot. Returns whether the bot
/// changed.
pub async fn evaluate_alarms(app: &App, trader: &mut Trader, now: i64) -> Result<bool, String> {
    let kpi = kpi(trader, now);
    let thresholds = thresholds(
        &trader.settings,
        trader.settings.max_positions(&trader.entitlement),
    );
    let mut raised: HashMap<String, wire::Alarm> = HashMap::new();
    for name in app.plugins.names(PluginKind::RiskRule) {
        let Ok(active) = app.plugins.active(PluginKind::RiskRule, &name) else {
            continue;
        };
        let runtime = app.plugins.runtime().clone();
        let given = thresholds.clone();
        let alarms = blocking(move || runtime.evaluate_alarms(&active, &kpi, &given))
            .await?
            .map_err(|err| err.to_string())?;
        for alarm in alarms {
            let stronger = raised
                .get(&alarm.alarm_type)
                .is_none_or(|seen| (alarm.level as u8) > (seen.level as u8));
            if stronger {
                raised.insert(alarm.alarm_type.clone(), alarm);
            }
        }
    }
    let db = &app.db.pool;
    let mut bot_changed = false;
    let cleared: Vec<String> = trader
        .active_alarms
        .keys()
        .filter(|t| !raised.contains_key(*t) && !ENGINE_ALARMS.contains(&t.as_str()))
        .cloned()
        .collect();
    for alarm_type in cleared {
        if let Some(mut alarm) = trader.active_alarms.remove(&alarm_type) {
            alarms::clear_alarm(db, &alarm.id, now)
                .await
                .map_err(|err| err.to_string())?;
            alarm.status = "cleared".into();
            alarm.cleared_at = Some(now);
            publish_alarm(app, &trader.user_id, &alarm, now);
        }
    }
    for (alarm_type, alarm) in raised {
        if trader.active_alarms.contains_key(&alarm_type)
            || trader
                .last_raised
                .get(&alarm_type)
                .is_some_and(|at| now - at < ALARM_COOLDOWN_MS)
        {
            continue;
        }
        let row = AlarmRow {
            id: new_id(),
            alarm_type: alarm_type.clone(),
            level: level_name(alarm.level).into(),
            message: alarm.message.clone(),
            current_value: metrics::finite(alarm.current_value),
            threshold_value: metrics::finite(alarm.threshold_value),
            recommended_action: alarm.recommended_action.clone(),
            status: "active".into(),
            raised_at: now,
            cleared_at: None,
        };
        save_raised(app, trader, &row)
            .await
            .map_err(|err| err.to_string())?;
        publish_alarm(app, &trader.user_id, &row, now);
        trader.last_raised.insert(alarm_type.clone(), now);
        if alarm.level == AlarmLevel::Emergency && trader.status() == BotStatus::Running {
            trader.bot.status = BotStatus::Paused.as_str().into();
            trader.bot.last_error = Some(format!(
                "Paused by EMERGENCY alarm {alarm_type}: {}",
                alarm.message
            ));
            publish_status(app, trader, "Paused by an emergency alarm");
            bot_changed = true;
        }
        trader.active_alarms.insert(alarm_type, row);
    }
    Ok(bot_changed)
}

/// Pauses a running bot whose loss today reached the daily limit: the smaller of the settings'
/// `max_daily_loss_usd` and `daily_loss_limit_pct` of the day's starting equity.
pub fn check_daily_loss(app: &App, trader: &mut Trader) -> bool {
    if trader.status() != BotStatus::Running {
        return false;
    }
    let Some(reason) = daily_loss_reached(trader) else {
        return false;
    };
    trader.bot.status = BotStatus::Paused.as_str().into();
    trader.bot.last_error = Some(reason);
    publish_status(app, trader, "Paused by the daily loss limit");
    true
}

/// Why the account must stop opening positions today: its loss since the day began reached the
/// settings' limit (the smaller of the percentage of the day's starting equity and the amount).
pub fn daily_loss_reached(trader: &Trader) -> Option<String> {
    daily_loss_beyond(trader, daily_loss_limit(trader))
}

/// Today's loss limit: the smaller of the percentage of the day's starting equity and the
/// amount in the settings. It changes only when the day's starting equity does.
pub fn daily_loss_limit(trader: &Trader) -> Decimal {
    let limit_pct = trader
        .settings
        .risk_thresholds
        .get("daily_loss_limit_pct")
        .copied()
        .unwrap_or(5.0);
    let by_pct = trader.stats.day_start_equity * decimal(limit_pct / 100.0).unwrap_or_default();
    let by_amount = decimal(trader.settings.trading.max_daily_loss_usd).unwrap_or(by_pct);
    by_pct.min(by_amount)
}

/// Why entries stop when today's loss has reached `limit`.
pub fn daily_loss_beyond(trader: &Trader, limit: Decimal) -> Option<String> {
    let loss = -trader.daily_pnl();
    (limit > Decimal::ZERO && loss >= limit).then(|| {
        format!(
            "Paused: today's loss of {} reached the daily limit of {}",
            loss.round_dp(2),
            limit.round_dp(2)
        )
    })
}

/// An alarm the engine raises itself (once while it is active), announced on the alarms channel.
pub async fn raise(
    app: &App,
    trader: &mut Trader,
    alarm_type: &str,
    level: AlarmLevel,
    message: String,
    recommended_action: &str,
    now: i64,
) -> Result<(), String> {
    if trader.active_alarms.contains_key(alarm_type) {
        return Ok(());
    }
    let row = AlarmRow {
        id: new_id(),
        alarm_type: alarm_type.to_string(),
        level: level_name(level).into(),
        message: message.chars().take(2000).collect(),
        current_value: 0.0,
        threshold_value: 0.0,
        recommended_action: recommended_action.to_string(),
        status: "active".into(),
        raised_at: now,
        cleared_at: None,
    };
    save_raised(app, trader, &row)
        .await
        .map_err(|err| err.to_string())?;
    publish_alarm(app, &trader.user_id, &row, now);
    trader.last_raised.insert(alarm_type.to_string(), now);
    trader.active_alarms.insert(alarm_type.to_string(), row);
    Ok(())
}

/// Clears an engine alarm whose cause is resolved.
pub async fn clear(
    app: &App,
    trader: &mut Trader,
    alarm_type: &str,
    now: i64,
) -> Result<(), String> {
    if let Some(mut alarm) = trader.active_alarms.remove(alarm_type) {
        alarms::clear_alarm(&app.db.pool, &alarm.id, now)
            .await
            .map_err(|err| err.to_string())?;
        alarm.status = "cleared".into();
        alarm.cleared_at = Some(now);
        publish_alarm(app, &trader.user_id, &alarm, now);
    }
    Ok(())
}
