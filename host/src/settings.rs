//! User settings: trading limits, notifications, advanced switches and risk-alarm thresholds.
//!
//! Only what a user changed is stored; every read fills in the defaults, some of which come from
//! the subscription tier. The engine applies the tighter of a setting and the tier's limit, so a
//! downgrade takes effect without rewriting anyone's settings.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::App;
use crate::auth::sessions::Principal;
use crate::billing::plans::Entitlement;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::{self, now_ms, users};

/// Pairs a new user may trade until they choose their own.
pub const DEFAULT_PAIRS: [&str; 10] = [
    "BTC-USD", "ETH-USD", "SOL-USD", "ADA-USD", "XRP-USD", "DOGE-USD", "AVAX-USD", "DOT-USD",
    "LINK-USD", "LTC-USD",
];
pub const MAX_ALLOWED_PAIRS: usize = 50;
pub const RISK_LEVELS: [&str; 3] = ["low", "medium", "high"];

/// Risk-alarm thresholds (names of the KPI routes) with their defaults and allowed ranges.
pub const THRESHOLDS: [(&str, f64, f64, f64); 12] = [
    ("max_drawdown_pct", 20.0, 0.1, 100.0),
    ("warning_drawdown_pct", 15.0, 0.1, 100.0),
    ("daily_loss_limit_pct", 5.0, 0.1, 100.0),
    ("consecutive_losses_limit", 5.0, 1.0, 1000.0),
    ("min_win_rate_pct", 50.0, 0.0, 100.0),
    ("warning_win_rate_pct", 55.0, 0.0, 100.0),
    ("max_position_size_pct", 10.0, 0.1, 100.0),
    ("max_total_exposure_pct", 80.0, 1.0, 1000.0),
    ("min_account_balance", 100.0, 0.0, 1e12),
    ("warning_account_balance", 500.0, 0.0, 1e12),
    ("min_sharpe_ratio", 0.5, -100.0, 100.0),
    ("min_profit_factor", 1.0, 0.0, 1000.0),
];

pub const NOTIFICATIONS: [(&str, bool); 5] = [
    ("email_enabled", true),
    ("push_enabled", false),
    ("trade_notifications", true),
    ("daily_summary", true),
    ("weekly_report", false),
];

pub const ADVANCED: [&str; 4] = [
    "enable_meta_ai",
    "enable_mmin",
    "enable_gmig",
    "execution_intelligence",
];

#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Serialize)]
pub struct TradingSettings {
    pub risk_level: String,
    pub max_position_size_usd: f64,
    pub max_concurrent_positions: u32,
    pub max_daily_loss_usd: f64,
    pub allowed_pairs: Vec<String>,
    pub paper_trading: bool,
}

#[derive(utoipa::ToSchema, Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub trading: TradingSettings,
    pub notifications: BTreeMap<String, bool>,
    pub advanced: BTreeMap<String, bool>,
    pub risk_thresholds: BTreeMap<String, f64>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = SettingsUpdated)]
pub struct Updated {
    pub message: String,
    pub updated_fields: Vec<String>,
}

impl Settings {
    /// The user's stored changes over the defaults of their tier.
    pub fn resolve(
        stored: &Map<String, Value>,
        entitlement: &Entitlement,
        initial_capital: f64,
    ) -> Settings {
        let limits = entitlement.limits();
        let section = |name: &str| stored.get(name).and_then(Value::as_object);
        let trading = section("trading");
        let get = |key: &str| trading.and_then(|t| t.get(key));
        Settings {
            trading: TradingSettings {
                risk_level: get("risk_level")
                    .and_then(Value::as_str)
                    .unwrap_or("medium")
                    .to_string(),
                max_position_size_usd: get("max_position_size_usd")
                    .and_then(Value::as_f64)
                    .unwrap_or_else(|| entitlement.max_position_size_usd(true)),
                max_concurrent_positions: get("max_concurrent_positions")
                    .and_then(Value::as_u64)
                    .map_or(limits.max_positions, |n| n as u32),
                max_daily_loss_usd: get("max_daily_loss_usd")
                    .and_then(Value::as_f64)
                    .unwrap_or(initial_capital * 0.05),
                allowed_pairs: get("allowed_pairs")
                    .and_then(Value::as_array)
                    .map(|pairs| {
                        pairs
                            .iter()
                            .filter_map(|p| p.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_else(|| DEFAULT_PAIRS.iter().map(|p| p.to_string()).collect()),
                paper_trading: get("paper_trading")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            },
            notifications: notifications_of(stored),
            advanced: ADVANCED
                .iter()
                .map(|key| {
                    let value = section("advanced")
                        .and_then(|s| s.get(*key))
                        .and_then(Value::as_bool);
                    (key.to_string(), value.unwrap_or(false))
                })
                .collect(),
            risk_thresholds: THRESHOLDS
                .iter()
                .map(|(key, default, _, _)| {
                    let value = section("risk_thresholds")
                        .and_then(|s| s.get(*key))
                        .and_then(Value::as_f64);
                    (key.to_string(), value.unwrap_or(*default))
                })
                .collect(),
        }
    }

    /// The position size the engine allows: the setting, capped by the tier.
    pub fn max_position_size_usd(&self, entitlement: &Entitlement, paper: bool) -> f64 {
        self.trading
            .max_position_size_usd
            .min(entitlement.max_position_size_usd(paper))
    }

    pub fn max_positions(&self, entitlement: &Entitlement) -> u32 {
        self.trading
            .max_concurrent_positions
            .min(entitlement.limits().max_positions)
    }

    pub fn allows_pair(&self, symbol: &str) -> bool {
        self.trading.allowed_pairs.iter().any(|p| p == symbol)
    }
}

fn invalid_setting(field: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidSetting,
        format!("Setting `{field}` is not recognised"),
    )
    .detail("field", field)
}

fn invalid_value(field: &str, reason: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidRequest,
        format!("Invalid value for `{field}`: {reason}"),
    )
    .detail("field", field)
    .detail("reason", reason)
}

fn exceeds(
    field: &str,
    limit: impl Into<Value> + Copy + std::fmt::Display,
    tier: &str,
) -> ApiError {
    ApiError::new(
        ErrorCode::ExceedsTierLimit,
        format!("`{field}` is above your {tier} plan's limit of {limit}"),
    )
    .detail("field", field)
    .detail("limit", limit)
}

/// The notification switches: the user's stored choices over the defaults.
pub fn notifications_of(stored: &Map<String, Value>) -> BTreeMap<String, bool> {
    let section = stored.get("notifications").and_then(Value::as_object);
    NOTIFICATIONS
        .iter()
        .map(|(key, default)| {
            let value = section.and_then(|s| s.get(*key)).and_then(Value::as_bool);
            (key.to_string(), value.unwrap_or(*default))
        })
        .collect()
}

/// What `valid_pair` accepts, for the API's description (entries are trimmed and upper-cased
/// before the check).
pub const PAIR_PATTERN: &str = "^[A-Za-z0-9]{1,12}-[A-Za-z0-9]{1,12}$";

/// A symbol of the form BASE-QUOTE, upper case.
pub fn valid_pair(symbol: &str) -> bool {
    let part = |p: &str| {
        (1..=12).contains(&p.len())
            && p.bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    symbol
        .split_once('-')
        .is_some_and(|(base, quote)| part(base) && part(quote))
}

/// Checks a partial update against the names, types and the tier, and merges it into the stored
/// changes. Nothing is applied unless every field is valid.
pub fn merge(
    stored: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    entitlement: &Entitlement,
) -> ApiResult<Vec<String>> {
    let limits = entitlement.limits();
    let tier = entitlement.effective.as_str();
    let mut updated = Vec::new();
    let mut merged = stored.clone();
    for (section, fields) in patch {
        let Some(fields) = fields.as_object() else {
            return Err(
                if ["trading", "notifications", "advanced", "risk_thresholds"]
                    .contains(&section.as_str())
                {
                    invalid_value(section, "must be an object")
                } else {
                    invalid_setting(section)
                },
            );
        };
        for (key, value) in fields {
            let checked: Value = match (section.as_str(), key.as_str()) {
                ("trading", "risk_level") => match value.as_str() {
                    Some(level) if RISK_LEVELS.contains(&level) => Value::from(level),
                    _ => {
                        return Err(ApiError::new(
                            ErrorCode::InvalidRiskLevel,
                            "risk_level must be low, medium or high",
                        )
                        .detail("field", "risk_level"));
                    }
                },
                ("trading", "max_position_size_usd") => {
                    let size = value
                        .as_f64()
                        .filter(|v| v.is_finite() && *v > 0.0)
                        .ok_or_else(|| invalid_value(key, "a positive number"))?;
                    let cap = entitlement.max_position_size_usd(true);
                    if size > cap {
                        return Err(exceeds(key, cap, tier));
                    }
                    Value::from(size)
                }
                ("trading", "max_concurrent_positions") => {
                    let count = value
                        .as_u64()
                        .filter(|v| *v >= 1)
                        .ok_or_else(|| invalid_value(key, "a whole number of at least 1"))?;
                    if count > limits.max_positions as u64 {
                        return Err(exceeds(key, limits.max_positions, tier));
                    }
                    Value::from(count)
                }
                ("trading", "max_daily_loss_usd") => Value::from(
                    value
                        .as_f64()
                        .filter(|v| v.is_finite() && *v > 0.0)
                        .ok_or_else(|| invalid_value(key, "a positive number"))?,
                ),
                ("trading", "allowed_pairs") => {
                    let pairs: Vec<String> = value
                        .as_array()
                        .ok_or_else(|| invalid_value(key, "an array of symbols"))?
                        .iter()
                        .map(|p| {
                            p.as_str()
                                .map(|s| s.trim().to_uppercase())
                                .filter(|s| valid_pair(s))
                        })
                        .collect::<Option<_>>()
                        .ok_or_else(|| {
                            invalid_value(key, "symbols of the form BASE-QUOTE, e.g. BTC-USD")
                        })?;
                    if pairs.is_empty() || pairs.len() > MAX_ALLOWED_PAIRS {
                        return Err(invalid_value(key, "1 to 50 symbols"));
                    }
                    let mut unique: Vec<String> = Vec::with_capacity(pairs.len());
                    for pair in pairs {
                        if !unique.contains(&pair) {
                            unique.push(pair);
                        }
                    }
                    Value::from(unique)
                }
                ("trading", "paper_trading") => {
                    let paper = value
                        .as_bool()
                        .ok_or_else(|| invalid_value(key, "true or false"))?;
                    if !paper && !entitlement.allows_live_trading() {
                        return Err(ApiError::new(
                            ErrorCode::SubscriptionRequired,
                            "Live trading needs a paid subscription or an active trial",
                        )
                        .detail("field", "paper_trading"));
                    }
                    Value::from(paper)
                }
                ("notifications", key) if NOTIFICATIONS.iter().any(|(k, _)| *k == key) => {
                    Value::from(
                        value
                            .as_bool()
                            .ok_or_else(|| invalid_value(key, "true or false"))?,
                    )
                }
                ("advanced", key) if ADVANCED.contains(&key) => Value::from(
                    value
                        .as_bool()
                        .ok_or_else(|| invalid_value(key, "true or false"))?,
                ),
                ("risk_thresholds", key) => {
                    let Some((_, _, min, max)) = THRESHOLDS.iter().find(|(k, ..)| *k == key) else {
                        return Err(invalid_setting(key));
                    };
                    let number = value
                        .as_f64()
                        .filter(|v| v.is_finite() && v >= min && v <= max)
                        .ok_or_else(|| {
                            invalid_value(key, &format!("a number from {min} to {max}"))
                        })?;
                    Value::from(number)
                }
                ("trading" | "notifications" | "advanced", _) => return Err(invalid_setting(key)),
                _ => return Err(invalid_setting(section)),
            };
            merged
                .entry(section.clone())
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("sections are objects")
                .insert(key.clone(), checked);
            updated.push(key.clone());
        }
    }
    *stored = merged;
    Ok(updated)
}

async fn entitlement(app: &App, user_id: &str) -> ApiResult<Entitlement> {
    let user = users::by_id(&app.db.pool, user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::TokenInvalid))?;
    Ok(Entitlement::of(&user, now_ms()))
}

pub async fn load(app: &App, user_id: &str, entitlement: &Entitlement) -> ApiResult<Settings> {
    let stored = store::settings::get(&app.db.pool, user_id).await?;
    Ok(resolve_for(app, &stored, entitlement))
}

/// The user's settings over their tier's defaults and the operator's threshold defaults.
fn resolve_for(app: &App, stored: &Map<String, Value>, entitlement: &Entitlement) -> Settings {
    let mut settings = Settings::resolve(
        stored,
        entitlement,
        crate::engine::accounting::float(app.config.initial_capital),
    );
    let own = stored.get("risk_thresholds").and_then(Value::as_object);
    for (name, value) in &app.config.threshold_defaults {
        if own.is_none_or(|own| !own.contains_key(*name)) {
            settings.risk_thresholds.insert(name.to_string(), *value);
        }
    }
    settings
}

pub async fn get(app: &App, user: &Principal) -> ApiResult<Settings> {
    let entitlement = entitlement(app, &user.user_id).await?;
    load(app, &user.user_id, &entitlement).await
}

pub async fn update(app: &App, user: &Principal, patch: Map<String, Value>) -> ApiResult<Updated> {
    if patch.is_empty() {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "Give at least one setting to change",
        ));
    }
    let entitlement = entitlement(app, &user.user_id).await?;
    let mut stored = store::settings::get(&app.db.pool, &user.user_id).await?;
    let updated = merge(&mut stored, &patch, &entitlement)?;
    store::settings::put(&app.db.pool, &user.user_id, &stored, now_ms()).await?;
    let settings = resolve_for(app, &stored, &entitlement);
    crate::engine::settings_changed(app, &user.user_id, settings).await?;
    Ok(Updated {
        message: format!("{} setting(s) updated", updated.len()),
        updated_fields: updated,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::billing::plans::Tier;

    fn basic() -> Entitlement {
        Entitlement {
            tier: Tier::Basic,
            trial_active: false,
            effective: Tier::Basic,
        }
    }

    fn patch(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_follow_the_tier() {
        let settings = Settings::resolve(&Map::new(), &basic(), 10_000.0);
        assert_eq!(settings.trading.max_position_size_usd, 500.0);
        assert_eq!(settings.trading.max_concurrent_positions, 5);
        assert_eq!(settings.trading.max_daily_loss_usd, 500.0);
        assert!(settings.trading.paper_trading);
        assert_eq!(settings.risk_thresholds["max_drawdown_pct"], 20.0);
        assert_eq!(settings.risk_thresholds.len(), 12);
    }

    #[test]
    fn updates_are_checked_before_anything_changes() {
        let mut stored = Map::new();
        let updated = merge(
            &mut stored,
            &patch(json!({"trading": {"max_position_size_usd": 300, "allowed_pairs": ["btc-usd"]}, "risk_thresholds": {"max_drawdown_pct": 12}})),
            &basic(),
        )
        .unwrap();
        assert_eq!(
            updated,
            ["max_drawdown_pct", "allowed_pairs", "max_position_size_usd"]
        );
        let settings = Settings::resolve(&stored, &basic(), 10_000.0);
        assert_eq!(settings.trading.allowed_pairs, ["BTC-USD"]);
        assert_eq!(settings.risk_thresholds["max_drawdown_pct"], 12.0);

        let cases = [
            (
                json!({"trading": {"max_position_size_usd": 501}}),
                ErrorCode::ExceedsTierLimit,
            ),
            (
                json!({"trading": {"max_concurrent_positions": 6}}),
                ErrorCode::ExceedsTierLimit,
            ),
            (
                json!({"trading": {"risk_level": "wild"}}),
                ErrorCode::InvalidRiskLevel,
            ),
            (
                json!({"trading": {"leverage": 3}}),
                ErrorCode::InvalidSetting,
            ),
            (json!({"colour": {"x": 1}}), ErrorCode::InvalidSetting),
            (
                json!({"risk_thresholds": {"max_drawdown_pct": -1}}),
                ErrorCode::InvalidRequest,
            ),
            (
                json!({"trading": {"allowed_pairs": ["BTCUSD"]}}),
                ErrorCode::InvalidRequest,
            ),
            // A valid field beside an invalid one: neither is applied.
            (
                json!({"trading": {"risk_level": "low", "max_position_size_usd": 10_000}}),
                ErrorCode::ExceedsTierLimit,
            ),
        ];
        for (body, code) in cases {
            let before = stored.clone();
            let err = merge(&mut stored, &patch(body.clone()), &basic()).unwrap_err();
            assert_eq!(err.code, code, "{body}");
            assert_eq!(stored, before, "{body} changed something");
        }
    }

    #[test]
    fn live_trading_needs_a_paid_tier() {
        let free = Entitlement {
            tier: Tier::Free,
            trial_active: false,
            effective: Tier::Free,
        };
        let err = merge(
            &mut Map::new(),
            &patch(json!({"trading": {"paper_trading": false}})),
            &free,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::SubscriptionRequired);
        assert!(
            merge(
                &mut Map::new(),
                &patch(json!({"trading": {"paper_trading": false}})),
                &basic()
            )
            .is_ok()
        );
    }
}
