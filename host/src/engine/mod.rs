//! The trading engine: one bot per user, scanned by the scheduler, trading through plugins, with
//! exact accounting. See docs/architecture.md (Trading engine) for the pipeline.
//!
//! Each user's state lives in a [`Cell`]: a lock around the loaded [`Trader`] and the time of the
//! bot's next scan. Scans, HTTP actions (stop, close a position) and the kill switch all take the
//! same lock, so a user's account is changed by one thing at a time.

pub mod accounting;
pub mod metrics;
mod orders;
pub mod reports;
pub mod scan;
mod scheduler;
mod trader;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use tokio::sync::{Mutex, MutexGuard, Notify};

use crate::App;
use crate::auth::sessions::Principal;
use crate::brokers;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::Channel;
use crate::plugins::PluginKind;
use crate::plugins::bindings::broker::Credentials;
use crate::store::trading;
use crate::store::{iso8601, now_ms, users};
pub use scheduler::run;
pub use trader::Trader;

const IDLE: i64 = i64::MAX;
/// Failed scans retried (with doubling delays) before the bot goes to `error`.
pub const MAX_RETRIES: u32 = 3;
pub const KILL_SWITCH_FLAG: &str = "kill_switch";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
}

#[derive(Default)]
pub struct Engine {
    cells: DashMap<String, Arc<Cell>>,
    wake: Notify,
    /// Scans completed since the server started (for metrics and benchmarks).
    scans: AtomicU64,
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
                })
            })
            .clone()
    }

    fn schedule(&self, cell: &Cell, at: i64) {
        cell.next_scan_at.store(at, Ordering::Release);
        self.wake.notify_one();
    }

    /// Unloads the state of users whose bot is not scanning and whom nobody is serving right now;
    /// it is loaded again from the database on next use.
    pub fn evict_idle(&self) {
        for cell in self.cells.iter() {
            if cell.next_scan_at.load(Ordering::Acquire) == IDLE
                && let Ok(mut trader) = cell.trader.try_lock()
                && trader.as_ref().is_none_or(|t| !t.status().is_scanned())
            {
                *trader = None;
            }
        }
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

/// A user's trader, loaded on first use, behind the user's lock.
pub async fn lock<'a>(app: &App, cell: &'a Cell) -> ApiResult<MutexGuard<'a, Option<Trader>>> {
    let mut guard = cell.trader.lock().await;
    if guard.is_none() {
        *guard = Some(Trader::load(app, &cell.user_id).await?);
    }
    Ok(guard)
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

pub(crate) fn publish_status(app: &App, trader: &Trader, message: &str) {
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

async fn persist(app: &App, trader: &mut Trader) -> ApiResult<()> {
    let now = now_ms();
    trading::upsert_bot(&app.db.pool, &trader.bot, now).await?;
    trader.last_persisted_at = now;
    Ok(())
}

pub async fn kill_switch_active(app: &App) -> ApiResult<bool> {
    Ok(trading::flag(&app.db.pool, KILL_SWITCH_FLAG)
        .await?
        .is_some())
}

/// Resumes the bots that were running (or starting, or paused) when the server stopped.
pub async fn resume_all(app: &App) -> anyhow::Result<usize> {
    let bots = trading::resumable_bots(&app.db.pool).await?;
    let count = bots.len();
    for bot in bots {
        let cell = app.engine.cell(&bot.user_id);
        app.engine.schedule(&cell, now_ms());
    }
    Ok(count)
}

// ----- trading control -----

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    pub broker: Option<String>,
    /// Default: the `paper_trading` setting.
    pub paper_trading: Option<bool>,
    /// Default: the `risk_level` setting.
    pub risk_profile: Option<String>,
    /// Strategy plugin (default: the server's default strategy).
    pub strategy: Option<String>,
    /// Pairs to trade, BASE-QUOTE (default: the server's default pairs).
    pub symbols: Option<Vec<String>>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Serialize)]
pub struct Started {
    pub status: &'static str,
    pub message: String,
    pub estimated_ready_in_seconds: u64,
}

pub async fn start(app: &App, user: &Principal, request: StartRequest) -> ApiResult<Started> {
    let account = users::by_id(&app.db.pool, &user.user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::TokenInvalid))?;
    let entitlement = crate::billing::plans::Entitlement::of(&account, now_ms());
    let settings = crate::settings::load(app, &user.user_id, &entitlement).await?;
    let risk_profile = request
        .risk_profile
        .unwrap_or_else(|| settings.trading.risk_level.clone());
    if !["low", "medium", "high"].contains(&risk_profile.as_str()) {
        return Err(ApiError::new(
            ErrorCode::InvalidRiskLevel,
            "risk_profile must be low, medium or high",
        )
        .detail("field", "risk_profile"));
    }
    let paper_trading = request
        .paper_trading
        .unwrap_or(settings.trading.paper_trading);
    let strategy = request
        .strategy
        .unwrap_or_else(|| app.config.default_strategy.clone());
    if app.plugins.active(PluginKind::Strategy, &strategy).is_err() {
        return Err(ApiError::invalid_field(
            "strategy",
            format!("no strategy plugin named `{strategy}`"),
        ));
    }
    let symbols = match request.symbols {
        None => {
            let defaults: Vec<String> = app
                .config
                .default_pairs
                .iter()
                .filter(|pair| settings.allows_pair(pair))
                .cloned()
                .collect();
            if defaults.is_empty() {
                settings.trading.allowed_pairs.clone()
            } else {
                defaults
            }
        }
        Some(symbols) => {
            let symbols: Vec<String> = symbols.iter().map(|s| s.trim().to_uppercase()).collect();
            if symbols.is_empty()
                || symbols.len() > 20
                || !symbols.iter().all(|s| crate::settings::valid_pair(s))
            {
                return Err(ApiError::invalid_field(
                    "symbols",
                    "1 to 20 symbols of the form BASE-QUOTE",
                ));
            }
            if let Some(outside) = symbols.iter().find(|s| !settings.allows_pair(s)) {
                return Err(ApiError::invalid_field(
                    "symbols",
                    format!(
                        "{outside} is not in your allowed_pairs (change them with PUT /config/settings)"
                    ),
                ));
            }
            symbols
        }
    };

    // The order of checks is the spec's: kill switch, broker, subscription, already running.
    if kill_switch_active(app).await? {
        return Err(ApiError::code(ErrorCode::KillSwitchActive));
    }
    let connections = crate::store::brokers::list(&app.db.pool, &user.user_id).await?;
    let broker = match request.broker {
        Some(name) => name.trim().to_lowercase(),
        None => connections
            .first()
            .map(|c| c.name.clone())
            .unwrap_or_else(|| "paper".into()),
    };
    brokers::plugin(app, &broker)?;
    if !connections.iter().any(|c| c.name == broker) {
        return Err(ApiError::new(
            ErrorCode::NoBrokerConfigured,
            format!("No `{broker}` connection is configured; add one at /config/brokers"),
        ));
    }
    if !paper_trading && !entitlement.allows_live_trading() {
        return Err(ApiError::new(
            ErrorCode::SubscriptionRequired,
            "Live trading needs a paid subscription or an active trial; paper trading is available",
        ));
    }
    let credentials = credentials(app, &user.user_id, &broker)
        .await
        .map_err(ApiError::internal)?;

    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    if matches!(
        trader.status(),
        BotStatus::Running | BotStatus::Starting | BotStatus::Paused
    ) {
        return Err(ApiError::new(
            ErrorCode::AlreadyRunning,
            format!("The bot is already {}", trader.bot.status),
        ));
    }
    trader.entitlement = entitlement;
    trader.settings = settings;
    trader.credentials = Some(credentials);
    trader.failures = 0;
    trader.reconcile = true;
    let now = now_ms();
    let bot = &mut trader.bot;
    bot.status = BotStatus::Starting.as_str().into();
    bot.broker = broker.clone();
    bot.paper_trading = paper_trading as i64;
    bot.risk_profile = risk_profile;
    bot.symbols = serde_json::to_string(&symbols).expect("symbols serialise");
    if bot.strategy != strategy {
        bot.strategy_state.clear();
    }
    bot.strategy = strategy;
    bot.started_at = Some(now);
    bot.last_error = None;
    persist(app, trader).await?;
    publish_status(app, trader, "Bot is starting");
    app.engine.schedule(&cell, now);
    Ok(Started {
        status: "starting",
        message: format!(
            "Bot starting on {broker} ({}) trading {}",
            if paper_trading { "paper" } else { "live" },
            symbols.join(", ")
        ),
        estimated_ready_in_seconds: app
            .config
            .scan_interval
            .as_secs_f64()
            .ceil()
            .clamp(1.0, 60.0) as u64,
    })
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    #[serde(default)]
    pub close_positions: bool,
    #[serde(default)]
    pub emergency: bool,
}

#[derive(Debug, Serialize)]
pub struct Stopped {
    pub status: &'static str,
    pub message: String,
    pub open_positions: usize,
    pub action_required: String,
}

/// Closes every open position of the trader; returns how many closed.
async fn close_all(app: &App, trader: &mut Trader, reason: &str) -> ApiResult<usize> {
    if trader.positions.is_empty() {
        return Ok(0);
    }
    if trader.credentials.is_none() {
        trader.credentials = Some(
            credentials(app, &trader.user_id, &trader.bot.broker)
                .await
                .map_err(|msg| {
                    ApiError::new(
                        ErrorCode::BrokerError,
                        format!("Cannot close positions: {msg}"),
                    )
                })?,
        );
    }
    let mut closed = 0;
    for position_id in trader
        .positions
        .iter()
        .map(|p| p.id.clone())
        .collect::<Vec<_>>()
    {
        let id = orders::client_order_id(&[&trader.bot.id, &position_id, "close"]);
        match orders::execute(
            app,
            trader,
            id,
            orders::Intent::Close {
                position_id,
                reason: reason.into(),
            },
        )
        .await
        {
            Ok(_) => closed += 1,
            Err(orders::OrderFailure::Refused(msg) | orders::OrderFailure::Failed(msg)) => {
                return Err(ApiError::new(
                    ErrorCode::BrokerError,
                    format!("Closing a position failed: {msg}"),
                )
                .detail("positions_closed", closed));
            }
        }
    }
    Ok(closed)
}

pub async fn stop(app: &App, user: &Principal, request: StopRequest) -> ApiResult<Stopped> {
    if request.emergency {
        let stopped = emergency_stop(
            app,
            user,
            EmergencyRequest {
                reason: Some("stop with emergency".into()),
                close_positions: request.close_positions,
            },
        )
        .await?;
        return Ok(Stopped {
            status: "emergency_stopped",
            message: stopped.message,
            open_positions: stopped.open_positions,
            action_required: action_required(stopped.open_positions),
        });
    }
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    if trader.status() == BotStatus::Stopped {
        return Err(ApiError::code(ErrorCode::NotRunning));
    }
    if request.close_positions {
        close_all(app, trader, "manual").await?;
    }
    trader.bot.status = BotStatus::Stopped.as_str().into();
    persist(app, trader).await?;
    app.engine.schedule(&cell, IDLE);
    publish_status(app, trader, "Bot stopped");
    let open = trader.positions.len();
    Ok(Stopped {
        status: "stopped",
        message: "Bot stopped".into(),
        open_positions: open,
        action_required: action_required(open),
    })
}

fn action_required(open: usize) -> String {
    if open == 0 {
        "none".into()
    } else {
        format!(
            "{open} position(s) remain open and are no longer managed; close them with \
             POST /account/positions/{{id}}/close or restart the bot"
        )
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmergencyRequest {
    pub reason: Option<String>,
    #[serde(default)]
    pub close_positions: bool,
}

#[derive(Debug, Serialize)]
pub struct EmergencyStopped {
    pub status: &'static str,
    pub positions_closed: usize,
    pub open_positions: usize,
    pub message: String,
}

pub async fn emergency_stop(
    app: &App,
    user: &Principal,
    request: EmergencyRequest,
) -> ApiResult<EmergencyStopped> {
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    app.engine.schedule(&cell, IDLE);
    let reason = request.reason.unwrap_or_else(|| "emergency stop".into());
    trader.bot.status = BotStatus::EmergencyStopped.as_str().into();
    trader.bot.last_error = Some(format!(
        "Emergency stop: {}",
        reason.chars().take(500).collect::<String>()
    ));
    persist(app, trader).await?;
    let closed = if request.close_positions {
        close_all(app, trader, "emergency_stop").await?
    } else {
        0
    };
    publish_status(app, trader, "Emergency stop");
    Ok(EmergencyStopped {
        status: "emergency_stopped",
        positions_closed: closed,
        open_positions: trader.positions.len(),
        message: format!("Emergency stop: {reason}"),
    })
}

#[derive(Debug, Serialize)]
pub struct StatusChange {
    pub status: String,
    pub message: String,
}

pub async fn pause(app: &App, user: &Principal) -> ApiResult<StatusChange> {
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    match trader.status() {
        BotStatus::Running | BotStatus::Starting => {}
        BotStatus::Paused => {
            return Ok(StatusChange {
                status: "paused".into(),
                message: "The bot is already paused".into(),
            });
        }
        _ => return Err(ApiError::code(ErrorCode::NotRunning)),
    }
    trader.bot.status = BotStatus::Paused.as_str().into();
    trader.bot.last_error = Some("Paused by the user".into());
    persist(app, trader).await?;
    publish_status(
        app,
        trader,
        "Bot paused: exits are still managed, no new entries",
    );
    Ok(StatusChange {
        status: "paused".into(),
        message:
            "Bot paused: stop losses and take profits are still managed; nothing new is opened"
                .into(),
    })
}

pub async fn resume(app: &App, user: &Principal) -> ApiResult<StatusChange> {
    if kill_switch_active(app).await? {
        return Err(ApiError::code(ErrorCode::KillSwitchActive));
    }
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    match trader.status() {
        BotStatus::Paused => {}
        BotStatus::Running | BotStatus::Starting => {
            return Err(ApiError::code(ErrorCode::AlreadyRunning));
        }
        _ => return Err(ApiError::code(ErrorCode::NotRunning)),
    }
    trader.bot.status = BotStatus::Running.as_str().into();
    trader.bot.last_error = None;
    persist(app, trader).await?;
    publish_status(app, trader, "Bot resumed");
    app.engine.schedule(&cell, now_ms());
    Ok(StatusChange {
        status: "running".into(),
        message: "Bot resumed".into(),
    })
}

#[derive(Debug, Serialize)]
pub struct BotStatusView {
    pub status: String,
    pub uptime_seconds: i64,
    pub broker: Option<String>,
    pub paper_trading: bool,
    pub risk_profile: String,
    pub strategy: String,
    pub symbols: Vec<String>,
    pub last_scan: Option<String>,
    pub next_scan: Option<String>,
    pub active_positions: usize,
    pub today_trades: u32,
    pub last_error: Option<String>,
}

pub async fn status(app: &App, user: &Principal) -> ApiResult<BotStatusView> {
    let cell = app.engine.cell(&user.user_id);
    let next = cell.next_scan_at.load(Ordering::Acquire);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    let now = now_ms();
    trader.stats.observe(now, trader.equity());
    let bot = &trader.bot;
    let state = trader.status();
    Ok(BotStatusView {
        status: bot.status.clone(),
        uptime_seconds: match (state.is_scanned(), bot.started_at) {
            (true, Some(started)) => (now - started).max(0) / 1000,
            _ => 0,
        },
        broker: (!bot.broker.is_empty()).then(|| bot.broker.clone()),
        paper_trading: bot.paper_trading != 0,
        risk_profile: bot.risk_profile.clone(),
        strategy: bot.strategy.clone(),
        symbols: trader.symbols(),
        last_scan: bot.last_scan_at.map(iso8601),
        next_scan: (state.is_scanned() && next != IDLE).then(|| iso8601(next.max(now))),
        active_positions: trader.positions.len(),
        today_trades: trader.stats.opens_today,
        last_error: bot.last_error.clone(),
    })
}

#[derive(Debug, Serialize)]
pub struct PositionClosed {
    pub position_id: String,
    pub status: &'static str,
    pub message: String,
}

pub async fn close_position(
    app: &App,
    user: &Principal,
    position_id: &str,
) -> ApiResult<PositionClosed> {
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    let Some(position) = trader.position(position_id).cloned() else {
        return Err(ApiError::code(ErrorCode::PositionNotFound));
    };
    if trader.bot.broker != position.broker || trader.credentials.is_none() {
        trader.bot.broker = position.broker.clone();
        trader.credentials = Some(
            credentials(app, &user.user_id, &position.broker)
                .await
                .map_err(|msg| {
                    ApiError::new(
                        ErrorCode::BrokerError,
                        format!("Cannot close the position: {msg}"),
                    )
                })?,
        );
    }
    let id = orders::client_order_id(&[&trader.bot.id, position_id, "close"]);
    match orders::execute(
        app,
        trader,
        id,
        orders::Intent::Close {
            position_id: position_id.into(),
            reason: "manual".into(),
        },
    )
    .await
    {
        Ok(_) => Ok(PositionClosed {
            position_id: position_id.into(),
            status: "closed",
            message: format!("{} position closed", position.symbol),
        }),
        Err(orders::OrderFailure::Refused(msg) | orders::OrderFailure::Failed(msg)) => {
            Err(ApiError::new(
                ErrorCode::BrokerError,
                format!("Closing the position failed: {msg}"),
            ))
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalKind {
    Buy,
    Sell,
    Close,
}

/// An inbound signal waiting for the bot's next scan.
#[derive(Debug, Clone)]
pub struct QueuedSignal {
    /// The id the resulting position (entry) or completed trade (exit) gets.
    pub id: String,
    pub symbol: String,
    pub kind: SignalKind,
    pub size_usd: Option<f64>,
}

/// At most this many signals wait for one bot's scan.
const MAX_QUEUED_SIGNALS: usize = 100;

/// Hands a signal to the user's running bot and wakes it.
pub async fn queue_signal(app: &App, user_id: &str, signal: QueuedSignal) -> ApiResult<()> {
    let cell = app.engine.cell(user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    if trader.status() != BotStatus::Running {
        return Err(ApiError::new(
            ErrorCode::NotRunning,
            format!(
                "The bot is {}; signals act only on a running bot",
                trader.bot.status
            ),
        ));
    }
    if trader.signals.len() >= MAX_QUEUED_SIGNALS {
        return Err(ApiError::new(
            ErrorCode::RateLimitExceeded,
            "Too many signals are waiting for the bot",
        )
        .retry_after(1));
    }
    trader.signals.push(signal);
    app.engine.schedule(&cell, now_ms());
    Ok(())
}

/// Stops the user's bot for an account reason (suspension); positions stay open. Whether a bot
/// was running.
pub async fn stop_for_account(app: &App, user_id: &str, reason: &str) -> ApiResult<bool> {
    let cell = app.engine.cell(user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    app.engine.schedule(&cell, IDLE);
    if !trader.status().is_scanned() {
        return Ok(false);
    }
    trader.bot.status = BotStatus::Stopped.as_str().into();
    trader.bot.last_error = Some(reason.to_string());
    persist(app, trader).await?;
    publish_status(app, trader, reason);
    Ok(true)
}

/// Re-reads the user's tier (and the settings that follow from it) into a loaded trader.
pub async fn entitlement_changed(app: &App, user_id: &str) -> ApiResult<()> {
    let Some(cell) = app.engine.cells.get(user_id).map(|cell| cell.clone()) else {
        return Ok(());
    };
    let mut guard = cell.trader.lock().await;
    if let Some(trader) = guard.as_mut() {
        let user = users::by_id(&app.db.pool, user_id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("user {user_id} vanished")))?;
        trader.entitlement = crate::billing::plans::Entitlement::of(&user, now_ms());
        trader.settings = crate::settings::load(app, user_id, &trader.entitlement).await?;
    }
    Ok(())
}

/// Applies changed settings to a loaded trader (a trader loaded later reads them itself).
pub async fn settings_changed(
    app: &App,
    user_id: &str,
    settings: crate::settings::Settings,
) -> ApiResult<()> {
    if let Some(cell) = app.engine.cells.get(user_id).map(|cell| cell.clone())
        && let Some(trader) = cell.trader.lock().await.as_mut()
    {
        trader.settings = settings;
    }
    Ok(())
}

/// Whether the user's bot is active on `broker` (such a connection must not be removed).
pub async fn bot_uses_broker(app: &App, user_id: &str, broker: &str) -> ApiResult<bool> {
    let bot = trading::bot(&app.db.pool, user_id).await?;
    Ok(bot.is_some_and(|bot| bot.broker == broker && BotStatus::parse(&bot.status).is_scanned()))
}

/// The account's equity at the last marks.
pub async fn account_equity(app: &App, user_id: &str) -> ApiResult<f64> {
    let cell = app.engine.cell(user_id);
    let guard = lock(app, &cell).await?;
    Ok(accounting::float(guard.as_ref().expect("loaded").equity()))
}

// ----- kill switch -----

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KillSwitchRequest {
    pub reason: Option<String>,
    #[serde(default)]
    pub close_all_positions: bool,
    #[serde(default = "yes")]
    pub notify_users: bool,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct KillSwitchState {
    pub active: bool,
    pub reason: Option<String>,
    pub activated_by: Option<String>,
    pub activated_at: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct KillSwitchActivated {
    pub message: String,
    pub affected_users: usize,
    pub active_positions: usize,
    pub positions_closed: usize,
    pub timestamp: String,
}

/// Blocks every start, stops every bot now (closing positions when asked) and tells connected
/// users. Activating it again re-applies it (bots started in between do not exist: starts are
/// refused while it is active).
pub async fn activate_kill_switch(
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
    let mut tx = app.db.pool.begin().await?;
    trading::set_flag(
        &mut *tx,
        KILL_SWITCH_FLAG,
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

    // Every bot the database knows as active, plus any loaded in memory.
    let mut user_ids: Vec<String> = trading::resumable_bots(&app.db.pool)
        .await?
        .into_iter()
        .map(|bot| bot.user_id)
        .collect();
    for cell in app.engine.cells.iter() {
        if cell.next_scan_at.load(Ordering::Acquire) != IDLE && !user_ids.contains(&cell.user_id) {
            user_ids.push(cell.user_id.clone());
        }
    }
    let (mut active_positions, mut closed) = (0, 0);
    for user_id in &user_ids {
        let cell = app.engine.cell(user_id);
        let mut guard = lock(app, &cell).await?;
        let trader = guard.as_mut().expect("loaded");
        app.engine.schedule(&cell, IDLE);
        if !trader.status().is_scanned() {
            continue;
        }
        trader.bot.status = BotStatus::Stopped.as_str().into();
        trader.bot.last_error = Some(format!("Stopped by the kill switch: {reason}"));
        persist(app, trader).await?;
        if request.close_all_positions {
            match close_all(app, trader, "kill_switch").await {
                Ok(count) => closed += count,
                Err(err) => {
                    tracing::error!(%user_id, error = %err, "kill switch could not close positions")
                }
            }
        }
        active_positions += trader.positions.len();
        publish_status(app, trader, "Stopped by the kill switch");
    }
    if request.notify_users {
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
                status: "activated",
                message: format!("Trading is halted by the operator: {reason}"),
                timestamp: iso8601(now),
            },
        );
    }
    Ok(KillSwitchActivated {
        message: format!("Kill switch active: {} bot(s) stopped", user_ids.len()),
        affected_users: user_ids.len(),
        active_positions,
        positions_closed: closed,
        timestamp: iso8601(now),
    })
}

pub async fn kill_switch(app: &App) -> ApiResult<KillSwitchState> {
    Ok(match trading::flag(&app.db.pool, KILL_SWITCH_FLAG).await? {
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

pub async fn deactivate_kill_switch(
    app: &App,
    admin: &Principal,
    meta: &crate::auth::ClientMeta,
) -> ApiResult<KillSwitchState> {
    let mut tx = app.db.pool.begin().await?;
    let was_active = trading::clear_flag(&mut *tx, KILL_SWITCH_FLAG).await?;
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
    Ok(KillSwitchState {
        active: false,
        reason: None,
        activated_by: None,
        activated_at: None,
    })
}

// ----- graceful restart -----

/// Restarts the trading engine in place (companion set C): each loaded bot that is scanning
/// closes its positions first when `close_positions` is set, has its state saved, and is then
/// dropped so that its next scan loads it again from the database with fresh plugin instances.
/// Returns how many scanning bots were restarted.
pub async fn restart(app: &App, close_positions: bool) -> ApiResult<usize> {
    let cells: Vec<Arc<Cell>> = app.engine.cells.iter().map(|c| c.clone()).collect();
    let mut restarted = 0;
    for cell in cells {
        let mut guard = cell.trader.lock().await;
        let Some(trader) = guard.as_mut() else {
            continue;
        };
        if trader.status().is_scanned() {
            if close_positions {
                close_all(app, trader, "manual").await?;
            }
            persist(app, trader).await?;
            publish_status(app, trader, "Trading engine restarted");
            restarted += 1;
        }
        *guard = None;
    }
    resume_all(app)
        .await
        .map_err(|err| ApiError::internal(format!("rescheduling bots after a restart: {err:#}")))?;
    tracing::info!(restarted, close_positions, "trading engine restarted");
    Ok(restarted)
}

/// Reads the user's trader (loaded from the database if needed) under the user's lock.
pub async fn with_trader<T>(
    app: &App,
    user_id: &str,
    read: impl FnOnce(&Trader) -> T,
) -> ApiResult<T> {
    let cell = app.engine.cell(user_id);
    let guard = lock(app, &cell).await?;
    Ok(read(guard.as_ref().expect("loaded")))
}
