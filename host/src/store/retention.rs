//! Deletions of what has outlived its use, in bounded batches so the database's writer is never
//! held for long (on SQLite a fill waits for whatever holds the write lock).

use super::Db;

/// Rows deleted per statement.
pub const BATCH: i64 = 2_000;

/// Runs `statement` (a `DELETE` whose last parameter is the batch size) until a batch comes back
/// short, and returns how many rows went.
async fn in_batches(db: &Db, statement: &'static str, binds: &[i64]) -> sqlx::Result<u64> {
    let mut total = 0;
    loop {
        let done = on!(db, |c| {
            let mut query = sqlx::query(statement);
            for value in binds {
                query = query.bind(*value);
            }
            query
                .bind(BATCH)
                .execute(c)
                .await
                .map(|done| done.rows_affected())
        })?;
        total += done;
        if done < BATCH as u64 {
            return Ok(total);
        }
    }
}

/// Thins the KPI tracker's snapshots taken before `before` to one per user and `bucket_ms`: the
/// latest of each bucket (by time, then id) stays. `before` is a multiple of `bucket_ms`, so a
/// bucket is thinned only once it is complete and the rule gives the same rows however often it
/// runs. Snapshots a client posted (source `manual`) are never thinned.
pub async fn thin_tracker_snapshots(db: &Db, before: i64, bucket_ms: i64) -> sqlx::Result<u64> {
    debug_assert_eq!(before % bucket_ms, 0);
    in_batches(
        db,
        "DELETE FROM performance_snapshots WHERE id IN ( \
         SELECT p.id FROM performance_snapshots p WHERE p.source = 'tracker' AND p.taken_at < $1 \
         AND EXISTS (SELECT 1 FROM performance_snapshots q WHERE q.user_id = p.user_id \
           AND q.source = 'tracker' AND q.taken_at < $1 AND q.taken_at / $2 = p.taken_at / $2 \
           AND (q.taken_at > p.taken_at OR (q.taken_at = p.taken_at AND q.id > p.id))) \
         LIMIT $3)",
        &[before, bucket_ms],
    )
    .await
}

/// Thins the equity curve (one point per bot scan) before `before` to the last point of each
/// user and `bucket_ms`, as [`thin_tracker_snapshots`] does.
pub async fn thin_equity_snapshots(db: &Db, before: i64, bucket_ms: i64) -> sqlx::Result<u64> {
    debug_assert_eq!(before % bucket_ms, 0);
    in_batches(
        db,
        "DELETE FROM equity_snapshots WHERE (user_id, at) IN ( \
         SELECT p.user_id, p.at FROM equity_snapshots p WHERE p.at < $1 \
         AND EXISTS (SELECT 1 FROM equity_snapshots q WHERE q.user_id = p.user_id \
           AND q.at < $1 AND q.at / $2 = p.at / $2 AND q.at > p.at) \
         LIMIT $3)",
        &[before, bucket_ms],
    )
    .await
}

/// Refresh tokens past their expiry (a used one is kept until then to detect its reuse), reset
/// tokens past theirs, and sessions that ended (revoked or expired) before `ended_before`.
pub async fn expired_credentials(db: &Db, now: i64, ended_before: i64) -> sqlx::Result<u64> {
    let tokens = in_batches(
        db,
        "DELETE FROM refresh_tokens WHERE token_hash IN ( \
         SELECT token_hash FROM refresh_tokens WHERE expires_at < $1 LIMIT $2)",
        &[now],
    )
    .await?;
    let resets = in_batches(
        db,
        "DELETE FROM password_reset_tokens WHERE token_hash IN ( \
         SELECT token_hash FROM password_reset_tokens WHERE expires_at < $1 LIMIT $2)",
        &[now],
    )
    .await?;
    let sessions = in_batches(
        db,
        "DELETE FROM sessions WHERE id IN ( \
         SELECT id FROM sessions WHERE expires_at < $1 OR revoked_at < $1 LIMIT $2)",
        &[ended_before],
    )
    .await?;
    Ok(tokens + resets + sessions)
}

/// Audit rows written before `before`.
pub async fn audit_rows(db: &Db, before: i64) -> sqlx::Result<u64> {
    in_batches(
        db,
        "DELETE FROM audit_log WHERE id IN ( \
         SELECT id FROM audit_log WHERE created_at < $1 LIMIT $2)",
        &[before],
    )
    .await
}

/// Mail that was delivered (sent, or logged without SMTP) or given up on before `before`; mail
/// still pending or held for the operator stays whatever its age.
pub async fn finished_mail(db: &Db, before: i64) -> sqlx::Result<u64> {
    in_batches(
        db,
        "DELETE FROM mail_outbox WHERE id IN ( \
         SELECT id FROM mail_outbox WHERE status IN ('sent', 'logged', 'failed') \
         AND created_at < $1 LIMIT $2)",
        &[before],
    )
    .await
}

/// Dispatched notification events and finished webhook deliveries created before `before`.
pub async fn finished_notifications(db: &Db, before: i64) -> sqlx::Result<u64> {
    let events = in_batches(
        db,
        "DELETE FROM notification_events WHERE id IN ( \
         SELECT id FROM notification_events WHERE dispatched_at IS NOT NULL \
         AND dispatched_at < $1 LIMIT $2)",
        &[before],
    )
    .await?;
    let deliveries = in_batches(
        db,
        "DELETE FROM webhook_deliveries WHERE id IN ( \
         SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1 LIMIT $2)",
        &[before],
    )
    .await?;
    Ok(events + deliveries)
}
