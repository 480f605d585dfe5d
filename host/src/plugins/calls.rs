//! Typed calls into each world, with every answer checked before the host uses it: a plugin
//! that returns NaN prices, negative sizes, unknown symbols or floods of output has broken its
//! contract, and the call fails with [`PluginError::Contract`].

use std::collections::HashSet;
use std::sync::Arc;

use super::PluginKind;
use super::bindings::broker::{AccountCheck, BrokerInfo, BrokerPosition, Credentials};
use super::bindings::risk_rule::{ProposedOrder, RiskContext};
use super::bindings::strategy::{Evaluation, ScanContext};
use super::bindings::types::{
    Alarm, AssetBalance, Candle, Fill, Instrument, OrderQuery, OrderReport, OrderRequest,
    PluginError as GuestError, Signal, SignalAction, Threshold, Verdict,
};
use super::bindings::types::{BrokerError, KpiSnapshot, PluginInfo};
use super::bindings::v0_1;
use super::error::PluginError;
use super::legacy;
use super::manifest::CLIENT_ORDER_ID;
use super::registry::LoadedPlugin;
use super::runtime::{CallTarget, PluginRuntime, Prepared};
use super::state::PluginState;
use super::store_access::HeldWrites;

pub const MAX_STATE_BYTES: usize = 64 * 1024;
pub const MAX_SIGNALS_PER_SYMBOL: usize = 4;
pub const MAX_ALARMS: usize = 64;
const MAX_TEXT: usize = 2048;
/// Longest id (order, trade, client order id) or symbol a broker may answer.
const MAX_ID: usize = 128;
/// Most items (orders, fills, balances, positions) one broker answer may list.
pub const MAX_ITEMS: usize = 1000;

/// A user's account at a broker: the call is made on the user's behalf (it reaches their store
/// and runs alone among that broker's calls for them).
#[derive(Clone)]
pub struct BrokerAccount {
    pub user_id: String,
    pub credentials: Credentials,
}

/// The active version of a plugin, resolved at the start of a call: a swap while the call runs
/// does not affect it (it finishes on the version it started with).
#[derive(Clone)]
pub struct Active {
    pub plugin: Arc<LoadedPlugin>,
    pub target: CallTarget,
}

/// What a plugin says about itself, whatever its world.
#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, serde::Serialize)]
pub struct Description {
    pub name: String,
    pub version: String,
    pub display_name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
}

pub(super) fn contract(target: &CallTarget, detail: impl Into<String>) -> PluginError {
    PluginError::Contract {
        plugin: target.name.to_string(),
        detail: detail.into(),
    }
}

pub(super) fn guest(target: &CallTarget, err: GuestError) -> PluginError {
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
            Prepared::Strategy(pre, _) => {
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
            Prepared::StrategyV0_1(pre) => {
                let info = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                from_info(legacy::plugin_info(info))
            }
            Prepared::RiskRuleV0_1(pre) => {
                let info = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                from_info(legacy::plugin_info(info))
            }
            Prepared::Broker(pre) => {
                let info: BrokerInfo = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                from_broker_info(info)
            }
            Prepared::BrokerV0_1(pre) => {
                let info = self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_describe(&mut *store)
                })?;
                from_broker_info(legacy::broker_info(info))
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
        let target = &active.target;
        let evaluation = match &active.plugin.prepared {
            Prepared::Strategy(pre, _) => self.call(target, pre, |store, pre| {
                pre.instantiate(&mut *store)?
                    .call_evaluate(&mut *store, ctx)
            })?,
            Prepared::StrategyV0_1(pre) => {
                let old = legacy::scan_context(ctx);
                self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_evaluate(&mut *store, &old)
                })?
                .map(legacy::evaluation)
                .map_err(legacy::plugin_error)
            }
            _ => return Err(wrong_kind(active, PluginKind::Strategy)),
        }
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
        let target = &active.target;
        let verdict = match &active.plugin.prepared {
            Prepared::RiskRule(pre) => self.call(target, pre, |store, pre| {
                pre.instantiate(&mut *store)?
                    .call_check_order(&mut *store, order, ctx)
            })?,
            Prepared::RiskRuleV0_1(pre) => {
                let (order, ctx) = (legacy::proposed_order(order), legacy::risk_context(ctx));
                legacy::verdict(self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_check_order(&mut *store, &order, &ctx)
                })?)
            }
            _ => return Err(wrong_kind(active, PluginKind::RiskRule)),
        };
        check_verdict(target, order, verdict)
    }

    pub fn evaluate_alarms(
        &self,
        active: &Active,
        kpi: &KpiSnapshot,
        thresholds: &[Threshold],
    ) -> Result<Vec<Alarm>, PluginError> {
        let target = &active.target;
        let alarms = match &active.plugin.prepared {
            Prepared::RiskRule(pre) => self.call(target, pre, |store, pre| {
                pre.instantiate(&mut *store)?
                    .call_evaluate_alarms(&mut *store, *kpi, thresholds)
            })?,
            Prepared::RiskRuleV0_1(pre) => {
                let (kpi, thresholds) = (legacy::kpi(kpi), legacy::thresholds(thresholds));
                self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_evaluate_alarms(
                        &mut *store,
                        kpi,
                        &thresholds,
                    )
                })?
                .into_iter()
                .map(legacy::alarm)
                .collect()
            }
            _ => return Err(wrong_kind(active, PluginKind::RiskRule)),
        };
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
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, "") {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => self.call(target, pre, |store, pre| {
                pre.instantiate(&mut *store)?
                    .call_validate_credentials(&mut *store, creds)
            })?,
            Prepared::BrokerV0_1(pre) => {
                let creds = legacy::credentials(creds);
                self.call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_validate_credentials(&mut *store, &creds)
                })?
                .map(legacy::account_check)
                .map_err(legacy::broker_error)
            }
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(check) = &result
            && (check.permissions.len() > 64 || check.permissions.iter().any(|p| p.len() > MAX_ID))
        {
            return Err(contract(target, "oversized permissions"));
        }
        Ok(self
            .rate_gate
            .observe(&target.name, "", result.map_err(bounded_error)))
    }

    /// Every asset the account holds.
    pub fn broker_balances(
        &self,
        active: &Active,
        account: &BrokerAccount,
    ) -> Result<Result<Vec<AssetBalance>, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_balances(&mut *store, &account.credentials)
                })?
            }
            Prepared::BrokerV0_1(pre) => {
                let creds = legacy::credentials(&account.credentials);
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_balance(&mut *store, &creds)
                })?
                .map(legacy::balances)
                .map_err(legacy::broker_error)
            }
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(balances) = &result {
            check_balances(balances).map_err(|detail| contract(target, detail))?;
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    /// What the venue holds for the account, per instrument.
    pub fn broker_positions(
        &self,
        active: &Active,
        account: &BrokerAccount,
    ) -> Result<Result<Vec<BrokerPosition>, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_positions(&mut *store, &account.credentials)
                })?
            }
            Prepared::BrokerV0_1(pre) => {
                let creds = legacy::credentials(&account.credentials);
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?
                        .call_positions(&mut *store, &creds)
                })?
                .map(legacy::positions)
                .map_err(legacy::broker_error)
            }
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(positions) = &result {
            check_positions(positions).map_err(|detail| contract(target, detail))?;
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    /// The trading rules of `symbol`.
    pub fn broker_instrument(
        &self,
        active: &Active,
        account: &BrokerAccount,
        symbol: &str,
    ) -> Result<Result<Instrument, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_instrument(
                        &mut *store,
                        &account.credentials,
                        symbol,
                    )
                })?
            }
            Prepared::BrokerV0_1(_) => Err(legacy::unsupported("instrument")),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(instrument) = &result {
            check_instrument(instrument, symbol).map_err(|detail| contract(target, detail))?;
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    pub fn broker_candles(
        &self,
        active: &Active,
        symbol: &str,
        interval: &str,
        limit: u32,
        end_ms: i64,
    ) -> Result<Result<Vec<Candle>, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, "") {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => self.call(target, pre, |store, pre| {
                pre.instantiate(&mut *store)?.call_candles(
                    &mut *store,
                    symbol,
                    interval,
                    limit,
                    end_ms,
                )
            })?,
            Prepared::BrokerV0_1(pre) => self
                .call(target, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_candles(
                        &mut *store,
                        symbol,
                        interval,
                        limit,
                        end_ms,
                    )
                })?
                .map(legacy::candles_back)
                .map_err(legacy::broker_error),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(candles) = &result {
            check_candles(candles, limit, end_ms).map_err(|detail| contract(target, detail))?;
        }
        Ok(self
            .rate_gate
            .observe(&target.name, "", result.map_err(bounded_error)))
    }

    /// Places an order; the venue's report of it (a 0.1.0 broker's fill as a filled order).
    pub fn broker_place_order(
        &self,
        active: &Active,
        account: &BrokerAccount,
        order: &OrderRequest,
    ) -> Result<Result<OrderReport, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_place_order(
                        &mut *store,
                        &account.credentials,
                        order,
                    )
                })?
            }
            Prepared::BrokerV0_1(pre) => return self.place_order_v0_1(active, account, order, pre),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        self.placed(target, account, order, result)
    }

    /// Places an order whose client id has never been sent to a venue: the engine writes each
    /// order to its books before sending it and never sends a client id twice. The plugin's
    /// record of an order under that id (its manifest's `order_key`) is therefore absent, and its
    /// check for one reads no database. The call's store writes are held back for the caller to
    /// write with its booking of the answer ([`PluginRuntime::call_holding_writes`]; `None`: the
    /// call was not made, or the broker has no store).
    #[allow(clippy::type_complexity)]
    pub fn broker_place_new_order(
        &self,
        active: &Active,
        account: &BrokerAccount,
        order: &OrderRequest,
    ) -> (
        Result<Result<OrderReport, BrokerError>, PluginError>,
        Option<HeldWrites>,
    ) {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return (Ok(Err(wait)), None);
        }
        let Prepared::Broker(pre) = &active.plugin.prepared else {
            return (self.broker_place_order(active, account, order), None);
        };
        let absent = active
            .plugin
            .manifest
            .order_key
            .as_ref()
            .map(|key| key.replacen(CLIENT_ORDER_ID, &order.client_order_id, 1));
        let (result, held) =
            self.call_holding_writes(target, &account.user_id, pre, |store, pre| {
                if let Some(key) = absent {
                    store.data_mut().know_absent(key);
                }
                pre.instantiate(&mut *store)?.call_place_order(
                    &mut *store,
                    &account.credentials,
                    order,
                )
            });
        let answer = result.and_then(|result| self.placed(target, account, order, result));
        (answer, Some(held))
    }

    fn place_order_v0_1(
        &self,
        active: &Active,
        account: &BrokerAccount,
        order: &OrderRequest,
        pre: &v0_1::broker::BrokerPre<PluginState>,
    ) -> Result<Result<OrderReport, BrokerError>, PluginError> {
        let creds = legacy::credentials(&account.credentials);
        let Some(old) = legacy::order_request(order) else {
            return Ok(Err(BrokerError::Invalid(
                "the order's numbers do not fit the 0.1.0 interface".into(),
            )));
        };
        let result = self
            .call_for(&active.target, &account.user_id, pre, |store, pre| {
                pre.instantiate(&mut *store)?
                    .call_place_order(&mut *store, &creds, &old)
            })?
            .map(|fill| legacy::filled_report(order, fill))
            .map_err(legacy::broker_error);
        self.placed(&active.target, account, order, result)
    }

    /// A placed order's answer, checked against the contract and seen by the rate gate.
    fn placed(
        &self,
        target: &CallTarget,
        account: &BrokerAccount,
        order: &OrderRequest,
        result: Result<OrderReport, BrokerError>,
    ) -> Result<Result<OrderReport, BrokerError>, PluginError> {
        if let Ok(report) = &result {
            check_report(report, Some(order)).map_err(|detail| contract(target, detail))?;
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    /// The venue's current report of one order.
    pub fn broker_get_order(
        &self,
        active: &Active,
        account: &BrokerAccount,
        query: &OrderQuery,
    ) -> Result<Result<OrderReport, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_get_order(
                        &mut *store,
                        &account.credentials,
                        query,
                    )
                })?
            }
            Prepared::BrokerV0_1(_) => Err(legacy::unsupported("get-order")),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(report) = &result {
            check_report(report, None).map_err(|detail| contract(target, detail))?;
            let named = query
                .client_order_id
                .as_ref()
                .is_none_or(|id| *id == report.client_order_id)
                && query
                    .order_id
                    .as_ref()
                    .is_none_or(|id| *id == report.order_id)
                && report.symbol == query.symbol;
            if !named {
                return Err(contract(target, "get-order answered a different order"));
            }
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    /// Orders still working at the venue.
    pub fn broker_open_orders(
        &self,
        active: &Active,
        account: &BrokerAccount,
        symbol: Option<&str>,
    ) -> Result<Result<Vec<OrderReport>, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let symbol = symbol.map(str::to_string);
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_open_orders(
                        &mut *store,
                        &account.credentials,
                        symbol.as_deref(),
                    )
                })?
            }
            Prepared::BrokerV0_1(_) => Err(legacy::unsupported("open-orders")),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(reports) = &result {
            if reports.len() > MAX_ITEMS {
                return Err(contract(
                    target,
                    format!("{} open orders listed", reports.len()),
                ));
            }
            for report in reports {
                check_report(report, None).map_err(|detail| contract(target, detail))?;
            }
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    /// Fills at or after `since_ms`, oldest first.
    pub fn broker_fills_since(
        &self,
        active: &Active,
        account: &BrokerAccount,
        since_ms: i64,
        symbol: Option<&str>,
    ) -> Result<Result<Vec<Fill>, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let symbol = symbol.map(str::to_string);
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_fills_since(
                        &mut *store,
                        &account.credentials,
                        since_ms,
                        symbol.as_deref(),
                    )
                })?
            }
            Prepared::BrokerV0_1(_) => Err(legacy::unsupported("fills-since")),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(fills) = &result {
            if fills.len() > MAX_ITEMS * 2 {
                return Err(contract(target, format!("{} fills listed", fills.len())));
            }
            for fill in fills {
                check_fill(fill).map_err(|detail| contract(target, detail))?;
                if fill.timestamp_ms < since_ms {
                    return Err(contract(target, "a fill from before the cursor"));
                }
            }
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }

    /// Cancels a working order.
    pub fn broker_cancel_order(
        &self,
        active: &Active,
        account: &BrokerAccount,
        query: &OrderQuery,
    ) -> Result<Result<OrderReport, BrokerError>, PluginError> {
        let target = &active.target;
        if let Some(wait) = self.rate_gate.closed(&target.name, &account.user_id) {
            return Ok(Err(wait));
        }
        let result = match &active.plugin.prepared {
            Prepared::Broker(pre) => {
                self.call_for(target, &account.user_id, pre, |store, pre| {
                    pre.instantiate(&mut *store)?.call_cancel_order(
                        &mut *store,
                        &account.credentials,
                        query,
                    )
                })?
            }
            Prepared::BrokerV0_1(_) => Err(legacy::unsupported("cancel-order")),
            _ => return Err(wrong_kind(active, PluginKind::Broker)),
        };
        if let Ok(report) = &result {
            check_report(report, None).map_err(|detail| contract(target, detail))?;
        }
        Ok(self.rate_gate.observe(
            &target.name,
            &account.user_id,
            result.map_err(bounded_error),
        ))
    }
}

fn wrong_kind(active: &Active, expected: PluginKind) -> PluginError {
    PluginError::NotFound {
        kind: expected.as_str(),
        name: active.target.name.to_string(),
    }
}

fn from_broker_info(info: BrokerInfo) -> Description {
    Description {
        name: info.name,
        version: info.version,
        display_name: info.display_name,
        description: String::new(),
        capabilities: info.capabilities,
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

/// A verdict may shrink an order, never grow it, and say why in a reason of sane length.
pub fn check_verdict(
    target: &CallTarget,
    order: &ProposedOrder,
    verdict: Verdict,
) -> Result<Verdict, PluginError> {
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
    check_signals(&evaluation.signals, known.len(), |symbol| {
        known.contains(symbol)
    })
}

/// Signals must name a symbol the scan knows (`known_count` of them), at most a few each, with
/// sizes, levels and confidence in range.
pub fn check_signals(
    signals: &[Signal],
    known_count: usize,
    is_known: impl Fn(&str) -> bool,
) -> Result<(), String> {
    let max_signals = (known_count * MAX_SIGNALS_PER_SYMBOL).max(MAX_SIGNALS_PER_SYMBOL);
    if signals.len() > max_signals {
        return Err(format!(
            "{} signals for {known_count} symbols (at most {max_signals})",
            signals.len(),
        ));
    }
    for signal in signals {
        if !is_known(signal.symbol.as_str()) {
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

/// A broker's error with its text cut to a sane length.
fn bounded_error(err: BrokerError) -> BrokerError {
    let cut = |text: String| text.chars().take(MAX_TEXT).collect::<String>();
    match err {
        BrokerError::Auth(m) => BrokerError::Auth(cut(m)),
        BrokerError::Rejected(m) => BrokerError::Rejected(cut(m)),
        BrokerError::InsufficientFunds(m) => BrokerError::InsufficientFunds(cut(m)),
        BrokerError::Invalid(m) => BrokerError::Invalid(cut(m)),
        BrokerError::Unsupported(m) => BrokerError::Unsupported(cut(m)),
        BrokerError::NotFound(m) => BrokerError::NotFound(cut(m)),
        BrokerError::RateLimited(ms) => BrokerError::RateLimited(ms),
        BrokerError::Unreachable(m) => BrokerError::Unreachable(cut(m)),
        BrokerError::Timeout(m) => BrokerError::Timeout(cut(m)),
        BrokerError::Unavailable(m) => BrokerError::Unavailable(cut(m)),
    }
}

fn id_ok(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID
}

/// The largest magnitude a broker's price, quantity or money figure may have: far beyond any
/// real one, and small enough that products of two stay exact (no overflow in the books).
const MAX_MAGNITUDE: rust_decimal::Decimal =
    rust_decimal::Decimal::from_parts(0xD4A5_1000, 0xE8, 0, false, 0);

fn bounded(field: &str, text: &str) -> Result<rust_decimal::Decimal, String> {
    let value = super::decimal::parse(text).map_err(|err| format!("{field}: {err}"))?;
    if value.abs() > MAX_MAGNITUDE {
        return Err(format!("{field} {value} is out of range"));
    }
    Ok(value)
}

fn positive(field: &str, text: &str) -> Result<rust_decimal::Decimal, String> {
    let value = bounded(field, text)?;
    if value <= rust_decimal::Decimal::ZERO {
        return Err(format!("{field} {value} is not positive"));
    }
    Ok(value)
}

fn not_negative(field: &str, text: &str) -> Result<rust_decimal::Decimal, String> {
    let value = bounded(field, text)?;
    if value < rust_decimal::Decimal::ZERO {
        return Err(format!("{field} {value} is negative"));
    }
    Ok(value)
}

/// One execution: ids (the client order id may be empty: some venues' trade lists do not carry
/// it), a positive quantity and price, a fee no larger than what was traded.
pub fn check_fill(fill: &Fill) -> Result<(), String> {
    if !(id_ok(&fill.trade_id)
        && id_ok(&fill.order_id)
        && fill.client_order_id.len() <= MAX_ID
        && id_ok(&fill.symbol))
    {
        return Err("a fill without its ids".into());
    }
    let quantity = positive("fill quantity", &fill.quantity)?;
    let price = positive("fill price", &fill.price)?;
    let fee = bounded("fill fee", &fill.fee)?;
    if fee.abs() > quantity * price {
        return Err(format!("fill fee {fee} exceeds what was traded"));
    }
    Ok(())
}

/// An order report: ids, sane numbers, fills of this order that add up to no more than it, and
/// (for a placed order) the order that was asked for.
pub fn check_report(report: &OrderReport, request: Option<&OrderRequest>) -> Result<(), String> {
    if !(id_ok(&report.order_id) && id_ok(&report.client_order_id) && id_ok(&report.symbol)) {
        return Err("an order report without its ids".into());
    }
    if report.reason.as_ref().is_some_and(|r| r.len() > MAX_TEXT) || report.fills.len() > MAX_ITEMS
    {
        return Err("an oversized order report".into());
    }
    let quantity = positive("order quantity", &report.quantity)?;
    let filled = not_negative("filled quantity", &report.filled_quantity)?;
    if filled > quantity {
        return Err(format!("{filled} filled of an order for {quantity}"));
    }
    for fill in &report.fills {
        check_fill(fill)?;
        if fill.client_order_id != report.client_order_id
            || fill.symbol != report.symbol
            || fill.side != report.side
        {
            return Err("a fill of another order in the report".into());
        }
    }
    if let Some(request) = request {
        let asked = report.client_order_id == request.client_order_id
            && report.symbol == request.symbol
            && report.side == request.side
            && super::decimal::parse(&request.quantity).is_ok_and(|q| q == quantity);
        if !asked {
            return Err(format!(
                "the report does not match order {}",
                request.client_order_id
            ));
        }
    }
    Ok(())
}

fn check_balances(balances: &[AssetBalance]) -> Result<(), String> {
    if balances.len() > MAX_ITEMS {
        return Err(format!("{} balances listed", balances.len()));
    }
    for balance in balances {
        if !id_ok(&balance.asset) {
            return Err("a balance without its asset".into());
        }
        bounded("balance", &balance.free)?;
        not_negative("locked balance", &balance.locked)?;
    }
    Ok(())
}

fn check_positions(positions: &[BrokerPosition]) -> Result<(), String> {
    if positions.len() > MAX_ITEMS {
        return Err(format!("{} positions listed", positions.len()));
    }
    for position in positions {
        if !id_ok(&position.symbol) {
            return Err("a position without its symbol".into());
        }
        not_negative("position quantity", &position.quantity)?;
        if let Some(price) = &position.entry_price {
            not_negative("entry price", price)?;
        }
    }
    Ok(())
}

fn check_instrument(instrument: &Instrument, symbol: &str) -> Result<(), String> {
    if instrument.symbol != symbol {
        return Err(format!(
            "asked for {symbol}, answered {}",
            instrument.symbol
        ));
    }
    if !(id_ok(&instrument.base_asset) && id_ok(&instrument.quote_asset)) {
        return Err("an instrument without its assets".into());
    }
    positive("tick size", &instrument.tick_size)?;
    positive("lot size", &instrument.lot_size)?;
    not_negative("minimum quantity", &instrument.min_quantity)?;
    not_negative("minimum notional", &instrument.min_notional)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::bindings::types::{OrderSide, OrderStatus};

    fn fill(quantity: &str, price: &str, fee: &str) -> Fill {
        Fill {
            trade_id: "t1".into(),
            order_id: "o1".into(),
            client_order_id: "c1".into(),
            symbol: "BTC-USD".into(),
            side: OrderSide::Buy,
            quantity: quantity.into(),
            price: price.into(),
            fee: fee.into(),
            timestamp_ms: 1,
        }
    }

    #[test]
    fn fills_must_be_sane_numbers() {
        assert_eq!(
            MAX_MAGNITUDE,
            rust_decimal::Decimal::from(1_000_000_000_000i64)
        );
        assert!(check_fill(&fill("0.5", "60000", "30")).is_ok());
        assert!(check_fill(&fill("0.5", "60000", "-3")).is_ok(), "a rebate");
        for (quantity, price, fee) in [
            ("0", "60000", "0"),
            ("-1", "60000", "0"),
            ("0.5", "0", "0"),
            ("0.5", "1e5", "0"),
            ("NaN", "60000", "0"),
            ("0.5", "60000", "40000"),
            ("1000000000001", "1", "0"),
            ("1", "99999999999999999999999999", "0"),
            ("1", "1", "-99999999999999999999999999"),
        ] {
            assert!(
                check_fill(&fill(quantity, price, fee)).is_err(),
                "{quantity} {price} {fee}"
            );
        }
    }

    #[test]
    fn a_report_must_be_of_the_order_asked_for() {
        let order = OrderRequest {
            client_order_id: "c1".into(),
            symbol: "BTC-USD".into(),
            side: OrderSide::Buy,
            quantity: "0.5".into(),
            kind: crate::plugins::bindings::types::OrderKind::Market,
            limit_price: None,
            reduce_only: false,
        };
        let report = OrderReport {
            order_id: "o1".into(),
            client_order_id: "c1".into(),
            symbol: "BTC-USD".into(),
            side: OrderSide::Buy,
            status: OrderStatus::Filled,
            quantity: "0.5".into(),
            filled_quantity: "0.5".into(),
            fills: vec![fill("0.5", "60000", "30")],
            reason: None,
            updated_at_ms: 1,
        };
        assert!(check_report(&report, Some(&order)).is_ok());
        let other = OrderReport {
            client_order_id: "c2".into(),
            ..report.clone()
        };
        assert!(check_report(&other, Some(&order)).is_err());
        let overfilled = OrderReport {
            filled_quantity: "0.6".into(),
            ..report.clone()
        };
        assert!(check_report(&overfilled, None).is_err());
        let foreign_fill = OrderReport {
            fills: vec![Fill {
                client_order_id: "c9".into(),
                ..fill("0.5", "1", "0")
            }],
            ..report.clone()
        };
        assert!(check_report(&foreign_fill, None).is_err());
        let bigger = OrderRequest {
            quantity: "0.7".into(),
            ..order
        };
        assert!(check_report(&report, Some(&bigger)).is_err());
    }
}
