//! One owner for each user's trading state when several instances share the database.
//!
//! The instance holding a user's lease (`bot_leases`) scans their bot, follows up their orders and
//! acts on their requests; the others read their books from the database. Each instance's
//! [`run`] loop renews its leases every quarter of the lease's life, gives up the ones it no
//! longer needs or holds beyond its share, and claims free ones up to its share (the users that
//! need an owner divided by the instances alive). A lease that is not renewed runs out and is
//! taken over by another instance with a greater fencing token; the books' writer refuses
//! everything written under an older one (`store::writer`), and the instance stops sending orders
//! on a lease it could not renew in time ([`Lease::holds`]), before anyone else may claim it.
//!
//! A request that changes a user's trading (start, stop, close a position, a signal) on an
//! instance that does not hold the lease asks the holder to hand it over through the cluster bus
//! and claims it once given up ([`hold`]); the bot then runs where its user acts.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::Mutex;

use super::{Cell, IDLE};
use crate::App;
use crate::cluster::Message;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::writer::Fence;
use crate::store::{bot_leases, now_ms};

/// How long a request waits for another instance to hand a user over.
const HAND_OVER_WAIT: Duration = Duration::from_secs(5);
/// How often a request looks whether the lease was handed over.
const HAND_OVER_POLL: Duration = Duration::from_millis(20);
/// How often a request asks again (the holder may have been about to claim it back).
const HAND_OVER_ASK_EVERY: Duration = Duration::from_millis(500);
/// How long an instance leaves a user it handed over to the instance that asked.
const HANDED_OVER_MS: i64 = 5_000;

/// This instance's hold on one user's lease, kept in the user's cell.
#[derive(Default)]
pub struct Lease {
    /// The fencing token held; 0 when the lease is not this instance's.
    token: AtomicI64,
    /// Until when this instance acts on the lease: a quarter of its life before it runs out in
    /// the database, so the instance stops before anyone may take it over.
    valid_until: AtomicI64,
    /// When this instance last handed the user over on request: its lease loop leaves them be
    /// for a while, for the instance that asked.
    handed_over_at: AtomicI64,
    /// Claims and releases of one user, one at a time.
    changing: Mutex<()>,
}

impl Lease {
    /// Whether this instance holds the lease at `now`.
    pub fn holds(&self, now: i64) -> bool {
        self.token.load(Ordering::Acquire) != 0 && self.valid_until.load(Ordering::Acquire) > now
    }

    /// Whether this instance holds the lease (renewed in time or not).
    pub fn held(&self) -> bool {
        self.token.load(Ordering::Acquire) != 0
    }

    fn token(&self) -> i64 {
        self.token.load(Ordering::Acquire)
    }

    fn set(&self, token: i64, valid_until: i64) {
        self.valid_until.store(valid_until, Ordering::Release);
        self.token.store(token, Ordering::Release);
    }

    fn clear(&self) {
        self.token.store(0, Ordering::Release);
        self.valid_until.store(0, Ordering::Release);
    }
}

/// A loaded trader's tie to its lease: the token its writes are fenced with.
#[derive(Clone)]
pub struct Held {
    pub fence: Fence,
    lease: Arc<Lease>,
}

impl Held {
    /// Whether the lease the trader was loaded under is still this instance's to act on.
    pub fn holds(&self) -> bool {
        self.lease.token() == self.fence.token && self.lease.holds(now_ms())
    }
}

/// The hold a trader loaded now works under (none: this instance alone).
pub fn held(app: &App, cell: &Cell) -> Option<Held> {
    if !app.cluster.clustered() {
        return None;
    }
    Some(Held {
        fence: Fence {
            user_id: cell.user_id.clone(),
            token: cell.lease.token(),
        },
        lease: cell.lease.clone(),
    })
}

fn ttl_ms(app: &App) -> i64 {
    app.config.bot_lease_ttl.as_millis() as i64
}

/// How long after a renewal starting at `at` this instance acts on its leases.
fn valid_until(app: &App, at: i64) -> i64 {
    at + ttl_ms(app) * 3 / 4
}

/// Makes sure this instance holds the user's lease before it changes their trading, asking the
/// holder to hand it over when another instance does; whether it took the lease now. Nothing to
/// do for an instance alone.
pub async fn hold(app: &App, cell: &Cell) -> ApiResult<bool> {
    if !app.cluster.clustered() || cell.lease.holds(now_ms()) {
        return Ok(false);
    }
    let deadline = tokio::time::Instant::now() + HAND_OVER_WAIT;
    let mut asked: Option<tokio::time::Instant> = None;
    loop {
        let changing = cell.lease.changing.lock().await;
        let now = now_ms();
        if cell.lease.holds(now) {
            return Ok(false);
        }
        // Held, but its renewal is late: renewed here if it is still this instance's.
        let token = cell.lease.token();
        if token != 0 {
            let me = app.cluster.instance();
            if bot_leases::renew_one(&app.db, &cell.user_id, me, token, now + ttl_ms(app)).await? {
                cell.lease
                    .valid_until
                    .store(valid_until(app, now), Ordering::Release);
                return Ok(false);
            }
        }
        let claimed = bot_leases::claim(
            &app.db,
            &cell.user_id,
            app.cluster.instance(),
            now,
            now + ttl_ms(app),
        )
        .await?;
        if let Some(token) = claimed {
            adopt(app, cell, token, now).await;
            drop(changing);
            tracing::debug!(user_id = %cell.user_id, token, "took the user's lease for a request");
            return Ok(true);
        }
        drop(changing);
        if asked.is_none_or(|at| at.elapsed() >= HAND_OVER_ASK_EVERY) {
            app.cluster.send(Message::HandOver {
                user_id: cell.user_id.clone(),
            });
            asked = Some(tokio::time::Instant::now());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::new(
                ErrorCode::ServiceUnavailable,
                "The bot is busy on another server; try again in a moment.",
            )
            .retry_after(1));
        }
        tokio::time::sleep(HAND_OVER_POLL).await;
    }
}

/// Takes a lease just claimed: whatever was loaded before is dropped (it is read again under the
/// new token), and so are the plugin stores remembered for the user (another instance wrote them).
async fn adopt(app: &App, cell: &Cell, token: i64, at: i64) {
    forget_loaded(app, cell, &mut *cell.trader.lock().await);
    cell.lease.set(token, valid_until(app, at));
    app.db.leases.hold(&cell.user_id, token);
}

/// This instance no longer owns the user (the caller holds their lock and lease changes): the
/// trader is unloaded, the bot no longer scanned here, and whatever a call under way still
/// writes for them is refused.
fn unload(app: &App, cell: &Cell, trader: &mut Option<super::Trader>) {
    forget_loaded(app, cell, trader);
    cell.next_scan_at.store(IDLE, Ordering::Release);
    cell.lease.clear();
    app.db.leases.lost(&cell.user_id, now_ms());
}

/// Drops what was loaded for the user while another instance may have changed it: the trader
/// and the plugin stores kept for them.
fn forget_loaded(app: &App, cell: &Cell, trader: &mut Option<super::Trader>) {
    *trader = None;
    app.plugins.runtime().forget_stores(&cell.user_id);
}

/// Another instance asks for the user: the lease is given up once whatever runs for them here
/// has finished.
pub async fn hand_over(app: &App, user_id: &str) {
    match app.engine.cells.get(user_id).map(|cell| cell.clone()) {
        Some(cell) => {
            cell.lease.handed_over_at.store(now_ms(), Ordering::Release);
            let_go(app, &cell).await;
        }
        None => {
            if let Err(err) =
                bot_leases::release(&app.db, user_id, app.cluster.instance(), None).await
            {
                tracing::warn!(%user_id, error = %err, "cannot hand a user over");
            }
        }
    }
}

/// Gives up a lease this instance holds: the trader is unloaded, the bot no longer scanned here,
/// and the row released for others to claim at once.
async fn let_go(app: &App, cell: &Cell) {
    let _changing = cell.lease.changing.lock().await;
    let mut trader = cell.trader.lock().await;
    unload(app, cell, &mut trader);
    if let Err(err) =
        bot_leases::release(&app.db, &cell.user_id, app.cluster.instance(), None).await
    {
        tracing::warn!(user_id = %cell.user_id, error = %err, "cannot give up a lease");
    }
}

/// Renews, gives up and claims leases for as long as the instance runs (several instances only).
/// Renewal has a loop of its own, so that giving a lease up (which waits for the user's scan)
/// never holds the others' renewal back.
pub async fn run(app: App) {
    if !app.cluster.clustered() {
        return;
    }
    let every = (app.config.bot_lease_ttl / 4).max(Duration::from_millis(50));
    let renewing = app.clone();
    tokio::spawn(async move {
        loop {
            if let Err(err) = renew(&renewing).await {
                tracing::warn!(error = %err, "renewing the bots' leases failed; tried again shortly");
            }
            tokio::time::sleep(every).await;
        }
    });
    loop {
        tokio::time::sleep(every).await;
        if let Err(err) = balance(&app).await {
            tracing::warn!(error = %err, "sharing the bots with the other instances failed; tried again shortly");
        }
    }
}

/// Marks this instance alive, renews its leases, and lets go of the ones another took over.
async fn renew(app: &App) -> anyhow::Result<()> {
    let me = app.cluster.instance();
    let started = now_ms();
    bot_leases::heartbeat(&app.db, me, started).await?;
    let renewed: std::collections::HashMap<String, i64> =
        bot_leases::renew(&app.db, me, started + ttl_ms(app))
            .await?
            .into_iter()
            .collect();
    let mut lost: Vec<(Arc<Cell>, i64)> = Vec::new();
    for cell in app.engine.cells.iter() {
        let token = cell.lease.token();
        if token == 0 {
            continue;
        }
        match renewed.get(&cell.user_id) {
            Some(&renewed) if renewed == token => cell
                .lease
                .valid_until
                .store(valid_until(app, started), Ordering::Release),
            _ => lost.push((cell.clone(), token)),
        }
    }
    for (cell, token) in lost {
        let app = app.clone();
        tokio::spawn(async move { check_lost(&app, &cell, token).await });
    }
    // Rows in this instance's name that no cell holds (the instance restarted under the same
    // name, or gave a user up while the renewal ran) are released, not renewed forever.
    for (user_id, token) in renewed {
        let cell = app.engine.cells.get(&user_id).map(|cell| cell.clone());
        if cell
            .as_ref()
            .is_some_and(|cell| cell.lease.token() == token)
        {
            continue;
        }
        let app = app.clone();
        tokio::spawn(async move {
            let _changing = match &cell {
                Some(cell) => Some(cell.lease.changing.lock().await),
                None => None,
            };
            if cell
                .as_ref()
                .is_some_and(|cell| cell.lease.token() == token)
            {
                return;
            }
            if let Err(err) =
                bot_leases::release(&app.db, &user_id, app.cluster.instance(), Some(token)).await
            {
                tracing::warn!(%user_id, error = %err, "cannot give up a lease nobody uses");
            }
        });
    }
    Ok(())
}

/// A lease the renewal did not find in this instance's name under the cell's token: let go when
/// another instance has it (a claim made while the renewal ran is this instance's and stays).
async fn check_lost(app: &App, cell: &Cell, token: i64) {
    let _changing = cell.lease.changing.lock().await;
    if cell.lease.token() != token {
        return;
    }
    let now = now_ms();
    let me = app.cluster.instance();
    match bot_leases::renew_one(&app.db, &cell.user_id, me, token, now + ttl_ms(app)).await {
        Ok(true) => {
            cell.lease
                .valid_until
                .store(valid_until(app, now), Ordering::Release);
        }
        Ok(false) => {
            tracing::warn!(user_id = %cell.user_id, "another instance took the user over");
            let mut trader = cell.trader.lock().await;
            unload(app, cell, &mut trader);
        }
        Err(err) => tracing::warn!(user_id = %cell.user_id, error = %err, "cannot check a lease"),
    }
}

/// What a round of sharing did, for the logs.
#[derive(Debug, Default, Clone, Copy)]
struct Round {
    held: usize,
    released: usize,
    claimed: usize,
}

/// Gives up the leases this instance no longer needs or holds beyond its share, and claims free
/// ones up to its share: the users that need an owner divided by the instances alive.
async fn balance(app: &App) -> anyhow::Result<()> {
    let me = app.cluster.instance();
    let started = now_ms();
    let ttl = ttl_ms(app);
    // Alive: seen within two lives of a lease (a late heartbeat is not a death).
    let instances = bot_leases::live_instances(&app.db, started - 2 * ttl)
        .await?
        .len()
        .max(1);
    let (wanted, free) = bot_leases::unowned(&app.db, started).await?;
    let share = (wanted.max(0) as usize).div_ceil(instances).max(1);
    let mut done = Round::default();
    let held: Vec<Arc<Cell>> = app
        .engine
        .cells
        .iter()
        .filter(|cell| cell.lease.held())
        .map(|cell| cell.clone())
        .collect();
    let mut kept = Vec::with_capacity(held.len());
    for cell in held {
        if needs_owner(&cell) {
            kept.push(cell);
        } else {
            let_go(app, &cell).await;
            done.released += 1;
        }
    }
    // Beyond the share by more than one: the surplus goes (others claim it on their next round).
    if kept.len() > share + 1 {
        for cell in kept.split_off(share) {
            let_go(app, &cell).await;
            done.released += 1;
        }
    }
    done.held = kept.len();

    // Free users up to the share, starting at a place of this instance's own so that instances
    // claiming at once mostly ask for different users. Orphans (their holder stopped renewing)
    // are taken whatever the share: they wait for nobody; the shares even out afterwards.
    let room = share.saturating_sub(done.held);
    if !free.is_empty() {
        let start = start_of(me, free.len());
        for unowned in free.iter().cycle().skip(start).take(free.len()) {
            if done.claimed >= room && !unowned.orphaned {
                continue;
            }
            let user_id = &unowned.user_id;
            let cell = app.engine.cell(user_id);
            let changing = cell.lease.changing.lock().await;
            let handed_over = cell.lease.handed_over_at.load(Ordering::Acquire);
            if cell.lease.held() || now_ms() - handed_over < HANDED_OVER_MS {
                continue;
            }
            let now = now_ms();
            if let Some(token) = bot_leases::claim(&app.db, user_id, me, now, now + ttl).await? {
                adopt(app, &cell, token, now).await;
                drop(changing);
                app.engine.schedule(&cell, now);
                done.claimed += 1;
            }
        }
    }
    if done.released + done.claimed > 0 {
        tracing::info!(
            held = done.held + done.claimed,
            released = done.released,
            claimed = done.claimed,
            instances,
            "bot leases changed"
        );
    }
    Ok(())
}

/// Whether a user this instance holds still needs an owner: their bot is scanned, or orders or
/// closes are to be followed up. A trader not loaded yet (just claimed) does.
fn needs_owner(cell: &Cell) -> bool {
    let Ok(trader) = cell.trader.try_lock() else {
        return true;
    };
    trader.as_ref().is_none_or(|trader| {
        trader.status().is_scanned()
            || !trader.live.is_empty()
            || trader.positions.iter().any(|p| p.closing.is_some())
    })
}

/// Where in a list of `len` this instance starts claiming.
fn start_of(instance: &str, len: usize) -> usize {
    let hash = instance
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
        });
    (hash % len as u64) as usize
}

/// Gives up every lease as the instance stops, so the others take its bots at once.
pub async fn leave(app: &App) {
    if !app.cluster.clustered() {
        return;
    }
    let me = app.cluster.instance();
    // Nothing more goes out on them from here.
    let now = now_ms();
    for cell in app.engine.cells.iter() {
        if cell.lease.held() {
            cell.lease.clear();
            app.db.leases.lost(&cell.user_id, now);
        }
    }
    match bot_leases::release_all(&app.db, me).await {
        Ok(count) if count > 0 => tracing::info!(count, "gave up the bots' leases"),
        Ok(_) => {}
        Err(err) => tracing::warn!(error = %err, "cannot give up the bots' leases"),
    }
    if let Err(err) = bot_leases::leave(&app.db, me).await {
        tracing::warn!(error = %err, "cannot leave the instances");
    }
}
