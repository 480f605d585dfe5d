//! Broker connections: a user's exchange accounts (or the paper market), validated through the
//! broker plugin and kept in the vault. Reads show only a masked key.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::App;
use crate::auth::ClientMeta;
use crate::auth::sessions::Principal;
use crate::billing::plans::Entitlement;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::PluginKind;
use crate::plugins::bindings::broker::Credentials;
use crate::plugins::bindings::types::BrokerError;
use crate::plugins::calls::{Active, BrokerAccount};
use crate::store::audit::{self, Actor};
use crate::store::brokers::{self as rows, BrokerRow};
use crate::store::{self, iso8601, new_id, now_ms, users};
use crate::vault;

/// Broker names the platform knows; whether one works depends on an installed broker plugin.
pub const KNOWN_BROKERS: [&str; 6] = ["paper", "coinbase", "kraken", "binance", "okx", "alpaca"];

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = NewBrokerConnection)]
pub struct NewConnection {
    pub broker: String,
    pub api_key: String,
    pub api_secret: String,
    #[serde(default)]
    pub additional_params: BTreeMap<String, serde_json::Value>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Connection {
    pub broker_id: String,
    pub name: String,
    pub display_name: String,
    pub status: String,
    pub last_connected: Option<String>,
    pub api_key_masked: String,
    pub permissions: Vec<String>,
    pub created_at: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BrokerConnections)]
pub struct Connections {
    pub brokers: Vec<Connection>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BrokerAdded)]
pub struct Added {
    pub broker_id: String,
    pub message: String,
    pub status: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BrokerRemoved)]
pub struct Removed {
    pub message: String,
    pub open_positions: i64,
    pub warning: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = BrokerTestResult)]
pub struct TestResult {
    pub status: String,
    pub latency_ms: u64,
    pub permissions: Vec<String>,
    pub account_balance: f64,
}

fn connection(row: BrokerRow) -> Connection {
    Connection {
        permissions: serde_json::from_str(&row.permissions).unwrap_or_default(),
        broker_id: row.id,
        name: row.name,
        display_name: row.display_name,
        status: row.status,
        last_connected: row.last_connected_at.map(iso8601),
        api_key_masked: row.api_key_masked,
        created_at: iso8601(row.created_at),
    }
}

/// The installed plugin behind a broker name, or `UNSUPPORTED_BROKER`.
pub fn plugin(app: &App, name: &str) -> ApiResult<Arc<Active>> {
    if !KNOWN_BROKERS.contains(&name)
        && !app
            .plugins
            .names(PluginKind::Broker)
            .iter()
            .any(|n| n == name)
    {
        return Err(ApiError::new(
            ErrorCode::UnsupportedBroker,
            format!(
                "Broker `{name}` is not supported; known brokers: {}",
                KNOWN_BROKERS.join(", ")
            ),
        ));
    }
    app.plugins.active(PluginKind::Broker, name).map_err(|_| {
        ApiError::new(
            ErrorCode::UnsupportedBroker,
            format!("Broker `{name}` is not available on this server (no broker plugin installed)"),
        )
    })
}

/// A broker's refusal as the API's error.
pub fn broker_error(err: BrokerError) -> ApiError {
    match err {
        BrokerError::Auth(msg) => ApiError::new(
            ErrorCode::InvalidApiKey,
            format!("The broker rejected the credentials: {msg}"),
        ),
        BrokerError::RateLimited(ms) => ApiError::new(
            ErrorCode::BrokerError,
            format!("The broker is rate limiting; retry in {ms} ms"),
        )
        .retry_after(ms.div_ceil(1000).max(1).into()),
        BrokerError::Timeout(msg)
        | BrokerError::Unavailable(msg)
        | BrokerError::Unreachable(msg) => ApiError::new(
            ErrorCode::BrokerError,
            format!("The broker did not answer: {msg}"),
        ),
        BrokerError::Rejected(msg)
        | BrokerError::InsufficientFunds(msg)
        | BrokerError::Invalid(msg)
        | BrokerError::NotFound(msg)
        | BrokerError::Unsupported(msg) => ApiError::new(
            ErrorCode::BrokerError,
            format!("The broker answered: {msg}"),
        ),
    }
}

/// A plugin call off the async workers, its task failure as an internal error.
pub async fn blocking<T: Send + 'static>(
    call: impl FnOnce() -> T + Send + 'static,
) -> ApiResult<T> {
    crate::plugins::off_thread(call)
        .await
        .map_err(ApiError::internal)
}

async fn validate(
    app: &App,
    active: Arc<Active>,
    credentials: Credentials,
) -> ApiResult<(Vec<String>, u64)> {
    let runtime = app.plugins.runtime().clone();
    let started = Instant::now();
    let answer = blocking(move || runtime.broker_validate(&active, &credentials)).await??;
    let latency_ms = started.elapsed().as_millis() as u64;
    let check = answer.map_err(broker_error)?;
    Ok((check.permissions, latency_ms))
}

pub async fn list(app: &App, user: &Principal) -> ApiResult<Connections> {
    let rows = rows::list(&app.db.pool, &user.user_id).await?;
    Ok(Connections {
        brokers: rows.into_iter().map(connection).collect(),
    })
}

pub async fn add(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    new: NewConnection,
) -> ApiResult<Added> {
    connect(app, user, meta, new, false).await
}

/// Connects the broker, or replaces the keys of an existing connection to it (the companion
/// backend's upsert). Keys are checked with the broker before anything stored changes.
pub async fn add_or_replace(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    new: NewConnection,
) -> ApiResult<Added> {
    connect(app, user, meta, new, true).await
}

async fn connect(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    new: NewConnection,
    replace: bool,
) -> ApiResult<Added> {
    let name = new.broker.trim().to_lowercase();
    let active = plugin(app, &name)?;
    if new.api_key.trim().is_empty() || new.api_secret.trim().is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidApiKey,
            "api_key and api_secret must not be empty",
        ));
    }
    let params: Vec<(String, String)> = new
        .additional_params
        .iter()
        .map(|(key, value)| {
            (
                key.clone(),
                value
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| value.to_string()),
            )
        })
        .collect();
    let mut existing = rows::list(&app.db.pool, &user.user_id).await?;
    let replaced = existing
        .iter()
        .position(|row| row.name == name)
        .filter(|_| replace)
        .map(|at| existing.remove(at));
    if replaced.is_some() && crate::engine::bot_uses_broker(app, &user.user_id, &name).await? {
        return Err(ApiError::new(
            ErrorCode::BrokerInUse,
            format!("The bot is running on `{name}`; stop it before changing its keys"),
        ));
    }
    if existing.iter().any(|row| row.name == name) {
        return Err(ApiError::new(
            ErrorCode::BrokerAlreadyConnected,
            format!("Broker `{name}` is already connected; remove it first to change its keys"),
        ));
    }
    let account = users::by_id(&app.db.pool, &user.user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::TokenInvalid))?;
    let entitlement = Entitlement::of(&account, now_ms());
    if let Some(limit) = entitlement.limits().max_exchange_connections
        && existing.len() as u32 >= limit
    {
        return Err(ApiError::new(
            ErrorCode::ExceedsTierLimit,
            format!(
                "Your {} plan allows {limit} exchange connection(s)",
                entitlement.effective.as_str()
            ),
        )
        .detail("limit", limit));
    }
    let credentials = Credentials {
        api_key: new.api_key.clone(),
        api_secret: new.api_secret.clone(),
        params: params.clone(),
    };
    let (permissions, _) = validate(app, active.clone(), credentials).await?;
    let now = now_ms();
    let params_json = serde_json::to_string(&params.into_iter().collect::<BTreeMap<_, _>>())
        .expect("params serialise");
    let row = BrokerRow {
        id: new_id(),
        user_id: user.user_id.clone(),
        name: name.clone(),
        display_name: active.plugin.description.display_name.clone(),
        status: "connected".into(),
        api_key_sealed: app.vault.seal(&user.user_id, &new.api_key),
        api_secret_sealed: app.vault.seal(&user.user_id, &new.api_secret),
        api_key_masked: vault::mask(&new.api_key),
        params_sealed: app.vault.seal(&user.user_id, &params_json),
        permissions: serde_json::to_string(&permissions).expect("permissions serialise"),
        last_connected_at: Some(now),
        created_at: now,
    };
    let mut tx = app.db.begin().await?;
    if let Some(old) = &replaced {
        rows::delete(&mut *tx, &user.user_id, &old.id).await?;
    }
    if !rows::insert(&mut *tx, &row).await? {
        return Err(ApiError::new(
            ErrorCode::BrokerAlreadyConnected,
            format!("Broker `{name}` is already connected"),
        ));
    }
    audit::record(
        &mut *tx,
        "broker.connected",
        &Actor {
            user_id: Some(&user.user_id),
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
        json!({"broker": name, "broker_id": row.id, "replaced": replaced.is_some()}),
    )
    .await?;
    tx.commit().await?;
    Ok(Added {
        broker_id: row.id,
        message: format!("Broker {} connected", row.display_name),
        status: row.status,
    })
}

pub async fn remove(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    broker_id: &str,
) -> ApiResult<Removed> {
    let row = rows::by_id(&app.db.pool, &user.user_id, broker_id)
        .await?
        .ok_or_else(not_found)?;
    if crate::engine::bot_uses_broker(app, &user.user_id, &row.name).await? {
        return Err(ApiError::new(
            ErrorCode::BrokerInUse,
            format!(
                "The bot is running on `{}`; stop it before removing the broker",
                row.name
            ),
        ));
    }
    let open_positions = store::positions::count_open(
        &app.db.pool,
        &store::Filter {
            broker: Some(row.name.clone()),
            ..store::Filter::user(&user.user_id)
        },
    )
    .await?;
    let mut tx = app.db.begin().await?;
    rows::delete(&mut *tx, &user.user_id, broker_id).await?;
    audit::record(
        &mut *tx,
        "broker.removed",
        &Actor {
            user_id: Some(&user.user_id),
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
        json!({"broker": row.name, "broker_id": row.id}),
    )
    .await?;
    tx.commit().await?;
    Ok(Removed {
        message: format!("Broker {} removed", row.display_name),
        open_positions,
        warning: (open_positions > 0).then(|| {
            format!("{open_positions} position(s) on {} remain open; reconnect the broker to manage them", row.name)
        }),
    })
}

pub async fn test(app: &App, user: &Principal, broker_id: &str) -> ApiResult<TestResult> {
    let row = rows::by_id(&app.db.pool, &user.user_id, broker_id)
        .await?
        .ok_or_else(not_found)?;
    let active = plugin(app, &row.name)?;
    let credentials = open_credentials(app, &row)?;
    let (permissions, latency_ms) = validate(app, active.clone(), credentials.clone()).await?;
    let runtime = app.plugins.runtime().clone();
    let account = BrokerAccount {
        user_id: user.user_id.clone(),
        credentials,
    };
    let balances = blocking(move || runtime.broker_balances(&active, &account)).await??;
    let account_balance = match balances {
        // A simulated venue (or one that keeps no balances) answers with the platform's account.
        Ok(_) if active_is_simulated(app, &row.name) => {
            crate::engine::account_equity(app, &user.user_id).await?
        }
        Ok(balances) => quote_balance(&balances),
        Err(BrokerError::Unsupported(_)) => {
            crate::engine::account_equity(app, &user.user_id).await?
        }
        Err(err) => return Err(broker_error(err)),
    };
    rows::mark_connected(
        &app.db.pool,
        &row.id,
        "connected",
        &serde_json::to_string(&permissions).expect("permissions serialise"),
        now_ms(),
    )
    .await?;
    Ok(TestResult {
        status: "connected".into(),
        latency_ms,
        permissions,
        account_balance,
    })
}

/// Whether the broker is a simulation whose account the platform keeps (capability `simulated`).
fn active_is_simulated(app: &App, name: &str) -> bool {
    app.plugins
        .active(PluginKind::Broker, name)
        .is_ok_and(|active| {
            active
                .plugin
                .description
                .capabilities
                .iter()
                .any(|c| c == "simulated")
        })
}

/// The account's cash in its main quote currency (USD, else USDT, USDC, EUR), as a number.
fn quote_balance(balances: &[crate::plugins::bindings::types::AssetBalance]) -> f64 {
    ["USD", "USDT", "USDC", "EUR"]
        .iter()
        .find_map(|asset| balances.iter().find(|b| b.asset == *asset))
        .and_then(|b| crate::plugins::decimal::parse(&b.free).ok())
        .map(crate::engine::accounting::float)
        .unwrap_or(0.0)
}

/// Opens a connection's sealed credentials.
pub fn open_credentials(app: &App, row: &BrokerRow) -> ApiResult<Credentials> {
    let open = |sealed: &str| {
        app.vault.open(&row.user_id, sealed).map_err(|err| {
            ApiError::internal(format!("broker {} of user {}: {err}", row.id, row.user_id))
        })
    };
    let params: BTreeMap<String, String> =
        serde_json::from_str(&open(&row.params_sealed)?).unwrap_or_default();
    Ok(Credentials {
        api_key: open(&row.api_key_sealed)?,
        api_secret: open(&row.api_secret_sealed)?,
        params: params.into_iter().collect(),
    })
}

fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "Broker connection not found")
}
