//! Trading control: starting, stopping, pausing and resuming a user's bot, its status, the
//! emergency stop, a manual close, and what account changes (suspension, tier, settings) do to
//! a loaded bot.

use super::totals::AccountTotals;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::closing::{self, Attempt};
use super::order_views::{self, OrderView};
use super::orders;
use super::{BotStatus, IDLE, credentials, kill_switch, lock, persist, publish_status, read};
use crate::App;
use crate::auth::sessions::Principal;
use crate::brokers;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::PluginKind;
use crate::store::{iso8601, now_ms, reconciliation, users};

#[derive(utoipa::ToSchema, Debug, Deserialize)]
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

#[derive(utoipa::ToSchema, Debug, Serialize)]
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
    if kill_switch::active(app).await? {
        return Err(ApiError::code(ErrorCode::KillSwitchActive));
    }
    let connections = crate::store::brokers::list(&app.db.pool, &user.user_id).await?;
    let broker = match request.broker {
        Some(name) => name.trim().to_lowercase(),
        None => default_broker(&connections).unwrap_or_else(|| "paper".into()),
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
    credentials(app, &user.user_id, &broker)
        .await
        .map_err(ApiError::internal)?;
    if reconciliation::count_open(&app.db.pool, &user.user_id).await? > 0 {
        return Err(ApiError::new(
            ErrorCode::ReconciliationRequired,
            "The books differ from the broker; review GET /trading/reconciliation and resolve the differences first",
        ));
    }

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
    // Keys may have changed while the bot was stopped; the broker is chosen here, at start, only.
    trader.accounts.clear();
    trader.failures = 0;
    // The start compares the books with the venue as it is now, not as this process last saw it.
    trader.reconcile = true;
    app.plugins.runtime().forget_stores(&trader.user_id);
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

#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    #[serde(default)]
    pub close_positions: bool,
    #[serde(default)]
    pub emergency: bool,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Stopped {
    pub status: &'static str,
    pub message: String,
    pub open_positions: usize,
    pub action_required: String,
    /// Positions whose close is working or being retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub positions_closing: Option<usize>,
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
            action_required: action_required(stopped.open_positions, stopped.positions_closing),
            positions_closing: request.close_positions.then_some(stopped.positions_closing),
        });
    }
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    if trader.status() == BotStatus::Stopped {
        return Err(ApiError::code(ErrorCode::NotRunning));
    }
    trader.bot.status = BotStatus::Stopped.as_str().into();
    persist(app, trader).await?;
    app.engine.schedule(&cell, IDLE);
    orders::cancel_resting_entries(app, trader).await;
    let closing = if request.close_positions {
        Some(closing::close_all(app, trader, "manual").await.closing)
    } else {
        None
    };
    publish_status(app, trader, "Bot stopped");
    let open = trader.positions.len();
    Ok(Stopped {
        status: "stopped",
        message: "Bot stopped".into(),
        open_positions: open,
        action_required: action_required(open, closing.unwrap_or(0)),
        positions_closing: closing,
    })
}

/// Cancels one of the user's limit entries still working at the venue; answers the order as it
/// stands after the venue's answer (what filled before stays filled).
pub async fn cancel_order(app: &App, user: &Principal, order_id: &str) -> ApiResult<OrderView> {
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    let Some(order) = trader.live.iter().find(|o| o.id == order_id).cloned() else {
        let order = order_views::detail(app, user, order_id).await?;
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!(
                "Only a working order can be cancelled; this one is {}",
                order.status
            ),
        ));
    };
    if order.intent == "close" {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "A close is not cancelled: the position keeps closing until it is closed",
        ));
    }
    orders::cancel(app, trader, &order)
        .await
        .map_err(|reason| ApiError::new(ErrorCode::BrokerError, reason))?;
    drop(guard);
    order_views::detail(app, user, order_id).await
}

fn action_required(open: usize, closing: usize) -> String {
    if open == 0 {
        "none".into()
    } else if closing >= open {
        format!(
            "{open} position(s) are being closed; tradehost retries each until it is closed \
             (their status says closing)"
        )
    } else {
        format!(
            "{} position(s) remain open and are no longer managed; close them with \
             POST /account/positions/{{id}}/close or restart the bot",
            open - closing
        )
    }
}

#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmergencyRequest {
    pub reason: Option<String>,
    #[serde(default)]
    pub close_positions: bool,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct EmergencyStopped {
    pub status: &'static str,
    pub positions_closed: usize,
    pub open_positions: usize,
    /// Positions whose close is working or being retried.
    pub positions_closing: usize,
    /// Closes that failed this time (each is retried), by position.
    pub failures: Vec<CloseFailure>,
    pub message: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct CloseFailure {
    pub position_id: String,
    pub error: String,
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
    orders::cancel_resting_entries(app, trader).await;
    let outcome = if request.close_positions {
        closing::close_all(app, trader, "emergency_stop").await
    } else {
        closing::CloseAll::default()
    };
    publish_status(app, trader, "Emergency stop");
    Ok(EmergencyStopped {
        status: "emergency_stopped",
        positions_closed: outcome.closed,
        open_positions: trader.positions.len(),
        positions_closing: outcome.closing,
        failures: outcome
            .failures
            .into_iter()
            .map(|(position_id, error)| CloseFailure { position_id, error })
            .collect(),
        message: format!("Emergency stop: {reason}"),
    })
}

/// Lifts the user's emergency stop: the bot becomes `stopped` and may be started again. Without
/// an active emergency stop nothing changes (lifting twice is not an error).
pub async fn lift_emergency_stop(app: &App, user: &Principal) -> ApiResult<StatusChange> {
    let cell = app.engine.cell(&user.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    if trader.status() != BotStatus::EmergencyStopped {
        return Ok(StatusChange {
            status: trader.bot.status.clone(),
            message: "No emergency stop is active".into(),
        });
    }
    trader.bot.status = BotStatus::Stopped.as_str().into();
    trader.bot.last_error = None;
    persist(app, trader).await?;
    publish_status(app, trader, "Emergency stop lifted");
    Ok(StatusChange {
        status: trader.bot.status.clone(),
        message: "Emergency stop lifted; the bot can be started again".into(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
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
    if kill_switch::active(app).await? {
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

#[derive(utoipa::ToSchema, Debug, Serialize)]
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
    let mut trader = read(app, &cell).await?;
    let now = now_ms();
    let equity = trader.equity();
    trader.stats.observe(now, equity);
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

/// The bot's state and the account's running totals, as the trader in memory keeps them: no
/// query once loaded, and nothing formatted that a caller may not show.
#[derive(Debug, Clone)]
pub struct Summary {
    pub status: BotStatus,
    /// Whether the bot was ever started (a bot that never was has no broker).
    pub started_once: bool,
    pub last_scan_at: Option<i64>,
    pub active_positions: usize,
    pub totals: AccountTotals,
}

pub async fn summary(app: &App, user: &Principal) -> ApiResult<Summary> {
    let cell = app.engine.cell(&user.user_id);
    let trader = read(app, &cell).await?;
    Ok(Summary {
        status: trader.status(),
        started_once: !trader.bot.broker.is_empty(),
        last_scan_at: trader.bot.last_scan_at,
        active_positions: trader.positions.len(),
        totals: trader.stats.trades.clone(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct PositionClosed {
    pub position_id: String,
    /// closed, or closing (the close order is working: the position updates as it fills).
    pub status: &'static str,
    pub message: String,
}

/// Closes a position by hand, on the position's own broker. A close that fails is kept and
/// retried; the answer says so instead of calling the position closed.
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
    match closing::close(app, trader, position_id, "manual", true, None)
        .await
        .map_err(ApiError::internal)?
    {
        Attempt::Closed(_) | Attempt::Gone => Ok(PositionClosed {
            position_id: position_id.into(),
            status: "closed",
            message: format!("{} position closed", position.symbol),
        }),
        Attempt::Working(_) | Attempt::Waiting => Ok(PositionClosed {
            position_id: position_id.into(),
            status: "closing",
            message: format!(
                "The close of the {} position is working at the broker; the position updates as it fills",
                position.symbol
            ),
        }),
        Attempt::Failed(reason) => Err(ApiError::new(
            ErrorCode::BrokerError,
            format!(
                "Closing the {} position failed: {reason}. The position stays open and the close is retried",
                position.symbol
            ),
        )
        .detail("position_status", "closing")
        .detail("retrying", true)),
    }
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

/// The connection a bot uses when the start request names none: the user's first connection.
pub fn default_broker(connections: &[crate::store::brokers::BrokerRow]) -> Option<String> {
    connections.first().map(|c| c.name.clone())
}
