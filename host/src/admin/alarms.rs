//! Active risk alarms across users, for the operator.

use serde::Serialize;

use crate::App;
use crate::error::ApiResult;
use crate::store::alarms;
use crate::store::iso8601;

/// At most this many alarms are listed (newest first); `truncated` says when there are more.
pub const ACTIVE_ALARMS_LIMIT: i64 = 500;

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserAlarm {
    pub alarm_id: String,
    pub user_id: String,
    pub email: String,
    pub alarm_type: String,
    /// INFO, WARNING, CRITICAL or EMERGENCY.
    pub level: String,
    pub message: String,
    pub current_value: f64,
    pub threshold_value: f64,
    pub recommended_action: String,
    pub raised_at: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct ActiveAlarms {
    pub alarms: Vec<UserAlarm>,
    pub count: usize,
    pub truncated: bool,
}

pub async fn active(app: &App) -> ApiResult<ActiveAlarms> {
    let mut rows = alarms::active_across_users(&app.db.pool, ACTIVE_ALARMS_LIMIT + 1).await?;
    let truncated = rows.len() as i64 > ACTIVE_ALARMS_LIMIT;
    rows.truncate(ACTIVE_ALARMS_LIMIT as usize);
    let alarms: Vec<UserAlarm> = rows
        .into_iter()
        .map(|row| UserAlarm {
            alarm_id: row.alarm.id,
            user_id: row.user_id,
            email: row.email,
            alarm_type: row.alarm.alarm_type,
            level: row.alarm.level,
            message: row.alarm.message,
            current_value: row.alarm.current_value,
            threshold_value: row.alarm.threshold_value,
            recommended_action: row.alarm.recommended_action,
            raised_at: iso8601(row.alarm.raised_at),
        })
        .collect();
    Ok(ActiveAlarms {
        count: alarms.len(),
        alarms,
        truncated,
    })
}
