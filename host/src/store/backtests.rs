//! `backtests`: a user's backtest runs, their progress and their reports.

use sqlx::FromRow;

use super::Executes;

#[derive(Debug, Clone, FromRow)]
pub struct BacktestRow {
    pub id: String,
    pub user_id: String,
    /// queued, running, completed, failed or cancelled.
    pub status: String,
    /// The request as JSON.
    pub request: String,
    pub progress_pct: i64,
    /// Candles the run replays (at most).
    pub candles: i64,
    pub error: Option<String>,
    /// The report as JSON, once the run ended with one.
    pub report: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

pub async fn insert<'e>(exec: impl Executes<'e>, row: &BacktestRow) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "INSERT INTO backtests (id, user_id, status, request, progress_pct, candles, created_at) \
         VALUES ($1, $2, $3, $4, 0, $5, $6)"
    ))
    .bind(&row.id)
    .bind(&row.user_id)
    .bind(&row.status)
    .bind(&row.request)
    .bind(row.candles)
    .bind(row.created_at)
    .execute(c)
    .await
    .map(|_| ()))
}

pub async fn get<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    id: &str,
) -> sqlx::Result<Option<BacktestRow>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT id, user_id, status, request, progress_pct, candles, error, report, created_at, \
         started_at, finished_at FROM backtests WHERE user_id = $1 AND id = $2"
    ))
    .bind(user_id)
    .bind(id)
    .fetch_optional(c)
    .await)
}

/// A user's runs, newest first, without their reports.
pub async fn list<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Vec<BacktestRow>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT id, user_id, status, request, progress_pct, candles, error, NULL AS report, \
         created_at, started_at, finished_at FROM backtests WHERE user_id = $1 \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(user_id)
    .fetch_all(c)
    .await)
}

/// Runs of a user not yet ended.
pub async fn count_unfinished<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM backtests WHERE user_id = $1 AND status IN ('queued', 'running')"
    ))
    .bind(user_id)
    .fetch_one(c)
    .await)
}

pub async fn started<'e>(exec: impl Executes<'e>, id: &str, at: i64) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
        schema_checked!("UPDATE backtests SET status = 'running', started_at = $2 WHERE id = $1 AND status = 'queued'")
    )
    .bind(id)
    .bind(at)
    .execute(c)
    .await
    .map(|_| ())
    })
}

pub async fn progress<'e>(exec: impl Executes<'e>, id: &str, pct: i64) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE backtests SET progress_pct = $2 WHERE id = $1 AND status = 'running'"
    ))
    .bind(id)
    .bind(pct)
    .execute(c)
    .await
    .map(|_| ()))
}

/// Ends a run that has not ended: `report` for a run that got one.
pub async fn finish<'e>(
    exec: impl Executes<'e>,
    id: &str,
    status: &str,
    error: Option<&str>,
    report: Option<&str>,
    at: i64,
) -> sqlx::Result<bool> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE backtests SET status = $2, error = $3, report = $4, finished_at = $5, \
         progress_pct = CASE WHEN $2 = 'completed' THEN 100 ELSE progress_pct END \
         WHERE id = $1 AND status IN ('queued', 'running')"
    ))
    .bind(id)
    .bind(status)
    .bind(error)
    .bind(report)
    .bind(at)
    .execute(c)
    .await
    .map(|done| done.rows_affected() > 0))
}

pub async fn delete<'e>(exec: impl Executes<'e>, user_id: &str, id: &str) -> sqlx::Result<bool> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "DELETE FROM backtests WHERE user_id = $1 AND id = $2"
    ))
    .bind(user_id)
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected() > 0))
}

/// Runs recorded before `before` and left unfinished by a server that stopped: they failed
/// (a run's progress is in its process's memory only).
pub async fn fail_interrupted<'e>(
    exec: impl Executes<'e>,
    before: i64,
    at: i64,
) -> sqlx::Result<u64> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE backtests SET status = 'failed', error = 'the server stopped during the run', \
         finished_at = $1 WHERE status IN ('queued', 'running') AND created_at < $2"
    ))
    .bind(at)
    .bind(before)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))
}
