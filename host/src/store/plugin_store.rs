//! `plugin_store`: the durable key-value stores of broker plugins, one per (plugin, user).
//! Keys are printable ASCII, so SQLite's binary order and PostgreSQL's `C` collation agree.

use std::collections::BTreeMap;

use super::statements::{Statements, statement};
use super::writer::Job;
use super::{Db, Executes};

pub async fn get<'e>(
    exec: impl Executes<'e>,
    plugin: &str,
    scope: &str,
    key: &str,
) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT value FROM plugin_store WHERE plugin = $1 AND scope = $2 AND key = $3"
    ))
    .bind(plugin)
    .bind(scope)
    .bind(key)
    .fetch_optional(c)
    .await)
}

/// Applies changes to one plugin's store for one user (the last change of a key counts), durable
/// when this returns: the books' writer commits them with the bookings of the moment, so a
/// venue's state is written as the books are.
pub async fn write(
    db: &Db,
    plugin: &str,
    scope: &str,
    changes: &[(String, Option<String>)],
) -> Result<(), super::writer::WriteError> {
    if changes.is_empty() {
        return Ok(());
    }
    let changes = changes
        .iter()
        .map(|(key, value)| Change {
            plugin: plugin.to_string(),
            scope: scope.to_string(),
            key: key.clone(),
            value: value.clone(),
        })
        .collect();
    // Under the user's lease where this instance holds (or lately lost) it.
    let fence = db.leases.fence(scope, super::now_ms());
    db.write_under(fence.as_ref(), Job::PluginStore(changes))
        .await
        .map(drop)
}

/// A change of one key of one plugin's store for one user: a value, or `None` to remove it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub plugin: String,
    pub scope: String,
    pub key: String,
    pub value: Option<String>,
}

/// Applies changes as statements of the caller's transaction, in order (the last change of a key
/// counts): one statement for the keys set and one for those removed.
pub fn apply(statements: &mut Statements, changes: &[&Change], now: i64) {
    let mut last: BTreeMap<(&str, &str, &str), Option<&str>> = BTreeMap::new();
    for change in changes {
        last.insert(
            (&change.plugin, &change.scope, &change.key),
            change.value.as_deref(),
        );
    }
    let sets: Vec<((&str, &str, &str), &str)> = last
        .iter()
        .filter_map(|(key, value)| value.map(|value| (*key, value)))
        .collect();
    let removals: Vec<(&str, &str, &str)> = last
        .iter()
        .filter(|(_, value)| value.is_none())
        .map(|(key, _)| *key)
        .collect();
    if !sets.is_empty() {
        set(statements, &sets, now);
    }
    if !removals.is_empty() {
        remove(statements, &removals);
    }
}

/// Sets keys (distinct) to values, in one statement.
fn set(statements: &mut Statements, entries: &[((&str, &str, &str), &str)], now: i64) {
    statement!(statements, |query| {
        query.push("INSERT INTO plugin_store (plugin, scope, key, value, updated_at) ");
        query.push_values(entries, |mut row, ((plugin, scope, key), value)| {
            row.push_bind(*plugin)
                .push_bind(*scope)
                .push_bind(*key)
                .push_bind(*value)
                .push_bind(now);
        });
        query.push(
            " ON CONFLICT (plugin, scope, key) DO UPDATE SET value = excluded.value, \
             updated_at = excluded.updated_at",
        );
    })
}

/// Removes keys, in one statement (a disjunction of keys: both backends look each up in the
/// primary key, where a row-value `IN` list scans the table on SQLite).
fn remove(statements: &mut Statements, keys: &[(&str, &str, &str)]) {
    statement!(statements, |query| {
        query.push("DELETE FROM plugin_store WHERE ");
        for (n, (plugin, scope, key)) in keys.iter().enumerate() {
            if n > 0 {
                query.push(" OR ");
            }
            query
                .push("(plugin = ")
                .push_bind(*plugin)
                .push(" AND scope = ")
                .push_bind(*scope)
                .push(" AND key = ")
                .push_bind(*key)
                .push(")");
        }
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
            schema_checked!("SELECT key, value FROM plugin_store WHERE plugin = $1 AND scope = $2 AND key >= $3 AND key < $4 \
             AND key > $5 ORDER BY key LIMIT $6"),
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
