//! Storage: a typed sqlx pool of the backend chosen at start (SQLite or PostgreSQL), with
//! queries per aggregate.
//!
//! Each query is written once and compiled for both backends: [`on!`] runs its body with a
//! `&mut SqliteConnection` or a `&mut PgConnection`, taken from the pool or from a transaction
//! ([`Executes`]). The schema keeps to types both backends decode the same way: TEXT, 64-bit
//! integers (timestamps are epoch milliseconds), doubles, and exact decimals
//! ([`StoredDecimal`]). Queries use `$n` placeholders, which
//! both backends accept; SQL that must differ branches on [`Backend`] in the module that needs it.
//! A query written as one literal is wrapped in `schema_checked!`, which checks it against the
//! migrated SQLite schema when the crate compiles.

/// A query assembled from a module's column-list constants (never from input).
macro_rules! sql {
    ($($arg:tt)*) => {
        sqlx::AssertSqlSafe(format!($($arg)*))
    };
}

/// Runs `body` once per backend with `c` bound to a connection of the executor (a pool's,
/// acquired for the body, or a transaction's); `DB` (optional) names the backend's
/// `sqlx::Database` inside the body. The body is a `Result` whose error takes a `sqlx::Error`
/// (the error taking a connection).
macro_rules! on {
    ($exec:expr, |$c:ident $(, $db:ident)?| $body:expr) => {
        match $crate::store::Executes::target($exec) {
            $crate::store::Target::Sqlite(mut handle) => {
                $(#[allow(dead_code)] type $db = sqlx::Sqlite;)?
                match handle.conn().await {
                    Ok($c) => {
                        let result = $body;
                        handle.finish();
                        result
                    }
                    Err(err) => Err(err.into()),
                }
            }
            $crate::store::Target::Postgres(mut handle) => {
                $(#[allow(dead_code)] type $db = sqlx::Postgres;)?
                match handle.conn().await {
                    Ok($c) => $body,
                    Err(err) => Err(err.into()),
                }
            }
        }
    };
}

pub mod accounts;
pub mod alarms;
pub mod audit;
pub mod backtests;
pub mod billing;
pub mod bot_leases;
pub mod bots;
pub mod brokers;
pub mod candles;
mod checkpoints;
pub mod decimal;
pub mod durability;
pub mod exports;
pub mod flags;
pub mod job_leases;
pub mod kept;
pub mod ledger;
pub mod notifications;
pub mod orders;
pub mod outbox;
pub mod performance;
mod pg_script;
pub mod plugin_store;
pub mod plugins;
pub mod positions;
pub mod reconciliation;
pub mod reset_tokens;
pub mod retention;
pub mod sessions;
pub mod settings;
pub mod signals;
pub mod snapshots;
pub mod statements;
pub mod totals;
pub mod trades;
pub mod users;
pub mod webhook_keys;
pub mod writer;

/// For tests that set up rows no store function writes.
#[cfg(test)]
pub(crate) use on;

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use decimal::{OptionalStoredDecimal, StoredDecimal};
use durability::GroupSync;

use anyhow::{Context, Result, bail};
use sqlx::migrate::Migrator;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{
    Arguments, ConnectOptions, Database, Encode, PgPool, Postgres, Sqlite, SqlitePool, Type,
};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/postgres");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn from_url(url: &str) -> Result<Self> {
        if url.starts_with("sqlite:") {
            Ok(Self::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Self::Postgres)
        } else {
            bail!("DATABASE_URL must start with sqlite: or postgres://")
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres => "postgres",
        }
    }
}

/// Connections of SQLite's main pool, and how many of them are kept for statements outside a
/// transaction (the rest serve transactions).
const SQLITE_CONNECTIONS: u32 = 8;
const SQLITE_KEPT: usize = 6;

/// A connection pool of the backend chosen at start.
#[derive(Clone, Debug)]
pub enum Pool {
    Sqlite(SqliteConnections),
    Postgres(PgPool),
}

/// A SQLite pool, and the connections kept out of it for statements outside a transaction
/// ([`kept`]), if any.
#[derive(Clone, Debug)]
pub struct SqliteConnections {
    pool: SqlitePool,
    kept: Option<Arc<kept::Kept<Sqlite>>>,
}

impl SqliteConnections {
    /// `keep` of the pool's connections serve statements outside a transaction.
    fn new(pool: SqlitePool, keep: usize) -> Self {
        let kept = (keep > 0).then(|| Arc::new(kept::Kept::new(pool.clone(), keep)));
        SqliteConnections { pool, kept }
    }
}

impl Deref for SqliteConnections {
    type Target = SqlitePool;
    fn deref(&self) -> &SqlitePool {
        &self.pool
    }
}

impl Pool {
    pub fn backend(&self) -> Backend {
        match self {
            Self::Sqlite(_) => Backend::Sqlite,
            Self::Postgres(_) => Backend::Postgres,
        }
    }

    /// Begins a transaction. On SQLite it takes the write lock at once (`BEGIN IMMEDIATE`),
    /// waiting for it up to the busy timeout: a deferred transaction that reads and then writes
    /// fails with "database is locked" when another writer committed in between, a conflict
    /// SQLite cannot wait out. PostgreSQL's row locks need no such care.
    pub async fn begin(&self) -> sqlx::Result<Tx> {
        Ok(Tx(match self {
            Self::Sqlite(pool) => Conn::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await?),
            Self::Postgres(pool) => Conn::Postgres(pool.begin().await?),
        }))
    }

    /// The SQLite pool, for tools that run their own statements on a SQLite database (the
    /// benchmarks' seeding); panics on PostgreSQL.
    pub fn as_sqlite(&self) -> &SqlitePool {
        match self {
            Self::Sqlite(sqlite) => &sqlite.pool,
            Self::Postgres(_) => panic!("a SQLite database was expected"),
        }
    }

    pub async fn close(&self) {
        match self {
            Self::Sqlite(sqlite) => {
                if let Some(kept) = &sqlite.kept {
                    kept.close();
                }
                sqlite.pool.close().await
            }
            Self::Postgres(pool) => pool.close().await,
        }
    }
}

/// The connection of an open transaction, which store functions that write several rows
/// atomically take (`&mut *tx`): one that owns its pooled connection ([`Tx`]) or one begun on a
/// connection held by its owner (the books' writer keeps one).
#[derive(Debug)]
pub enum Conn<'c> {
    Sqlite(sqlx::Transaction<'c, Sqlite>),
    Postgres(sqlx::Transaction<'c, Postgres>),
}

impl Conn<'_> {
    pub fn backend(&self) -> Backend {
        match self {
            Self::Sqlite(_) => Backend::Sqlite,
            Self::Postgres(_) => Backend::Postgres,
        }
    }

    pub async fn commit(self) -> sqlx::Result<()> {
        match self {
            Conn::Sqlite(tx) => tx.commit().await,
            Conn::Postgres(tx) => tx.commit().await,
        }
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        match self {
            Conn::Sqlite(tx) => tx.rollback().await,
            Conn::Postgres(tx) => tx.rollback().await,
        }
    }
}

/// An open transaction on a connection of its own: rolled back when dropped without
/// [`Tx::commit`].
#[derive(Debug)]
pub struct Tx(Conn<'static>);

impl Tx {
    pub async fn commit(self) -> sqlx::Result<()> {
        self.0.commit().await
    }

    pub async fn rollback(self) -> sqlx::Result<()> {
        self.0.rollback().await
    }
}

impl Deref for Tx {
    type Target = Conn<'static>;
    fn deref(&self) -> &Conn<'static> {
        &self.0
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Conn<'static> {
        &mut self.0
    }
}

/// Where a query runs: a pool (a connection is taken for the call) or an open transaction.
pub trait Executes<'a>: Send {
    fn target(self) -> Target<'a>;
}

impl<'a> Executes<'a> for &'a Pool {
    fn target(self) -> Target<'a> {
        match self {
            Pool::Sqlite(sqlite) => Target::Sqlite(match &sqlite.kept {
                Some(kept) => Handle::Kept(kept),
                None => Handle::Pool(&sqlite.pool),
            }),
            Pool::Postgres(pool) => Target::Postgres(Handle::Pool(pool)),
        }
    }
}

impl<'a, 'c> Executes<'a> for &'a mut Conn<'c> {
    fn target(self) -> Target<'a> {
        match self {
            Conn::Sqlite(tx) => Target::Sqlite(Handle::Conn(&mut **tx)),
            Conn::Postgres(tx) => Target::Postgres(Handle::Conn(&mut **tx)),
        }
    }
}

impl<'a> Executes<'a> for &'a mut Tx {
    fn target(self) -> Target<'a> {
        (&mut self.0).target()
    }
}

/// An executor resolved to its backend ([`on!`]).
pub enum Target<'a> {
    Sqlite(Handle<'a, Sqlite>),
    Postgres(Handle<'a, Postgres>),
}

/// A connection of one backend: a pool's or kept connections' (taken on first use) or a
/// transaction's.
pub enum Handle<'a, DB: Database> {
    Pool(&'a sqlx::Pool<DB>),
    Acquired(PoolConnection<DB>),
    Kept(&'a kept::Kept<DB>),
    Leased(kept::Lease<'a, DB>),
    Conn(&'a mut DB::Connection),
}

impl<DB: Database> Handle<'_, DB> {
    pub async fn conn(&mut self) -> sqlx::Result<&mut DB::Connection> {
        match self {
            Handle::Pool(pool) => {
                let pool: &sqlx::Pool<DB> = pool;
                // Boxed: the pool's acquire future is large, and inline it would be part of every
                // future that runs a query (a copy of several KiB each time one is moved).
                *self = Handle::Acquired(Box::pin(pool.acquire()).await?);
            }
            Handle::Kept(kept) => {
                let kept: &kept::Kept<DB> = kept;
                *self = Handle::Leased(Box::pin(kept.lease()).await?);
            }
            _ => {}
        }
        Ok(match self {
            Handle::Acquired(conn) => &mut **conn,
            Handle::Leased(lease) => lease.conn(),
            Handle::Conn(conn) => &mut **conn,
            Handle::Pool(_) | Handle::Kept(_) => unreachable!("a connection is taken above"),
        })
    }

    /// The body that used the connection ran to its end.
    pub fn finish(&mut self) {
        if let Handle::Leased(lease) = self {
            lease.finish();
        }
    }
}

/// The database handle shared by every part of the server.
#[derive(Clone, Debug)]
pub struct Db {
    pub pool: Pool,
    /// The connection of the books' writer, whose commits wait for a shared flush instead of
    /// the disk (`durability`). The same pool as `pool` where commits are durable anyway.
    pub grouped: Pool,
    pub sync: Arc<GroupSync>,
    /// Writes the books on `grouped`, batched (`writer`).
    pub writer: writer::Writer,
    pub backend: Backend,
    /// The users' leases this instance holds, for writes made outside a trader (`bot_leases`).
    pub leases: Arc<bot_leases::Holdings>,
}

impl Db {
    /// Connects with group commit of the books (`durability`).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, true).await
    }

    /// Connects; without `group_commit` every booking waits for its own flush.
    pub async fn connect_with(url: &str, group_commit: bool) -> Result<Self> {
        let backend = Backend::from_url(url)?;
        let unreachable = || format!("cannot connect to the {} database", backend.name());
        // Every commit durable when it returns: bookings use the same pool.
        let one_pool = |pool: Pool| {
            let sync = Arc::new(GroupSync::none());
            Self {
                writer: writer::Writer::start(pool.clone(), sync.clone(), group_commit),
                grouped: pool.clone(),
                pool,
                sync,
                backend,
                leases: Arc::default(),
            }
        };
        if backend == Backend::Postgres {
            let options = PgConnectOptions::from_str(url)
                .context("DATABASE_URL is not a valid database URL")?
                .disable_statement_logging();
            let options = without_tls_on_loopback(url, options);
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .min_connections(1)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await
                .with_context(unreachable)?;
            return Ok(one_pool(Pool::Postgres(pool)));
        }
        ensure_sqlite_parent_dir(url)?;
        // Before SQLite's first connection, which fixes its allocator.
        sqlite_memory::configure();
        let options = SqliteConnectOptions::from_str(url)
            .context("DATABASE_URL is not a valid database URL")?
            .disable_statement_logging()
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5))
            // Rows come from the connection's worker thread through a channel of this many: room
            // for a whole page, so the worker never waits for the reader between rows (each wait
            // is a hand-off between threads).
            .row_buffer_size(1024);
        // WAL lets readers run beside the one writer; FULL sync so a commit survives power loss.
        let sqlite_pool = |connections: u32, synchronous: SqliteSynchronous| {
            SqlitePoolOptions::new()
                .max_connections(connections)
                .min_connections(1)
                // A connection to a local file does not go stale; the test would be one more
                // hand-off to the connection's thread on every query.
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options.clone().synchronous(synchronous))
        };
        let pool = sqlite_pool(SQLITE_CONNECTIONS, SqliteSynchronous::Full)
            .await
            .with_context(unreachable)?;
        let file: String =
            sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
                .fetch_one(&pool)
                .await?;
        if file.is_empty() || !group_commit {
            // In memory there is one pool, or the two would see two databases.
            return Ok(one_pool(Pool::Sqlite(SqliteConnections::new(
                pool,
                SQLITE_KEPT,
            ))));
        }
        // One connection: bookings queue for it in the process instead of in SQLite's busy
        // handler, whose sleeps would idle the writer between them.
        // Its one user is the books' writer, which would otherwise pay a round trip to test
        // the connection before every batch.
        // Its commits leave the log's pages to the checkpointer (`checkpoints`), on a thread
        // of its own: a checkpoint copies the log into the database file and flushes it, which in
        // the commit that crosses SQLite's threshold held the writer for ten times a commit. A
        // batch's multi-row statements touch pages all over the books' indexes, more than
        // SQLite's default 2 MiB cache holds; each statement's journal (undoing it alone) stays
        // in memory instead of spilling to a temporary file past 64 KiB.
        let grouped = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .test_before_acquire(false)
            .connect_with(
                options
                    .clone()
                    .synchronous(SqliteSynchronous::Normal)
                    .pragma("wal_autocheckpoint", "0")
                    .pragma("cache_size", "-65536")
                    .pragma("temp_store", "memory"),
            )
            .await
            .with_context(unreachable)?;
        checkpoints::start(pool.clone());
        let sync = Arc::new(GroupSync::wal(PathBuf::from(format!("{file}-wal"))));
        Ok(Self {
            pool: Pool::Sqlite(SqliteConnections::new(pool, SQLITE_KEPT)),
            writer: writer::Writer::start(
                Pool::Sqlite(SqliteConnections::new(grouped.clone(), 0)),
                sync.clone(),
                true,
            ),
            grouped: Pool::Sqlite(SqliteConnections::new(grouped, 0)),
            sync,
            backend,
            leases: Arc::default(),
        })
    }

    /// Applies the backend's pending migrations (idempotent).
    pub async fn migrate(&self) -> Result<()> {
        match &self.pool {
            Pool::Sqlite(sqlite) => SQLITE_MIGRATIONS.run(&sqlite.pool).await,
            Pool::Postgres(pool) => POSTGRES_MIGRATIONS.run(pool).await,
        }
        .context("applying database migrations failed")?;
        totals::backfill(self)
            .await
            .context("computing the running totals of existing trades failed")?;
        Ok(())
    }

    /// Begins a transaction ([`Pool::begin`]).
    pub async fn begin(&self) -> sqlx::Result<Tx> {
        self.pool.begin().await
    }

    /// Writes a job of the books through the writer; returns once it is durable (`writer`).
    pub async fn write(&self, job: writer::Job) -> writer::Answer {
        self.writer.write(job, None).await
    }

    /// Jobs of the books refused because their user's lease had moved on.
    pub fn writes_refused(&self) -> u64 {
        self.writer.refused()
    }

    /// Writes a job of a user's books made under `fence`, their lease (none: this instance
    /// alone); refused once the lease has moved on (`writer`).
    pub async fn write_under(
        &self,
        fence: Option<&writer::Fence>,
        job: writer::Job,
    ) -> writer::Answer {
        self.writer.write(job, fence.cloned()).await
    }

    pub async fn ping(&self) -> Result<()> {
        on!(&self.pool, |c| sqlx::query("SELECT 1")
            .fetch_one(c)
            .await
            .map(drop))?;
        Ok(())
    }
}

impl<'a> Executes<'a> for &'a Db {
    fn target(self) -> Target<'a> {
        self.pool.target()
    }
}

/// A server on this machine is reached without TLS unless the URL (or `PGSSLMODE`) asks for
/// it: the bytes never leave the machine, and encrypting every round trip costs CPU on both
/// sides (sqlx prefers TLS whenever the server offers it, as Debian's does by default).
fn without_tls_on_loopback(url: &str, options: PgConnectOptions) -> PgConnectOptions {
    let query = url
        .split_once('?')
        .map(|(_, query)| query)
        .unwrap_or_default();
    let asked = query.split('&').any(|pair| {
        let name = pair.split('=').next().unwrap_or_default();
        name.eq_ignore_ascii_case("sslmode") || name.eq_ignore_ascii_case("ssl-mode")
    }) || std::env::var_os("PGSSLMODE").is_some();
    let host = options
        .get_host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = options.get_socket().is_some()
        || host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if asked || !loopback {
        return options;
    }
    options.ssl_mode(sqlx::postgres::PgSslMode::Disable)
}

fn ensure_sqlite_parent_dir(url: &str) -> Result<()> {
    let path = url
        .trim_start_matches("sqlite://")
        .trim_start_matches("sqlite:")
        .split('?')
        .next()
        .unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    if let Some(parent) = std::path::Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create the data directory {}", parent.display()))?;
    }
    Ok(())
}

/// Which rows of a table of users' books a read takes (positions, trades, ledger rows); `None`
/// is no condition, so an admin's read of every user leaves `user_id` out.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub user_id: Option<String>,
    /// One broker connection's rows (by its name).
    pub broker: Option<String>,
    pub symbol: Option<String>,
    /// Inclusive bounds on the table's time column.
    pub from_ms: Option<i64>,
    pub until_ms: Option<i64>,
}

impl Filter {
    /// Every row of one user.
    pub fn user(user_id: &str) -> Self {
        Filter {
            user_id: Some(user_id.to_string()),
            ..Filter::default()
        }
    }

    /// Whether the filter takes every row of one user (whose count the running totals keep).
    pub fn is_whole_account(&self) -> bool {
        self.user_id.is_some()
            && self.broker.is_none()
            && self.symbol.is_none()
            && self.from_ms.is_none()
            && self.until_ms.is_none()
    }

    /// `WHERE …` with the `fixed` conditions and one per bound value (nothing when there are
    /// none): each is written only when it applies, so the planner can use the table's index on
    /// `user_id`.
    fn where_clause<'q, DB: Database>(
        &self,
        time_column: &str,
        fixed: &[&str],
        args: &mut DB::Arguments,
    ) -> String
    where
        String: Encode<'q, DB> + Type<DB>,
        i64: Encode<'q, DB> + Type<DB>,
    {
        let mut conditions: Vec<String> = fixed.iter().map(|c| c.to_string()).collect();
        for (column, value) in [
            ("user_id", &self.user_id),
            ("broker", &self.broker),
            ("symbol", &self.symbol),
        ] {
            if let Some(value) = value {
                args.add(value.clone()).expect("a text argument encodes");
                conditions.push(format!("{column} = ${}", args.len()));
            }
        }
        for (operator, value) in [(">=", self.from_ms), ("<=", self.until_ms)] {
            if let Some(value) = value {
                args.add(value).expect("an integer argument encodes");
                conditions.push(format!("{time_column} {operator} ${}", args.len()));
            }
        }
        if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        }
    }
}

/// ` LIMIT $n OFFSET $m` with the values bound; nothing for no limit.
fn limit_clause<'q, DB: Database>(
    limit: Option<i64>,
    offset: i64,
    args: &mut DB::Arguments,
) -> String
where
    i64: Encode<'q, DB> + Type<DB>,
{
    let Some(limit) = limit else {
        return String::new();
    };
    args.add(limit).expect("an integer argument encodes");
    args.add(offset).expect("an integer argument encodes");
    format!(" LIMIT ${} OFFSET ${}", args.len() - 1, args.len())
}

/// A row of a user's books with its owner (reads across users name whose it is).
#[derive(Debug, Clone)]
pub struct Owned<T> {
    pub user_id: String,
    pub row: T,
}

/// A UTC day in milliseconds, the unit of every timestamp.
pub const DAY_MS: i64 = 86_400_000;

/// The most rows in one multi-row statement (well within both backends' limits on bound
/// values).
pub const MAX_ROWS: usize = 200;

/// Milliseconds since the Unix epoch: the storage form of every timestamp.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A new row id: a UUID that begins with the time (version 7), so rows written together sit
/// together in their primary key's index and a batch of inserts changes a few of its pages
/// instead of one page per row. Never a secret: tokens are made apart (`auth::tokens`).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// ISO 8601 UTC with milliseconds, the API's timestamp form.
pub fn iso8601(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Inserts a plain user `id` (e-mail `<id>@example.com`), on any schema version.
    pub async fn user(pool: &Pool, id: &str) {
        let email = format!("{id}@example.com");
        let user = users::NewUser {
            id,
            email: &email,
            full_name: id,
            password_hash: "x",
            role: "user",
            trial_ends_at: None,
            created_at: 0,
        };
        assert!(users::insert(pool, &user).await.unwrap(), "{id} is new");
    }

    /// The SQLite pool of a test database, for statements of the tests' own.
    pub fn sqlite_pool(db: &Db) -> &SqlitePool {
        match &db.pool {
            Pool::Sqlite(sqlite) => &sqlite.pool,
            Pool::Postgres(_) => unreachable!("test databases are SQLite"),
        }
    }

    /// A connection to the PostgreSQL server of the suites' PostgreSQL pass (`TEST_DATABASE_URL`),
    /// or `None` on their SQLite pass.
    pub async fn postgres() -> Option<sqlx::PgConnection> {
        use sqlx::Connection;
        let url = std::env::var("TEST_DATABASE_URL")
            .ok()
            .filter(|url| url.starts_with("postgres"))?;
        Some(sqlx::PgConnection::connect(&url).await.unwrap())
    }

    /// A migrated SQLite database in a temporary directory (kept alive by the returned guard).
    pub async fn sqlite() -> (Db, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::config::sqlite_url(&dir.path().join("test.db"));
        let db = Db::connect(&url).await.unwrap();
        db.migrate().await.unwrap();
        (db, dir)
    }
}

#[cfg(test)]
mod connect_tests {
    use super::*;

    /// SQLite takes its allocator only before its first connection: a store that connected
    /// without setting it first would leave it on the C library's.
    #[tokio::test]
    async fn the_store_puts_sqlite_on_the_process_allocator_before_connecting() {
        let (db, _dir) = testing::sqlite().await;
        db.ping().await.unwrap();
        assert!(sqlite_memory::configure());
    }

    #[test]
    fn a_server_on_this_machine_is_reached_without_tls_unless_the_url_asks_for_it() {
        use sqlx::postgres::PgSslMode;
        let mode = |url: &str| {
            without_tls_on_loopback(url, PgConnectOptions::from_str(url).unwrap()).get_ssl_mode()
        };
        if std::env::var_os("PGSSLMODE").is_some() {
            return;
        }
        for url in [
            "postgres://postgres@127.0.0.1:5432/test",
            "postgres://postgres@localhost/test",
            "postgres://postgres@[::1]:5432/test",
            "postgres://postgres@%2Fvar%2Frun%2Fpostgresql/test",
        ] {
            assert!(matches!(mode(url), PgSslMode::Disable), "{url}");
        }
        assert!(matches!(
            mode("postgres://postgres@127.0.0.1/test?sslmode=require"),
            PgSslMode::Require
        ));
        assert!(matches!(
            mode("postgres://postgres@127.0.0.1/test?application_name=x&sslmode=prefer"),
            PgSslMode::Prefer
        ));
        assert!(matches!(
            mode("postgres://postgres@db.internal:5432/test"),
            PgSslMode::Prefer
        ));
    }
}

#[cfg(test)]
mod migration_tests {
    use super::*;
    use crate::engine::order_state::OrderStatus;

    /// A database written by the previous release (migrations up to 0008) keeps its orders,
    /// ledger and positions through the execution migration: pending orders become `new`
    /// (reconciliation asks the venue about them, nothing is re-sent), failed ones `expired`,
    /// every booked ledger row gets its fill, and positions read with their exact cost.
    #[tokio::test]
    async fn the_execution_migration_carries_an_existing_database() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::config::sqlite_url(&dir.path().join("old.db"));
        let db = Db::connect(&url).await.unwrap();
        let sqlite = testing::sqlite_pool(&db);
        SQLITE_MIGRATIONS.run_to(8, sqlite).await.unwrap();
        let pool = &db.pool;
        testing::user(pool, "u1").await;
        for sql in [
            "INSERT INTO orders (id, user_id, client_order_id, broker, symbol, side, intent, quantity, position_id, status, created_at, updated_at) \
             VALUES ('o1', 'u1', 'th-1', 'paper', 'BTC-USD', 'BUY', 'open_long', '0.5', NULL, 'filled', 1, 1), \
                    ('o2', 'u1', 'th-2', 'paper', 'ETH-USD', 'BUY', 'open_long', '2', NULL, 'pending', 2, 2), \
                    ('o3', 'u1', 'th-3', 'paper', 'SOL-USD', 'BUY', 'open_long', '3', NULL, 'failed', 3, 3)",
            "INSERT INTO ledger (id, user_id, order_id, position_id, broker, symbol, side, action, quantity, price, notional, fee, realized_pnl, cash_after, created_at) \
             VALUES ('l1', 'u1', 'o1', 'p1', 'paper', 'BTC-USD', 'BUY', 'OPEN', '0.5', '60000', '30000', '30', '0', '-30', 1)",
            "INSERT INTO positions (id, user_id, broker, symbol, side, quantity, entry_price, entry_fees, extreme_price, current_price, status, opened_at, updated_at) \
             VALUES ('p1', 'u1', 'paper', 'BTC-USD', 'long', '0.5', '60000', '30', '60000', '61000', 'open', 1, 1)",
        ] {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(sqlite)
                .await
                .unwrap();
        }
        db.migrate().await.unwrap();

        let statuses: Vec<(String, String, StoredDecimal)> =
            sqlx::query_as("SELECT id, status, filled_quantity FROM orders ORDER BY id")
                .fetch_all(sqlite)
                .await
                .unwrap();
        assert_eq!(
            statuses,
            [
                ("o1", "filled", "0.5"),
                ("o2", "new", "0"),
                ("o3", "expired", "0")
            ]
            .map(|(a, b, c)| (
                a.to_string(),
                b.to_string(),
                StoredDecimal(c.parse().unwrap())
            ))
        );
        for (_, status, _) in &statuses {
            assert!(OrderStatus::parse(status).is_some(), "{status}");
        }
        let fills = orders::fills_of(pool, "o1").await.unwrap();
        assert_eq!(fills.len(), 1);
        assert_eq!(
            (fills[0].quantity, fills[0].price, fills[0].fee),
            ("0.5".parse().unwrap(), 60000.into(), 30.into())
        );
        let fill_id: Option<String> =
            sqlx::query_scalar("SELECT fill_id FROM ledger WHERE id = 'l1'")
                .fetch_one(sqlite)
                .await
                .unwrap();
        assert_eq!(fill_id.as_deref(), Some("l1"));
        let live = orders::live(pool, "u1").await.unwrap();
        assert_eq!(
            live.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
            ["o2"]
        );
        let positions = positions::open_positions(pool, "u1").await.unwrap();
        assert_eq!(positions[0].cost, "30000".parse().unwrap());
        assert_eq!(positions[0].closing, None);
    }

    /// A database with trades booked before the running totals had their current columns gets
    /// each account's totals and day totals computed once when it is migrated, equal to the sum
    /// of its trades (the rows an earlier migration computed are replaced); trades booked after
    /// that are added in their own transaction.
    #[tokio::test]
    async fn the_totals_migration_sums_the_existing_trades() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::config::sqlite_url(&dir.path().join("old.db"));
        let db = Db::connect(&url).await.unwrap();
        let sqlite = testing::sqlite_pool(&db);
        SQLITE_MIGRATIONS.run_to(14, sqlite).await.unwrap();
        for id in ["u1", "u2"] {
            testing::user(&db.pool, id).await;
        }
        // u1: +0.1, +0.2, -0.3, 0 (a flat trade ends the streak), then +1.005; u2 none.
        for (i, net) in ["0.1", "0.2", "-0.3", "0", "1.005"].iter().enumerate() {
            sqlx::query(sql!(
                "INSERT INTO trades (id, user_id, position_id, broker, symbol, side, quantity, entry_price, \
                 exit_price, size_usd, gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, \
                 duration_minutes, entry_fee, strategy) VALUES ('t{i}', 'u1', 'p{i}', 'paper', 'BTC-USD', 'long', \
                 '0.5', '100', '110', '50', '{net}', '0.1', '{net}', '0', 'signal', 0, {closed}, 0, '0.05', 's')",
                closed = i + 1
            ))
            .execute(sqlite)
            .await
            .unwrap();
        }
        // What the 0014 server had computed and marked done (here stale on purpose).
        sqlx::query(
            "INSERT INTO account_totals (user_id, trades, winners, losers, net_pnl, profit, loss, \
             fees, volume, streak, updated_at) VALUES ('u1', 1, 1, 0, '9', '9', '0', '0', '0', 1, 0)",
        )
        .execute(sqlite)
        .await
        .unwrap();
        flags::set_flag(&db.pool, "account_totals_backfilled", "1", "migration", 0)
            .await
            .unwrap();
        db.migrate().await.unwrap();

        let expected = trades::trades_since(&db.pool, "u1", 0)
            .await
            .unwrap()
            .iter()
            .fold(
                crate::engine::totals::AccountTotals::default(),
                |mut t, trade| {
                    t.add(trade);
                    t
                },
            );
        let u1 = totals::get(&db.pool, "u1").await.unwrap();
        assert_eq!(u1, expected);
        assert_eq!(
            (u1.sums.trades, u1.sums.winners, u1.sums.losers, u1.streak),
            (5, 3, 1, 1)
        );
        assert_eq!((u1.longest_win_streak, u1.longest_loss_streak), (2, 1));
        assert_eq!(u1.hold_ms, 15);
        assert_eq!(u1.sums.net_pnl, "1.005".parse().unwrap());
        let days = totals::days_since(&db.pool, "u1", 0).await.unwrap();
        assert_eq!(days.len(), 1);
        assert_eq!((days[0].day, days[0].symbol.as_str()), (0, "BTC-USD"));
        let tally = &days[0].tally;
        assert_eq!((tally.trades, tally.winners, tally.losers), (5, 3, 1));
        assert_eq!(tally.net_pnl, "1.005".parse().unwrap());
        assert_eq!(tally.size_usd, "250".parse().unwrap());
        assert_eq!(totals::get(&db.pool, "u2").await.unwrap().sums.trades, 0);
        // Migrating again changes nothing; a trade booked now is added to the row.
        db.migrate().await.unwrap();
        assert_eq!(totals::get(&db.pool, "u1").await.unwrap(), expected);
        let mut trade = trades::trades_since(&db.pool, "u1", 0).await.unwrap()[0].clone();
        trade.id = "t-new".into();
        trade.closed_at_ms = 10;
        trade.net_pnl = "-2".parse().unwrap();
        let mut tx = db.begin().await.unwrap();
        trades::insert(&mut tx, &[("u1", &trade)]).await.unwrap();
        tx.commit().await.unwrap();
        let after = totals::get(&db.pool, "u1").await.unwrap();
        assert_eq!(
            (after.sums.trades, after.sums.losers, after.streak),
            (6, 2, -1)
        );
        assert_eq!(after.sums.net_pnl, "-0.995".parse().unwrap());
        assert_eq!(after.worst_trade, Some("-2".parse().unwrap()));
        let day = &totals::days_since(&db.pool, "u1", 0).await.unwrap()[0].tally;
        assert_eq!((day.trades, day.losers), (6, 2));
        assert_eq!(day.net_pnl, "-0.995".parse().unwrap());
    }
}
