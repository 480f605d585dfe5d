//! Inbound signals for a running bot. A signal is a row before its sender is answered; the bot's
//! next scan acts on each once, through the same limits and risk rules as a strategy's signal,
//! and records what became of it: `ordered` (and then `traded` when its order fills, or
//! `refused` when it does not), `refused` by which rule, or `expired` when the bot did not get to
//! it in time. The order a signal places is named by the signal, so acting on it again after a
//! crash finds that order instead of placing another.

use serde::Serialize;

use super::{BotStatus, lock};
use crate::App;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::decimal;
use crate::store::orders as order_rows;
use crate::store::signals::{self as rows, SignalRow};
use crate::store::{iso8601, now_ms};

/// A signal the bot has not acted on within this long expires.
pub const TTL_MS: i64 = 300_000;
/// At most this many signals wait for one bot.
const MAX_WAITING: i64 = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalKind {
    Buy,
    Sell,
    Close,
}

impl SignalKind {
    pub fn parse(text: &str) -> Option<SignalKind> {
        match text {
            "buy" => Some(SignalKind::Buy),
            "sell" => Some(SignalKind::Sell),
            "close" => Some(SignalKind::Close),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SignalKind::Buy => "buy",
            SignalKind::Sell => "sell",
            SignalKind::Close => "close",
        }
    }
}

/// Writes a signal for the user's running bot and wakes it.
pub async fn accept(app: &App, signal: SignalRow) -> ApiResult<()> {
    let cell = app.engine.cell(&signal.user_id);
    let mut guard = lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    let status = trader.status();
    if status != BotStatus::Running {
        return Err(ApiError::new(
            ErrorCode::NotRunning,
            format!(
                "The bot is {}; signals act only on a running bot",
                status.as_str()
            ),
        ));
    }
    if rows::count_waiting(&app.db.pool, &signal.user_id).await? >= MAX_WAITING {
        return Err(ApiError::new(
            ErrorCode::RateLimitExceeded,
            "Too many signals are waiting for the bot",
        )
        .retry_after(1));
    }
    rows::insert(&app.db.pool, &signal).await?;
    trader.signals_waiting = true;
    drop(guard);
    app.engine.wake_now(&signal.user_id);
    Ok(())
}

/// The signals waiting for the user's bot, oldest first.
pub async fn waiting(app: &App, user_id: &str) -> Result<Vec<SignalRow>, String> {
    rows::waiting(&app.db.pool, user_id, MAX_WAITING)
        .await
        .map_err(|err| format!("reading waiting signals: {err}"))
}

/// Records what became of a signal.
pub async fn finish(
    app: &App,
    id: &str,
    status: &str,
    outcome: Option<&str>,
    order_id: Option<&str>,
) -> Result<(), String> {
    rows::finish(&app.db.pool, id, status, outcome, order_id, now_ms())
        .await
        .map_err(|err| format!("recording a signal's outcome: {err}"))
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct SignalOrder {
    pub order_id: String,
    pub status: String,
    pub quantity: String,
    pub filled_quantity: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct SignalView {
    pub trade_id: String,
    pub symbol: String,
    pub action: String,
    /// received, ordered, traded, refused or expired.
    pub status: String,
    /// Why it was refused or expired.
    pub outcome: Option<String>,
    pub order: Option<SignalOrder>,
    pub received_at: String,
    pub processed_at: Option<String>,
}

/// What became of the user's signal `trade_id`.
pub async fn view(app: &App, user_id: &str, trade_id: &str) -> ApiResult<SignalView> {
    let db = &app.db.pool;
    let signal = rows::by_id(db, user_id, trade_id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No signal with this trade_id"))?;
    let order = match &signal.order_id {
        Some(id) => order_rows::by_id(db, user_id, id).await?,
        None => None,
    };
    Ok(SignalView {
        trade_id: signal.id,
        symbol: signal.symbol,
        action: signal.action,
        status: signal.status,
        outcome: signal.outcome,
        order: order.map(|o| SignalOrder {
            order_id: o.id,
            status: o.status,
            quantity: decimal::text(o.quantity),
            filled_quantity: decimal::text(o.filled_quantity),
        }),
        received_at: iso8601(signal.received_at),
        processed_at: signal.processed_at.map(iso8601),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_actions_round_trip() {
        for kind in [SignalKind::Buy, SignalKind::Sell, SignalKind::Close] {
            assert_eq!(SignalKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(SignalKind::parse("hold"), None);
    }
}
