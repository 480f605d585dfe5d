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
            if let Err(err) = sqlx::query(schema_checked!("PRAGMA wal_checkpoint(PASSIVE)"))
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::store::plugin_store::Change;
    use crate::store::testing::sqlite;
    use crate::store::writer::Job;

    /// The writer's commits stay in the log; the checkpointer moves them into the database file.
    #[tokio::test]
    async fn what_the_writer_commits_reaches_the_database_file_without_a_checkpoint_of_its_own() {
        let (db, dir) = sqlite().await;
        let file = dir.path().join("test.db");
        let size = || std::fs::metadata(&file).unwrap().len();
        tokio::time::sleep(2 * super::EVERY).await;
        let before = size();
        // About 2 MiB of values, far more than the file holds before.
        let changes = (0..256)
            .map(|n| Change {
                plugin: "paper".into(),
                scope: "u1".into(),
                key: format!("key-{n}"),
                value: Some("x".repeat(8192)),
            })
            .collect();
        db.write(Job::PluginStore(changes)).await.unwrap();
        for _ in 0..50 {
            if size() > before + 2_000_000 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "the database file grew from {before} to {} bytes only",
            size()
        );
    }
}
