//! Mail delivery from the outbox: through SMTP when `TRADEHOST_SMTP_URL` is set, otherwise each
//! mail is written to the log (and stays in the outbox table) for the operator to pass on.
//!
//! Mail that carries a secret (a password-reset link) is different: its body is sealed with the
//! vault in the outbox, opened only to be sent, and erased once delivered. Without SMTP it is
//! never logged: it is held, and the operator reads it with `tradehost mail show --to <address>`.

use std::time::Duration;

use anyhow::{Context, Result};
use lettre::message::Mailbox;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::sync::Notify;

use crate::store::{Db, outbox};

/// How often pending mail is looked at without being woken (retries, other instances' mail).
const RETRY_EVERY: Duration = Duration::from_secs(30);
use crate::vault::Vault;

const MAX_ATTEMPTS: i64 = 8;

/// Kinds of mail whose body carries a secret.
const SENSITIVE_KINDS: [&str; 1] = ["password_reset"];

pub fn is_sensitive(kind: &str) -> bool {
    SENSITIVE_KINDS.contains(&kind)
}

/// The body to store for a mail of `kind` to `to_address` (sealed when it carries a secret).
pub fn stored_body(vault: &Vault, kind: &str, to_address: &str, body: &str) -> String {
    if is_sensitive(kind) {
        vault.seal(&sealing_owner(to_address), body)
    } else {
        body.to_string()
    }
}

/// The readable body of a stored mail.
pub fn readable_body(vault: &Vault, mail: &outbox::MailRow) -> Result<String> {
    if is_sensitive(&mail.kind) {
        Ok(vault.open(&sealing_owner(&mail.to_address), &mail.body)?)
    } else {
        Ok(mail.body.clone())
    }
}

/// The associated data a sealed body is bound to: it opens only as mail to that address.
fn sealing_owner(to_address: &str) -> String {
    format!("mail:{to_address}")
}

pub struct Mailer {
    transport: Option<AsyncSmtpTransport<Tokio1Executor>>,
    from: Mailbox,
    wake: Notify,
}

impl Mailer {
    pub fn new(smtp_url: Option<&str>, from: &str) -> Result<Self> {
        let transport = match smtp_url {
            Some(url) => Some(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .context("TRADEHOST_SMTP_URL is not a valid SMTP URL (smtp://, smtps://user:pass@host:port)")?
                    .timeout(Some(Duration::from_secs(20)))
                    .build(),
            ),
            None => None,
        };
        let from = from
            .parse()
            .with_context(|| format!("TRADEHOST_MAIL_FROM is not a mailbox: {from:?}"))?;
        Ok(Self {
            transport,
            from,
            wake: Notify::new(),
        })
    }

    /// Tells the delivery task there is something new in the outbox.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// Delivers pending mail until the process ends; wakes on new mail and every 30 s for retries.
    /// With several instances, only the one holding the `mail` job delivers.
    pub async fn run(&self, app: &crate::App) {
        loop {
            if app.runs_job("mail", RETRY_EVERY).await
                && let Err(err) = self.deliver_pending(&app.db, &app.vault).await
            {
                tracing::warn!("mail delivery pass failed: {err:#}");
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(RETRY_EVERY) => {}
            }
        }
    }

    pub async fn deliver_pending(&self, db: &Db, vault: &Vault) -> Result<()> {
        for mail in outbox::pending(db, 50).await? {
            let Some(transport) = &self.transport else {
                if is_sensitive(&mail.kind) {
                    tracing::info!(
                        mail_id = %mail.id,
                        to = %mail.to_address,
                        subject = %mail.subject,
                        "no SMTP server configured; this mail carries a secret and is held \
                         (`tradehost mail show --to {}` prints it)",
                        mail.to_address
                    );
                    outbox::record_attempt(db, &mail.id, "held", None).await?;
                    continue;
                }
                tracing::info!(
                    mail_id = %mail.id,
                    to = %mail.to_address,
                    subject = %mail.subject,
                    "no SMTP server configured; mail kept in the outbox:\n{}",
                    mail.body
                );
                outbox::record_attempt(db, &mail.id, "logged", None).await?;
                continue;
            };
            let result = async {
                let message = Message::builder()
                    .from(self.from.clone())
                    .to(mail.to_address.parse()?)
                    .subject(&mail.subject)
                    .body(readable_body(vault, &mail)?)?;
                transport.send(message).await?;
                anyhow::Ok(())
            }
            .await;
            match result {
                Ok(()) => {
                    outbox::record_attempt(db, &mail.id, "sent", None).await?;
                    if is_sensitive(&mail.kind) {
                        outbox::erase_body(db, &mail.id).await?;
                    }
                }
                Err(err) => {
                    let status = if mail.attempts + 1 >= MAX_ATTEMPTS {
                        "failed"
                    } else {
                        "pending"
                    };
                    tracing::warn!(mail_id = %mail.id, attempts = mail.attempts + 1, "mail delivery failed: {err:#}");
                    outbox::record_attempt(db, &mail.id, status, Some(&format!("{err:#}"))).await?;
                }
            }
        }
        Ok(())
    }
}
