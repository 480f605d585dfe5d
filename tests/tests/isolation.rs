//! The isolation matrix: a second user presenting the first user's ids gets NOT_FOUND or
//! POSITION_NOT_FOUND and never data; every admin route answers UNAUTHORIZED to a non-admin.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::json;
use tradehost_blackbox::{Server, email};

#[tokio::test]
async fn users_never_see_each_others_data_and_admin_routes_are_closed() {
    let server = Server::start_trading().await;
    let admin = server.admin_token().await;
    server
        .install_plugin(&admin, "testing/guest-churn", "guest-churn")
        .await;
    let (alice_id, alice) = server.user(&email("alice")).await;
    let (_, bob) = server.user(&email("bob")).await;

    // Alice: a broker, trades, an open position, an export.
    let broker_id = server
        .post(
            "/api/v1/config/brokers",
            Some(&alice),
            json!({"broker": "paper", "api_key": "k", "api_secret": "s"}),
        )
        .await
        .data()["broker_id"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .post("/api/v1/trading/start", Some(&alice), json!({"broker": "paper", "strategy": "guest-churn", "symbols": ["BTC-USD", "ETH-USD"]}))
        .await
        .expect(200);
    let deadline = Instant::now() + Duration::from_secs(30);
    while server
        .count(&format!(
            "SELECT COUNT(*) FROM trades WHERE user_id = '{alice_id}'"
        ))
        .await
        < 2
        || server
            .count(&format!(
                "SELECT COUNT(*) FROM positions WHERE user_id = '{alice_id}' AND status = 'open'"
            ))
            .await
            < 1
    {
        assert!(Instant::now() < deadline, "alice does not trade");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server
        .post(
            "/api/v1/trading/stop",
            Some(&alice),
            json!({"close_positions": false}),
        )
        .await
        .expect(200);
    let position_id = server
        .scalar(&format!(
            "SELECT id FROM positions WHERE user_id = '{alice_id}' AND status = 'open'"
        ))
        .await
        .unwrap();
    let trade_position = server
        .scalar(&format!(
            "SELECT position_id FROM trades WHERE user_id = '{alice_id}'"
        ))
        .await
        .unwrap();
    let export_url = server
        .post(
            "/api/v1/analytics/export",
            Some(&alice),
            json!({"format": "json", "data_type": "ledger"}),
        )
        .await
        .data()["download_url"]
        .as_str()
        .unwrap()
        .to_string();
    let bob_export = server
        .post(
            "/api/v1/analytics/export",
            Some(&bob),
            json!({"format": "json", "data_type": "ledger"}),
        )
        .await
        .data()["download_url"]
        .as_str()
        .unwrap()
        .to_string();

    // Bob with Alice's ids.
    let by_id = [
        (
            Method::GET,
            format!("/api/v1/account/positions/{position_id}"),
            404,
            "POSITION_NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/api/v1/account/positions/{position_id}/close"),
            404,
            "POSITION_NOT_FOUND",
        ),
        (
            Method::GET,
            format!("/api/v1/account/positions/{trade_position}"),
            404,
            "POSITION_NOT_FOUND",
        ),
        (
            Method::DELETE,
            format!("/api/v1/config/brokers/{broker_id}"),
            404,
            "NOT_FOUND",
        ),
        (
            Method::POST,
            format!("/api/v1/config/brokers/{broker_id}/test"),
            404,
            "NOT_FOUND",
        ),
    ];
    for (method, path, status, code) in by_id {
        server
            .request(method, &path, Some(&bob), Some(json!({})))
            .await
            .expect_error(status, code);
    }
    // Alice's export id with Bob's (valid, his own) token does not open.
    let (alice_export, _) = export_url.split_once("?token=").unwrap();
    let (_, bob_token) = bob_export.split_once("?token=").unwrap();
    let crossed = reqwest::get(server.url(&format!("{alice_export}?token={bob_token}")))
        .await
        .unwrap();
    assert_eq!(crossed.status(), 401);

    // Bob's own views hold nothing of Alice's.
    let positions = server.get("/api/v1/account/positions", Some(&bob)).await;
    assert_eq!(positions.data()["summary"]["total_positions"], 0);
    let history = server.get("/api/v1/account/history", Some(&bob)).await;
    assert_eq!(history.data()["pagination"]["total_items"], 0);
    assert_eq!(
        server
            .get("/api/v1/config/brokers", Some(&bob))
            .await
            .data()["brokers"],
        json!([])
    );
    assert_eq!(
        server
            .get("/api/v1/analytics/trades?period=all", Some(&bob))
            .await
            .data()["total_trades"],
        0
    );
    let balance = server.get("/api/v1/account/balance", Some(&bob)).await;
    assert_eq!(balance.data()["equity"], balance.data()["initial_capital"]);
    let performance = server
        .get("/api/v1/account/performance?period=all", Some(&bob))
        .await;
    assert_eq!(performance.data()["metrics"]["total_trades"], 0);
    assert_eq!(
        server.get("/api/v1/account/stats", Some(&bob)).await.data()["trading"]["total_trades_all_time"],
        0
    );
    // And Alice's still hold it all.
    server
        .get(
            &format!("/api/v1/account/positions/{position_id}"),
            Some(&alice),
        )
        .await
        .expect(200);

    // Every admin route is closed to a user.
    let admin_routes = [
        (Method::GET, "/api/v1/admin/users".to_string()),
        (Method::GET, format!("/api/v1/admin/users/{alice_id}")),
        (Method::PUT, format!("/api/v1/admin/users/{alice_id}")),
        (Method::GET, "/api/v1/admin/metrics".to_string()),
        (Method::GET, "/api/v1/admin/audit-logs".to_string()),
        (Method::GET, "/api/v1/admin/kill-switch".to_string()),
        (Method::POST, "/api/v1/admin/kill-switch".to_string()),
        (Method::DELETE, "/api/v1/admin/kill-switch".to_string()),
        (Method::GET, "/api/v1/admin/plugins".to_string()),
        (Method::GET, "/api/v1/admin/plugins/paper".to_string()),
        (Method::POST, "/api/v1/admin/plugins".to_string()),
        (
            Method::POST,
            "/api/v1/admin/plugins/risk-guards/activate".to_string(),
        ),
        (
            Method::POST,
            "/api/v1/admin/plugins/risk-guards/rollback".to_string(),
        ),
        (
            Method::PUT,
            "/api/v1/admin/plugins/paper/config".to_string(),
        ),
    ];
    for (method, path) in admin_routes {
        let reply = server
            .request(
                method.clone(),
                &path,
                Some(&bob),
                Some(json!({"notes": "x", "config": {}})),
            )
            .await;
        reply.expect_error(403, "UNAUTHORIZED");
    }
    let metrics = server.get("/metrics", Some(&bob)).await;
    assert_eq!(metrics.status, 403);
    assert_eq!(
        server
            .get("/api/v1/admin/kill-switch", Some(&admin))
            .await
            .data()["active"],
        false,
        "a refused request changed something"
    );
}
