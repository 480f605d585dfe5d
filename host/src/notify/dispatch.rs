//! The dispatcher: each recorded event becomes mail (as the recipient's settings say) and one
//! queued delivery per webhook that wants it, in the transaction that marks it dispatched, so
//! an event is dispatched once even after a crash or with several instances.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use serde_json::{Map, Value};

use super::render;
use crate::App;
use crate::notices::Kind;
use crate::settings;
use crate::store::notifications::{self, EventRow, NewDelivery, Recipient, WebhookRow};
use crate::store::outbox::{self, NewMail};
use crate::store::{MAX_ROWS, new_id, now_ms};

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
    // Who the events may go to is read first, once per user in the pass.
    let mut audiences: HashMap<Option<String>, Audience> = HashMap::new();
    for event in &events {
        if !audiences.contains_key(&event.user_id) {
            let user = event.user_id.as_deref();
            let audience = Audience {
                recipients: notifications::recipients(&app.db.pool, user).await?,
                webhooks: notifications::webhooks(&app.db.pool, user).await?,
            };
            audiences.insert(event.user_id.clone(), audience);
        }
    }
    // One transaction and a few statements for the pass: under load a pass takes many events,
    // and a commit (or statements) per event would hold the database's write lock once per
    // trade.
    let now = now_ms();
    let mut tx = app.db.begin().await?;
    let ids: Vec<&str> = events.iter().map(|event| event.id.as_str()).collect();
    // Events another instance marked first are its to queue, once.
    let marked: HashSet<String> = notifications::mark_dispatched(&mut *tx, &ids, now)
        .await?
        .into_iter()
        .collect();
    let ours: Vec<&EventRow> = events.iter().filter(|e| marked.contains(&e.id)).collect();
    let (mail, deliveries) = plan(&ours, &audiences);
    for chunk in mail.chunks(MAX_ROWS) {
        outbox::insert_once(&mut *tx, chunk).await?;
    }
    for chunk in deliveries.chunks(MAX_ROWS) {
        notifications::enqueue(&mut *tx, chunk, now).await?;
    }
    tx.commit().await?;
    if !mail.is_empty() {
        app.mail_queued();
    }
    if !deliveries.is_empty() {
        app.notifier.wake_sender();
    }
    Ok(events.len())
}

/// Who an event of one user (or of everyone) may go to.
struct Audience {
    recipients: Vec<Recipient>,
    webhooks: Vec<WebhookRow>,
}

/// The mail (as each recipient's settings say) and webhook deliveries of events.
fn plan<'a>(
    events: &[&'a EventRow],
    audiences: &'a HashMap<Option<String>, Audience>,
) -> (Vec<NewMail>, Vec<NewDelivery<'a>>) {
    let (mut mail, mut deliveries) = (Vec::new(), Vec::new());
    for &event in events {
        let Some(kind) = Kind::parse(&event.kind) else {
            tracing::warn!(event_id = %event.id, kind = %event.kind, "a notification of an unknown kind is dropped");
            continue;
        };
        let Some(audience) = audiences.get(&event.user_id) else {
            continue;
        };
        let payload: Value = serde_json::from_str(&event.payload).unwrap_or(Value::Null);
        let message = render::message(kind, &payload);
        for recipient in &audience.recipients {
            let stored: Map<String, Value> = recipient
                .settings
                .as_deref()
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or_default();
            if wants_mail(kind, &payload, &settings::notifications_of(&stored)) {
                mail.push(NewMail {
                    // One mail per event and recipient, however often the event is dispatched.
                    id: format!("{}:{}", event.id, recipient.user_id),
                    to_address: recipient.email.clone(),
                    subject: format!("tradehost: {}", message.title),
                    body: message.mail_body(),
                    kind: format!("notification:{}", kind.as_str()),
                });
            }
        }
        for webhook in &audience.webhooks {
            if wants_delivery(webhook, kind, &payload) {
                deliveries.push(NewDelivery {
                    id: new_id(),
                    webhook,
                    event,
                });
            }
        }
    }
    (mail, deliveries)
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

    fn webhook(id: &str, user_id: &str, events: &str) -> WebhookRow {
        WebhookRow {
            id: id.into(),
            user_id: user_id.into(),
            url_sealed: String::new(),
            url_display: String::new(),
            format: "json".into(),
            events: events.into(),
            chat_id: None,
            created_at: 0,
        }
    }

    fn event(id: &str, user_id: Option<&str>, kind: &str) -> EventRow {
        EventRow {
            id: id.into(),
            user_id: user_id.map(str::to_string),
            kind: kind.into(),
            payload: "{}".into(),
            created_at: 0,
        }
    }

    fn recipient(user_id: &str, settings: Value) -> Recipient {
        Recipient {
            user_id: user_id.into(),
            email: format!("{user_id}@example.com"),
            settings: Some(settings.to_string()),
        }
    }

    #[test]
    fn a_pass_plans_each_events_mail_and_deliveries_for_its_audience() {
        let trades_by_mail =
            json!({"notifications": {"email_enabled": true, "trade_notifications": true}});
        let mail_off = json!({"notifications": {"email_enabled": false}});
        let mut audiences = HashMap::new();
        audiences.insert(
            Some("u1".to_string()),
            Audience {
                recipients: vec![recipient("u1", trades_by_mail.clone())],
                webhooks: vec![webhook("w1", "u1", r#"["trade_closed"]"#)],
            },
        );
        // An event for everyone goes to every active user and every webhook that wants it.
        audiences.insert(
            None,
            Audience {
                recipients: vec![recipient("u1", trades_by_mail), recipient("u2", mail_off)],
                webhooks: vec![
                    webhook("w1", "u1", r#"["trade_closed"]"#),
                    webhook("w2", "u2", r#"["kill_switch"]"#),
                ],
            },
        );
        let events = [
            event("e1", Some("u1"), "trade_closed"),
            event("e2", Some("u1"), "trade_opened"),
            event("e3", None, "kill_switch"),
            event("e4", Some("u1"), "no_such_kind"),
        ];
        let refs: Vec<&EventRow> = events.iter().collect();
        let (mail, deliveries) = plan(&refs, &audiences);

        let mail: Vec<(&str, &str)> = mail
            .iter()
            .map(|m| (m.id.as_str(), m.kind.as_str()))
            .collect();
        assert_eq!(
            mail,
            [
                ("e1:u1", "notification:trade_closed"),
                ("e2:u1", "notification:trade_opened"),
                ("e3:u1", "notification:kill_switch"),
            ]
        );
        let deliveries: Vec<(&str, &str)> = deliveries
            .iter()
            .map(|d| (d.event.id.as_str(), d.webhook.id.as_str()))
            .collect();
        assert_eq!(deliveries, [("e1", "w1"), ("e3", "w2")]);
    }

    #[test]
    fn webhooks_take_what_they_subscribe_to_and_their_own_tests() {
        let webhook = webhook("w1", "u", r#"["trade_closed","alarm"]"#);
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
