//! Companion set A: the unversioned `/api` backend that the original single-page client drives.
//! Every call lands in the platform's own modules (auth, engine, settings, brokers); this module
//! only speaks the original client's shapes and messages.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::round2;
use crate::App;
use crate::auth::service::{self, RegisterRequest};
use crate::auth::{ClientMeta, Principal};
use crate::billing::plans::Entitlement;
use crate::brokers::{self, KNOWN_BROKERS, NewConnection};
use crate::engine::accounting::float;
use crate::engine::{self, BotStatus, StartRequest, StopRequest};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::{self, iso8601, now_ms, users};

/// The answer of register and login: the platform's access token under the original's names.
#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub user_id: String,
    pub email: String,
    pub subscription_tier: String,
}

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    pub email: String,
    pub password: String,
    #[serde(default)]
    pub subscription_tier: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Deserialize)]
pub struct Credentials {
    pub email: String,
    pub password: String,
}

pub const NOT_ENABLED: &str = "User not enabled or no permissions configured";

/// Registers through the platform (a 14-day trial on the `free` tier: a paid tier only comes
/// through billing) and signs the new user in.
pub async fn register(
    app: &App,
    body: Registration,
    meta: &ClientMeta,
) -> ApiResult<TokenResponse> {
    if let Some(tier) = &body.subscription_tier
        && !["basic", "pro", "enterprise"].contains(&tier.as_str())
    {
        return Err(ApiError::invalid_field(
            "subscription_tier",
            "String should match pattern '^(basic|pro|enterprise)$'",
        ));
    }
    let full_name = body
        .email
        .split('@')
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let request = RegisterRequest {
        email: body.email.clone(),
        password: body.password.clone(),
        full_name,
        // The original client has no terms checkbox; registering through it is the acceptance.
        accept_terms: true,
    };
    service::register(app, request, meta)
        .await
        .map_err(|err| match err.code {
            ErrorCode::EmailAlreadyExists => err.with_message("User already exists"),
            _ => err,
        })?;
    login(app, &body.email, &body.password, meta).await
}

pub async fn login(
    app: &App,
    email: &str,
    password: &str,
    meta: &ClientMeta,
) -> ApiResult<TokenResponse> {
    let signed_in = service::login(app, email, password, meta)
        .await
        .map_err(|err| match err.code {
            ErrorCode::AccountSuspended => err.with_message("Account suspended"),
            ErrorCode::AccountDisabled => err.with_message("Account disabled"),
            _ => err,
        })?;
    Ok(TokenResponse {
        access_token: signed_in.access_token,
        token_type: "bearer",
        user_id: signed_in.user.user_id,
        email: signed_in.user.email,
        subscription_tier: signed_in.user.subscription_tier,
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Permissions {
    pub user_id: String,
    pub allowed_pairs: Vec<String>,
    pub max_position_size_usd: f64,
    pub max_daily_loss_usd: f64,
    pub max_positions: u32,
    pub trade_only: bool,
    pub enabled: bool,
    pub created_at: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Profile {
    pub user_id: String,
    pub email: String,
    pub subscription_tier: String,
    pub created_at: String,
    pub enabled: bool,
    pub brokers: Vec<String>,
    pub permissions: Permissions,
}

struct Account {
    row: std::sync::Arc<users::UserRow>,
    entitlement: Entitlement,
    settings: crate::settings::Settings,
}

async fn account(app: &App, user: &Principal) -> ApiResult<Account> {
    let row = user.user.clone();
    let entitlement = Entitlement::of(&row, now_ms());
    let settings = crate::settings::load(app, &user.user_id, &entitlement).await?;
    Ok(Account {
        row,
        entitlement,
        settings,
    })
}

fn permissions(account: &Account) -> Permissions {
    let trading = &account.settings.trading;
    Permissions {
        user_id: account.row.id.clone(),
        allowed_pairs: trading.allowed_pairs.clone(),
        max_position_size_usd: account
            .settings
            .max_position_size_usd(&account.entitlement, trading.paper_trading),
        max_daily_loss_usd: trading.max_daily_loss_usd,
        max_positions: account.settings.max_positions(&account.entitlement),
        trade_only: true,
        enabled: account.row.status == "active",
        created_at: iso8601(account.row.created_at),
    }
}

pub async fn profile(app: &App, user: &Principal) -> ApiResult<Profile> {
    let account = account(app, user).await?;
    let brokers = store::brokers::list(&app.db.pool, &user.user_id)
        .await?
        .into_iter()
        .map(|row| row.name)
        .collect();
    Ok(Profile {
        user_id: account.row.id.clone(),
        email: account.row.email.clone(),
        subscription_tier: account.row.subscription_tier.clone(),
        created_at: iso8601(account.row.created_at),
        enabled: account.row.status == "active",
        brokers,
        permissions: permissions(&account),
    })
}

/// Starts the bot with the user's settings on their first broker connection. Without a broker
/// the original's message is kept, with the status the route set wants (A 400, B 403).
/// Starts the user's bot with the defaults; `no_broker` is how the route set words a start
/// without any broker connection.
pub async fn start(app: &App, user: &Principal, no_broker: ApiError) -> ApiResult<String> {
    let started = engine::start(
        app,
        user,
        StartRequest {
            broker: None,
            paper_trading: None,
            risk_profile: None,
            strategy: None,
            symbols: None,
        },
    )
    .await
    .map_err(|err| match err.code {
        ErrorCode::NoBrokerConfigured => no_broker,
        _ => err,
    })?;
    Ok(started.status.to_string())
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct BotAnswer {
    pub message: &'static str,
    pub user_id: String,
    pub status: String,
}

pub async fn start_bot(app: &App, user: &Principal) -> ApiResult<BotAnswer> {
    let no_broker = ApiError::new(
        ErrorCode::NoBrokerConfigured,
        "No broker is connected: connect one with POST /api/user/brokers/{broker} before starting the bot",
    );
    let status = start(app, user, no_broker)
        .await
        .map_err(|err| match err.code {
            ErrorCode::AlreadyRunning => {
                err.with_message("Bot is already running").with_status(400)
            }
            _ => err,
        })?;
    Ok(BotAnswer {
        message: "Bot started successfully",
        user_id: user.user_id.clone(),
        status,
    })
}

pub async fn stop_bot(app: &App, user: &Principal) -> ApiResult<BotAnswer> {
    engine::stop(app, user, StopRequest::default())
        .await
        .map_err(|err| match err.code {
            ErrorCode::NotRunning => err.with_message("No active trading instance found"),
            _ => err,
        })?;
    Ok(BotAnswer {
        message: "Bot stopped successfully",
        user_id: user.user_id.clone(),
        status: "stopped".into(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BackendStatus)]
pub struct Status {
    pub user_id: String,
    pub trading_enabled: bool,
    pub engine_status: String,
    pub last_activity: Option<String>,
    pub stats: StatusStats,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct StatusStats {
    pub total_trades: u64,
    pub total_pnl: f64,
    pub active_positions: usize,
}

/// The engine state in the original's words: `not_initialized` before the first start, and
/// `running` while the bot is still starting.
pub async fn status(app: &App, user: &Principal) -> ApiResult<Status> {
    let summary = engine::summary(app, user).await?;
    if !summary.started_once {
        return Ok(Status {
            user_id: user.user_id.clone(),
            trading_enabled: false,
            engine_status: "not_initialized".into(),
            last_activity: None,
            stats: StatusStats {
                total_trades: 0,
                total_pnl: 0.0,
                active_positions: 0,
            },
        });
    }
    let engine_status = match summary.status {
        BotStatus::Starting | BotStatus::Running => "running",
        other => other.as_str(),
    };
    Ok(Status {
        user_id: user.user_id.clone(),
        trading_enabled: engine_status == "running",
        engine_status: engine_status.into(),
        last_activity: summary.last_scan_at.map(iso8601),
        stats: StatusStats {
            total_trades: summary.totals.sums.trades,
            total_pnl: round2(float(summary.totals.sums.net_pnl)),
            active_positions: summary.active_positions,
        },
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BackendPosition)]
pub struct Position {
    pub pair: String,
    pub side: &'static str,
    pub size: f64,
    pub entry_price: f64,
    pub current_price: f64,
    pub pnl: f64,
    pub pnl_percent: f64,
}

pub async fn positions(app: &App, user: &Principal) -> ApiResult<Vec<Position>> {
    let open = engine::reports::positions(app, user, None, None).await?;
    Ok(open
        .positions
        .into_iter()
        .map(|p| Position {
            pair: p.symbol,
            side: p.side.as_str(),
            size: p.quantity,
            entry_price: p.entry_price,
            current_price: p.current_price,
            pnl: p.unrealized_pnl,
            pnl_percent: p.unrealized_pnl_pct,
        })
        .collect())
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Pnl {
    pub user_id: String,
    pub total_trades: u64,
    /// Percent (0-100), as the original client expects.
    pub win_rate: f64,
    pub total_pnl: f64,
    pub total_profit: f64,
    pub total_loss: f64,
    pub active_positions: usize,
}

/// From the running totals the trader keeps (the original client polls status and pnl every
/// 30 seconds).
pub async fn pnl(app: &App, user: &Principal) -> ApiResult<Pnl> {
    let summary = engine::summary(app, user).await?;
    let totals = summary.totals;
    Ok(Pnl {
        user_id: user.user_id.clone(),
        total_trades: totals.sums.trades,
        win_rate: totals.sums.win_rate_pct(),
        total_pnl: round2(float(totals.sums.net_pnl)),
        total_profit: round2(float(totals.sums.profit)),
        total_loss: round2(-float(totals.sums.loss)),
        active_positions: summary.active_positions,
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BackendConfig)]
pub struct Config {
    pub user_id: String,
    pub max_position_size_usd: f64,
    pub max_daily_loss_usd: f64,
    pub max_positions: u32,
    pub enabled: bool,
    pub paper_trading: bool,
    pub risk_level: String,
    pub allowed_pairs: Vec<String>,
}

pub async fn config(app: &App, user: &Principal) -> ApiResult<Config> {
    let account = account(app, user).await?;
    let trading = &account.settings.trading;
    Ok(Config {
        user_id: user.user_id.clone(),
        max_position_size_usd: trading.max_position_size_usd,
        max_daily_loss_usd: trading.max_daily_loss_usd,
        max_positions: trading.max_concurrent_positions,
        enabled: account.row.status == "active",
        paper_trading: trading.paper_trading,
        risk_level: trading.risk_level.clone(),
        allowed_pairs: trading.allowed_pairs.clone(),
    })
}

/// Changes the trading settings named in the original's words, through the platform's own
/// validation (tier limits included): nothing changes when any value is refused.
pub async fn update_config(
    app: &App,
    user: &Principal,
    body: Map<String, Value>,
) -> ApiResult<Config> {
    let mut trading = Map::new();
    for (key, value) in body {
        let name = match key.as_str() {
            "max_positions" => "max_concurrent_positions",
            "max_position_size_usd"
            | "max_daily_loss_usd"
            | "paper_trading"
            | "risk_level"
            | "allowed_pairs" => key.as_str(),
            _ => {
                return Err(ApiError::invalid_field(
                    &key,
                    "not a setting; use max_position_size_usd, max_daily_loss_usd, max_positions, \
                     paper_trading, risk_level or allowed_pairs",
                ));
            }
        };
        trading.insert(name.to_string(), value);
    }
    if !trading.is_empty() {
        let mut patch = Map::new();
        patch.insert("trading".into(), Value::Object(trading));
        // A refused value is a plain 400 with the platform's message (not the 422 list of a
        // malformed request, nor the tier limit's 403).
        crate::settings::update(app, user, patch)
            .await
            .map_err(|err| match err.code {
                ErrorCode::InvalidRequest
                | ErrorCode::InvalidSetting
                | ErrorCode::InvalidRiskLevel
                | ErrorCode::ExceedsTierLimit => err.with_status(400),
                _ => err,
            })?;
    }
    config(app, user).await
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BackendControl)]
pub struct Control {
    pub action: String,
    pub message: &'static str,
    pub status: String,
    pub user_id: String,
}

/// `start`, `stop`, `pause` or `resume`, in any case.
pub async fn control(app: &App, user: &Principal, action: Option<String>) -> ApiResult<Control> {
    let action = action
        .map(|a| a.trim().to_lowercase())
        .filter(|a| !a.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidRequest,
                "Action is required (start/stop/pause/resume)",
            )
            .with_status(400)
        })?;
    let (message, status) = match action.as_str() {
        "start" => ("Trading started", start_bot(app, user).await?.status),
        "stop" => ("Trading stopped", stop_bot(app, user).await?.status),
        "pause" => ("Trading paused", engine::pause(app, user).await?.status),
        "resume" => ("Trading resumed", engine::resume(app, user).await?.status),
        _ => {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "Invalid action. Use: start, stop, pause or resume",
            )
            .with_status(400));
        }
    };
    Ok(Control {
        action,
        message,
        status,
        user_id: user.user_id.clone(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct BrokerList {
    pub user_id: String,
    pub brokers: Vec<String>,
    pub count: usize,
}

pub async fn brokers(app: &App, user: &Principal) -> ApiResult<BrokerList> {
    let brokers: Vec<String> = store::brokers::list(&app.db.pool, &user.user_id)
        .await?
        .into_iter()
        .map(|row| row.name)
        .collect();
    Ok(BrokerList {
        user_id: user.user_id.clone(),
        count: brokers.len(),
        brokers,
    })
}

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerCredentials {
    pub api_key: String,
    pub api_secret: String,
    #[serde(default)]
    pub additional_params: Option<BTreeMap<String, Value>>,
}

fn supported(broker: &str) -> ApiResult<String> {
    let name = broker.trim().to_lowercase();
    if KNOWN_BROKERS.contains(&name.as_str()) {
        Ok(name)
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedBroker,
            format!(
                "Unsupported broker. Supported: {}",
                KNOWN_BROKERS.join(", ")
            ),
        ))
    }
}

/// Connects `broker` (the path value as sent), replacing stored keys when it is connected already.
pub async fn add_broker(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    broker: &str,
    credentials: BrokerCredentials,
) -> ApiResult<CredentialsChanged> {
    let name = supported(broker)?;
    brokers::add_or_replace(
        app,
        user,
        meta,
        NewConnection {
            broker: name,
            api_key: credentials.api_key,
            api_secret: credentials.api_secret,
            additional_params: credentials.additional_params.unwrap_or_default(),
        },
    )
    .await?;
    Ok(CredentialsChanged {
        message: format!("{} credentials added successfully", capitalised(broker)),
        broker: Some(broker.to_string()),
    })
}

/// What adding or removing a broker's credentials answers (`broker` only when adding).
#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct CredentialsChanged {
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broker: Option<String>,
}

pub async fn remove_broker(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    broker: &str,
) -> ApiResult<CredentialsChanged> {
    let name = broker.trim().to_lowercase();
    let row = store::brokers::by_name(&app.db.pool, &user.user_id, &name)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                format!("No {broker} credentials found"),
            )
        })?;
    brokers::remove(app, user, meta, &row.id).await?;
    Ok(CredentialsChanged {
        message: format!("{broker} credentials removed successfully"),
        broker: None,
    })
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
