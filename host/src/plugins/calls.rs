//! Typed calls into each world, with every answer checked before the host uses it: a plugin
//! that returns NaN prices, negative sizes, unknown symbols or floods of output has broken its
//! contract, and the call fails with [`PluginError::Contract`].

use std::collections::HashSet;
use std::sync::Arc;

use super::PluginKind;
use super::bindings::broker::{AccountCheck, Balance, BrokerInfo, Credentials};
use super::bindings::risk_rule::{ProposedOrder, RiskContext};
use super::bindings::strategy::{Evaluation, ScanContext};
use super::bindings::types::{
    Alarm, Candle, Fill, OrderRequest, PluginError as GuestError, SignalAction, Threshold, Verdict,
};
use super::bindings::types::{BrokerError, KpiSnapshot, PluginInfo};
use super::error::PluginError;
use super::registry::LoadedPlugin;
use super::runtime::{CallTarget, PluginRuntime, Prepared};

pub const MAX_STATE_BYTES: usize = 64 * 1024;
pub const MAX_SIGNALS_PER_SYMBOL: usize = 4;
pub const MAX_ALARMS: usize = 64;
const MAX_TEXT: usize = 2048;

/// The active version of a plugin, resolved at the start of a call: a swap while the call runs
/// does not affect it (it finishes on the version it started with).
#[derive(Clone)]
pub struct Active {
    pub plugin: Arc<LoadedPlugin>,
    pub target: CallTarget,
}

/// What a plugin says about itself, whatever its world.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Description {
    pub name: String,
    pub version: String,
    pub display_name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

fn contract(target: &CallTarget, detail: impl Into<String>) -> PluginError {
    PluginError::Contract {
        plugin: target.name.to_string(),
        detail: detail.into(),
    }
}

fn guest(target: &CallTarget, err: GuestError) -> PluginError {
    let detail = match err {
        GuestError::InvalidInput(msg) => format!("invalid input: {msg}"),
        GuestError::Internal(msg) => msg,
    };
    PluginError::Guest {
        plugin: target.name.to_string(),
        detail: detail.chars().take(MAX_TEXT).collect(),
    }
}

fn finite_positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

impl PluginRuntime {
    pub fn describe(
        &self,
        target: &CallTarget,
        prepared: &Prepared,
    ) -> Result<Description, PluginError> {
        let description = match prepared {
            Prepared::Strategy(pre) => {
                let info = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                from_info(info)
            }
            Prepared::RiskRule(pre) => {
                let info = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                from_info(info)
            }
            Prepared::Broker(pre) => {
                let info: BrokerInfo = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                Description {
                    name: info.name,
                    version: info.version,
                    display_name: info.display_name,
                    description: String::new(),
                    capabilities: info.capabilities,
                }
            }
        };
        let too_long = [
            &description.name,
            &description.version,
            &description.display_name,
            &description.description,
        ]
        .iter()
        .any(|text| text.len() > MAX_TEXT);
        if too_long || description.capabilities.len() > 64 {
            return Err(contract(target, "describe returned oversized fields"));
        }
        Ok(description)
    }

    pub fn evaluate_strategy(
        &self,
        active: &Active,
        ctx: &ScanContext,
    ) -> Result<Evaluation, PluginError> {
        let Prepared::Strategy(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::Strategy));
        };
        let target = &active.target;
        let evaluation = self
            .call(target, pre, |store, pre| {
                pre.instantiate(&mut *store)?
                    .call_evaluate(&mut *store, ctx)
            })?
            .map_err(|err| guest(target, err))?;
        check_evaluation(ctx, &evaluation).map_err(|detail| contract(target, detail))?;
        Ok(evaluation)
    }

    pub fn check_order(
        &self,
        active: &Active,
        order: &ProposedOrder,
        ctx: &RiskContext,
    ) -> Result<Verdict, PluginError> {
        let Prepared::RiskRule(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::RiskRule));
        };
        let target = &active.target;
        let verdict = self.call(target, pre, |store, pre| {
            pre.instantiate(&mut *store)?
                .call_check_order(&mut *store, order, ctx)
        })?;
        match &verdict {
            Verdict::Resize(size) if !(finite_positive(*size) && *size <= order.size_usd) => {
                Err(contract(
                    target,
                    format!(
                        "resize to {size} is not a positive size at most the order's {}",
                        order.size_usd
                    ),
                ))
            }
            Verdict::Deny(reason) if reason.len() > MAX_TEXT => {
                Err(contract(target, "deny reason too long"))
            }
            _ => Ok(verdict),
        }
    }

    pub fn evaluate_alarms(
        &self,
        active: &Active,
        kpi: &KpiSnapshot,
        thresholds: &[Threshold],
    ) -> Result<Vec<Alarm>, PluginError> {
        let Prepared::RiskRule(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::RiskRule));
        };
        let target = &active.target;
        let alarms = self.call(target, pre, |store, pre| {
            pre.instantiate(&mut *store)?
                .call_evaluate_alarms(&mut *store, *kpi, thresholds)
        })?;
        if alarms.len() > MAX_ALARMS {
            return Err(contract(
                target,
                format!("{} alarms returned; at most {MAX_ALARMS}", alarms.len()),
            ));
        }
        for alarm in &alarms {
            let type_ok = !alarm.alarm_type.is_empty()
                && alarm.alarm_type.len() <= 64
                && alarm
                    .alarm_type
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
            if !type_ok || !alarm.current_value.is_finite() || !alarm.threshold_value.is_finite() {
                return Err(contract(
                    target,
                    format!("malformed alarm {:?}", alarm.alarm_type),
                ));
            }
            if alarm.message.len() > MAX_TEXT || alarm.recommended_action.len() > MAX_TEXT {
                return Err(contract(target, "alarm text too long"));
            }
        }
        Ok(alarms)
    }

    pub fn broker_validate(
        &self,
        active: &Active,
        creds: &Credentials,
    ) -> Result<Result<AccountCheck, BrokerError>, PluginError> {
        let Prepared::Broker(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::Broker));
        };
        self.call(&active.target, pre, |store, pre| {
            pre.instantiate(&mut *store)?
                .call_validate_credentials(&mut *store, creds)
        })
    }

    pub fn broker_balance(
        &self,
        active: &Active,
        creds: &Credentials,
    ) -> Result<Result<Balance, BrokerError>, PluginError> {
        let Prepared::Broker(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::Broker));
        };
        let target = &active.target;
        let result = self.call(target, pre, |store, pre| {
            pre.instantiate(&mut *store)?
                .call_balance(&mut *store, creds)
        })?;
        if let Ok(balance) = &result
            && !(balance.cash.is_finite() && balance.equity.is_finite())
        {
            return Err(contract(target, "balance is not a finite number"));
        }
        Ok(result)
    }

    pub fn broker_candles(
        &self,
        active: &Active,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Result<Vec<Candle>, BrokerError>, PluginError> {
        let Prepared::Broker(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::Broker));
        };
        let target = &active.target;
        let result = self.call(target, pre, |store, pre| {
            pre.instantiate(&mut *store)?
                .call_candles(&mut *store, symbol, interval, limit, end_ms)
        })?;
        if let Ok(candles) = &result {
            check_candles(candles, limit, end_ms).map_err(|detail| contract(target, detail))?;
        }
        Ok(result)
    }

    pub fn broker_place_order(
        &self,
        active: &Active,
        creds: &Credentials,
        order: &OrderRequest,
    ) -> Result<Result<Fill, BrokerError>, PluginError> {
        let Prepared::Broker(pre) = &active.plugin.prepared else {
            return Err(wrong_kind(active, PluginKind::Broker));
        };
        let target = &active.target;
        let result = self.call(target, pre, |store, pre| {
            pre.instantiate(&mut *store)?
                .call_place_order(&mut *store, creds, order)
        })?;
        if let Ok(fill) = &result {
            let consistent = fill.client_order_id == order.client_order_id
                && fill.symbol == order.symbol
                && fill.side == order.side
                && finite_positive(fill.quantity)
                && fill.quantity <= order.quantity * (1.0 + 1e-9)
                && finite_positive(fill.price)
                && fill.fee.is_finite()
                && fill.fee >= 0.0
                && !fill.order_id.is_empty();
            if !consistent {
                return Err(contract(
                    target,
                    format!("fill does not match order {}", order.client_order_id),
                ));
            }
        }
        Ok(result)
    }
}

fn wrong_kind(active: &Active, expected: PluginKind) -> PluginError {
    PluginError::NotFound {
        kind: expected.as_str(),
        name: active.target.name.to_string(),
    }
}

fn from_info(info: PluginInfo) -> Description {
    Description {
        name: info.name,
        version: info.version,
        display_name: info.display_name,
        description: info.description,
        capabilities: Vec::new(),
    }
}

/// A strategy's answer must speak only of symbols in its context, with sane numbers.
pub fn check_evaluation(ctx: &ScanContext, evaluation: &Evaluation) -> Result<(), String> {
    if evaluation.state.len() > MAX_STATE_BYTES {
        return Err(format!(
            "state of {} bytes exceeds {MAX_STATE_BYTES}",
            evaluation.state.len()
        ));
    }
    let known: HashSet<&str> = ctx
        .market
        .iter()
        .map(|series| series.symbol.as_str())
        .chain(ctx.positions.iter().map(|p| p.symbol.as_str()))
        .collect();
    let max_signals = (known.len() * MAX_SIGNALS_PER_SYMBOL).max(MAX_SIGNALS_PER_SYMBOL);
    if evaluation.signals.len() > max_signals {
        return Err(format!(
            "{} signals for {} symbols (at most {max_signals})",
            evaluation.signals.len(),
            known.len()
        ));
    }
    for signal in &evaluation.signals {
        if !known.contains(signal.symbol.as_str()) {
            return Err(format!(
                "signal for unknown symbol {:?}",
                signal.symbol.chars().take(32).collect::<String>()
            ));
        }
        let opens = matches!(
            signal.action,
            SignalAction::OpenLong | SignalAction::OpenShort
        );
        if opens && !finite_positive(signal.size_usd) {
            return Err(format!(
                "{} signal with size {}",
                signal.symbol, signal.size_usd
            ));
        }
        if !signal.size_usd.is_finite() || signal.size_usd < 0.0 {
            return Err(format!(
                "{} signal with size {}",
                signal.symbol, signal.size_usd
            ));
        }
        if signal.stop_loss.is_some_and(|sl| !finite_positive(sl))
            || signal.take_profit.iter().any(|tp| !finite_positive(*tp))
        {
            return Err(format!(
                "{} signal with a non-positive or non-finite stop or target",
                signal.symbol
            ));
        }
        if signal.take_profit.len() > 8 {
            return Err(format!(
                "{} signal with {} take-profit steps",
                signal.symbol,
                signal.take_profit.len()
            ));
        }
        if !(signal.confidence.is_finite() && (0.0..=1.0).contains(&signal.confidence)) {
            return Err(format!(
                "{} signal with confidence {}",
                signal.symbol, signal.confidence
            ));
        }
        if signal.reason.len() > MAX_TEXT {
            return Err(format!(
                "{} signal with a reason of {} bytes",
                signal.symbol,
                signal.reason.len()
            ));
        }
    }
    Ok(())
}

/// Candles must be well-formed bars, oldest first, no more than asked for, none in the future.
pub fn check_candles(candles: &[Candle], limit: u32, end_ms: i64) -> Result<(), String> {
    if candles.len() > limit as usize {
        return Err(format!("{} candles for a limit of {limit}", candles.len()));
    }
    let mut previous = i64::MIN;
    for candle in candles {
        let prices = [candle.open, candle.high, candle.low, candle.close];
        if prices.iter().any(|p| !finite_positive(*p))
            || !candle.volume.is_finite()
            || candle.volume < 0.0
        {
            return Err(format!("malformed candle at {}", candle.timestamp_ms));
        }
        if candle.high < candle.open.max(candle.close) || candle.low > candle.open.min(candle.close)
        {
            return Err(format!(
                "candle at {} has high/low outside open/close",
                candle.timestamp_ms
            ));
        }
        if candle.timestamp_ms <= previous || candle.timestamp_ms > end_ms {
            return Err(format!("candle timestamps out of order or after {end_ms}"));
        }
        previous = candle.timestamp_ms;
    }
    Ok(())
}
