//! Checkpoints of SQLite's write-ahead log for the books' writer, whose connection does not run
//! them itself. Every [`EVERY`] one of the main pool's connections copies what the log holds
//! into the database file (`PASSIVE`: it neither waits for nor blocks the writer) on that
//! connection's thread, beside the writer instead of inside one of its commits. The log then
//! stays as small as SQLite's own threshold keeps it under the same load.

use std::time::Duration;

use sqlx::SqlitePool;

/// How often the log is checkpointed.
const EVERY: Duration = Duration::from_millis(200);

/// Checkpoints the database of `pool` until the pool closes.
pub fn start(pool: SqlitePool) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if pool.is_closed() {
                return;
            }
            if let Err(err) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&pool)
                .await
            {
                if pool.is_closed() {
                    return;
                }
                tracing::warn!(error = %err, "checkpointing the database log failed");
            }
        }
    });
}
