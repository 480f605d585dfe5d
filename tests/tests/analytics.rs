//! `/analytics/dashboard` and `/analytics/trades` agree with the trade history they summarise.

use serde_json::{Value, json};
use tradehost_blackbox::{Server, email};

fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

#[tokio::test]
async fn analytics_summarise_the_history() {
    let server = Server::start_trading().await;
    let admin = server.admin_token().await;
    server
        .install_plugin(&admin, "testing/guest-churn", "guest-churn")
        .await;
    let (user_id, token) = server.user(&email("analyst")).await;
    let (_, other) = server.user(&email("bystander")).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "strategy": "guest-churn", "symbols": ["BTC-USD", "ETH-USD"]}),
        )
        .await
        .expect(200);
    server
        .wait_count(
            &format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'"),
            6,
            30,
        )
        .await;
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": true}),
        )
        .await
        .expect(200);

    let history = server
        .get(
            "/api/v1/account/history?status=closed&per_page=100",
            Some(&token),
        )
        .await;
    let closed = history.data()["trades"].as_array().unwrap().clone();
    let net: f64 = closed.iter().map(|t| num(&t["realized_pnl"])).sum();

    let analytics = server
        .get(
            "/api/v1/analytics/trades?period=7d&group_by=day",
            Some(&token),
        )
        .await;
    analytics.expect(200);
    let a = analytics.data();
    assert_eq!(a["total_trades"].as_u64().unwrap() as usize, closed.len());
    let wins = closed
        .iter()
        .filter(|t| num(&t["realized_pnl"]) > 0.0)
        .count();
    assert_eq!(a["by_outcome"]["wins"].as_u64().unwrap() as usize, wins);
    let by_symbol: f64 = a["by_symbol"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| num(&s["pnl"]))
        .sum();
    assert!((by_symbol - net).abs() < 1e-6, "{by_symbol} vs {net}");
    let by_hour: u64 = a["by_hour"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["trades"].as_u64().unwrap())
        .sum();
    assert_eq!(by_hour as usize, closed.len());
    let groups: u64 = a["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["trades"].as_u64().unwrap())
        .sum();
    assert_eq!(groups as usize, closed.len());
    assert!(num(&a["best_trade"]["pnl"]) >= num(&a["worst_trade"]["pnl"]));
    let best = closed
        .iter()
        .map(|t| num(&t["realized_pnl"]))
        .fold(f64::MIN, f64::max);
    assert!((num(&a["best_trade"]["pnl"]) - best).abs() < 1e-9);
    let eth = server
        .get(
            "/api/v1/analytics/trades?period=all&symbol=eth-usd",
            Some(&token),
        )
        .await;
    let eth_count = closed.iter().filter(|t| t["symbol"] == "ETH-USD").count();
    assert_eq!(
        eth.data()["total_trades"].as_u64().unwrap() as usize,
        eth_count
    );
    server
        .get("/api/v1/analytics/trades?group_by=year", Some(&token))
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .get("/api/v1/analytics/trades?period=5d", Some(&token))
        .await
        .expect_error(400, "INVALID_REQUEST");

    let dashboard = server
        .get("/api/v1/analytics/dashboard", Some(&token))
        .await;
    dashboard.expect(200);
    let d = dashboard.data();
    for period in ["today", "week", "month"] {
        assert_eq!(
            d[period]["trades"].as_u64().unwrap() as usize,
            closed.len(),
            "{period}"
        );
        assert!((num(&d[period]["pnl"]) - net).abs() < 1e-6, "{period}");
    }
    assert_eq!(d["active_positions"], 0);
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    assert!((num(&d["balance"]) - num(&balance.data()["equity"])).abs() < 1e-6);
    assert!(d["top_performer"]["symbol"].is_string());

    // Nobody else's trades.
    let theirs = server
        .get("/api/v1/analytics/trades?period=all", Some(&other))
        .await;
    assert_eq!(theirs.data()["total_trades"], 0);
    assert!(theirs.data()["best_trade"].is_null());
    let dashboard = server
        .get("/api/v1/analytics/dashboard", Some(&other))
        .await;
    assert_eq!(dashboard.data()["month"]["trades"], 0);
    assert!(dashboard.data()["top_performer"].is_null());

    // Exports: CSV of the trades and JSON of the ledger, through a link that only its token opens.
    let export = server
        .post(
            "/api/v1/analytics/export",
            Some(&token),
            json!({"format": "csv", "data_type": "trades"}),
        )
        .await;
    export.expect(200);
    let url = export.data()["download_url"].as_str().unwrap().to_string();
    assert!(export.data()["expires_at"].is_string());
    let download = reqwest::get(server.url(&url)).await.unwrap();
    assert_eq!(download.status(), 200);
    assert!(
        download.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let size = export.data()["file_size_bytes"].as_u64().unwrap();
    let text = download.text().await.unwrap();
    assert_eq!(text.len() as u64, size);
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("trade_id,status,symbol,side,quantity")
    );
    assert_eq!(lines.count(), closed.len());

    let ledger = server
        .post(
            "/api/v1/analytics/export",
            Some(&token),
            json!({"format": "json", "data_type": "ledger"}),
        )
        .await;
    let url = ledger.data()["download_url"].as_str().unwrap().to_string();
    let body: Value = reqwest::get(server.url(&url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let entries = server
        .count(&format!(
            "SELECT COUNT(*) FROM ledger WHERE user_id = '{user_id}'"
        ))
        .await;
    assert_eq!(body["rows"].as_array().unwrap().len() as i64, entries);

    let (base, _) = url.split_once("?token=").unwrap();
    let forged = reqwest::get(server.url(&format!("{base}?token={}", "0".repeat(64))))
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    assert_eq!(reqwest::get(server.url(base)).await.unwrap().status(), 401);
    server.exec("UPDATE exports SET expires_at = 0").await;
    let expired: Value = reqwest::get(server.url(&url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(expired["error"]["code"], "TOKEN_EXPIRED");
    for (body, field) in [
        (json!({"format": "xlsx", "data_type": "trades"}), "format"),
        (json!({"format": "csv", "data_type": "orders"}), "data_type"),
    ] {
        let refused = server
            .post("/api/v1/analytics/export", Some(&token), body)
            .await;
        refused.expect_error(400, "INVALID_REQUEST");
        assert_eq!(refused.json["error"]["details"]["field"], field);
    }
}
