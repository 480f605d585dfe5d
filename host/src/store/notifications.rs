//! Notification events, users' outgoing webhooks, their signing secrets and the deliveries queue.

use super::Executes;
use super::statements::{Statements, statement};
use sqlx::{FromRow, QueryBuilder};

use super::{Db, now_ms};

#[derive(Debug, Clone, FromRow)]
pub struct EventRow {
    pub id: String,
    pub user_id: Option<String>,
    pub kind: String,
    pub payload: String,
    pub created_at: i64,
}

/// Records an event; an id recorded before is left as it was (so a summary made twice, by a
/// restart or by two instances, is one event).
pub async fn insert_event<'e>(
    exec: impl Executes<'e>,
    id: &str,
    user_id: Option<&str>,
    kind: &str,
    payload: &str,
    at: i64,
) -> sqlx::Result<bool> {
    let event = EventRow {
        id: id.to_string(),
        user_id: user_id.map(str::to_string),
        kind: kind.to_string(),
        payload: payload.to_string(),
        created_at: at,
    };
    Ok(insert_events(exec, &[&event]).await? > 0)
}

/// Records events (distinct ids) in one statement; returns how many were new.
pub async fn insert_events<'e>(exec: impl Executes<'e>, events: &[&EventRow]) -> sqlx::Result<u64> {
    let new = Statements::once(exec, |statements| push_events(statements, events, true)).await?;
    Ok(new.len() as u64)
}

/// [`insert_events`] as one of `statements`; `returning`: the statement returns the ids of the
/// events that were new.
pub fn push_events(statements: &mut Statements, events: &[&EventRow], returning: bool) {
    if events.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push("INSERT INTO notification_events (id, user_id, kind, payload, created_at) ");
        query.push_values(events, |mut row, e| {
            row.push_bind(e.id.clone())
                .push_bind(e.user_id.clone())
                .push_bind(e.kind.clone())
                .push_bind(e.payload.clone())
                .push_bind(e.created_at);
        });
        query.push(" ON CONFLICT (id) DO NOTHING");
        if returning {
            query.push(" RETURNING id");
        }
    })
}

pub async fn undispatched_events(db: &Db, limit: i64) -> sqlx::Result<Vec<EventRow>> {
    on!(&db.pool, |c| sqlx::query_as(schema_checked!(
        "SELECT id, user_id, kind, payload, created_at FROM notification_events \
         WHERE dispatched_at IS NULL ORDER BY created_at, id LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(c)
    .await)
}

/// Marks events dispatched; returns the ids this call marked (the others were marked by
/// another dispatcher first).
pub async fn mark_dispatched<'e>(
    exec: impl Executes<'e>,
    ids: &[&str],
    at: i64,
) -> sqlx::Result<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    on!(exec, |c, DB| {
        let mut query = QueryBuilder::<DB>::new("UPDATE notification_events SET dispatched_at = ");
        query.push_bind(at);
        query.push(" WHERE dispatched_at IS NULL AND id IN (");
        let mut list = query.separated(", ");
        for id in ids {
            list.push_bind(id.to_string());
        }
        query.push(") RETURNING id");
        query.build_query_scalar().fetch_all(c).await
    })
}

/// The mail address and stored settings of a user, or of every active user (`user_id` None).
#[derive(Debug, Clone, FromRow)]
pub struct Recipient {
    pub user_id: String,
    pub email: String,
    pub settings: Option<String>,
}

pub async fn recipients<'e>(
    exec: impl Executes<'e>,
    user_id: Option<&str>,
) -> sqlx::Result<Vec<Recipient>> {
    match user_id {
        Some(user_id) => {
            on!(exec, |c| sqlx::query_as(schema_checked!(
                "SELECT u.id AS user_id, u.email, s.settings FROM users u \
                 LEFT JOIN user_settings s ON s.user_id = u.id WHERE u.id = $1"
            ))
            .bind(user_id)
            .fetch_all(c)
            .await)
        }
        None => {
            on!(exec, |c| {
                sqlx::query_as(
                    schema_checked!("SELECT u.id AS user_id, u.email, s.settings FROM users u \
                     LEFT JOIN user_settings s ON s.user_id = u.id WHERE u.status = 'active' ORDER BY u.id"),
                )
                .fetch_all(c)
                .await
            })
        }
    }
}

#[derive(Debug, Clone, FromRow)]
pub struct WebhookRow {
    pub id: String,
    pub user_id: String,
    pub url_sealed: String,
    pub url_display: String,
    pub format: String,
    /// A JSON array of the event kinds sent.
    pub events: String,
    pub chat_id: Option<String>,
    pub created_at: i64,
}

const WEBHOOK_COLUMNS: &str =
    "id, user_id, url_sealed, url_display, format, events, chat_id, created_at";

pub async fn insert_webhook<'e>(exec: impl Executes<'e>, row: &WebhookRow) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(sql!(
            "INSERT INTO notification_webhooks ({WEBHOOK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(&row.id)
        .bind(&row.user_id)
        .bind(&row.url_sealed)
        .bind(&row.url_display)
        .bind(&row.format)
        .bind(&row.events)
        .bind(&row.chat_id)
        .bind(row.created_at)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn count_webhooks<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM notification_webhooks WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_one(c)
    .await)
}

/// A user's webhooks, or every user's (`user_id` None: for an event meant for all).
pub async fn webhooks<'e>(
    exec: impl Executes<'e>,
    user_id: Option<&str>,
) -> sqlx::Result<Vec<WebhookRow>> {
    match user_id {
        Some(user_id) => {
            on!(exec, |c| {
                sqlx::query_as(sql!(
                    "SELECT {WEBHOOK_COLUMNS} FROM notification_webhooks WHERE user_id = $1 ORDER BY created_at, id"
                ))
                .bind(user_id)
                .fetch_all(c)
                .await
            })
        }
        None => {
            on!(exec, |c| sqlx::query_as(sql!(
                "SELECT {WEBHOOK_COLUMNS} FROM notification_webhooks ORDER BY created_at, id"
            ))
            .fetch_all(c)
            .await)
        }
    }
}

pub async fn webhook(db: &Db, user_id: &str, id: &str) -> sqlx::Result<Option<WebhookRow>> {
    on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {WEBHOOK_COLUMNS} FROM notification_webhooks WHERE id = $1 AND user_id = $2"
    ))
    .bind(id)
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

pub async fn delete_webhook(db: &Db, user_id: &str, id: &str) -> sqlx::Result<bool> {
    let result = on!(&db.pool, |c| sqlx::query(schema_checked!(
        "DELETE FROM notification_webhooks WHERE id = $1 AND user_id = $2"
    ))
    .bind(id)
    .bind(user_id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(result > 0)
}

pub async fn secret<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Option<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT secret FROM notification_secrets WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

/// Stores the user's (sealed) secret: `replace` false keeps one already there.
pub async fn put_secret<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    sealed: &str,
    replace: bool,
) -> sqlx::Result<bool> {
    let query = if replace {
        "INSERT INTO notification_secrets (user_id, secret, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO UPDATE SET secret = $2, created_at = $3"
    } else {
        "INSERT INTO notification_secrets (user_id, secret, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id) DO NOTHING"
    };
    let result = on!(exec, |c| sqlx::query(query)
        .bind(user_id)
        .bind(sealed)
        .bind(now_ms())
        .execute(c)
        .await
        .map(|done| done.rows_affected()))?;
    Ok(result > 0)
}

#[derive(Debug, Clone, FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub webhook_id: String,
    pub user_id: String,
    pub event_id: String,
    pub kind: String,
    pub payload: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

const DELIVERY_COLUMNS: &str = "id, webhook_id, user_id, event_id, kind, payload, status, attempts, \
     next_attempt_at, last_status, last_error, created_at, delivered_at";

/// An event queued for a webhook.
pub struct NewDelivery<'a> {
    pub id: String,
    pub webhook: &'a WebhookRow,
    pub event: &'a EventRow,
}

/// Queues events for webhooks in one statement, each pair once: a pair queued before is left
/// as it is.
pub async fn enqueue<'e>(
    exec: impl Executes<'e>,
    deliveries: &[NewDelivery<'_>],
    at: i64,
) -> sqlx::Result<()> {
    if deliveries.is_empty() {
        return Ok(());
    }
    on!(exec, |c, DB| {
        let mut query = QueryBuilder::<DB>::new(
            "INSERT INTO webhook_deliveries (id, webhook_id, user_id, event_id, kind, payload, \
             status, next_attempt_at, created_at) ",
        );
        query.push_values(deliveries, |mut row, d| {
            row.push_bind(d.id.clone())
                .push_bind(d.webhook.id.clone())
                .push_bind(d.webhook.user_id.clone())
                .push_bind(d.event.id.clone())
                .push_bind(d.event.kind.clone())
                .push_bind(d.event.payload.clone())
                .push_bind("pending")
                .push_bind(at)
                .push_bind(at);
        });
        query.push(" ON CONFLICT (webhook_id, event_id) DO NOTHING");
        query
            .build()
            .execute(c)
            .await
            .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn due_deliveries(db: &Db, now: i64, limit: i64) -> sqlx::Result<Vec<DeliveryRow>> {
    on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries \
         WHERE status = 'pending' AND next_attempt_at <= $1 ORDER BY next_attempt_at, id LIMIT $2"
    ))
    .bind(now)
    .bind(limit)
    .fetch_all(c)
    .await)
}

/// Takes a due delivery for one attempt: moves its next attempt to `lease_until` so nobody else
/// sends it meanwhile. False when someone else took it first.
pub async fn claim(db: &Db, delivery: &DeliveryRow, lease_until: i64) -> sqlx::Result<bool> {
    let result = on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE webhook_deliveries SET next_attempt_at = $1 \
         WHERE id = $2 AND status = 'pending' AND next_attempt_at = $3"
    ))
    .bind(lease_until)
    .bind(&delivery.id)
    .bind(delivery.next_attempt_at)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(result > 0)
}

/// What one attempt came to.
pub struct Attempt<'a> {
    pub status: &'a str,
    pub http_status: Option<i64>,
    pub error: Option<&'a str>,
    pub next_attempt_at: i64,
}

pub async fn record_attempt(db: &Db, id: &str, attempt: &Attempt<'_>) -> sqlx::Result<()> {
    let now = now_ms();
    let delivered_at = (attempt.status == "delivered").then_some(now);
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, last_status = $2, \
         last_error = $3, next_attempt_at = $4, delivered_at = $5 WHERE id = $6"
    ))
    .bind(attempt.status)
    .bind(attempt.http_status)
    .bind(attempt.error)
    .bind(attempt.next_attempt_at)
    .bind(delivered_at)
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// A webhook's most recent deliveries, newest first.
pub async fn deliveries(db: &Db, webhook_id: &str, limit: i64) -> sqlx::Result<Vec<DeliveryRow>> {
    on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2"
    ))
    .bind(webhook_id)
    .bind(limit)
    .fetch_all(c)
    .await)
}

/// Users who traded (they have a trading account): the ones summaries are made for.
pub async fn trading_users(db: &Db) -> sqlx::Result<Vec<String>> {
    on!(&db.pool, |c| sqlx::query_scalar(schema_checked!(
        "SELECT a.user_id FROM trading_accounts a JOIN users u ON u.id = a.user_id \
         WHERE u.status = 'active' ORDER BY a.user_id"
    ))
    .fetch_all(c)
    .await)
}
