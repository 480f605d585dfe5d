//! A user's outgoing webhooks: where their notifications are posted, in which format, for which
//! events; and the secret every post is signed with.

use std::net::IpAddr;

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::App;
use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::notices::{Kind, record};
use crate::plugins::egress;
use crate::store::notifications::{self, DeliveryRow, WebhookRow};
use crate::store::{iso8601, new_id, now_ms};

/// Webhooks one user may have.
pub const MAX_WEBHOOKS: i64 = 10;
const MAX_URL_CHARS: usize = 2048;

/// How a webhook's posts are written.
#[derive(utoipa::ToSchema, Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `{id, type, created_at, data}`, the event's own fields.
    Json,
    /// A Discord webhook: `{content}`.
    Discord,
    /// A Slack incoming webhook: `{text}`.
    Slack,
    /// The Telegram Bot API's sendMessage: `{chat_id, text}`.
    Telegram,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Discord => "discord",
            Format::Slack => "slack",
            Format::Telegram => "telegram",
        }
    }

    pub fn parse(text: &str) -> Option<Format> {
        [
            Format::Json,
            Format::Discord,
            Format::Slack,
            Format::Telegram,
        ]
        .into_iter()
        .find(|format| format.as_str() == text)
    }
}

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[schema(as = NewNotificationWebhook)]
pub struct NewWebhook {
    pub url: String,
    #[serde(default)]
    pub format: Option<Format>,
    /// The kinds to send; every kind when absent.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// Telegram's chat to post to (required with the telegram format).
    #[serde(default)]
    pub chat_id: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct WebhookView {
    pub id: String,
    /// The URL's scheme, host and port: a path or query may carry the service's token.
    pub url: String,
    pub format: String,
    pub events: Vec<String>,
    pub chat_id: Option<String>,
    pub created_at: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = NotificationWebhooks)]
pub struct Webhooks {
    pub webhooks: Vec<WebhookView>,
    pub events: Vec<&'static str>,
    pub signature_header: &'static str,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = NotificationWebhookAdded)]
pub struct Added {
    pub webhook: WebhookView,
    /// The signing secret, when this webhook is the user's first (shown once; rotating it
    /// shows a new one).
    pub secret: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = NotificationSecret)]
pub struct Secret {
    pub secret: String,
    pub message: &'static str,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct DeliveryView {
    pub id: String,
    pub event_id: String,
    pub event: String,
    pub status: String,
    pub attempts: i64,
    pub last_http_status: Option<i64>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub delivered_at: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = NotificationDeliveries)]
pub struct Deliveries {
    pub webhook_id: String,
    pub deliveries: Vec<DeliveryView>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = NotificationTestQueued)]
pub struct Queued {
    pub message: &'static str,
    pub webhook_id: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = NotificationWebhookRemoved)]
pub struct Removed {
    pub message: &'static str,
    pub webhook_id: String,
}

fn view(row: &WebhookRow) -> WebhookView {
    WebhookView {
        id: row.id.clone(),
        url: row.url_display.clone(),
        format: row.format.clone(),
        events: serde_json::from_str(&row.events).unwrap_or_default(),
        chat_id: row.chat_id.clone(),
        created_at: iso8601(row.created_at),
    }
}

fn delivery_view(row: &DeliveryRow) -> DeliveryView {
    DeliveryView {
        id: row.id.clone(),
        event_id: row.event_id.clone(),
        event: row.kind.clone(),
        status: row.status.clone(),
        attempts: row.attempts,
        last_http_status: row.last_status,
        last_error: row.last_error.clone(),
        next_attempt_at: (row.status == "pending").then(|| iso8601(row.next_attempt_at)),
        created_at: iso8601(row.created_at),
        delivered_at: row.delivered_at.map(iso8601),
    }
}

/// The vault owner a user's webhook data is sealed for.
pub(super) fn sealing_owner(user_id: &str) -> String {
    format!("notify:{user_id}")
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, message)
}

/// Checks a webhook URL: https (http too when the operator allows the private network), a host,
/// no credentials, and no address on a private network unless the operator allows it. Gives
/// what may be shown of it: scheme, host and port.
pub async fn check_url(url: &str, allow_private_network: bool) -> ApiResult<String> {
    if url.len() > MAX_URL_CHARS {
        return Err(invalid(format!(
            "url is longer than {MAX_URL_CHARS} characters"
        )));
    }
    let uri: ureq::http::Uri = url.parse().map_err(|_| invalid("url is not a valid URL"))?;
    let scheme = uri.scheme_str().unwrap_or_default();
    match scheme {
        "https" => {}
        "http" if allow_private_network => {}
        _ => return Err(invalid("url must start with https://")),
    }
    let authority = uri.authority().ok_or_else(|| invalid("url has no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid("url must not carry a user name or password"));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(invalid("url has no host"));
    }
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    if !allow_private_network {
        let lowered = host.to_ascii_lowercase();
        if lowered == "localhost" || lowered.ends_with(".localhost") {
            return Err(invalid("url must not point at this machine (localhost)"));
        }
        let addresses: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            // A name that does not resolve now is checked again on every delivery, on the
            // addresses the connection dials.
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map(|found| found.map(|a| a.ip()).collect())
                .unwrap_or_default(),
        };
        if let Some((ip, why)) = addresses
            .iter()
            .find_map(|ip| egress::forbidden(*ip).map(|why| (ip, why)))
        {
            return Err(invalid(format!(
                "url must not point at a private network: {host} is {ip}, a {why} address"
            )));
        }
    }
    Ok(match uri.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

fn check_events(events: Option<Vec<String>>) -> ApiResult<Vec<String>> {
    let Some(events) = events else {
        return Ok(Kind::SUBSCRIBABLE
            .iter()
            .map(|kind| kind.as_str().to_string())
            .collect());
    };
    if events.is_empty() {
        return Err(invalid("events must name at least one event"));
    }
    let mut chosen = Vec::new();
    for name in events {
        if !Kind::SUBSCRIBABLE.iter().any(|kind| kind.as_str() == name) {
            let known: Vec<&str> = Kind::SUBSCRIBABLE.iter().map(|k| k.as_str()).collect();
            return Err(invalid(format!(
                "events: unknown event {name:?} (known: {})",
                known.join(", ")
            )));
        }
        if !chosen.contains(&name) {
            chosen.push(name);
        }
    }
    Ok(chosen)
}

fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("whsec_{}", hex::encode(bytes))
}

pub async fn list(app: &App, user: &Principal) -> ApiResult<Webhooks> {
    let rows = notifications::webhooks(&app.db.pool, Some(&user.user_id)).await?;
    Ok(Webhooks {
        webhooks: rows.iter().map(view).collect(),
        events: Kind::SUBSCRIBABLE.iter().map(|k| k.as_str()).collect(),
        signature_header: super::delivery::SIGNATURE_HEADER,
    })
}

pub async fn add(app: &App, user: &Principal, request: NewWebhook) -> ApiResult<Added> {
    let format = request.format.unwrap_or(Format::Json);
    let url = request.url.trim();
    let display = check_url(url, app.config.notify_allow_private_network).await?;
    let events = check_events(request.events)?;
    let chat_id = match (format, request.chat_id) {
        (Format::Telegram, Some(chat)) if !chat.trim().is_empty() && chat.len() <= 64 => {
            Some(chat.trim().to_string())
        }
        (Format::Telegram, _) => {
            return Err(invalid(
                "chat_id is required with the telegram format (at most 64 characters)",
            ));
        }
        (_, Some(_)) => return Err(invalid("chat_id is only for the telegram format")),
        (_, None) => None,
    };
    let now = now_ms();
    let row = WebhookRow {
        id: new_id(),
        user_id: user.user_id.clone(),
        url_sealed: app.vault.seal(&sealing_owner(&user.user_id), url),
        url_display: display,
        format: format.as_str().into(),
        events: serde_json::to_string(&events).expect("names serialise"),
        chat_id,
        created_at: now,
    };
    let secret = new_secret();
    let mut tx = app.db.begin().await?;
    if notifications::count_webhooks(&mut *tx, &user.user_id).await? >= MAX_WEBHOOKS {
        return Err(invalid(format!(
            "a user may have at most {MAX_WEBHOOKS} webhooks: remove one first"
        )));
    }
    notifications::insert_webhook(&mut *tx, &row).await?;
    let made = notifications::put_secret(
        &mut *tx,
        &user.user_id,
        &app.vault.seal(&sealing_owner(&user.user_id), &secret),
        false,
    )
    .await?;
    tx.commit().await?;
    Ok(Added {
        webhook: view(&row),
        secret: made.then_some(secret),
    })
}

pub async fn remove(app: &App, user: &Principal, webhook_id: &str) -> ApiResult<Removed> {
    if !notifications::delete_webhook(&app.db, &user.user_id, webhook_id).await? {
        return Err(ApiError::new(ErrorCode::NotFound, "Webhook not found"));
    }
    Ok(Removed {
        message: "Webhook removed; its queued deliveries are dropped",
        webhook_id: webhook_id.to_string(),
    })
}

async fn owned(app: &App, user: &Principal, webhook_id: &str) -> ApiResult<WebhookRow> {
    notifications::webhook(&app.db, &user.user_id, webhook_id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "Webhook not found"))
}

/// Queues a test notification to one webhook.
pub async fn test(app: &App, user: &Principal, webhook_id: &str) -> ApiResult<Queued> {
    let webhook = owned(app, user, webhook_id).await?;
    #[derive(Serialize)]
    struct TestNotice<'a> {
        webhook_id: &'a str,
        timestamp: String,
    }
    let now = now_ms();
    record(
        &app.db.pool,
        Some(&user.user_id),
        Kind::Test,
        &TestNotice {
            webhook_id: &webhook.id,
            timestamp: iso8601(now),
        },
        now,
    )
    .await?;
    app.notifier.wake();
    Ok(Queued {
        message: "A test notification is queued for this webhook",
        webhook_id: webhook.id,
    })
}

pub async fn deliveries(app: &App, user: &Principal, webhook_id: &str) -> ApiResult<Deliveries> {
    let webhook = owned(app, user, webhook_id).await?;
    let rows = notifications::deliveries(&app.db, &webhook.id, 50).await?;
    Ok(Deliveries {
        webhook_id: webhook.id,
        deliveries: rows.iter().map(delivery_view).collect(),
    })
}

/// Makes a new signing secret; posts from now on are signed with it.
pub async fn rotate_secret(app: &App, user: &Principal) -> ApiResult<Secret> {
    let secret = new_secret();
    notifications::put_secret(
        &app.db.pool,
        &user.user_id,
        &app.vault.seal(&sealing_owner(&user.user_id), &secret),
        true,
    )
    .await?;
    Ok(Secret {
        secret,
        message: "Signing secret rotated: it is shown only now",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn urls_must_be_https_public_and_without_credentials() {
        for (url, why) in [
            ("http://example.com/hook", "https://"),
            ("ftp://example.com/hook", "https://"),
            ("not a url", "not a valid URL"),
            ("https://user:pw@example.com/hook", "user name"),
            ("https://127.0.0.1/hook", "loopback"),
            ("https://10.1.2.3/hook", "private"),
            ("https://169.254.169.254/latest", "link-local"),
            ("https://[::1]/hook", "loopback"),
            ("https://localhost:8443/hook", "localhost"),
        ] {
            let err = check_url(url, false).await.unwrap_err();
            assert!(err.message.contains(why), "{url}: {}", err.message);
        }
        assert_eq!(
            check_url("https://93.184.215.14:8443/api/webhooks/1/token", false)
                .await
                .unwrap(),
            "https://93.184.215.14:8443"
        );
        // The operator's switch lets local receivers in, over plain http too.
        assert_eq!(
            check_url("http://127.0.0.1:9000/hook", true).await.unwrap(),
            "http://127.0.0.1:9000"
        );
    }

    #[test]
    fn events_default_to_all_and_unknown_ones_are_refused() {
        assert_eq!(check_events(None).unwrap().len(), Kind::SUBSCRIBABLE.len());
        assert_eq!(
            check_events(Some(vec!["alarm".into(), "alarm".into()])).unwrap(),
            ["alarm"]
        );
        assert!(check_events(Some(vec![])).is_err());
        assert!(check_events(Some(vec!["test".into()])).is_err());
        assert!(check_events(Some(vec!["trades".into()])).is_err());
    }
}
