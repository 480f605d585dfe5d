//! `/admin/users`: search, filters and pagination; one user's picture; changing tier, status and
//! notes, where a suspension ends the user's sessions and stops their bot at once.

use reqwest::Method;
use serde_json::json;
use tradehost_blackbox::{PASSWORD, Server, email};

#[tokio::test]
async fn admins_list_inspect_and_change_users() {
    let server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.2")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let admin = server.admin_token().await;
    let alice_email = email("alice");
    let (alice_id, alice) = server.user(&alice_email).await;
    let (bob_id, bob) = server.user(&email("bob")).await;

    // Only admins.
    for (method, path) in [
        (Method::GET, "/api/v1/admin/users".to_string()),
        (Method::GET, format!("/api/v1/admin/users/{alice_id}")),
        (Method::PUT, format!("/api/v1/admin/users/{alice_id}")),
    ] {
        server
            .request(method, &path, Some(&bob), Some(json!({"notes": "x"})))
            .await
            .expect_error(403, "UNAUTHORIZED");
    }

    let list = server
        .get("/api/v1/admin/users?per_page=1000", Some(&admin))
        .await;
    list.expect(200);
    assert_eq!(list.data()["pagination"]["per_page"], 100);
    assert_eq!(list.data()["pagination"]["total_items"], 3);
    let found = server
        .get(
            &format!("/api/v1/admin/users?search={}", &alice_email[..8]),
            Some(&admin),
        )
        .await;
    let users = found.data()["users"].as_array().unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0]["user_id"], alice_id.as_str());
    assert_eq!(users[0]["total_trades"], 0);
    let by_id = server
        .get(
            &format!("/api/v1/admin/users?search={bob_id}"),
            Some(&admin),
        )
        .await;
    assert_eq!(by_id.data()["users"][0]["user_id"], bob_id.as_str());
    server
        .get("/api/v1/admin/users?tier=gold", Some(&admin))
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .get("/api/v1/admin/users?page=0", Some(&admin))
        .await
        .expect_error(400, "INVALID_REQUEST");

    // Alice runs a bot.
    server.connect_paper(&alice).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&alice),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    let detail = server
        .get(&format!("/api/v1/admin/users/{alice_id}"), Some(&admin))
        .await;
    detail.expect(200);
    let user = &detail.data()["user"];
    assert_eq!(user["email"], alice_email.as_str());
    assert_eq!(user["subscription"]["status"], "trialing");
    assert_eq!(user["brokers"][0]["name"], "paper");
    assert!(user["trading"]["total_trades"].is_u64());
    server
        .get("/api/v1/admin/users/no-such-user", Some(&admin))
        .await
        .expect_error(404, "NOT_FOUND");

    // A tier set by an admin is outright and ends the trial.
    server
        .put(
            &format!("/api/v1/admin/users/{bob_id}"),
            Some(&admin),
            json!({"subscription_tier": "pro", "notes": "friend of the house"}),
        )
        .await
        .expect(200);
    let bob_detail = server
        .get(&format!("/api/v1/admin/users/{bob_id}"), Some(&admin))
        .await;
    assert_eq!(bob_detail.data()["user"]["subscription"]["tier"], "pro");
    assert_eq!(
        bob_detail.data()["user"]["subscription"]["status"],
        "active"
    );
    assert_eq!(bob_detail.data()["user"]["notes"], "friend of the house");
    let settings = server.get("/api/v1/config/settings", Some(&bob)).await;
    assert_eq!(settings.data()["trading"]["max_position_size_usd"], 2000.0);
    let pro = server
        .get("/api/v1/admin/users?tier=pro", Some(&admin))
        .await;
    assert_eq!(pro.data()["pagination"]["total_items"], 1);

    for body in [
        json!({"status": "frozen"}),
        json!({"subscription_tier": "platinum"}),
        json!({"role": "admin"}),
        json!({}),
    ] {
        server
            .put(&format!("/api/v1/admin/users/{bob_id}"), Some(&admin), body)
            .await
            .expect_error(400, "INVALID_REQUEST");
    }

    // Suspension: sessions end, sign-in is refused, the bot stops.
    server.wait_running(&alice).await;
    let suspended = server
        .put(
            &format!("/api/v1/admin/users/{alice_id}"),
            Some(&admin),
            json!({"status": "suspended"}),
        )
        .await;
    suspended.expect(200);
    assert_eq!(suspended.data()["bot_stopped"], true);
    assert!(suspended.data()["sessions_revoked"].as_u64().unwrap() >= 1);
    let refused = server.get("/api/v1/trading/status", Some(&alice)).await;
    assert_eq!(refused.status, 401);
    server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": alice_email, "password": PASSWORD}),
        )
        .await
        .expect_error(403, "ACCOUNT_SUSPENDED");
    let bot = server
        .scalar(&format!(
            "SELECT status FROM bots WHERE user_id = '{alice_id}'"
        ))
        .await;
    assert_eq!(bot.as_deref(), Some("stopped"));
    let suspended_list = server
        .get("/api/v1/admin/users?status=suspended", Some(&admin))
        .await;
    assert_eq!(
        suspended_list.data()["users"][0]["user_id"],
        alice_id.as_str()
    );
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'admin.user_updated'")
            .await,
        2
    );

    // Reinstated, she signs in again.
    server
        .put(
            &format!("/api/v1/admin/users/{alice_id}"),
            Some(&admin),
            json!({"status": "active"}),
        )
        .await
        .expect(200);
    server.login(&alice_email, PASSWORD).await;
}
