//! `GET /admin/metrics` and `/metrics` count what really happened.

use serde_json::json;
use tradehost_blackbox::{Server, email};

const SCRAPE_TOKEN: &str = "scrape-token-for-tests-0123456789";

#[tokio::test]
async fn metrics_come_from_real_counters() {
    let server = Server::options()
        .env("TRADEHOST_METRICS_TOKEN", SCRAPE_TOKEN)
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let admin = server.admin_token().await;
    let (_, user) = server.user(&email("counted")).await;
    let (_, pro) = server.user(&email("pro")).await;
    server
        .post(
            "/api/v1/subscription/upgrade",
            Some(&pro),
            json!({"tier": "pro", "interval": "monthly", "payment_method_id": "pm_visa_4242"}),
        )
        .await
        .expect(200);
    let (_, yearly) = server.user(&email("yearly")).await;
    server
        .post(
            "/api/v1/subscription/upgrade",
            Some(&yearly),
            json!({"tier": "basic", "interval": "yearly", "payment_method_id": "pm_visa_4242"}),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/subscription/cancel",
            Some(&yearly),
            json!({"cancel_immediately": true}),
        )
        .await
        .expect(200);
    server.connect_paper(&user).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&user),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    for _ in 0..20 {
        server.get("/api/v1/auth/me", Some(&user)).await.expect(200);
    }

    server
        .get("/api/v1/admin/metrics", Some(&user))
        .await
        .expect_error(403, "UNAUTHORIZED");
    let metrics = server.get("/api/v1/admin/metrics", Some(&admin)).await;
    metrics.expect(200);
    let m = metrics.data();
    assert_eq!(m["users"]["total"], 4);
    assert_eq!(m["users"]["pro"], 1);
    assert_eq!(m["users"]["free"], 3);
    assert!(m["users"]["active_today"].as_i64().unwrap() >= 2);
    assert_eq!(m["trading"]["bots_running"], 1);
    assert!(
        m["system"]["api_requests_per_second"].as_f64().unwrap() > 0.3,
        "{m}"
    );
    assert!(m["system"]["avg_response_time_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(m["system"]["error_rate"], 0.0);
    // One active monthly pro subscription; one of the two subscriptions was cancelled.
    assert_eq!(m["revenue"]["mrr"], 149.0);
    assert_eq!(m["revenue"]["arr"], 1788.0);
    assert_eq!(m["revenue"]["churn_rate"], 0.5);

    // Prometheus: the admin's token or the scrape token; anyone else is refused.
    let scraped = server.get("/metrics", Some(SCRAPE_TOKEN)).await;
    scraped.expect(200);
    assert!(
        scraped
            .header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    let requests: f64 = scraped
        .text
        .lines()
        .find_map(|line| line.strip_prefix("tradehost_http_requests_total "))
        .expect("request counter")
        .parse()
        .unwrap();
    assert!(requests >= 25.0, "{requests}");
    assert!(scraped.text.contains("tradehost_users{tier=\"pro\"} 1"));
    assert!(scraped.text.contains("tradehost_bots_active 1"));
    server.get("/metrics", Some(&admin)).await.expect(200);
    let refused = server.get("/metrics", Some(&user)).await;
    assert_eq!(refused.status, 403);
    assert!(refused.json["detail"].is_string(), "{}", refused.text);
    assert_eq!(
        server.get("/metrics", Some("wrong-token")).await.status,
        401
    );
    assert_eq!(server.get("/metrics", None).await.status, 401);
}
