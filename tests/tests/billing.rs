//! Subscriptions and the payment webhook: plans, trial, upgrade with proration, cancellation with
//! and without refund, usage counters, and signed, idempotent provider events.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tradehost_blackbox::{PASSWORD, Server, decimal_sql, email};

const SECRET: &str = "whsec_test_secret";

fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

async fn server() -> Server {
    Server::options()
        .env("PAYMENT_WEBHOOK_SECRET", SECRET)
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await
}

#[tokio::test]
async fn plans_trial_upgrade_cancel_and_usage() {
    let server = server().await;
    let plans = server.get("/api/v1/subscription/plans", None).await;
    plans.expect(200);
    let plans = plans.data()["plans"].as_array().unwrap().clone();
    assert_eq!(plans.len(), 4);
    let basic = plans.iter().find(|p| p["tier"] == "basic").unwrap();
    assert_eq!(basic["price_monthly"], 49.0);
    assert_eq!(basic["yearly_savings"], 118.0);
    assert_eq!(basic["limits"]["max_positions"], 5);
    assert!(plans.iter().find(|p| p["tier"] == "pro").unwrap()["popular"] == true);
    assert!(
        plans
            .iter()
            .find(|p| p["tier"] == "free")
            .unwrap()
            .get("yearly_savings")
            .is_none()
    );

    let (user_id, token) = server.user(&email("subscriber")).await;
    let current = server
        .get("/api/v1/subscription/current", Some(&token))
        .await;
    assert_eq!(current.data()["status"], "trialing");
    assert_eq!(current.data()["tier"], "free");
    assert_eq!(current.data()["trial_active"], true);

    for _ in 0..5 {
        server
            .get("/api/v1/auth/me", Some(&token))
            .await
            .expect(200);
    }
    let usage = server.get("/api/v1/subscription/usage", Some(&token)).await;
    usage.expect(200);
    assert!(
        usage.data()["usage"]["api_calls"].as_i64().unwrap() >= 7,
        "{}",
        usage.text
    );
    assert_eq!(usage.data()["usage"]["brokers_connected"], 0);
    assert_eq!(usage.data()["usage"]["brokers_limit"], 2);
    assert_eq!(usage.data()["overage"], false);

    for (body, field) in [
        (
            json!({"tier": "gold", "interval": "monthly", "payment_method_id": "pm_visa_4242"}),
            "tier",
        ),
        (
            json!({"tier": "free", "interval": "monthly", "payment_method_id": "pm_visa_4242"}),
            "tier",
        ),
        (
            json!({"tier": "basic", "interval": "weekly", "payment_method_id": "pm_visa_4242"}),
            "interval",
        ),
        (
            json!({"tier": "basic", "interval": "monthly", "payment_method_id": ""}),
            "payment_method_id",
        ),
    ] {
        let refused = server
            .post("/api/v1/subscription/upgrade", Some(&token), body)
            .await;
        refused.expect_error(400, "INVALID_REQUEST");
        assert_eq!(refused.json["error"]["details"]["field"], field);
    }
    server
        .post("/api/v1/subscription/cancel", Some(&token), json!({}))
        .await
        .expect_error(400, "INVALID_REQUEST");

    let upgraded = server
        .post(
            "/api/v1/subscription/upgrade",
            Some(&token),
            json!({"tier": "basic", "interval": "monthly", "payment_method_id": "pm_visa_4242"}),
        )
        .await;
    upgraded.expect(200);
    let u = upgraded.data();
    assert_eq!(u["amount"], 49.0);
    assert_eq!(u["proration_credit"], 0.0);
    assert_eq!(u["amount_due_now"], 49.0);
    assert_eq!(u["effective_immediately"], true);
    let current = server
        .get("/api/v1/subscription/current", Some(&token))
        .await;
    let c = current.data();
    assert_eq!(c["tier"], "basic");
    assert_eq!(c["status"], "active");
    assert_eq!(c["trial_active"], false);
    assert_eq!(c["payment_method"]["last4"], "4242");
    assert_eq!(c["payment_method"]["brand"], "visa");
    assert_eq!(c["next_billing_amount"], 49.0);

    // Upgrading again at once: nearly the whole period is unused, so nearly all of it is credited.
    let pro = server
        .post(
            "/api/v1/subscription/upgrade",
            Some(&token),
            json!({"tier": "pro", "interval": "monthly", "payment_method_id": "pm_visa_4242"}),
        )
        .await;
    pro.expect(200);
    let credit = num(&pro.data()["proration_credit"]);
    assert!((-49.0..=-48.9).contains(&credit), "{credit}");
    assert!((num(&pro.data()["amount_due_now"]) - (149.0 + credit)).abs() < 0.005);
    server
        .post(
            "/api/v1/subscription/upgrade",
            Some(&token),
            json!({"tier": "pro", "interval": "monthly", "payment_method_id": "pm_visa_4242"}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    let settings = server.get("/api/v1/config/settings", Some(&token)).await;
    assert_eq!(settings.data()["trading"]["max_position_size_usd"], 2000.0);
    let charged: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT kind, {} FROM payments WHERE user_id = $1 ORDER BY created_at",
        decimal_sql("amount")
    )))
    .bind(&user_id)
    .fetch_all(server.db().await)
    .await
    .unwrap();
    assert_eq!(charged.len(), 2);
    assert_eq!(
        charged[0],
        ("charge".to_string(), "49.00000000".to_string())
    );

    // At period end: access continues, no refund.
    let later = server
        .post(
            "/api/v1/subscription/cancel",
            Some(&token),
            json!({"reason": "testing"}),
        )
        .await;
    later.expect(200);
    assert_eq!(later.data()["cancel_at_period_end"], true);
    assert_eq!(later.data()["refund_amount"], 0.0);
    let current = server
        .get("/api/v1/subscription/current", Some(&token))
        .await;
    assert_eq!(current.data()["tier"], "pro");
    assert_eq!(current.data()["cancel_at_period_end"], true);

    // Immediately: the unused part comes back and the free plan applies.
    let now = server
        .post(
            "/api/v1/subscription/cancel",
            Some(&token),
            json!({"cancel_immediately": true, "feedback": "fine"}),
        )
        .await;
    now.expect(200);
    let refund = num(&now.data()["refund_amount"]);
    assert!((148.9..=149.0).contains(&refund), "{refund}");
    let current = server
        .get("/api/v1/subscription/current", Some(&token))
        .await;
    assert_eq!(current.data()["tier"], "free");
    assert_eq!(current.data()["trial_active"], false);
    for event in ["subscription.upgraded", "subscription.cancelled"] {
        assert_eq!(
            server
                .count(&format!(
                    "SELECT COUNT(*) FROM audit_log WHERE event_type = '{event}'"
                ))
                .await,
            2
        );
    }
}

fn signed(body: &str, at: i64, secret: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{at}.{body}").as_bytes());
    format!("t={at},v1={}", hex::encode(mac.finalize().into_bytes()))
}

async fn deliver(
    server: &Server,
    event: &Value,
    signature: Option<String>,
) -> tradehost_blackbox::Reply {
    let body = event.to_string();
    let mut request = reqwest::Client::new()
        .post(server.url("/api/v1/webhooks/payments"))
        .header("Content-Type", "application/json")
        .body(body);
    if let Some(signature) = signature {
        request = request.header("Stripe-Signature", signature);
    }
    tradehost_blackbox::Reply::from(request.send().await.unwrap()).await
}

#[tokio::test]
async fn payment_events_are_verified_idempotent_and_acted_on() {
    let server = server().await;
    let address = email("payer");
    let (user_id, token) = server.user(&address).await;
    server
        .post("/api/v1/subscription/upgrade", Some(&token), json!({"tier": "basic", "interval": "monthly", "payment_method_id": "pm_mastercard_5555"}))
        .await
        .expect(200);
    let customer = server
        .scalar(&format!(
            "SELECT customer_id FROM subscriptions WHERE user_id = '{user_id}'"
        ))
        .await
        .unwrap();
    let now = chrono::Utc::now().timestamp();
    let event = |id: &str, kind: &str, object: Value| json!({"id": id, "type": kind, "data": {"object": object}});

    let failed = event(
        "evt_failed",
        "invoice.payment_failed",
        json!({"customer": customer}),
    );
    let body = failed.to_string();
    deliver(&server, &failed, None)
        .await
        .expect_error(401, "INVALID_SIGNATURE");
    deliver(&server, &failed, Some(signed(&body, now - 301, SECRET)))
        .await
        .expect_error(401, "INVALID_SIGNATURE");
    deliver(&server, &failed, Some(signed(&body, now, "wrong")))
        .await
        .expect_error(401, "INVALID_SIGNATURE");
    assert_eq!(server.count("SELECT COUNT(*) FROM payment_events").await, 0);

    let accepted = deliver(&server, &failed, Some(signed(&body, now, SECRET))).await;
    accepted.expect(200);
    assert_eq!(accepted.data()["received"], true);
    assert_eq!(accepted.data()["handled"], true);
    assert_eq!(accepted.data()["event_id"], "evt_failed");
    server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": address, "password": PASSWORD}),
        )
        .await
        .expect_error(403, "ACCOUNT_SUSPENDED");
    // A replay is answered and not acted on again.
    let replay = deliver(&server, &failed, Some(signed(&body, now, SECRET))).await;
    replay.expect(200);
    assert_eq!(replay.data()["handled"], true);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'billing.provider_event'")
            .await,
        1
    );

    let paid = event(
        "evt_paid",
        "invoice.payment_succeeded",
        json!({"customer": customer}),
    );
    deliver(&server, &paid, Some(signed(&paid.to_string(), now, SECRET)))
        .await
        .expect(200);
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        server
            .get("/api/v1/subscription/current", Some(&token))
            .await
            .data()["status"],
        "active"
    );

    let updated = event(
        "evt_updated",
        "customer.subscription.updated",
        json!({"customer": customer, "metadata": {"tier": "enterprise"}, "plan": {"interval": "year"}, "status": "active"}),
    );
    deliver(
        &server,
        &updated,
        Some(signed(&updated.to_string(), now, SECRET)),
    )
    .await
    .expect(200);
    let current = server
        .get("/api/v1/subscription/current", Some(&token))
        .await;
    assert_eq!(current.data()["tier"], "enterprise");
    assert_eq!(current.data()["interval"], "yearly");

    let deleted = event(
        "evt_deleted",
        "customer.subscription.deleted",
        json!({"metadata": {"user_id": user_id}}),
    );
    deliver(
        &server,
        &deleted,
        Some(signed(&deleted.to_string(), now, SECRET)),
    )
    .await
    .expect(200);
    assert_eq!(
        server
            .get("/api/v1/subscription/current", Some(&token))
            .await
            .data()["tier"],
        "free"
    );

    let other = event(
        "evt_other",
        "charge.dispute.created",
        json!({"customer": customer}),
    );
    let ignored = deliver(
        &server,
        &other,
        Some(signed(&other.to_string(), now, SECRET)),
    )
    .await;
    ignored.expect(200);
    assert_eq!(ignored.data()["handled"], false);
}

#[tokio::test]
async fn without_a_secret_every_event_is_refused() {
    let server = Server::start().await;
    let event = json!({"id": "evt_1", "type": "invoice.payment_succeeded", "data": {"object": {}}});
    let now = chrono::Utc::now().timestamp();
    let reply = deliver(
        &server,
        &event,
        Some(signed(&event.to_string(), now, SECRET)),
    )
    .await;
    reply.expect_error(503, "SERVICE_UNAVAILABLE");
}
