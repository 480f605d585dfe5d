//! Statements of one transaction built before any of them runs, sent to the database as one
//! script: one hand-off for all of them instead of one per statement. On SQLite a hand-off wakes
//! the connection's thread and then the task waiting for it, which under load costs more than the
//! statement; on PostgreSQL it is a round trip to the server, whose protocol takes one statement
//! with parameters at a time, so there the values are written into the text (`pg_script`).
//!
//! SQLite binds a script's `?` parameters statement by statement, in order (sqlx counts the
//! parameters each statement takes); numbered ones (`$1`) would all refer to the script's first
//! values, so statements built here only push binds. sqlx calls running several statements with
//! parameters in one query on SQLite deprecated; `a_script_runs_every_statement_with_its_own_values`
//! fails if a release stops doing it.

use sqlx::{PgConnection, QueryBuilder, Row, Sqlite, SqliteConnection};

use super::pg_script::PgScript;
use super::{Backend, Executes, Target};

/// Statements to run in order, built for one backend.
pub struct Statements {
    pub script: Script,
    /// Statements in the script (a transaction's `BEGIN` included).
    count: usize,
    /// The script opens its own transaction ([`Statements::transaction`]).
    transaction: bool,
}

/// A script's text and values, for its backend.
pub enum Script {
    Sqlite(QueryBuilder<Sqlite>),
    Postgres(PgScript),
}

/// A connection to run a transaction's statements on, outside any transaction.
pub enum ConnectionRef<'c> {
    Sqlite(&'c mut SqliteConnection),
    Postgres(&'c mut PgConnection),
}

/// Pushes one statement into `$statements`: `$body` runs with `$query` bound to the builder its
/// text and values go into, the script after the statements before it.
macro_rules! statement {
    ($statements:expr, |$query:ident| $body:expr) => {{
        let statements: &mut $crate::store::statements::Statements = $statements;
        statements.next_statement();
        match &mut statements.script {
            $crate::store::statements::Script::Sqlite(script) => {
                let $query = script;
                $body
            }
            $crate::store::statements::Script::Postgres(script) => {
                let $query = script;
                $body
            }
        }
    }};
}
pub(crate) use statement;

impl Statements {
    pub fn new(backend: Backend) -> Self {
        Self::starting(backend, "", false)
    }

    /// Statements that are a transaction of their own, run with [`Statements::run_transaction`]:
    /// the script begins with `BEGIN` (on SQLite `BEGIN IMMEDIATE`, which takes the write lock)
    /// and ends with `COMMIT`, so the whole transaction is one hand-off.
    pub fn transaction(backend: Backend) -> Self {
        let begin = match backend {
            Backend::Sqlite => "BEGIN IMMEDIATE",
            Backend::Postgres => "BEGIN",
        };
        Self::starting(backend, begin, true)
    }

    fn starting(backend: Backend, begin: &str, transaction: bool) -> Self {
        Statements {
            script: match backend {
                Backend::Sqlite => Script::Sqlite(QueryBuilder::new(begin)),
                Backend::Postgres => Script::Postgres(PgScript::new(begin)),
            },
            count: usize::from(transaction),
            transaction,
        }
    }

    /// Separates the next statement from those before it ([`statement!`]).
    pub fn next_statement(&mut self) {
        if self.count > 0 {
            match &mut self.script {
                Script::Sqlite(script) => {
                    script.push("; ");
                }
                Script::Postgres(script) => {
                    script.push("; ");
                }
            }
        }
        self.count += 1;
    }

    pub fn is_empty(&self) -> bool {
        self.count == usize::from(self.transaction)
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

    /// Runs statements made with [`Statements::transaction`] on a connection outside any
    /// transaction, as one transaction: committed when every statement ran, rolled back
    /// otherwise. Returns what [`Statements::run`] does.
    pub async fn run_transaction(self, conn: ConnectionRef<'_>) -> sqlx::Result<Vec<String>> {
        // Ends the failed transaction a script left open. The script stopped at the failing
        // statement, inside its transaction (or at the `BEGIN`, outside one: then there is
        // nothing to roll back, and the server's refusal is only logged).
        const ROLLBACK: &str = "ROLLBACK";
        fn rolled_back<T>(result: sqlx::Result<T>) {
            if let Err(err) = result {
                tracing::debug!(error = %err, "rolling back a failed script");
            }
        }
        if !self.transaction {
            return Err(sqlx::Error::Protocol(
                "a transaction's statements built without their BEGIN".into(),
            ));
        }
        match (self.script, conn) {
            (Script::Sqlite(mut script), ConnectionRef::Sqlite(conn)) => {
                script.push("; COMMIT");
                match script.build().persistent(false).fetch_all(&mut *conn).await {
                    Ok(rows) => rows.iter().map(|row| row.try_get(0)).collect(),
                    Err(err) => {
                        rolled_back(sqlx::raw_sql(ROLLBACK).execute(&mut *conn).await);
                        Err(err)
                    }
                }
            }
            (Script::Postgres(mut script), ConnectionRef::Postgres(conn)) => {
                script.push("; COMMIT");
                let result = script.run(&mut *conn).await;
                if result.is_err() {
                    rolled_back(sqlx::raw_sql(ROLLBACK).execute(&mut *conn).await);
                }
                result
            }
            _ => Err(sqlx::Error::Protocol(
                "a transaction's statements built for another backend".into(),
            )),
        }
    }

    async fn run_on(self, target: Target<'_>) -> sqlx::Result<Vec<String>> {
        if self.is_empty() {
            return Ok(Vec::new());
        }
        if self.transaction {
            return Err(sqlx::Error::Protocol(
                "a transaction's statements run inside another transaction".into(),
            ));
        }
        match (self.script, target) {
            (Script::Sqlite(mut script), Target::Sqlite(mut handle)) => {
                let conn = handle.conn().await?;
                // Not kept prepared: a script's text changes with every batch's row counts.
                let rows = script.build().persistent(false).fetch_all(conn).await?;
                handle.finish();
                rows.iter().map(|row| row.try_get(0)).collect()
            }
            (Script::Postgres(script), Target::Postgres(mut handle)) => {
                let conn = handle.conn().await?;
                script.run(conn).await
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
            insert(&mut statements, name, n);
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
        assert_eq!(names(&db).await, vec![("a".into(), 1), ("b".into(), 12)]);
    }

    /// Inserts `(name, n)` into `t` as a statement of `statements`.
    fn insert(statements: &mut Statements, name: &str, n: i64) {
        statement!(statements, |query| {
            query.push("INSERT INTO t (name, n) VALUES (");
            query
                .push_bind(name.to_string())
                .push(", ")
                .push_bind(n)
                .push(")");
        });
    }

    async fn names(db: &crate::store::Db) -> Vec<(String, i64)> {
        sqlx::query_as("SELECT name, n FROM t ORDER BY name")
            .fetch_all(crate::store::testing::sqlite_pool(db))
            .await
            .unwrap()
    }

    /// A connection outside any transaction to a database whose table `t` (`name` its primary
    /// key, `n` an integer) is empty.
    enum Empty {
        Sqlite(sqlx::pool::PoolConnection<Sqlite>),
        Postgres(PgConnection),
    }

    impl Empty {
        fn backend(&self) -> Backend {
            match self {
                Empty::Sqlite(_) => Backend::Sqlite,
                Empty::Postgres(_) => Backend::Postgres,
            }
        }

        fn connection(&mut self) -> ConnectionRef<'_> {
            match self {
                Empty::Sqlite(conn) => ConnectionRef::Sqlite(conn),
                Empty::Postgres(conn) => ConnectionRef::Postgres(conn),
            }
        }

        async fn names(&mut self) -> Vec<(String, i64)> {
            const NAMES: &str = "SELECT name, n FROM t ORDER BY name";
            match self {
                Empty::Sqlite(conn) => sqlx::query_as(NAMES).fetch_all(&mut **conn).await,
                Empty::Postgres(conn) => sqlx::query_as(NAMES).fetch_all(conn).await,
            }
            .unwrap()
        }

        /// Transactions' statements commit all or nothing, and leave no transaction open.
        async fn all_or_nothing(mut self) {
            let backend = self.backend();
            let mut statements = Statements::transaction(backend);
            insert(&mut statements, "a", 1);
            statement!(&mut statements, |query| {
                query.push("UPDATE t SET n = n + 1 RETURNING name");
            });
            assert_eq!(
                statements.run_transaction(self.connection()).await.unwrap(),
                vec!["a".to_string()]
            );
            assert_eq!(self.names().await, vec![("a".into(), 2)]);

            // The second insert breaks the primary key: the first is rolled back with it.
            let mut statements = Statements::transaction(backend);
            insert(&mut statements, "b", 1);
            insert(&mut statements, "a", 5);
            assert!(statements.run_transaction(self.connection()).await.is_err());
            assert_eq!(self.names().await, vec![("a".into(), 2)]);

            // No transaction was left open on the connection: the next one commits.
            let mut statements = Statements::transaction(backend);
            insert(&mut statements, "c", 3);
            statements.run_transaction(self.connection()).await.unwrap();
            assert_eq!(self.names().await, vec![("a".into(), 2), ("c".into(), 3)]);

            // Statements built for the other backend are refused.
            let other = match backend {
                Backend::Sqlite => Backend::Postgres,
                Backend::Postgres => Backend::Sqlite,
            };
            let mut statements = Statements::transaction(other);
            insert(&mut statements, "d", 4);
            assert!(statements.run_transaction(self.connection()).await.is_err());
        }
    }

    #[tokio::test]
    async fn a_transaction_script_commits_all_or_nothing_on_postgres_too() {
        let Some(mut conn) = crate::store::testing::postgres().await else {
            return;
        };
        // A table of this session's own.
        sqlx::query("CREATE TEMPORARY TABLE t (name TEXT PRIMARY KEY, n BIGINT)")
            .execute(&mut conn)
            .await
            .unwrap();
        Empty::Postgres(conn).all_or_nothing().await;
    }

    #[tokio::test]
    async fn a_transaction_script_commits_all_or_nothing_and_leaves_the_connection_usable() {
        let (db, _dir) = sqlite().await;
        let pool = crate::store::testing::sqlite_pool(&db);
        sqlx::query("CREATE TABLE t (name TEXT PRIMARY KEY, n INTEGER)")
            .execute(pool)
            .await
            .unwrap();
        Empty::Sqlite(pool.acquire().await.unwrap())
            .all_or_nothing()
            .await;

        // A transaction's statements are refused inside another transaction.
        let mut tx = db.begin().await.unwrap();
        let mut statements = Statements::transaction(Backend::Sqlite);
        insert(&mut statements, "d", 4);
        assert!(statements.run(&mut tx).await.is_err());
    }
}
