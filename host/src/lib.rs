//! tradehost: a self-hostable trading automation platform.
//!
//! [`App`] is the state every request and background task shares; [`rocket`] builds the server
//! from a resolved configuration. See docs/architecture.md for the map of the modules.

/// `schema_checked!("SQL")`: the text, checked against the migrated SQLite schema when this crate
/// compiles (`crates/schema-checked`).
#[macro_use]
extern crate schema_checked;

pub mod admin;
pub mod analytics;
pub mod api;
pub mod auth;
pub mod backtest;
pub mod billing;
pub mod brokers;
pub mod candles;
pub mod cli;
pub mod cluster;
pub mod companion;
pub mod config;
pub mod csv_cells;
pub mod engine;
pub mod error;
pub mod events;
pub mod export;
pub mod mail;
pub mod market;
pub mod notices;
pub mod notify;
pub mod pdf;
pub mod performance;
pub mod plugins;
pub mod ratelimit;
pub mod retention;
pub mod secrets;
pub mod settings;
pub mod signals;
pub mod store;
pub mod telemetry;
pub mod vault;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use rocket::fairing::AdHoc;
use rocket::figment::Figment;
use rocket::{Build, Rocket};

use crate::auth::jwt::Jwt;
use crate::auth::password::Passwords;
use crate::auth::sessions::SessionCache;
use crate::cluster::{Bus, Message, Received};
use crate::config::AppConfig;
use crate::mail::Mailer;
use crate::ratelimit::{InMemoryRateLimiter, RateLimiter, RedisRateLimiter};
use crate::store::Db;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Shared state of the server: a cheap handle (an `Arc`) managed by Rocket and cloned into
/// background tasks.
#[derive(Clone)]
pub struct App(Arc<AppInner>);

pub struct AppInner {
    pub config: AppConfig,
    pub db: Db,
    pub jwt: Jwt,
    pub passwords: Passwords,
    pub sessions: SessionCache,
    pub limiter: Arc<dyn RateLimiter>,
    pub mailer: Mailer,
    pub notifier: notices::Notifier,
    pub plugins: Arc<plugins::Registry>,
    pub events: events::EventBus,
    /// What this instance tells the others and hears from them (connected with `REDIS_URL`).
    pub cluster: Arc<Bus>,
    pub engine: engine::Engine,
    pub vault: vault::Vault,
    pub requests: telemetry::RequestStats,
    pub payments: Box<dyn billing::provider::PaymentProvider>,
    pub usage: billing::usage::UsageCounter,
    pub tracker: performance::Tracker,
    /// Backtests this process is running.
    pub backtests: backtest::runs::Runs,
    /// Bearer token that may read `/metrics` without an admin session (`TRADEHOST_METRICS_TOKEN`).
    pub metrics_token: Option<String>,
    /// The in-process limiter, kept concrete for its sweeper; `limiter` is what the code uses.
    memory_limiter: Option<Arc<InMemoryRateLimiter>>,
}

impl std::ops::Deref for App {
    type Target = AppInner;

    fn deref(&self) -> &AppInner {
        &self.0
    }
}

impl App {
    /// Connects the database, applies migrations and resolves secrets.
    pub async fn init(config: AppConfig) -> Result<Self> {
        Self::init_with_payments(config, Box::new(billing::provider::LocalProvider)).await
    }

    /// As [`App::init`], taking payments through `payments`.
    pub async fn init_with_payments(
        config: AppConfig,
        payments: Box<dyn billing::provider::PaymentProvider>,
    ) -> Result<Self> {
        std::fs::create_dir_all(&config.data_dir)?;
        let secrets = secrets::resolve(&config)?;
        let db = Db::connect_with(&config.database_url, config.group_commit).await?;
        db.migrate().await?;
        let plugins = Arc::new(plugins::load(&config, Some(db.clone())).await?);
        let memory_limiter = Arc::new(InMemoryRateLimiter::default());
        let limiter: Arc<dyn RateLimiter> = match &config.redis_url {
            Some(url) => Arc::new(RedisRateLimiter::new(
                url,
                &config.redis_prefix,
                memory_limiter.clone(),
            )?),
            None => memory_limiter.clone(),
        };
        let cluster = Arc::new(Bus::new(config.instance_id.clone()));
        Ok(Self(Arc::new(AppInner {
            plugins,
            events: events::EventBus::new(cluster.clone()),
            cluster,
            engine: engine::Engine::default(),
            vault: vault::Vault::new(&secrets.vault_key),
            requests: telemetry::RequestStats::default(),
            payments,
            usage: billing::usage::UsageCounter::default(),
            tracker: performance::Tracker::default(),
            backtests: backtest::runs::Runs::default(),
            metrics_token: config.metrics_token.clone(),
            jwt: Jwt::new(&secrets.jwt_secret, config.access_token_ttl),
            passwords: Passwords::for_this_machine(),
            sessions: SessionCache::new(Duration::from_secs(10)),
            limiter,
            mailer: Mailer::new(config.smtp_url.as_deref(), &config.mail_from)?,
            notifier: notices::Notifier::default(),
            memory_limiter: Some(memory_limiter),
            db,
            config,
        })))
    }

    /// After a commit that changed a user's row (tier, status, role, name, password): the next
    /// request sees the change, its rate limit included.
    pub fn user_changed(&self, user_id: &str) {
        self.sessions.forget_user(user_id);
        self.cluster.send(Message::UserChanged {
            user_id: user_id.to_string(),
        });
    }

    /// After a commit that ended a session (sign-out, revocation): its token is refused at once,
    /// here and on every other instance.
    pub fn session_ended(&self, session_id: &str) {
        self.sessions.forget_session(session_id);
        self.cluster.send(Message::SessionEnded {
            session_id: session_id.to_string(),
        });
    }

    /// After a plugin's versions or settings changed in the database: every other instance
    /// loads what changed.
    pub fn plugin_changed(&self, name: &str) {
        self.cluster.send(Message::PluginChanged {
            name: name.to_string(),
        });
    }

    /// Mail was queued in the outbox: the instance delivering mail (this one, or the holder of the
    /// `mail` job among several) sends it now.
    pub fn mail_queued(&self) {
        self.mailer.wake();
        self.cluster.send(Message::MailQueued);
    }

    /// Whether this instance runs background job `job` now. A lone instance runs every job; in a
    /// cluster, the instance holding the job's lease does, renewing it for `period` twice over on
    /// every run (so it keeps the job while it lives, and another takes over once it has not
    /// run it for that long).
    pub async fn runs_job(&self, job: &str, period: Duration) -> bool {
        if !self.cluster.clustered() {
            return true;
        }
        let now = store::now_ms();
        let until = now + 2 * period.as_millis() as i64;
        match store::job_leases::claim(&self.db, job, self.cluster.instance(), now, until).await {
            Ok(granted) => granted,
            Err(err) => {
                tracing::warn!(job, error = %err, "cannot claim a background job");
                false
            }
        }
    }

    /// Joins the other instances on `REDIS_URL` and acts on what they say.
    pub fn join_cluster(&self) {
        let Some(url) = &self.config.redis_url else {
            return;
        };
        let mut received = match self.cluster.connect(url, &self.config.redis_prefix) {
            Ok(received) => received,
            Err(err) => {
                tracing::error!(error = %err, "cannot join the other instances through Redis");
                return;
            }
        };
        tracing::info!(
            instance = self.cluster.instance(),
            "joined the instances on Redis"
        );
        let app = self.clone();
        tokio::spawn(async move {
            while let Some(received) = received.recv().await {
                app.heard(received).await;
            }
        });
        // The others forget sockets they are not told of again.
        let app = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(events::WATCHING_REPEAT);
            loop {
                every.tick().await;
                app.events.announce_watching();
            }
        });
    }

    /// What another instance said.
    async fn heard(&self, received: Received) {
        match received {
            Received::Message(Message::Event {
                user_id,
                channel,
                json,
            }) => self
                .events
                .deliver_from_elsewhere(user_id.as_deref(), &channel, &json),
            Received::Message(Message::SessionEnded { session_id }) => {
                self.sessions.forget_session(&session_id)
            }
            Received::Message(Message::UserChanged { user_id }) => {
                self.sessions.forget_user(&user_id)
            }
            Received::Message(Message::KillSwitch { active }) => {
                engine::kill_switch::switched_elsewhere(self, active).await
            }
            Received::Message(Message::HandOver { user_id }) => {
                engine::leases::hand_over(self, &user_id).await
            }
            Received::Message(Message::MailQueued) => self.mailer.wake(),
            Received::Message(Message::Watching { user_ids }) => {
                self.events.watching_elsewhere(user_ids)
            }
            Received::Message(Message::WhoIsWatching) => self.events.announce_watching(),
            Received::Joined => self.exchange_watching(),
            Received::Message(Message::PluginChanged { name }) => {
                if let Err(err) = self.plugins.refresh(Some(&name)).await {
                    tracing::error!(plugin = %name, error = %err, "cannot load a plugin change made on another instance");
                }
            }
            // Messages may have been missed: sockets reload, sessions are checked afresh, and the
            // kill switch is read again.
            Received::Gap => {
                self.events.lag_everyone();
                self.exchange_watching();
                self.mailer.wake();
                self.sessions.forget_all();
                if let Err(err) = self.plugins.refresh(None).await {
                    tracing::error!(error = %err, "cannot reload the plugins' stored settings");
                }
                match engine::kill_switch::active(self).await {
                    Ok(active) => engine::kill_switch::switched_elsewhere(self, active).await,
                    Err(err) => {
                        tracing::warn!(error = ?err.log, "reading the kill switch failed")
                    }
                }
            }
        }
    }

    /// Tells the other instances whose sockets are open here and asks them for theirs (on
    /// joining, and after messages may have been missed).
    fn exchange_watching(&self) {
        self.events.announce_watching();
        self.cluster.send(Message::WhoIsWatching);
    }

    fn sweep_caches(&self) {
        self.sessions.sweep();
        self.events.sweep();
        self.engine.evict_idle();
        self.db.leases.sweep(store::now_ms());
        if let Some(limiter) = &self.memory_limiter {
            limiter.sweep(self.config.failed_login_window.max(ratelimit::MINUTE));
        }
    }

    /// Background work of a running server: mail delivery, the bot scheduler, the order
    /// supervisor and cache sweeping.
    fn spawn_background(&self) {
        self.join_cluster();
        let mail = self.clone();
        tokio::spawn(async move { mail.mailer.run(&mail).await });
        notify::spawn(self);
        tokio::spawn(engine::run(self.clone()));
        tokio::spawn(engine::supervisor::run(self.clone()));
        tokio::spawn(engine::leases::run(self.clone()));
        tokio::spawn(performance::run(self.clone()));
        tokio::spawn(retention::run(self.clone()));
        let sweeper = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                sweeper.sweep_caches();
                if let Err(err) = sweeper.usage.flush(&sweeper).await {
                    tracing::warn!(error = %err, "writing API-call counts failed");
                }
                if let Err(err) = export::sweep(&sweeper).await {
                    tracing::warn!(error = %err, "removing expired exports failed");
                }
                if sweeper.runs_job("renewals", Duration::from_secs(60)).await
                    && let Err(err) = billing::subscriptions::renew_due(&sweeper).await
                {
                    tracing::error!(error = %err, "renewing subscriptions failed");
                }
            }
        });
    }
}

/// The server: state, fairings, routes and catchers, and the background tasks started at liftoff.
pub fn rocket(figment: Figment, app: App) -> Rocket<Build> {
    let extra_ports = figment.clone();
    let web_dir = app.config.web_dir.clone();
    let rocket = rocket::custom(figment)
        .manage(app)
        .attach(api::request_id::RequestIdFairing)
        .attach(ratelimit::RateLimitFairing)
        .attach(api::query::QueryFairing)
        .attach(AdHoc::on_liftoff("background tasks", |rocket| {
            Box::pin(async move {
                let app = rocket.state::<App>().expect("App is managed");
                if let Err(err) = backtest::runs::recover(app).await {
                    tracing::warn!(error = ?err.log, "marking interrupted backtests failed");
                }
                app.spawn_background();
                if let Err(err) = companion::restart::write_pid_file(&app.config.data_dir) {
                    tracing::warn!(error = %err, "`tradehost restart` will not find this server");
                }
                companion::restart::listen_for_signals(app.clone(), rocket.shutdown());
                launch_extra_ports(&extra_ports, app);
                let config = rocket.config();
                // Supervisors and the black-box tests wait for this line; it carries the bound port.
                tracing::info!(
                    "tradehost {VERSION} listening on http://{}:{} (database: {})",
                    config.address,
                    config.port,
                    app.db.backend.name()
                );
            })
        }))
        .attach(AdHoc::on_shutdown("pid file", |rocket| {
            Box::pin(async move {
                if let Some(app) = rocket.state::<App>() {
                    engine::leases::leave(app).await;
                    companion::restart::remove_pid_file(&app.config.data_dir);
                }
            })
        }));
    api::web::mount(api::mount(rocket), web_dir.as_deref())
}

/// Serves the companion sets on their historical ports too, when configured
/// (`TRADEHOST_DASHBOARD_PORT`, `TRADEHOST_COMPANION_PORT`).
fn launch_extra_ports(figment: &Figment, app: &App) {
    for (port, dashboard) in [
        (app.config.dashboard_port, true),
        (app.config.companion_port, false),
    ] {
        let Some(port) = port else { continue };
        let server = rocket::custom(figment.clone().merge(("port", port)))
            .manage(app.clone())
            .attach(api::request_id::RequestIdFairing)
            .attach(ratelimit::RateLimitFairing)
            .attach(api::query::QueryFairing);
        let server = api::mount_extra_port(server, dashboard);
        let set = if dashboard {
            "dashboard"
        } else {
            "ledger, KPI and restart"
        };
        tracing::info!("the {set} routes are also served on port {port}");
        tokio::spawn(async move {
            if let Err(err) = server.launch().await {
                tracing::error!(error = %err, port, "the {set} port stopped");
            }
        });
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use rocket::local::asynchronous::Client;

    use super::*;

    /// An application on a temporary SQLite database (no server), taking payments through
    /// `payments`.
    pub async fn app_with_payments(
        payments: Box<dyn billing::provider::PaymentProvider>,
    ) -> (App, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_string_lossy().to_string();
        let lookup = move |name: &str| match name {
            "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
            _ => None,
        };
        let figment = AppConfig::rocket_figment(&lookup).unwrap();
        let config = AppConfig::load(&figment, &lookup).unwrap();
        (
            App::init_with_payments(config, payments).await.unwrap(),
            dir,
        )
    }

    /// An in-process server on a temporary SQLite database, for route-module tests.
    pub async fn client() -> (Client, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_string_lossy().to_string();
        let lookup = move |name: &str| match name {
            "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
            "TRADEHOST_AUTH_RATE_LIMIT" => Some("1000".to_string()),
            _ => None,
        };
        let figment = AppConfig::rocket_figment(&lookup).unwrap();
        let config = AppConfig::load(&figment, &lookup).unwrap();
        let app = App::init(config).await.unwrap();
        (Client::tracked(rocket(figment, app)).await.unwrap(), dir)
    }
}
