//! `plugin_store`: the durable key-value stores of broker plugins, one per (plugin, user).
//! Keys are printable ASCII, so SQLite's binary order and PostgreSQL's `C` collation agree.

use super::Executes;
use super::{Db, now_ms};

pub async fn get<'e>(
    exec: impl Executes<'e>,
    plugin: &str,
    scope: &str,
    key: &str,
) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(
        "SELECT value FROM plugin_store WHERE plugin = $1 AND scope = $2 AND key = $3",
    )
    .bind(plugin)
    .bind(scope)
    .bind(key)
    .fetch_optional(c)
    .await)
}

/// Applies every change in one transaction, durable when this returns (its flush shared with
/// the bookings committed meanwhile: a venue's state is written as the books are).
pub async fn write(
    db: &Db,
    plugin: &str,
    scope: &str,
    changes: &[(String, Option<String>)],
) -> sqlx::Result<()> {
    let now = now_ms();
    let mut tx = db.begin_grouped().await?;
    for (key, value) in changes {
        match value {
            Some(value) => {
                on!(&mut *tx, |c| {
                    sqlx::query(
                        "INSERT INTO plugin_store (plugin, scope, key, value, updated_at) VALUES ($1, $2, $3, $4, $5) \
                         ON CONFLICT (plugin, scope, key) DO UPDATE SET value = $4, updated_at = $5",
                    )
                    .bind(plugin)
                    .bind(scope)
                    .bind(key)
                    .bind(value)
                    .bind(now)
                    .execute(c)
                    .await
                    .map(|done| done.rows_affected())
                })?;
            }
            None => {
                on!(&mut *tx, |c| sqlx::query(
                    "DELETE FROM plugin_store WHERE plugin = $1 AND scope = $2 AND key = $3",
                )
                .bind(plugin)
                .bind(scope)
                .bind(key)
                .execute(c)
                .await
                .map(|done| done.rows_affected()))?;
            }
        }
    }
    tx.commit().await?;
    db.durable().await;
    Ok(())
}

/// Entries with `prefix` after `start_after`, in key order.
pub async fn scan<'e>(
    exec: impl Executes<'e>,
    plugin: &str,
    scope: &str,
    prefix: &str,
    start_after: Option<&str>,
    limit: u32,
) -> sqlx::Result<Vec<(String, String)>> {
    // Every key with the prefix sorts below prefix + DEL (keys are printable ASCII).
    let upper = format!("{prefix}\u{7f}");
    let lower = match start_after {
        Some(after) if after >= prefix => after.to_string(),
        _ => String::new(),
    };
    on!(exec, |c| {
        sqlx::query_as(
            "SELECT key, value FROM plugin_store WHERE plugin = $1 AND scope = $2 AND key >= $3 AND key < $4 \
             AND key > $5 ORDER BY key LIMIT $6",
        )
        .bind(plugin)
        .bind(scope)
        .bind(prefix)
        .bind(upper)
        .bind(lower)
        .bind(i64::from(limit.min(crate::plugins::storage::MAX_SCAN)))
        .fetch_all(c)
        .await
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::sqlite;

    #[tokio::test]
    async fn writes_and_scans_on_sqlite() {
        let (db, _dir) = sqlite().await;
        let changes: Vec<(String, Option<String>)> = ["o/2", "o/1", "f/1", "o/3", "p"]
            .iter()
            .map(|k| (k.to_string(), Some(format!("v{k}"))))
            .collect();
        write(&db, "paper", "u1", &changes).await.unwrap();
        write(&db, "paper", "u2", &[("o/9".into(), Some("x".into()))])
            .await
            .unwrap();
        let keys =
            |rows: Vec<(String, String)>| rows.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            keys(scan(&db.pool, "paper", "u1", "o/", None, 10).await.unwrap()),
            ["o/1", "o/2", "o/3"]
        );
        assert_eq!(
            keys(
                scan(&db.pool, "paper", "u1", "o/", Some("o/1"), 1)
                    .await
                    .unwrap()
            ),
            ["o/2"]
        );
        write(
            &db,
            "paper",
            "u1",
            &[("o/2".into(), None), ("o/1".into(), Some("new".into()))],
        )
        .await
        .unwrap();
        assert_eq!(
            get(&db.pool, "paper", "u1", "o/1")
                .await
                .unwrap()
                .as_deref(),
            Some("new")
        );
        assert_eq!(get(&db.pool, "paper", "u1", "o/2").await.unwrap(), None);
        assert_eq!(get(&db.pool, "other", "u1", "o/1").await.unwrap(), None);
    }
}
