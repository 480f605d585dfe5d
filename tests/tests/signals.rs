//! Inbound signals: the webhook key (shown once, stored hashed, rotated), and a signal acted on
//! by the running bot, arriving as `trade_executed` and in the ledger under the id it was given.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tradehost_blackbox::{Server, Socket, email, plugin_upload};

async fn next_trade(socket: &mut Socket, trade_id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = tokio::time::timeout(left, socket.next())
            .await
            .unwrap_or_else(|_| panic!("no trade_executed for {trade_id}"))
            .unwrap()
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        if event["type"] == "trade_executed" && event["data"]["trade_id"] == trade_id {
            return event["data"].clone();
        }
    }
}

#[tokio::test]
async fn a_signal_trades_through_the_running_bot() {
    let server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.2")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let (user_id, token) = server.user(&email("signals")).await;
    let created = server
        .post("/api/v1/config/webhook-key", Some(&token), json!({}))
        .await;
    created.expect(200);
    let first_key = created.data()["webhook_key"].as_str().unwrap().to_string();
    assert!(created.data()["created_at"].is_string());
    // Rotation: the old key stops working at once; only a hash is stored.
    let key = server
        .post("/api/v1/config/webhook-key", Some(&token), json!({}))
        .await
        .data()["webhook_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(key, first_key);
    let stored = server
        .scalar(&format!(
            "SELECT key_hash FROM webhook_keys WHERE user_id = '{user_id}'"
        ))
        .await
        .unwrap();
    assert!(!stored.contains(&key[4..]));
    assert_eq!(
        server.count("SELECT COUNT(*) FROM audit_log WHERE event_type IN ('webhook_key.created', 'webhook_key.rotated')").await,
        2
    );

    let signal = |api_key: &str, action: &str| json!({"api_key": api_key, "symbol": "ETH-USD", "action": action, "price": 3000.0, "strategy": "tv-alert", "size_usd": 200});
    server
        .post("/api/v1/webhooks/signals", None, signal(&first_key, "buy"))
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post("/api/v1/webhooks/signals", None, signal(&key, "buy"))
        .await
        .expect_error(400, "NOT_RUNNING");
    server
        .post("/api/v1/webhooks/signals", None, signal(&key, "hold"))
        .await
        .expect_error(400, "INVALID_REQUEST");

    server.connect_paper(&token).await;
    // The bot's own strategy trades BTC-USD; the signal is for ETH-USD.
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let mut socket = server.socket(&token, &["trades"]).await;

    // Sizes the bot would not trade (absurdly large, or below the minimum order) are refused with
    // the reason, and nothing is stored.
    for (size, reason) in [(2e9, "at most"), (0.5, "minimum order")] {
        let mut absurd = signal(&key, "buy");
        absurd["size_usd"] = json!(size);
        let refused = server.post("/api/v1/webhooks/signals", None, absurd).await;
        refused.expect_error(400, "INVALID_REQUEST");
        assert_eq!(refused.json["error"]["details"]["field"], "size_usd");
        assert!(
            refused.json["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(reason)),
            "{}",
            refused.text
        );
    }
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM signals WHERE user_id = '{user_id}'"
            ))
            .await,
        0
    );

    let bought = server
        .post("/api/v1/webhooks/signals", None, signal(&key, "buy"))
        .await;
    bought.expect(200);
    assert_eq!(bought.data()["received"], true);
    assert_eq!(bought.data()["status"], "processing");
    let opened_id = bought.data()["trade_id"].as_str().unwrap().to_string();
    let opened = next_trade(&mut socket, &opened_id).await;
    assert_eq!(opened["action"], "opened");
    assert_eq!(opened["symbol"], "ETH-USD");
    assert_eq!(opened["side"], "long");
    assert!(opened["size_usd"].as_f64().unwrap() <= 200.5);
    let position = server
        .get(
            &format!("/api/v1/account/positions/{opened_id}"),
            Some(&token),
        )
        .await;
    position.expect(200);
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM ledger WHERE position_id = '{opened_id}' AND action = 'OPEN'"
            ))
            .await,
        1
    );

    let closed = server
        .post("/api/v1/webhooks/signals", None, signal(&key, "close"))
        .await;
    closed.expect(200);
    let closed_id = closed.data()["trade_id"].as_str().unwrap().to_string();
    let event = next_trade(&mut socket, &closed_id).await;
    assert_eq!(event["action"], "closed");
    assert_eq!(event["position_id"], opened_id.as_str());
    let history = server
        .get(
            "/api/v1/account/history?status=closed&symbol=ETH-USD",
            Some(&token),
        )
        .await;
    let trades = history.data()["trades"].as_array().unwrap();
    let trade = trades
        .iter()
        .find(|t| t["trade_id"] == closed_id.as_str() && t["exit_reason"] == "signal")
        .unwrap_or_else(|| panic!("no closed trade {closed_id} in {trades:?}"));

    // The trade counts for the strategy the signal named; the running bot's strategy holds the
    // allocation.
    let summary = server
        .get("/api/v1/dashboard/investor-summary", Some(&token))
        .await;
    summary.expect(200);
    let summary = &summary.json["data"];
    let alert = &summary["strategy_performance"]["tv-alert"];
    assert_eq!(alert["total_trades"], 1, "{summary}");
    assert_eq!(alert["allocation_pct"].as_f64(), Some(0.0), "{summary}");
    let pnl = trade["realized_pnl"].as_f64().unwrap();
    assert!(
        (alert["total_pnl"].as_f64().unwrap() - pnl).abs() < 0.006,
        "{alert} vs {pnl}"
    );
    let allocations = summary["strategy_allocations"].as_object().unwrap();
    assert_eq!(allocations.len(), 1, "{summary}");
    for (running, pct) in allocations {
        assert_eq!(pct.as_f64(), Some(100.0));
        assert_eq!(
            summary["strategy_performance"][running]["allocation_pct"].as_f64(),
            Some(100.0),
            "{summary}"
        );
    }
}

#[tokio::test]
async fn a_signal_is_checked_by_the_same_risk_rules() {
    let server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.2")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let admin = server.admin_token().await;
    // The strict risk rule denies every order.
    let uploaded = server
        .post(
            "/api/v1/admin/plugins",
            Some(&admin),
            plugin_upload("testing/risk-guards-strict", "risk-guards-strict"),
        )
        .await;
    uploaded.expect(200);
    server
        .post(
            "/api/v1/admin/plugins/risk-guards/activate",
            Some(&admin),
            json!({"version": "0.2.0"}),
        )
        .await
        .expect(200);
    let (user_id, token) = server.user(&email("denied")).await;
    let key = server
        .post("/api/v1/config/webhook-key", Some(&token), json!({}))
        .await
        .data()["webhook_key"]
        .as_str()
        .unwrap()
        .to_string();
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    server
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": key, "symbol": "ETH-USD", "action": "buy"}),
        )
        .await
        .expect(200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM ledger WHERE user_id = '{user_id}'"
            ))
            .await,
        0
    );
    assert_eq!(
        server
            .get("/api/v1/trading/status", Some(&token))
            .await
            .data()["status"],
        "running"
    );

    // The same signal with the permissive rule back in place trades.
    server
        .post(
            "/api/v1/admin/plugins/risk-guards/rollback",
            Some(&admin),
            json!({}),
        )
        .await
        .expect(200);
    let accepted = server
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": key, "symbol": "ETH-USD", "action": "buy"}),
        )
        .await;
    let position_id = accepted.data()["trade_id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server
        .get(
            &format!("/api/v1/account/positions/{position_id}"),
            Some(&token),
        )
        .await
        .status
        != 200
    {
        assert!(
            Instant::now() < deadline,
            "the allowed signal did not trade"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
