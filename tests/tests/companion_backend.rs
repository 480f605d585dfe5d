//! Companion set A (docs/companion.md): the unversioned FastAPI-style backend. Health, register and
//! sign-in with the platform's accounts and tokens, profile, the bot's start and stop on the
//! user's broker, status, positions, P&L, settings, trading control and broker credentials, with
//! every error as `{detail, code}`.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tradehost_blackbox::companion::*;
use tradehost_blackbox::{PASSWORD, Reply, Server, email};

/// The backend's start without a broker says what to do (the gateway keeps its own wording).
const NO_BROKER: &str = "No broker is connected: connect one with POST /api/user/brokers/{broker} before starting the bot";
const UNSUPPORTED: &str =
    "Unsupported broker. Supported: paper, coinbase, kraken, binance, okx, alpaca";

/// FastAPI's 422 list form, with an entry for `loc`.
#[track_caller]
fn assert_validation(reply: &Reply, loc: &[&str]) {
    reply.expect(422);
    let items = reply.json["detail"]
        .as_array()
        .unwrap_or_else(|| panic!("detail is not a list: {}", reply.text));
    assert!(!items.is_empty(), "{}", reply.text);
    for item in items {
        assert!(
            item["type"].as_str().is_some_and(|t| !t.is_empty()),
            "{item}"
        );
        assert!(item["loc"].is_array(), "{item}");
        assert!(
            item["msg"].as_str().is_some_and(|m| !m.is_empty()),
            "{item}"
        );
    }
    assert!(
        items.iter().any(|i| i["loc"] == json!(loc)),
        "no entry for {loc:?}: {}",
        reply.text
    );
}

/// Polls a companion route (no platform envelope) until `check` passes.
async fn poll(
    server: &Server,
    token: &str,
    path: &str,
    secs: u64,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let reply = server.get(path, Some(token)).await;
        reply.expect(200);
        if check(&reply.json) {
            return reply.json;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting on {path}: {}",
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn trading_settings(server: &Server, token: &str) -> Value {
    server
        .get("/api/v1/config/settings", Some(token))
        .await
        .data()["trading"]
        .clone()
}

/// A server scanning every 100 ms with the API budget raised for polling.
async fn server() -> Server {
    Server::start_trading().await
}

async fn a_register(server: &Server, address: &str, tier: Option<&str>) -> Reply {
    let mut body = json!({"email": address, "password": PASSWORD});
    if let Some(tier) = tier {
        body["subscription_tier"] = json!(tier);
    }
    server.post("/api/auth/register", None, body).await
}

async fn a_login(server: &Server, address: &str, password: &str) -> Reply {
    server
        .post(
            "/api/auth/login",
            None,
            json!({"email": address, "password": password}),
        )
        .await
}

/// `POST` without a body (as the original web client sends start and stop).
async fn post_empty(server: &Server, path: &str, token: &str) -> Reply {
    server.request(Method::POST, path, Some(token), None).await
}

#[tokio::test]
async fn health_answers_without_a_token() {
    let server = Server::start().await;
    let health = server.get("/health", None).await;
    health.expect(200);
    assert_eq!(health.json["status"], "healthy");
    assert_eq!(health.json["service"], "tradehost");
    assert!(
        health.json["version"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{}",
        health.text
    );
    assert_utc(&health.json["timestamp"]);
    // One instance alone: no peers and no leases.
    let instance = &health.json["instance"];
    assert_eq!(instance["clustered"], false, "{instance}");
    assert_eq!(instance["bot_leases"], 0, "{instance}");
    assert_eq!(instance["peers"], serde_json::json!([]), "{instance}");
    assert!(instance["id"].as_str().is_some_and(|id| !id.is_empty()));
}

#[tokio::test]
async fn register_answers_a_token_on_the_free_trial() {
    let server = Server::start().await;
    let address = email("a-register");
    let registered = a_register(&server, &address, Some("pro")).await;
    registered.expect(200);
    let body = &registered.json;
    assert_eq!(body["token_type"], "bearer");
    assert_eq!(body["email"], address.as_str());
    // A paid tier is only granted through billing.
    assert_eq!(body["subscription_tier"], "free");
    let user_id = body["user_id"].as_str().unwrap().to_string();
    let token = body["access_token"].as_str().unwrap().to_string();
    // The token is the platform's.
    let me = server.get("/api/v1/auth/me", Some(&token)).await;
    me.expect(200);
    assert_eq!(me.data()["user_id"], user_id.as_str());
    assert_eq!(
        server
            .get("/api/v1/subscription/current", Some(&token))
            .await
            .data()["tier"],
        "free"
    );

    // Without a tier, and the same address again (in any case).
    let plain = a_register(&server, &email("a-plain"), None).await;
    plain.expect(200);
    assert_eq!(plain.json["subscription_tier"], "free");
    assert_detail(
        &a_register(&server, &address, None).await,
        409,
        "User already exists",
    );
    assert_detail(
        &a_register(&server, &address.to_uppercase(), Some("basic")).await,
        409,
        "User already exists",
    );
    // A platform account is the same account.
    let platform = email("a-platform");
    server.register(&platform).await;
    assert_detail(
        &a_register(&server, &platform, None).await,
        409,
        "User already exists",
    );
}

#[tokio::test]
async fn register_refuses_bad_fields_in_the_list_form() {
    let server = Server::start().await;
    let address = email("a-invalid");
    let cases = [
        (
            json!({"email": "not-an-email", "password": PASSWORD}),
            ["body", "email"],
        ),
        (
            json!({"email": address, "password": "short"}),
            ["body", "password"],
        ),
        (
            json!({"email": address, "password": "password"}),
            ["body", "password"],
        ),
        (
            json!({"email": address, "password": address}),
            ["body", "password"],
        ),
        (json!({"email": address}), ["body", "password"]),
        (json!({"password": PASSWORD}), ["body", "email"]),
        (
            json!({"email": address, "password": PASSWORD, "subscription_tier": "gold"}),
            ["body", "subscription_tier"],
        ),
        (
            json!({"email": address, "password": 12345678}),
            ["body", "password"],
        ),
    ];
    for (body, loc) in cases {
        let reply = server.post("/api/auth/register", None, body.clone()).await;
        assert_validation(&reply, &loc);
    }
    // No body at all.
    let empty = server
        .raw(Method::POST, "/api/auth/register", None, "")
        .await;
    empty.expect(422);
    assert!(empty.json["detail"].is_array(), "{}", empty.text);
    // Nothing was created.
    assert_detail(
        &a_login(&server, &address, PASSWORD).await,
        401,
        "Invalid credentials",
    );
}

#[tokio::test]
async fn login_answers_a_token_the_platform_accepts() {
    let server = Server::start().await;
    let address = email("a-login");
    let user_id = server.register(&address).await;
    let login = a_login(&server, &address, PASSWORD).await;
    login.expect(200);
    assert_eq!(login.json["token_type"], "bearer");
    assert_eq!(login.json["user_id"], user_id.as_str());
    assert_eq!(login.json["email"], address.as_str());
    assert_eq!(login.json["subscription_tier"], "free");
    let token = login.json["access_token"].as_str().unwrap().to_string();
    // An A token on the platform, a platform token on A.
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    balance.expect(200);
    assert_eq!(balance.data()["equity"], 10000.0);
    let platform = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let profile = server.get("/api/user/profile", Some(&platform)).await;
    profile.expect(200);
    assert_eq!(profile.json["user_id"], user_id.as_str());

    // Refusals: wrong password, the password in another case, an unknown address.
    for (address, password) in [
        (address.as_str(), "not the password at all"),
        (address.as_str(), &PASSWORD.to_uppercase()),
        ("nobody-here@example.com", PASSWORD),
    ] {
        assert_detail(
            &a_login(&server, address, password).await,
            401,
            "Invalid credentials",
        );
    }
    assert_validation(
        &server
            .post("/api/auth/login", None, json!({"email": address}))
            .await,
        &["body", "password"],
    );
}

#[tokio::test]
async fn a_suspended_or_disabled_account_cannot_sign_in() {
    let server = Server::start().await;
    let admin = server.admin_token().await;
    let suspended = email("a-suspended");
    let (suspended_id, token) = server.user(&suspended).await;
    let disabled = email("a-disabled");
    let (disabled_id, _) = server.user(&disabled).await;
    for (id, status) in [(&suspended_id, "suspended"), (&disabled_id, "disabled")] {
        server
            .put(
                &format!("/api/v1/admin/users/{id}"),
                Some(&admin),
                json!({"status": status}),
            )
            .await
            .expect(200);
    }
    // Only the right password reveals the suspension.
    assert_detail(
        &a_login(&server, &suspended, "not the password at all").await,
        401,
        "Invalid credentials",
    );
    // Its sessions ended.
    assert_unauthenticated(
        &server.get("/api/status", Some(&token)).await,
        "Invalid or expired token",
    );
    let refused_suspended = a_login(&server, &suspended, PASSWORD).await;
    let refused_disabled = a_login(&server, &disabled, PASSWORD).await;
    refused_suspended.expect(403);
    refused_disabled.expect(403);
    assert_eq!(
        (
            &refused_suspended.json["detail"],
            &refused_disabled.json["detail"]
        ),
        (&json!("Account suspended"), &json!("Account disabled")),
    );
}

#[tokio::test]
async fn every_route_needs_a_valid_token() {
    let server = Server::start().await;
    let routes = [
        (Method::GET, "/api/user/profile"),
        (Method::POST, "/api/start_bot"),
        (Method::POST, "/api/stop_bot"),
        (Method::GET, "/api/status"),
        (Method::GET, "/api/positions"),
        (Method::GET, "/api/pnl"),
        (Method::GET, "/api/config"),
        (Method::POST, "/api/config"),
        (Method::POST, "/api/trading/control"),
        (Method::GET, "/api/user/brokers"),
        (Method::POST, "/api/user/brokers/paper"),
        (Method::DELETE, "/api/user/brokers/paper"),
    ];
    let body = json!({"action": "start", "api_key": "k", "api_secret": "s"});
    for (method, path) in &routes {
        let missing = server
            .request(method.clone(), path, None, Some(body.clone()))
            .await;
        assert_unauthenticated(&missing, "Not authenticated");
        let garbage = server
            .request(
                method.clone(),
                path,
                Some("not.a.token"),
                Some(body.clone()),
            )
            .await;
        assert_unauthenticated(&garbage, "Invalid or expired token");
    }
    // A signed token from another key, and a token whose session ended.
    let (user_id, token) = server.user(&email("a-tokens")).await;
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &json!({"sub": user_id, "user_id": user_id, "exp": 4_102_444_800u64}),
        &jsonwebtoken::EncodingKey::from_secret(b"some-other-secret-some-other-secret-0"),
    )
    .unwrap();
    assert_unauthenticated(
        &server.get("/api/status", Some(&forged)).await,
        "Invalid or expired token",
    );
    server.get("/api/status", Some(&token)).await.expect(200);
    server
        .post("/api/v1/auth/logout", Some(&token), json!({}))
        .await
        .expect(200);
    assert_unauthenticated(
        &server.get("/api/status", Some(&token)).await,
        "Invalid or expired token",
    );
}

#[tokio::test]
async fn profile_shows_the_account_its_settings_and_brokers() {
    let server = Server::start().await;
    let address = email("a-profile");
    let (user_id, token) = server.user(&address).await;
    let profile = server.get("/api/user/profile", Some(&token)).await;
    profile.expect(200);
    assert!(profile.header("x-ratelimit-limit").is_some());
    let p = &profile.json;
    assert_eq!(p["user_id"], user_id.as_str());
    assert_eq!(p["email"], address.as_str());
    assert_eq!(p["subscription_tier"], "free");
    assert_eq!(p["enabled"], true);
    assert_eq!(p["brokers"], json!([]));
    assert_utc(&p["created_at"]);
    let settings = server.get("/api/v1/config/settings", Some(&token)).await;
    let trading = settings.data()["trading"].clone();
    let permissions = &p["permissions"];
    assert_eq!(permissions["user_id"], user_id.as_str());
    assert_eq!(permissions["allowed_pairs"], trading["allowed_pairs"]);
    assert_eq!(
        permissions["max_position_size_usd"],
        trading["max_position_size_usd"]
    );
    assert_eq!(
        permissions["max_daily_loss_usd"],
        trading["max_daily_loss_usd"]
    );
    assert_eq!(
        permissions["max_positions"],
        trading["max_concurrent_positions"]
    );
    assert_eq!(permissions["trade_only"], true);
    assert_eq!(permissions["enabled"], true);
    assert_utc(&permissions["created_at"]);

    // Changed settings and a connected broker show.
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"max_position_size_usd": 250, "max_concurrent_positions": 2, "allowed_pairs": ["BTC-USD", "ETH-USD"]}}),
        )
        .await
        .expect(200);
    server.connect_paper(&token).await;
    let after = server.get("/api/user/profile", Some(&token)).await;
    assert_eq!(after.json["brokers"], json!(["paper"]));
    assert_eq!(after.json["permissions"]["max_position_size_usd"], 250.0);
    assert_eq!(after.json["permissions"]["max_positions"], 2);
    assert_eq!(
        after.json["permissions"]["allowed_pairs"],
        json!(["BTC-USD", "ETH-USD"])
    );
}

#[tokio::test]
async fn start_bot_needs_a_broker_and_status_starts_uninitialised() {
    let server = server().await;
    let (user_id, token) = server.user(&email("a-nobroker")).await;
    let status = server.get("/api/status", Some(&token)).await;
    status.expect(200);
    assert_eq!(status.json["user_id"], user_id.as_str());
    assert_eq!(status.json["engine_status"], "not_initialized");
    assert_eq!(status.json["trading_enabled"], false);
    assert!(status.json["last_activity"].is_null(), "{}", status.text);
    let stats = &status.json["stats"];
    assert_eq!(stats["total_trades"], 0);
    assert_eq!(num(&stats["total_pnl"]), 0.0);
    assert_eq!(stats["active_positions"], 0);

    assert_detail(
        &post_empty(&server, "/api/start_bot", &token).await,
        400,
        NO_BROKER,
    );
    assert_detail(
        &post_empty(&server, "/api/stop_bot", &token).await,
        400,
        "No active trading instance found",
    );
    let still = server.get("/api/status", Some(&token)).await;
    assert_eq!(still.json["engine_status"], "not_initialized");
}

#[tokio::test]
async fn start_and_stop_bot_drive_the_engine() {
    let server = server().await;
    let (user_id, token) = server.user(&email("a-bot")).await;
    server.connect_paper(&token).await;
    // As the original client sends it: a JSON content type and no body.
    let started = server
        .raw(Method::POST, "/api/start_bot", Some(&token), "")
        .await;
    started.expect(200);
    assert_eq!(started.json["message"], "Bot started successfully");
    assert_eq!(started.json["user_id"], user_id.as_str());
    assert!(
        ["starting", "running"].contains(&started.json["status"].as_str().unwrap_or_default()),
        "{}",
        started.text
    );
    let running = poll(&server, &token, "/api/status", 20, |s| {
        s["engine_status"] == "running" && !s["last_activity"].is_null()
    })
    .await;
    assert_eq!(running["trading_enabled"], true);
    assert_utc(&running["last_activity"]);
    // The same bot as the platform's, on the paper connection.
    let platform = server.wait_running(&token).await;
    assert_eq!(platform["broker"], "paper");
    assert_detail(
        &post_empty(&server, "/api/start_bot", &token).await,
        400,
        "Bot is already running",
    );

    let stopped = post_empty(&server, "/api/stop_bot", &token).await;
    stopped.expect(200);
    assert_eq!(stopped.json["message"], "Bot stopped successfully");
    assert_eq!(stopped.json["user_id"], user_id.as_str());
    assert_eq!(stopped.json["status"], "stopped");
    let status = server.get("/api/status", Some(&token)).await;
    assert_eq!(status.json["engine_status"], "stopped");
    assert_eq!(status.json["trading_enabled"], false);
    assert_eq!(
        server
            .get("/api/v1/trading/status", Some(&token))
            .await
            .data()["status"],
        "stopped"
    );
    assert_detail(
        &post_empty(&server, "/api/stop_bot", &token).await,
        400,
        "No active trading instance found",
    );
}

#[tokio::test]
async fn positions_pnl_and_status_report_real_trades() {
    let server = server().await;
    quiet_strategy(&server).await;
    let (_, token) = server.user(&email("a-trader")).await;
    let key = webhook_key(&server, &token).await;
    server.connect_paper(&token).await;
    post_empty(&server, "/api/start_bot", &token)
        .await
        .expect(200);
    server.wait_running(&token).await;
    trade_once_and_hold(&server, &token, &key).await;
    // Stopped, the figures hold still while they are compared.
    post_empty(&server, "/api/stop_bot", &token)
        .await
        .expect(200);

    let platform = server.get("/api/v1/account/positions", Some(&token)).await;
    let expected = platform.data()["positions"][0].clone();
    let positions = server.get("/api/positions", Some(&token)).await;
    positions.expect(200);
    let list = positions
        .json
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {}", positions.text));
    assert_eq!(list.len(), 1, "{}", positions.text);
    let p = &list[0];
    assert_eq!(p["pair"], "SOL-USD");
    assert_eq!(p["side"], "long");
    assert!(near(num(&p["size"]), num(&expected["quantity"])), "{p}");
    assert!(near(num(&p["entry_price"]), num(&expected["entry_price"])));
    assert!(near(
        num(&p["current_price"]),
        num(&expected["current_price"])
    ));
    assert!(
        cents(num(&p["pnl"]), num(&expected["unrealized_pnl"])),
        "{p}"
    );
    assert!(
        cents(num(&p["pnl_percent"]), num(&expected["unrealized_pnl_pct"])),
        "{p}"
    );

    let history = server
        .get("/api/v1/account/history?status=closed", Some(&token))
        .await;
    let trade = history.data()["trades"][0].clone();
    let net = num(&trade["realized_pnl"]);
    let status = server.get("/api/status", Some(&token)).await;
    let stats = &status.json["stats"];
    assert_eq!(stats["total_trades"], 1, "{}", status.text);
    assert_eq!(stats["active_positions"], 1);
    assert!(cents(num(&stats["total_pnl"]), net), "{stats} vs {net}");

    let pnl = server.get("/api/pnl", Some(&token)).await;
    pnl.expect(200);
    let s = &pnl.json;
    assert_eq!(s["total_trades"], 1);
    assert_eq!(s["active_positions"], 1);
    assert!(cents(num(&s["total_pnl"]), net), "{s} vs {net}");
    assert_eq!(num(&s["win_rate"]), if net > 0.0 { 100.0 } else { 0.0 });
    assert!(num(&s["total_loss"]) >= 0.0);
    assert!(cents(
        num(&s["total_profit"]) - num(&s["total_loss"]),
        num(&s["total_pnl"])
    ));
    assert!(cents(num(&s["total_profit"]), net.max(0.0)), "{s}");
    assert!(cents(num(&s["total_loss"]), (-net).max(0.0)), "{s}");
}

#[tokio::test]
async fn config_reads_and_partially_updates_the_settings() {
    let server = Server::start().await;
    let (user_id, token) = server.user(&email("a-config")).await;
    let config = server.get("/api/config", Some(&token)).await;
    config.expect(200);
    let trading = trading_settings(&server, &token).await;
    let c = &config.json;
    assert_eq!(c["user_id"], user_id.as_str());
    assert_eq!(c["enabled"], true);
    assert_eq!(c["max_position_size_usd"], trading["max_position_size_usd"]);
    assert_eq!(c["max_daily_loss_usd"], trading["max_daily_loss_usd"]);
    assert_eq!(c["max_positions"], trading["max_concurrent_positions"]);
    assert_eq!(c["paper_trading"], trading["paper_trading"]);
    assert_eq!(c["risk_level"], trading["risk_level"]);
    assert_eq!(c["allowed_pairs"], trading["allowed_pairs"]);

    let updated = server
        .post(
            "/api/config",
            Some(&token),
            json!({"max_position_size_usd": 250, "risk_level": "low", "max_positions": 2}),
        )
        .await;
    updated.expect(200);
    assert_eq!(updated.json["max_position_size_usd"], 250.0);
    assert_eq!(updated.json["risk_level"], "low");
    assert_eq!(updated.json["max_positions"], 2);
    assert_eq!(updated.json["user_id"], user_id.as_str());
    let again = server.get("/api/config", Some(&token)).await;
    assert_eq!(again.json, updated.json);
    let trading = trading_settings(&server, &token).await;
    assert_eq!(trading["max_position_size_usd"], 250.0);
    assert_eq!(trading["risk_level"], "low");
    assert_eq!(trading["max_concurrent_positions"], 2);
    assert_eq!(trading["max_daily_loss_usd"], c["max_daily_loss_usd"]);

    let pairs = server
        .post(
            "/api/config",
            Some(&token),
            json!({"allowed_pairs": ["BTC-USD", "ETH-USD"], "max_daily_loss_usd": 120, "paper_trading": true}),
        )
        .await;
    pairs.expect(200);
    assert_eq!(pairs.json["allowed_pairs"], json!(["BTC-USD", "ETH-USD"]));
    assert_eq!(pairs.json["max_daily_loss_usd"], 120.0);
    let trading = trading_settings(&server, &token).await;
    assert_eq!(trading["allowed_pairs"], json!(["BTC-USD", "ETH-USD"]));
    assert_eq!(trading["max_daily_loss_usd"], 120.0);
}

#[tokio::test]
async fn config_refusals_change_nothing() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("a-config-refused")).await;
    server
        .post(
            "/api/config",
            Some(&token),
            json!({"max_positions": 2, "risk_level": "low"}),
        )
        .await
        .expect(200);
    let before = server.get("/api/config", Some(&token)).await.json;
    // A bad or over-limit value is 400 with the platform's message; an unknown field or a
    // non-object body is 422. Nothing changes, not even the valid field beside the bad one.
    let cases = [
        (json!({"max_position_size_usd": 5000}), 400),
        (json!({"max_positions": 50}), 400),
        (json!({"max_position_size_usd": -5}), 400),
        (json!({"risk_level": "yolo", "max_positions": 1}), 400),
        (
            json!({"max_positions": 1, "allowed_pairs": ["not a pair"]}),
            400,
        ),
        (json!({"leverage": 10}), 422),
        (json!({"max_positions": 1, "leverage": 10}), 422),
        (json!([1, 2]), 422),
        (json!("max_positions"), 422),
    ];
    let mut wrong = Vec::new();
    for (body, status) in cases {
        let refused = server.post("/api/config", Some(&token), body.clone()).await;
        if refused.status != status || refused.json["detail"].is_null() {
            wrong.push(format!(
                "{body}: expected {status} with detail, got {} {}",
                refused.status, refused.text
            ));
        }
    }
    assert_eq!(server.get("/api/config", Some(&token)).await.json, before);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn trading_control_refusals() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("a-control-refused")).await;
    let cases = [
        (json!({"action": "start"}), NO_BROKER),
        (json!({}), "Action is required (start/stop/pause/resume)"),
        (
            json!({"other": "start"}),
            "Action is required (start/stop/pause/resume)",
        ),
        (
            json!({"action": "jump"}),
            "Invalid action. Use: start, stop, pause or resume",
        ),
        (
            json!({"action": "stop"}),
            "No active trading instance found",
        ),
    ];
    let mut wrong = Vec::new();
    for (body, message) in cases {
        let refused = server
            .post("/api/trading/control", Some(&token), body.clone())
            .await;
        if refused.status != 400 || refused.json["detail"] != message {
            wrong.push(format!(
                "{body}: expected 400 {message:?}, got {} {}",
                refused.status, refused.text
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn trading_control_starts_pauses_resumes_and_stops() {
    let server = server().await;
    let (user_id, token) = server.user(&email("a-control")).await;
    let control = |action: Value| server.post("/api/trading/control", Some(&token), action);
    server.connect_paper(&token).await;

    let started = control(json!({"action": "START"})).await;
    started.expect(200);
    assert_eq!(started.json["action"], "start");
    assert_eq!(started.json["message"], "Trading started");
    assert_eq!(started.json["user_id"], user_id.as_str());
    assert!(
        ["starting", "running"].contains(&started.json["status"].as_str().unwrap_or_default()),
        "{}",
        started.text
    );
    poll(&server, &token, "/api/status", 20, |s| {
        s["engine_status"] == "running"
    })
    .await;

    let paused = control(json!({"action": "Pause"})).await;
    paused.expect(200);
    assert_eq!(paused.json["action"], "pause");
    assert_eq!(paused.json["message"], "Trading paused");
    assert_eq!(paused.json["status"], "paused");
    let status = server.get("/api/status", Some(&token)).await;
    assert_eq!(status.json["engine_status"], "paused");
    assert_eq!(status.json["trading_enabled"], false);

    let resumed = control(json!({"action": "resume"})).await;
    resumed.expect(200);
    assert_eq!(resumed.json["action"], "resume");
    assert_eq!(resumed.json["message"], "Trading resumed");
    assert_eq!(resumed.json["status"], "running");
    assert_eq!(
        server.get("/api/status", Some(&token)).await.json["trading_enabled"],
        true
    );

    let stopped = control(json!({"action": "sToP"})).await;
    stopped.expect(200);
    assert_eq!(stopped.json["action"], "stop");
    assert_eq!(stopped.json["message"], "Trading stopped");
    assert_eq!(stopped.json["status"], "stopped");
    assert_eq!(
        server.get("/api/status", Some(&token)).await.json["engine_status"],
        "stopped"
    );
    assert_detail(
        &control(json!({"action": "stop"})).await,
        400,
        "No active trading instance found",
    );
}

#[tokio::test]
async fn brokers_are_listed_added_and_removed() {
    let server = server().await;
    let (user_id, token) = server.user(&email("a-brokers")).await;
    let list = server.get("/api/user/brokers", Some(&token)).await;
    list.expect(200);
    assert_eq!(
        list.json,
        json!({"user_id": user_id, "brokers": [], "count": 0})
    );
    let credentials = json!({"api_key": "paper-key-1234", "api_secret": "paper-secret"});
    let added = server
        .post("/api/user/brokers/Paper", Some(&token), credentials.clone())
        .await;
    added.expect(200);
    assert_eq!(
        added.json["message"],
        "Paper credentials added successfully"
    );
    assert_eq!(added.json["broker"], "Paper");
    let list = server.get("/api/user/brokers", Some(&token)).await;
    assert_eq!(list.json["brokers"], json!(["paper"]));
    assert_eq!(list.json["count"], 1);
    // The platform's connection, stored sealed like any other.
    let platform = server.get("/api/v1/config/brokers", Some(&token)).await;
    assert_eq!(platform.data()["brokers"][0]["name"], "paper");
    assert_eq!(platform.data()["brokers"][0]["api_key_masked"], "****1234");
    // Posting again replaces the credentials.
    server
        .post(
            "/api/user/brokers/paper",
            Some(&token),
            json!({"api_key": "paper-key-5678", "api_secret": "other", "additional_params": {}}),
        )
        .await
        .expect(200);
    let platform = server.get("/api/v1/config/brokers", Some(&token)).await;
    let brokers = platform.data()["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 1);
    assert_eq!(brokers[0]["api_key_masked"], "****5678");

    assert_detail(
        &server
            .post("/api/user/brokers/ftx", Some(&token), credentials.clone())
            .await,
        400,
        UNSUPPORTED,
    );
    // Keys the plugin refuses.
    let refused = server
        .post(
            "/api/user/brokers/paper",
            Some(&token),
            json!({"api_key": "", "api_secret": ""}),
        )
        .await;
    refused.expect(400);
    assert!(refused.json["detail"].is_string(), "{}", refused.text);
    assert_validation(
        &server
            .post(
                "/api/user/brokers/paper",
                Some(&token),
                json!({"api_key": "paper-key-1234"}),
            )
            .await,
        &["body", "api_secret"],
    );

    // Removal; not while the bot runs on it.
    post_empty(&server, "/api/start_bot", &token)
        .await
        .expect(200);
    let in_use = server
        .request(
            Method::DELETE,
            "/api/user/brokers/paper",
            Some(&token),
            None,
        )
        .await;
    in_use.expect(409);
    assert!(in_use.json["detail"].is_string(), "{}", in_use.text);
    post_empty(&server, "/api/stop_bot", &token)
        .await
        .expect(200);
    let removed = server
        .request(
            Method::DELETE,
            "/api/user/brokers/paper",
            Some(&token),
            None,
        )
        .await;
    removed.expect(200);
    assert_eq!(
        removed.json["message"],
        "paper credentials removed successfully"
    );
    assert_eq!(
        server.get("/api/user/brokers", Some(&token)).await.json["count"],
        0
    );
    assert_detail(
        &server
            .request(
                Method::DELETE,
                "/api/user/brokers/paper",
                Some(&token),
                None,
            )
            .await,
        404,
        "No paper credentials found",
    );
}

#[tokio::test]
async fn unknown_paths_and_wrong_methods_answer_in_detail_form() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("a-paths")).await;
    for path in ["/api/no-such-route", "/api/user/nothing"] {
        let missing = server.get(path, Some(&token)).await;
        missing.expect(404);
        assert!(missing.json["detail"].is_string(), "{}", missing.text);
        assert!(missing.json["code"].is_string(), "{}", missing.text);
    }
    for (method, path) in [
        (Method::PUT, "/api/status"),
        (Method::GET, "/api/start_bot"),
        (Method::DELETE, "/api/pnl"),
        (Method::GET, "/api/auth/login"),
    ] {
        let wrong = server
            .request(method.clone(), path, Some(&token), Some(json!({})))
            .await;
        assert_eq!(wrong.status, 405, "{method} {path}: {}", wrong.text);
        assert!(wrong.json["detail"].is_string(), "{}", wrong.text);
        assert!(wrong.json["code"].is_string(), "{}", wrong.text);
    }
}

#[tokio::test]
async fn timestamps_carry_milliseconds() {
    let server = server().await;
    let (_, token) = server.user(&email("a-micros")).await;
    server.connect_paper(&token).await;
    post_empty(&server, "/api/start_bot", &token)
        .await
        .expect(200);
    let status = poll(&server, &token, "/api/status", 20, |s| {
        !s["last_activity"].is_null()
    })
    .await;
    let health = server.get("/health", None).await.json;
    let profile = server.get("/api/user/profile", Some(&token)).await.json;
    assert_millis(&[
        ("/health timestamp", &health["timestamp"]),
        ("profile created_at", &profile["created_at"]),
        (
            "profile permissions.created_at",
            &profile["permissions"]["created_at"],
        ),
        ("status last_activity", &status["last_activity"]),
    ]);
}

/// The original client's safety routes: the status answers everyone and says more to a signed-in
/// caller; an emergency stop needs the caller's bearer and stops only the caller's bot; lifting
/// it lets the bot start again; the kill switch shows to everyone at once.
#[tokio::test]
async fn safety_status_and_the_callers_emergency_stop() {
    let server = Server::start().await;
    let anonymous = server.get("/api/safety/status", None).await;
    anonymous.expect(200);
    let s = &anonymous.json;
    assert_eq!(s["mode"], "monitor", "{s}");
    assert_eq!(s["emergency_stop_active"], false);
    assert_eq!(s["credentials_configured"], false);
    assert_eq!(s["trading_allowed"], false);
    assert_eq!(s["ui_indicators"]["allow_toggle"], true);
    assert_eq!(s["ui_indicators"]["show_simulation_banner"], false);

    let (_, token) = server.user(&email("safety")).await;
    let (_, bystander) = server.user(&email("safety-bystander")).await;
    let fresh = server.get("/api/safety/status", Some(&token)).await.json;
    assert_eq!(fresh["credentials_configured"], false, "{fresh}");
    assert_eq!(fresh["trading_allowed"], false, "{fresh}");
    assert_eq!(fresh["mode"], "monitor", "{fresh}");
    assert!(
        fresh["status_message"]
            .as_str()
            .is_some_and(|m| m.contains("Connect a broker")),
        "{fresh}"
    );

    for user in [&token, &bystander] {
        server.start_paper_bot(user).await;
    }
    let running = server.get("/api/safety/status", Some(&token)).await.json;
    assert_eq!(running["mode"], "dry_run", "{running}");
    assert_eq!(running["trading_allowed"], true);
    assert_eq!(running["ui_indicators"]["show_simulation_banner"], true);
    assert_eq!(running["ui_indicators"]["allow_toggle"], true);
    assert!(running["last_state_change"].is_string(), "{running}");

    // Without a bearer nothing stops.
    let refused = server
        .request(
            Method::POST,
            "/api/safety/emergency-stop",
            None,
            Some(json!({"reason": "User activated emergency stop via UI"})),
        )
        .await;
    assert_eq!(refused.status, 401, "{}", refused.text);
    assert_eq!(refused.json["success"], false);
    assert!(refused.json["error"].is_string(), "{}", refused.text);
    for user in [&token, &bystander] {
        let status = server.get("/api/v1/trading/status", Some(user)).await;
        assert_eq!(status.data()["status"], "running");
    }

    let stopped = server
        .request(
            Method::POST,
            "/api/safety/emergency-stop",
            Some(&token),
            Some(json!({"reason": "User activated emergency stop via UI"})),
        )
        .await;
    stopped.expect(200);
    assert_eq!(stopped.json["success"], true, "{}", stopped.text);
    let status = server.get("/api/v1/trading/status", Some(&token)).await;
    assert_eq!(status.data()["status"], "emergency_stopped");
    let other = server.get("/api/v1/trading/status", Some(&bystander)).await;
    assert_eq!(other.data()["status"], "running", "only the caller stops");
    let halted = server.get("/api/safety/status", Some(&token)).await.json;
    assert_eq!(halted["mode"], "disabled", "{halted}");
    assert_eq!(halted["emergency_stop_active"], true);
    assert_eq!(halted["ui_indicators"]["allow_toggle"], false);
    assert_eq!(
        server.get("/api/safety/status", None).await.json["emergency_stop_active"],
        false,
        "a caller's stop is theirs alone"
    );

    let lifted = server
        .request(
            Method::DELETE,
            "/api/safety/emergency-stop",
            Some(&token),
            None,
        )
        .await;
    lifted.expect(200);
    assert_eq!(lifted.json["emergency_stop_active"], false);
    let status = server.get("/api/v1/trading/status", Some(&token)).await;
    assert_eq!(status.data()["status"], "stopped");
    assert_eq!(
        server.get("/api/safety/status", Some(&token)).await.json["mode"],
        "monitor"
    );
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);

    // The kill switch shows to everyone, signed in or not.
    let admin = server.admin_token().await;
    server
        .post(
            "/api/v1/admin/kill-switch",
            Some(&admin),
            json!({"reason": "exchange outage"}),
        )
        .await
        .expect(200);
    for caller in [None, Some(bystander.as_str())] {
        let s = server.get("/api/safety/status", caller).await.json;
        assert_eq!(s["mode"], "disabled", "{s}");
        assert_eq!(s["kill_switch_active"], true, "{s}");
        assert_eq!(s["emergency_stop_active"], true, "{s}");
        assert_eq!(s["trading_allowed"], false, "{s}");
        assert_eq!(s["ui_indicators"]["allow_toggle"], false, "{s}");
        assert!(
            s["status_message"]
                .as_str()
                .is_some_and(|m| m.contains("exchange outage")),
            "{s}"
        );
    }
}

/// The original client polls the safety status without a token; its sign-in (set A) leaves an
/// HttpOnly cookie for that one path, so the poll describes the caller's own bot. The cookie
/// opens nothing else.
#[tokio::test]
async fn the_safety_poll_knows_the_caller_from_the_sign_in_cookie() {
    let server = Server::start().await;
    let address = email("safety-cookie");
    let (_, token) = server.user(&address).await;
    server.start_paper_bot(&token).await;

    let signed_in = server
        .post(
            "/api/auth/login",
            None,
            json!({"email": address, "password": PASSWORD}),
        )
        .await;
    signed_in.expect(200);
    let set_cookie = signed_in
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("tradehost_safety="))
        .unwrap_or_else(|| panic!("no safety cookie: {:?}", signed_in.headers))
        .to_string();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/api/safety/status"] {
        assert!(set_cookie.contains(attribute), "{set_cookie}");
    }
    let cookie = set_cookie.split(';').next().unwrap().to_string();
    let with_cookie = |path: &str| {
        server
            .http
            .get(server.url(path))
            .header("Cookie", cookie.clone())
            .send()
    };
    let status: Value = with_cookie("/api/safety/status")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["mode"], "dry_run", "{status}");
    assert_eq!(status["trading_allowed"], true, "{status}");
    assert_eq!(status["credentials_configured"], true, "{status}");
    // Without the cookie the poll knows nobody.
    let anonymous = server.get("/api/safety/status", None).await.json;
    assert_eq!(anonymous["trading_allowed"], false, "{anonymous}");
    // The cookie is not a credential anywhere else.
    let elsewhere = with_cookie("/api/status").await.unwrap();
    assert_eq!(elsewhere.status(), 401);
}
