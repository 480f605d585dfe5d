//! `plugin_store`: the durable key-value stores of broker plugins, one per (plugin, user).
//! Keys are printable ASCII, so SQLite's binary order and PostgreSQL's `C` collation agree.

use std::collections::BTreeMap;

use sqlx::QueryBuilder;

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

/// Applies every change at once (the last change of a key counts), durable when this returns
/// (its flush shared with the bookings committed meanwhile: a venue's state is written as the
/// books are). One statement per kind of change: a venue's write is a handful of keys, and
/// each statement is a round trip to the books' writer.
pub async fn write(
    db: &Db,
    plugin: &str,
    scope: &str,
    changes: &[(String, Option<String>)],
) -> sqlx::Result<()> {
    let mut last: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    for (key, value) in changes {
        last.insert(key, value.as_deref());
    }
    let sets: Vec<(&str, &str)> = last
        .iter()
        .filter_map(|(key, value)| value.map(|value| (*key, value)))
        .collect();
    let removals: Vec<&str> = last
        .iter()
        .filter(|(_, value)| value.is_none())
        .map(|(key, _)| *key)
        .collect();
    if sets.is_empty() && removals.is_empty() {
        return Ok(());
    }
    let mut tx = db.begin_grouped().await?;
    if !sets.is_empty() {
        set(&mut *tx, plugin, scope, &sets, now_ms()).await?;
    }
    if !removals.is_empty() {
        remove(&mut *tx, plugin, scope, &removals).await?;
    }
    tx.commit().await?;
    db.durable().await;
    Ok(())
}

/// Sets keys (distinct) to values, in one statement.
async fn set<'e>(
    exec: impl Executes<'e>,
    plugin: &str,
    scope: &str,
    entries: &[(&str, &str)],
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c, DB| {
        let mut query = QueryBuilder::<DB>::new(
            "INSERT INTO plugin_store (plugin, scope, key, value, updated_at) ",
        );
        query.push_values(entries, |mut row, (key, value)| {
            row.push_bind(plugin)
                .push_bind(scope)
                .push_bind(*key)
                .push_bind(*value)
                .push_bind(now);
        });
        query.push(
            " ON CONFLICT (plugin, scope, key) DO UPDATE SET value = excluded.value, \
             updated_at = excluded.updated_at",
        );
        query.build().execute(c).await.map(drop)
    })
}

/// Removes keys, in one statement.
async fn remove<'e>(
    exec: impl Executes<'e>,
    plugin: &str,
    scope: &str,
    keys: &[&str],
) -> sqlx::Result<()> {
    on!(exec, |c, DB| {
        let mut query = QueryBuilder::<DB>::new("DELETE FROM plugin_store WHERE plugin = ");
        query
            .push_bind(plugin)
            .push(" AND scope = ")
            .push_bind(scope);
        query.push(" AND key IN (");
        let mut list = query.separated(", ");
        for key in keys {
            list.push_bind(*key);
        }
        query.push(")");
        query.build().execute(c).await.map(drop)
    })
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

        // A key changed twice in one write ends as its last change says.
        write(
            &db,
            "paper",
            "u1",
            &[
                ("o/3".into(), None),
                ("o/3".into(), Some("again".into())),
                ("f/1".into(), Some("kept?".into())),
                ("f/1".into(), None),
            ],
        )
        .await
        .unwrap();
        assert_eq!(
            get(&db.pool, "paper", "u1", "o/3")
                .await
                .unwrap()
                .as_deref(),
            Some("again")
        );
        assert_eq!(get(&db.pool, "paper", "u1", "f/1").await.unwrap(), None);
        // Only removals.
        write(
            &db,
            "paper",
            "u1",
            &[("o/3".into(), None), ("p".into(), None)],
        )
        .await
        .unwrap();
        assert_eq!(
            keys(scan(&db.pool, "paper", "u1", "", None, 10).await.unwrap()),
            ["o/1"]
        );
    }
}
