//! Statements of one transaction built before any of them runs. On SQLite they run as one script:
//! one hand-off to the connection's thread for all of them instead of one per statement (each
//! hand-off wakes that thread and then the task waiting for it, which under load costs more than
//! the statement). On PostgreSQL they run one by one: its protocol takes one statement with
//! parameters at a time.
//!
//! SQLite binds a script's `?` parameters statement by statement, in order (sqlx counts the
//! parameters each statement takes); numbered ones (`$1`) would all refer to the script's first
//! values, so statements built here only push binds. sqlx calls running several statements with
//! parameters in one query on SQLite deprecated; `a_script_runs_every_statement_with_its_own_values`
//! fails if a release stops doing it.

use sqlx::{Postgres, QueryBuilder, Row, Sqlite};

use super::{Backend, Executes, Target};

/// Statements to run in order, built for one backend.
pub enum Statements {
    Sqlite {
        script: QueryBuilder<Sqlite>,
        count: usize,
    },
    Postgres(Vec<QueryBuilder<Postgres>>),
}

/// Pushes one statement into `$statements`: `$body` runs with `$query` bound to the builder its
/// text and values go into (on SQLite the script, after the statements before it).
macro_rules! statement {
    ($statements:expr, |$query:ident| $body:expr) => {
        match $statements {
            $crate::store::statements::Statements::Sqlite { script, count } => {
                if *count > 0 {
                    script.push("; ");
                }
                *count += 1;
                let $query = script;
                $body
            }
            $crate::store::statements::Statements::Postgres(list) => {
                list.push(sqlx::QueryBuilder::new(""));
                let $query = list.last_mut().expect("pushed above");
                $body
            }
        }
    };
}
pub(crate) use statement;

impl Statements {
    pub fn new(backend: Backend) -> Self {
        match backend {
            Backend::Sqlite => Statements::Sqlite {
                script: QueryBuilder::new(""),
                count: 0,
            },
            Backend::Postgres => Statements::Postgres(Vec::new()),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Statements::Sqlite { count, .. } => *count == 0,
            Statements::Postgres(list) => list.is_empty(),
        }
    }

    /// Builds statements for `exec`'s backend with `build` and runs them there ([`Statements::run`]).
    pub async fn once<'e>(
        exec: impl Executes<'e>,
        build: impl FnOnce(&mut Statements),
    ) -> sqlx::Result<Vec<String>> {
        let target = exec.target();
        let mut statements = Statements::new(match &target {
            Target::Sqlite(_) => Backend::Sqlite,
            Target::Postgres(_) => Backend::Postgres,
        });
        build(&mut statements);
        statements.run_on(target).await
    }

    /// Runs the statements in order on `exec` and returns the text each row they return holds
    /// in its first column (a `RETURNING` of one text column), in order.
    pub async fn run<'e>(self, exec: impl Executes<'e>) -> sqlx::Result<Vec<String>> {
        self.run_on(exec.target()).await
    }

    async fn run_on(self, target: Target<'_>) -> sqlx::Result<Vec<String>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        match (self, target) {
            (Statements::Sqlite { mut script, .. }, Target::Sqlite(mut handle)) => {
                let conn = handle.conn().await?;
                // Not kept prepared: a script's text changes with every batch's row counts.
                let rows = script.build().persistent(false).fetch_all(conn).await?;
                handle.finish();
                rows.iter().map(|row| row.try_get(0)).collect()
            }
            (Statements::Postgres(list), Target::Postgres(mut handle)) => {
                let conn = handle.conn().await?;
                let mut texts = Vec::new();
                // Kept prepared: a statement's text changes only with its row count, and those
                // repeat.
                for mut query in list {
                    for row in query.build().fetch_all(&mut *conn).await? {
                        texts.push(row.try_get(0)?);
                    }
                }
                Ok(texts)
            }
            _ => Err(sqlx::Error::Protocol(
                "statements built for the other backend".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::sqlite;

    #[tokio::test]
    async fn a_script_runs_every_statement_with_its_own_values() {
        let (db, _dir) = sqlite().await;
        let mut tx = db.begin().await.unwrap();
        let mut statements = Statements::new(Backend::Sqlite);
        statement!(&mut statements, |query| {
            query.push("CREATE TABLE t (name TEXT, n INTEGER)");
        });
        for (name, n) in [("a", 1), ("b", 2)] {
            statement!(&mut statements, |query| {
                query.push("INSERT INTO t (name, n) VALUES (");
                query.push_bind(name).push(", ").push_bind(n).push(")");
            });
        }
        statement!(&mut statements, |query| {
            query
                .push("UPDATE t SET n = n + ")
                .push_bind(10)
                .push(" WHERE name = ")
                .push_bind("b")
                .push(" RETURNING name || ':' || n");
        });
        let returned = statements.run(&mut tx).await.unwrap();
        assert_eq!(returned, vec!["b:12".to_string()]);
        tx.commit().await.unwrap();
        let rows: Vec<(String, i64)> = sqlx::query_as("SELECT name, n FROM t ORDER BY name")
            .fetch_all(crate::store::testing::sqlite_pool(&db))
            .await
            .unwrap();
        assert_eq!(rows, vec![("a".into(), 1), ("b".into(), 12)]);
    }
}
