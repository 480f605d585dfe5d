//! Placing an order and booking its fill.
//!
//! An order is written as `pending` before the broker sees it, under a client order id derived
//! from what the order is for (bot, scan, symbol, intent; or bot and position for a close). A
//! retried or resumed scan derives the same id: a filled order is never sent again, and a pending
//! one is re-sent under the same id, which the broker treats as the same order. The fill is then
//! booked in one transaction (order, ledger row, position, completed trade, account) and only
//! then announced and applied to the in-memory state.

use rust_decimal::Decimal;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::accounting::{self, Fill, LedgerEntry, OpenRequest, Position, Side, decimal, float};
use super::trader::Trader;
use crate::App;
use crate::events::Channel;
use crate::plugins::PluginKind;
use crate::plugins::bindings::types::{
    BrokerError, OrderKind, OrderRequest, OrderSide as WireSide,
};
use crate::store::trading::{self, OrderRow};
use crate::store::{iso8601, new_id, now_ms};

#[derive(Debug, Clone)]
pub enum Intent {
    Open {
        symbol: String,
        side: Side,
        quantity: Decimal,
        stop_loss: Option<Decimal>,
        take_profit: Option<Decimal>,
        trail_pct: Option<Decimal>,
    },
    Close {
        position_id: String,
        reason: String,
    },
}

/// Why an order did not go through.
#[derive(Debug)]
pub enum OrderFailure {
    /// The broker refused it (rejected, insufficient funds): nothing to retry.
    Refused(String),
    /// The broker or its plugin failed: the scan is retried with backoff.
    Failed(String),
}

/// A client order id: stable for the same purpose, distinct for different ones.
pub fn client_order_id(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    format!("th-{}", &hex::encode(hash.finalize())[..32])
}

#[derive(Serialize)]
struct TradeExecuted<'a> {
    trade_id: &'a str,
    position_id: &'a str,
    action: &'a str,
    symbol: &'a str,
    side: Side,
    entry_price: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_price: Option<f64>,
    quantity: f64,
    size_usd: f64,
    fees: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    realized_pnl: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_reason: Option<&'a str>,
    timestamp: String,
}

#[derive(Serialize)]
pub struct PositionUpdate<'a> {
    pub position_id: &'a str,
    pub symbol: &'a str,
    pub side: Side,
    pub status: &'a str,
    pub quantity: f64,
    pub current_price: f64,
    pub unrealized_pnl: f64,
    pub unrealized_pnl_pct: f64,
    pub timestamp: String,
}

pub fn position_update<'a>(position: &'a Position, status: &'a str, at: i64) -> PositionUpdate<'a> {
    let basis = position.cost_basis();
    PositionUpdate {
        position_id: &position.id,
        symbol: &position.symbol,
        side: position.side,
        status,
        quantity: float(position.quantity),
        current_price: float(position.current_price),
        unrealized_pnl: float(position.unrealized_pnl()),
        unrealized_pnl_pct: if basis.is_zero() {
            0.0
        } else {
            float((position.unrealized_pnl() / basis * Decimal::ONE_HUNDRED).round_dp(4))
        },
        timestamp: iso8601(at),
    }
}

/// Places and books one order. `Ok(false)`: it had been booked before (a resumed scan).
pub async fn execute(
    app: &App,
    trader: &mut Trader,
    client_order_id: String,
    intent: Intent,
) -> Result<bool, OrderFailure> {
    execute_with_id(app, trader, client_order_id, intent, None).await
}

/// As [`execute`], with the id the new position (entry) or completed trade (exit) gets, so a
/// caller can name it before the order fills (an inbound signal's `trade_id`).
pub async fn execute_with_id(
    app: &App,
    trader: &mut Trader,
    client_order_id: String,
    intent: Intent,
    assigned_id: Option<String>,
) -> Result<bool, OrderFailure> {
    let now = now_ms();
    let broker = trader.bot.broker.clone();
    let (symbol, side, quantity, intent_name) = match &intent {
        Intent::Open {
            symbol,
            side,
            quantity,
            ..
        } => (symbol.clone(), side.opening_order(), *quantity, "open"),
        Intent::Close { position_id, .. } => {
            let Some(position) = trader.position(position_id) else {
                return Ok(false);
            };
            (
                position.symbol.clone(),
                position.side.closing_order(),
                position.quantity,
                "close",
            )
        }
    };
    let order = OrderRow {
        id: new_id(),
        client_order_id: client_order_id.clone(),
        broker: broker.clone(),
        symbol: symbol.clone(),
        side: side.as_str().to_string(),
        intent: match &intent {
            Intent::Open {
                side: Side::Long, ..
            } => "open_long",
            Intent::Open {
                side: Side::Short, ..
            } => "open_short",
            Intent::Close { .. } => "close",
        }
        .to_string(),
        quantity: quantity.to_string(),
        position_id: match &intent {
            Intent::Close { position_id, .. } => Some(position_id.clone()),
            Intent::Open { .. } => None,
        },
        stop_loss: match &intent {
            Intent::Open { stop_loss, .. } => stop_loss.map(|d| d.to_string()),
            Intent::Close { .. } => None,
        },
        take_profit: match &intent {
            Intent::Open { take_profit, .. } => take_profit.map(|d| d.to_string()),
            Intent::Close { .. } => None,
        },
        exit_reason: match &intent {
            Intent::Close { reason, .. } => Some(reason.clone()),
            Intent::Open { .. } => None,
        },
        status: "pending".into(),
        created_at: now,
    };
    let db = &app.db.pool;
    let order = if trading::insert_order(db, &trader.user_id, &order)
        .await
        .map_err(db_failure)?
    {
        order
    } else {
        match trading::order_by_client_id(db, &client_order_id)
            .await
            .map_err(db_failure)?
        {
            Some(existing) if existing.status == "pending" => existing,
            _ => return Ok(false),
        }
    };
    send_and_book(app, trader, order, intent, intent_name, assigned_id).await
}

async fn send_and_book(
    app: &App,
    trader: &mut Trader,
    order: OrderRow,
    intent: Intent,
    intent_name: &str,
    assigned_id: Option<String>,
) -> Result<bool, OrderFailure> {
    let quantity: Decimal = order.quantity.parse().unwrap_or_default();
    let Some(credentials) = trader.credentials.clone() else {
        return Err(OrderFailure::Failed(
            "broker credentials are not available".into(),
        ));
    };
    let active = app
        .plugins
        .active(PluginKind::Broker, &order.broker)
        .map_err(|err| OrderFailure::Failed(err.to_string()))?;
    let request = OrderRequest {
        client_order_id: order.client_order_id.clone(),
        symbol: order.symbol.clone(),
        side: if order.side == "BUY" {
            WireSide::Buy
        } else {
            WireSide::Sell
        },
        quantity: float(quantity),
        kind: OrderKind::Market,
        limit_price: None,
        reduce_only: intent_name == "close",
    };
    let runtime = app.plugins.runtime().clone();
    let answer = tokio::task::spawn_blocking(move || {
        runtime.broker_place_order(&active, &credentials, &request)
    })
    .await
    .map_err(|err| OrderFailure::Failed(format!("order task failed: {err}")))?;
    let now = now_ms();
    let db = &app.db.pool;
    let fill = match answer {
        Ok(Ok(fill)) => fill,
        Ok(Err(
            err @ (BrokerError::Rejected(_)
            | BrokerError::InsufficientFunds(_)
            | BrokerError::Unsupported(_)),
        )) => {
            let reason = format!("{err:?}");
            trading::finish_order(db, &order.id, "rejected", None, Some(&reason), now)
                .await
                .map_err(db_failure)?;
            return Err(OrderFailure::Refused(reason));
        }
        Ok(Err(err)) => {
            let reason = format!("broker error: {err:?}");
            trading::finish_order(db, &order.id, "failed", None, Some(&reason), now)
                .await
                .map_err(db_failure)?;
            return Err(OrderFailure::Failed(reason));
        }
        Err(err) => {
            let reason = err.to_string();
            trading::finish_order(db, &order.id, "failed", None, Some(&reason), now)
                .await
                .map_err(db_failure)?;
            return Err(OrderFailure::Failed(reason));
        }
    };
    let (Some(price), Some(filled), Some(fee)) = (
        decimal(fill.price),
        decimal(fill.quantity),
        decimal(fill.fee),
    ) else {
        return Err(OrderFailure::Failed("fill with non-finite numbers".into()));
    };
    let fill_at = now;
    let booked = Fill {
        quantity: filled.min(quantity),
        price,
        fee,
        at_ms: fill_at,
    };

    // Apply to copies; the trader changes only once the transaction has committed.
    let mut account = trader.account.clone();
    let mut tx = db.begin().await.map_err(db_failure)?;
    trading::finish_order(
        &mut *tx,
        &order.id,
        "filled",
        Some(&fill.order_id),
        None,
        now,
    )
    .await
    .map_err(db_failure)?;
    let (entry, position, trade): (LedgerEntry, Position, Option<accounting::CompletedTrade>) =
        match intent {
            Intent::Open {
                symbol,
                side,
                stop_loss,
                take_profit,
                trail_pct,
                ..
            } => {
                let (position, entry) = account.open(
                    OpenRequest {
                        position_id: assigned_id.unwrap_or_else(new_id),
                        ledger_id: new_id(),
                        broker: &order.broker,
                        symbol: &symbol,
                        side,
                        stop_loss,
                        take_profit,
                        trail_pct,
                    },
                    booked,
                );
                trading::insert_position(&mut *tx, &trader.user_id, &position, now)
                    .await
                    .map_err(db_failure)?;
                (entry, position, None)
            }
            Intent::Close {
                position_id,
                reason,
            } => {
                let Some(mut position) = trader.position(&position_id).cloned() else {
                    return Ok(false);
                };
                let (entry, trade) = account.close(
                    &mut position,
                    booked,
                    &reason,
                    new_id(),
                    assigned_id.unwrap_or_else(new_id),
                );
                trading::update_position(&mut *tx, &position, now)
                    .await
                    .map_err(db_failure)?;
                trading::insert_trade(&mut *tx, &trader.user_id, &trade)
                    .await
                    .map_err(db_failure)?;
                (entry, position, Some(trade))
            }
        };
    trading::insert_ledger(&mut *tx, &trader.user_id, &order.id, &entry)
        .await
        .map_err(db_failure)?;
    trading::update_account(&mut *tx, &trader.user_id, &account, now)
        .await
        .map_err(db_failure)?;
    tx.commit().await.map_err(db_failure)?;

    trader.account = account;
    let events = &app.events;
    match &trade {
        None => {
            trader.stats.opens_today += 1;
            events.publish(
                &trader.user_id,
                Channel::Trades,
                "trade_executed",
                &TradeExecuted {
                    trade_id: &position.id,
                    position_id: &position.id,
                    action: "opened",
                    symbol: &position.symbol,
                    side: position.side,
                    entry_price: float(position.entry_price),
                    exit_price: None,
                    quantity: float(position.quantity),
                    size_usd: float(position.cost_basis()),
                    fees: float(entry.fee),
                    realized_pnl: None,
                    exit_reason: None,
                    timestamp: iso8601(fill_at),
                },
            );
            events.publish(
                &trader.user_id,
                Channel::Positions,
                "position_update",
                &position_update(&position, "open", fill_at),
            );
            trader.positions.push(position);
        }
        Some(trade) => {
            trader.stats.record(trade);
            events.publish(
                &trader.user_id,
                Channel::Trades,
                "trade_executed",
                &TradeExecuted {
                    trade_id: &trade.id,
                    position_id: &trade.position_id,
                    action: "closed",
                    symbol: &trade.symbol,
                    side: trade.side,
                    entry_price: float(trade.entry_price),
                    exit_price: Some(float(trade.exit_price)),
                    quantity: float(trade.quantity),
                    size_usd: float(trade.size_usd),
                    fees: float(trade.fees),
                    realized_pnl: Some(float(trade.net_pnl)),
                    exit_reason: Some(&trade.exit_reason),
                    timestamp: iso8601(fill_at),
                },
            );
            let status = if position.quantity.is_zero() {
                "closed"
            } else {
                "open"
            };
            events.publish(
                &trader.user_id,
                Channel::Positions,
                "position_update",
                &position_update(&position, status, fill_at),
            );
            if position.quantity.is_zero() {
                trader.positions.retain(|p| p.id != position.id);
            } else if let Some(slot) = trader.positions.iter_mut().find(|p| p.id == position.id) {
                *slot = position;
            }
        }
    }
    Ok(true)
}

/// Re-sends the orders an interrupted scan left pending, under their original client ids.
pub async fn reconcile(app: &App, trader: &mut Trader) -> Result<(), OrderFailure> {
    let pending = trading::pending_orders(&app.db.pool, &trader.user_id)
        .await
        .map_err(db_failure)?;
    for order in pending {
        let intent = match order.intent.as_str() {
            "close" => match &order.position_id {
                Some(position_id) if trader.position(position_id).is_some() => Intent::Close {
                    position_id: position_id.clone(),
                    reason: order.exit_reason.clone().unwrap_or_else(|| "signal".into()),
                },
                _ => {
                    trading::finish_order(
                        &app.db.pool,
                        &order.id,
                        "cancelled",
                        None,
                        Some("position already closed"),
                        now_ms(),
                    )
                    .await
                    .map_err(db_failure)?;
                    continue;
                }
            },
            _ if trader.positions.iter().any(|p| p.symbol == order.symbol) => {
                trading::finish_order(
                    &app.db.pool,
                    &order.id,
                    "cancelled",
                    None,
                    Some("a position is open on the symbol"),
                    now_ms(),
                )
                .await
                .map_err(db_failure)?;
                continue;
            }
            intent => Intent::Open {
                symbol: order.symbol.clone(),
                side: if intent == "open_short" {
                    Side::Short
                } else {
                    Side::Long
                },
                quantity: order.quantity.parse().unwrap_or_default(),
                stop_loss: order.stop_loss.as_deref().and_then(|d| d.parse().ok()),
                take_profit: order.take_profit.as_deref().and_then(|d| d.parse().ok()),
                trail_pct: None,
            },
        };
        let intent_name = if order.intent == "close" {
            "close"
        } else {
            "open"
        };
        tracing::info!(user_id = %trader.user_id, client_order_id = %order.client_order_id, "re-sending an order left pending");
        match send_and_book(app, trader, order, intent, intent_name, None).await {
            Ok(_) | Err(OrderFailure::Refused(_)) => {}
            Err(failure) => return Err(failure),
        }
    }
    Ok(())
}

fn db_failure(err: sqlx::Error) -> OrderFailure {
    tracing::error!(error = %err, "database error while booking an order");
    OrderFailure::Failed("database error while booking the order".into())
}
