//! Calls into components built against `tradehost:plugin@0.1.0`. Strategies and risk rules have
//! the same records in both packages and convert field by field. A 0.1.0 broker speaks f64 and
//! answers an order with its fill: the adapter turns money into decimals (at 8 places, as the
//! host always rounded it) and the fill into a filled order's report; what 0.1.0 cannot do
//! (order status, fills, instrument rules) is `unsupported`.

use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;

use super::bindings::broker::{AccountCheck, BrokerInfo, BrokerPosition, Credentials};
use super::bindings::risk_rule::{ProposedOrder, RiskContext};
use super::bindings::strategy::{Evaluation, ScanContext};
use super::bindings::types as now;
use super::bindings::v0_1;
use super::bindings::v0_1::types as old;

/// An f64 of a 0.1.0 broker as a decimal string (8 places); a non-finite one as "NaN", which
/// the host's checks refuse.
pub fn decimal_text(value: f64) -> String {
    Decimal::from_f64(value)
        .map(|d| d.round_dp(8).normalize().to_string())
        .unwrap_or_else(|| "NaN".into())
}

fn side(side: now::Side) -> old::Side {
    match side {
        now::Side::Long => old::Side::Long,
        now::Side::Short => old::Side::Short,
    }
}

fn side_back(side: old::Side) -> now::Side {
    match side {
        old::Side::Long => now::Side::Long,
        old::Side::Short => now::Side::Short,
    }
}

fn candle(c: &now::Candle) -> old::Candle {
    old::Candle {
        timestamp_ms: c.timestamp_ms,
        open: c.open,
        high: c.high,
        low: c.low,
        close: c.close,
        volume: c.volume,
    }
}

fn candle_back(c: old::Candle) -> now::Candle {
    now::Candle {
        timestamp_ms: c.timestamp_ms,
        open: c.open,
        high: c.high,
        low: c.low,
        close: c.close,
        volume: c.volume,
    }
}

fn position(p: &now::Position) -> old::Position {
    old::Position {
        position_id: p.position_id.clone(),
        symbol: p.symbol.clone(),
        side: side(p.side),
        quantity: p.quantity,
        entry_price: p.entry_price,
        current_price: p.current_price,
        stop_loss: p.stop_loss,
        take_profit: p.take_profit,
        opened_at_ms: p.opened_at_ms,
    }
}

fn account(a: &now::Account) -> old::Account {
    old::Account {
        cash: a.cash,
        equity: a.equity,
        buying_power: a.buying_power,
        currency: a.currency.clone(),
    }
}

pub fn scan_context(ctx: &ScanContext) -> v0_1::strategy::ScanContext {
    v0_1::strategy::ScanContext {
        scan_id: ctx.scan_id.clone(),
        now_ms: ctx.now_ms,
        market: ctx
            .market
            .iter()
            .map(|s| old::Series {
                symbol: s.symbol.clone(),
                interval: s.interval.clone(),
                candles: s.candles.iter().map(candle).collect(),
            })
            .collect(),
        positions: ctx.positions.iter().map(position).collect(),
        account: account(&ctx.account),
        state: ctx.state.clone(),
    }
}

pub fn evaluation(e: v0_1::strategy::Evaluation) -> Evaluation {
    Evaluation {
        signals: e
            .signals
            .into_iter()
            .map(|s| now::Signal {
                symbol: s.symbol,
                action: match s.action {
                    old::SignalAction::OpenLong => now::SignalAction::OpenLong,
                    old::SignalAction::OpenShort => now::SignalAction::OpenShort,
                    old::SignalAction::Close => now::SignalAction::Close,
                    old::SignalAction::Hold => now::SignalAction::Hold,
                },
                size_usd: s.size_usd,
                stop_loss: s.stop_loss,
                take_profit: s.take_profit,
                confidence: s.confidence,
                reason: s.reason,
            })
            .collect(),
        state: e.state,
    }
}

pub fn plugin_error(e: old::PluginError) -> now::PluginError {
    match e {
        old::PluginError::InvalidInput(m) => now::PluginError::InvalidInput(m),
        old::PluginError::Internal(m) => now::PluginError::Internal(m),
    }
}

pub fn plugin_info(i: old::PluginInfo) -> now::PluginInfo {
    now::PluginInfo {
        name: i.name,
        version: i.version,
        display_name: i.display_name,
        description: i.description,
    }
}

pub fn proposed_order(o: &ProposedOrder) -> v0_1::risk_rule::ProposedOrder {
    v0_1::risk_rule::ProposedOrder {
        symbol: o.symbol.clone(),
        side: side(o.side),
        size_usd: o.size_usd,
        price: o.price,
        stop_loss: o.stop_loss,
    }
}

fn threshold(t: &now::Threshold) -> old::Threshold {
    old::Threshold {
        name: t.name.clone(),
        value: t.value,
    }
}

pub fn thresholds(t: &[now::Threshold]) -> Vec<old::Threshold> {
    t.iter().map(threshold).collect()
}

pub fn risk_context(c: &RiskContext) -> v0_1::risk_rule::RiskContext {
    v0_1::risk_rule::RiskContext {
        account: account(&c.account),
        positions: c.positions.iter().map(position).collect(),
        daily_pnl: c.daily_pnl,
        trades_today: c.trades_today,
        thresholds: thresholds(&c.thresholds),
    }
}

pub fn verdict(v: old::Verdict) -> now::Verdict {
    match v {
        old::Verdict::Allow => now::Verdict::Allow,
        old::Verdict::Resize(size) => now::Verdict::Resize(size),
        old::Verdict::Deny(reason) => now::Verdict::Deny(reason),
    }
}

pub fn kpi(k: &now::KpiSnapshot) -> old::KpiSnapshot {
    old::KpiSnapshot {
        timestamp_ms: k.timestamp_ms,
        account_value: k.account_value,
        cash_balance: k.cash_balance,
        total_return_pct: k.total_return_pct,
        daily_return_pct: k.daily_return_pct,
        current_drawdown_pct: k.current_drawdown_pct,
        max_drawdown_pct: k.max_drawdown_pct,
        win_rate_pct: k.win_rate_pct,
        profit_factor: k.profit_factor,
        sharpe_ratio: k.sharpe_ratio,
        total_trades: k.total_trades,
        winning_trades: k.winning_trades,
        losing_trades: k.losing_trades,
        consecutive_losses: k.consecutive_losses,
        active_positions: k.active_positions,
        exposure_pct: k.exposure_pct,
        largest_position_pct: k.largest_position_pct,
    }
}

pub fn alarm(a: old::Alarm) -> now::Alarm {
    now::Alarm {
        level: match a.level {
            old::AlarmLevel::Warning => now::AlarmLevel::Warning,
            old::AlarmLevel::Critical => now::AlarmLevel::Critical,
            old::AlarmLevel::Emergency => now::AlarmLevel::Emergency,
        },
        alarm_type: a.alarm_type,
        message: a.message,
        current_value: a.current_value,
        threshold_value: a.threshold_value,
        recommended_action: a.recommended_action,
    }
}

// ----- brokers -----

pub fn broker_info(i: v0_1::broker::BrokerInfo) -> BrokerInfo {
    BrokerInfo {
        name: i.name,
        display_name: i.display_name,
        version: i.version,
        capabilities: i.capabilities,
    }
}

pub fn credentials(c: &Credentials) -> v0_1::broker::Credentials {
    v0_1::broker::Credentials {
        api_key: c.api_key.clone(),
        api_secret: c.api_secret.clone(),
        params: c.params.clone(),
    }
}

pub fn account_check(c: v0_1::broker::AccountCheck) -> AccountCheck {
    AccountCheck {
        permissions: c.permissions,
    }
}

/// A 0.1.0 broker's errors: `unavailable` keeps meaning the outcome is unknown.
pub fn broker_error(e: old::BrokerError) -> now::BrokerError {
    match e {
        old::BrokerError::Auth(m) => now::BrokerError::Auth(m),
        old::BrokerError::Rejected(m) => now::BrokerError::Rejected(m),
        old::BrokerError::InsufficientFunds(m) => now::BrokerError::InsufficientFunds(m),
        old::BrokerError::RateLimited(ms) => now::BrokerError::RateLimited(ms),
        old::BrokerError::Unavailable(m) => now::BrokerError::Unavailable(m),
        old::BrokerError::Unsupported(m) => now::BrokerError::Unsupported(m),
    }
}

pub fn candles_back(candles: Vec<old::Candle>) -> Vec<now::Candle> {
    candles.into_iter().map(candle_back).collect()
}

pub fn balances(b: v0_1::broker::Balance) -> Vec<now::AssetBalance> {
    vec![now::AssetBalance {
        asset: b.currency,
        free: decimal_text(b.cash),
        locked: "0".into(),
    }]
}

pub fn positions(positions: Vec<v0_1::broker::BrokerPosition>) -> Vec<BrokerPosition> {
    positions
        .into_iter()
        .map(|p| BrokerPosition {
            symbol: p.symbol,
            side: side_back(p.side),
            quantity: decimal_text(p.quantity),
            entry_price: Some(decimal_text(p.entry_price)),
        })
        .collect()
}

/// The order for a 0.1.0 broker; `None` when a decimal does not fit an f64 exactly enough.
pub fn order_request(o: &now::OrderRequest) -> Option<old::OrderRequest> {
    let number = |text: &str| text.parse::<f64>().ok().filter(|v| v.is_finite());
    Some(old::OrderRequest {
        client_order_id: o.client_order_id.clone(),
        symbol: o.symbol.clone(),
        side: match o.side {
            now::OrderSide::Buy => old::OrderSide::Buy,
            now::OrderSide::Sell => old::OrderSide::Sell,
        },
        quantity: number(&o.quantity)?,
        kind: match o.kind {
            now::OrderKind::Market => old::OrderKind::Market,
            now::OrderKind::Limit => old::OrderKind::Limit,
        },
        limit_price: match &o.limit_price {
            Some(price) => Some(number(price)?),
            None => None,
        },
        reduce_only: o.reduce_only,
    })
}

/// A 0.1.0 fill answers the order completely: a filled order with that one fill.
pub fn filled_report(order: &now::OrderRequest, fill: old::Fill) -> now::OrderReport {
    let quantity = decimal_text(fill.quantity);
    now::OrderReport {
        order_id: fill.order_id.clone(),
        client_order_id: fill.client_order_id.clone(),
        symbol: fill.symbol.clone(),
        side: order.side,
        status: now::OrderStatus::Filled,
        quantity: order.quantity.clone(),
        filled_quantity: quantity.clone(),
        fills: vec![now::Fill {
            trade_id: fill.order_id.clone(),
            order_id: fill.order_id,
            client_order_id: fill.client_order_id,
            symbol: fill.symbol,
            side: match fill.side {
                old::OrderSide::Buy => now::OrderSide::Buy,
                old::OrderSide::Sell => now::OrderSide::Sell,
            },
            quantity,
            price: decimal_text(fill.price),
            fee: decimal_text(fill.fee),
            timestamp_ms: fill.timestamp_ms,
        }],
        reason: None,
        updated_at_ms: fill.timestamp_ms,
    }
}

pub fn unsupported(what: &str) -> now::BrokerError {
    now::BrokerError::Unsupported(format!(
        "{what} is not part of the 0.1.0 broker interface this plugin was built against"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_become_decimals_at_eight_places() {
        assert_eq!(decimal_text(0.1 + 0.2), "0.3");
        assert_eq!(decimal_text(61_234.567_891_234), "61234.56789123");
        assert_eq!(decimal_text(2.0), "2");
        assert_eq!(decimal_text(f64::NAN), "NaN");
    }

    #[test]
    fn a_fill_answers_its_order_as_filled() {
        let order = now::OrderRequest {
            client_order_id: "c1".into(),
            symbol: "BTC-USD".into(),
            side: now::OrderSide::Buy,
            quantity: "0.5".into(),
            kind: now::OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        };
        let old_order = order_request(&order).unwrap();
        assert_eq!(old_order.quantity, 0.5);
        let report = filled_report(
            &order,
            old::Fill {
                order_id: "v1".into(),
                client_order_id: "c1".into(),
                symbol: "BTC-USD".into(),
                side: old::OrderSide::Buy,
                quantity: 0.5,
                price: 60_000.123,
                fee: 30.0000615,
                timestamp_ms: 7,
            },
        );
        assert_eq!(report.status, now::OrderStatus::Filled);
        assert_eq!(report.filled_quantity, "0.5");
        assert_eq!(report.fills[0].trade_id, "v1");
        assert_eq!(report.fills[0].price, "60000.123");
        assert_eq!(report.fills[0].fee, "30.0000615");
    }
}
