//! What users may be told of: the notification events the engine and the operator's actions
//! record, in the transaction that makes the thing happen, for the [notifier](crate::notify) to
//! turn into mail and webhook posts. This module depends on nothing but the store, so every
//! part of the server can record a notice.

use rust_decimal::Decimal;
use serde::Serialize;
use tokio::sync::Notify;

use crate::App;
use crate::store::{Executes, new_id, notifications};

/// What a notification is about. Webhooks choose among these; mail follows the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    TradeOpened,
    TradeClosed,
    Alarm,
    BotStatus,
    KillSwitch,
    DailySummary,
    WeeklyReport,
    /// Sent to one webhook when its owner asks for a test.
    Test,
}

impl Kind {
    /// The kinds a webhook can subscribe to (a test goes to the webhook it was asked for).
    pub const SUBSCRIBABLE: [Kind; 7] = [
        Kind::TradeOpened,
        Kind::TradeClosed,
        Kind::Alarm,
        Kind::BotStatus,
        Kind::KillSwitch,
        Kind::DailySummary,
        Kind::WeeklyReport,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TradeOpened => "trade_opened",
            Kind::TradeClosed => "trade_closed",
            Kind::Alarm => "alarm",
            Kind::BotStatus => "bot_status",
            Kind::KillSwitch => "kill_switch",
            Kind::DailySummary => "daily_summary",
            Kind::WeeklyReport => "weekly_report",
            Kind::Test => "test",
        }
    }

    pub fn parse(name: &str) -> Option<Kind> {
        Self::SUBSCRIBABLE
            .into_iter()
            .chain([Kind::Test])
            .find(|kind| kind.as_str() == name)
    }
}

/// Wakes the dispatcher and the sender when there is something new.
#[derive(Default)]
pub struct Notifier {
    pub(crate) dispatch: Notify,
    pub(crate) send: Notify,
}

impl Notifier {
    /// An event was committed: dispatch it soon.
    pub fn wake(&self) {
        self.dispatch.notify_one();
    }

    /// Deliveries were queued: send them soon.
    pub fn wake_sender(&self) {
        self.send.notify_one();
    }
}

/// Records an event in the caller's transaction.
pub async fn record<'e>(
    exec: impl Executes<'e>,
    user_id: Option<&str>,
    kind: Kind,
    payload: &impl Serialize,
    at: i64,
) -> sqlx::Result<()> {
    notifications::insert_events(exec, &[&event(user_id, kind, payload, at)]).await?;
    Ok(())
}

/// The row of an event, for a booking that records it with the books.
pub fn event(
    user_id: Option<&str>,
    kind: Kind,
    payload: &impl Serialize,
    at: i64,
) -> notifications::EventRow {
    notifications::EventRow {
        id: new_id(),
        user_id: user_id.map(str::to_string),
        kind: kind.as_str().to_string(),
        payload: serde_json::to_string(payload).expect("notification payloads serialise"),
        created_at: at,
    }
}

/// Records an event on its own (for what is saved without a transaction of its own, such as a
/// bot's status) and wakes the dispatcher; a failure is logged, never the caller's.
pub fn record_later(app: &App, user_id: &str, kind: Kind, payload: &impl Serialize, at: i64) {
    let payload = serde_json::to_string(payload).expect("notification payloads serialise");
    let (app, user_id) = (app.clone(), user_id.to_string());
    tokio::spawn(async move {
        let recorded = notifications::insert_event(
            &app.db.pool,
            &new_id(),
            Some(&user_id),
            kind.as_str(),
            &payload,
            at,
        )
        .await;
        match recorded {
            Ok(_) => app.notifier.wake(),
            Err(err) => {
                tracing::error!(%user_id, kind = kind.as_str(), error = %err, "recording a notification failed")
            }
        }
    });
}

/// A trade opened or closed. Money is decimal text, exactly as booked.
#[derive(Debug, Serialize)]
pub struct TradeNotice<'a> {
    pub action: &'a str,
    pub trade_id: &'a str,
    pub position_id: &'a str,
    pub symbol: &'a str,
    pub side: &'a str,
    pub strategy: &'a str,
    pub broker: &'a str,
    pub quantity: Decimal,
    pub entry_price: Decimal,
    pub exit_price: Option<Decimal>,
    pub size_usd: Decimal,
    pub fees: Decimal,
    pub realized_pnl: Option<Decimal>,
    pub pnl_pct: Option<Decimal>,
    pub exit_reason: Option<&'a str>,
    pub timestamp: String,
}

/// An alarm raised.
#[derive(Debug, Serialize)]
pub struct AlarmNotice<'a> {
    pub alarm_id: &'a str,
    pub alarm_type: &'a str,
    pub level: &'a str,
    pub message: &'a str,
    pub current_value: f64,
    pub threshold_value: f64,
    pub recommended_action: &'a str,
    pub timestamp: String,
}

/// A bot's status changed.
#[derive(Debug, Serialize)]
pub struct BotStatusNotice<'a> {
    pub status: &'a str,
    pub message: &'a str,
    pub last_error: Option<&'a str>,
    pub timestamp: String,
}

/// The operator halted trading.
#[derive(Debug, Serialize)]
pub struct KillSwitchNotice<'a> {
    pub reason: &'a str,
    pub positions_closed: bool,
    pub timestamp: String,
}
