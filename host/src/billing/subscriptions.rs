//! Subscriptions: plans, the current subscription, upgrades with proration, cancellation with
//! refunds, renewal at the end of a period, and the usage figures of the period.
//!
//! Money is `Decimal` rounded to cents. A user without a paid subscription is on `free`, in a
//! trial for the first 14 days (basic's limits).

use chrono::Datelike as _;
use chrono::Duration as ChronoDuration;
use rust_decimal::Decimal;
use rust_decimal::prelude::FromPrimitive;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::plans::{Entitlement, Tier};
use super::provider::{Charge, Refund};
use crate::App;
use crate::auth::ClientMeta;
use crate::auth::sessions::Principal;
use crate::engine::accounting::float;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::audit::{self, Actor};
use crate::store::billing::{self as rows, Payment, SubscriptionRow};
use crate::store::{self, iso8601, new_id, now_ms, positions, users};

use crate::store::DAY_MS;

fn cents(value: f64) -> Decimal {
    Decimal::from_f64(value).unwrap_or_default().round_dp(2)
}

fn period_ms(interval: &str) -> i64 {
    if interval == "yearly" {
        365 * DAY_MS
    } else {
        30 * DAY_MS
    }
}

fn price(tier: Tier, interval: &str) -> Decimal {
    cents(if interval == "yearly" {
        tier.price_yearly()
    } else {
        tier.price_monthly()
    })
}

// ----- plans -----

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct PlanLimits {
    pub max_position_size_usd: f64,
    pub max_positions: u32,
    pub max_daily_trades: u32,
    pub api_calls_per_minute: u32,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Plan {
    pub tier: &'static str,
    pub name: &'static str,
    pub price_monthly: f64,
    pub price_yearly: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub yearly_savings: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub popular: bool,
    pub features: Vec<String>,
    pub limits: PlanLimits,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Plans {
    pub plans: Vec<Plan>,
}

fn features(tier: Tier) -> Vec<String> {
    let limits = tier.limits();
    let mut features = vec![
        if limits.live_trading {
            "Paper and live trading".to_string()
        } else {
            "Paper trading".to_string()
        },
        format!("Up to {} open positions", limits.max_positions),
        format!("{} trades a day", limits.max_daily_trades),
        format!("{} API calls a minute", limits.api_calls_per_minute),
        match limits.max_exchange_connections {
            Some(n) => format!("{n} exchange connection{}", if n == 1 { "" } else { "s" }),
            None => "Unlimited exchange connections".to_string(),
        },
        "Sandboxed strategy and risk plugins".to_string(),
        "Real-time WebSocket stream".to_string(),
    ];
    if tier != Tier::Free {
        features.push(format!("Positions up to ${}", limits.max_position_size_usd));
        features.push("Signal webhooks".to_string());
    }
    features
}

pub fn plans() -> Plans {
    Plans {
        plans: Tier::ALL
            .iter()
            .map(|&tier| {
                let limits = tier.limits();
                Plan {
                    tier: tier.as_str(),
                    name: match tier {
                        Tier::Free => "Free",
                        Tier::Basic => "Basic",
                        Tier::Pro => "Pro",
                        Tier::Enterprise => "Enterprise",
                    },
                    price_monthly: tier.price_monthly(),
                    price_yearly: tier.price_yearly(),
                    yearly_savings: (tier != Tier::Free)
                        .then(|| tier.price_monthly() * 12.0 - tier.price_yearly()),
                    popular: tier == Tier::Pro,
                    features: features(tier),
                    limits: PlanLimits {
                        max_position_size_usd: limits.max_position_size_usd,
                        max_positions: limits.max_positions,
                        max_daily_trades: limits.max_daily_trades,
                        api_calls_per_minute: limits.api_calls_per_minute,
                    },
                }
            })
            .collect(),
    }
}

// ----- the current subscription -----

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct SubscriptionView {
    pub subscription_id: Option<String>,
    pub tier: String,
    pub interval: String,
    pub status: String,
    pub current_period_start: String,
    pub current_period_end: Option<String>,
    pub cancel_at_period_end: bool,
    pub trial_active: bool,
    pub trial_ends_at: Option<String>,
    pub amount: f64,
    pub currency: String,
    pub payment_method: Option<Value>,
    pub next_billing_date: Option<String>,
    pub next_billing_amount: f64,
}

async fn account(app: &App, user_id: &str) -> ApiResult<users::UserRow> {
    users::by_id(&app.db.pool, user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::TokenInvalid))
}

pub async fn current(app: &App, user: &Principal) -> ApiResult<SubscriptionView> {
    let account = account(app, &user.user_id).await?;
    let entitlement = Entitlement::of(&account, now_ms());
    let subscription = rows::subscription(&app.db.pool, &user.user_id).await?;
    Ok(match subscription.filter(|s| s.status != "cancelled") {
        Some(s) => {
            let renews = s.cancel_at_period_end == 0;
            SubscriptionView {
                subscription_id: Some(s.id),
                tier: s.tier,
                interval: s.billing_interval,
                status: s.status,
                current_period_start: iso8601(s.current_period_start),
                current_period_end: Some(iso8601(s.current_period_end)),
                cancel_at_period_end: !renews,
                trial_active: false,
                trial_ends_at: None,
                amount: float(s.amount),
                currency: s.currency,
                payment_method: s.payment_method.and_then(|m| serde_json::from_str(&m).ok()),
                next_billing_date: renews.then(|| iso8601(s.current_period_end)),
                next_billing_amount: if renews { float(s.amount) } else { 0.0 },
            }
        }
        None => SubscriptionView {
            subscription_id: None,
            tier: account.subscription_tier.clone(),
            interval: "monthly".into(),
            status: if entitlement.trial_active {
                "trialing"
            } else {
                "active"
            }
            .into(),
            current_period_start: iso8601(account.created_at),
            current_period_end: account
                .trial_ends_at
                .filter(|_| entitlement.trial_active)
                .map(iso8601),
            cancel_at_period_end: false,
            trial_active: entitlement.trial_active,
            trial_ends_at: account.trial_ends_at.map(iso8601),
            amount: 0.0,
            currency: "USD".into(),
            payment_method: None,
            next_billing_date: None,
            next_billing_amount: 0.0,
        },
    })
}

// ----- upgrade -----

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpgradeRequest {
    pub tier: String,
    #[serde(default = "monthly")]
    pub interval: String,
    pub payment_method_id: String,
}

fn monthly() -> String {
    "monthly".into()
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Upgraded {
    pub subscription_id: String,
    pub message: String,
    pub tier: String,
    pub interval: String,
    pub amount: f64,
    pub proration_credit: f64,
    pub amount_due_now: f64,
    pub effective_immediately: bool,
}

/// Unused fraction of the current period times what was paid for it.
fn unused_value(s: &SubscriptionRow, now: i64) -> Decimal {
    let total = (s.current_period_end - s.current_period_start).max(1);
    let left = (s.current_period_end - now).clamp(0, total);
    let paid = s.amount;
    (paid * Decimal::from(left) / Decimal::from(total)).round_dp(2)
}

/// What a payment method id tells about the card (the local provider keeps no card data).
fn payment_method(id: &str) -> Value {
    let digits: String = id.chars().filter(char::is_ascii_digit).collect();
    let last4 = if digits.len() >= 4 {
        digits[digits.len() - 4..].to_string()
    } else {
        "4242".into()
    };
    let brand = ["visa", "mastercard", "amex"]
        .into_iter()
        .find(|b| id.to_lowercase().contains(b))
        .unwrap_or("card");
    json!({"id": id, "type": "card", "last4": last4, "brand": brand, "exp_month": 12, "exp_year": 2030})
}

/// The key under which a money movement is made once, from what identifies it.
fn idempotency_key(parts: &[&str]) -> String {
    crate::plugins::registry::sha256_hex(parts.join("\u{0}").as_bytes())
}

/// Writes `payment` as pending before the provider is called, or takes up the pending payment an
/// earlier attempt under the same key left (the provider makes it once either way).
async fn pending_payment(app: &App, payment: &Payment<'_>) -> ApiResult<rows::PaymentRow> {
    let db = &app.db.pool;
    let written = rows::insert_pending(db, payment).await?;
    let row = rows::payment_by_key(db, payment.idempotency_key)
        .await?
        .ok_or_else(|| ApiError::internal("a payment vanished while it was being made"))?;
    match row.status.as_str() {
        "pending" => {
            if !written {
                tracing::info!(payment = %row.id, "taking up a payment an earlier attempt left pending");
            }
            Ok(row)
        }
        "settled" => Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "This payment has been made already",
        )),
        _ => Err(ApiError::new(
            ErrorCode::PaymentFailed,
            "This payment was declined before; use another payment method",
        )),
    }
}

pub async fn upgrade(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    request: UpgradeRequest,
) -> ApiResult<Upgraded> {
    let tier = Tier::parse(&request.tier)
        .filter(|t| *t != Tier::Free)
        .ok_or_else(|| {
            ApiError::invalid_field(
                "tier",
                "one of basic, pro, enterprise (cancel to return to free)",
            )
        })?;
    if !["monthly", "yearly"].contains(&request.interval.as_str()) {
        return Err(ApiError::invalid_field("interval", "monthly or yearly"));
    }
    let method_id = request.payment_method_id.trim();
    if method_id.is_empty() || method_id.len() > 255 {
        return Err(ApiError::invalid_field(
            "payment_method_id",
            "a payment method id",
        ));
    }
    let now = now_ms();
    let existing = rows::subscription(&app.db.pool, &user.user_id)
        .await?
        .filter(|s| matches!(s.status.as_str(), "active" | "past_due"));
    if let Some(s) = &existing
        && s.tier == tier.as_str()
        && s.billing_interval == request.interval
        && s.cancel_at_period_end == 0
    {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("You are already on {} {}", s.tier, s.billing_interval),
        ));
    }
    let amount = price(tier, &request.interval);
    let credit = existing
        .as_ref()
        .map_or(Decimal::ZERO, |s| -unused_value(s, now));
    let due = (amount + credit).max(Decimal::ZERO);
    let customer_id = existing
        .as_ref()
        .map(|s| s.customer_id.clone())
        .unwrap_or_else(|| {
            format!(
                "cus_{}",
                &crate::plugins::registry::sha256_hex(user.user_id.as_bytes())[..24]
            )
        });
    // The same upgrade of the same subscription state is the same payment: a repeated request (a
    // double click, a retry after a lost answer, another instance) charges once.
    let key = idempotency_key(&[
        "upgrade",
        &user.user_id,
        existing.as_ref().map_or("-", |s| s.id.as_str()),
        &existing
            .as_ref()
            .map_or(0, |s| s.current_period_start)
            .to_string(),
        tier.as_str(),
        &request.interval,
        method_id,
    ]);
    let description = format!(
        "upgrade to {} {}, proration credit {credit}",
        tier.as_str(),
        request.interval
    );
    let payment = pending_payment(
        app,
        &Payment {
            id: &new_id(),
            user_id: &user.user_id,
            subscription_id: &new_id(),
            kind: "charge",
            amount: due,
            currency: "USD",
            provider: app.payments.name(),
            description: &description,
            idempotency_key: &key,
            period_start: Some(now),
            created_at: now,
        },
    )
    .await?;
    let subscription_id = payment.subscription_id.clone();
    let reference = match app
        .payments
        .charge(&Charge {
            customer_id: &customer_id,
            payment_method_id: method_id,
            amount: due,
            currency: "USD",
            description: &format!("tradehost {} ({})", tier.as_str(), request.interval),
            idempotency_key: &key,
        })
        .await
    {
        Ok(reference) => reference,
        Err(err) => {
            rows::fail(&app.db.pool, &payment.id, &err.message, now_ms()).await?;
            return Err(err);
        }
    };
    let row = SubscriptionRow {
        id: subscription_id.clone(),
        user_id: user.user_id.clone(),
        tier: tier.as_str().into(),
        billing_interval: request.interval.clone(),
        status: "active".into(),
        current_period_start: now,
        current_period_end: now + period_ms(&request.interval),
        cancel_at_period_end: 0,
        amount,
        currency: "USD".into(),
        payment_method: Some(payment_method(method_id).to_string()),
        customer_id,
        cancelled_at: None,
        cancel_reason: None,
        created_at: now,
    };
    let mut tx = app.db.begin().await?;
    // Whoever settles the payment applies the upgrade; a concurrent twin finds it settled.
    if rows::settle(&mut *tx, &payment.id, &reference, now_ms()).await? {
        rows::put(&mut *tx, &row, now).await?;
        users::set_tier(&mut *tx, &user.user_id, tier.as_str(), now).await?;
        audit::record(
            &mut *tx,
            "subscription.upgraded",
            &Actor {
                user_id: Some(&user.user_id),
                ip_address: meta.ip.as_deref(),
                user_agent: meta.user_agent.as_deref(),
            },
            json!({"tier": tier.as_str(), "interval": request.interval, "amount_due_now": float(due), "payment_id": payment.id}),
        )
        .await?;
    }
    tx.commit().await?;
    entitlement_changed(app, &user.user_id).await?;
    Ok(Upgraded {
        subscription_id,
        message: format!(
            "Subscribed to {} ({}), effective now",
            tier.as_str(),
            request.interval
        ),
        tier: tier.as_str().into(),
        interval: request.interval,
        amount: float(amount),
        proration_credit: float(credit),
        amount_due_now: float(due),
        effective_immediately: true,
    })
}

/// The new limits apply at once: rate limits, settings defaults and the engine's checks.
async fn entitlement_changed(app: &App, user_id: &str) -> ApiResult<()> {
    app.user_changed(user_id);
    crate::engine::entitlement_changed(app, user_id).await
}

// ----- cancel -----

#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    #[serde(default)]
    pub cancel_immediately: bool,
    pub reason: Option<String>,
    pub feedback: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Cancelled {
    pub message: String,
    pub cancel_at_period_end: bool,
    pub access_until: String,
    pub refund_amount: f64,
}

pub async fn cancel(
    app: &App,
    user: &Principal,
    meta: &ClientMeta,
    request: CancelRequest,
) -> ApiResult<Cancelled> {
    let now = now_ms();
    let Some(mut s) = rows::subscription(&app.db.pool, &user.user_id)
        .await?
        .filter(|s| matches!(s.status.as_str(), "active" | "past_due"))
    else {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "There is no paid subscription to cancel",
        ));
    };
    if request.reason.as_ref().is_some_and(|r| r.len() > 2000)
        || request.feedback.as_ref().is_some_and(|f| f.len() > 10_000)
    {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "reason or feedback is too long",
        ));
    }
    let refund = if request.cancel_immediately {
        unused_value(&s, now)
    } else {
        Decimal::ZERO
    };
    // A refund is a pending payment before the provider is called, keyed by the period it
    // refunds, so it is made once.
    let refunded = if refund > Decimal::ZERO {
        let key = idempotency_key(&["refund", &s.id, &s.current_period_start.to_string()]);
        let payment = pending_payment(
            app,
            &Payment {
                id: &new_id(),
                user_id: &user.user_id,
                subscription_id: &s.id,
                kind: "refund",
                amount: refund,
                currency: "USD",
                provider: app.payments.name(),
                description: "refund of the unused part of the period",
                idempotency_key: &key,
                period_start: Some(s.current_period_start),
                created_at: now,
            },
        )
        .await?;
        let reference = app
            .payments
            .refund(&Refund {
                customer_id: &s.customer_id,
                amount: refund,
                currency: "USD",
                idempotency_key: &key,
            })
            .await?;
        Some((payment.id, reference))
    } else {
        None
    };
    s.cancel_reason = request.reason.clone();
    let access_until = if request.cancel_immediately {
        s.status = "cancelled".into();
        s.cancelled_at = Some(now);
        s.current_period_end = now;
        now
    } else {
        s.cancel_at_period_end = 1;
        s.current_period_end
    };
    let mut tx = app.db.begin().await?;
    rows::put(&mut *tx, &s, now).await?;
    if let Some((payment_id, reference)) = &refunded {
        rows::settle(&mut *tx, payment_id, reference, now).await?;
    }
    if request.cancel_immediately {
        users::set_tier(&mut *tx, &user.user_id, "free", now).await?;
    }
    audit::record(
        &mut *tx,
        "subscription.cancelled",
        &Actor { user_id: Some(&user.user_id), ip_address: meta.ip.as_deref(), user_agent: meta.user_agent.as_deref() },
        json!({"immediately": request.cancel_immediately, "reason": request.reason, "feedback": request.feedback, "refund": float(refund)}),
    )
    .await?;
    tx.commit().await?;
    entitlement_changed(app, &user.user_id).await?;
    Ok(Cancelled {
        message: if request.cancel_immediately {
            "Subscription cancelled; the free plan applies from now".into()
        } else {
            format!(
                "Subscription cancelled; {} stays available until the period ends",
                s.tier
            )
        },
        cancel_at_period_end: !request.cancel_immediately,
        access_until: iso8601(access_until),
        refund_amount: float(refund),
    })
}

/// A failed renewal charge is tried again after this long...
pub const RENEWAL_RETRY_MS: i64 = 3_600_000;
/// ...this many times in all, after which the subscription lapses to free.
pub const RENEWAL_ATTEMPTS: i64 = 3;
/// How long a renewal payment another run wrote is left to that run: within it, that run may
/// still be waiting on the provider; after it, the run is taken to have died and its payment is
/// taken up under the same key.
pub const RENEWAL_TAKEOVER_MS: i64 = 10 * 60_000;

/// What a renewal run did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Renewals {
    pub renewed: usize,
    pub ended: usize,
    pub failed: usize,
}

/// Ends the periods that are over: a subscription cancelled at its period's end returns its user
/// to free, a running one is charged for the next period and renewed. Each subscription on its
/// own: one that fails does not stop the others. Each period is charged at most once, however
/// many times (and on however many instances) this runs: the charge is a pending payment under
/// a key of (subscription, period, attempt) before the provider is called, and the period moves
/// on only if it is still the one that was charged for. Called by the background loop.
pub async fn renew_due(app: &App) -> anyhow::Result<Renewals> {
    let now = now_ms();
    let mut done = Renewals::default();
    for s in rows::due(&app.db.pool, now).await? {
        match renew(app, &s, now).await {
            Ok(Some(true)) => done.renewed += 1,
            Ok(Some(false)) => done.ended += 1,
            Ok(None) => {}
            Err(err) => {
                done.failed += 1;
                tracing::warn!(subscription = %s.id, user_id = %s.user_id, error = %err, "renewing a subscription failed; it is retried");
            }
        }
    }
    Ok(done)
}

/// Renews (`Some(true)`) or ends (`Some(false)`) one subscription; `None` when there was
/// nothing to do now.
async fn renew(app: &App, s: &SubscriptionRow, now: i64) -> ApiResult<Option<bool>> {
    let db = &app.db.pool;
    let period_start = s.current_period_end;
    if s.cancel_at_period_end != 0 {
        return end(app, s, None, now)
            .await
            .map(|ended| ended.then_some(false));
    }
    let (failures, last_failure) = rows::failed_renewals(db, &s.id, period_start).await?;
    if failures >= RENEWAL_ATTEMPTS {
        let ended = end(app, s, Some("the renewal payment failed"), now).await?;
        return Ok(ended.then_some(false));
    }
    if last_failure.is_some_and(|at| now - at < RENEWAL_RETRY_MS) {
        return Ok(None);
    }
    let key = idempotency_key(&[
        "renewal",
        &s.id,
        &period_start.to_string(),
        &(failures + 1).to_string(),
    ]);
    let payment_id = new_id();
    let payment = match pending_payment(
        app,
        &Payment {
            id: &payment_id,
            user_id: &s.user_id,
            subscription_id: &s.id,
            kind: "charge",
            amount: s.amount,
            currency: &s.currency,
            provider: app.payments.name(),
            description: "renewal",
            idempotency_key: &key,
            period_start: Some(period_start),
            created_at: now,
        },
    )
    .await
    {
        Ok(payment) => payment,
        // Charged already under this key: another run moves (or moved) the period on.
        Err(err) if err.code == ErrorCode::InvalidRequest => return Ok(None),
        Err(err) => return Err(err),
    };
    // Two runs at once (two instances) meet here under one key: the one that wrote the pending
    // payment charges; the other leaves it to that run unless it is old enough to be orphaned.
    if payment.id != payment_id && now - payment.created_at < RENEWAL_TAKEOVER_MS {
        return Ok(None);
    }
    let method: Value = s
        .payment_method
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or(Value::Null);
    let charged = app
        .payments
        .charge(&Charge {
            customer_id: &s.customer_id,
            payment_method_id: method["id"].as_str().unwrap_or("on-file"),
            amount: s.amount,
            currency: &s.currency,
            description: "renewal",
            idempotency_key: &key,
        })
        .await;
    let reference = match charged {
        Ok(reference) => reference,
        Err(err) => {
            let mut tx = app.db.begin().await?;
            rows::fail(&mut *tx, &payment.id, &err.message, now).await?;
            rows::set_status(&mut *tx, &s.id, "past_due", now).await?;
            tx.commit().await?;
            return Err(err);
        }
    };
    let mut tx = app.db.begin().await?;
    let settled = rows::settle(&mut *tx, &payment.id, &reference, now).await?;
    let advanced = settled
        && rows::advance_period(
            &mut *tx,
            &s.id,
            period_start,
            period_start + period_ms(&s.billing_interval),
            now,
        )
        .await?;
    if !advanced {
        // Another run got there first; nothing of this one is kept.
        tx.rollback().await?;
        return Ok(None);
    }
    audit::record(
        &mut *tx,
        "subscription.renewed",
        &Actor {
            user_id: Some(&s.user_id),
            ip_address: None,
            user_agent: None,
        },
        json!({"subscription_id": s.id, "period_start": iso8601(period_start), "amount": s.amount, "payment_id": payment.id}),
    )
    .await?;
    tx.commit().await?;
    let _ = entitlement_changed(app, &s.user_id).await;
    Ok(Some(true))
}

/// Ends a subscription at the end of its period and returns its user to free.
async fn end(app: &App, s: &SubscriptionRow, reason: Option<&str>, now: i64) -> ApiResult<bool> {
    let mut tx = app.db.begin().await?;
    if !rows::end(&mut *tx, &s.id, s.current_period_end, reason, now).await? {
        return Ok(false);
    }
    users::set_tier(&mut *tx, &s.user_id, "free", now).await?;
    audit::record(
        &mut *tx,
        "subscription.ended",
        &Actor {
            user_id: Some(&s.user_id),
            ip_address: None,
            user_agent: None,
        },
        json!({"subscription_id": s.id, "reason": reason.unwrap_or("cancelled at the period's end")}),
    )
    .await?;
    tx.commit().await?;
    let _ = entitlement_changed(app, &s.user_id).await;
    Ok(true)
}

// ----- usage -----

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UsageCounters {
    pub api_calls: i64,
    pub api_calls_limit: i64,
    pub trades_executed: i64,
    pub trades_limit: i64,
    pub positions_opened: i64,
    pub max_concurrent_positions: i64,
    pub max_concurrent_positions_limit: i64,
    pub brokers_connected: i64,
    pub brokers_limit: Option<i64>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Usage {
    pub period_start: String,
    pub period_end: String,
    pub usage: UsageCounters,
    pub overage: bool,
    pub warnings: Vec<String>,
}

pub async fn usage(app: &App, user: &Principal) -> ApiResult<Usage> {
    let db = &app.db.pool;
    let now = now_ms();
    let account = account(app, &user.user_id).await?;
    let entitlement = Entitlement::of(&account, now);
    let limits = entitlement.limits();
    // The paid period, or else the calendar month.
    let (start, end) = match rows::subscription(db, &user.user_id)
        .await?
        .filter(|s| s.status == "active")
    {
        Some(s) => (s.current_period_start, s.current_period_end),
        None => {
            let today = chrono::DateTime::from_timestamp_millis(now)
                .unwrap_or_default()
                .date_naive();
            let first = today.with_day(1).unwrap_or(today);
            let next = (first + ChronoDuration::days(32))
                .with_day(1)
                .unwrap_or(first);
            let ms = |d: chrono::NaiveDate| {
                d.and_hms_opt(0, 0, 0)
                    .unwrap_or_default()
                    .and_utc()
                    .timestamp_millis()
            };
            (ms(first), ms(next))
        }
    };
    // Trades are counted against the daily limit; the period's figure is compared with it per day.
    let opened = rows::opens_since(db, &user.user_id, start).await?;
    let today_opened =
        rows::opens_since(db, &user.user_id, now.div_euclid(DAY_MS) * DAY_MS).await?;
    app.usage.flush_user(app, &user.user_id).await?;
    let api_calls = rows::api_calls_since(db, &user.user_id, start.div_euclid(DAY_MS)).await?;
    let peak = positions::peak_open(&app.db.pool, &user.user_id, start).await?;
    let brokers = store::brokers::list(db, &user.user_id).await?.len() as i64;
    let days = ((end - start) as f64 / DAY_MS as f64).ceil().max(1.0) as i64;
    let counters = UsageCounters {
        api_calls,
        api_calls_limit: limits.api_calls_per_minute as i64 * 60 * 24 * days,
        trades_executed: today_opened,
        trades_limit: limits.max_daily_trades as i64,
        positions_opened: opened,
        max_concurrent_positions: peak,
        max_concurrent_positions_limit: limits.max_positions as i64,
        brokers_connected: brokers,
        brokers_limit: limits.max_exchange_connections.map(i64::from),
    };
    let mut warnings = Vec::new();
    let mut overage = false;
    let mut check = |name: &str, used: i64, limit: Option<i64>| {
        let Some(limit) = limit.filter(|l| *l > 0) else {
            return;
        };
        if used > limit {
            overage = true;
            warnings.push(format!("{name}: {used} of {limit}, over the limit"));
        } else if used * 10 >= limit * 8 {
            warnings.push(format!(
                "{name}: {used} of {limit} ({}%)",
                used * 100 / limit
            ));
        }
    };
    check(
        "api_calls",
        counters.api_calls,
        Some(counters.api_calls_limit),
    );
    check(
        "trades_executed (today)",
        counters.trades_executed,
        Some(counters.trades_limit),
    );
    check(
        "max_concurrent_positions",
        counters.max_concurrent_positions,
        Some(counters.max_concurrent_positions_limit),
    );
    check(
        "brokers_connected",
        counters.brokers_connected,
        counters.brokers_limit,
    );
    Ok(Usage {
        period_start: iso8601(start),
        period_end: iso8601(end),
        usage: counters,
        overage,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::billing::provider::PaymentProvider;
    use crate::store::on;

    /// Records every charge, checks that a pending payment under its key was written first, and
    /// declines one customer.
    #[derive(Default)]
    struct Recorder {
        pool: Mutex<Option<store::Pool>>,
        charges: Mutex<Vec<(String, String)>>,
        unrecorded: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl PaymentProvider for Arc<Recorder> {
        fn name(&self) -> &'static str {
            "recorder"
        }

        async fn charge(&self, charge: &Charge<'_>) -> ApiResult<String> {
            let pool = self.pool.lock().unwrap().clone().expect("pool set");
            let pending = rows::payment_by_key(&pool, charge.idempotency_key).await?;
            if pending.is_none_or(|p| p.status != "pending") {
                self.unrecorded
                    .lock()
                    .unwrap()
                    .push(charge.idempotency_key.to_string());
            }
            self.charges.lock().unwrap().push((
                charge.customer_id.to_string(),
                charge.idempotency_key.to_string(),
            ));
            if charge.customer_id == "cus_b" {
                return Err(ApiError::new(ErrorCode::PaymentFailed, "card declined"));
            }
            Ok(format!("ref_{}", charge.idempotency_key))
        }

        async fn refund(&self, refund: &Refund<'_>) -> ApiResult<String> {
            Ok(format!("ref_{}", refund.idempotency_key))
        }
    }

    async fn subscribed(app: &App, name: &str, period_end: i64) {
        crate::store::testing::user(&app.db.pool, name).await;
        let row = SubscriptionRow {
            id: format!("sub_{name}"),
            user_id: name.into(),
            tier: "pro".into(),
            billing_interval: "monthly".into(),
            status: "active".into(),
            current_period_start: period_end - 30 * DAY_MS,
            current_period_end: period_end,
            cancel_at_period_end: 0,
            amount: Decimal::from(149),
            currency: "USD".into(),
            payment_method: Some(payment_method("pm_card_visa").to_string()),
            customer_id: format!("cus_{name}"),
            cancelled_at: None,
            cancel_reason: None,
            created_at: 0,
        };
        rows::put(&app.db.pool, &row, 0).await.unwrap();
    }

    #[tokio::test]
    async fn renewals_charge_each_period_once_and_a_failure_stays_with_its_subscription() {
        let recorder = Arc::new(Recorder::default());
        let (app, _dir) = crate::testing::app_with_payments(Box::new(recorder.clone())).await;
        *recorder.pool.lock().unwrap() = Some(app.db.pool.clone());
        let ended = now_ms() - 1_000;
        for name in ["a", "b", "c"] {
            subscribed(&app, name, ended).await;
        }
        // Two runs at once, as two instances would: each period is charged under one key, once.
        let (first, second) = tokio::join!(renew_due(&app), renew_due(&app));
        let (first, second) = (first.unwrap(), second.unwrap());
        assert_eq!(first.renewed + second.renewed, 2, "{first:?} {second:?}");
        assert!(first.failed + second.failed >= 1);
        let charges = recorder.charges.lock().unwrap().clone();
        for customer in ["cus_a", "cus_b", "cus_c"] {
            let keys: std::collections::BTreeSet<&String> = charges
                .iter()
                .filter(|(c, _)| c == customer)
                .map(|(_, k)| k)
                .collect();
            assert_eq!(keys.len(), 1, "{customer}: {charges:?}");
        }
        assert!(
            recorder.unrecorded.lock().unwrap().is_empty(),
            "a charge without its pending payment"
        );
        let db = &app.db.pool;
        for name in ["a", "c"] {
            let s = rows::subscription(db, name).await.unwrap().unwrap();
            assert_eq!(
                (s.status.as_str(), s.current_period_start),
                ("active", ended)
            );
            assert_eq!(
                s.current_period_end,
                ended + 30 * DAY_MS,
                "moved on by exactly one period"
            );
        }
        let b = rows::subscription(db, "b").await.unwrap().unwrap();
        assert_eq!(
            (b.status.as_str(), b.current_period_end),
            ("past_due", ended)
        );
        let statuses: Vec<(String, String)> = on!(db, |c| sqlx::query_as(
            "SELECT user_id, status FROM payments ORDER BY user_id"
        )
        .fetch_all(c)
        .await)
        .unwrap();
        assert_eq!(
            statuses,
            [("a", "settled"), ("b", "failed"), ("c", "settled")]
                .map(|(u, s)| (u.to_string(), s.to_string()))
        );
        // Running again changes nothing: nothing else is due, and b waits for its retry.
        let again = renew_due(&app).await.unwrap();
        assert_eq!(again, Renewals::default());
        assert_eq!(recorder.charges.lock().unwrap().len(), charges.len());
        // After the retries, a subscription whose payment keeps failing lapses to free.
        on!(db, |c| sqlx::query("UPDATE payments SET created_at = 0")
            .execute(c)
            .await
            .map(|done| done.rows_affected()))
        .unwrap();
        for _ in 0..RENEWAL_ATTEMPTS {
            let _ = renew_due(&app).await.unwrap();
            on!(db, |c| sqlx::query("UPDATE payments SET created_at = 0")
                .execute(c)
                .await
                .map(|done| done.rows_affected()))
            .unwrap();
        }
        let b = rows::subscription(db, "b").await.unwrap().unwrap();
        assert_eq!(b.status, "cancelled");
        let tier: String = on!(db, |c| sqlx::query_scalar(
            "SELECT subscription_tier FROM users WHERE id = 'b'"
        )
        .fetch_one(c)
        .await)
        .unwrap();
        assert_eq!(tier, "free");
        let failed: i64 = on!(db, |c| sqlx::query_scalar(
            "SELECT COUNT(*) FROM payments WHERE user_id = 'b' AND status = 'failed'",
        )
        .fetch_one(c)
        .await)
        .unwrap();
        assert_eq!(failed, RENEWAL_ATTEMPTS);
    }

    #[test]
    fn the_same_movement_has_the_same_key() {
        assert_eq!(idempotency_key(&["a", "b"]), idempotency_key(&["a", "b"]));
        assert_ne!(idempotency_key(&["ab", ""]), idempotency_key(&["a", "b"]));
    }
}
