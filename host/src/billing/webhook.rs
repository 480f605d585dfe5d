//! `POST /webhooks/payments`: Stripe-compatible events, signed with `PAYMENT_WEBHOOK_SECRET`.
//!
//! `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`; a timestamp more than
//! five minutes away is refused, signatures are compared in constant time, and each event id is
//! acted on once (a replay is answered without acting again). Without a secret every event is
//! refused.

use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::App;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::audit::{self, Actor};
use crate::store::billing as rows;
use crate::store::{now_ms, sessions, users};

pub const TOLERANCE_SECS: i64 = 300;

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = PaymentReceived)]
pub struct Received {
    pub received: bool,
    pub event_id: String,
    pub handled: bool,
}

fn refused(message: &str) -> ApiError {
    ApiError::new(ErrorCode::InvalidSignature, message)
}

/// Checks a `Stripe-Signature` header against the raw body.
pub fn verify(secret: &str, header: Option<&str>, body: &[u8], now_secs: i64) -> ApiResult<()> {
    let header = header.ok_or_else(|| refused("Missing Stripe-Signature header"))?;
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
            Some(("v1", value)) => signatures.push(value.to_string()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or_else(|| refused("The signature has no timestamp"))?;
    // Any i64 may arrive: the difference is taken without overflow (i64::MIN would overflow
    // both the subtraction and `abs`).
    if now_secs.abs_diff(timestamp) > TOLERANCE_SECS.unsigned_abs() {
        return Err(refused(
            "The signature's timestamp is outside the five-minute tolerance",
        ));
    }
    let mut expected =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    expected.update(timestamp.to_string().as_bytes());
    expected.update(b".");
    expected.update(body);
    let valid = signatures.iter().any(|candidate| {
        hex::decode(candidate).is_ok_and(|bytes| expected.clone().verify_slice(&bytes).is_ok())
    });
    if valid {
        Ok(())
    } else {
        Err(refused("The signature does not match"))
    }
}

/// The user an event is about: the customer of a subscription, or `metadata.user_id`.
async fn user_of(app: &App, object: &Value) -> ApiResult<Option<String>> {
    if let Some(customer) = object["customer"].as_str()
        && let Some(subscription) = rows::by_customer(&app.db.pool, customer).await?
    {
        return Ok(Some(subscription.user_id));
    }
    let Some(user_id) = object["metadata"]["user_id"].as_str() else {
        return Ok(None);
    };
    Ok(users::by_id(&app.db.pool, user_id)
        .await?
        .map(|user| user.id))
}

pub async fn receive(app: &App, signature: Option<&str>, body: &[u8]) -> ApiResult<Received> {
    let Some(secret) = app.config.payment_webhook_secret.as_deref() else {
        return Err(ApiError::new(
            ErrorCode::ServiceUnavailable,
            "Payment webhooks are not configured (PAYMENT_WEBHOOK_SECRET)",
        ));
    };
    verify(secret, signature, body, now_ms() / 1000)?;
    let event: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::new(ErrorCode::InvalidRequest, "The event is not JSON"))?;
    let (Some(event_id), Some(kind)) = (event["id"].as_str(), event["type"].as_str()) else {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "The event needs an id and a type",
        ));
    };
    if let Some(handled) = rows::event_seen(&app.db.pool, event_id).await? {
        return Ok(Received {
            received: true,
            event_id: event_id.into(),
            handled,
        });
    }
    let object = &event["data"]["object"];
    let user_id = user_of(app, object).await?;
    let now = now_ms();
    let mut tx = app.db.begin().await?;
    let subscription = match &user_id {
        Some(user_id) => rows::subscription(&mut *tx, user_id).await?,
        None => None,
    };
    let mut lock_out = false;
    let handled = match (kind, &user_id) {
        ("invoice.payment_succeeded", Some(user_id)) => {
            if let Some(mut s) = subscription {
                s.status = "active".into();
                rows::put(&mut *tx, &s, now).await?;
            }
            // A payment settles what suspended the account for non-payment.
            let user = users::by_id(&mut *tx, user_id).await?;
            if user.is_some_and(|u| u.status == "suspended") {
                users::set_status(&mut *tx, user_id, "active", now).await?;
            }
            true
        }
        ("invoice.payment_failed", Some(user_id)) => {
            if let Some(mut s) = subscription {
                s.status = "past_due".into();
                rows::put(&mut *tx, &s, now).await?;
            }
            users::set_status(&mut *tx, user_id, "suspended", now).await?;
            sessions::revoke_all(&mut *tx, user_id, "payment_failed").await?;
            lock_out = true;
            true
        }
        ("customer.subscription.deleted", Some(user_id)) => {
            if let Some(mut s) = subscription {
                s.status = "cancelled".into();
                s.cancelled_at = Some(now);
                rows::put(&mut *tx, &s, now).await?;
            }
            users::set_tier(&mut *tx, user_id, "free", now).await?;
            true
        }
        ("customer.subscription.updated", Some(user_id)) => {
            let tier = object["metadata"]["tier"]
                .as_str()
                .or(object["plan"]["metadata"]["tier"].as_str())
                .and_then(super::plans::Tier::parse);
            if let Some(mut s) = subscription {
                if let Some(tier) = tier {
                    s.tier = tier.as_str().into();
                }
                match object["plan"]["interval"].as_str() {
                    Some("year") => s.billing_interval = "yearly".into(),
                    Some("month") => s.billing_interval = "monthly".into(),
                    _ => {}
                }
                match object["status"].as_str() {
                    Some("active" | "trialing") => s.status = "active".into(),
                    Some("past_due" | "unpaid") => s.status = "past_due".into(),
                    Some("canceled") => s.status = "cancelled".into(),
                    _ => {}
                }
                if let Some(end) = object["current_period_end"].as_i64() {
                    s.current_period_end = end * 1000;
                }
                s.cancel_at_period_end = object["cancel_at_period_end"]
                    .as_bool()
                    .unwrap_or(s.cancel_at_period_end != 0)
                    as i64;
                rows::put(&mut *tx, &s, now).await?;
            }
            if let Some(tier) = tier {
                users::set_tier(&mut *tx, user_id, tier.as_str(), now).await?;
            }
            true
        }
        _ => false,
    };
    rows::record_event(&mut *tx, event_id, kind, handled, user_id.as_deref(), now).await?;
    audit::record(
        &mut *tx,
        "billing.provider_event",
        &Actor {
            user_id: user_id.as_deref(),
            ip_address: None,
            user_agent: None,
        },
        json!({"event_id": event_id, "type": kind, "handled": handled}),
    )
    .await?;
    tx.commit().await?;
    if let Some(user_id) = &user_id {
        app.user_changed(user_id);
        if lock_out {
            crate::engine::stop_for_account(
                app,
                user_id,
                "The account was suspended: a payment failed",
            )
            .await?;
        } else {
            crate::engine::entitlement_changed(app, user_id).await?;
        }
    }
    Ok(Received {
        received: true,
        event_id: event_id.into(),
        handled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, t: i64, body: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.{body}").as_bytes());
        format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn signatures_are_checked_with_a_tolerance() {
        let body = r#"{"id":"evt_1"}"#;
        let now = 1_800_000_000;
        assert!(
            verify(
                "whsec",
                Some(&sign("whsec", now, body)),
                body.as_bytes(),
                now
            )
            .is_ok()
        );
        assert!(
            verify(
                "whsec",
                Some(&sign("whsec", now - 299, body)),
                body.as_bytes(),
                now
            )
            .is_ok()
        );
        for header in [
            sign("whsec", now - 301, body),
            sign("other", now, body),
            sign("whsec", now, r#"{"id":"evt_2"}"#),
            format!("t={now}"),
            "v1=00".to_string(),
            // Extreme timestamps are refused, not a panic.
            sign("whsec", i64::MIN, body),
            sign("whsec", i64::MAX, body),
        ] {
            let err = verify("whsec", Some(&header), body.as_bytes(), now).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidSignature, "{header}");
        }
        assert!(verify("whsec", None, body.as_bytes(), now).is_err());
    }
}
