//! Performance snapshots and reports (companion sets E and F), and alarm history.

use super::Executes;
use sqlx::FromRow;

use super::alarms::AlarmRow;

#[derive(Debug, Clone, FromRow)]
pub struct SnapshotRow {
    pub id: String,
    pub user_id: String,
    pub taken_at: i64,
    /// `tracker` (written every update interval) or `manual` (posted by a client).
    pub source: String,
    pub cash: f64,
    pub positions_value: f64,
    pub unrealized_pnl: f64,
    pub realized_pnl_today: f64,
    pub total_trades: i64,
    pub winning_trades: i64,
    pub losing_trades: i64,
    /// The KPI snapshot as JSON (tracker snapshots only).
    pub kpi: Option<String>,
}

impl SnapshotRow {
    /// NAV = equity = cash + market value of positions.
    pub fn equity(&self) -> f64 {
        self.cash + self.positions_value
    }
}

const FIGURE_COLUMNS: &str = "id, user_id, taken_at, source, cash, positions_value, unrealized_pnl, \
     realized_pnl_today, total_trades, winning_trades, losing_trades";

pub async fn insert_snapshot<'e>(exec: impl Executes<'e>, s: &SnapshotRow) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO performance_snapshots (id, user_id, taken_at, source, cash, positions_value, unrealized_pnl, \
             realized_pnl_today, total_trades, winning_trades, losing_trades, kpi) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)"),
        )
        .bind(&s.id)
        .bind(&s.user_id)
        .bind(s.taken_at)
        .bind(&s.source)
        .bind(s.cash)
        .bind(s.positions_value)
        .bind(s.unrealized_pnl)
        .bind(s.realized_pnl_today)
        .bind(s.total_trades)
        .bind(s.winning_trades)
        .bind(s.losing_trades)
        .bind(&s.kpi)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// The user's snapshots taken at or after `since`, oldest first, without their KPI documents
/// (the dashboard reads only the figures; the KPI routes read the documents themselves).
pub async fn snapshots_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<Vec<SnapshotRow>> {
    // Only the column list is formatted in; values are bound.
    on!(exec, |c| sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {FIGURE_COLUMNS}, CAST(NULL AS TEXT) AS kpi FROM performance_snapshots \
         WHERE user_id = $1 AND taken_at >= $2 ORDER BY taken_at, id"
    )))
    .bind(user_id)
    .bind(since)
    .fetch_all(c)
    .await)
}

/// The user's KPI snapshots (tracker ones) at or after `since`, oldest first.
pub async fn kpi_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<Vec<String>> {
    on!(exec, |c| {
        sqlx::query_scalar(
            schema_checked!("SELECT kpi FROM performance_snapshots WHERE user_id = $1 AND taken_at >= $2 AND kpi IS NOT NULL \
             ORDER BY taken_at, id"),
        )
        .bind(user_id)
        .bind(since)
        .fetch_all(c)
        .await
    })
}

pub async fn latest_kpi<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT kpi FROM performance_snapshots WHERE user_id = $1 AND kpi IS NOT NULL \
         ORDER BY taken_at DESC, id DESC LIMIT 1"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

/// How many tracker snapshots the user has, and the time of the last.
pub async fn tracker_stats<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<(i64, Option<i64>)> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT COUNT(*), MAX(taken_at) FROM performance_snapshots WHERE user_id = $1 AND source = 'tracker'"),
        )
        .bind(user_id)
        .fetch_one(c)
        .await
    })
}

/// Last tracker snapshot time of every user who has one.
pub async fn last_tracked<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<(String, i64)>> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT user_id, MAX(taken_at) FROM performance_snapshots WHERE source = 'tracker' GROUP BY user_id"),
        )
        .fetch_all(c)
        .await
    })
}

/// Every bot with its status and last change: who the tracker follows.
pub async fn bots<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<(String, String, i64)>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT user_id, status, updated_at FROM bots"
    ))
    .fetch_all(c)
    .await)
}

pub async fn insert_report<'e>(
    exec: impl Executes<'e>,
    id: &str,
    user_id: &str,
    created_at: i64,
    report: &str,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO performance_reports (id, user_id, created_at, report) VALUES ($1, $2, $3, $4)"
    ))
    .bind(id)
    .bind(user_id)
    .bind(created_at)
    .bind(report)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// How many reports the user has, and the time of the last.
pub async fn report_stats<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<(i64, Option<i64>)> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT COUNT(*), MAX(created_at) FROM performance_reports WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_one(c)
    .await)
}

/// Alarms raised at or after `since`, newest first.
pub async fn alarms_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<Vec<AlarmRow>> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT id, alarm_type, level, message, current_value, threshold_value, recommended_action, status, raised_at, \
             cleared_at FROM alarms WHERE user_id = $1 AND raised_at >= $2 ORDER BY raised_at DESC, id DESC"),
        )
        .bind(user_id)
        .bind(since)
        .fetch_all(c)
        .await
    })
}
