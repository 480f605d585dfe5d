//! Risk alarms raised for a user and whether they are still active.

use super::Executes;
use super::statements::{Statements, statement};
use sqlx::FromRow;

#[derive(Debug, Clone, FromRow)]
pub struct AlarmRow {
    pub id: String,
    pub alarm_type: String,
    pub level: String,
    pub message: String,
    pub current_value: f64,
    pub threshold_value: f64,
    pub recommended_action: String,
    pub status: String,
    pub raised_at: i64,
    pub cleared_at: Option<i64>,
}

/// Inserts raised alarms, each with its user's id, in one statement.
pub fn push_insert(statements: &mut Statements, raised: &[(&str, &AlarmRow)]) {
    if raised.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(
            "INSERT INTO alarms (id, user_id, alarm_type, level, message, current_value, threshold_value, \
             recommended_action, status, raised_at, cleared_at) ",
        );
        query.push_values(raised, |mut row, (user_id, a)| {
            row.push_bind(a.id.clone())
                .push_bind(user_id.to_string())
                .push_bind(a.alarm_type.clone())
                .push_bind(a.level.clone())
                .push_bind(a.message.clone())
                .push_bind(a.current_value)
                .push_bind(a.threshold_value)
                .push_bind(a.recommended_action.clone())
                .push_bind(a.status.clone())
                .push_bind(a.raised_at)
                .push_bind(a.cleared_at);
        });
    })
}

pub async fn clear_alarm<'e>(exec: impl Executes<'e>, id: &str, now: i64) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE alarms SET status = 'cleared', cleared_at = $2 WHERE id = $1"
    ))
    .bind(id)
    .bind(now)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

pub async fn active_alarms<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<Vec<AlarmRow>> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT id, alarm_type, level, message, current_value, threshold_value, recommended_action, status, raised_at, \
             cleared_at FROM alarms WHERE user_id = $1 AND status = 'active' ORDER BY raised_at"),
        )
        .bind(user_id)
        .fetch_all(c)
        .await
    })
}

/// The last time each alarm type was raised for the user (for cooldowns across restarts).
pub async fn last_raised<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT alarm_type, MAX(raised_at) FROM alarms WHERE user_id = $1 GROUP BY alarm_type"
    ))
    .bind(user_id)
    .fetch_all(c)
    .await)
}

/// An alarm with the user it was raised for.
#[derive(Debug, Clone, FromRow)]
pub struct UserAlarmRow {
    pub user_id: String,
    pub email: String,
    #[sqlx(flatten)]
    pub alarm: AlarmRow,
}

/// Active alarms of every user, newest first, at most `limit` (index `alarms_active`).
pub async fn active_across_users<'e>(
    exec: impl Executes<'e>,
    limit: i64,
) -> sqlx::Result<Vec<UserAlarmRow>> {
    on!(exec, |c| {
        sqlx::query_as(schema_checked!(
            "SELECT a.user_id, u.email, a.id, a.alarm_type, a.level, a.message, a.current_value, \
             a.threshold_value, a.recommended_action, a.status, a.raised_at, a.cleared_at \
             FROM alarms a JOIN users u ON u.id = a.user_id \
             WHERE a.status = 'active' ORDER BY a.raised_at DESC, a.id LIMIT $1"
        ))
        .bind(limit)
        .fetch_all(c)
        .await
    })
}
