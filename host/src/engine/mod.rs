//! The trading engine: one bot per user, scanned by the scheduler, trading through plugins, with
//! exact accounting and orders followed until the venue and the books agree. See
//! docs/architecture.md (Trading engine) for the pipeline.
//!
//! Each user's state lives in a [`Cell`]: a lock around the loaded [`Trader`] and the time of the
//! bot's next scan. Scans, reconciliation, HTTP actions (start, stop, close a position) and the
//! kill switch all take the same lock, so a user's account is changed by one thing at a time.
//!
//! - `control`: start, stop, pause, resume, status, emergency stop, manual close;
//! - `scheduler`, `scan`: the scan loop and one scan; `alarms`: risk alarms;
//! - `orders`, `order_state`: placing orders and booking fills; `closing`: closes until closed;
//! - `reconcile`, `supervisor`: the books against the venue, continuously;
//! - `signals`: inbound webhook signals; `kill_switch`; `restart`;
//! - `accounting`, `metrics`, `reports`: the books and what is read from them.

pub mod accounting;
pub mod alarms;
pub mod closing;
pub mod control;
pub mod entry;
pub mod instruments;
pub mod kill_switch;
pub mod leases;
pub mod metrics;
pub mod order_state;
pub mod order_views;
pub mod orders;
pub mod reconcile;
pub mod reports;
pub mod restart;
pub mod scan;
mod scheduler;
pub mod signals;
pub mod supervisor;
pub mod totals;
mod trader;
pub mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use dashmap::DashMap;
use serde::Serialize;
use tokio::sync::{Mutex, MutexGuard, Notify};

use crate::App;
use crate::brokers;
use crate::error::ApiResult;
use crate::events::Channel;
use crate::notices;
use crate::plugins::bindings::broker::Credentials;
use crate::store::bots;
use crate::store::writer::Job;
use crate::store::{iso8601, now_ms};
pub use control::*;
pub use scheduler::run;
pub use trader::{DAY_MS, Stats, Trader};

const IDLE: i64 = i64::MAX;
/// Failed scans retried (with doubling delays) before the bot goes to `error`.
pub const MAX_RETRIES: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BotStatus {
    Stopped,
    Starting,
    Running,
    Paused,
    Error,
    EmergencyStopped,
}

impl BotStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            BotStatus::Stopped => "stopped",
            BotStatus::Starting => "starting",
            BotStatus::Running => "running",
            BotStatus::Paused => "paused",
            BotStatus::Error => "error",
            BotStatus::EmergencyStopped => "emergency_stopped",
        }
    }

    pub fn parse(text: &str) -> BotStatus {
        match text {
            "starting" => BotStatus::Starting,
            "running" => BotStatus::Running,
            "paused" => BotStatus::Paused,
            "error" => BotStatus::Error,
            "emergency_stopped" => BotStatus::EmergencyStopped,
            _ => BotStatus::Stopped,
        }
    }

    /// States the scheduler scans.
    pub fn is_scanned(self) -> bool {
        matches!(
            self,
            BotStatus::Starting | BotStatus::Running | BotStatus::Paused
        )
    }
}

pub struct Cell {
    pub user_id: String,
    trader: Mutex<Option<Trader>>,
    next_scan_at: AtomicI64,
    /// This instance's hold on the user's lease (several instances only).
    lease: Arc<leases::Lease>,
}

#[derive(Default)]
pub struct Engine {
    cells: DashMap<String, Arc<Cell>>,
    wake: Notify,
    /// Scans completed since the server started (for metrics and benchmarks).
    scans: AtomicU64,
    /// The venues' instrument rules.
    pub instruments: instruments::Instruments,
    /// The kill switch as last read.
    pub kill_switch_seen: kill_switch::Seen,
}

impl Engine {
    fn cell(&self, user_id: &str) -> Arc<Cell> {
        self.cells
            .entry(user_id.to_string())
            .or_insert_with(|| {
                Arc::new(Cell {
                    user_id: user_id.to_string(),
                    trader: Mutex::new(None),
                    next_scan_at: AtomicI64::new(IDLE),
                    lease: Arc::default(),
                })
            })
            .clone()
    }

    fn schedule(&self, cell: &Cell, at: i64) {
        cell.next_scan_at.store(at, Ordering::Release);
        self.wake.notify_one();
    }

    /// Wakes the user's bot now (a signal arrived).
    pub fn wake_now(&self, user_id: &str) {
        if let Some(cell) = self.cells.get(user_id)
            && cell.next_scan_at.load(Ordering::Acquire) != IDLE
        {
            self.schedule(&cell, now_ms());
        }
    }

    /// Unloads the state of users whose bot is not scanning and whom nobody is serving right now;
    /// it is loaded again from the database on next use.
    pub fn evict_idle(&self) {
        self.cells.retain(|_, cell| {
            if cell.next_scan_at.load(Ordering::Acquire) != IDLE || cell.lease.held() {
                return true;
            }
            let Ok(mut trader) = cell.trader.try_lock() else {
                return true;
            };
            if trader
                .as_ref()
                .is_some_and(|t| t.status().is_scanned() || !t.live.is_empty())
            {
                return true;
            }
            *trader = None;
            drop(trader);
            // The map's reference is the only one (the shard is locked, so nobody takes another
            // now): forget the cell too, so the map holds the users being served rather than
            // every user the server has seen. A cell someone holds stays: two cells for one user
            // would be two traders booking for them.
            Arc::strong_count(cell) > 1
        });
    }

    /// Whether this instance holds the user's lease now (several instances only).
    pub fn holds(&self, user_id: &str) -> bool {
        self.cells
            .get(user_id)
            .is_some_and(|cell| cell.lease.holds(now_ms()))
    }

    /// How many users' leases this instance holds.
    pub fn leases_held(&self) -> usize {
        self.cells.iter().filter(|cell| cell.lease.held()).count()
    }

    pub fn scans_completed(&self) -> u64 {
        self.scans.load(Ordering::Relaxed)
    }

    pub fn running_bots(&self) -> usize {
        self.cells
            .iter()
            .filter(|c| c.next_scan_at.load(Ordering::Acquire) != IDLE)
            .count()
    }
}

/// A user's trader, loaded on first use, behind the user's lock, to act on: with several
/// instances, this one takes the user's lease first ([`leases::hold`]).
pub async fn lock<'a>(app: &App, cell: &'a Cell) -> ApiResult<MutexGuard<'a, Option<Trader>>> {
    let taken_over = leases::hold(app, cell).await?;
    let guard = load(app, cell).await?;
    // A bot taken over for a request is scanned here from now on (its old holder stopped).
    if taken_over && guard.as_ref().is_some_and(|t| t.status().is_scanned()) {
        app.engine.schedule(cell, now_ms());
    }
    Ok(guard)
}

/// A user's trader for the scheduler: none when, with several instances, this one does not hold
/// the user's lease (it never claims one for a scan; the lease loop does).
async fn lock_scanned<'a>(
    app: &App,
    cell: &'a Cell,
) -> ApiResult<Option<MutexGuard<'a, Option<Trader>>>> {
    if app.cluster.clustered() && !cell.lease.held() {
        return Ok(None);
    }
    load(app, cell).await.map(Some)
}

/// The user's lock, with their trader loaded.
async fn load<'a>(app: &App, cell: &'a Cell) -> ApiResult<MutexGuard<'a, Option<Trader>>> {
    let mut guard = cell.trader.lock().await;
    if guard.is_none() {
        let mut trader = Trader::load(app, &cell.user_id).await?;
        trader.held = leases::held(app, cell);
        *guard = Some(trader);
    }
    Ok(guard)
}

/// A user's trader to read. With several instances, one whose lease is another instance's is
/// read from the database for this call (what its holder committed) and not kept.
pub async fn read<'a>(app: &App, cell: &'a Cell) -> ApiResult<Reading<'a>> {
    if app.cluster.clustered() && !cell.lease.holds(now_ms()) {
        return Ok(Reading::Fresh(Box::new(
            Trader::load(app, &cell.user_id).await?,
        )));
    }
    Ok(Reading::Held(lock(app, cell).await?))
}

/// A trader being read ([`read`]).
pub enum Reading<'a> {
    Held(MutexGuard<'a, Option<Trader>>),
    Fresh(Box<Trader>),
}

impl std::ops::Deref for Reading<'_> {
    type Target = Trader;

    fn deref(&self) -> &Trader {
        match self {
            Reading::Held(guard) => guard.as_ref().expect("loaded"),
            Reading::Fresh(trader) => trader,
        }
    }
}

impl std::ops::DerefMut for Reading<'_> {
    fn deref_mut(&mut self) -> &mut Trader {
        match self {
            Reading::Held(guard) => guard.as_mut().expect("loaded"),
            Reading::Fresh(trader) => trader,
        }
    }
}

/// Opens the credentials of the user's connection to `broker`.
pub async fn credentials(app: &App, user_id: &str, broker: &str) -> Result<Credentials, String> {
    let row = crate::store::brokers::by_name(&app.db.pool, user_id, broker)
        .await
        .map_err(|err| format!("loading the broker connection: {err}"))?
        .ok_or_else(|| format!("broker `{broker}` is no longer connected"))?;
    brokers::open_credentials(app, &row).map_err(|err| err.message)
}

#[derive(Serialize)]
struct StatusEvent<'a> {
    status: &'a str,
    message: &'a str,
    last_error: Option<&'a str>,
    timestamp: String,
}

/// Announces a bot's status to its owner's sockets, and records the notice for their webhooks
/// (and mail, when the bot stopped on an error).
pub(crate) fn publish_status(app: &App, trader: &Trader, message: &str) {
    let now = now_ms();
    notices::record_later(
        app,
        &trader.user_id,
        notices::Kind::BotStatus,
        &notices::BotStatusNotice {
            status: &trader.bot.status,
            message,
            last_error: trader.bot.last_error.as_deref(),
            timestamp: iso8601(now),
        },
        now,
    );
    app.events.publish(
        &trader.user_id,
        Channel::BotStatus,
        "bot_status",
        &StatusEvent {
            status: &trader.bot.status,
            message,
            last_error: trader.bot.last_error.as_deref(),
            timestamp: iso8601(now_ms()),
        },
    );
}

/// Saves the bot's row through the books' writer: on SQLite a write beside it would hold the
/// write lock while bookings wait, and a start or a restart changes thousands of bots at once.
async fn persist(app: &App, trader: &mut Trader) -> ApiResult<()> {
    let now = now_ms();
    app.db
        .write_under(trader.fence(), Job::Bot(Box::new(trader.bot.clone())))
        .await?;
    trader.last_persisted_at = now;
    Ok(())
}

/// Resumes the bots that were running (or starting, or paused) when the server stopped.
pub async fn resume_all(app: &App) -> anyhow::Result<usize> {
    // Several instances share the bots through their leases (`leases::run`).
    if app.cluster.clustered() {
        return Ok(0);
    }
    let bots = bots::resumable_bots(&app.db.pool).await?;
    let count = bots.len();
    for bot in bots {
        let cell = app.engine.cell(&bot.user_id);
        app.engine.schedule(&cell, now_ms());
    }
    Ok(count)
}

/// Whether the user's bot is active on `broker` (such a connection must not be removed).
pub async fn bot_uses_broker(app: &App, user_id: &str, broker: &str) -> ApiResult<bool> {
    let bot = bots::bot(&app.db.pool, user_id).await?;
    Ok(bot.is_some_and(|bot| bot.broker == broker && BotStatus::parse(&bot.status).is_scanned()))
}

/// The account's equity at the last marks.
pub async fn account_equity(app: &App, user_id: &str) -> ApiResult<f64> {
    with_trader(app, user_id, |trader| accounting::float(trader.equity())).await
}

/// Reads the user's trader (loaded from the database if needed) under the user's lock.
pub async fn with_trader<T>(
    app: &App,
    user_id: &str,
    read: impl FnOnce(&Trader) -> T,
) -> ApiResult<T> {
    let cell = app.engine.cell(user_id);
    let guard = self::read(app, &cell).await?;
    Ok(read(&guard))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_cells_nobody_holds_are_forgotten() {
        let engine = Engine::default();
        drop(engine.cell("gone"));
        let held = engine.cell("held");
        let scanning = engine.cell("scanning");
        engine.schedule(&scanning, now_ms());
        drop(scanning);
        engine.evict_idle();
        let mut kept: Vec<String> = engine.cells.iter().map(|c| c.key().clone()).collect();
        kept.sort();
        assert_eq!(kept, ["held", "scanning"]);
        // The holder's cell is still the map's: a second caller gets the same one.
        assert!(Arc::ptr_eq(&held, &engine.cell("held")));
        drop(held);
        engine.evict_idle();
        assert_eq!(engine.cells.len(), 1);
    }
}
