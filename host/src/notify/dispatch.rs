//! The dispatcher: each recorded event becomes mail (as the recipient's settings say) and one
//! queued delivery per webhook that wants it, in the transaction that marks it dispatched, so
//! an event is dispatched once even after a crash or with several instances.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Map, Value};

use super::render;
use crate::App;
use crate::notices::Kind;
use crate::settings;
use crate::store::notifications::{self, EventRow, WebhookRow};
use crate::store::{Tx, new_id, now_ms, outbox};

/// Events taken per pass.
const BATCH: i64 = 100;

pub async fn run(app: App) {
    loop {
        match dispatch_pending(&app).await {
            // A full batch: there may be more right away.
            Ok(count) if count as i64 == BATCH => continue,
            Ok(_) => {}
            Err(err) => tracing::warn!("notification dispatch failed: {err:#}"),
        }
        tokio::select! {
            _ = app.notifier.dispatch.notified() => {}
            _ = tokio::time::sleep(Duration::from_secs(5)) => {}
        }
    }
}

/// Dispatches what is recorded and not dispatched yet; how many events it took.
pub async fn dispatch_pending(app: &App) -> anyhow::Result<usize> {
    let events = notifications::undispatched_events(&app.db, BATCH).await?;
    if events.is_empty() {
        return Ok(0);
    }
    // One transaction for the pass: under load a pass takes many events, and a commit each
    // would hold the database's write lock (and wait for the disk) once per trade.
    let now = now_ms();
    let mut tx = app.db.begin().await?;
    let (mut mail, mut deliveries) = (0, 0);
    for event in &events {
        let (m, d) = dispatch(&mut tx, event, now).await?;
        mail += m;
        deliveries += d;
    }
    tx.commit().await?;
    if mail > 0 {
        app.mailer.wake();
    }
    if deliveries > 0 {
        app.notifier.wake_sender();
    }
    Ok(events.len())
}

/// Whether the recipient's settings ask for mail about this event.
pub fn wants_mail(kind: Kind, payload: &Value, switches: &BTreeMap<String, bool>) -> bool {
    let on = |name: &str| switches.get(name).copied().unwrap_or(false);
    if !on("email_enabled") {
        return false;
    }
    match kind {
        Kind::TradeOpened | Kind::TradeClosed => on("trade_notifications"),
        Kind::DailySummary => on("daily_summary"),
        Kind::WeeklyReport => on("weekly_report"),
        Kind::Alarm => matches!(
            payload.get("level").and_then(Value::as_str),
            Some("CRITICAL" | "EMERGENCY")
        ),
        // A bot that stopped on an error needs its owner; other status changes are theirs.
        Kind::BotStatus => payload.get("status").and_then(Value::as_str) == Some("error"),
        Kind::KillSwitch => true,
        Kind::Test => false,
    }
}

/// Whether a webhook takes this event.
pub(super) fn wants_delivery(webhook: &WebhookRow, kind: Kind, payload: &Value) -> bool {
    if kind == Kind::Test {
        return payload.get("webhook_id").and_then(Value::as_str) == Some(webhook.id.as_str());
    }
    serde_json::from_str::<Vec<String>>(&webhook.events)
        .is_ok_and(|kinds| kinds.iter().any(|k| k == kind.as_str()))
}

/// One event: its mail and deliveries queued, and it marked dispatched, in the pass's
/// transaction.
async fn dispatch(tx: &mut Tx, event: &EventRow, now: i64) -> anyhow::Result<(usize, usize)> {
    // Another instance took it first: it queues the same, once.
    if !notifications::mark_dispatched(&mut *tx, &event.id, now).await? {
        return Ok((0, 0));
    }
    let Some(kind) = Kind::parse(&event.kind) else {
        tracing::warn!(event_id = %event.id, kind = %event.kind, "a notification of an unknown kind is dropped");
        return Ok((0, 0));
    };
    let payload: Value = serde_json::from_str(&event.payload).unwrap_or(Value::Null);
    let message = render::message(kind, &payload);
    let mut mail = 0;
    for recipient in notifications::recipients(&mut *tx, event.user_id.as_deref()).await? {
        let stored: Map<String, Value> = recipient
            .settings
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        if wants_mail(kind, &payload, &settings::notifications_of(&stored)) {
            outbox::insert_once(
                &mut *tx,
                &format!("{}:{}", event.id, recipient.user_id),
                &recipient.email,
                &format!("tradehost: {}", message.title),
                &message.mail_body(),
                &format!("notification:{}", kind.as_str()),
            )
            .await?;
            mail += 1;
        }
    }
    let mut deliveries = 0;
    for webhook in notifications::webhooks(&mut *tx, event.user_id.as_deref()).await? {
        if wants_delivery(&webhook, kind, &payload) {
            notifications::enqueue(&mut *tx, &new_id(), &webhook, event, now).await?;
            deliveries += 1;
        }
    }
    Ok((mail, deliveries))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn switches(pairs: &[(&str, bool)]) -> BTreeMap<String, bool> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn mail_follows_the_settings() {
        let all = switches(&[
            ("email_enabled", true),
            ("trade_notifications", true),
            ("daily_summary", true),
            ("weekly_report", false),
        ]);
        let none = json!({});
        assert!(wants_mail(Kind::TradeOpened, &none, &all));
        assert!(wants_mail(Kind::TradeClosed, &none, &all));
        assert!(wants_mail(Kind::DailySummary, &none, &all));
        assert!(!wants_mail(Kind::WeeklyReport, &none, &all));
        assert!(wants_mail(Kind::KillSwitch, &none, &all));
        assert!(!wants_mail(Kind::Test, &none, &all));
        assert!(!wants_mail(Kind::Alarm, &json!({"level": "WARNING"}), &all));
        assert!(wants_mail(Kind::Alarm, &json!({"level": "CRITICAL"}), &all));
        assert!(wants_mail(
            Kind::Alarm,
            &json!({"level": "EMERGENCY"}),
            &all
        ));
        assert!(!wants_mail(
            Kind::BotStatus,
            &json!({"status": "paused"}),
            &all
        ));
        assert!(wants_mail(
            Kind::BotStatus,
            &json!({"status": "error"}),
            &all
        ));

        let no_trades = switches(&[("email_enabled", true), ("trade_notifications", false)]);
        assert!(!wants_mail(Kind::TradeClosed, &none, &no_trades));
        // Mail off turns every kind off, the kill switch included.
        let off = switches(&[("email_enabled", false), ("trade_notifications", true)]);
        for kind in Kind::SUBSCRIBABLE {
            assert!(!wants_mail(
                kind,
                &json!({"level": "EMERGENCY", "status": "error"}),
                &off
            ));
        }
    }

    #[test]
    fn webhooks_take_what_they_subscribe_to_and_their_own_tests() {
        let webhook = WebhookRow {
            id: "w1".into(),
            user_id: "u".into(),
            url_sealed: String::new(),
            url_display: String::new(),
            format: "json".into(),
            events: r#"["trade_closed","alarm"]"#.into(),
            chat_id: None,
            created_at: 0,
        };
        assert!(wants_delivery(&webhook, Kind::TradeClosed, &json!({})));
        assert!(!wants_delivery(&webhook, Kind::TradeOpened, &json!({})));
        assert!(wants_delivery(
            &webhook,
            Kind::Test,
            &json!({"webhook_id": "w1"})
        ));
        assert!(!wants_delivery(
            &webhook,
            Kind::Test,
            &json!({"webhook_id": "w2"})
        ));
    }
}
