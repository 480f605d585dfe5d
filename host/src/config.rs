//! Configuration: Rocket.toml profiles (the `[<profile>.tradehost]` table) overridden by the
//! environment names of the spec (`DATABASE_URL`, `JWT_SECRET_KEY`, ...) and `TRADEHOST_*`.
//!
//! Everything the server needs is resolved here once, at start, into [`AppConfig`]; nothing else
//! reads the environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rocket::figment::Figment;
use serde::Deserialize;

use crate::store::Backend;

/// The largest starting cash of a trading account (`TRADEHOST_INITIAL_CAPITAL`).
const MAX_INITIAL_CAPITAL: i64 = 1_000_000_000;

/// The `[default.tradehost]` table of Rocket.toml; every field has a default so an empty table works.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
struct FileSettings {
    data_dir: PathBuf,
    database_url: Option<String>,
    jwt_expiration_hours: f64,
    refresh_token_days: i64,
    auth_rate_limit: u32,
    anon_rate_limit: u32,
    api_rate_multiplier: u32,
    failed_login_limit: u32,
    failed_login_window_secs: u64,
    scan_interval_secs: f64,
    plugin_dir: Option<PathBuf>,
    plugin_cache_dir: Option<PathBuf>,
    plugin_memory_mb: u64,
    plugin_fuel: u64,
    plugin_timeout_ms: u64,
    ws_auth_timeout_ms: u64,
    smtp_url: Option<String>,
    mail_from: Option<String>,
    public_url: Option<String>,
}

impl Default for FileSettings {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("./data"),
            database_url: None,
            jwt_expiration_hours: 24.0,
            refresh_token_days: 30,
            auth_rate_limit: 10,
            anon_rate_limit: 120,
            api_rate_multiplier: 1,
            failed_login_limit: 5,
            failed_login_window_secs: 900,
            scan_interval_secs: 60.0,
            plugin_dir: None,
            plugin_cache_dir: None,
            plugin_memory_mb: 64,
            plugin_fuel: 2_000_000_000,
            plugin_timeout_ms: 2000,
            ws_auth_timeout_ms: 10_000,
            smtp_url: None,
            mail_from: None,
            public_url: None,
        }
    }
}

/// Bot scans run at once unless `TRADEHOST_SCAN_PARALLELISM` says otherwise. Scans mostly wait
/// (for venues, and for the books' writer, which batches the jobs of the scans in flight): enough
/// of them keep its batches full, and a full batch costs less per fill on either backend (on
/// PostgreSQL a batch is one message to the server, its commit one flush; docs/benchmarks.md).
pub const DEFAULT_SCAN_PARALLELISM: usize = 256;

/// The resolved configuration of one server process.

#[derive(Clone)]
pub struct AppConfig {
    pub data_dir: PathBuf,
    pub database_url: String,
    pub backend: Backend,
    /// Access-token lifetime. `JWT_EXPIRATION_HOURS` accepts decimals so tests can use seconds.
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    pub jwt_secret_from_env: Option<String>,
    pub vault_key_from_env: Option<String>,
    /// Redis for what several instances share (rate limits); none: this instance alone.
    pub redis_url: Option<String>,
    /// Put before every Redis key, so several deployments can share one Redis.
    pub redis_prefix: String,
    /// This instance among several (`TRADEHOST_INSTANCE_ID`; made up at start when unset).
    pub instance_id: String,
    /// How long a bot's lease lasts without renewal (`TRADEHOST_BOT_LEASE_TTL`, seconds; several
    /// instances only): an instance that stops renewing loses its bots to the others after it.
    pub bot_lease_ttl: Duration,
    pub debug: bool,
    pub auth_rate_limit: u32,
    pub anon_rate_limit: u32,
    /// Scales every tier's `api_calls_per_minute` (self-hosted installs and load tests raise it).
    pub api_rate_multiplier: u32,
    pub failed_login_limit: u32,
    pub failed_login_window: Duration,
    pub scan_interval: Duration,
    /// How many bot scans run at once.
    pub scan_parallelism: usize,
    /// Bookings share disk flushes (`TRADEHOST_GROUP_COMMIT`, on unless `false`; SQLite only,
    /// `store::durability`).
    pub group_commit: bool,
    /// Starting cash of a new trading account (`TRADEHOST_INITIAL_CAPITAL`).
    pub initial_capital: rust_decimal::Decimal,
    /// Shared secret of the payment provider's webhook signatures (`PAYMENT_WEBHOOK_SECRET`).
    pub payment_webhook_secret: Option<String>,
    /// Lets a scraper read `/metrics` with this bearer token (`TRADEHOST_METRICS_TOKEN`).
    pub metrics_token: Option<String>,
    /// Strategy plugin of a bot started without naming one.
    pub default_strategy: String,
    /// Pairs a bot trades when the start request names none.
    pub default_pairs: Vec<String>,
    pub plugin_dir: Option<PathBuf>,
    /// Compiled plugin artifacts (default: `<data_dir>/plugin-cache`).
    pub plugin_cache_dir: PathBuf,
    pub plugin_limits: crate::plugins::Limits,
    /// Broker plugins may reach loopback, private, link-local and metadata addresses
    /// (`TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK`; off unless the operator turns it on).
    pub plugin_allow_private_network: bool,
    /// Users' notification webhooks may be plain http and reach loopback, private, link-local
    /// and metadata addresses (`TRADEHOST_NOTIFY_ALLOW_PRIVATE_NETWORK`; off unless turned on).
    pub notify_allow_private_network: bool,
    /// The first retry of a failed webhook delivery waits this long; each next one twice as long
    /// (`TRADEHOST_NOTIFY_RETRY_BASE_MS`, 30 s).
    pub notify_retry_base_ms: i64,
    /// How long a new WebSocket connection has to send its `auth` message.
    pub ws_auth_timeout: Duration,
    pub smtp_url: Option<String>,
    pub mail_from: String,
    /// Base URL used in links sent by mail (password reset).
    pub public_url: String,
    /// Listen address and port (Rocket's, after `PORT` / `TRADEHOST_ADDRESS`).
    pub address: String,
    pub port: u16,
    /// Companion sets: seconds between KPI snapshots and between performance reports.
    pub perf_update_interval: Duration,
    pub perf_report_interval: Duration,
    /// How long histories and finished work are kept (see `retention`).
    pub retention: RetentionPolicy,
    /// Defaults of risk thresholds that the operator overrides (`TRADEHOST_MAX_DRAWDOWN`, ...).
    pub threshold_defaults: Vec<(&'static str, f64)>,
    /// `POST /api/restart` closes open positions before the bots are reloaded.
    pub close_positions_on_restart: bool,
    /// `POST /api/restart` ends the process (for a supervisor to start it again).
    pub exit_on_restart: bool,
    /// Extra ports serving the dashboard set (E) and the restart, ledger and KPI sets (C, D, F).
    pub dashboard_port: Option<u16>,
    pub companion_port: Option<u16>,
    /// A browser client served on the API's origin (`TRADEHOST_WEB_DIR`, see `api::web`).
    pub web_dir: Option<PathBuf>,
}

/// Secrets never reach a log line through `{:?}`: keys and tokens are replaced, and URLs lose
/// their password.
impl std::fmt::Debug for AppConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const REDACTED: &str = "<redacted>";
        f.debug_struct("AppConfig")
            .field("data_dir", &self.data_dir)
            .field("database_url", &without_password(&self.database_url))
            .field("backend", &self.backend)
            .field("access_token_ttl", &self.access_token_ttl)
            .field("refresh_token_ttl", &self.refresh_token_ttl)
            .field(
                "jwt_secret_from_env",
                &self.jwt_secret_from_env.as_ref().map(|_| REDACTED),
            )
            .field(
                "vault_key_from_env",
                &self.vault_key_from_env.as_ref().map(|_| REDACTED),
            )
            .field(
                "redis_url",
                &self.redis_url.as_deref().map(without_password),
            )
            .field("redis_prefix", &self.redis_prefix)
            .field("instance_id", &self.instance_id)
            .field("bot_lease_ttl", &self.bot_lease_ttl)
            .field("debug", &self.debug)
            .field("auth_rate_limit", &self.auth_rate_limit)
            .field("anon_rate_limit", &self.anon_rate_limit)
            .field("api_rate_multiplier", &self.api_rate_multiplier)
            .field("failed_login_limit", &self.failed_login_limit)
            .field("failed_login_window", &self.failed_login_window)
            .field("scan_interval", &self.scan_interval)
            .field("scan_parallelism", &self.scan_parallelism)
            .field("group_commit", &self.group_commit)
            .field("initial_capital", &self.initial_capital)
            .field(
                "payment_webhook_secret",
                &self.payment_webhook_secret.as_ref().map(|_| REDACTED),
            )
            .field(
                "metrics_token",
                &self.metrics_token.as_ref().map(|_| REDACTED),
            )
            .field("default_strategy", &self.default_strategy)
            .field("default_pairs", &self.default_pairs)
            .field("plugin_dir", &self.plugin_dir)
            .field("plugin_cache_dir", &self.plugin_cache_dir)
            .field("plugin_limits", &self.plugin_limits)
            .field(
                "plugin_allow_private_network",
                &self.plugin_allow_private_network,
            )
            .field(
                "notify_allow_private_network",
                &self.notify_allow_private_network,
            )
            .field("notify_retry_base_ms", &self.notify_retry_base_ms)
            .field("ws_auth_timeout", &self.ws_auth_timeout)
            .field("smtp_url", &self.smtp_url.as_deref().map(without_password))
            .field("mail_from", &self.mail_from)
            .field("public_url", &self.public_url)
            .field("address", &self.address)
            .field("port", &self.port)
            .field("perf_update_interval", &self.perf_update_interval)
            .field("perf_report_interval", &self.perf_report_interval)
            .field("retention", &self.retention)
            .field("threshold_defaults", &self.threshold_defaults)
            .field(
                "close_positions_on_restart",
                &self.close_positions_on_restart,
            )
            .field("exit_on_restart", &self.exit_on_restart)
            .field("dashboard_port", &self.dashboard_port)
            .field("companion_port", &self.companion_port)
            .field("web_dir", &self.web_dir)
            .finish()
    }
}

/// A connection URL with its password (if any) replaced.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:<redacted>@{host}"),
        None => url.to_string(),
    }
}

/// Reads a variable; an empty value counts as unset.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl AppConfig {
    /// Builds the Rocket figment (Rocket.toml + `ROCKET_*`) with the spec's names applied on top.
    pub fn rocket_figment(env: EnvLookup<'_>) -> Result<Figment> {
        use rocket::figment::providers::{Env, Format, Toml};
        let file = env("ROCKET_CONFIG").unwrap_or_else(|| "Rocket.toml".into());
        // Rocket's own layering (defaults, Rocket.toml, ROCKET_*), with one default changed:
        // client addresses come from the socket unless the operator names a trusted proxy's
        // header, since a header any client can set would let it pick its rate-limit bucket.
        let mut figment = Figment::from(rocket::Config::default())
            .merge(("ip_header", false))
            .merge(Toml::file(file).nested())
            .merge(Env::prefixed("ROCKET_").ignore(&["PROFILE"]).global());
        if let Some(port) = env("PORT") {
            let port: u16 = port
                .trim()
                .parse()
                .with_context(|| format!("PORT must be a port number, got {port:?}"))?;
            figment = figment.merge(("port", port));
        }
        if let Some(address) = env("TRADEHOST_ADDRESS") {
            figment = figment.merge(("address", address));
        }
        Ok(figment)
    }

    pub fn load(figment: &Figment, env: EnvLookup<'_>) -> Result<Self> {
        let file: FileSettings = match figment.find_value("tradehost") {
            Ok(value) => value
                .deserialize()
                .context("invalid [tradehost] table in Rocket.toml")?,
            Err(_) => FileSettings::default(),
        };
        let rocket_config: rocket::Config =
            figment.extract().context("invalid Rocket configuration")?;

        let data_dir = env("TRADEHOST_DATA_DIR")
            .map(PathBuf::from)
            .unwrap_or(file.data_dir);
        let database_url = match env("DATABASE_URL").or(file.database_url) {
            Some(url) => with_postgres_password(url, env("POSTGRES_PASSWORD")),
            None => sqlite_url(&data_dir.join("tradehost.db")),
        };
        let backend = Backend::from_url(&database_url)?;

        let hours = parse_env(env, "JWT_EXPIRATION_HOURS")?.unwrap_or(file.jwt_expiration_hours);
        if !(hours.is_finite() && hours > 0.0 && hours <= 24.0 * 365.0) {
            bail!(
                "JWT_EXPIRATION_HOURS must be a positive number of hours up to a year, got {hours}"
            );
        }
        let scan = parse_env(env, "TRADEHOST_SCAN_INTERVAL")?.unwrap_or(file.scan_interval_secs);
        if !(scan.is_finite() && scan >= 0.01) {
            bail!("TRADEHOST_SCAN_INTERVAL must be at least 0.01 seconds, got {scan}");
        }
        // With REDIS_URL the instance shares its bots with others: one it cannot use is an error
        // at start, never a silent fall back to trading every bot alone.
        if let Some(url) = env("REDIS_URL")
            && let Err(err) = redis::Client::open(url.as_str())
        {
            bail!("REDIS_URL is not a Redis URL: {err}");
        }
        let lease_ttl = parse_env(env, "TRADEHOST_BOT_LEASE_TTL")?.unwrap_or(10.0_f64);
        if !(lease_ttl.is_finite() && (0.2..=3600.0).contains(&lease_ttl)) {
            bail!("TRADEHOST_BOT_LEASE_TTL must be between 0.2 and 3600 seconds, got {lease_ttl}");
        }
        let debug = match env("DEBUG") {
            Some(v) => {
                parse_bool(&v).with_context(|| format!("DEBUG must be true or false, got {v:?}"))?
            }
            None => false,
        };
        let auth_rate_limit =
            parse_env(env, "TRADEHOST_AUTH_RATE_LIMIT")?.unwrap_or(file.auth_rate_limit);
        let anon_rate_limit =
            parse_env(env, "TRADEHOST_ANON_RATE_LIMIT")?.unwrap_or(file.anon_rate_limit);
        let api_rate_multiplier =
            parse_env(env, "TRADEHOST_API_RATE_MULTIPLIER")?.unwrap_or(file.api_rate_multiplier);
        let failed_login_limit =
            parse_env(env, "TRADEHOST_FAILED_LOGIN_LIMIT")?.unwrap_or(file.failed_login_limit);
        for (name, value) in [
            ("TRADEHOST_AUTH_RATE_LIMIT", auth_rate_limit),
            ("TRADEHOST_ANON_RATE_LIMIT", anon_rate_limit),
            ("TRADEHOST_FAILED_LOGIN_LIMIT", failed_login_limit),
            ("TRADEHOST_API_RATE_MULTIPLIER", api_rate_multiplier),
        ] {
            if value == 0 {
                bail!("{name} must be at least 1");
            }
        }
        let plugin_memory_mb: u64 =
            parse_env(env, "TRADEHOST_PLUGIN_MEMORY_MB")?.unwrap_or(file.plugin_memory_mb);
        let plugin_fuel: u64 = parse_env(env, "TRADEHOST_PLUGIN_FUEL")?.unwrap_or(file.plugin_fuel);
        let plugin_timeout_ms: u64 =
            parse_env(env, "TRADEHOST_PLUGIN_TIMEOUT_MS")?.unwrap_or(file.plugin_timeout_ms);
        if !(16..=4096).contains(&plugin_memory_mb)
            || plugin_fuel < 1_000_000
            || !(10..=600_000).contains(&plugin_timeout_ms)
        {
            bail!(
                "plugin limits out of range: TRADEHOST_PLUGIN_MEMORY_MB 16-4096, TRADEHOST_PLUGIN_FUEL at least 1000000, \
                 TRADEHOST_PLUGIN_TIMEOUT_MS 10-600000"
            );
        }
        let ws_auth_timeout_ms: u64 =
            parse_env(env, "TRADEHOST_WS_AUTH_TIMEOUT_MS")?.unwrap_or(file.ws_auth_timeout_ms);
        if !(10..=600_000).contains(&ws_auth_timeout_ms) {
            bail!("TRADEHOST_WS_AUTH_TIMEOUT_MS must be 10-600000, got {ws_auth_timeout_ms}");
        }
        if file.refresh_token_days < 1 {
            bail!("refresh_token_days must be at least 1");
        }

        let scan_parallelism =
            parse_env(env, "TRADEHOST_SCAN_PARALLELISM")?.unwrap_or(DEFAULT_SCAN_PARALLELISM);
        if scan_parallelism == 0 {
            bail!("TRADEHOST_SCAN_PARALLELISM must be at least 1");
        }
        // Kept to the books' 8 places; the bound leaves the stored books room to grow
        // (store::decimal holds up to about 9.2e10).
        let initial_capital: rust_decimal::Decimal = parse_env(env, "TRADEHOST_INITIAL_CAPITAL")?
            .unwrap_or(rust_decimal::Decimal::from(10_000))
            .round_dp(crate::engine::accounting::SCALE);
        if initial_capital <= rust_decimal::Decimal::ZERO
            || initial_capital > rust_decimal::Decimal::from(MAX_INITIAL_CAPITAL)
        {
            bail!("TRADEHOST_INITIAL_CAPITAL must be positive and at most {MAX_INITIAL_CAPITAL}");
        }
        let default_pairs: Vec<String> = env("TRADEHOST_DEFAULT_PAIRS")
            .unwrap_or_else(|| "BTC-USD,ETH-USD".to_string())
            .split(',')
            .map(|pair| pair.trim().to_uppercase())
            .filter(|pair| !pair.is_empty())
            .collect();
        if default_pairs.is_empty() {
            bail!("TRADEHOST_DEFAULT_PAIRS must name at least one pair");
        }

        let address = rocket_config.address.to_string();
        let port = rocket_config.port;
        let public_url = env("TRADEHOST_PUBLIC_URL")
            .or(file.public_url)
            .unwrap_or_else(|| format!("http://{address}:{port}"));

        let perf_update: f64 = parse_env(env, "TRADEHOST_PERF_UPDATE_INTERVAL")?.unwrap_or(60.0);
        let perf_report: f64 = parse_env(env, "TRADEHOST_PERF_REPORT_INTERVAL")?.unwrap_or(3600.0);
        for (name, value) in [
            ("TRADEHOST_PERF_UPDATE_INTERVAL", perf_update),
            ("TRADEHOST_PERF_REPORT_INTERVAL", perf_report),
        ] {
            if !(0.1..=86_400.0).contains(&value) {
                bail!("{name} must be 0.1-86400 seconds, got {value}");
            }
        }
        let retention = RetentionPolicy::from_env(env)?;
        let mut threshold_defaults = Vec::new();
        for (variable, threshold) in [
            ("TRADEHOST_MAX_DRAWDOWN", "max_drawdown_pct"),
            ("TRADEHOST_DAILY_LOSS_LIMIT", "daily_loss_limit_pct"),
            ("TRADEHOST_MIN_WIN_RATE", "min_win_rate_pct"),
        ] {
            if let Some(value) = parse_env::<f64>(env, variable)? {
                let (_, _, min, max) = crate::settings::THRESHOLDS
                    .iter()
                    .find(|(name, ..)| *name == threshold)
                    .expect("a known threshold");
                if !(*min..=*max).contains(&value) {
                    bail!("{variable} must be {min}-{max}, got {value}");
                }
                threshold_defaults.push((threshold, value));
            }
        }
        let flag = |name: &str| -> Result<bool> {
            env(name).map_or(Ok(false), |raw| {
                parse_bool(&raw).ok_or_else(|| anyhow::anyhow!("{name} must be true or false"))
            })
        };
        let historical_ports = flag("TRADEHOST_HISTORICAL_PORTS")?;
        let dashboard_port: Option<u16> =
            parse_env(env, "TRADEHOST_DASHBOARD_PORT")?.or(historical_ports.then_some(5000));
        let companion_port: Option<u16> =
            parse_env(env, "TRADEHOST_COMPANION_PORT")?.or(historical_ports.then_some(5001));

        let plugin_cache_dir = env("TRADEHOST_PLUGIN_CACHE_DIR")
            .map(PathBuf::from)
            .or(file.plugin_cache_dir)
            .unwrap_or_else(|| data_dir.join("plugin-cache"));
        Ok(Self {
            data_dir,
            database_url,
            backend,
            access_token_ttl: Duration::from_secs_f64(hours * 3600.0),
            refresh_token_ttl: Duration::from_secs(file.refresh_token_days as u64 * 86_400),
            jwt_secret_from_env: env("JWT_SECRET_KEY"),
            vault_key_from_env: env("VAULT_ENCRYPTION_KEY"),
            redis_url: env("REDIS_URL"),
            redis_prefix: env("TRADEHOST_REDIS_PREFIX").unwrap_or_else(|| "tradehost".into()),
            instance_id: env("TRADEHOST_INSTANCE_ID").unwrap_or_else(|| {
                format!(
                    "instance-{}",
                    &uuid::Uuid::new_v4().simple().to_string()[..8]
                )
            }),
            bot_lease_ttl: Duration::from_secs_f64(lease_ttl),
            debug,
            auth_rate_limit,
            anon_rate_limit,
            api_rate_multiplier,
            failed_login_limit,
            failed_login_window: Duration::from_secs(file.failed_login_window_secs.max(1)),
            scan_interval: Duration::from_secs_f64(scan),
            scan_parallelism,
            group_commit: env("TRADEHOST_GROUP_COMMIT").map_or(Ok(true), |raw| {
                parse_bool(&raw)
                    .ok_or_else(|| anyhow::anyhow!("TRADEHOST_GROUP_COMMIT must be true or false"))
            })?,
            initial_capital,
            metrics_token: env("TRADEHOST_METRICS_TOKEN"),
            payment_webhook_secret: env("PAYMENT_WEBHOOK_SECRET"),
            default_strategy: env("TRADEHOST_DEFAULT_STRATEGY")
                .unwrap_or_else(|| "ema-cross".to_string()),
            default_pairs,
            plugin_dir: env("TRADEHOST_PLUGIN_DIR")
                .map(PathBuf::from)
                .or(file.plugin_dir),
            plugin_cache_dir,
            plugin_limits: crate::plugins::Limits {
                memory_bytes: (plugin_memory_mb << 20) as usize,
                fuel: plugin_fuel,
                deadline: Duration::from_millis(plugin_timeout_ms),
                ..crate::plugins::Limits::default()
            },
            plugin_allow_private_network: flag("TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK")?,
            notify_allow_private_network: flag("TRADEHOST_NOTIFY_ALLOW_PRIVATE_NETWORK")?,
            notify_retry_base_ms: parse_env::<i64>(env, "TRADEHOST_NOTIFY_RETRY_BASE_MS")?
                .unwrap_or(30_000)
                .clamp(10, 3_600_000),
            ws_auth_timeout: Duration::from_millis(ws_auth_timeout_ms),
            smtp_url: env("TRADEHOST_SMTP_URL").or(file.smtp_url),
            mail_from: env("TRADEHOST_MAIL_FROM")
                .or(file.mail_from)
                .unwrap_or_else(|| "tradehost <noreply@localhost>".to_string()),
            public_url,
            address,
            port,
            perf_update_interval: Duration::from_secs_f64(perf_update),
            perf_report_interval: Duration::from_secs_f64(perf_report),
            retention,
            threshold_defaults,
            close_positions_on_restart: flag("TRADEHOST_CLOSE_POSITIONS_ON_RESTART")?,
            exit_on_restart: flag("TRADEHOST_EXIT_ON_RESTART")?,
            dashboard_port,
            companion_port,
            web_dir: env("TRADEHOST_WEB_DIR").map(PathBuf::from),
        })
    }
}

fn parse_env<T: std::str::FromStr>(env: EnvLookup<'_>, name: &str) -> Result<Option<T>> {
    match env(name) {
        None => Ok(None),
        Some(raw) => raw
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("{name} has an invalid value {raw:?}")),
    }
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

pub fn sqlite_url(path: &Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

/// `POSTGRES_PASSWORD` fills in the password of a PostgreSQL URL that has none.
fn with_postgres_password(url: String, password: Option<String>) -> String {
    let Some(password) = password else { return url };
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let authority = &rest[..authority_end];
            if let Some(at) = authority.rfind('@') {
                let userinfo = &authority[..at];
                if !userinfo.contains(':') {
                    return format!("{scheme}{userinfo}:{}{}", urlencode(&password), &rest[at..]);
                }
            }
        }
    }
    url
}

fn urlencode(raw: &str) -> String {
    raw.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How long each kind of row is kept; `retention` applies it every `interval`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Time between runs (`TRADEHOST_RETENTION_INTERVAL`, seconds; 3600).
    pub interval: Duration,
    /// Tracker snapshots and equity points: all kept this many days
    /// (`TRADEHOST_SNAPSHOT_FULL_DAYS`, 2), then one an hour until
    /// `TRADEHOST_SNAPSHOT_HOURLY_DAYS` (90), then one a day.
    pub snapshot_full_days: u32,
    pub snapshot_hourly_days: u32,
    /// Ended sessions (`TRADEHOST_SESSION_RETENTION_DAYS`, 30).
    pub session_days: u32,
    /// Audit rows (`TRADEHOST_AUDIT_RETENTION_DAYS`, 365; 0 keeps them forever).
    pub audit_days: u32,
    /// Delivered mail and finished notifications (`TRADEHOST_MAIL_RETENTION_DAYS`, 30).
    pub mail_days: u32,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(3600),
            snapshot_full_days: 2,
            snapshot_hourly_days: 90,
            session_days: 30,
            audit_days: 365,
            mail_days: 30,
        }
    }
}

impl RetentionPolicy {
    fn from_env(env: EnvLookup<'_>) -> Result<Self> {
        let defaults = Self::default();
        let interval: f64 = parse_env(env, "TRADEHOST_RETENTION_INTERVAL")?
            .unwrap_or(defaults.interval.as_secs_f64());
        if !(1.0..=604_800.0).contains(&interval) {
            bail!("TRADEHOST_RETENTION_INTERVAL must be 1-604800 seconds, got {interval}");
        }
        let days = |name: &str, default: u32, min: u32| -> Result<u32> {
            let value: u32 = parse_env(env, name)?.unwrap_or(default);
            if !(min..=36_500).contains(&value) {
                bail!("{name} must be {min}-36500 days, got {value}");
            }
            Ok(value)
        };
        let snapshot_full_days = days(
            "TRADEHOST_SNAPSHOT_FULL_DAYS",
            defaults.snapshot_full_days,
            1,
        )?;
        let snapshot_hourly_days = days(
            "TRADEHOST_SNAPSHOT_HOURLY_DAYS",
            defaults.snapshot_hourly_days,
            1,
        )?;
        if snapshot_hourly_days < snapshot_full_days {
            bail!(
                "TRADEHOST_SNAPSHOT_HOURLY_DAYS ({snapshot_hourly_days}) must not be less than \
                 TRADEHOST_SNAPSHOT_FULL_DAYS ({snapshot_full_days})"
            );
        }
        Ok(Self {
            interval: Duration::from_secs_f64(interval),
            snapshot_full_days,
            snapshot_hourly_days,
            session_days: days("TRADEHOST_SESSION_RETENTION_DAYS", defaults.session_days, 1)?,
            audit_days: days("TRADEHOST_AUDIT_RETENTION_DAYS", defaults.audit_days, 0)?,
            mail_days: days("TRADEHOST_MAIL_RETENTION_DAYS", defaults.mail_days, 1)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn load(vars: &[(&str, &str)]) -> Result<AppConfig> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let lookup = move |name: &str| map.get(name).cloned();
        let figment = AppConfig::rocket_figment(&lookup)?;
        AppConfig::load(&figment, &lookup)
    }

    #[test]
    fn debug_output_hides_secrets() {
        let config = load(&[
            ("DATABASE_URL", "postgres://app:hunter2@db:5432/th"),
            ("JWT_SECRET_KEY", "jwt-secret-value"),
            ("VAULT_ENCRYPTION_KEY", "vault-secret-value"),
            ("PAYMENT_WEBHOOK_SECRET", "payment-secret-value"),
            ("TRADEHOST_METRICS_TOKEN", "metrics-secret-value"),
            (
                "TRADEHOST_SMTP_URL",
                "smtp://mailer:mail-secret-value@mail.example.com:587",
            ),
        ])
        .unwrap();
        let shown = format!("{config:?}");
        for secret in [
            "hunter2",
            "jwt-secret",
            "vault-secret",
            "payment-secret",
            "metrics-secret",
            "mail-secret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(
            shown.contains("postgres://app:<redacted>@db:5432/th"),
            "{shown}"
        );
        assert!(
            shown.contains("jwt_secret_from_env: Some(\"<redacted>\")"),
            "{shown}"
        );
    }

    /// Without a Rocket.toml (a server started elsewhere than the repository), client addresses
    /// still come from the socket, never from a header a client could set.
    #[test]
    fn no_client_ip_header_without_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("Rocket.toml").display().to_string();
        let lookup = move |name: &str| (name == "ROCKET_CONFIG").then(|| missing.clone());
        let figment = AppConfig::rocket_figment(&lookup).unwrap();
        let rocket: rocket::Config = figment.extract().unwrap();
        assert_eq!(rocket.ip_header, None);
    }

    #[test]
    fn initial_capital_is_bounded_and_kept_to_the_books_places() {
        let capital = |value: &str| {
            load(&[("TRADEHOST_INITIAL_CAPITAL", value)]).map(|config| config.initial_capital)
        };
        assert_eq!(
            capital("2500.123456789").unwrap(),
            "2500.12345679".parse().unwrap()
        );
        assert_eq!(capital("1000000000").unwrap(), 1_000_000_000.into());
        for refused in ["0", "-5", "1000000000.01"] {
            let err = capital(refused).unwrap_err().to_string();
            assert!(
                err.contains("TRADEHOST_INITIAL_CAPITAL"),
                "{refused}: {err}"
            );
        }
    }

    #[test]
    fn defaults_to_sqlite_under_the_data_dir() {
        let config = load(&[("TRADEHOST_DATA_DIR", "/srv/th")]).unwrap();
        assert_eq!(config.backend, Backend::Sqlite);
        assert_eq!(
            config.database_url,
            "sqlite:///srv/th/tradehost.db?mode=rwc"
        );
        assert_eq!(config.access_token_ttl, Duration::from_secs(24 * 3600));
    }

    #[test]
    fn spec_environment_names_override() {
        let config = load(&[
            ("DATABASE_URL", "postgres://app@db:5432/th"),
            ("POSTGRES_PASSWORD", "p@ss"),
            ("JWT_EXPIRATION_HOURS", "0.001"),
            ("PORT", "9123"),
            ("DEBUG", "true"),
        ])
        .unwrap();
        assert_eq!(config.backend, Backend::Postgres);
        assert_eq!(config.database_url, "postgres://app:p%40ss@db:5432/th");
        assert_eq!(config.access_token_ttl, Duration::from_secs_f64(3.6));
        assert_eq!(config.port, 9123);
        assert!(config.debug);
    }

    #[test]
    fn bad_values_are_refused_with_their_name() {
        let err = load(&[("PORT", "eighty")]).unwrap_err().to_string();
        assert!(err.contains("PORT"), "{err}");
        let err = load(&[("JWT_EXPIRATION_HOURS", "-1")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("JWT_EXPIRATION_HOURS"), "{err}");
        let err = load(&[("DATABASE_URL", "mysql://x")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("DATABASE_URL"), "{err}");
        let err = load(&[("TRADEHOST_AUTH_RATE_LIMIT", "0")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("TRADEHOST_AUTH_RATE_LIMIT"), "{err}");
    }
}
