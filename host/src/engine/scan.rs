//! One scan of one bot: reconcile its live orders (and, after a start, compare the books with
//! the venue), then exits and pending closes, the strategy's signals and inbound signals through
//! the limits and risk rules to the broker, then the equity snapshot, KPI figures and alarm
//! evaluation.

use std::collections::HashMap;
use std::sync::Arc;

use rust_decimal::Decimal;

use super::accounting::{self, Position, Side, decimal, float};
use super::alarms;
use super::closing::{self, Attempt};
use super::entry;
use super::order_state::OrderStatus;
use super::orders::{self, Intent, OrderFailure, Plan, client_order_id};
use super::reconcile::{self, VENUE_CHECK_EVERY_MS};
use super::signals::{self as inbound, SignalKind};
use super::trader::Trader;
use super::wire::{wire_account, wire_positions};
use super::{BotStatus, publish_status};
use crate::App;
use crate::events::Channel;
use crate::plugins::PluginKind;
use crate::plugins::bindings::strategy::ScanContext;
use crate::plugins::bindings::types::{Candle, Series};
use crate::plugins::off_thread as blocking;
use crate::store::snapshots::Snapshot;
use crate::store::{new_id, now_ms};

/// Candles handed to a strategy per symbol.
pub const CANDLE_HISTORY: u32 = 200;
/// At most one equity snapshot per this long while nothing trades.
pub const SNAPSHOT_EVERY_MS: i64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MarketKey {
    pub broker: String,
    pub symbol: String,
    pub interval: String,
}

/// Candles fetched once per tick for every (broker, symbol, interval) some due bot trades.
pub type Market = HashMap<MarketKey, Result<Arc<Vec<Candle>>, ScanFailure>>;

/// Why a scan did not complete.
#[derive(Debug, Clone)]
pub struct ScanFailure {
    pub reason: String,
    /// The venue asked to wait this long: the scan is tried again then, and the bot has not
    /// failed.
    pub wait_ms: Option<u64>,
}

impl From<String> for ScanFailure {
    fn from(reason: String) -> Self {
        ScanFailure {
            reason,
            wait_ms: None,
        }
    }
}

/// What a scan leaves for the scheduler to write in its batch.
#[derive(Default)]
pub struct ScanOutcome {
    pub snapshot: Option<Snapshot>,
    /// The scan changed the bot's status (running, or paused by an alarm or the loss limit).
    pub status_changed: bool,
}

/// The candle interval a strategy reads, from its configuration (default 1m).
pub fn strategy_interval(app: &App, strategy: &str) -> String {
    app.plugins
        .active(PluginKind::Strategy, strategy)
        .ok()
        .and_then(|active| active.target.config.get("interval").cloned())
        .unwrap_or_else(|| "1m".to_string())
}

/// Trailing-stop distance of a risk profile.
pub fn trail_pct(profile: &str) -> Decimal {
    match profile {
        "low" => Decimal::new(2, 2),
        "high" => Decimal::new(5, 2),
        _ => Decimal::new(3, 2),
    }
}

/// Whether a position must be closed at `price`, and why.
pub fn exit_reason(position: &Position, price: Decimal) -> Option<&'static str> {
    let long = position.side == Side::Long;
    let beyond = |level: Decimal, above: bool| {
        if above {
            price >= level
        } else {
            price <= level
        }
    };
    if position.stop_loss.is_some_and(|stop| beyond(stop, !long)) {
        return Some("stop_loss");
    }
    if position
        .take_profit
        .is_some_and(|target| beyond(target, long))
    {
        return Some("take_profit");
    }
    if let Some(trail) = position.trail_pct {
        let in_profit = if long {
            position.extreme_price > position.entry_price
        } else {
            position.extreme_price < position.entry_price
        };
        let level = if long {
            position.extreme_price * (Decimal::ONE - trail)
        } else {
            position.extreme_price * (Decimal::ONE + trail)
        };
        if in_profit && beyond(level, !long) {
            return Some("trailing_stop");
        }
    }
    None
}

/// Runs one scan. An `Err` is a failure the scheduler retries with backoff.
pub async fn scan(
    app: &App,
    trader: &mut Trader,
    market: &Market,
) -> Result<ScanOutcome, ScanFailure> {
    let now = now_ms();
    // Orders first: what the venue did since the last scan is booked before anything is decided.
    let after_start = trader.reconcile;
    reconcile::orders(app, trader, after_start).await?;
    if trader.reconcile || now - trader.last_venue_check_at >= VENUE_CHECK_EVERY_MS {
        let comparison = reconcile::positions(app, trader).await?;
        if !comparison.discrepancies.is_empty() {
            reconcile::flag(app, trader, comparison.discrepancies).await?;
            return Ok(ScanOutcome {
                snapshot: None,
                status_changed: true,
            });
        }
        if comparison.complete {
            trader.reconcile = false;
            trader.last_venue_check_at = now;
        }
    }

    let interval = strategy_interval(app, &trader.bot.strategy);
    // The last close of each symbol, read once; the series then move into the strategy's context.
    let mut series = Vec::new();
    let mut prices: HashMap<String, Decimal> = HashMap::new();
    for symbol in trader.symbols() {
        let key = MarketKey {
            broker: trader.bot.broker.clone(),
            symbol: symbol.clone(),
            interval: interval.clone(),
        };
        match market.get(&key) {
            Some(Ok(candles)) => {
                if let Some(close) = candles
                    .last()
                    .and_then(|c| decimal(c.close))
                    .filter(|p| *p > Decimal::ZERO)
                {
                    prices.insert(symbol.clone(), close);
                }
                series.push(Series {
                    symbol,
                    interval: interval.clone(),
                    candles: candles.as_ref().clone(),
                });
            }
            Some(Err(err)) => {
                return Err(ScanFailure {
                    reason: format!("market data for {symbol}: {}", err.reason),
                    wait_ms: err.wait_ms,
                });
            }
            None => return Err(format!("no market data for {symbol}").into()),
        }
    }
    // Positions are marked at their own broker's prices.
    for position in &mut trader.positions {
        let key = MarketKey {
            broker: position.broker.clone(),
            symbol: position.symbol.clone(),
            interval: interval.clone(),
        };
        let price = if position.broker == trader.bot.broker {
            prices.get(&position.symbol).copied()
        } else {
            match market.get(&key) {
                Some(Ok(candles)) => candles.last().and_then(|c| decimal(c.close)),
                _ => None,
            }
        };
        if let Some(price) = price.filter(|p| *p > Decimal::ZERO) {
            position.mark(price);
        }
    }
    let traded_before = trader.account.clone();

    // Exits come first, in every state that manages positions (paused bots too), and requested
    // closes are retried when due.
    let exits: Vec<(String, &'static str)> = trader
        .positions
        .iter()
        .filter(|p| p.closing.is_none())
        .filter_map(|p| exit_reason(p, p.current_price).map(|reason| (p.id.clone(), reason)))
        .collect();
    for (position_id, reason) in exits {
        closing::close(app, trader, &position_id, reason, false, None).await?;
    }
    closing::attempt_due(app, trader).await?;

    let scan_seq = trader.bot.scan_seq + 1;
    // Nothing new before the books have been compared with the venue after a start.
    if trader.status() != BotStatus::Paused && !trader.reconcile {
        let active = app
            .plugins
            .active(PluginKind::Strategy, &trader.bot.strategy)
            .map_err(|err| err.to_string())?;
        let ctx = ScanContext {
            scan_id: format!("{}:{scan_seq}", trader.bot.id),
            now_ms: now,
            market: series,
            positions: wire_positions(&trader.positions),
            account: wire_account(trader),
            state: trader.strategy_state(),
        };
        let runtime = app.plugins.runtime().clone();
        let evaluation = blocking(move || runtime.evaluate_strategy(&active, &ctx))
            .await?
            .map_err(|err| err.to_string())?;
        trader.set_strategy_state(&evaluation.state);
        for signal in evaluation.signals {
            let Some(side) = entry::wanted(signal.action) else {
                continue;
            };
            let (stop_loss, take_profit) = entry::protective_levels(&signal);
            let entry = Entry {
                strategy: trader.bot.strategy.clone(),
                size_usd: signal.size_usd,
                price: prices.get(&signal.symbol).copied(),
                limit_price: None,
                stop_loss,
                take_profit,
            };
            act(app, trader, scan_seq, &signal.symbol, side, entry, None).await?;
        }
        // Inbound signals (webhooks) go through the same path, each once, under its own id.
        let waiting = if trader.signals_waiting {
            inbound::waiting(app, &trader.user_id).await?
        } else {
            Vec::new()
        };
        for signal in waiting {
            if now - signal.received_at > inbound::TTL_MS {
                inbound::finish(
                    app,
                    &signal.id,
                    "expired",
                    Some("the bot did not get to it in time"),
                    None,
                )
                .await?;
                continue;
            }
            let Some(kind) = SignalKind::parse(&signal.action) else {
                inbound::finish(app, &signal.id, "refused", Some("unknown action"), None).await?;
                continue;
            };
            let side = match kind {
                SignalKind::Buy => Some(Side::Long),
                SignalKind::Sell => Some(Side::Short),
                SignalKind::Close => None,
            };
            let price = match prices.get(&signal.symbol) {
                Some(price) => Some(*price),
                None => current_price(app, &trader.bot.broker, &signal.symbol).await,
            };
            let size_usd = signal.size_usd.map(float).unwrap_or_else(|| {
                let paper = trader.bot.paper_trading != 0;
                trader
                    .settings
                    .max_position_size_usd(&trader.entitlement, paper)
            });
            let entry = Entry {
                strategy: signal
                    .strategy
                    .clone()
                    .filter(|s| !s.trim().is_empty())
                    .unwrap_or_else(|| WEBHOOK_STRATEGY.into()),
                size_usd,
                price,
                limit_price: signal.limit_price,
                stop_loss: None,
                take_profit: None,
            };
            let acted = act(
                app,
                trader,
                scan_seq,
                &signal.symbol,
                side,
                entry,
                Some(&signal.id),
            )
            .await?;
            match acted {
                Acted::Ordered { order_id, status } => {
                    let status = match status {
                        OrderStatus::Filled => "traded",
                        OrderStatus::Rejected | OrderStatus::Expired | OrderStatus::Cancelled => {
                            "refused"
                        }
                        _ => "ordered",
                    };
                    let order_id = Some(order_id.as_str()).filter(|id| !id.is_empty());
                    inbound::finish(app, &signal.id, status, None, order_id).await?
                }
                Acted::Skipped(reason) => {
                    inbound::finish(app, &signal.id, "refused", Some(&reason), None).await?
                }
            }
        }
        // All of them acted on (a failure above leaves the flag for the retried scan).
        trader.signals_waiting = false;
    }
    trader.bot.scan_seq = scan_seq;
    trader.bot.last_scan_at = Some(now);
    trader.failures = 0;
    let mut status_changed = false;
    if trader.status() == BotStatus::Starting {
        trader.bot.status = BotStatus::Running.as_str().into();
        trader.bot.last_error = None;
        status_changed = true;
        publish_status(app, trader, "Bot is running");
    }

    // Announce the marks of what is still open.
    for position in &trader.positions {
        app.events.publish(
            &trader.user_id,
            Channel::Positions,
            "position_update",
            &orders::position_update(position, now),
        );
    }

    let equity = trader.equity();
    trader.stats.observe(now, equity);
    let traded = trader.account != traded_before;
    let snapshot = (traded || now - trader.last_snapshot_at >= SNAPSHOT_EVERY_MS).then(|| {
        trader.last_snapshot_at = now;
        Snapshot {
            user_id: trader.user_id.clone(),
            at: now,
            equity,
            cash: trader.account.cash,
            unrealized_pnl: accounting::unrealized_pnl(&trader.positions),
        }
    });

    status_changed |= alarms::evaluate_alarms(app, trader, now).await?;
    status_changed |= alarms::check_daily_loss(app, trader);
    Ok(ScanOutcome {
        snapshot,
        status_changed,
    })
}

/// The strategy of an inbound signal that names none.
pub const WEBHOOK_STRATEGY: &str = "webhook";

/// What an entry signal asks for.
struct Entry {
    /// Whose entry it is: the bot's strategy, or an inbound signal's.
    strategy: String,
    size_usd: f64,
    price: Option<Decimal>,
    /// A limit entry's price (it is sized at it); `None`: market.
    limit_price: Option<Decimal>,
    stop_loss: Option<Decimal>,
    take_profit: Option<Decimal>,
}

/// What acting on a signal came to.
pub enum Acted {
    /// An order went out (or a retried decision found the one that did).
    Ordered {
        order_id: String,
        status: OrderStatus,
    },
    /// Nothing was ordered, and why.
    Skipped(String),
}

/// Acts on one signal for `symbol`: `None` closes what is held; a side opens it when flat, and
/// against a position of the other side closes that first (the entry comes on a later signal).
/// `id` names the resulting position or trade (inbound signals). An `Err` is a failure the
/// scan is retried for.
async fn act(
    app: &App,
    trader: &mut Trader,
    scan_seq: i64,
    symbol: &str,
    side: Option<Side>,
    entry: Entry,
    id: Option<&str>,
) -> Result<Acted, String> {
    let held = trader
        .positions
        .iter()
        .find(|p| p.symbol == symbol)
        .cloned();
    match (side, held) {
        (None, Some(position)) => close(app, trader, &position.id, "signal", id).await,
        (Some(side), Some(position)) if position.side != side => {
            close(app, trader, &position.id, "signal", id).await
        }
        (Some(side), None) => match entry.limit_price.or(entry.price) {
            Some(price) => open(app, trader, scan_seq, symbol, side, entry, price, id).await,
            None => Ok(Acted::Skipped(format!("no price for {symbol}"))),
        },
        (None, None) => Ok(Acted::Skipped(format!("no {symbol} position to close"))),
        (Some(_), Some(_)) => Ok(Acted::Skipped(format!(
            "a {symbol} position of that side is open"
        ))),
    }
}

/// The last one-minute close of a symbol no due bot fetched this tick.
async fn current_price(app: &App, broker: &str, symbol: &str) -> Option<Decimal> {
    let active = app.plugins.active(PluginKind::Broker, broker).ok()?;
    let runtime = app.plugins.runtime().clone();
    let symbol = symbol.to_string();
    let candles = blocking(move || runtime.broker_candles(&active, &symbol, "1m", 1, now_ms()))
        .await
        .ok()?
        .ok()?
        .ok()?;
    candles
        .last()
        .and_then(|c| decimal(c.close))
        .filter(|p| *p > Decimal::ZERO)
}

async fn close(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    reason: &str,
    id: Option<&str>,
) -> Result<Acted, String> {
    if let Some(order) = trader.live_order_for(Some(position_id), None) {
        return Ok(Acted::Skipped(format!(
            "the close of the position is working (order {})",
            order.client_order_id
        )));
    }
    // A close already asked for keeps its backoff: a signal repeated every scan does not hammer
    // the venue.
    let retry = trader
        .position(position_id)
        .is_some_and(|p| p.closing.is_some());
    match closing::close(app, trader, position_id, reason, !retry, id).await? {
        Attempt::Closed(order_id) => Ok(Acted::Ordered {
            order_id: order_id.unwrap_or_default(),
            status: OrderStatus::Filled,
        }),
        Attempt::Gone => Ok(Acted::Skipped("the position is already closed".into())),
        Attempt::Working(order_id) => Ok(Acted::Ordered {
            order_id,
            status: OrderStatus::Submitted,
        }),
        Attempt::Waiting => Ok(Acted::Skipped("the close is waiting to be retried".into())),
        Attempt::Failed(reason) => Ok(Acted::Skipped(format!(
            "the close failed ({reason}); it is retried"
        ))),
    }
}

#[allow(clippy::too_many_arguments)]
async fn open(
    app: &App,
    trader: &mut Trader,
    scan_seq: i64,
    symbol: &str,
    side: Side,
    request: Entry,
    price: Decimal,
    id: Option<&str>,
) -> Result<Acted, String> {
    let Entry {
        strategy,
        size_usd,
        limit_price,
        stop_loss,
        take_profit,
        ..
    } = request;
    let user_id = trader.user_id.clone();
    let skip = |why: String| {
        tracing::debug!(%user_id, symbol, %why, "entry skipped");
        Ok(Acted::Skipped(why))
    };
    let ask = entry::Ask {
        symbol,
        side,
        price,
        size_usd,
        stop_loss,
    };
    let mut size = match entry::size_before_rules(trader, &ask) {
        Ok(size) => size,
        Err(why) => return skip(why),
    };
    let ctx = entry::risk_context(trader);
    for name in app.plugins.names(PluginKind::RiskRule) {
        if !entry::worth_judging(size) {
            break;
        }
        let Ok(active) = app.plugins.active(PluginKind::RiskRule, &name) else {
            continue;
        };
        let proposed = entry::proposed(&ask, size);
        let runtime = app.plugins.runtime().clone();
        let ctx = ctx.clone();
        let verdict = blocking(move || runtime.check_order(&active, &proposed, &ctx))
            .await?
            .map_err(|err| err.to_string())?;
        size = match entry::after_verdict(size, &name, verdict) {
            Ok(size) => size,
            Err(why) => return skip(why),
        };
    }
    let quantity = match entry::quantity(symbol, size, price) {
        Ok(quantity) => quantity,
        Err(why) => return skip(why),
    };
    let intent_name = match side {
        Side::Long => "open_long",
        Side::Short => "open_short",
    };
    // A strategy's entry is named by its scan; an inbound signal's by the signal.
    let client_id = match id {
        Some(id) => client_order_id(&[&trader.bot.id, id, intent_name]),
        None => client_order_id(&[&trader.bot.id, &scan_seq.to_string(), symbol, intent_name]),
    };
    let plan = Plan {
        broker: trader.bot.broker.clone(),
        client_order_id: client_id,
        intent: Intent::Open {
            symbol: symbol.to_string(),
            side,
            quantity,
            price,
            limit_price,
            stop_loss,
            take_profit,
            trail_pct: Some(trail_pct(&trader.bot.risk_profile)),
            strategy,
        },
        assigned_id: id.map(str::to_string).unwrap_or_else(new_id),
        attempt: 1,
        signal_id: id.map(str::to_string),
    };
    match orders::place(app, trader, plan).await {
        Ok(placed) => Ok(Acted::Ordered {
            order_id: placed.order_id,
            status: placed.status,
        }),
        Err(OrderFailure::Refused(reason)) => skip(reason),
        Err(OrderFailure::Failed(reason)) => Err(reason),
    }
}
