//! `GET/PUT /config/settings`: defaults from the tier, partial updates, every refusal changing
//! nothing, and the engine obeying allowed pairs, position size, concurrent positions, the daily
//! loss limit and the paper flag.

use serde_json::json;
use tradehost_blackbox::{Server, decimal_sql, email};

#[tokio::test]
async fn settings_have_tier_defaults_and_partial_updates_are_checked() {
    let server = Server::start_trading().await;
    let (_, token) = server.user(&email("settings")).await;
    let settings = server.get("/api/v1/config/settings", Some(&token)).await;
    settings.expect(200);
    let data = settings.data();
    // A trial user has basic's limits.
    assert_eq!(data["trading"]["max_position_size_usd"], 500.0);
    assert_eq!(data["trading"]["max_concurrent_positions"], 5);
    assert_eq!(data["trading"]["risk_level"], "medium");
    assert_eq!(data["trading"]["paper_trading"], true);
    assert_eq!(data["notifications"]["email_enabled"], true);
    assert_eq!(data["advanced"]["enable_meta_ai"], false);
    assert_eq!(data["risk_thresholds"]["max_drawdown_pct"], 20.0);
    assert_eq!(data["risk_thresholds"]["min_account_balance"], 100.0);

    let updated = server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"risk_level": "low", "max_position_size_usd": 250}, "notifications": {"daily_summary": false}}),
        )
        .await;
    updated.expect(200);
    let mut fields: Vec<String> = updated.data()["updated_fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    fields.sort();
    assert_eq!(
        fields,
        ["daily_summary", "max_position_size_usd", "risk_level"]
    );

    let refusals = [
        (
            json!({"trading": {"max_position_size_usd": 5000}}),
            403,
            "EXCEEDS_TIER_LIMIT",
        ),
        (
            json!({"trading": {"max_concurrent_positions": 50}}),
            403,
            "EXCEEDS_TIER_LIMIT",
        ),
        (
            json!({"trading": {"risk_level": "yolo"}}),
            400,
            "INVALID_RISK_LEVEL",
        ),
        (json!({"trading": {"leverage": 10}}), 400, "INVALID_SETTING"),
        (json!({"theme": {"dark": true}}), 400, "INVALID_SETTING"),
        (
            json!({"risk_thresholds": {"max_drawdown_pct": "high"}}),
            400,
            "INVALID_REQUEST",
        ),
        (
            json!({"trading": {"allowed_pairs": "BTC-USD"}}),
            400,
            "INVALID_REQUEST",
        ),
        (
            json!({"notifications": {"daily_summary": "no"}}),
            400,
            "INVALID_REQUEST",
        ),
        (
            json!({"trading": {"risk_level": "high", "max_position_size_usd": 5000}}),
            403,
            "EXCEEDS_TIER_LIMIT",
        ),
        (json!({}), 400, "INVALID_REQUEST"),
    ];
    for (body, status, code) in refusals {
        server
            .put("/api/v1/config/settings", Some(&token), body)
            .await
            .expect_error(status, code);
    }
    let after = server.get("/api/v1/config/settings", Some(&token)).await;
    assert_eq!(after.data()["trading"]["risk_level"], "low");
    assert_eq!(after.data()["trading"]["max_position_size_usd"], 250.0);
    assert_eq!(after.data()["notifications"]["daily_summary"], false);

    // After the trial a free user may not switch live trading on.
    server.exec("UPDATE users SET trial_ends_at = NULL").await;
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"paper_trading": false}}),
        )
        .await
        .expect_error(402, "SUBSCRIPTION_REQUIRED");
    let free = server.get("/api/v1/config/settings", Some(&token)).await;
    assert_eq!(free.data()["trading"]["max_concurrent_positions"], 3);
}

#[tokio::test]
async fn the_engine_obeys_the_settings() {
    let server = Server::start_trading().await;
    let admin = server.admin_token().await;
    // A strategy that wants to enter every flat symbol on every scan.
    server
        .install_plugin(&admin, "testing/guest-churn", "guest-churn")
        .await;
    server
        .put(
            "/api/v1/admin/plugins/guest-churn/config",
            Some(&admin),
            json!({"config": {"size_usd": "400"}}),
        )
        .await
        .expect(200);
    let (user_id, token) = server.user(&email("obeyed")).await;
    server.connect_paper(&token).await;
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"allowed_pairs": ["BTC-USD", "ETH-USD", "SOL-USD"], "max_concurrent_positions": 1,
                   "max_position_size_usd": 100, "paper_trading": false}}),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "symbols": ["BTC-USD", "ADA-USD"]}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .post("/api/v1/trading/start", Some(&token), json!({"broker": "paper", "strategy": "guest-churn", "symbols": ["BTC-USD", "ETH-USD", "SOL-USD"]}))
        .await
        .expect(200);
    let status = server
        .wait_for(&token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "running"
        })
        .await;
    // The paper flag of the settings applies when the start request does not give one.
    assert_eq!(status["paper_trading"], false);
    server
        .wait_count(
            &format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'"),
            4,
            20,
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

    // Never more than one position at a time, never above 100 USD (plus the fill's slippage).
    let db = server.db().await;
    let rows: Vec<(String, String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT action, {}, symbol FROM ledger WHERE user_id = $1 ORDER BY created_at, id",
        decimal_sql("notional")
    )))
    .bind(&user_id)
    .fetch_all(db)
    .await
    .unwrap();
    let mut open = 0i32;
    for (action, notional, symbol) in &rows {
        assert!(["BTC-USD", "ETH-USD", "SOL-USD"].contains(&symbol.as_str()));
        if action == "OPEN" {
            open += 1;
            assert!(open <= 1, "two positions open at once");
            assert!(
                notional.parse::<f64>().unwrap() <= 100.5,
                "entry of {notional} USD"
            );
        } else {
            open -= 1;
        }
    }

    // A daily loss limit below the fees of one round trip pauses the bot.
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"max_daily_loss_usd": 0.01}}),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "strategy": "guest-churn", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    let paused = server
        .wait_for(&token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "paused"
        })
        .await;
    assert!(
        paused["last_error"]
            .as_str()
            .unwrap()
            .contains("daily limit"),
        "{paused}"
    );
}

#[tokio::test]
async fn the_operator_sets_default_risk_thresholds_that_users_override() {
    let server = Server::options()
        .env("TRADEHOST_MAX_DRAWDOWN", "12")
        .env("TRADEHOST_DAILY_LOSS_LIMIT", "3.5")
        .env("TRADEHOST_MIN_WIN_RATE", "40")
        .start()
        .await;
    let (_, token) = server.user(&email("thresholds")).await;
    let settings = server.get("/api/v1/config/settings", Some(&token)).await;
    let thresholds = &settings.data()["risk_thresholds"];
    assert_eq!(thresholds["max_drawdown_pct"], json!(12.0), "{thresholds}");
    assert_eq!(
        thresholds["daily_loss_limit_pct"],
        json!(3.5),
        "{thresholds}"
    );
    assert_eq!(thresholds["min_win_rate_pct"], json!(40.0), "{thresholds}");
    // Thresholds the operator did not set keep the documented defaults.
    assert_eq!(
        thresholds["warning_drawdown_pct"],
        json!(15.0),
        "{thresholds}"
    );
    // A user's own value wins over the operator's default.
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"risk_thresholds": {"max_drawdown_pct": 25}}),
        )
        .await
        .expect(200);
    let settings = server.get("/api/v1/config/settings", Some(&token)).await;
    let thresholds = &settings.data()["risk_thresholds"];
    assert_eq!(thresholds["max_drawdown_pct"], json!(25.0), "{thresholds}");
    assert_eq!(
        thresholds["daily_loss_limit_pct"],
        json!(3.5),
        "{thresholds}"
    );
}

#[tokio::test]
async fn an_out_of_range_threshold_default_stops_the_server() {
    let err = Server::start_with(Server::options().env("TRADEHOST_MAX_DRAWDOWN", "250"))
        .await
        .err()
        .expect("the server refuses to start")
        .to_string();
    assert!(err.contains("TRADEHOST_MAX_DRAWDOWN must be"), "{err}");
}

/// The account reads follow the user's state before any bot has run: the balance names the
/// connection a start would use (none without one), and the stats' risk level is the setting.
#[tokio::test]
async fn account_reads_follow_the_settings_and_connections_before_a_bot_runs() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("before-a-bot")).await;
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    assert!(balance.data()["broker"].is_null(), "{}", balance.text);
    server.connect_paper(&token).await;
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    assert_eq!(balance.data()["broker"], "paper", "{}", balance.text);

    let stats = server.get("/api/v1/account/stats", Some(&token)).await;
    assert_eq!(stats.data()["risk"]["current_risk_level"], "medium");
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"risk_level": "high"}}),
        )
        .await
        .expect(200);
    let stats = server.get("/api/v1/account/stats", Some(&token)).await;
    assert_eq!(
        stats.data()["risk"]["current_risk_level"],
        "high",
        "{}",
        stats.text
    );
}
