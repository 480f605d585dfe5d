//! The trading engine end to end: a user connects the paper broker, starts a bot, it trades on a
//! fast simulated market, and positions, history, ledger, balance, performance and the WebSocket
//! stream all tell the same story; stops, emergency stops, and a server killed mid-trading.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::Method;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tradehost_blackbox::{PASSWORD, Server, decimal_sql, email, next_event};

/// The paper market forms one new bar a minute, so entries and exits come at minute boundaries:
/// waits for trades allow several of them.
const MARKET_WAIT_SECS: u64 = 300;

/// Scans every 100 ms on a volatile paper market (speed 3000) with short EMAs and tight exits.
async fn trading_server() -> Server {
    let server = Server::start_trading().await;
    let admin = server.admin_token().await;
    server
        .put(
            "/api/v1/admin/plugins/paper/config",
            Some(&admin),
            json!({"config": {"speed": "3000", "seed": "7"}}),
        )
        .await
        .expect(200);
    // Small, frequent entries with tight exits so trades open and close quickly.
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&admin),
            json!({"config": {"fast_period": "3", "slow_period": "8", "stop_loss_pct": "0.3", "take_profit_pct": "0.4"}}),
        )
        .await
        .expect(200);
    server
}

fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// The ledger's story must match the account: cash = initial + Σ signed cash flows, open
/// quantities = Σ ledger rows per position, and no client order id twice.
/// No client order id twice and no order booked twice (database constraints, checked anyway).
async fn assert_no_duplicates(server: &Server) {
    let duplicates = server
        .count("SELECT COUNT(*) FROM (SELECT client_order_id FROM orders GROUP BY client_order_id HAVING COUNT(*) > 1) d")
        .await;
    assert_eq!(duplicates, 0);
    let duplicate_fills = server
        .count("SELECT COUNT(*) FROM (SELECT order_id FROM ledger GROUP BY order_id HAVING COUNT(*) > 1) d")
        .await;
    assert_eq!(duplicate_fills, 0, "an order was booked twice");
}

/// For a bot that is not trading (stopped): the books agree exactly.
async fn assert_books_balance(server: &Server, user_id: &str) {
    let decimal = |text: &str| -> Decimal { text.parse().unwrap() };
    let (initial, cash) = (decimal_sql("initial_capital"), decimal_sql("cash"));
    let (initial, cash): (String, String) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {initial}, {cash} FROM trading_accounts WHERE user_id = $1"
    )))
    .bind(user_id)
    .fetch_one(server.db().await)
    .await
    .unwrap();
    let (initial, cash) = (decimal(&initial), decimal(&cash));
    let db = server.db().await;
    let [quantity, notional, fee] = ["quantity", "notional", "fee"].map(decimal_sql);
    let rows: Vec<(String, String, String, String, String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT position_id, side, action, {quantity}, {notional}, {fee} FROM ledger WHERE user_id = $1 ORDER BY created_at, id",
    )))
    .bind(user_id)
    .fetch_all(db)
    .await
    .unwrap();
    let mut flow = Decimal::ZERO;
    let mut quantities: HashMap<String, Decimal> = HashMap::new();
    for (position_id, side, action, quantity, notional, fee) in &rows {
        let (quantity, notional, fee) = (decimal(quantity), decimal(notional), decimal(fee));
        flow += if side == "BUY" { -notional } else { notional } - fee;
        *quantities.entry(position_id.clone()).or_default() += if action == "OPEN" {
            quantity
        } else {
            -quantity
        };
    }
    assert_eq!(
        initial + flow,
        cash,
        "cash {cash} != initial {initial} + ledger flows {flow}"
    );
    let positions: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, {quantity} FROM positions WHERE user_id = $1 AND status = 'open'"
    )))
    .bind(user_id)
    .fetch_all(db)
    .await
    .unwrap();
    for (id, quantity) in &positions {
        let quantity = decimal(quantity);
        assert_eq!(
            quantities[id], quantity,
            "position {id}: {quantity} vs ledger {}",
            quantities[id]
        );
    }
    for (id, remaining) in &quantities {
        if !positions.iter().any(|(open, _)| open == id) {
            assert!(
                remaining.is_zero(),
                "closed position {id} has {remaining} left in the ledger"
            );
        }
    }
    assert_no_duplicates(server).await;
}

#[tokio::test]
async fn a_bot_trades_on_paper_and_every_view_agrees() {
    let server = trading_server().await;
    let (user_id, token) = server.user(&email("trader")).await;

    // Start refuses without a broker; then the paper broker is connected.
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "paper_trading": true, "risk_profile": "medium"}),
        )
        .await
        .expect_error(400, "NO_BROKER_CONFIGURED");
    let broker_id = server.connect_paper(&token).await;
    let brokers = server.get("/api/v1/config/brokers", Some(&token)).await;
    assert_eq!(brokers.data()["brokers"][0]["api_key_masked"], "****1234");
    assert!(!brokers.text.contains("paper-key-1234") && !brokers.text.contains("paper-secret"));

    // Subscribe on the WebSocket before trading starts.
    let mut socket = server
        .socket(&token, &["trades", "positions", "bot_status"])
        .await;

    let started = server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "paper_trading": true, "risk_profile": "high", "symbols": ["BTC-USD", "ETH-USD", "SOL-USD"]}),
        )
        .await;
    started.expect(200);
    assert_eq!(started.data()["status"], "starting");
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper"}),
        )
        .await
        .expect_error(409, "ALREADY_RUNNING");
    server
        .request(
            Method::DELETE,
            &format!("/api/v1/config/brokers/{broker_id}"),
            Some(&token),
            None,
        )
        .await
        .expect_error(409, "BROKER_IN_USE");

    server
        .wait_for(&token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "running"
        })
        .await;
    // Trades happen: at least two completed.
    server
        .wait_for(
            &token,
            "/api/v1/account/history?status=closed",
            MARKET_WAIT_SECS,
            |d| d["pagination"]["total_items"].as_i64().unwrap_or(0) >= 2,
        )
        .await;
    // Stopped with positions left open, nothing changes while the views are compared (a paused
    // bot would still close positions at their exits).
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": false}),
        )
        .await
        .expect(200);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Collect the WebSocket messages received so far.
    let mut executed = Vec::new();
    let mut updates = 0;
    let mut statuses = Vec::new();
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_millis(300), socket.next()).await
    {
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        match event["type"].as_str().unwrap() {
            "trade_executed" => executed.push(event["data"].clone()),
            "position_update" => updates += 1,
            "bot_status" => statuses.push(event["data"]["status"].as_str().unwrap().to_string()),
            _ => {}
        }
    }
    assert!(updates > 0, "no position_update received");
    assert!(
        statuses.contains(&"running".to_string()),
        "statuses seen: {statuses:?}"
    );

    let history = server
        .get(
            "/api/v1/account/history?status=closed&per_page=100",
            Some(&token),
        )
        .await;
    let closed = history.data()["trades"].as_array().unwrap().clone();
    let positions = server.get("/api/v1/account/positions", Some(&token)).await;
    let open = positions.data()["positions"].as_array().unwrap().clone();
    // Every closed trade and open position was announced on the trades channel.
    for trade in &closed {
        assert!(
            executed
                .iter()
                .any(|e| e["action"] == "closed" && e["trade_id"] == trade["trade_id"]),
            "closed trade {} not announced",
            trade["trade_id"]
        );
        assert!(
            ["take_profit", "stop_loss", "trailing_stop", "signal"]
                .contains(&trade["exit_reason"].as_str().unwrap())
        );
        assert!(num(&trade["fees"]) > 0.0);
        let net = num(&trade["realized_pnl"]);
        assert!((num(&trade["gross_pnl"]) - num(&trade["fees"]) - net).abs() < 1e-6);
    }
    for position in &open {
        assert!(
            executed
                .iter()
                .any(|e| e["action"] == "opened" && e["position_id"] == position["position_id"])
        );
        let detail = server
            .get(
                &format!(
                    "/api/v1/account/positions/{}",
                    position["position_id"].as_str().unwrap()
                ),
                Some(&token),
            )
            .await;
        detail.expect(200);
    }
    assert_eq!(
        positions.data()["summary"]["total_positions"]
            .as_u64()
            .unwrap() as usize,
        open.len()
    );

    // Performance agrees with the history.
    let performance = server
        .get("/api/v1/account/performance?period=all", Some(&token))
        .await;
    performance.expect(200);
    let metrics = &performance.data()["metrics"];
    assert_eq!(
        metrics["total_trades"].as_u64().unwrap() as usize,
        closed.len()
    );
    let net: f64 = closed.iter().map(|t| num(&t["realized_pnl"])).sum();
    assert!(
        (num(&metrics["net_pnl"]) - net).abs() < 1e-6,
        "net {} vs {net}",
        metrics["net_pnl"]
    );
    assert!(num(&metrics["max_drawdown"]) <= 0.0);
    assert!(!performance.text.contains("NaN") && !performance.text.contains("inf"));
    server
        .get("/api/v1/account/performance?period=2w", Some(&token))
        .await
        .expect_error(400, "INVALID_REQUEST");

    // Balance: equity = cash + marked positions, and realized − fees matches the ledger's story.
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    let b = balance.data();
    let marked: f64 = open
        .iter()
        .map(|p| {
            let value = num(&p["current_price"]) * num(&p["quantity"]);
            if p["side"] == "long" { value } else { -value }
        })
        .sum();
    assert!(
        (num(&b["cash"]) + marked - num(&b["equity"])).abs() < 1e-4,
        "{b}"
    );
    let unrealized: f64 = open.iter().map(|p| num(&p["unrealized_pnl"])).sum();
    assert!(
        (num(&b["equity"])
            - (num(&b["initial_capital"]) + num(&b["realized_pnl"]) + unrealized
                - num(&b["fees_paid"])))
        .abs()
            < 1e-4,
        "equity identity broken: {b}"
    );
    assert_books_balance(&server, &user_id).await;

    // Stats and status reflect the same trades.
    let stats = server.get("/api/v1/account/stats", Some(&token)).await;
    assert_eq!(
        stats.data()["trading"]["total_trades_all_time"]
            .as_u64()
            .unwrap() as usize,
        closed.len()
    );
    let status = server.get("/api/v1/trading/status", Some(&token)).await;
    assert_eq!(status.data()["status"], "stopped");
    assert_eq!(
        status.data()["active_positions"].as_u64().unwrap() as usize,
        open.len()
    );

    // Emergency stop closes everything and is idempotent.
    let stopped = server
        .post(
            "/api/v1/trading/emergency-stop",
            Some(&token),
            json!({"reason": "test", "close_positions": true}),
        )
        .await;
    stopped.expect(200);
    assert_eq!(stopped.data()["status"], "emergency_stopped");
    assert_eq!(
        stopped.data()["positions_closed"].as_u64().unwrap() as usize,
        open.len()
    );
    server
        .post("/api/v1/trading/emergency-stop", Some(&token), json!({}))
        .await
        .expect(200);
    let positions = server.get("/api/v1/account/positions", Some(&token)).await;
    assert_eq!(positions.data()["summary"]["total_positions"], 0);
    let history = server
        .get(
            "/api/v1/account/history?status=closed&per_page=100",
            Some(&token),
        )
        .await;
    let emergency = history.data()["trades"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["exit_reason"] == "emergency_stop")
        .count();
    assert_eq!(emergency, open.len());
    assert_books_balance(&server, &user_id).await;

    // A second user sees none of it.
    let (_, other) = server.user(&email("other")).await;
    let history = server.get("/api/v1/account/history", Some(&other)).await;
    assert_eq!(history.data()["pagination"]["total_items"], 0);
    if let Some(trade) = closed.first() {
        server
            .get(
                &format!(
                    "/api/v1/account/positions/{}",
                    trade["position_id"].as_str().unwrap()
                ),
                Some(&other),
            )
            .await
            .expect_error(404, "POSITION_NOT_FOUND");
    }
}

#[tokio::test]
async fn stop_leaves_positions_open_or_closes_them_as_asked() {
    let server = trading_server().await;
    let (user_id, token) = server.user(&email("stopper")).await;
    server.connect_paper(&token).await;
    server
        .post("/api/v1/trading/stop", Some(&token), json!({}))
        .await
        .expect_error(400, "NOT_RUNNING");
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "risk_profile": "extreme"}),
        )
        .await
        .expect_error(400, "INVALID_RISK_LEVEL");
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "ftx"}),
        )
        .await
        .expect_error(400, "UNSUPPORTED_BROKER");
    server
        .post("/api/v1/trading/start", Some(&token), json!({"broker": "paper", "risk_profile": "high", "symbols": ["BTC-USD", "ETH-USD", "SOL-USD", "ADA-USD"]}))
        .await
        .expect(200);
    server
        .wait_for(&token, "/api/v1/account/positions", MARKET_WAIT_SECS, |d| {
            d["summary"]["total_positions"].as_u64().unwrap_or(0) >= 1
        })
        .await;

    let stopped = server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": false}),
        )
        .await;
    stopped.expect(200);
    assert_eq!(stopped.data()["status"], "stopped");
    let left = stopped.data()["open_positions"].as_u64().unwrap();
    assert!(left >= 1);
    assert_ne!(stopped.data()["action_required"], "none");
    let positions = server.get("/api/v1/account/positions", Some(&token)).await;
    assert_eq!(
        positions.data()["summary"]["total_positions"]
            .as_u64()
            .unwrap(),
        left
    );

    // A manual close works on a stopped bot; then nothing is left.
    let id = positions.data()["positions"][0]["position_id"]
        .as_str()
        .unwrap()
        .to_string();
    let closed = server
        .post(
            &format!("/api/v1/account/positions/{id}/close"),
            Some(&token),
            json!({}),
        )
        .await;
    closed.expect(200);
    server
        .post(
            &format!("/api/v1/account/positions/{id}/close"),
            Some(&token),
            json!({}),
        )
        .await
        .expect_error(404, "POSITION_NOT_FOUND");
    let history = server
        .get("/api/v1/account/history?status=closed", Some(&token))
        .await;
    assert!(
        history.data()["trades"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["position_id"] == id.as_str() && t["exit_reason"] == "manual")
    );

    // Start again and stop closing positions.
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    let stopped = server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": true}),
        )
        .await;
    stopped.expect(200);
    assert_eq!(stopped.data()["open_positions"], 0);
    assert_eq!(stopped.data()["action_required"], "none");
    assert_books_balance(&server, &user_id).await;
}

#[tokio::test]
async fn a_killed_server_resumes_the_bot_without_ordering_twice() {
    let mut server = trading_server().await;
    let address = email("survivor");
    let (user_id, token) = server.user(&address).await;
    server.connect_paper(&token).await;
    server
        .post("/api/v1/trading/start", Some(&token), json!({"broker": "paper", "risk_profile": "high", "symbols": ["BTC-USD", "ETH-USD", "SOL-USD"]}))
        .await
        .expect(200);
    server
        .wait_for(&token, "/api/v1/account/history", MARKET_WAIT_SECS, |d| {
            d["pagination"]["total_items"].as_i64().unwrap_or(0) >= 2
        })
        .await;

    // SIGKILL in the middle of trading, several times.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        server.kill();
        server.restart().await;
        let token = server.login(&address, PASSWORD).await["access_token"]
            .as_str()
            .unwrap()
            .to_string();
        let status = server
            .wait_for(&token, "/api/v1/trading/status", 20, |d| {
                d["status"] == "running" && d["last_scan"].is_string()
            })
            .await;
        assert_eq!(status["paper_trading"], true);
        // The bot trades on while this runs, so only what cannot race is checked here.
        assert_no_duplicates(&server).await;
    }
    let pending = server
        .count(&format!(
            "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'pending'"
        ))
        .await;
    assert!(pending <= 1, "{pending} orders left pending");
    let scans_before = server
        .scalar(&format!(
            "SELECT last_scan_at FROM bots WHERE user_id = '{user_id}'"
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(11_000)).await;
    let scans_after = server
        .scalar(&format!(
            "SELECT last_scan_at FROM bots WHERE user_id = '{user_id}'"
        ))
        .await;
    assert_ne!(scans_before, scans_after, "the resumed bot does not scan");

    // Stopped, the books agree exactly and nothing an interrupted scan left is still pending.
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": false}),
        )
        .await
        .expect(200);
    assert_books_balance(&server, &user_id).await;
    let pending = server
        .count(&format!(
            "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'pending'"
        ))
        .await;
    assert_eq!(pending, 0, "orders left pending");
}

#[tokio::test]
async fn a_paused_bot_stays_paused_across_a_restart_and_free_users_trade_paper_only() {
    let mut server = trading_server().await;
    let address = email("pauser");
    let (_, token) = server.user(&address).await;
    server.connect_paper(&token).await;
    // Trial users may trade live; after the trial, a free user may not.
    server.exec("UPDATE users SET trial_ends_at = NULL").await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "paper_trading": false}),
        )
        .await
        .expect_error(402, "SUBSCRIPTION_REQUIRED");
    server
        .post("/api/v1/trading/pause", Some(&token), json!({}))
        .await
        .expect_error(400, "NOT_RUNNING");
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "paper_trading": true}),
        )
        .await
        .expect(200);
    server
        .wait_for(&token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "running"
        })
        .await;
    server
        .post("/api/v1/trading/pause", Some(&token), json!({}))
        .await
        .expect(200);
    server
        .post("/api/v1/trading/resume", Some(&token), json!({}))
        .await
        .expect(200);
    server
        .post("/api/v1/trading/resume", Some(&token), json!({}))
        .await
        .expect_error(409, "ALREADY_RUNNING");
    server
        .post("/api/v1/trading/pause", Some(&token), json!({}))
        .await
        .expect(200);
    server.restart().await;
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let status = server.get("/api/v1/trading/status", Some(&token)).await;
    assert_eq!(status.data()["status"], "paused");

    server
        .post("/api/v1/trading/stop", Some(&token), json!({}))
        .await
        .expect(200);
}

#[tokio::test]
async fn the_kill_switch_stops_every_bot_closes_positions_and_blocks_starts() {
    let server = trading_server().await;
    let admin = server.admin_token().await;
    let (first_id, first) = server.user(&email("first")).await;
    let (_, second) = server.user(&email("second")).await;
    for token in [&first, &second] {
        server.connect_paper(token).await;
    }
    server
        .post("/api/v1/trading/start", Some(&first), json!({"broker": "paper", "risk_profile": "high", "symbols": ["BTC-USD", "ETH-USD", "SOL-USD", "ADA-USD"]}))
        .await
        .expect(200);
    server
        .post(
            "/api/v1/trading/start",
            Some(&second),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    server
        .wait_for(&first, "/api/v1/account/positions", MARKET_WAIT_SECS, |d| {
            d["summary"]["total_positions"].as_u64().unwrap_or(0) >= 1
        })
        .await;

    let mut socket = server.socket(&second, &["bot_status"]).await;

    server
        .post("/api/v1/admin/kill-switch", Some(&first), json!({}))
        .await
        .expect_error(403, "UNAUTHORIZED");
    let activated = server
        .post(
            "/api/v1/admin/kill-switch",
            Some(&admin),
            json!({"reason": "exchange outage", "close_all_positions": true, "notify_users": true}),
        )
        .await;
    activated.expect(200);
    assert_eq!(activated.data()["affected_users"], 2);
    assert_eq!(activated.data()["active_positions"], 0);
    for token in [&first, &second] {
        let status = server.get("/api/v1/trading/status", Some(token)).await;
        assert_eq!(status.data()["status"], "stopped");
        assert!(
            status.data()["last_error"]
                .as_str()
                .unwrap()
                .contains("exchange outage")
        );
        let positions = server.get("/api/v1/account/positions", Some(token)).await;
        assert_eq!(positions.data()["summary"]["total_positions"], 0);
    }
    let history = server
        .get(
            "/api/v1/account/history?status=closed&per_page=100",
            Some(&first),
        )
        .await;
    assert!(
        history.data()["trades"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["exit_reason"] == "kill_switch")
    );
    assert_books_balance(&server, &first_id).await;

    let mut notified = false;
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(2), socket.next()).await
    {
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        if event["type"] == "kill_switch" {
            assert!(
                event["data"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("exchange outage")
            );
            notified = true;
            break;
        }
    }
    assert!(notified, "no kill_switch notice on the WebSocket");

    let state = server.get("/api/v1/admin/kill-switch", Some(&admin)).await;
    assert_eq!(state.data()["active"], true);
    assert_eq!(state.data()["reason"], "exchange outage");
    server
        .post(
            "/api/v1/trading/start",
            Some(&first),
            json!({"broker": "paper"}),
        )
        .await
        .expect_error(403, "KILL_SWITCH_ACTIVE");
    server
        .request(
            Method::DELETE,
            "/api/v1/admin/kill-switch",
            Some(&admin),
            None,
        )
        .await
        .expect(200);
    let lifted = next_event(&mut socket, "kill_switch", 5).await;
    assert_eq!(lifted["data"]["status"], "lifted", "{lifted}");
    assert_eq!(
        server
            .get("/api/v1/admin/kill-switch", Some(&admin))
            .await
            .data()["active"],
        false
    );
    server
        .post(
            "/api/v1/trading/start",
            Some(&first),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    for event in [
        "admin.kill_switch_activated",
        "admin.kill_switch_deactivated",
    ] {
        assert_eq!(
            server
                .count(&format!(
                    "SELECT COUNT(*) FROM audit_log WHERE event_type = '{event}'"
                ))
                .await,
            1
        );
    }
}

#[tokio::test]
async fn a_failing_strategy_puts_its_bot_in_error_while_others_trade_on() {
    let server = trading_server().await;
    let admin = server.admin_token().await;
    server
        .install_plugin(&admin, "testing/guest-trap", "guest-trap")
        .await;
    let (_, failing) = server.user(&email("failing")).await;
    let (_, healthy) = server.user(&email("healthy")).await;
    for token in [&failing, &healthy] {
        server.connect_paper(token).await;
    }
    server
        .post(
            "/api/v1/trading/start",
            Some(&failing),
            json!({"broker": "paper", "strategy": "guest-trap"}),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/trading/start",
            Some(&healthy),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    // Retried with backoff (0.2 s, 0.4 s, 0.8 s at this interval), then `error`.
    let status = server
        .wait_for(&failing, "/api/v1/trading/status", 30, |d| {
            d["status"] == "error"
        })
        .await;
    let reason = status["last_error"].as_str().unwrap();
    assert!(
        reason.contains("guest-trap") && reason.contains("retries"),
        "{reason}"
    );
    let before = server
        .wait_for(&healthy, "/api/v1/trading/status", 10, |d| {
            d["status"] == "running"
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = server.get("/api/v1/trading/status", Some(&healthy)).await;
    assert_eq!(after.data()["status"], "running");
    assert_ne!(
        before["last_scan"],
        after.data()["last_scan"],
        "the healthy bot stopped scanning"
    );
    // A bot in error may be started again.
    server
        .post(
            "/api/v1/trading/start",
            Some(&failing),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
}

#[tokio::test]
async fn an_emergency_alarm_pauses_the_bot_once_and_is_announced() {
    // Below the risk rule's minimum balance of 100 from the first scan.
    let server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_INITIAL_CAPITAL", "50")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let (user_id, token) = server.user(&email("alarmed")).await;
    server.connect_paper(&token).await;
    let mut socket = server.socket(&token, &["alarms"]).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    let status = server
        .wait_for(&token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "paused"
        })
        .await;
    assert!(
        status["last_error"]
            .as_str()
            .unwrap()
            .contains("ACCOUNT_BALANCE_LOW"),
        "{status}"
    );
    let mut alarm = None;
    while let Ok(Some(Ok(message))) =
        tokio::time::timeout(Duration::from_secs(2), socket.next()).await
    {
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        if event["type"] == "alarm_triggered" {
            alarm = Some(event);
            break;
        }
    }
    let alarm = alarm.expect("alarm_triggered on the alarms channel");
    assert_eq!(alarm["channel"], "alarms");
    assert_eq!(alarm["data"]["level"], "EMERGENCY");
    assert_eq!(alarm["data"]["alarm_type"], "ACCOUNT_BALANCE_LOW");
    // Paused bots keep scanning (exits), but the alarm does not fire again within its cooldown.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let raised = server
        .count(&format!("SELECT COUNT(*) FROM alarms WHERE user_id = '{user_id}' AND alarm_type = 'ACCOUNT_BALANCE_LOW'"))
        .await;
    assert_eq!(raised, 1);

    // The operator sees it among every user's active alarms; a user may not look.
    let admin = server.admin_token().await;
    let active = server.get("/api/v1/admin/alarms", Some(&admin)).await;
    active.expect(200);
    let listed = active.data()["alarms"].as_array().unwrap();
    let ours: Vec<&Value> = listed
        .iter()
        .filter(|a| a["user_id"] == user_id.as_str())
        .collect();
    assert_eq!(ours.len(), 1, "{}", active.text);
    assert_eq!(ours[0]["alarm_type"], "ACCOUNT_BALANCE_LOW");
    assert_eq!(ours[0]["level"], "EMERGENCY");
    assert!(ours[0]["email"].as_str().unwrap().starts_with("alarmed"));
    assert_eq!(active.data()["truncated"], false);
    server
        .get("/api/v1/admin/alarms", Some(&token))
        .await
        .expect_error(403, "UNAUTHORIZED");
}

/// `GET /api/v1/market/candles`: the paper broker's closed candles for a chart, oldest first,
/// and a clear 400 naming the parameter for each bad value.
#[tokio::test]
async fn candles_for_a_chart_come_from_the_broker_and_bad_queries_are_named() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("candles")).await;
    let reply = server
        .get(
            "/api/v1/market/candles?symbol=btc-usd&interval=5m&limit=50",
            Some(&token),
        )
        .await;
    reply.expect(200);
    let chart = reply.data();
    assert_eq!(chart["symbol"], "BTC-USD");
    assert_eq!(chart["interval"], "5m");
    assert_eq!(chart["broker"], "paper");
    let bars = chart["candles"].as_array().unwrap();
    assert_eq!(bars.len(), 50);
    let times: Vec<i64> = bars.iter().map(|b| b["time"].as_i64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] == 300), "{times:?}");
    let now = chrono::Utc::now().timestamp();
    // Closed bars only: the last one ended before now.
    assert!(times[49] + 300 <= now + 1, "{} vs {now}", times[49]);
    for bar in bars {
        let (low, high) = (bar["low"].as_f64().unwrap(), bar["high"].as_f64().unwrap());
        for edge in ["open", "close"] {
            let price = bar[edge].as_f64().unwrap();
            assert!(low <= price && price <= high, "{bar}");
        }
    }
    let default = server
        .get("/api/v1/market/candles?symbol=ETH-USD", Some(&token))
        .await;
    default.expect(200);
    assert_eq!(default.data()["interval"], "1m");
    assert_eq!(default.data()["candles"].as_array().unwrap().len(), 300);

    for (query, field) in [
        ("symbol=BTCUSD", "symbol"),
        ("symbol=BTC-USD&interval=2m", "interval"),
        ("symbol=BTC-USD&limit=0", "limit"),
        ("symbol=BTC-USD&limit=5000", "limit"),
    ] {
        let refused = server
            .get(&format!("/api/v1/market/candles?{query}"), Some(&token))
            .await;
        refused.expect_error(400, "INVALID_REQUEST");
        assert_eq!(refused.json["error"]["details"]["field"], field, "{query}");
    }
    server
        .get(
            "/api/v1/market/candles?symbol=BTC-USD&broker=nope",
            Some(&token),
        )
        .await
        .expect_error(400, "UNSUPPORTED_BROKER");
    server
        .get("/api/v1/market/candles?symbol=BTC-USD", None)
        .await
        .expect_error(401, "TOKEN_INVALID");
}
