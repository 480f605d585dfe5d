//! The books' writer: one task that writes every order before it is sent, every booking of what a
//! venue reported, every requested close and every plugin store change. Callers hand it a [`Job`]
//! (data: the rows to write) and wait for its answer; it takes whatever jobs are queued, writes
//! them in one transaction with one statement per table, commits, waits for one flush of the log
//! (`durability`) and only then answers. Jobs arriving while a batch is written form the next
//! one, so under load a commit and a flush carry many fills, and each fill costs a share of a
//! few statements instead of a round trip per row. The statements are built before any runs
//! and go to the database as one script (`statements`): on SQLite a single hand-off to the
//! connection's thread, on PostgreSQL a single round trip. A batch's flush is waited for while
//! the next batch is written.
//!
//! A job answers once its rows are durable: nothing (an event, an acknowledgement, an order to a
//! venue) goes out before. When a batch fails, each of its jobs is written again on its own, so
//! the job at fault gets the error and the others are written.
//!
//! With several instances, a job may carry the [`Fence`] of the user's lease it was made under:
//! the batch reads the leases' tokens in its transaction first (on PostgreSQL behind a shared
//! advisory lock per user, so a takeover waits for the commit) and answers [`WriteError::LeaseLost`] to a job whose token is
//! no longer the lease's, writing nothing of it. An instance that lost a user's lease (paused,
//! cut off, slow) books nothing for them after the takeover.
//!
//! Jobs of one user never meet in a batch: a user's trader waits for each answer before its next
//! job. Rows of one table are still made distinct (the last state of a position counts), since
//! an upsert may not touch a row twice in one statement on PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, Postgres, Sqlite};
use tokio::sync::{Mutex, mpsc, oneshot};

use super::accounts::{self, AccountChange};
use super::alarms::{self, AlarmRow};
use super::bots::{self, BotRow};
use super::durability::GroupSync;
use super::notifications::{self, EventRow};
use super::orders::{self, FillRow, OrderChange, OrderRow};
use super::plugin_store::{self, Change};
use super::snapshots::{self, Snapshot};
use super::statements::{ConnectionRef, Statements};
use super::{
    Backend, Conn, MAX_ROWS, Pool, ledger, now_ms, positions, reconciliation, signals, trades,
};
use crate::engine::accounting::{CompletedTrade, LedgerEntry, Position};

/// The most jobs written in one transaction.
const MAX_BATCH: usize = 256;
/// Batches written at once on PostgreSQL: two, one written while the other's commit waits for
/// the server. With a batch one round trip, more writers only make smaller batches, whose
/// statements the server parses and plans for fewer rows each.
const POSTGRES_WRITERS: usize = 2;
/// How long a batch's transaction may wait between its statements on PostgreSQL.
const STALLED_BATCH: std::time::Duration = std::time::Duration::from_secs(1);

/// What the writer is asked to write.
#[derive(Debug)]
pub enum Job {
    /// An order about to be sent; answers whether it was written (`false`: an order with its
    /// client id exists already, and that one stands).
    NewOrder(Box<NewOrder>),
    /// What one observation of an order (or a write-off) changes in a user's books.
    Booking(Box<Booking>),
    /// A position's pending close (only those columns).
    Closing(Box<Position>),
    /// Changes of plugin stores.
    PluginStore(Vec<Change>),
    /// A bot's whole row, as a change of its status leaves it.
    Bot(Box<BotRow>),
    /// A raised alarm and the notification of it.
    Alarm(Box<RaisedAlarm>),
    /// What a scheduler tick's scans leave behind: equity snapshots and bots' scan progress.
    /// Written here rather than on a connection of its own, which on SQLite would hold the
    /// write lock (and a flush) while the books wait.
    ScanProgress(Box<ScanProgress>),
}

/// An alarm raised for a user, with the event that tells them.
#[derive(Debug)]
pub struct RaisedAlarm {
    pub user_id: String,
    pub alarm: AlarmRow,
    pub event: EventRow,
}

/// Equity snapshots and bots' progress of one tick, for several users.
#[derive(Debug, Default)]
pub struct ScanProgress {
    pub snapshots: Vec<Snapshot>,
    pub bots: Vec<BotRow>,
    /// The leases the rows were made under: a user's rows are left out when their lease has
    /// moved on. Users without one are written.
    pub fences: Vec<Fence>,
}

/// The lease on a user's trading state a write was made under (`engine::leases`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub user_id: String,
    pub token: i64,
}

/// Why a job was not written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// The job's fence is not the user's lease any more: another instance took the user over.
    #[error("this instance no longer holds the lease on the user's trading")]
    LeaseLost,
}

/// A job's answer: for a `NewOrder`, whether it was written.
pub type Answer = Result<bool, WriteError>;

/// An order to write before it is sent.
#[derive(Debug)]
pub struct NewOrder {
    pub order: OrderRow,
    /// For a close: its position, with the close request as this attempt counts it. Written
    /// with the order (only those columns), so an attempt is counted exactly when its order
    /// exists.
    pub closing: Option<Position>,
}

/// The rows one booking writes, in one user's books.
#[derive(Debug, Default)]
pub struct Booking {
    pub user_id: String,
    pub fills: Vec<FillRow>,
    /// Positions as they are after the booking (new ones are inserted).
    pub positions: Vec<Position>,
    pub ledger: Vec<LedgerWrite>,
    pub order: Option<OrderChange>,
    pub trade: Option<CompletedTrade>,
    pub signal: Option<SignalOutcome>,
    pub account: Option<AccountChange>,
    /// What the venue holds apart from tradehost grows by dust left there.
    pub baseline: Option<BaselineShift>,
    /// The notifications the user is told of, recorded with the books.
    pub events: Vec<EventRow>,
    /// What the venue's plugin wrote in its store while answering, written with the booking.
    pub plugin_store: Vec<Change>,
}

#[derive(Debug)]
pub struct LedgerWrite {
    pub order_id: String,
    pub fill_id: Option<String>,
    pub entry: LedgerEntry,
}

/// The end of the order a signal placed.
#[derive(Debug)]
pub struct SignalOutcome {
    pub signal_id: String,
    pub status: &'static str,
    pub outcome: Option<String>,
}

#[derive(Debug)]
pub struct BaselineShift {
    pub broker: String,
    pub asset: String,
    pub quantity: rust_decimal::Decimal,
}

struct Request {
    job: Job,
    fence: Option<Fence>,
    answer: oneshot::Sender<Answer>,
}

/// The handle callers submit jobs through.
#[derive(Clone)]
pub struct Writer {
    queue: mpsc::UnboundedSender<Request>,
    /// Jobs refused because their lease had moved on.
    refused: Arc<AtomicU64>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").finish_non_exhaustive()
    }
}

impl Writer {
    /// Starts the writer on `pool` (in the current Tokio runtime). `grouped`: batches share a
    /// transaction; otherwise each job commits alone (the reference for group commit).
    pub fn start(pool: Pool, sync: Arc<GroupSync>, grouped: bool) -> Self {
        let (queue, requests) = mpsc::unbounded_channel();
        let batch = if grouped { MAX_BATCH } else { 1 };
        // SQLite has one writer at a time anyway. PostgreSQL writes batches side by side, each
        // on a connection of its own: batches never share a row (a user's jobs are one at a
        // time, and every row a job writes is its user's).
        let writers = match pool.backend() {
            super::Backend::Sqlite => 1,
            super::Backend::Postgres => POSTGRES_WRITERS,
        };
        let requests = Arc::new(Mutex::new(requests));
        let refused = Arc::new(AtomicU64::new(0));
        for _ in 0..writers {
            tokio::spawn(run(
                pool.clone(),
                sync.clone(),
                requests.clone(),
                batch,
                refused.clone(),
            ));
        }
        Writer { queue, refused }
    }

    /// How many jobs were refused because their lease had moved on.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Writes `job` (only while `fence` is its user's lease, when there is one) and waits until
    /// it is durable.
    pub async fn write(&self, job: Job, fence: Option<Fence>) -> Answer {
        let (answer, answered) = oneshot::channel();
        self.queue
            .send(Request { job, fence, answer })
            .map_err(|_| sqlx::Error::PoolClosed)?;
        answered.await.map_err(|_| sqlx::Error::PoolClosed)?
    }
}

async fn run(
    pool: Pool,
    sync: Arc<GroupSync>,
    requests: Arc<Mutex<mpsc::UnboundedReceiver<Request>>>,
    batch: usize,
    refused: Arc<AtomicU64>,
) {
    let mut queued = Vec::with_capacity(batch);
    // The writer keeps its connection: taking one from the pool for each batch would wait for
    // the last one's return, which the pool does in a task of its own.
    let mut held: Option<Held> = None;
    // The writer that holds the queue takes what is waiting; the others wait their turn.
    while requests.lock().await.recv_many(&mut queued, batch).await > 0 {
        let mut jobs = Vec::with_capacity(queued.len());
        let mut fences = Vec::with_capacity(queued.len());
        let mut answers = Vec::with_capacity(queued.len());
        for request in queued.drain(..) {
            jobs.push(request.job);
            fences.push(request.fence);
            answers.push(request.answer);
        }
        let results: Vec<Answer> = match write_batch(&pool, &mut held, &jobs, &fences).await {
            Ok(results) => results,
            Err(err) if jobs.len() == 1 => vec![Err(err.into())],
            Err(err) => {
                tracing::warn!(error = %err, jobs = jobs.len(), "a batch of the books failed; writing its jobs one by one");
                let mut results = Vec::with_capacity(jobs.len());
                for (job, fence) in jobs.iter().zip(&fences) {
                    results.push(
                        match write_batch(
                            &pool,
                            &mut held,
                            std::slice::from_ref(job),
                            std::slice::from_ref(fence),
                        )
                        .await
                        {
                            Ok(mut one) => one.remove(0),
                            Err(err) => Err(err.into()),
                        },
                    );
                }
                results
            }
        };
        let lost = results
            .iter()
            .filter(|result| matches!(result, Err(WriteError::LeaseLost)))
            .count();
        if lost > 0 {
            refused.fetch_add(lost as u64, Ordering::Relaxed);
            tracing::warn!(
                jobs = lost,
                "writes refused: their user's lease moved to another instance"
            );
        }
        // Durable before anyone hears of it. The flush is waited for beside the next batch, which
        // holds none of these jobs' users (each waits for this answer first): flushes queue in
        // commit order, and one that starts after several commits covers them all.
        let ticket = sync.ticket();
        let sync = sync.clone();
        tokio::spawn(async move {
            // A flush the disk refuses leaves committed books that may not survive a power loss:
            // the process stops, and the restart reads the books as the disk has them.
            if let Err(err) = sync.wait_for(ticket).await {
                tracing::error!(error = %err, "flushing the database log failed; stopping");
                std::process::abort();
            }
            for (answer, result) in answers.into_iter().zip(results) {
                let _ = answer.send(result);
            }
        });
    }
}

/// A connection the writer keeps.
enum Held {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

impl Held {
    async fn take(pool: &Pool) -> sqlx::Result<Self> {
        Ok(match pool {
            Pool::Sqlite(pool) => Held::Sqlite(pool.acquire().await?),
            Pool::Postgres(pool) => {
                let mut conn = pool.acquire().await?;
                // A batch runs its statements back to back: one idle that long is a process that
                // stalls (stopped, swapped out, cut off). The server ends its session, so the
                // lease locks the batch took are not held for the stall, and the batch fails.
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SET idle_in_transaction_session_timeout = {}",
                    STALLED_BATCH.as_millis()
                )))
                .execute(&mut *conn)
                .await?;
                Held::Postgres(conn)
            }
        })
    }

    fn backend(&self) -> Backend {
        match self {
            Held::Sqlite(_) => Backend::Sqlite,
            Held::Postgres(_) => Backend::Postgres,
        }
    }

    fn connection(&mut self) -> ConnectionRef<'_> {
        match self {
            Held::Sqlite(conn) => ConnectionRef::Sqlite(conn),
            Held::Postgres(conn) => ConnectionRef::Postgres(conn),
        }
    }

    /// Begins a transaction; on SQLite it takes the write lock at once ([`Pool::begin`]).
    async fn begin(&mut self) -> sqlx::Result<Conn<'_>> {
        Ok(match self {
            Held::Sqlite(conn) => Conn::Sqlite(conn.begin_with("BEGIN IMMEDIATE").await?),
            Held::Postgres(conn) => Conn::Postgres(conn.begin().await?),
        })
    }
}

/// Writes `jobs` in one transaction on the held connection (taken first if there is none, and
/// given up after a failure); answers each (`NewOrder`: whether it was written).
async fn write_batch(
    pool: &Pool,
    held: &mut Option<Held>,
    jobs: &[Job],
    fences: &[Option<Fence>],
) -> sqlx::Result<Vec<Answer>> {
    if held.is_none() {
        *held = Some(Held::take(pool).await?);
    }
    let result = write_jobs(held.as_mut().expect("taken above"), jobs, fences).await;
    if result.is_err() {
        *held = None;
    }
    result
}

async fn write_jobs(
    held: &mut Held,
    jobs: &[Job],
    fences: &[Option<Fence>],
) -> sqlx::Result<Vec<Answer>> {
    let now = now_ms();
    // The client ids of the orders written: the only rows the statements return.
    let (leases, written) = if fenced(jobs, fences) {
        let mut tx = held.begin().await?;
        let leases = Leases::read(&mut tx, jobs, fences).await?;
        let statements = build(Statements::new(tx.backend()), jobs, fences, &leases, now);
        let written = statements.run(&mut tx).await?;
        tx.commit().await?;
        (leases, written)
    } else {
        // Nothing to check against leases: the batch is one script with its own `BEGIN` and
        // `COMMIT`, one hand-off for the whole transaction, built before it starts (on SQLite,
        // before the write lock is taken).
        let leases = Leases::default();
        let statements = build(
            Statements::transaction(held.backend()),
            jobs,
            fences,
            &leases,
            now,
        );
        (leases, statements.run_transaction(held.connection()).await?)
    };
    let written: HashSet<String> = written.into_iter().collect();
    let mut answered: HashSet<&str> = HashSet::new();
    Ok(jobs
        .iter()
        .zip(fences)
        .map(|(job, fence)| {
            if !leases.holds(fence.as_ref()) {
                return Err(WriteError::LeaseLost);
            }
            Ok(match job {
                Job::NewOrder(new) => {
                    let id = new.order.client_order_id.as_str();
                    written.contains(id) && answered.insert(id)
                }
                _ => true,
            })
        })
        .collect())
}

/// Whether any of a batch's writes is made under a lease.
fn fenced(jobs: &[Job], fences: &[Option<Fence>]) -> bool {
    fences.iter().any(Option::is_some)
        || jobs
            .iter()
            .any(|job| matches!(job, Job::ScanProgress(progress) if !progress.fences.is_empty()))
}

/// The statements that write `jobs` (those whose fences `leases` hold), one per table and kind
/// of change, into `statements`.
fn build(
    mut statements: Statements,
    jobs: &[Job],
    fences: &[Option<Fence>],
    leases: &Leases,
    now: i64,
) -> Statements {
    let Sorted {
        new_orders,
        bookings,
        closings,
        store_changes,
        bots,
        alarms,
        snapshots: equity,
        scanned,
    } = Sorted::new(jobs, fences, leases);
    let order_rows: Vec<&OrderRow> = new_orders.iter().map(|new| &new.order).collect();
    for chunk in order_rows.chunks(MAX_ROWS) {
        orders::insert(&mut statements, chunk);
    }

    let changes: Vec<&OrderChange> = bookings.iter().filter_map(|b| b.order.as_ref()).collect();
    for chunk in changes.chunks(MAX_ROWS) {
        orders::update(&mut statements, chunk, now);
    }
    // Close requests on their own and those of close orders (counted if the order is written);
    // the last of each position counts.
    let requests = closings.iter().map(|position| (*position, None));
    let attempts = new_orders.iter().filter_map(|new| {
        new.closing
            .as_ref()
            .map(|position| (position, Some(new.order.id.as_str())))
    });
    let closing = last_of_each(requests.chain(attempts), |(p, _)| p.id.as_str());
    for chunk in closing.chunks(MAX_ROWS) {
        positions::update_closing(&mut statements, chunk, now);
    }
    // The last state of each position counts.
    let states = last_of_each(
        bookings.iter().flat_map(|booking| {
            booking
                .positions
                .iter()
                .map(|position| (booking.user_id.as_str(), position))
        }),
        |(_, position)| position.id.as_str(),
    );
    for chunk in states.chunks(MAX_ROWS) {
        positions::push_write(&mut statements, chunk, now);
    }
    let fills: Vec<&FillRow> = bookings.iter().flat_map(|b| &b.fills).collect();
    for chunk in fills.chunks(MAX_ROWS) {
        orders::insert_fills(&mut statements, chunk);
    }
    let rows: Vec<ledger::NewRow<'_>> = bookings
        .iter()
        .flat_map(|b| {
            b.ledger.iter().map(|row| ledger::NewRow {
                user_id: &b.user_id,
                order_id: &row.order_id,
                fill_id: row.fill_id.as_deref(),
                entry: &row.entry,
            })
        })
        .collect();
    for chunk in rows.chunks(MAX_ROWS) {
        ledger::push_insert(&mut statements, chunk);
    }
    let completed: Vec<(&str, &CompletedTrade)> = bookings
        .iter()
        .filter_map(|b| b.trade.as_ref().map(|t| (b.user_id.as_str(), t)))
        .collect();
    for chunk in completed.chunks(MAX_ROWS) {
        trades::push_insert(&mut statements, chunk);
    }
    // Changes of one account add up.
    let mut accounts: Vec<AccountChange> = Vec::new();
    for change in bookings.iter().filter_map(|b| b.account.as_ref()) {
        match accounts.iter_mut().find(|a| a.user_id == change.user_id) {
            Some(sum) => {
                sum.cash += change.cash;
                sum.realized_pnl += change.realized_pnl;
                sum.fees_paid += change.fees_paid;
            }
            None => accounts.push(change.clone()),
        }
    }
    let accounts: Vec<&AccountChange> = accounts.iter().collect();
    for chunk in accounts.chunks(MAX_ROWS) {
        accounts::push_changes(&mut statements, chunk, now);
    }
    for booking in &bookings {
        if let Some(signal) = &booking.signal {
            signals::order_ended(
                &mut statements,
                &signal.signal_id,
                signal.status,
                signal.outcome.as_deref(),
            );
        }
        if let Some(shift) = &booking.baseline {
            reconciliation::shift_baseline(
                &mut statements,
                &booking.user_id,
                &shift.broker,
                &shift.asset,
                shift.quantity,
                now,
            );
        }
    }
    let raised: Vec<(&str, &AlarmRow)> = alarms
        .iter()
        .map(|a| (a.user_id.as_str(), &a.alarm))
        .collect();
    for chunk in raised.chunks(MAX_ROWS) {
        alarms::push_insert(&mut statements, chunk);
    }
    let events: Vec<&EventRow> = bookings
        .iter()
        .flat_map(|b| &b.events)
        .chain(alarms.iter().map(|a| &a.event))
        .collect();
    for chunk in events.chunks(MAX_ROWS) {
        notifications::push_events(&mut statements, chunk, false);
    }
    for chunk in store_changes.chunks(MAX_ROWS) {
        plugin_store::apply(&mut statements, chunk, now);
    }
    // A bot's last row counts; its scan progress (newer, or the same) after it.
    let bots = last_of_each(bots.into_iter(), |bot| bot.user_id.as_str());
    for chunk in bots.chunks(MAX_ROWS) {
        bots::push_upserts(&mut statements, chunk, now);
    }
    // Ticks' scan progress: equity snapshots, and each bot's last progress (ticks follow one
    // another, so two of a bot in one batch are rare).
    for chunk in equity.chunks(MAX_ROWS) {
        snapshots::push_insert(&mut statements, chunk);
    }
    let scanned = last_of_each(scanned.into_iter(), |bot| bot.user_id.as_str());
    for chunk in scanned.chunks(MAX_ROWS) {
        bots::push_scans(&mut statements, chunk, now);
    }
    statements
}

/// The current tokens of the leases a batch's fences name, read in its transaction.
#[derive(Default)]
struct Leases(HashMap<String, i64>);

impl Leases {
    async fn read(
        tx: &mut super::Conn<'_>,
        jobs: &[Job],
        fences: &[Option<Fence>],
    ) -> sqlx::Result<Self> {
        let mut users: Vec<&str> = fences
            .iter()
            .flatten()
            .map(|f| f.user_id.as_str())
            .collect();
        for job in jobs {
            if let Job::ScanProgress(progress) = job {
                users.extend(progress.fences.iter().map(|f| f.user_id.as_str()));
            }
        }
        if users.is_empty() {
            return Ok(Leases::default());
        }
        users.sort_unstable();
        users.dedup();
        Ok(Leases(
            super::bot_leases::tokens(tx, &users)
                .await?
                .into_iter()
                .collect(),
        ))
    }

    /// Whether a write under `fence` may go ahead.
    fn holds(&self, fence: Option<&Fence>) -> bool {
        fence.is_none_or(|fence| self.0.get(&fence.user_id) == Some(&fence.token))
    }
}

/// A batch's jobs by kind, each kind in the order the jobs came.
#[derive(Default)]
struct Sorted<'a> {
    /// Orders to send: the first of a client id in the batch is the one written.
    new_orders: Vec<&'a NewOrder>,
    bookings: Vec<&'a Booking>,
    /// Close requests on their own.
    closings: Vec<&'a Position>,
    /// Store changes of plugins, on their own and with bookings.
    store_changes: Vec<&'a Change>,
    bots: Vec<&'a BotRow>,
    alarms: Vec<&'a RaisedAlarm>,
    /// Ticks' equity snapshots and bots' scan progress, of users whose lease holds.
    snapshots: Vec<&'a Snapshot>,
    scanned: Vec<&'a BotRow>,
}

impl<'a> Sorted<'a> {
    /// The jobs whose fences hold.
    fn new(jobs: &'a [Job], fences: &[Option<Fence>], leases: &Leases) -> Self {
        let mut sorted = Sorted::default();
        let mut claimed: HashSet<&str> = HashSet::new();
        for (job, fence) in jobs.iter().zip(fences) {
            if !leases.holds(fence.as_ref()) {
                continue;
            }
            match job {
                Job::NewOrder(new) => {
                    if claimed.insert(&new.order.client_order_id) {
                        sorted.new_orders.push(new);
                    }
                }
                Job::Booking(booking) => {
                    sorted.store_changes.extend(&booking.plugin_store);
                    sorted.bookings.push(booking);
                }
                Job::Closing(position) => sorted.closings.push(position),
                Job::PluginStore(changes) => sorted.store_changes.extend(changes),
                Job::Bot(bot) => sorted.bots.push(bot),
                Job::Alarm(alarm) => sorted.alarms.push(alarm),
                Job::ScanProgress(progress) => {
                    let lost: HashSet<&str> = progress
                        .fences
                        .iter()
                        .filter(|fence| !leases.holds(Some(fence)))
                        .map(|fence| fence.user_id.as_str())
                        .collect();
                    let kept = |user_id: &str| !lost.contains(user_id);
                    sorted.snapshots.extend(
                        progress
                            .snapshots
                            .iter()
                            .filter(|snapshot| kept(&snapshot.user_id)),
                    );
                    sorted
                        .scanned
                        .extend(progress.bots.iter().filter(|bot| kept(&bot.user_id)));
                }
            }
        }
        sorted
    }
}

/// Each key's last item, in the order keys first appear.
fn last_of_each<'a, T>(items: impl Iterator<Item = T>, key: impl Fn(&T) -> &'a str) -> Vec<T> {
    let mut slots: HashMap<&'a str, usize> = HashMap::new();
    let mut last: Vec<T> = Vec::new();
    for item in items {
        match slots.get(key(&item)) {
            Some(&slot) => last[slot] = item,
            None => {
                slots.insert(key(&item), last.len());
                last.push(item);
            }
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::*;
    use crate::engine::accounting::{Account, Closing, Side};
    use crate::store::accounts;
    use crate::store::testing::{sqlite, user};

    fn new_order(order: OrderRow) -> Job {
        Job::NewOrder(Box::new(NewOrder {
            order,
            closing: None,
        }))
    }

    fn order(id: &str, client_order_id: &str) -> OrderRow {
        OrderRow {
            id: id.into(),
            user_id: "u1".into(),
            client_order_id: client_order_id.into(),
            broker: "paper".into(),
            symbol: "BTC-USD".into(),
            side: "BUY".into(),
            intent: "open_long".into(),
            kind: "market".into(),
            quantity: Decimal::ONE,
            limit_price: None,
            filled_quantity: Decimal::ZERO,
            position_id: Some("p1".into()),
            trade_id: None,
            stop_loss: None,
            take_profit: None,
            trail_pct: None,
            exit_reason: None,
            strategy: None,
            attempt: 1,
            signal_id: None,
            status: "new".into(),
            broker_order_id: None,
            error: None,
            next_check_at: None,
            checks: 0,
            created_at: 1,
            updated_at: 1,
        }
    }

    fn fill(id: &str, order_id: &str, venue_trade_id: &str) -> FillRow {
        FillRow {
            id: id.into(),
            order_id: order_id.into(),
            user_id: "u1".into(),
            venue_trade_id: venue_trade_id.into(),
            quantity: Decimal::ONE,
            price: Decimal::TEN,
            fee: Decimal::ZERO,
            filled_at: 2,
            booked_at: 2,
        }
    }

    fn store_change(scope: &str, key: &str, value: Option<&str>) -> Change {
        Change {
            plugin: "paper".into(),
            scope: scope.into(),
            key: key.into(),
            value: value.map(str::to_string),
        }
    }

    fn position(quantity: Decimal) -> Position {
        Position {
            id: "p1".into(),
            broker: "paper".into(),
            strategy: "ema-cross".into(),
            symbol: "BTC-USD".into(),
            side: Side::Long,
            quantity,
            entry_price: Decimal::TEN,
            cost: Decimal::TEN * quantity,
            entry_fees: Decimal::ZERO,
            stop_loss: None,
            take_profit: None,
            trail_pct: None,
            extreme_price: Decimal::TEN,
            current_price: Decimal::TEN,
            opened_at_ms: 2,
            closing: None,
        }
    }

    async fn count(db: &crate::store::Db, sql: &'static str) -> i64 {
        sqlx::query_scalar(sql)
            .fetch_one(crate::store::testing::sqlite_pool(db))
            .await
            .unwrap()
    }

    fn bot_row(user_id: &str, seq: i64) -> BotRow {
        BotRow {
            user_id: user_id.into(),
            id: format!("bot-{user_id}"),
            status: "running".into(),
            broker: "paper".into(),
            paper_trading: 1,
            risk_profile: "moderate".into(),
            strategy: "ema-cross".into(),
            symbols: r#"["BTC-USD"]"#.into(),
            started_at: Some(1),
            last_scan_at: Some(seq * 10),
            scan_seq: seq,
            strategy_state: format!("state-{seq}"),
            last_error: None,
        }
    }

    #[tokio::test]
    async fn a_bots_row_and_a_raised_alarm_with_its_event_are_written_by_the_writer() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        db.write(Job::Bot(Box::new(bot_row("u1", 1))))
            .await
            .unwrap();
        let stopped = BotRow {
            status: "error".into(),
            last_error: Some("the venue refused the key".into()),
            ..bot_row("u1", 2)
        };
        db.write(Job::Bot(Box::new(stopped))).await.unwrap();
        let bots: Vec<(String, i64, Option<String>)> =
            sqlx::query_as("SELECT status, scan_seq, last_error FROM bots")
                .fetch_all(crate::store::testing::sqlite_pool(&db))
                .await
                .unwrap();
        assert_eq!(
            bots,
            [(
                "error".to_string(),
                2,
                Some("the venue refused the key".to_string())
            )]
        );

        let alarm = AlarmRow {
            id: "a1".into(),
            alarm_type: "daily_loss".into(),
            level: "WARNING".into(),
            message: "Daily loss 3%".into(),
            current_value: 3.0,
            threshold_value: 2.0,
            recommended_action: "Reduce size".into(),
            status: "active".into(),
            raised_at: 7,
            cleared_at: None,
        };
        let event = EventRow {
            id: "e1".into(),
            user_id: Some("u1".into()),
            kind: "alarm".into(),
            payload: "{}".into(),
            created_at: 7,
        };
        let raised = RaisedAlarm {
            user_id: "u1".into(),
            alarm,
            event,
        };
        db.write(Job::Alarm(Box::new(raised))).await.unwrap();
        assert_eq!(
            count(
                &db,
                "SELECT COUNT(*) FROM alarms WHERE user_id = 'u1' AND status = 'active'"
            )
            .await,
            1
        );
        assert_eq!(
            count(
                &db,
                "SELECT COUNT(*) FROM notification_events WHERE id = 'e1' AND kind = 'alarm'"
            )
            .await,
            1
        );
    }

    #[tokio::test]
    async fn a_ticks_progress_writes_each_bots_last_scan_and_the_equity_snapshots() {
        let (db, _dir) = sqlite().await;
        for user_id in ["u1", "u2"] {
            user(&db.pool, user_id).await;
            bots::upsert_bot(&db.pool, &bot_row(user_id, 0), 1)
                .await
                .unwrap();
        }
        let snapshot = |user_id: &str| Snapshot {
            user_id: user_id.into(),
            at: 5,
            equity: Decimal::TEN,
            cash: Decimal::TEN,
            unrealized_pnl: Decimal::ZERO,
        };
        let progress = ScanProgress {
            snapshots: vec![snapshot("u1"), snapshot("u2"), snapshot("u1")],
            bots: vec![bot_row("u1", 1), bot_row("u2", 3), bot_row("u1", 2)],
            fences: Vec::new(),
        };
        db.write(Job::ScanProgress(Box::new(progress)))
            .await
            .unwrap();

        let bots: Vec<(String, i64, Option<i64>, String, String)> = sqlx::query_as(
            "SELECT user_id, scan_seq, last_scan_at, strategy_state, status FROM bots ORDER BY user_id",
        )
        .fetch_all(crate::store::testing::sqlite_pool(&db))
        .await
        .unwrap();
        let row = |user_id: &str, seq: i64| {
            let state = format!("state-{seq}");
            (
                user_id.to_string(),
                seq,
                Some(seq * 10),
                state,
                "running".to_string(),
            )
        };
        assert_eq!(bots, [row("u1", 2), row("u2", 3)]);
        assert_eq!(count(&db, "SELECT COUNT(*) FROM equity_snapshots").await, 2);
    }

    #[tokio::test]
    async fn a_job_under_a_lease_that_moved_on_writes_nothing_and_the_rest_of_its_batch_is_written()
    {
        let (db, _dir) = sqlite().await;
        for user_id in ["u1", "u2"] {
            user(&db.pool, user_id).await;
            bots::upsert_bot(&db.pool, &bot_row(user_id, 0), 1)
                .await
                .unwrap();
        }
        let now = now_ms();
        let lease = |token| Fence {
            user_id: "u1".into(),
            token,
        };
        let old = super::super::bot_leases::claim(&db, "u1", "one", now, now + 60_000)
            .await
            .unwrap()
            .unwrap();
        super::super::bot_leases::release(&db, "u1", "one", None)
            .await
            .unwrap();
        let new = super::super::bot_leases::claim(&db, "u1", "two", now, now + 60_000)
            .await
            .unwrap()
            .unwrap();
        let stopped = BotRow {
            status: "stopped".into(),
            ..bot_row("u1", 1)
        };
        let snapshot = |user_id: &str| Snapshot {
            user_id: user_id.into(),
            at: 5,
            equity: Decimal::TEN,
            cash: Decimal::TEN,
            unrealized_pnl: Decimal::ZERO,
        };
        let stale_progress = ScanProgress {
            snapshots: vec![snapshot("u1"), snapshot("u2")],
            bots: vec![bot_row("u1", 7), bot_row("u2", 7)],
            fences: vec![lease(old)],
        };
        let (old, new) = (lease(old), lease(new));
        let (refused, progress, written) = tokio::join!(
            db.write_under(Some(&old), Job::Bot(Box::new(stopped))),
            db.write(Job::ScanProgress(Box::new(stale_progress))),
            db.write_under(Some(&new), Job::Bot(Box::new(bot_row("u1", 3)))),
        );
        assert!(matches!(refused, Err(WriteError::LeaseLost)), "{refused:?}");
        progress.unwrap();
        written.unwrap();
        let bots: Vec<(String, String, i64)> =
            sqlx::query_as("SELECT user_id, status, scan_seq FROM bots ORDER BY user_id")
                .fetch_all(crate::store::testing::sqlite_pool(&db))
                .await
                .unwrap();
        assert_eq!(
            bots,
            [
                ("u1".to_string(), "running".to_string(), 3),
                ("u2".to_string(), "running".to_string(), 7)
            ]
        );
        let snapshots: Vec<String> = sqlx::query_scalar("SELECT user_id FROM equity_snapshots")
            .fetch_all(crate::store::testing::sqlite_pool(&db))
            .await
            .unwrap();
        assert_eq!(snapshots, ["u2"]);
    }

    #[tokio::test]
    async fn jobs_queued_together_share_one_commit_and_a_failing_job_fails_alone() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        assert!(db.write(new_order(order("o0", "c0"))).await.unwrap());
        let booked = Booking {
            user_id: "u1".into(),
            fills: vec![fill("f1", "o0", "t1")],
            ..Booking::default()
        };
        db.write(Job::Booking(Box::new(booked))).await.unwrap();
        let flushes = db.sync.flushes();

        // The same venue trade booked again breaks the unique fill; the rest is written.
        let again = Booking {
            user_id: "u1".into(),
            fills: vec![fill("f2", "o0", "t1")],
            ..Booking::default()
        };
        let (first, same_id, known_id, failing, store) = tokio::join!(
            db.write(new_order(order("o1", "c1"))),
            db.write(new_order(order("o2", "c1"))),
            db.write(new_order(order("o3", "c0"))),
            db.write(Job::Booking(Box::new(again))),
            db.write(Job::PluginStore(vec![
                store_change("u1", "a", Some("1")),
                store_change("u2", "a", Some("2")),
                store_change("u1", "b", Some("3")),
                store_change("u1", "a", None),
            ])),
        );
        assert!(
            first.unwrap(),
            "the first order with a client id is written"
        );
        assert!(!same_id.unwrap(), "a second one in the same batch is not");
        assert!(
            !known_id.unwrap(),
            "nor one whose client id was written before"
        );
        assert!(failing.is_err(), "the job at fault gets the error");
        store.unwrap();
        assert_eq!(
            db.sync.flushes(),
            flushes + 1,
            "the batch (written again job by job after the failure) waited for one flush"
        );
        assert_eq!(count(&db, "SELECT COUNT(*) FROM orders").await, 2);
        assert_eq!(count(&db, "SELECT COUNT(*) FROM fills").await, 1);
        let read = |scope: &'static str, key: &'static str| {
            crate::store::plugin_store::get(&db.pool, "paper", scope, key)
        };
        assert_eq!(
            read("u1", "a").await.unwrap(),
            None,
            "the last change counts"
        );
        assert_eq!(read("u1", "b").await.unwrap().as_deref(), Some("3"));
        assert_eq!(read("u2", "a").await.unwrap().as_deref(), Some("2"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_batch_is_written_while_the_last_ones_flush_runs_and_each_answers_after_its_own()
     {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        // Each flush counts its start and waits until the test lets it finish.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = std::sync::Mutex::new(released);
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let starts = started.clone();
        let sync = Arc::new(GroupSync::with_flush(move || {
            starts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // A failed test drops the sender: the flush then ends (an error would abort).
            let _ = released.lock().unwrap().recv();
            Ok(())
        }));
        let writer = Writer::start(db.pool.clone(), sync.clone(), true);
        let orders_written = |n: i64| {
            let db = &db;
            async move {
                for _ in 0..500 {
                    if count(db, "SELECT COUNT(*) FROM orders").await == n {
                        return;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                panic!("{n} orders were not written");
            }
        };
        let place = |id: &'static str, client_id: &'static str| {
            let writer = writer.clone();
            tokio::spawn(async move { writer.write(new_order(order(id, client_id)), None).await })
        };

        let first = place("o1", "c1");
        orders_written(1).await;
        for _ in 0..500 {
            if started.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 1);
        let second = place("o2", "c2");
        orders_written(2).await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(
            !first.is_finished() && !second.is_finished(),
            "neither is answered before a flush covers it"
        );

        release.send(()).unwrap();
        assert!(first.await.unwrap().unwrap());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(
            !second.is_finished(),
            "the first flush started before the second commit and does not cover it"
        );
        release.send(()).unwrap();
        assert!(second.await.unwrap().unwrap());
        assert_eq!(sync.flushes(), 2);
    }

    #[tokio::test]
    async fn a_close_orders_attempt_is_counted_with_it_and_not_when_its_client_id_stands() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        let opened = Booking {
            user_id: "u1".into(),
            positions: vec![position(Decimal::ONE)],
            ..Booking::default()
        };
        db.write(Job::Booking(Box::new(opened))).await.unwrap();
        let attempt = |order_id: &str, attempts: u32| {
            let mut closing = position(Decimal::ONE);
            closing.closing = Some(Closing {
                reason: "signal".into(),
                attempts,
                next_attempt_at: 5_000,
                last_error: None,
            });
            Job::NewOrder(Box::new(NewOrder {
                order: order(order_id, "p1-close-1"),
                closing: Some(closing),
            }))
        };
        let attempts = || async {
            let open = positions::open_positions(&db.pool, "u1").await.unwrap();
            open[0].closing.as_ref().map(|c| c.attempts)
        };

        assert!(db.write(attempt("o1", 1)).await.unwrap());
        assert_eq!(attempts().await, Some(1), "written with its order");
        assert!(!db.write(attempt("o2", 2)).await.unwrap());
        assert_eq!(
            attempts().await,
            Some(1),
            "an order whose client id stands already counts nothing"
        );
    }

    #[tokio::test]
    async fn a_booking_opens_and_a_later_one_closes_a_position_adding_to_the_account() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        let account = Account::new(Decimal::ONE_THOUSAND, "USD");
        accounts::insert_account(&db.pool, "u1", &account, 1)
            .await
            .unwrap();
        db.write(new_order(order("o1", "c1"))).await.unwrap();
        let change = |cash: i64| AccountChange {
            user_id: "u1".into(),
            cash: Decimal::from(cash),
            realized_pnl: Decimal::ZERO,
            fees_paid: Decimal::ONE,
        };
        let opened = Booking {
            user_id: "u1".into(),
            positions: vec![position(Decimal::ONE)],
            order: Some(OrderChange {
                order_id: "o1".into(),
                status: "filled",
                broker_order_id: Some("v1".into()),
                filled_quantity: Decimal::ONE,
                error: None,
                next_check_at: None,
                checks: 1,
            }),
            account: Some(change(-11)),
            ..Booking::default()
        };
        db.write(Job::Booking(Box::new(opened))).await.unwrap();
        let open = positions::open_positions(&db.pool, "u1").await.unwrap();
        assert_eq!(open, vec![position(Decimal::ONE)]);
        let row = orders::by_client_id(&db.pool, "c1").await.unwrap().unwrap();
        assert_eq!(
            (row.status.as_str(), row.broker_order_id.as_deref()),
            ("filled", Some("v1"))
        );
        assert_eq!(row.filled_quantity, Decimal::ONE);

        let closed = Booking {
            user_id: "u1".into(),
            positions: vec![position(Decimal::ZERO)],
            account: Some(change(9)),
            ..Booking::default()
        };
        db.write(Job::Booking(Box::new(closed))).await.unwrap();
        assert!(
            positions::open_positions(&db.pool, "u1")
                .await
                .unwrap()
                .is_empty()
        );
        let stored = accounts::account(&db.pool, "u1").await.unwrap().unwrap();
        assert_eq!(stored.cash, Decimal::from(998), "changes add up");
        assert_eq!(stored.fees_paid, Decimal::TWO);
    }
}
