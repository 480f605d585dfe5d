//! Companion set C: a graceful restart of the trading engine, from `POST /api/restart` (admin)
//! or from `tradehost restart`, which signals the running server (SIGHUP) through the pid file
//! the server keeps in its data directory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::json;

use crate::App;
use crate::auth::{ClientMeta, Principal};
use crate::error::ApiResult;
use crate::store::audit::{self, Actor};
use crate::store::{iso8601, now_ms};

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Restarted {
    pub success: bool,
    pub message: String,
    pub pid: u32,
    pub bots_restarted: usize,
    pub timestamp: String,
}

/// Restarts the engine (closing positions first when the operator configured it) and audits it.
pub async fn restart(app: &App, by: Option<(&Principal, &ClientMeta)>) -> ApiResult<Restarted> {
    let close = app.config.close_positions_on_restart;
    let restarted = crate::engine::restart::restart(app, close).await?;
    let actor = Actor {
        user_id: by.map(|(user, _)| user.user_id.as_str()),
        ip_address: by.and_then(|(_, meta)| meta.ip.as_deref()),
        user_agent: by.and_then(|(_, meta)| meta.user_agent.as_deref()),
    };
    audit::record(
        &app.db.pool,
        "engine.restarted",
        &actor,
        json!({"bots_restarted": restarted, "closed_positions": close, "exit": app.config.exit_on_restart}),
    )
    .await?;
    let message = if app.config.exit_on_restart {
        "Trading engine saved its state; the server exits for its supervisor to restart it"
    } else {
        "Trading engine restarted"
    };
    Ok(Restarted {
        success: true,
        message: message.into(),
        pid: std::process::id(),
        bots_restarted: restarted,
        timestamp: iso8601(now_ms()),
    })
}

pub fn pid_file(data_dir: &Path) -> PathBuf {
    data_dir.join("tradehost.pid")
}

/// Records this server's pid for `tradehost restart`.
pub fn write_pid_file(data_dir: &Path) -> Result<()> {
    std::fs::write(pid_file(data_dir), format!("{}\n", std::process::id()))
        .context("writing the pid file")
}

/// Removes the pid file if it is still this process's.
pub fn remove_pid_file(data_dir: &Path) {
    let path = pid_file(data_dir);
    if std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| text.trim().parse::<u32>().ok())
        == Some(std::process::id())
    {
        let _ = std::fs::remove_file(path);
    }
}

/// Sends SIGHUP to the server recorded in the data directory's pid file; returns its pid.
pub fn signal_running_server(data_dir: &Path) -> Result<u32> {
    use rustix::process::{Pid, Signal, kill_process, test_kill_process};
    let path = pid_file(data_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(_) => bail!(
            "no running tradehost server found ({} does not exist)",
            path.display()
        ),
    };
    let raw: i32 = text
        .trim()
        .parse()
        .with_context(|| format!("{} does not hold a pid", path.display()))?;
    let pid = Pid::from_raw(raw).context("the pid file holds an invalid pid")?;
    if test_kill_process(pid).is_err() {
        bail!("no running tradehost server found (pid {raw} is not running)");
    }
    kill_process(pid, Signal::HUP).with_context(|| format!("signalling pid {raw}"))?;
    Ok(raw as u32)
}

/// Restarts the engine on every SIGHUP, for as long as the server runs.
pub fn listen_for_signals(app: App, shutdown: rocket::Shutdown) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => hangups,
        Err(err) => {
            tracing::warn!(error = %err, "cannot listen for SIGHUP; `tradehost restart` will not work");
            return;
        }
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP received: restarting the trading engine");
            match restart(&app, None).await {
                Ok(_) if app.config.exit_on_restart => shutdown.clone().notify(),
                Ok(_) => {}
                Err(err) => tracing::error!(error = %err, "restarting the trading engine failed"),
            }
        }
    });
}
