//! Browser tests: the web app, the `/trades` page and `/api/docs` in Debian's chromium, driven by
//! the playwright-core scripts of `tests/browser/` (`npm ci --prefix tests/browser` installs it).
//! The pages must show what the API returns, and nothing may be fetched from another host.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tradehost_blackbox::{PASSWORD, Server, email, guest_path, repo_root};

/// The script `tests/browser/<name>`, once node and playwright-core are there.
fn browser_script(name: &str) -> PathBuf {
    let dir = repo_root().join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core/package.json")
            .is_file(),
        "playwright-core is not installed: run `npm ci --prefix tests/browser` (needs node and npm; \
         the browser is /usr/bin/chromium or $CHROMIUM)"
    );
    dir.join(name)
}

/// Runs a browser script with `env` and fails the test with its output unless it exits 0.
async fn run_script(script: PathBuf, env: &[(&str, String)]) {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(&script)
        .current_dir(repo_root().join("tests/browser"))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .unwrap_or_else(|_| panic!("{} ran longer than 120 s", script.display()))
        .unwrap_or_else(|e| panic!("node does not run ({e}); install Node.js 20 or later"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}{stderr}",
        script.display(),
        output.status
    );
    print!("{stdout}");
}

/// Polls a companion route (no envelope) until `check` passes on its body.
async fn wait_json(
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

fn has_symbol(list: &Value, symbol: &str) -> bool {
    list.as_array()
        .is_some_and(|rows| rows.iter().any(|row| row["symbol"] == symbol))
}

/// The values of `field` in the rows of `list`, as strings (the page's `data-id`s).
fn ids(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|row| match &row[field] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn trades_page_shows_what_the_api_returns() {
    let script = browser_script("trades.mjs");
    let server = Server::start_trading().await;
    let address = email("trades-page");
    let (_, token) = server.user(&address).await;
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
    let signal = |symbol: &str, action: &str| json!({"api_key": key, "symbol": symbol, "action": action, "size_usd": 200});

    // One completed trade (ETH-USD bought and closed) and one open position (SOL-USD).
    server
        .post("/api/v1/webhooks/signals", None, signal("ETH-USD", "buy"))
        .await
        .expect(200);
    wait_json(&server, &token, "/api/positions/open", 20, |d| {
        has_symbol(&d["positions"], "ETH-USD")
    })
    .await;
    server
        .post("/api/v1/webhooks/signals", None, signal("ETH-USD", "close"))
        .await
        .expect(200);
    wait_json(&server, &token, "/api/trades/history?limit=50", 20, |d| {
        has_symbol(&d["trades"], "ETH-USD")
    })
    .await;
    server
        .post("/api/v1/webhooks/signals", None, signal("SOL-USD", "buy"))
        .await
        .expect(200);
    wait_json(&server, &token, "/api/positions/open", 20, |d| {
        has_symbol(&d["positions"], "SOL-USD")
    })
    .await;
    // Stopped with the position left open, nothing changes while the browser looks.
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": false}),
        )
        .await
        .expect(200);
    tokio::time::sleep(Duration::from_millis(300)).await;

    // What the page must show: the API's answers to the same queries.
    let positions = wait_json(&server, &token, "/api/positions/open", 5, |_| true).await;
    let history = wait_json(&server, &token, "/api/trades/history?limit=50", 5, |_| true).await;
    let ledger = wait_json(&server, &token, "/api/trades/ledger?limit=100", 5, |_| true).await;
    let statistics = wait_json(&server, &token, "/api/trades/statistics", 5, |_| true).await;
    assert!(!has_symbol(&positions["positions"], "ETH-USD"));
    let expected = json!({
        "total_trades": statistics["statistics"]["total_trades"],
        "open_positions": ids(&positions["positions"], "position_id"),
        "trades": ids(&history["trades"], "id"),
        "ledger": ids(&ledger["transactions"], "id"),
    });
    assert!(
        expected["total_trades"].as_i64().is_some_and(|n| n >= 1),
        "statistics: {statistics}"
    );
    assert!(
        expected["ledger"].as_array().unwrap().len() >= 3,
        "ledger: {ledger}"
    );
    let expect_file = server.data_dir().join("browser-expect.json");
    std::fs::write(&expect_file, expected.to_string()).unwrap();

    run_script(
        script,
        &[
            ("BASE_URL", server.base_url.clone()),
            ("EMAIL", address),
            ("PASSWORD", PASSWORD.to_string()),
            ("EXPECT", expect_file.display().to_string()),
        ],
    )
    .await;
}

#[tokio::test]
async fn api_docs_execute_a_call() {
    let script = browser_script("docs.mjs");
    let server = Server::start().await;
    run_script(script, &[("BASE_URL", server.base_url.clone())]).await;
}

/// A new user's journey through the web app (`tests/browser/app.mjs`): register, connect the
/// paper broker, start a bot, see its first trade on the dashboard and the chart live, close it
/// by hand, export CSV, and come back after the access token expired. Access tokens live 10.8 s
/// here, so the journey also runs across refreshes. Screenshots go to
/// `target/browser-artifacts/app/`.
#[tokio::test]
async fn a_new_user_trades_through_the_web_app() {
    let script = browser_script("app.mjs");
    let server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .env("JWT_EXPIRATION_HOURS", "0.003")
        .start()
        .await;
    // The script's only trade is the one its webhook signal opens.
    let admin = server.admin_token().await;
    server.quiet_default_strategy(&admin).await;
    let artifacts = repo_root().join("target/browser-artifacts/app");
    run_script(
        script,
        &[
            ("BASE_URL", server.base_url.clone()),
            ("EMAIL", email("web-app")),
            ("PASSWORD", PASSWORD.to_string()),
            ("ARTIFACTS", artifacts.display().to_string()),
        ],
    )
    .await;
    assert!(artifacts.join("04-dashboard-first-trade.png").is_file());
}

/// The operator's journey (`tests/browser/admin.mjs`): upload a plugin version, activate it, roll
/// it back, and activate the kill switch, which a signed-in user's page shows within a second.
/// Screenshots go to `target/browser-artifacts/admin/`.
#[tokio::test]
async fn an_admin_swaps_a_plugin_and_halts_trading_through_the_web_app() {
    let script = browser_script("admin.mjs");
    let server = Server::start_trading().await;
    let admin = email("web-admin");
    server.create_admin(&admin);
    let user = email("web-user");
    let (_, token) = server.user(&user).await;
    server.start_paper_bot(&token).await;
    let artifacts = repo_root().join("target/browser-artifacts/admin");
    run_script(
        script,
        &[
            ("BASE_URL", server.base_url.clone()),
            ("ADMIN_EMAIL", admin),
            ("USER_EMAIL", user),
            ("PASSWORD", PASSWORD.to_string()),
            (
                "WASM",
                guest_path("risk-guards-strict").display().to_string(),
            ),
            (
                "MANIFEST",
                repo_root()
                    .join("plugins/testing/risk-guards-strict/plugin.toml")
                    .display()
                    .to_string(),
            ),
            ("ARTIFACTS", artifacts.display().to_string()),
        ],
    )
    .await;
    assert!(artifacts.join("04-user-kill-switch.png").is_file());
}
