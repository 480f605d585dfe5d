//! The sender: posts queued deliveries to users' webhooks, signed with the user's secret, and
//! retries a failed one with exponential backoff until it is delivered or given up.
//!
//! Every post carries `X-Tradehost-Event`, `X-Tradehost-Delivery`, `X-Tradehost-Timestamp`
//! (Unix seconds) and `X-Tradehost-Signature: sha256=<hex>`, the HMAC-SHA256 with the user's
//! secret of `<timestamp>.<body>`; a receiver recomputes it and refuses old timestamps. The
//! connection dials only public addresses (checked on what the name resolves to at that moment)
//! unless the operator allows the private network.

use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tokio::task::JoinSet;

use super::render;
use super::webhooks::{Format, sealing_owner};
use crate::App;
use crate::notices::Kind;
use crate::plugins::egress::{self, Egress};
use crate::store::notifications::{self, Attempt, DeliveryRow, WebhookRow};
use crate::store::{iso8601, now_ms};

pub const SIGNATURE_HEADER: &str = "X-Tradehost-Signature";
/// Attempts before a delivery is given up.
pub const MAX_ATTEMPTS: i64 = 8;
/// Deliveries sent at once.
const CONCURRENCY: usize = 16;
const TIMEOUT: Duration = Duration::from_secs(10);
/// How long a taken delivery is kept from others (longer than an attempt can last).
const LEASE_MS: i64 = 60_000;
/// Discord refuses content over 2,000 characters, Telegram text over 4,096; Slack folds long text.
const DISCORD_MAX_CHARS: usize = 2000;
const TELEGRAM_MAX_CHARS: usize = 4096;
const SLACK_MAX_CHARS: usize = 3000;

pub async fn run(app: App) {
    let agent = Arc::new(egress::checked_agent(
        Egress {
            allow_private_network: app.config.notify_allow_private_network,
        },
        CONCURRENCY,
    ));
    loop {
        match send_due(&app, &agent).await {
            Ok(count) if count == CONCURRENCY => continue,
            Ok(_) => {}
            Err(err) => tracing::warn!("sending webhook deliveries failed: {err:#}"),
        }
        tokio::select! {
            _ = app.notifier.send.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// The wait before attempt `attempts + 1`: the base doubled per attempt, at most a day.
pub fn backoff_ms(base_ms: i64, attempts: i64) -> i64 {
    base_ms
        .saturating_mul(1_i64 << attempts.clamp(0, 30))
        .min(86_400_000)
}

/// The signature header's value for `body` sent at `timestamp`.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// The body posted for a delivery, in the webhook's format.
pub fn body(format: Format, chat_id: Option<&str>, delivery: &DeliveryRow) -> Vec<u8> {
    let payload: Value = serde_json::from_str(&delivery.payload).unwrap_or(Value::Null);
    let message = || {
        Kind::parse(&delivery.kind)
            .map(|kind| render::message(kind, &payload))
            .unwrap_or_else(|| render::Message {
                title: delivery.kind.clone(),
                lines: vec![],
            })
    };
    let value = match format {
        Format::Json => json!({
            "id": delivery.event_id,
            "type": delivery.kind,
            "created_at": iso8601(delivery.created_at),
            "data": payload,
        }),
        Format::Discord => json!({"content": message().text_within(DISCORD_MAX_CHARS)}),
        Format::Slack => json!({"text": message().text_within(SLACK_MAX_CHARS)}),
        Format::Telegram => json!({
            "chat_id": chat_id.unwrap_or_default(),
            "text": message().text_within(TELEGRAM_MAX_CHARS),
        }),
    };
    serde_json::to_vec(&value).expect("JSON serialises")
}

/// What one post came to.
#[derive(Debug, PartialEq)]
enum Outcome {
    Delivered(u16),
    /// Worth retrying (a timeout, a 5xx, a 429, a refused connection).
    Retry(Option<u16>, String),
    /// Not worth retrying (the receiver refused it for good, or the address is not allowed).
    GiveUp(Option<u16>, String),
}

fn classify(status: u16) -> Outcome {
    match status {
        200..=299 => Outcome::Delivered(status),
        408 | 425 | 429 | 500..=599 => Outcome::Retry(Some(status), format!("HTTP {status}")),
        _ => Outcome::GiveUp(Some(status), format!("HTTP {status}")),
    }
}

fn post(agent: &ureq::Agent, url: &str, headers: &[(&str, String)], body: Vec<u8>) -> Outcome {
    let mut request = agent
        .post(url)
        .config()
        .timeout_global(Some(TIMEOUT))
        .build()
        .header("Content-Type", "application/json")
        .header(
            "User-Agent",
            concat!("tradehost/", env!("CARGO_PKG_VERSION")),
        );
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    match request.send(&body[..]) {
        Ok(response) => classify(response.status().as_u16()),
        Err(err) => match egress::refusal(&err) {
            Some(why) => Outcome::GiveUp(None, why),
            None => Outcome::Retry(None, err.to_string()),
        },
    }
}

/// Sends what is due; how many it took.
pub async fn send_due(app: &App, agent: &Arc<ureq::Agent>) -> anyhow::Result<usize> {
    let now = now_ms();
    let due = notifications::due_deliveries(&app.db, now, CONCURRENCY as i64).await?;
    let taken = due.len();
    let mut sends = JoinSet::new();
    for delivery in due {
        if !notifications::claim(&app.db, &delivery, now + LEASE_MS).await? {
            continue;
        }
        let (app, agent) = (app.clone(), agent.clone());
        sends.spawn(async move {
            let outcome = attempt(&app, &agent, &delivery).await;
            record(&app, &delivery, outcome).await
        });
    }
    while let Some(done) = sends.join_next().await {
        if let Ok(Err(err)) = done {
            tracing::warn!("recording a webhook delivery failed: {err:#}");
        }
    }
    Ok(taken)
}

async fn attempt(app: &App, agent: &Arc<ureq::Agent>, delivery: &DeliveryRow) -> Outcome {
    let webhook: WebhookRow =
        match notifications::webhook(&app.db, &delivery.user_id, &delivery.webhook_id).await {
            Ok(Some(webhook)) => webhook,
            Ok(None) => return Outcome::GiveUp(None, "the webhook was removed".into()),
            Err(err) => return Outcome::Retry(None, format!("loading the webhook: {err}")),
        };
    let owner = sealing_owner(&delivery.user_id);
    let secret = match notifications::secret(&app.db.pool, &delivery.user_id).await {
        Ok(Some(sealed)) => app.vault.open(&owner, &sealed).ok(),
        _ => None,
    };
    let (Ok(url), Some(secret)) = (app.vault.open(&owner, &webhook.url_sealed), secret) else {
        return Outcome::GiveUp(None, "the webhook's URL or secret cannot be opened".into());
    };
    let format = Format::parse(&webhook.format).unwrap_or(Format::Json);
    let body = body(format, webhook.chat_id.as_deref(), delivery);
    let timestamp = now_ms() / 1000;
    let headers = [
        ("X-Tradehost-Event", delivery.kind.clone()),
        ("X-Tradehost-Delivery", delivery.id.clone()),
        ("X-Tradehost-Timestamp", timestamp.to_string()),
        (SIGNATURE_HEADER, signature(&secret, timestamp, &body)),
    ];
    let agent = agent.clone();
    tokio::task::spawn_blocking(move || post(&agent, &url, &headers, body))
        .await
        .unwrap_or_else(|err| Outcome::Retry(None, format!("the sender failed: {err}")))
}

async fn record(app: &App, delivery: &DeliveryRow, outcome: Outcome) -> anyhow::Result<()> {
    let now = now_ms();
    let attempts = delivery.attempts + 1;
    let attempt = match &outcome {
        Outcome::Delivered(status) => Attempt {
            status: "delivered",
            http_status: Some(i64::from(*status)),
            error: None,
            next_attempt_at: now,
        },
        Outcome::Retry(status, error) if attempts < MAX_ATTEMPTS => Attempt {
            status: "pending",
            http_status: status.map(i64::from),
            error: Some(error),
            next_attempt_at: now + backoff_ms(app.config.notify_retry_base_ms, attempts - 1),
        },
        Outcome::Retry(status, error) | Outcome::GiveUp(status, error) => Attempt {
            status: "failed",
            http_status: status.map(i64::from),
            error: Some(error),
            next_attempt_at: now,
        },
    };
    if attempt.status == "failed" {
        tracing::warn!(delivery_id = %delivery.id, webhook_id = %delivery.webhook_id, attempts, error = ?attempt.error, "a webhook delivery is given up");
    }
    notifications::record_attempt(&app.db, &delivery.id, &attempt).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delivery(kind: &str, payload: Value) -> DeliveryRow {
        DeliveryRow {
            id: "d1".into(),
            webhook_id: "w1".into(),
            user_id: "u1".into(),
            event_id: "e1".into(),
            kind: kind.into(),
            payload: payload.to_string(),
            status: "pending".into(),
            attempts: 0,
            next_attempt_at: 0,
            last_status: None,
            last_error: None,
            created_at: 1_767_225_600_000,
            delivered_at: None,
        }
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_timestamp_dot_body() {
        // Computed independently: printf '1767225600.{"a":1}' | openssl dgst -sha256 -hmac whsec_test
        assert_eq!(
            signature("whsec_test", 1_767_225_600, br#"{"a":1}"#),
            "sha256=6d204545ff126a339c00513d93603299c984074ce1331c3537c3f6c976b49019"
        );
    }

    #[test]
    fn each_format_writes_what_its_service_reads() {
        let delivery = delivery(
            "alarm",
            json!({"level": "CRITICAL", "alarm_type": "drawdown"}),
        );
        let json: Value = serde_json::from_slice(&body(Format::Json, None, &delivery)).unwrap();
        assert_eq!(json["id"], "e1");
        assert_eq!(json["type"], "alarm");
        assert_eq!(json["created_at"], "2026-01-01T00:00:00.000Z");
        assert_eq!(json["data"]["level"], "CRITICAL");
        let discord: Value =
            serde_json::from_slice(&body(Format::Discord, None, &delivery)).unwrap();
        assert!(
            discord["content"]
                .as_str()
                .unwrap()
                .starts_with("CRITICAL alarm: drawdown")
        );
        let slack: Value = serde_json::from_slice(&body(Format::Slack, None, &delivery)).unwrap();
        assert!(
            slack["text"]
                .as_str()
                .unwrap()
                .starts_with("CRITICAL alarm: drawdown")
        );
        let telegram: Value =
            serde_json::from_slice(&body(Format::Telegram, Some("-100123"), &delivery)).unwrap();
        assert_eq!(telegram["chat_id"], "-100123");
        assert!(telegram["text"].as_str().unwrap().contains("drawdown"));
    }

    #[test]
    fn statuses_are_delivered_retried_or_given_up() {
        assert_eq!(classify(204), Outcome::Delivered(204));
        assert!(matches!(classify(503), Outcome::Retry(Some(503), _)));
        assert!(matches!(classify(429), Outcome::Retry(Some(429), _)));
        assert!(matches!(classify(404), Outcome::GiveUp(Some(404), _)));
        assert!(matches!(classify(410), Outcome::GiveUp(Some(410), _)));
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff_ms(30_000, 0), 30_000);
        assert_eq!(backoff_ms(30_000, 3), 240_000);
        assert_eq!(backoff_ms(30_000, 40), 86_400_000);
    }
}
