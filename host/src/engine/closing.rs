//! Closing positions until they are closed.
//!
//! A close asked for (an exit, a signal, the user, a stop, the kill switch) is written on the
//! position first, so it survives a restart. Each attempt is an order of its own, under a client
//! order id of (position, attempt n): a rejected or partly filled close never blocks the next
//! one. A failed attempt is retried with doubling waits; after a few, the user is told with a
//! `POSITION_CLOSE_FAILED` alarm. Every close goes to the position's own broker connection. A
//! position is reported closed only once fills for all of it are booked.

use super::accounting::{Closing, Position};
use super::alarms::{self, POSITION_CLOSE_FAILED};
use super::order_state::OrderStatus;
use super::orders::{self, Intent, OrderFailure, Plan, client_order_id, position_update};
use super::trader::Trader;
use crate::App;
use crate::events::Channel;
use crate::plugins::bindings::types::AlarmLevel;
use crate::store::writer::Job;
use crate::store::{new_id, now_ms};

/// The wait after the first failed attempt; it doubles with each further one.
const FIRST_RETRY_MS: i64 = 1_000;
const MAX_RETRY_MS: i64 = 300_000;
/// Failed attempts after which the user is alerted.
pub const ALARM_AFTER_ATTEMPTS: u32 = 3;

/// The wait before the attempt after `attempts` failed ones.
pub fn backoff(attempts: u32) -> i64 {
    FIRST_RETRY_MS
        .saturating_mul(1 << attempts.saturating_sub(1).min(20))
        .min(MAX_RETRY_MS)
}

/// What a close attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The position is closed (by this order, when one was placed).
    Closed(Option<String>),
    /// A close order is working (it fills, or reconciliation follows it up).
    Working(String),
    /// The last attempt failed recently; the next waits for its backoff.
    Waiting,
    /// This attempt failed; it is retried.
    Failed(String),
    /// There is no such open position.
    Gone,
}

/// Sets a position's close request in memory only.
fn set<'t>(trader: &'t mut Trader, position_id: &str, closing: Closing) -> Option<&'t Position> {
    let position = trader.positions.iter_mut().find(|p| p.id == position_id)?;
    position.closing = Some(closing);
    Some(position)
}

/// Sets a position's close request and writes it.
async fn save(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    closing: Closing,
) -> Result<(), String> {
    let Some(position) = set(trader, position_id, closing).cloned() else {
        return Ok(());
    };
    // Part of the books: written by their writer and durable before anything goes out on it.
    app.db
        .write_under(trader.fence(), Job::Closing(Box::new(position)))
        .await
        .map_err(|err| format!("saving a close request: {err}"))?;
    Ok(())
}

/// Asks for `position_id` to be closed for `reason` (an earlier request keeps its reason) and
/// makes an attempt if one is due (`force`: now, whatever the backoff); `signal` as for
/// `attempt`.
pub async fn close(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    reason: &str,
    force: bool,
    signal: Option<&str>,
) -> Result<Attempt, String> {
    let Some(position) = trader.position(position_id) else {
        return Ok(Attempt::Gone);
    };
    if position.closing.is_none() {
        let closing = Closing {
            reason: reason.to_string(),
            attempts: 0,
            next_attempt_at: 0,
            last_error: None,
        };
        // Written with the attempt's order, or with its failure. An order of the position at
        // work already means no attempt now: the request is written on its own.
        if trader.live_order_for(Some(position_id), None).is_some() {
            save(app, trader, position_id, closing).await?;
        } else {
            set(trader, position_id, closing);
        }
    }
    attempt(app, trader, position_id, force, signal).await
}

/// Makes an attempt at a requested close if one is due (`force`: now, whatever the backoff).
/// `signal` is the inbound signal that asked for the close: its id names the completed trade of
/// a first attempt, and its outcome follows the order.
async fn attempt(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    force: bool,
    signal: Option<&str>,
) -> Result<Attempt, String> {
    let now = now_ms();
    let Some(position) = trader.position(position_id).cloned() else {
        return Ok(Attempt::Gone);
    };
    let Some(mut closing) = position.closing.clone() else {
        return Ok(Attempt::Waiting);
    };
    if let Some(order) = trader.live_order_for(Some(position_id), None) {
        return Ok(Attempt::Working(order.id.clone()));
    }
    if !force && now < closing.next_attempt_at {
        return Ok(Attempt::Waiting);
    }
    // The attempt is counted before the order is sent (written with it, or with its failure),
    // so its id is never used twice.
    closing.attempts += 1;
    closing.next_attempt_at = now + backoff(closing.attempts);
    let attempt = closing.attempts;
    set(trader, position_id, closing.clone());
    let plan = Plan {
        broker: position.broker.clone(),
        client_order_id: client_order_id(&[position_id, "close", &attempt.to_string()]),
        intent: Intent::Close {
            position_id: position_id.to_string(),
            reason: closing.reason.clone(),
        },
        assigned_id: signal
            .filter(|_| attempt == 1)
            .map(str::to_string)
            .unwrap_or_else(new_id),
        attempt,
        signal_id: signal.map(str::to_string),
    };
    let failure = match orders::place(app, trader, plan).await {
        Ok(placed) => match placed.status {
            _ if trader.position(position_id).is_none() => {
                return Ok(Attempt::Closed(Some(placed.order_id)));
            }
            OrderStatus::Rejected | OrderStatus::Expired | OrderStatus::Cancelled => placed
                .reason
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| format!("the close order was {}", placed.status.as_str())),
            _ => return Ok(Attempt::Working(placed.order_id)),
        },
        Err(OrderFailure::Refused(reason) | OrderFailure::Failed(reason)) => reason,
    };
    failed(app, trader, position_id, &failure).await?;
    Ok(Attempt::Failed(failure))
}

/// Records a failed attempt on the position and tells the user.
async fn failed(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    reason: &str,
) -> Result<(), String> {
    let now = now_ms();
    let Some(position) = trader.position(position_id).cloned() else {
        return Ok(());
    };
    let Some(mut closing) = position.closing.clone() else {
        return Ok(());
    };
    tracing::warn!(user_id = %trader.user_id, position_id, attempts = closing.attempts, %reason, "closing a position failed");
    closing.last_error = Some(reason.chars().take(500).collect());
    let attempts = closing.attempts;
    save(app, trader, position_id, closing).await?;
    if let Some(position) = trader.position(position_id) {
        app.events.publish(
            &trader.user_id,
            Channel::Positions,
            "position_update",
            &position_update(position, now),
        );
    }
    if attempts >= ALARM_AFTER_ATTEMPTS {
        alarms::raise(
            app,
            trader,
            POSITION_CLOSE_FAILED,
            AlarmLevel::Critical,
            format!(
                "The {} position {position_id} could not be closed after {attempts} attempts: {reason}",
                position.symbol
            ),
            "Check the broker connection; tradehost keeps retrying the close",
            now,
        )
        .await?;
    }
    Ok(())
}

/// Attempts every requested close that is due; clears the close alarm once none is left.
pub async fn attempt_due(app: &App, trader: &mut Trader) -> Result<(), String> {
    let due: Vec<String> = trader
        .positions
        .iter()
        .filter(|p| {
            p.closing
                .as_ref()
                .is_some_and(|c| c.next_attempt_at <= now_ms())
        })
        .map(|p| p.id.clone())
        .collect();
    for position_id in due {
        attempt(app, trader, &position_id, false, None).await?;
    }
    if trader.active_alarms.contains_key(POSITION_CLOSE_FAILED)
        && !trader.positions.iter().any(|p| {
            p.closing
                .as_ref()
                .is_some_and(|c| c.attempts >= ALARM_AFTER_ATTEMPTS)
        })
    {
        alarms::clear(app, trader, POSITION_CLOSE_FAILED, now_ms()).await?;
    }
    Ok(())
}

/// What closing every open position came to.
#[derive(Debug, Default)]
pub struct CloseAll {
    pub closed: usize,
    /// Still open: their close is working or is retried.
    pub closing: usize,
    /// Why attempts failed, by position.
    pub failures: Vec<(String, String)>,
}

/// Asks for every open position to be closed for `reason` and attempts each now, carrying on
/// past failures.
pub async fn close_all(app: &App, trader: &mut Trader, reason: &str) -> CloseAll {
    let mut outcome = CloseAll::default();
    let ids: Vec<String> = trader.positions.iter().map(|p| p.id.clone()).collect();
    for position_id in ids {
        match close(app, trader, &position_id, reason, true, None).await {
            Ok(Attempt::Closed(_) | Attempt::Gone) => outcome.closed += 1,
            Ok(Attempt::Working(_) | Attempt::Waiting) => outcome.closing += 1,
            Ok(Attempt::Failed(reason)) | Err(reason) => {
                outcome.closing += 1;
                outcome.failures.push((position_id, reason));
            }
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_wait_longer_each_time_up_to_a_ceiling() {
        assert_eq!(backoff(1), 1_000);
        assert_eq!(backoff(2), 2_000);
        assert_eq!(backoff(4), 8_000);
        assert_eq!(backoff(30), MAX_RETRY_MS);
        assert_eq!(backoff(0), 1_000);
    }
}
