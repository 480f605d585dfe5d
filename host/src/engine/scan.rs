//! One scan of one bot: exits, the strategy's signals, the risk rules, the broker's orders,
//! then the equity snapshot, KPI figures and alarm evaluation.

use std::collections::HashMap;
use std::sync::Arc;

use rust_decimal::{Decimal, RoundingStrategy};
use serde::Serialize;

use super::accounting::{self, Position, Side, decimal, float};
use super::metrics;
use super::orders::{self, Intent, OrderFailure, client_order_id};
use super::trader::Trader;
use super::{BotStatus, SignalKind, publish_status};
use crate::App;
use crate::events::Channel;
use crate::plugins::PluginKind;
use crate::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use crate::plugins::bindings::strategy::ScanContext;
use crate::plugins::bindings::types::{
    self as wire, AlarmLevel, Candle, KpiSnapshot, Series, SignalAction, Threshold, Verdict,
};
use crate::plugins::off_thread as blocking;
use crate::settings::Settings;
use crate::store::trading::{self, AlarmRow, Snapshot};
use crate::store::{iso8601, new_id, now_ms};

/// Candles handed to a strategy per symbol.
pub const CANDLE_HISTORY: u32 = 200;
/// An alarm type does not fire again within this long (decisions.md).
pub const ALARM_COOLDOWN_MS: i64 = 15 * 60 * 1000;
/// At most one equity snapshot per this long while nothing trades.
pub const SNAPSHOT_EVERY_MS: i64 = 60_000;
/// Smallest order worth sending, in account currency.
const MIN_ORDER_USD: Decimal = Decimal::ONE;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MarketKey {
    pub broker: String,
    pub symbol: String,
    pub interval: String,
}

/// Candles fetched once per tick for every (broker, symbol, interval) some due bot trades.
pub type Market = HashMap<MarketKey, Result<Arc<Vec<Candle>>, String>>;

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

/// The thresholds handed to risk rules: the user's settings, and their position limit.
pub fn thresholds(settings: &Settings, max_positions: u32) -> Vec<Threshold> {
    settings
        .risk_thresholds
        .iter()
        .map(|(name, value)| Threshold {
            name: name.clone(),
            value: *value,
        })
        .chain(std::iter::once(Threshold {
            name: "max_concurrent_positions".into(),
            value: max_positions as f64,
        }))
        .collect()
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

fn wire_side(side: Side) -> wire::Side {
    match side {
        Side::Long => wire::Side::Long,
        Side::Short => wire::Side::Short,
    }
}

fn wire_positions(positions: &[Position]) -> Vec<wire::Position> {
    positions
        .iter()
        .map(|p| wire::Position {
            position_id: p.id.clone(),
            symbol: p.symbol.clone(),
            side: wire_side(p.side),
            quantity: float(p.quantity),
            entry_price: float(p.entry_price),
            current_price: float(p.current_price),
            stop_loss: p.stop_loss.map(float),
            take_profit: p.take_profit.map(float),
            opened_at_ms: p.opened_at_ms,
        })
        .collect()
}

fn wire_account(trader: &Trader) -> wire::Account {
    wire::Account {
        cash: float(trader.account.cash),
        equity: float(trader.equity()),
        buying_power: float(accounting::buying_power(&trader.account, &trader.positions)),
        currency: trader.account.currency.clone(),
    }
}

fn order_failed(failure: OrderFailure) -> Result<(), String> {
    match failure {
        OrderFailure::Refused(reason) => {
            tracing::info!(%reason, "order refused by the broker");
            Ok(())
        }
        OrderFailure::Failed(reason) => Err(reason),
    }
}

/// Runs one scan. An `Err` is a failure the scheduler retries with backoff.
pub async fn scan(app: &App, trader: &mut Trader, market: &Market) -> Result<ScanOutcome, String> {
    let now = now_ms();
    if trader.credentials.is_none() {
        trader.credentials =
            Some(super::credentials(app, &trader.user_id, &trader.bot.broker).await?);
    }
    if trader.reconcile {
        orders::reconcile(app, trader).await.or_else(order_failed)?;
        trader.reconcile = false;
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
                if let Some(close) = candles.last().and_then(|c| decimal(c.close)) {
                    prices.insert(symbol.clone(), close);
                }
                series.push(Series {
                    symbol,
                    interval: interval.clone(),
                    candles: candles.as_ref().clone(),
                });
            }
            Some(Err(err)) => return Err(format!("market data for {symbol}: {err}")),
            None => return Err(format!("no market data for {symbol}")),
        }
    }
    let last_price = |symbol: &str| prices.get(symbol).copied();
    for position in &mut trader.positions {
        if let Some(price) = last_price(&position.symbol) {
            position.mark(price);
        }
    }
    let traded_before = trader.account.clone();

    // Exits come first, in every state that manages positions (paused bots too).
    let exits: Vec<(String, &'static str)> = trader
        .positions
        .iter()
        .filter_map(|p| exit_reason(p, p.current_price).map(|reason| (p.id.clone(), reason)))
        .collect();
    for (position_id, reason) in exits {
        let id = client_order_id(&[&trader.bot.id, &position_id, "close"]);
        let intent = Intent::Close {
            position_id,
            reason: reason.into(),
        };
        if let Err(failure) = orders::execute(app, trader, id, intent).await {
            order_failed(failure)?;
        }
    }

    let scan_seq = trader.bot.scan_seq + 1;
    if trader.status() != BotStatus::Paused {
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
            let side = match signal.action {
                SignalAction::Hold => continue,
                SignalAction::Close => None,
                SignalAction::OpenLong => Some(Side::Long),
                SignalAction::OpenShort => Some(Side::Short),
            };
            let entry = Entry {
                size_usd: signal.size_usd,
                price: last_price(&signal.symbol),
                stop_loss: signal.stop_loss.and_then(decimal),
                take_profit: signal.take_profit.first().copied().and_then(decimal),
            };
            act(app, trader, scan_seq, &signal.symbol, side, entry, None).await?;
        }
        // Inbound signals (webhooks) go through the same path, under their own ids.
        for signal in std::mem::take(&mut trader.signals) {
            let side = match signal.kind {
                SignalKind::Buy => Some(Side::Long),
                SignalKind::Sell => Some(Side::Short),
                SignalKind::Close => None,
            };
            let price = match last_price(&signal.symbol) {
                Some(price) => Some(price),
                None => current_price(app, &trader.bot.broker, &signal.symbol).await,
            };
            let entry = Entry {
                size_usd: signal.size_usd.unwrap_or_else(|| {
                    let paper = trader.bot.paper_trading != 0;
                    trader
                        .settings
                        .max_position_size_usd(&trader.entitlement, paper)
                }),
                price,
                stop_loss: None,
                take_profit: None,
            };
            act(
                app,
                trader,
                scan_seq,
                &signal.symbol,
                side,
                entry,
                Some(&signal.id),
            )
            .await?;
        }
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
            &orders::position_update(position, "open", now),
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

    status_changed |= evaluate_alarms(app, trader, now).await?;
    status_changed |= check_daily_loss(app, trader);
    Ok(ScanOutcome {
        snapshot,
        status_changed,
    })
}

/// What an entry signal asks for.
struct Entry {
    size_usd: f64,
    price: Option<Decimal>,
    stop_loss: Option<Decimal>,
    take_profit: Option<Decimal>,
}

/// Acts on one signal for `symbol`: `None` closes what is held; a side opens it when flat, and
/// against a position of the other side closes that first (the entry comes on a later signal).
/// `id` names the resulting position or trade (inbound signals).
async fn act(
    app: &App,
    trader: &mut Trader,
    scan_seq: i64,
    symbol: &str,
    side: Option<Side>,
    entry: Entry,
    id: Option<&str>,
) -> Result<(), String> {
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
        (Some(side), None) => match entry.price {
            Some(price) => open(app, trader, scan_seq, symbol, side, entry, price, id).await,
            None => Ok(()),
        },
        _ => Ok(()),
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
    candles.last().and_then(|c| decimal(c.close))
}

async fn close(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    reason: &str,
    id: Option<&str>,
) -> Result<(), String> {
    let client_id = client_order_id(&[&trader.bot.id, position_id, "close"]);
    let intent = Intent::Close {
        position_id: position_id.to_string(),
        reason: reason.to_string(),
    };
    match orders::execute_with_id(app, trader, client_id, intent, id.map(str::to_string)).await {
        Ok(_) => Ok(()),
        Err(failure) => order_failed(failure),
    }
}

#[allow(clippy::too_many_arguments)]
async fn open(
    app: &App,
    trader: &mut Trader,
    scan_seq: i64,
    symbol: &str,
    side: Side,
    entry: Entry,
    price: Decimal,
    id: Option<&str>,
) -> Result<(), String> {
    let Entry {
        size_usd,
        stop_loss,
        take_profit,
        ..
    } = entry;
    let paper = trader.bot.paper_trading != 0;
    let limits = trader.entitlement.limits();
    let max_positions = trader.settings.max_positions(&trader.entitlement);
    let skip = |why: String| {
        tracing::debug!(user_id = %trader.user_id, symbol, %why, "entry skipped");
        Ok(())
    };
    if !trader.settings.allows_pair(symbol) {
        return skip("not in the allowed pairs of the settings".into());
    }
    if trader.positions.len() as u32 >= max_positions {
        return skip(format!(
            "{} positions open; at most {max_positions} allowed",
            trader.positions.len()
        ));
    }
    if trader.stats.opens_today >= limits.max_daily_trades {
        return skip(format!(
            "{} trades today; the plan allows {}",
            trader.stats.opens_today, limits.max_daily_trades
        ));
    }
    let Some(mut size) = decimal(size_usd) else {
        return skip("size is not a number".into());
    };
    let max_size = decimal(
        trader
            .settings
            .max_position_size_usd(&trader.entitlement, paper),
    )
    .unwrap_or_default();
    size = size
        .min(max_size)
        .min(accounting::buying_power(&trader.account, &trader.positions));

    let ctx = RiskContext {
        account: wire_account(trader),
        positions: wire_positions(&trader.positions),
        daily_pnl: float(trader.daily_pnl()),
        trades_today: trader.stats.opens_today,
        thresholds: thresholds(&trader.settings, max_positions),
    };
    for name in app.plugins.names(PluginKind::RiskRule) {
        if size < MIN_ORDER_USD {
            break;
        }
        let Ok(active) = app.plugins.active(PluginKind::RiskRule, &name) else {
            continue;
        };
        let proposed = ProposedOrder {
            symbol: symbol.to_string(),
            side: wire_side(side),
            size_usd: float(size),
            price: float(price),
            stop_loss: stop_loss.map(float),
        };
        let runtime = app.plugins.runtime().clone();
        let ctx = ctx.clone();
        let verdict = blocking(move || runtime.check_order(&active, &proposed, &ctx))
            .await?
            .map_err(|err| err.to_string())?;
        match verdict {
            Verdict::Allow => {}
            Verdict::Resize(smaller) => size = size.min(decimal(smaller).unwrap_or_default()),
            Verdict::Deny(reason) => return skip(format!("risk rule {name}: {reason}")),
        }
    }
    if size < MIN_ORDER_USD {
        return skip(format!("size {size} below the minimum order"));
    }
    let quantity =
        (size / price).round_dp_with_strategy(accounting::SCALE, RoundingStrategy::ToZero);
    if quantity.is_zero() {
        return skip("quantity rounds to zero".into());
    }
    let intent_name = match side {
        Side::Long => "open_long",
        Side::Short => "open_short",
    };
    // A strategy's entry is named by its scan; an inbound signal's by the signal.
    let client_id = match id {
        Some(id) => client_order_id(&[&trader.bot.id, id, intent_name]),
        None => client_order_id(&[&trader.bot.id, &scan_seq.to_string(), symbol, intent_name]),
    };
    let intent = Intent::Open {
        symbol: symbol.to_string(),
        side,
        quantity,
        stop_loss,
        take_profit,
        trail_pct: Some(trail_pct(&trader.bot.risk_profile)),
    };
    match orders::execute_with_id(app, trader, client_id, intent, id.map(str::to_string)).await {
        Ok(_) => Ok(()),
        Err(failure) => order_failed(failure),
    }
}

/// The figures risk rules judge the account by.
pub fn kpi(trader: &Trader, now: i64) -> KpiSnapshot {
    let equity = trader.equity();
    let equity_f = float(equity);
    let initial = float(trader.account.initial_capital);
    let stats = &trader.stats;
    let exposure = float(accounting::exposure(&trader.positions));
    let largest = trader
        .positions
        .iter()
        .map(|p| float(p.market_value()))
        .fold(0.0, f64::max);
    let pct = |part: f64, whole: f64| {
        if whole > 0.0 {
            metrics::finite(part / whole * 100.0)
        } else {
            0.0
        }
    };
    let mut closes: Vec<(chrono::NaiveDate, f64)> = stats
        .daily_closes
        .iter()
        .filter_map(|(day, value)| {
            chrono::DateTime::from_timestamp(day * 86_400, 0).map(|d| (d.date_naive(), *value))
        })
        .collect();
    if let Some(today) = chrono::DateTime::from_timestamp_millis(now) {
        closes.push((today.date_naive(), equity_f));
    }
    KpiSnapshot {
        timestamp_ms: now,
        account_value: equity_f,
        cash_balance: float(trader.account.cash),
        total_return_pct: pct(equity_f - initial, initial),
        daily_return_pct: pct(float(trader.daily_pnl()), float(stats.day_start_equity)),
        current_drawdown_pct: stats.drawdown_pct(equity),
        max_drawdown_pct: stats.max_drawdown_pct,
        win_rate_pct: if stats.total > 0 {
            stats.wins as f64 / stats.total as f64 * 100.0
        } else {
            0.0
        },
        profit_factor: if stats.gross_losses > 0.0 {
            metrics::finite(stats.gross_wins / stats.gross_losses)
        } else {
            0.0
        },
        sharpe_ratio: metrics::sharpe(&metrics::daily_returns(&closes)),
        total_trades: stats.total,
        winning_trades: stats.wins,
        losing_trades: stats.losses,
        consecutive_losses: stats.consecutive_losses,
        active_positions: trader.positions.len() as u32,
        exposure_pct: pct(exposure, equity_f),
        largest_position_pct: pct(largest, equity_f),
    }
}

#[derive(Serialize)]
struct AlarmEvent<'a> {
    alarm_id: &'a str,
    alarm_type: &'a str,
    level: &'a str,
    status: &'a str,
    message: &'a str,
    current_value: f64,
    threshold_value: f64,
    recommended_action: &'a str,
    timestamp: String,
}

fn level_name(level: AlarmLevel) -> &'static str {
    match level {
        AlarmLevel::Warning => "WARNING",
        AlarmLevel::Critical => "CRITICAL",
        AlarmLevel::Emergency => "EMERGENCY",
    }
}

fn publish_alarm(app: &App, user_id: &str, alarm: &AlarmRow, now: i64) {
    app.events.publish(
        user_id,
        Channel::Alarms,
        if alarm.status == "active" {
            "alarm_triggered"
        } else {
            "alarm_cleared"
        },
        &AlarmEvent {
            alarm_id: &alarm.id,
            alarm_type: &alarm.alarm_type,
            level: &alarm.level,
            status: &alarm.status,
            message: &alarm.message,
            current_value: alarm.current_value,
            threshold_value: alarm.threshold_value,
            recommended_action: &alarm.recommended_action,
            timestamp: iso8601(now),
        },
    );
}

/// Runs every risk rule's alarm evaluation: new alarms fire (outside their cooldown), alarms
/// whose condition cleared are cleared, and an EMERGENCY pauses the bot. Returns whether the bot
/// changed.
async fn evaluate_alarms(app: &App, trader: &mut Trader, now: i64) -> Result<bool, String> {
    let kpi = kpi(trader, now);
    let thresholds = thresholds(
        &trader.settings,
        trader.settings.max_positions(&trader.entitlement),
    );
    let mut raised: HashMap<String, wire::Alarm> = HashMap::new();
    for name in app.plugins.names(PluginKind::RiskRule) {
        let Ok(active) = app.plugins.active(PluginKind::RiskRule, &name) else {
            continue;
        };
        let runtime = app.plugins.runtime().clone();
        let given = thresholds.clone();
        let alarms = blocking(move || runtime.evaluate_alarms(&active, &kpi, &given))
            .await?
            .map_err(|err| err.to_string())?;
        for alarm in alarms {
            let stronger = raised
                .get(&alarm.alarm_type)
                .is_none_or(|seen| (alarm.level as u8) > (seen.level as u8));
            if stronger {
                raised.insert(alarm.alarm_type.clone(), alarm);
            }
        }
    }
    let db = &app.db.pool;
    let mut bot_changed = false;
    let cleared: Vec<String> = trader
        .active_alarms
        .keys()
        .filter(|t| !raised.contains_key(*t))
        .cloned()
        .collect();
    for alarm_type in cleared {
        if let Some(mut alarm) = trader.active_alarms.remove(&alarm_type) {
            trading::clear_alarm(db, &alarm.id, now)
                .await
                .map_err(|err| err.to_string())?;
            alarm.status = "cleared".into();
            alarm.cleared_at = Some(now);
            publish_alarm(app, &trader.user_id, &alarm, now);
        }
    }
    for (alarm_type, alarm) in raised {
        if trader.active_alarms.contains_key(&alarm_type)
            || trader
                .last_raised
                .get(&alarm_type)
                .is_some_and(|at| now - at < ALARM_COOLDOWN_MS)
        {
            continue;
        }
        let row = AlarmRow {
            id: new_id(),
            alarm_type: alarm_type.clone(),
            level: level_name(alarm.level).into(),
            message: alarm.message.clone(),
            current_value: metrics::finite(alarm.current_value),
            threshold_value: metrics::finite(alarm.threshold_value),
            recommended_action: alarm.recommended_action.clone(),
            status: "active".into(),
            raised_at: now,
            cleared_at: None,
        };
        trading::insert_alarm(db, &trader.user_id, &row)
            .await
            .map_err(|err| err.to_string())?;
        publish_alarm(app, &trader.user_id, &row, now);
        trader.last_raised.insert(alarm_type.clone(), now);
        if alarm.level == AlarmLevel::Emergency && trader.status() == BotStatus::Running {
            trader.bot.status = BotStatus::Paused.as_str().into();
            trader.bot.last_error = Some(format!(
                "Paused by EMERGENCY alarm {alarm_type}: {}",
                alarm.message
            ));
            publish_status(app, trader, "Paused by an emergency alarm");
            bot_changed = true;
        }
        trader.active_alarms.insert(alarm_type, row);
    }
    Ok(bot_changed)
}

/// Pauses a running bot whose loss today reached the daily limit: the smaller of the settings'
/// `max_daily_loss_usd` and `daily_loss_limit_pct` of the day's starting equity.
fn check_daily_loss(app: &App, trader: &mut Trader) -> bool {
    if trader.status() != BotStatus::Running {
        return false;
    }
    let limit_pct = trader
        .settings
        .risk_thresholds
        .get("daily_loss_limit_pct")
        .copied()
        .unwrap_or(5.0);
    let by_pct = trader.stats.day_start_equity * decimal(limit_pct / 100.0).unwrap_or_default();
    let by_amount = decimal(trader.settings.trading.max_daily_loss_usd).unwrap_or(by_pct);
    let limit = by_pct.min(by_amount);
    let loss = -trader.daily_pnl();
    if limit > Decimal::ZERO && loss >= limit {
        trader.bot.status = BotStatus::Paused.as_str().into();
        trader.bot.last_error = Some(format!(
            "Paused: today's loss of {} reached the daily limit of {}",
            loss.round_dp(2),
            limit.round_dp(2)
        ));
        publish_status(app, trader, "Paused by the daily loss limit");
        return true;
    }
    false
}
