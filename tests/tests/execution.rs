//! Order execution against a venue that behaves like a real one: orders filling in parts over
//! several scans, answers lost after the venue accepted, fills reported twice, filled orders the
//! venue forgets, rejections, a server killed between sending an order and booking it, closes
//! that fail and are retried, a kill switch that meets a failing broker, a discrepancy that stops
//! the bot until resolved, and signals that survive a crash. In every case the books end equal to
//! the venue's own record: no order placed twice, no fill lost or booked twice, and
//! cash + marked positions = initial + realized + unrealized − fees, exactly.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tradehost_blackbox::{PASSWORD, Server, decimal_sql, email};

const CHURN: (&str, &str) = ("testing/guest-churn", "guest-churn");
const FAULTY: (&str, &str) = ("testing/guest-faulty-broker", "guest-faulty-broker");
const FAULTY_BROKER: &str = "guest-faulty-broker";

/// A server scanning every 100 ms, with the churning strategy (it enters when flat and exits
/// when holding, every scan) and the fault-injecting broker installed. Returns the admin token.
async fn execution_server(extra: &[(&str, &str)]) -> (Server, String) {
    let mut options = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100");
    for (name, value) in extra {
        options = options.env(name, *value);
    }
    let server = options.start().await;
    let admin = server.admin_token().await;
    server.install_plugin(&admin, CHURN.0, CHURN.1).await;
    server.install_plugin(&admin, FAULTY.0, FAULTY.1).await;
    server.quiet_default_strategy(&admin).await;
    (server, admin)
}

async fn connect(server: &Server, token: &str, broker: &str) {
    server
        .post(
            "/api/v1/config/brokers",
            Some(token),
            json!({"broker": broker, "api_key": "key-1234", "api_secret": "secret"}),
        )
        .await
        .expect(201);
}

async fn start_churn(server: &Server, token: &str, broker: &str) {
    server
        .post(
            "/api/v1/trading/start",
            Some(token),
            json!({"broker": broker, "strategy": "guest-churn", "symbols": ["BTC-USD", "ETH-USD"]}),
        )
        .await
        .expect(200);
}

/// Waits until `sql` counts at least `at_least` rows.
async fn wait_rows(server: &Server, sql: &str, at_least: i64, secs: u64) {
    server.wait_count(sql, at_least, secs).await;
}

/// Waits until `sql` counts no rows.
async fn wait_none(server: &Server, sql: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let count = server.count(sql).await;
        if count == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{count} row(s) left after {secs} s: {sql}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn live_orders(user_id: &str) -> String {
    format!(
        "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status IN ('new', 'submitted', 'partially_filled', 'unknown')"
    )
}

/// Stops the bot, lets reconciliation finish what is live, and compares the books with the venue.
async fn stop_and_compare(
    server: &Server,
    token: &str,
    user_id: &str,
    broker: &str,
) -> tradehost_blackbox::venue::Compared {
    server
        .post("/api/v1/trading/stop", Some(token), json!({}))
        .await
        .expect(200);
    wait_none(server, &live_orders(user_id), 30).await;
    server
        .assert_books_match_venue(broker, user_id)
        .await
        .unwrap_or_else(|err| panic!("the books differ from the venue: {err:#}"))
}

#[tokio::test]
async fn orders_filling_in_parts_over_several_scans_book_exactly_what_filled() {
    let (server, admin) = execution_server(&[]).await;
    server
        .configure_plugin(
            &admin,
            "paper",
            json!({"fill_parts": "3", "fill_delay_ms": "250", "speed": "60"}),
        )
        .await;
    let (user_id, token) = server.user(&email("parts")).await;
    server.connect_paper(&token).await;
    start_churn(&server, &token, "paper").await;
    // Several round trips: entries and exits, each in three fills a quarter second apart.
    wait_rows(
        &server,
        &format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'"),
        3,
        60,
    )
    .await;
    let compared = stop_and_compare(&server, &token, &user_id, "paper").await;
    assert!(compared.orders >= 6, "{compared:?}");
    assert_eq!(
        compared.fills,
        compared.orders * 3,
        "every order filled in three parts"
    );

    // Each order's fills and status are readable; a completed trade takes its order's fills together.
    let orders = server
        .get(
            "/api/v1/trading/orders?status=filled&per_page=100",
            Some(&token),
        )
        .await;
    let listed = orders.data()["orders"].as_array().unwrap().clone();
    assert_eq!(listed.len(), compared.orders);
    let first = &listed[0];
    let detail = server
        .get(
            &format!(
                "/api/v1/trading/orders/{}",
                first["order_id"].as_str().unwrap()
            ),
            Some(&token),
        )
        .await;
    let fills = detail.data()["fills"].as_array().unwrap();
    assert_eq!(fills.len(), 3);
    let summed: f64 = fills
        .iter()
        .map(|f| f["quantity"].as_str().unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(
        (summed
            - first["filled_quantity"]
                .as_str()
                .unwrap()
                .parse::<f64>()
                .unwrap())
        .abs()
            < 1e-12
    );
    let one_trade_per_close = server
        .count(&format!(
            "SELECT COUNT(*) FROM (SELECT trade_id FROM orders WHERE user_id = '{user_id}' AND intent = 'close' \
             AND status = 'filled' GROUP BY trade_id) t"
        ))
        .await;
    let trades = server
        .count(&format!(
            "SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'"
        ))
        .await;
    assert_eq!(
        trades, one_trade_per_close,
        "one completed trade per filled closing order"
    );
    server
        .get("/api/v1/trading/orders?status=pending", Some(&token))
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .get("/api/v1/trading/orders/not-an-order", Some(&token))
        .await
        .expect_error(404, "NOT_FOUND");
}

/// Runs the churning bot on the faulty broker with `fault` until `trades` round trips completed,
/// then compares the books with the venue. Returns (user id, token).
async fn churn_through_fault(fault: &str, trades: i64) -> (Server, String, String) {
    let (server, admin) = execution_server(&[]).await;
    server
        .configure_plugin(
            &admin,
            FAULTY_BROKER,
            json!({"fault": fault, "fill_parts": "2", "fill_delay_ms": "200"}),
        )
        .await;
    let (user_id, token) = server.user(&email("faults")).await;
    connect(&server, &token, FAULTY_BROKER).await;
    start_churn(&server, &token, FAULTY_BROKER).await;
    wait_rows(
        &server,
        &format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'"),
        trades,
        90,
    )
    .await;
    let compared = stop_and_compare(&server, &token, &user_id, FAULTY_BROKER).await;
    assert!(
        compared.orders >= 2 * trades as usize,
        "{fault}: {compared:?}"
    );
    (server, user_id, token)
}

#[tokio::test]
async fn answers_lost_after_the_venue_accepted_are_reconciled_not_resent() {
    let (server, user_id, _) = churn_through_fault("timeout_after_accept", 3).await;
    // Every order was sent once, answered with a timeout, and learned from the venue afterwards.
    let timed_out = server
        .count(&format!(
            "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'filled' AND error LIKE 'timed out%'"
        ))
        .await;
    let filled = server
        .count(&format!(
            "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'filled'"
        ))
        .await;
    assert_eq!(
        timed_out, filled,
        "each filled order went through `unknown`"
    );
}

#[tokio::test]
async fn fills_reported_twice_are_booked_once() {
    churn_through_fault("duplicate_fills", 3).await;
}

#[tokio::test]
async fn fills_of_orders_the_venue_forgot_are_found_among_its_fills() {
    // Lost answers, and a venue that knows a client order id only while the order works: what
    // filled is learned from the account's fills.
    churn_through_fault("timeout_after_accept,forget_filled", 2).await;
}

#[tokio::test]
async fn rejected_orders_change_nothing_and_the_bot_trades_on() {
    let (server, admin) = execution_server(&[]).await;
    server
        .configure_plugin(&admin, FAULTY_BROKER, json!({"fault": "reject"}))
        .await;
    let (user_id, token) = server.user(&email("rejects")).await;
    connect(&server, &token, FAULTY_BROKER).await;
    start_churn(&server, &token, FAULTY_BROKER).await;
    wait_rows(
        &server,
        &format!("SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'rejected'"),
        4,
        30,
    )
    .await;
    let status = server.get("/api/v1/trading/status", Some(&token)).await;
    assert_eq!(
        status.data()["status"],
        "running",
        "refusals are not failures"
    );
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    assert_eq!(balance.data()["cash"], balance.data()["initial_capital"]);
    let compared = stop_and_compare(&server, &token, &user_id, FAULTY_BROKER).await;
    assert_eq!(compared.fills, 0);
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM ledger WHERE user_id = '{user_id}'"
            ))
            .await,
        0
    );
}

#[tokio::test]
async fn a_server_killed_between_sending_an_order_and_booking_it_books_it_once() {
    let (mut server, admin) = execution_server(&[("TRADEHOST_PLUGIN_TIMEOUT_MS", "20000")]).await;
    // The venue accepts and fills each order, then holds its answer back for 4 s.
    server
        .configure_plugin(&admin, FAULTY_BROKER, json!({"stall_ms": "4000"}))
        .await;
    let address = email("killed");
    let (user_id, token) = server.user(&address).await;
    connect(&server, &token, FAULTY_BROKER).await;
    start_churn(&server, &token, FAULTY_BROKER).await;
    // An order is written and sent; the venue has it; the server dies before the answer.
    wait_rows(
        &server,
        &format!("SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'new'"),
        1,
        30,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let in_flight = server
        .scalar(&format!(
            "SELECT client_order_id FROM orders WHERE user_id = '{user_id}' AND status = 'new'"
        ))
        .await
        .expect("an order in flight");
    let at_venue = server.venue_book(FAULTY_BROKER, &user_id).await.unwrap();
    assert!(
        at_venue.orders.contains_key(&in_flight),
        "the venue accepted the order before the kill"
    );
    server.kill();
    server.restart().await;
    // Reconciliation learns the order from the venue; it is not sent again.
    server
        .configure_plugin(&admin, FAULTY_BROKER, json!({"stall_ms": "0"}))
        .await;
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    wait_rows(
        &server,
        &format!("SELECT COUNT(*) FROM orders WHERE client_order_id = '{in_flight}' AND status = 'filled'"),
        1,
        30,
    )
    .await;
    let fills = server
        .count(&format!(
            "SELECT COUNT(*) FROM fills f JOIN orders o ON o.id = f.order_id WHERE o.client_order_id = '{in_flight}'"
        ))
        .await;
    assert_eq!(fills, 1, "booked once");
    stop_and_compare(&server, &token, &user_id, FAULTY_BROKER).await;
}

/// A user with a running bot (pausing it afterwards keeps the strategy quiet) and an open
/// position opened by a signal on `broker`.
async fn user_with_position(server: &Server, broker: &str, tag: &str) -> (String, String, String) {
    let (user_id, token) = server.user(&email(tag)).await;
    connect(server, &token, broker).await;
    let key = server
        .post("/api/v1/config/webhook-key", Some(&token), json!({}))
        .await
        .data()["webhook_key"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": broker, "strategy": "ema-cross", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let received = server
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": key, "symbol": "SOL-USD", "action": "buy", "size_usd": 100}),
        )
        .await;
    let trade_id = received.data()["trade_id"].as_str().unwrap().to_string();
    server
        .wait_for(&token, "/api/v1/account/positions", 20, |d| {
            d["positions"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["position_id"] == trade_id.as_str()))
        })
        .await;
    server
        .post("/api/v1/trading/pause", Some(&token), json!({}))
        .await
        .expect(200);
    (user_id, token, trade_id)
}

#[tokio::test]
async fn a_close_the_venue_rejects_is_retried_until_the_position_is_closed() {
    let (server, admin) = execution_server(&[]).await;
    server
        .configure_plugin(
            &admin,
            FAULTY_BROKER,
            json!({"fault": "reject_first_close"}),
        )
        .await;
    let (user_id, token, position_id) = user_with_position(&server, FAULTY_BROKER, "closer").await;
    // The first attempt is rejected: the answer says so, never "closed".
    let refused = server
        .post(
            &format!("/api/v1/account/positions/{position_id}/close"),
            Some(&token),
            json!({}),
        )
        .await;
    refused.expect_error(502, "BROKER_ERROR");
    assert_eq!(
        refused.json["error"]["details"]["position_status"],
        "closing"
    );
    let position = server
        .get(
            &format!("/api/v1/account/positions/{position_id}"),
            Some(&token),
        )
        .await;
    assert_eq!(position.data()["status"], "closing");
    assert_eq!(position.data()["close"]["attempts"], 1);
    assert!(
        position.data()["close"]["last_error"]
            .as_str()
            .unwrap()
            .contains("rejected")
    );
    // The next attempt, a second later, closes it.
    server
        .wait_for(&token, "/api/v1/account/positions", 20, |d| {
            d["positions"].as_array().is_some_and(|p| p.is_empty())
        })
        .await;
    let attempts: Vec<(String, i64)> = sqlx::query_as(
        "SELECT status, attempt FROM orders WHERE position_id = $1 AND intent = 'close' ORDER BY attempt",
    )
    .bind(&position_id)
    .fetch_all(server.db().await)
    .await
    .unwrap();
    assert_eq!(
        attempts,
        [("rejected".to_string(), 1), ("filled".to_string(), 2)]
    );
    let history = server
        .get("/api/v1/account/history?status=closed", Some(&token))
        .await;
    assert_eq!(history.data()["trades"][0]["exit_reason"], "manual");
    stop_and_compare(&server, &token, &user_id, FAULTY_BROKER).await;
}

#[tokio::test]
async fn the_kill_switch_closes_every_position_past_a_failing_broker() {
    let (server, admin) = execution_server(&[]).await;
    let (paper_user, paper_token, _) = user_with_position(&server, "paper", "healthy").await;
    let (faulty_user, faulty_token, faulty_position) =
        user_with_position(&server, FAULTY_BROKER, "failing").await;
    // The second user's exchange now refuses every close.
    server
        .configure_plugin(&admin, FAULTY_BROKER, json!({"fault": "reject_closes"}))
        .await;
    let activated = server
        .post(
            "/api/v1/admin/kill-switch",
            Some(&admin),
            json!({"reason": "drill", "close_all_positions": true}),
        )
        .await;
    activated.expect(200);
    let data = activated.data();
    assert_eq!(data["affected_users"], 2);
    assert_eq!(data["positions_closed"], 1, "{data}");
    let failures = data["failures"].as_array().unwrap();
    assert_eq!(failures.len(), 1, "{data}");
    assert_eq!(failures[0]["user_id"], faulty_user.as_str());
    // The healthy user's position is closed; the other one is reported as closing, not closed.
    let positions = server
        .get("/api/v1/account/positions", Some(&paper_token))
        .await;
    assert!(positions.data()["positions"].as_array().unwrap().is_empty());
    let position = server
        .get(
            &format!("/api/v1/account/positions/{faulty_position}"),
            Some(&faulty_token),
        )
        .await;
    assert_eq!(position.data()["status"], "closing");
    assert_eq!(position.data()["close"]["reason"], "kill_switch");
    // Once the exchange takes closes again, the retries close it (the bots stay stopped).
    server
        .configure_plugin(&admin, FAULTY_BROKER, json!({"fault": "none"}))
        .await;
    server
        .wait_for(&faulty_token, "/api/v1/account/positions", 30, |d| {
            d["positions"].as_array().is_some_and(|p| p.is_empty())
        })
        .await;
    let history = server
        .get("/api/v1/account/history?status=closed", Some(&faulty_token))
        .await;
    assert_eq!(history.data()["trades"][0]["exit_reason"], "kill_switch");
    for (user, broker) in [(&paper_user, "paper"), (&faulty_user, FAULTY_BROKER)] {
        wait_none(&server, &live_orders(user), 20).await;
        server.assert_books_match_venue(broker, user).await.unwrap();
    }
    server
        .request(
            Method::DELETE,
            "/api/v1/admin/kill-switch",
            Some(&admin),
            None,
        )
        .await
        .expect(200);
}

#[tokio::test]
async fn a_signal_acknowledged_before_a_crash_is_acted_on_once_and_its_outcome_is_readable() {
    let (mut server, _) = execution_server(&[]).await;
    let address = email("durable");
    let (user_id, token) = server.user(&address).await;
    server.connect_paper(&token).await;
    let key = server
        .post("/api/v1/config/webhook-key", Some(&token), json!({}))
        .await
        .data()["webhook_key"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "strategy": "ema-cross", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let received = server
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": key, "symbol": "ETH-USD", "action": "buy", "size_usd": 150}),
        )
        .await;
    received.expect(200);
    let trade_id = received.data()["trade_id"].as_str().unwrap().to_string();
    // The answer came after the signal was written: a crash now loses nothing.
    server.kill();
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM signals WHERE id = '{trade_id}'"
            ))
            .await,
        1
    );
    server.restart().await;
    let path = format!("/api/v1/webhooks/signals/{trade_id}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let outcome = loop {
        let reply = server
            .http
            .get(server.url(&path))
            .header("X-Webhook-Key", &key)
            .send()
            .await
            .unwrap();
        let reply = tradehost_blackbox::Reply::from(reply).await;
        reply.expect(200);
        if reply.data()["status"] == "traded" {
            break reply.data().clone();
        }
        assert!(
            Instant::now() < deadline,
            "the signal was not acted on: {}",
            reply.data()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(outcome["order"]["status"], "filled");
    assert_eq!(outcome["symbol"], "ETH-USD");
    // Acted on once: one entry order, one position named by the signal.
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM orders WHERE signal_id = '{trade_id}'"
            ))
            .await,
        1
    );
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM positions WHERE id = '{trade_id}'"
            ))
            .await,
        1
    );
    // The user reads it with a token too; nobody else reads it; without credentials: 401.
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    server.get(&path, Some(&token)).await.expect(200);
    let (_, stranger) = server.user(&email("stranger")).await;
    server
        .get(&path, Some(&stranger))
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .get(&path, None)
        .await
        .expect_error(401, "TOKEN_INVALID");
    let _ = user_id;
}

#[tokio::test]
async fn a_difference_with_the_venue_stops_the_bot_until_it_is_resolved() {
    // The suite's `ema-cross` never signals: the only difference with the venue is the one made
    // below, whatever the simulated market does.
    let (mut server, admin) = execution_server(&[]).await;
    let address = email("drift");
    let (user_id, token) = server.user(&address).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "strategy": "ema-cross", "symbols": ["BTC-USD", "SOL-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    server
        .post("/api/v1/trading/stop", Some(&token), json!({}))
        .await
        .expect(200);
    // Someone trades SOL on the venue behind tradehost's back.
    let account = server
        .scalar(&format!("SELECT value FROM plugin_store WHERE plugin = 'paper' AND scope = '{user_id}' AND key = 'account'"))
        .await
        .unwrap_or_else(|| r#"{"cash":{},"holdings":{}}"#.into());
    let mut account: Value = serde_json::from_str(&account).unwrap();
    account["holdings"]["SOL-USD"] = json!({"quantity": "2.5", "entry_price": "150"});
    sqlx::query(
        "INSERT INTO plugin_store (plugin, scope, key, value, updated_at) VALUES ('paper', $1, 'account', $2, 0) \
         ON CONFLICT (plugin, scope, key) DO UPDATE SET value = $2",
    )
    .bind(&user_id)
    .bind(account.to_string())
    .execute(server.db().await)
    .await
    .unwrap();
    let mut alarms = server.socket(&token, &["alarms", "bot_status"]).await;

    // The next start compares before it trades: the bot stops in error and says why.
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "strategy": "ema-cross", "symbols": ["BTC-USD", "SOL-USD"]}),
        )
        .await
        .expect(200);
    let status = server
        .wait_for(&token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "error"
        })
        .await;
    assert!(
        status["last_error"].as_str().unwrap().contains("SOL"),
        "{status}"
    );
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}'"
            ))
            .await,
        0
    );
    assert_eq!(
        server.count(&format!("SELECT COUNT(*) FROM audit_log WHERE event_type = 'trading.reconciliation_mismatch' AND user_id = '{user_id}'")).await,
        1
    );
    let event = tradehost_blackbox::next_event(&mut alarms, "alarm_triggered", 10).await;
    assert_eq!(event["data"]["alarm_type"], "RECONCILIATION_MISMATCH");
    let reconciliation = server
        .get("/api/v1/trading/reconciliation", Some(&token))
        .await;
    let open = reconciliation.data()["open"].as_array().unwrap().clone();
    assert_eq!(reconciliation.data()["in_sync"], false);
    assert_eq!(open.len(), 1);
    assert_eq!(
        (
            open[0]["symbol"].as_str(),
            open[0]["expected"].as_str(),
            open[0]["actual"].as_str()
        ),
        // Holdings are compared per asset: a spot venue holds SOL, whatever it was bought with.
        (Some("SOL"), Some("0"), Some("2.5"))
    );
    // It places nothing until resolved: starting again is refused, also after a restart.
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper"}),
        )
        .await
        .expect_error(409, "RECONCILIATION_REQUIRED");
    server.restart().await;
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        server
            .get("/api/v1/trading/status", Some(&token))
            .await
            .data()["status"],
        "error"
    );
    // Asking again does not make it go away; an operator sees it too; taking the venue's word does.
    let rechecked = server
        .post(
            "/api/v1/trading/reconciliation/resolve",
            Some(&token),
            json!({"resolution": "recheck"}),
        )
        .await;
    assert_eq!(rechecked.data()["in_sync"], false);
    server
        .post(
            "/api/v1/trading/reconciliation/resolve",
            Some(&token),
            json!({"resolution": "guess"}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    let seen = server
        .get(
            &format!("/api/v1/admin/users/{user_id}/reconciliation"),
            Some(&admin),
        )
        .await;
    assert_eq!(seen.data()["open"].as_array().unwrap().len(), 1);
    server
        .get("/api/v1/admin/users/nobody/reconciliation", Some(&admin))
        .await
        .expect_error(404, "NOT_FOUND");
    let resolved = server
        .post(
            &format!("/api/v1/admin/users/{user_id}/reconciliation/resolve"),
            Some(&admin),
            json!({"resolution": "accept_venue"}),
        )
        .await;
    assert_eq!(resolved.data()["in_sync"], true, "{}", resolved.text);
    assert_eq!(resolved.data()["recent"][0]["resolution"], "accept_venue");
    assert_eq!(
        server
            .scalar(&format!(
                "SELECT {} FROM venue_baselines WHERE user_id = '{user_id}' AND symbol = 'SOL'",
                decimal_sql("quantity")
            ))
            .await
            .as_deref(),
        Some("2.50000000"),
        "what the venue holds beyond the books is recorded as not tradehost's"
    );
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "strategy": "ema-cross", "symbols": ["BTC-USD", "SOL-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
}

#[tokio::test]
async fn a_bot_trades_through_plugins_of_the_previous_interface() {
    let (server, admin) = execution_server(&[]).await;
    server
        .install_plugin(&admin, "testing/guest-legacy-broker", "guest-legacy-broker")
        .await;
    server
        .install_plugin(
            &admin,
            "testing/guest-legacy-strategy",
            "guest-legacy-strategy",
        )
        .await;
    let plugins = server
        .get("/api/v1/admin/plugins/guest-legacy-broker", Some(&admin))
        .await;
    assert_eq!(plugins.data()["interface_version"], "0.1.0");
    let (user_id, token) = server.user(&email("legacy")).await;
    connect(&server, &token, "guest-legacy-broker").await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "guest-legacy-broker", "strategy": "guest-legacy-strategy", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    wait_rows(
        &server,
        &format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'"),
        2,
        30,
    )
    .await;
    server
        .post("/api/v1/trading/stop", Some(&token), json!({}))
        .await
        .expect(200);
    let fills = server
        .count(&format!(
            "SELECT COUNT(*) FROM fills WHERE user_id = '{user_id}'"
        ))
        .await;
    let ledger = server
        .count(&format!(
            "SELECT COUNT(*) FROM ledger WHERE user_id = '{user_id}'"
        ))
        .await;
    assert_eq!(fills, ledger);
}
