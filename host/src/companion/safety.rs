//! The safety status the original single-page client polls (`/api/safety/*`): the platform's
//! state for anyone, and the caller's own when the caller is known. Stopping is only ever the
//! caller's own bot: an unauthenticated stop would let anyone halt every user.
//!
//! The original client shows `trading_allowed` as its trading toggle and disables the toggle
//! when `allow_toggle` is false, so `trading_allowed` says whether trading is on for the caller
//! (their bot trades on paper or live), and `allow_toggle` whether they may switch it.

use serde::Serialize;

use crate::App;
use crate::auth::Principal;
use crate::engine::{self, BotStatus, EmergencyRequest, kill_switch};
use crate::error::ApiResult;
use crate::store::{self, iso8601};

/// What may trade, from the most to the least restricted.
#[derive(utoipa::ToSchema, Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Nothing trades: the kill switch, or the caller's emergency stop.
    Disabled,
    /// No bot of the caller's is trading (or the caller is unknown).
    Monitor,
    /// The caller's bot trades on paper (or is paused).
    DryRun,
    /// The caller's bot trades with real money.
    Live,
}

impl Mode {
    fn display(self) -> &'static str {
        match self {
            Mode::Disabled => "Trading disabled",
            Mode::Monitor => "Monitor only",
            Mode::DryRun => "Dry run (paper trading)",
            Mode::Live => "Live trading",
        }
    }

    fn color(self) -> &'static str {
        match self {
            Mode::Disabled => "red",
            Mode::Monitor => "gray",
            Mode::DryRun => "yellow",
            Mode::Live => "green",
        }
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UiIndicators {
    pub show_simulation_banner: bool,
    pub status_color: &'static str,
    /// The client disables its trading toggle when this is false.
    pub allow_toggle: bool,
    pub status_dot: &'static str,
    pub trade_buttons_disabled: bool,
    pub show_emergency_banner: bool,
    pub show_app_store_banner: bool,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct SafetyStatus {
    pub mode: Mode,
    pub mode_display: &'static str,
    pub trading_allowed: bool,
    pub emergency_stop_active: bool,
    pub kill_switch_active: bool,
    pub credentials_configured: bool,
    pub last_state_change: Option<String>,
    pub status_message: String,
    pub idle_message: Option<String>,
    /// Accepting the terms at registration covers the risk of trading; nothing further is asked
    /// (acknowledged for a known caller).
    pub requires_risk_acknowledgment: bool,
    pub risk_acknowledged: bool,
    pub app_store_mode: bool,
    pub ui_indicators: UiIndicators,
}

/// The caller's side of the status.
struct Caller {
    status: BotStatus,
    paper: bool,
    started_at: Option<i64>,
    credentials: bool,
}

pub async fn status(app: &App, caller: Option<&Principal>) -> ApiResult<SafetyStatus> {
    let kill = kill_switch::state(app).await?;
    let caller = match caller {
        Some(user) => Some(caller_state(app, user).await?),
        None => None,
    };
    let emergency = caller
        .as_ref()
        .is_some_and(|c| c.status == BotStatus::EmergencyStopped);
    let mode = match &caller {
        _ if kill.active || emergency => Mode::Disabled,
        Some(c) if c.status.is_scanned() && c.paper => Mode::DryRun,
        Some(c) if c.status.is_scanned() => Mode::Live,
        _ => Mode::Monitor,
    };
    let credentials = caller.as_ref().is_some_and(|c| c.credentials);
    let trading_allowed = matches!(mode, Mode::DryRun | Mode::Live);
    // Nothing halts the caller: they may switch trading on or off (a start without a broker
    // connection is then refused with its reason).
    let allow_toggle = !kill.active && !emergency;
    let status_message = if kill.active {
        format!(
            "Trading is halted platform-wide{}",
            kill.reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        )
    } else if emergency {
        "Your emergency stop is active; lift it to trade again".into()
    } else {
        match (&caller, mode) {
            (None, _) => "Sign in to see your trading status".into(),
            (Some(c), _) if !c.credentials => "Connect a broker to start trading".into(),
            (_, Mode::DryRun) => "Your bot is trading on paper".into(),
            (_, Mode::Live) => "Your bot is trading live".into(),
            _ => "Your bot is not trading".into(),
        }
    };
    let last_state_change = if kill.active {
        kill.activated_at.clone()
    } else {
        caller.as_ref().and_then(|c| c.started_at).map(iso8601)
    };
    Ok(SafetyStatus {
        mode,
        mode_display: mode.display(),
        trading_allowed,
        emergency_stop_active: kill.active || emergency,
        kill_switch_active: kill.active,
        credentials_configured: credentials,
        last_state_change,
        idle_message: (mode == Mode::Monitor).then(|| status_message.clone()),
        status_message,
        requires_risk_acknowledgment: false,
        risk_acknowledged: caller.is_some(),
        app_store_mode: false,
        ui_indicators: UiIndicators {
            show_simulation_banner: mode == Mode::DryRun,
            status_color: mode.color(),
            allow_toggle,
            status_dot: mode.color(),
            trade_buttons_disabled: !allow_toggle,
            show_emergency_banner: kill.active || emergency,
            show_app_store_banner: false,
        },
    })
}

async fn caller_state(app: &App, user: &Principal) -> ApiResult<Caller> {
    let credentials = !store::brokers::list(&app.db.pool, &user.user_id)
        .await?
        .is_empty();
    engine::with_trader(app, &user.user_id, |trader| Caller {
        status: trader.status(),
        paper: trader.bot.paper_trading != 0,
        started_at: trader.bot.started_at,
        credentials,
    })
    .await
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct StopAnswer {
    pub success: bool,
    pub message: String,
    pub emergency_stop_active: bool,
}

/// Stops the caller's bot at once; positions stay open (close them from the positions view).
pub async fn emergency_stop(
    app: &App,
    user: &Principal,
    reason: Option<String>,
) -> ApiResult<StopAnswer> {
    let stopped = engine::emergency_stop(
        app,
        user,
        EmergencyRequest {
            reason,
            close_positions: false,
        },
    )
    .await?;
    Ok(StopAnswer {
        success: true,
        message: stopped.message,
        emergency_stop_active: true,
    })
}

/// Lifts the caller's emergency stop: the bot is stopped and may be started again.
pub async fn lift(app: &App, user: &Principal) -> ApiResult<StopAnswer> {
    let lifted = engine::lift_emergency_stop(app, user).await?;
    Ok(StopAnswer {
        success: true,
        message: lifted.message,
        emergency_stop_active: false,
    })
}
