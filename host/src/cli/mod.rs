//! The `tradehost` command line: serve (default), migrate, admin, plugin, restart, vault, mail,
//! candles.

mod backtest;
mod candles;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::auth::service::{self, AdminOutcome};
use crate::config::{AppConfig, process_env};
use crate::store::Db;
use crate::{App, VERSION};

#[derive(Debug, Parser)]
#[command(name = "tradehost", version = VERSION, about = "Self-hostable trading automation platform")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the server (the default).
    Serve,
    /// Apply pending database migrations and exit.
    Migrate,
    /// Manage administrators (the only way to make one).
    Admin {
        #[command(subcommand)]
        action: AdminCommand,
    },
    /// Work with plugin components.
    Plugin {
        #[command(subcommand)]
        action: PluginCommand,
    },
    /// Restart the trading engine of the server running on this data directory, gracefully:
    /// bots save their state (closing positions first with
    /// TRADEHOST_CLOSE_POSITIONS_ON_RESTART=true) and are loaded again.
    Restart,
    /// The broker-credential vault.
    Vault {
        #[command(subcommand)]
        action: VaultCommand,
    },
    /// The mail outbox.
    Mail {
        #[command(subcommand)]
        action: MailCommand,
    },
    /// Historical candles for backtests: import, download, list, gaps, delete.
    Candles {
        #[command(subcommand)]
        action: candles::CandlesCommand,
    },
    /// Backtest a strategy over stored candles (downloaded through the broker named by
    /// --source when the store lacks them) or a CSV file.
    Backtest(Box<backtest::BacktestArgs>),
}

#[derive(Debug, Subcommand)]
pub enum MailCommand {
    /// Print the undelivered mail to an address, newest first: without SMTP, mail that carries
    /// a secret (a password-reset link) is held in the outbox, sealed, for the operator to pass on.
    Show {
        #[arg(long)]
        to: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum VaultCommand {
    /// Re-encrypt every stored broker secret under a new key, in one transaction. Stop the
    /// server first; start it again with the new key (written to the data directory on the
    /// embedded default, to be set as VAULT_ENCRYPTION_KEY otherwise).
    RotateKey {
        /// The new 32-byte key as 64 hex digits or base64 (default: a fresh random key).
        #[arg(long, env = "TRADEHOST_NEW_VAULT_KEY", hide_env_values = true)]
        new_key: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// Compile a component, type-check it against its world and ask it to describe itself:
    /// the checks an upload must pass.
    Check {
        /// The component (.wasm).
        file: std::path::PathBuf,
        /// Its manifest (default: plugin.toml beside the file).
        #[arg(long)]
        manifest: Option<std::path::PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create an admin, or promote the existing user with this e-mail.
    Create {
        #[arg(long)]
        email: String,
        /// The password (or set TRADEHOST_ADMIN_PASSWORD to keep it out of the process list).
        #[arg(long, env = "TRADEHOST_ADMIN_PASSWORD", hide_env_values = true)]
        password: String,
    },
    /// Give an existing user the admin role.
    Promote {
        #[arg(long)]
        email: String,
    },
}

pub fn init_tracing(debug: bool) {
    use tracing_subscriber::EnvFilter;
    // Rocket's own launch banner and request lines are replaced by ours.
    let default = if debug {
        "debug,hyper=info,rocket=error,sqlx=warn"
    } else {
        "info,rocket=error,sqlx=warn"
    };
    let filter =
        EnvFilter::try_from_env("TRADEHOST_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_ansi(ansi)
        .try_init();
}

pub async fn run(cli: Cli) -> Result<()> {
    let figment = AppConfig::rocket_figment(&process_env)?;
    let config = AppConfig::load(&figment, &process_env)?;
    init_tracing(config.debug);
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let app = App::init(config).await?;
            let _ = crate::rocket(figment, app)
                .launch()
                .await
                .context("the server stopped with an error")?;
            Ok(())
        }
        Command::Migrate => {
            let db = Db::connect(&config.database_url).await?;
            db.migrate().await?;
            println!("database migrated ({})", db.backend.name());
            Ok(())
        }
        Command::Restart => {
            let pid = crate::companion::restart::signal_running_server(&config.data_dir)?;
            println!("restart signal sent to tradehost (pid {pid})");
            Ok(())
        }
        Command::Plugin {
            action: PluginCommand::Check { file, manifest },
        } => check_plugin(&config, &file, manifest.as_deref()),
        Command::Mail {
            action: MailCommand::Show { to },
        } => show_mail(&config, &to).await,
        Command::Candles { action } => candles::run(&config, action).await,
        Command::Backtest(args) => backtest::run(&config, *args).await,
        Command::Vault {
            action: VaultCommand::RotateKey { new_key },
        } => {
            let rotated = crate::vault::rotate_key(&config, new_key.as_deref()).await?;
            println!("{rotated}");
            Ok(())
        }
        Command::Admin { action } => {
            let db = Db::connect(&config.database_url).await?;
            db.migrate().await?;
            let outcome = match action {
                AdminCommand::Create { email, password } => {
                    service::create_admin(&db, &email, &password).await?
                }
                AdminCommand::Promote { email } => service::promote_admin(&db, &email).await?,
            };
            match outcome {
                AdminOutcome::Created(id) => println!("created admin {id}"),
                AdminOutcome::Promoted(id) => println!("promoted user {id} to admin"),
                AdminOutcome::AlreadyAdmin(id) => println!("user {id} is already an admin"),
            }
            Ok(())
        }
    }
}

fn check_plugin(
    config: &AppConfig,
    file: &std::path::Path,
    manifest: Option<&std::path::Path>,
) -> Result<()> {
    use crate::plugins::{Manifest, PluginRuntime, Registry};
    let manifest_path = match manifest {
        Some(path) => path.to_path_buf(),
        None => file
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join("plugin.toml"),
    };
    let manifest_text = std::fs::read_to_string(&manifest_path).with_context(|| {
        format!(
            "cannot read the manifest {} (use --manifest)",
            manifest_path.display()
        )
    })?;
    let manifest = Manifest::from_toml(&manifest_text).map_err(anyhow::Error::msg)?;
    let wasm = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let runtime = std::sync::Arc::new(
        PluginRuntime::new(Some(&config.plugin_cache_dir), config.plugin_limits)?.with_egress(
            crate::plugins::egress::Egress {
                allow_private_network: config.plugin_allow_private_network,
            },
        ),
    );
    let registry = Registry::new(runtime, None, None);
    let plugin = registry
        .check(&wasm, &manifest, false)
        .map_err(|err| anyhow::anyhow!("{err}"))?;
    let report = serde_json::json!({
        "ok": true,
        "name": plugin.manifest.name,
        "kind": plugin.manifest.kind,
        "version": plugin.manifest.version,
        "sha256": plugin.sha256,
        "describe": plugin.description,
        "config": plugin.manifest.config,
        "allowed_hosts": plugin.manifest.allowed_hosts,
    });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}

async fn show_mail(config: &AppConfig, to: &str) -> Result<()> {
    let db = Db::connect(&config.database_url).await?;
    db.migrate().await?;
    let vault = crate::vault::Vault::new(&crate::secrets::resolve(config)?.vault_key);
    let mails = crate::store::outbox::undelivered_to(&db, to.trim()).await?;
    if mails.is_empty() {
        println!("no undelivered mail to {to}");
    }
    for mail in mails {
        let body = crate::mail::readable_body(&vault, &mail).with_context(|| {
            format!("mail {} does not open with the current vault key", mail.id)
        })?;
        println!(
            "mail {} ({}, {}) to {}\nSubject: {}\n\n{}\n",
            mail.id, mail.kind, mail.status, mail.to_address, mail.subject, body
        );
    }
    Ok(())
}
