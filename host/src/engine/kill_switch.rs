//! The kill switch: a platform flag in the database (so every instance sharing it sees it) that
//! blocks starts and new entries, stops every bot and, when asked, closes every position. It
//! carries on past any one user's failure and reports what failed.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::{BotStatus, IDLE, closing, lock, persist, publish_status};
use crate::App;
use crate::auth::sessions::Principal;
use crate::cluster::Message;
use crate::error::ApiResult;
use crate::events::Channel;
use crate::notices::{self, KillSwitchNotice};
use crate::store::{bot_leases, bots, flags, positions};
use crate::store::{iso8601, now_ms};

pub const FLAG: &str = "kill_switch";

fn yes() -> bool {
    true
}

/// How long a reading of the flag is trusted before an order reads it again.
const FRESH_MS: i64 = 250;

/// Whether the kill switch is on, read from the database (another instance may have set it).
pub async fn active(app: &App) -> ApiResult<bool> {
    let on = flags::flag(&app.db.pool, FLAG).await?.is_some();
    app.engine.kill_switch_seen.store(now_ms(), on);
    Ok(on)
}

/// Whether the kill switch stops an entry order now: read from the database at most every
/// 250 ms (and at once on this instance when it is switched), so a stream of orders does not
/// read it each time.
pub async fn blocks_entries(app: &App) -> ApiResult<bool> {
    match app.engine.kill_switch_seen.fresh(now_ms(), FRESH_MS) {
        Some(on) => Ok(on),
        None => active(app).await,
    }
}

/// The last reading of the kill switch flag on this instance.
#[derive(Debug, Default)]
pub struct Seen {
    at: std::sync::atomic::AtomicI64,
    on: std::sync::atomic::AtomicBool,
}

impl Seen {
    pub fn store(&self, at: i64, on: bool) {
        self.on.store(on, Ordering::Release);
        self.at.store(at, Ordering::Release);
    }

    fn fresh(&self, now: i64, within: i64) -> Option<bool> {
        let at = self.at.load(Ordering::Acquire);
        (at != 0 && now - at < within).then(|| self.on.load(Ordering::Acquire))
    }
}

#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillSwitchRequest {
    pub reason: Option<String>,
    #[serde(default)]
    pub close_all_positions: bool,
    #[serde(default = "yes")]
    pub notify_users: bool,
}

#[derive(utoipa::ToSchema, Debug, Serialize, Deserialize)]
pub struct KillSwitchState {
    pub active: bool,
    pub reason: Option<String>,
    pub activated_by: Option<String>,
    pub activated_at: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct KillSwitchActivated {
    pub message: String,
    pub affected_users: usize,
    /// Positions left open (with `close_all_positions`, those whose close is working or retried).
    pub active_positions: usize,
    pub positions_closed: usize,
    /// What could not be done, per user; everything else was.
    pub failures: Vec<UserFailure>,
    pub timestamp: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserFailure {
    pub user_id: String,
    pub error: String,
}

/// Blocks every start, stops every bot now (closing positions when asked) and tells connected
/// users. Activating it again re-applies it (bots started in between do not exist: starts are
/// refused while it is active).
pub async fn activate(
    app: &App,
    admin: &Principal,
    meta: &crate::auth::ClientMeta,
    request: KillSwitchRequest,
) -> ApiResult<KillSwitchActivated> {
    let now = now_ms();
    let reason = request
        .reason
        .unwrap_or_else(|| "kill switch".into())
        .chars()
        .take(500)
        .collect::<String>();
    let state = KillSwitchState {
        active: true,
        reason: Some(reason.clone()),
        activated_by: Some(admin.user_id.clone()),
        activated_at: Some(iso8601(now)),
    };
    let mut tx = app.db.begin().await?;
    flags::set_flag(
        &mut *tx,
        FLAG,
        &serde_json::to_string(&state).expect("state serialises"),
        &admin.user_id,
        now,
    )
    .await?;
    crate::store::audit::record(
        &mut *tx,
        "admin.kill_switch_activated",
        &crate::store::audit::Actor {
            user_id: Some(&admin.user_id),
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
        serde_json::json!({"reason": reason, "close_all_positions": request.close_all_positions}),
    )
    .await?;
    tx.commit().await?;
    app.engine.kill_switch_seen.store(now_ms(), true);

    // Every bot the database knows as active, plus any loaded in memory. Read before the other
    // instances hear of the switch: those they stop from then on are still counted here.
    let mut user_ids: Vec<String> = bots::resumable_user_ids(&app.db.pool).await?;
    app.cluster.send(Message::KillSwitch { active: true });
    // Each user once, in the order found (a set beside the list: thousands of users).
    let mut listed: HashSet<String> = user_ids.iter().cloned().collect();
    for cell in app.engine.cells.iter() {
        if cell.next_scan_at.load(Ordering::Acquire) != IDLE && listed.insert(cell.user_id.clone())
        {
            user_ids.push(cell.user_id.clone());
        }
    }
    // Closing everything reaches positions whose bot is not running too.
    if request.close_all_positions {
        for user_id in positions::users_with_open_positions(&app.db.pool).await? {
            if listed.insert(user_id.clone()) {
                user_ids.push(user_id);
            }
        }
    }
    let mut tally = Tally::default();
    // Bots leased to another live instance are stopped and saved there on the bus message; the
    // switch waits to see them saved rather than take each over. Closing positions is done here,
    // where its failures can be reported.
    let elsewhere = if request.close_all_positions {
        HashSet::new()
    } else {
        held_elsewhere(app, &user_ids).await?
    };
    let stopped_elsewhere = stopped_by_holders(app, &elsewhere).await?;
    if !stopped_elsewhere.is_empty() {
        tally.stopped += stopped_elsewhere.len();
        tally.active_positions += positions::open_counts_by_user(&app.db.pool)
            .await?
            .into_iter()
            .filter(|(user_id, _)| stopped_elsewhere.contains(user_id))
            .map(|(_, open)| open as usize)
            .sum::<usize>();
    }
    for user_id in user_ids.iter().filter(|u| !stopped_elsewhere.contains(*u)) {
        stop_here(
            app,
            user_id,
            &reason,
            request.close_all_positions,
            &mut tally,
        )
        .await;
    }
    let Tally {
        stopped,
        closed,
        active_positions,
        mut failures,
    } = tally;
    if request.notify_users {
        // Mail (to every user whose settings allow it) and webhooks: recorded before the
        // answer, so the notice survives a crash right after it.
        let notice = KillSwitchNotice {
            reason: &reason,
            positions_closed: request.close_all_positions,
            timestamp: iso8601(now),
        };
        match notices::record(&app.db.pool, None, notices::Kind::KillSwitch, &notice, now).await {
            Ok(()) => app.notifier.wake(),
            Err(err) => {
                tracing::error!(error = %err, "recording the kill switch notice failed");
                failures.push(UserFailure {
                    user_id: String::new(),
                    error: format!("notifying users: {err}"),
                });
            }
        }
    }
    // Every connected page shows the switch's state, whether or not users are notified by mail.
    announce(
        app,
        "activated",
        format!("Trading is halted by the operator: {reason}"),
        now,
    );
    Ok(KillSwitchActivated {
        message: if failures.is_empty() {
            format!("Kill switch active: {stopped} bot(s) stopped")
        } else {
            format!(
                "Kill switch active: {stopped} bot(s) stopped; {} failure(s), retried where they concern closes",
                failures.len()
            )
        },
        affected_users: stopped,
        active_positions,
        positions_closed: closed,
        failures,
        timestamp: iso8601(now),
    })
}

/// What the kill switch did, over every user.
#[derive(Default)]
struct Tally {
    stopped: usize,
    closed: usize,
    active_positions: usize,
    failures: Vec<UserFailure>,
}

/// How long the switch waits for other instances to save the bots they hold stopped before it
/// takes over those still running.
const HOLDERS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Which of `user_ids` another live instance holds (none for an instance alone).
async fn held_elsewhere(app: &App, user_ids: &[String]) -> ApiResult<HashSet<String>> {
    if !app.cluster.clustered() {
        return Ok(HashSet::new());
    }
    let wanted: HashSet<&String> = user_ids.iter().collect();
    let held = bot_leases::held_by_others(&app.db, app.cluster.instance(), now_ms()).await?;
    Ok(held
        .into_iter()
        .filter(|user_id| wanted.contains(user_id))
        .collect())
}

/// Waits (up to [`HOLDERS_WAIT`]) for the bots of `users` to be saved stopped by the instances
/// holding them; answers those that were.
async fn stopped_by_holders(app: &App, users: &HashSet<String>) -> ApiResult<HashSet<String>> {
    if users.is_empty() {
        return Ok(HashSet::new());
    }
    let deadline = tokio::time::Instant::now() + HOLDERS_WAIT;
    loop {
        let running: HashSet<String> = bots::resumable_user_ids(&app.db.pool)
            .await?
            .into_iter()
            .filter(|user_id| users.contains(user_id))
            .collect();
        if running.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(users.difference(&running).cloned().collect());
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Stops the user's bot on this instance (taking the user over from another first if need be),
/// closing their positions when asked.
async fn stop_here(app: &App, user_id: &str, reason: &str, close_all: bool, tally: &mut Tally) {
    let cell = app.engine.cell(user_id);
    app.engine.schedule(&cell, IDLE);
    let mut guard = match lock(app, &cell).await {
        Ok(guard) => guard,
        Err(err) => {
            tracing::error!(%user_id, error = %err, "the kill switch could not load a bot");
            tally.failures.push(UserFailure {
                user_id: user_id.to_string(),
                error: err.message,
            });
            return;
        }
    };
    let trader = guard.as_mut().expect("loaded");
    cell.next_scan_at.store(IDLE, Ordering::Release);
    if halt(trader, format!("Stopped by the kill switch: {reason}")) {
        tally.stopped += 1;
        if let Err(err) = persist(app, trader).await {
            tracing::error!(%user_id, error = %err, "the kill switch could not save a bot");
            tally.failures.push(UserFailure {
                user_id: user_id.to_string(),
                error: err.message,
            });
        }
        publish_status(app, trader, "Stopped by the kill switch");
    }
    if close_all {
        let outcome = closing::close_all(app, trader, "kill_switch").await;
        tally.closed += outcome.closed;
        for (position_id, error) in outcome.failures {
            tracing::error!(%user_id, %position_id, %error, "the kill switch could not close a position; it is retried");
            tally.failures.push(UserFailure {
                user_id: user_id.to_string(),
                error: format!("position {position_id}: {error}"),
            });
        }
    }
    tally.active_positions += trader.positions.len();
}

/// The kill switch was switched on another instance: this one sees it at once, and when it is
/// on stops the bots it scans (the switching instance saved them stopped and told their users).
pub async fn switched_elsewhere(app: &App, active: bool) {
    app.engine.kill_switch_seen.store(now_ms(), active);
    if !active {
        return;
    }
    let scanned: Vec<_> = app
        .engine
        .cells
        .iter()
        .filter(|cell| cell.next_scan_at.load(Ordering::Acquire) != IDLE)
        .map(|cell| cell.value().clone())
        .collect();
    for cell in scanned {
        app.engine.schedule(&cell, IDLE);
        let mut guard = match lock(app, &cell).await {
            Ok(guard) => guard,
            Err(err) => {
                tracing::error!(user_id = %cell.user_id, error = ?err.log, "the kill switch could not reach a bot");
                continue;
            }
        };
        cell.next_scan_at.store(IDLE, Ordering::Release);
        let trader = guard.as_mut().expect("loaded");
        // The bot's lease is this instance's: it saves the bot stopped (the switching instance
        // finds it so and leaves it be).
        if halt(trader, "Stopped by the kill switch".into()) && trader.held.is_some() {
            if let Err(err) = persist(app, trader).await {
                tracing::error!(user_id = %cell.user_id, error = ?err.log, "the kill switch could not save a bot");
            }
            publish_status(app, trader, "Stopped by the kill switch");
        }
    }
}

/// Marks a scanned bot stopped by the kill switch (in memory); whether it was scanned.
fn halt(trader: &mut super::Trader, why: String) -> bool {
    if !trader.status().is_scanned() {
        return false;
    }
    trader.bot.status = BotStatus::Stopped.as_str().into();
    trader.bot.last_error = Some(why);
    true
}

pub async fn state(app: &App) -> ApiResult<KillSwitchState> {
    Ok(match flags::flag(&app.db.pool, FLAG).await? {
        Some(value) => serde_json::from_str(&value).unwrap_or(KillSwitchState {
            active: true,
            reason: None,
            activated_by: None,
            activated_at: None,
        }),
        None => KillSwitchState {
            active: false,
            reason: None,
            activated_by: None,
            activated_at: None,
        },
    })
}

/// `{type: "kill_switch", data: {status, message, timestamp}}` to every connected user, on the
/// `bot_status` channel: `activated` or `lifted`.
fn announce(app: &App, status: &str, message: String, now: i64) {
    #[derive(Serialize)]
    struct Notice<'a> {
        status: &'a str,
        message: String,
        timestamp: String,
    }
    app.events.publish_to_all(
        Channel::BotStatus,
        "kill_switch",
        &Notice {
            status,
            message,
            timestamp: iso8601(now),
        },
    );
}

pub async fn deactivate(
    app: &App,
    admin: &Principal,
    meta: &crate::auth::ClientMeta,
) -> ApiResult<KillSwitchState> {
    let mut tx = app.db.begin().await?;
    let was_active = flags::clear_flag(&mut *tx, FLAG).await?;
    crate::store::audit::record(
        &mut *tx,
        "admin.kill_switch_deactivated",
        &crate::store::audit::Actor {
            user_id: Some(&admin.user_id),
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
        serde_json::json!({"was_active": was_active}),
    )
    .await?;
    tx.commit().await?;
    let now = now_ms();
    app.engine.kill_switch_seen.store(now, false);
    app.cluster.send(Message::KillSwitch { active: false });
    if was_active {
        announce(app, "lifted", "Trading is allowed again".into(), now);
    }
    Ok(KillSwitchState {
        active: false,
        reason: None,
        activated_by: None,
        activated_at: None,
    })
}
