//! Companion set B (docs/companion.md): the mobile gateway under `/api/v1` and the root info.
//! Start and stop of the user's bot, and balance, positions and performance from the engine's
//! real figures, compared with the platform's own routes.

use reqwest::Method;
use serde_json::json;
use tradehost_blackbox::companion::*;
use tradehost_blackbox::{Reply, Server, email};

const NOT_ENABLED: &str = "User not enabled or no permissions configured";

#[track_caller]
fn assert_detail(reply: &Reply, status: u16, message: &str) {
    reply.expect(status);
    assert_eq!(reply.json["detail"], message, "body: {}", reply.text);
    assert!(
        reply.json["code"].as_str().is_some_and(|c| !c.is_empty()),
        "no code: {}",
        reply.text
    );
}

#[track_caller]
fn assert_unauthenticated(reply: &Reply, message: &str) {
    assert_detail(reply, 401, message);
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|h| h.starts_with("Bearer")),
        "WWW-Authenticate: {:?}",
        reply.headers
    );
}

/// FastAPI's 422 list form whose entries locate the error under `loc_start`.
#[track_caller]
fn assert_validation(reply: &Reply, loc_start: &str) {
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
        assert_eq!(item["loc"][0], loc_start, "{item}");
        assert!(
            item["msg"].as_str().is_some_and(|m| !m.is_empty()),
            "{item}"
        );
    }
}

#[tokio::test]
async fn root_describes_the_service() {
    let server = Server::start().await;
    let root = server.get("/", None).await;
    root.expect(200);
    assert_eq!(root.json["name"], "tradehost");
    assert_eq!(root.json["status"], "operational");
    assert_eq!(root.json["docs"], "/api/docs");
    assert_eq!(root.json["strategy"], "ema-cross");
    // The gateway's API version (companion-routes.md, Versioning), not the server's release.
    assert_eq!(root.json["version"], "1.0.0");
}

/// Browsers asking for `/` (HTML first) get the web app, its assets come from `/app/`, and the
/// e-mailed reset link opens it too; API clients still get the root info at `/`.
#[tokio::test]
async fn browsers_get_the_web_app_and_clients_the_root_info() {
    let server = Server::start().await;
    let browser = |path: &str| {
        server
            .http
            .get(server.url(path))
            .header("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
            .send()
    };
    for path in ["/", "/reset-password?token=abc"] {
        let page = Reply::from(browser(path).await.unwrap()).await;
        page.expect(200);
        assert!(
            page.header("content-type")
                .unwrap()
                .starts_with("text/html")
        );
        assert!(page.text.contains(r#"src="/app/app.js""#), "{}", page.text);
        let csp = page.header("content-security-policy").unwrap();
        assert!(csp.contains("default-src 'self'"), "{csp}");
    }
    let script = server.get("/app/app.js", None).await;
    script.expect(200);
    assert!(
        script
            .header("content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(script.text.len() > 10_000);
    let style = server.get("/app/app.css", None).await;
    style.expect(200);
    assert!(
        style
            .header("content-type")
            .unwrap()
            .starts_with("text/css")
    );
    assert_eq!(server.get("/app/other.js", None).await.status, 404);
    // Gzipped to browsers that accept it; unchanged copies are not sent again.
    let packed = server
        .http
        .get(server.url("/app/app.js"))
        .header("Accept-Encoding", "gzip, deflate, br")
        .send()
        .await
        .unwrap();
    assert_eq!(packed.headers()["content-encoding"], "gzip");
    let etag = packed.headers()["etag"].to_str().unwrap().to_string();
    assert!(packed.bytes().await.unwrap().len() < script.text.len() / 2);
    let again = server
        .http
        .get(server.url("/app/app.js"))
        .header("If-None-Match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    // An API client asking for JSON gets the root info, as before.
    let root = server.get("/", None).await;
    root.expect(200);
    assert_eq!(root.json["name"], "tradehost");
}

#[tokio::test]
async fn every_route_needs_a_valid_token() {
    let server = Server::start().await;
    let routes = [
        (Method::POST, "/api/v1/start"),
        (Method::POST, "/api/v1/stop"),
        (Method::GET, "/api/v1/balance"),
        (Method::GET, "/api/v1/positions"),
        (Method::GET, "/api/v1/performance"),
        (Method::GET, "/api/v1/performance?period=7d"),
    ];
    for (method, path) in &routes {
        let missing = server
            .request(method.clone(), path, None, Some(json!({})))
            .await;
        assert_unauthenticated(&missing, "Not authenticated");
        let garbage = server
            .request(method.clone(), path, Some("garbage"), Some(json!({})))
            .await;
        assert_unauthenticated(&garbage, "Invalid or expired token");
    }
}

#[tokio::test]
async fn start_and_stop_control_the_bot() {
    let server = Server::start_trading().await;
    let (_, token) = server.user(&email("b-start")).await;
    // The body must be a JSON object.
    let no_body = server
        .request(Method::POST, "/api/v1/start", Some(&token), None)
        .await;
    assert_validation(&no_body, "body");
    for body in ["[]", "\"start\"", "42"] {
        let reply = server
            .raw(Method::POST, "/api/v1/start", Some(&token), body)
            .await;
        assert_validation(&reply, "body");
    }
    // Without a broker.
    assert_detail(
        &server.post("/api/v1/start", Some(&token), json!({})).await,
        403,
        NOT_ENABLED,
    );
    assert_detail(
        &server.post("/api/v1/stop", Some(&token), json!({})).await,
        400,
        "Already stopped",
    );

    server.connect_paper(&token).await;
    let started = server.post("/api/v1/start", Some(&token), json!({})).await;
    started.expect(200);
    assert_eq!(started.json["success"], true);
    assert_eq!(
        started.json["message"],
        "Trading engine started successfully"
    );
    assert!(
        ["starting", "running"].contains(&started.json["status"].as_str().unwrap_or_default()),
        "{}",
        started.text
    );
    assert_utc(&started.json["timestamp"]);
    let status = server.wait_running(&token).await;
    assert_eq!(status["broker"], "paper");
    assert_detail(
        &server.post("/api/v1/start", Some(&token), json!({})).await,
        400,
        "Trading is already running",
    );

    let stopped = server.post("/api/v1/stop", Some(&token), json!({})).await;
    stopped.expect(200);
    assert_eq!(stopped.json["success"], true);
    assert_eq!(
        stopped.json["message"],
        "Trading engine stopped successfully"
    );
    assert_eq!(stopped.json["status"], "stopped");
    assert_utc(&stopped.json["timestamp"]);
    assert_eq!(
        server
            .get("/api/v1/trading/status", Some(&token))
            .await
            .data()["status"],
        "stopped"
    );
    assert_detail(
        &server.post("/api/v1/stop", Some(&token), json!({})).await,
        400,
        "Already stopped",
    );
}

#[tokio::test]
async fn balance_is_the_accounts() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("b-balance")).await;
    let balance = server.get("/api/v1/balance", Some(&token)).await;
    balance.expect(200);
    let b = &balance.json;
    assert_eq!(b["success"], true);
    assert_eq!(b["balance"], 10000.0);
    assert_eq!(b["available_for_trading"], 10000.0);
    assert_eq!(b["currency"], "USD");
    assert!(b["broker"].is_null(), "{b}");
    assert_utc(&b["timestamp"]);
    server.connect_paper(&token).await;
    let connected = server.get("/api/v1/balance", Some(&token)).await;
    assert_eq!(connected.json["broker"], "paper");
}

#[tokio::test]
async fn positions_balance_and_performance_report_real_trades() {
    let server = Server::start_trading().await;
    quiet_strategy(&server).await;
    let (_, token) = server.user(&email("b-trader")).await;
    let empty = server.get("/api/v1/positions", Some(&token)).await;
    empty.expect(200);
    assert_eq!(empty.json["positions"], json!([]));
    assert_eq!(empty.json["total_positions"], 0);
    assert!(
        empty.json["total_unrealized_pnl"].is_null(),
        "{}",
        empty.text
    );
    let none = server.get("/api/v1/performance", Some(&token)).await;
    none.expect(200);
    assert_eq!(none.json["metrics"]["total_trades"], 0);
    assert!(none.json["metrics"]["profit_factor"].is_null());
    assert!(none.json["metrics"]["sharpe_ratio"].is_null());

    let key = webhook_key(&server, &token).await;
    server.connect_paper(&token).await;
    server
        .post("/api/v1/start", Some(&token), json!({}))
        .await
        .expect(200);
    server.wait_running(&token).await;
    trade_once_and_hold(&server, &token, &key).await;
    // Stopped with the position left open, the figures hold still while they are compared.
    server
        .post("/api/v1/stop", Some(&token), json!({}))
        .await
        .expect(200);

    let platform = server.get("/api/v1/account/positions", Some(&token)).await;
    let expected = platform.data()["positions"][0].clone();
    let positions = server.get("/api/v1/positions", Some(&token)).await;
    positions.expect(200);
    let body = &positions.json;
    assert_eq!(body["success"], true);
    assert_eq!(body["total_positions"], 1);
    assert_utc(&body["timestamp"]);
    let p = &body["positions"][0];
    assert_eq!(p["pair"], "SOL-USD");
    assert_eq!(p["side"], "long");
    assert!(near(num(&p["size"]), num(&expected["quantity"])), "{p}");
    assert!(near(num(&p["entry_price"]), num(&expected["entry_price"])));
    assert!(near(
        num(&p["current_price"]),
        num(&expected["current_price"])
    ));
    assert!(
        cents(num(&p["unrealized_pnl"]), num(&expected["unrealized_pnl"])),
        "{p}"
    );
    assert!(
        cents(
            num(&p["unrealized_pnl_percent"]),
            num(&expected["unrealized_pnl_pct"])
        ),
        "{p}"
    );
    assert_eq!(p["stop_loss"], expected["stop_loss"]);
    assert_eq!(p["take_profit"], expected["take_profit"]);
    assert_utc(&p["opened_at"]);
    assert_eq!(millis(&p["opened_at"]), millis(&expected["opened_at"]));
    assert!(cents(
        num(&body["total_unrealized_pnl"]),
        num(&expected["unrealized_pnl"])
    ));

    let account = server.get("/api/v1/account/balance", Some(&token)).await;
    let balance = server.get("/api/v1/balance", Some(&token)).await;
    assert!(
        cents(
            num(&balance.json["balance"]),
            num(&account.data()["equity"])
        ),
        "{}",
        balance.text
    );
    assert!(
        cents(
            num(&balance.json["available_for_trading"]),
            num(&account.data()["cash"])
        ),
        "{}",
        balance.text
    );
    assert_eq!(balance.json["broker"], "paper");
    assert_eq!(balance.json["currency"], account.data()["currency"]);

    let history = server
        .get("/api/v1/account/history?status=closed", Some(&token))
        .await;
    let trade = history.data()["trades"][0].clone();
    let net = num(&trade["realized_pnl"]);
    for period in [
        "",
        "?period=all_time",
        "?period=30d",
        "?period=7d",
        "?period=24h",
    ] {
        let performance = server
            .get(&format!("/api/v1/performance{period}"), Some(&token))
            .await;
        performance.expect(200);
        let body = &performance.json;
        assert_eq!(body["success"], true);
        let expected_period = period.strip_prefix("?period=").unwrap_or("all_time");
        assert_eq!(body["period"], expected_period);
        assert_utc(&body["timestamp"]);
        let m = &body["metrics"];
        assert_eq!(m["total_trades"], 1, "{period}: {m}");
        assert_eq!(m["active_positions"], 1);
        let won = net > 0.0;
        assert_eq!(m["winning_trades"], u64::from(won));
        assert_eq!(m["losing_trades"], u64::from(!won));
        assert_eq!(num(&m["win_rate"]), if won { 100.0 } else { 0.0 });
        assert!(cents(num(&m["total_pnl"]), net), "{m} vs {net}");
        assert!(cents(num(&m["total_profit"]), net.max(0.0)), "{m}");
        assert!(cents(num(&m["total_loss"]), (-net).max(0.0)), "{m}");
        if won {
            assert!(cents(num(&m["average_win"]), net), "{m}");
            assert_eq!(num(&m["average_loss"]), 0.0);
            assert!(m["profit_factor"].is_null(), "{m}");
        } else {
            assert_eq!(num(&m["average_win"]), 0.0);
            assert!(cents(num(&m["average_loss"]), -net), "{m}");
            assert_eq!(num(&m["profit_factor"]), 0.0);
        }
        // Less than two days of equity; but there is equity history.
        assert!(m["sharpe_ratio"].is_null(), "{m}");
        assert!(num(&m["max_drawdown"]) >= 0.0, "{m}");
    }
    let refused = server
        .get("/api/v1/performance?period=1y", Some(&token))
        .await;
    assert_validation(&refused, "query");
}

#[tokio::test]
async fn timestamps_carry_milliseconds() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("b-micros")).await;
    let balance = server.get("/api/v1/balance", Some(&token)).await.json;
    let positions = server.get("/api/v1/positions", Some(&token)).await.json;
    let performance = server.get("/api/v1/performance", Some(&token)).await.json;
    let health = server.get("/health", None).await.json;
    assert_millis(&[
        ("balance timestamp", &balance["timestamp"]),
        ("positions timestamp", &positions["timestamp"]),
        ("performance timestamp", &performance["timestamp"]),
        ("/health timestamp", &health["timestamp"]),
    ]);
}
