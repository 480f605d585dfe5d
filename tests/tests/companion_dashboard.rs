//! Companion sets E and F (docs/companion.md): the dashboard's snapshots, curves, metrics and
//! reports, the KPI tracker, risk alarms from the user's thresholds, the overview, and the ports
//! the sets may also be served on.

use std::time::{Duration, Instant};

use chrono::Datelike;
use reqwest::Method;
use serde_json::{Value, json};
use tradehost_blackbox::companion::*;
use tradehost_blackbox::{Reply, Server, email};

const METRICS: [&str; 23] = [
    "total_return_pct",
    "annualized_return_pct",
    "cagr_pct",
    "daily_return_pct",
    "monthly_return_pct",
    "daily_volatility_pct",
    "annualized_volatility_pct",
    "sharpe_ratio",
    "sortino_ratio",
    "calmar_ratio",
    "max_drawdown_pct",
    "current_drawdown_pct",
    "total_trades",
    "winning_trades",
    "losing_trades",
    "win_rate_pct",
    "avg_win",
    "avg_loss",
    "profit_factor",
    "longest_winning_streak",
    "longest_losing_streak",
    "days_trading",
    "avg_trades_per_day",
];

const KPI: [&str; 21] = [
    "account_value",
    "cash_balance",
    "total_return_pct",
    "daily_return_pct",
    "weekly_return_pct",
    "monthly_return_pct",
    "sharpe_ratio",
    "sortino_ratio",
    "max_drawdown_pct",
    "current_drawdown_pct",
    "total_trades",
    "winning_trades",
    "losing_trades",
    "win_rate_pct",
    "profit_factor",
    "avg_win",
    "avg_loss",
    "active_positions",
    "total_exposure_pct",
    "unrealized_pnl",
    "realized_pnl_total",
];

const INVESTOR: [&str; 25] = [
    "user_id",
    "initial_capital",
    "current_nav",
    "current_equity",
    "total_return_usd",
    "total_return_pct",
    "annualized_return_pct",
    "annualized_volatility_pct",
    "sharpe_ratio",
    "sortino_ratio",
    "max_drawdown_pct",
    "max_drawdown_start",
    "max_drawdown_end",
    "current_drawdown_pct",
    "current_regime",
    "win_rate_pct",
    "total_trades",
    "avg_trades_per_day",
    "days_trading",
    "monthly_avg_return_pct",
    "active_strategies",
    "strategy_allocations",
    "strategy_performance",
    "diversification_score",
    "reporting_date",
];

const MONTHLY: [&str; 12] = [
    "year",
    "month",
    "start_equity",
    "end_equity",
    "monthly_return_pct",
    "total_trades",
    "winning_trades",
    "losing_trades",
    "win_rate_pct",
    "max_drawdown_pct",
    "trading_days",
    "net_profit",
];

const ALL_FIELDS: &str = "positions_value, unrealized_pnl, realized_pnl_today, total_trades, winning_trades, losing_trades";

/// Collects disagreements, so that one run reports all of them.
#[derive(Default)]
struct Checks(Vec<String>);

impl Checks {
    fn near(&mut self, what: &str, got: &Value, want: f64) {
        if !got.as_f64().is_some_and(|g| near(g, want)) {
            self.0.push(format!("{what}: got {got}, want {want}"));
        }
    }

    fn eq(&mut self, what: &str, got: &Value, want: Value) {
        if *got != want {
            self.0.push(format!("{what}: got {got}, want {want}"));
        }
    }

    #[track_caller]
    fn done(self) {
        assert!(self.0.is_empty(), "{:#?}", self.0);
    }
}

/// An error of sets C to F: `{success: false, error, code}`.
#[track_caller]
fn assert_failure(reply: &Reply, status: u16) {
    reply.expect(status);
    assert_eq!(reply.json["success"], false, "body: {}", reply.text);
    assert!(
        reply.json["error"].as_str().is_some_and(|e| !e.is_empty()),
        "body: {}",
        reply.text
    );
    assert!(
        reply.json["code"].as_str().is_some_and(|c| !c.is_empty()),
        "body: {}",
        reply.text
    );
}

#[track_caller]
fn assert_error(reply: &Reply, status: u16, message: &str) {
    assert_failure(reply, status);
    assert_eq!(reply.json["error"], message, "body: {}", reply.text);
}

/// The `data` of a `{success: true, data}` answer.
#[track_caller]
fn data(reply: &Reply) -> Value {
    reply.expect(200);
    assert_eq!(reply.json["success"], true, "body: {}", reply.text);
    assert!(reply.json.get("data").is_some(), "no data: {}", reply.text);
    reply.json["data"].clone()
}

/// Every listed field is present and a finite JSON number or null (never a string or missing).
#[track_caller]
fn assert_figures(object: &Value, fields: &[&str]) {
    for field in fields {
        let value = object
            .get(*field)
            .unwrap_or_else(|| panic!("{field} missing in {object}"));
        assert!(
            value.is_number() || value.is_null(),
            "{field} is not a number: {object}"
        );
    }
}

/// Polls a route answering `{success, data}` until `check` passes on the data.
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
        if reply.status == 200 {
            let body = data(&reply);
            if check(&body) {
                return body;
            }
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting on {path}: {}",
            reply.text
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A server with the default tracker intervals (60 s, 3600 s): nothing is snapshotted by the
/// tracker while a test runs.
async fn quiet_server() -> Server {
    Server::options()
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await
}

/// Scans every 100 ms, snapshots every second and reports every two.
async fn tracking_server() -> Server {
    Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .env("TRADEHOST_PERF_UPDATE_INTERVAL", "1")
        .env("TRADEHOST_PERF_REPORT_INTERVAL", "2")
        .start()
        .await
}

fn snapshot(cash: f64, positions_value: f64) -> Value {
    json!({
        "cash": cash, "positions_value": positions_value, "unrealized_pnl": 0.0,
        "realized_pnl_today": 0.0, "total_trades": 0, "winning_trades": 0, "losing_trades": 0,
    })
}

async fn record(server: &Server, token: &str, body: Value) -> Reply {
    server
        .post("/api/v1/dashboard/update-snapshot", Some(token), body)
        .await
}

fn has_level(alarms: &[Value], levels: &[&str]) -> bool {
    alarms
        .iter()
        .any(|a| levels.contains(&a["level"].as_str().unwrap_or_default()))
}

#[tokio::test]
async fn no_data_before_any_snapshot() {
    let server = quiet_server().await;
    let (_, token) = server.user(&email("f-empty")).await;
    let get = |path: &'static str| server.get(path, Some(&token));

    assert_error(&get("/api/kpi/current").await, 404, "No KPI data available");
    let summary = data(&get("/api/kpi/summary").await);
    assert_eq!(summary["status"], "no_data");
    assert!(summary["message"].is_string(), "{summary}");
    let history = data(&get("/api/kpi/history").await);
    assert_eq!(
        history,
        json!({"history": [], "data_points": 0, "period_hours": 24})
    );
    let metrics = data(&get("/api/v1/dashboard/metrics").await);
    for field in METRICS {
        assert_eq!(metrics[field].as_f64(), Some(0.0), "{field}: {metrics}");
    }
    assert_eq!(
        data(&get("/api/v1/dashboard/equity-curve").await),
        json!([])
    );
    assert_eq!(
        data(&get("/api/v1/dashboard/drawdown-curve").await),
        json!([])
    );
    assert_eq!(
        data(&get("/api/v1/dashboard/monthly-reports").await),
        json!([])
    );
    let status = data(&get("/api/performance/status").await);
    assert!(status["running"].is_boolean() && status["paused"].is_boolean());
    assert_eq!(status["update_interval"].as_f64(), Some(60.0), "{status}");
    assert_eq!(status["report_interval"].as_f64(), Some(3600.0), "{status}");
    assert!(status["last_update"].is_null() && status["last_report"].is_null());
    assert_eq!(status["update_count"], 0);
    assert_eq!(status["report_count"], 0);
    assert_eq!(
        data(&get("/api/alarms/active").await),
        json!({"alarms": [], "count": 0})
    );
    assert_eq!(
        data(&get("/api/alarms/history").await),
        json!({"alarms": [], "count": 0, "period_hours": 24})
    );
    let overview = data(&get("/api/dashboard/overview").await);
    assert_utc(&overview["timestamp"]);
    assert_eq!(overview["kpi"]["status"], "no_data");
    assert_eq!(
        overview["performance_tracking"]["update_interval"].as_f64(),
        Some(60.0)
    );
    assert_eq!(
        overview["risk_alarms"],
        json!({"active_count": 0, "has_critical": false, "has_warning": false, "active_alarms": []})
    );
    for part in ["kpi_tracking", "performance_tracking", "risk_monitoring"] {
        assert!(overview["system_health"][part].is_string(), "{overview}");
    }
    let empty_month = data(&get("/api/v1/dashboard/monthly-report/2030/1").await);
    assert_eq!(
        empty_month,
        json!({"year": 2030, "month": 1, "error": "No data available for this month"})
    );
    let investor = data(&get("/api/v1/dashboard/investor-summary").await);
    for field in INVESTOR {
        assert!(investor.get(field).is_some(), "{field}: {investor}");
    }
    // The account's initial capital, as the platform's balance shows it.
    let mut checks = Checks::default();
    checks.near(
        "investor initial_capital",
        &investor["initial_capital"],
        10000.0,
    );
    checks.eq("investor total_trades", &investor["total_trades"], json!(0));
    checks.eq(
        "investor active_strategies",
        &investor["active_strategies"],
        json!(0),
    );
    checks.eq(
        "investor drawdown window",
        &json!([
            &investor["max_drawdown_start"],
            &investor["max_drawdown_end"]
        ]),
        json!([null, null]),
    );
    checks.eq(
        "investor current_regime",
        &investor["current_regime"],
        json!("ranging"),
    );
    checks.eq(
        "investor strategy_performance",
        &investor["strategy_performance"],
        json!({}),
    );
    let score = num(&investor["diversification_score"]);
    assert!((0.0..=100.0).contains(&score), "{investor}");
    assert_utc(&investor["reporting_date"]);
    checks.done();
}

#[tokio::test]
async fn parameters_and_snapshots_are_validated() {
    let server = quiet_server().await;
    let (_, token) = server.user(&email("e-invalid")).await;
    for path in [
        "/api/kpi/history?hours=abc",
        "/api/kpi/history?hours=0",
        "/api/kpi/history?hours=-3",
        "/api/kpi/history?hours=1.5",
        "/api/v1/dashboard/monthly-report/2026/13",
        "/api/v1/dashboard/monthly-report/2026/0",
        "/api/v1/dashboard/monthly-report/1999/6",
        "/api/v1/dashboard/monthly-report/2101/1",
    ] {
        let refused = server.get(path, Some(&token)).await;
        assert_eq!(refused.status, 400, "{path}: {}", refused.text);
        assert_failure(&refused, 400);
    }
    for path in [
        "/api/kpi/history?hours=1",
        "/api/v1/dashboard/equity-curve?days=0",
        "/api/v1/dashboard/drawdown-curve?days=30",
    ] {
        data(&server.get(path, Some(&token)).await);
    }
    assert_eq!(
        data(&server.get("/api/kpi/history?hours=1", Some(&token)).await)["period_hours"],
        1
    );

    // Snapshot bodies.
    let required = "Request body is required";
    assert_error(
        &server
            .request(
                Method::POST,
                "/api/v1/dashboard/update-snapshot",
                Some(&token),
                None,
            )
            .await,
        400,
        required,
    );
    assert_error(&record(&server, &token, json!({})).await, 400, required);
    assert_error(
        &server
            .raw(
                Method::POST,
                "/api/v1/dashboard/update-snapshot",
                Some(&token),
                "null",
            )
            .await,
        400,
        required,
    );
    assert_error(
        &record(&server, &token, json!({"cash": 1000})).await,
        400,
        &format!("Missing required fields: {ALL_FIELDS}"),
    );
    assert_error(
        &record(
            &server,
            &token,
            json!({"total_trades": 0, "cash": 1, "unrealized_pnl": 0}),
        )
        .await,
        400,
        "Missing required fields: positions_value, realized_pnl_today, winning_trades, losing_trades",
    );
    for (field, bad) in [
        ("cash", json!("abc")),
        ("positions_value", json!(null)),
        ("unrealized_pnl", json!([1])),
        ("total_trades", json!(-1)),
        ("winning_trades", json!(1.5)),
        ("losing_trades", json!("2")),
    ] {
        let mut body = snapshot(1000.0, 0.0);
        body[field] = bad.clone();
        let refused = record(&server, &token, body).await;
        assert_eq!(refused.status, 400, "{field} = {bad}: {}", refused.text);
        assert_failure(&refused, 400);
    }
    // Nothing was recorded.
    assert_eq!(
        data(
            &server
                .get("/api/v1/dashboard/equity-curve", Some(&token))
                .await
        ),
        json!([])
    );
}

#[tokio::test]
async fn manual_snapshots_feed_the_curves_metrics_and_reports() {
    let server = quiet_server().await;
    let (user_id, token) = server.user(&email("e-snapshots")).await;
    // 11000, a dip to 9900 (10 % below the peak), and back to 10450 (5 % below).
    for (cash, positions) in [(10000.0, 1000.0), (8900.0, 1000.0), (9450.0, 1000.0)] {
        let recorded = record(&server, &token, snapshot(cash, positions)).await;
        let body = data(&recorded);
        assert_eq!(recorded.json["message"], "Snapshot updated successfully");
        assert!(body.is_object(), "{}", recorded.text);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let curve = data(
        &server
            .get("/api/v1/dashboard/equity-curve", Some(&token))
            .await,
    );
    let points = curve.as_array().unwrap();
    let equity: Vec<f64> = points.iter().map(|p| num(&p["equity"])).collect();
    assert_eq!(equity, [11000.0, 9900.0, 10450.0]);
    for point in points {
        assert_utc(&point["timestamp"]);
    }
    assert!(
        points
            .windows(2)
            .all(|w| millis(&w[0]["timestamp"]) <= millis(&w[1]["timestamp"]))
    );
    assert_eq!(
        data(
            &server
                .get("/api/v1/dashboard/equity-curve?days=1", Some(&token))
                .await
        ),
        curve
    );
    // Anything but a positive whole number of days means all data, never an error.
    for days in ["abc", "1.5", "-1", "", "0"] {
        for route in ["equity-curve", "drawdown-curve"] {
            let path = format!("/api/v1/dashboard/{route}?days={days}");
            let all = data(&server.get(&path, Some(&token)).await);
            assert_eq!(all.as_array().map(Vec::len), Some(3), "{path}: {all}");
        }
    }
    let drawdowns = data(
        &server
            .get("/api/v1/dashboard/drawdown-curve?days=0", Some(&token))
            .await,
    );
    let drawdowns: Vec<f64> = drawdowns
        .as_array()
        .unwrap()
        .iter()
        .map(|p| num(&p["drawdown_pct"]))
        .collect();
    assert_eq!(drawdowns.len(), 3);
    for (got, want) in drawdowns.iter().zip([0.0, 10.0, 5.0]) {
        assert!((got - want).abs() < 1e-9, "{drawdowns:?}");
    }

    let mut checks = Checks::default();
    let metrics = data(&server.get("/api/v1/dashboard/metrics", Some(&token)).await);
    assert_figures(&metrics, &METRICS);
    // Against the account's initial capital of 10000.
    checks.near(
        "metrics total_return_pct",
        &metrics["total_return_pct"],
        4.5,
    );
    checks.near(
        "metrics max_drawdown_pct",
        &metrics["max_drawdown_pct"],
        10.0,
    );
    checks.near(
        "metrics current_drawdown_pct",
        &metrics["current_drawdown_pct"],
        5.0,
    );
    checks.eq("metrics total_trades", &metrics["total_trades"], json!(0));

    let now = chrono::Utc::now();
    let (year, month) = (now.year(), now.month());
    let report = data(
        &server
            .get(
                &format!("/api/v1/dashboard/monthly-report/{year}/{month}"),
                Some(&token),
            )
            .await,
    );
    assert_figures(&report, &MONTHLY);
    checks.eq("report year", &report["year"], json!(year));
    checks.eq("report month", &report["month"], json!(month));
    checks.near("report start_equity", &report["start_equity"], 11000.0);
    checks.near("report end_equity", &report["end_equity"], 10450.0);
    checks.near(
        "report monthly_return_pct",
        &report["monthly_return_pct"],
        -5.0,
    );
    checks.near("report max_drawdown_pct", &report["max_drawdown_pct"], 10.0);
    let reports = data(
        &server
            .get("/api/v1/dashboard/monthly-reports", Some(&token))
            .await,
    );
    checks.eq("monthly-reports", &reports, json!([report]));

    let investor = data(
        &server
            .get("/api/v1/dashboard/investor-summary", Some(&token))
            .await,
    );
    checks.eq("investor user_id", &investor["user_id"], json!(user_id));
    checks.near(
        "investor initial_capital",
        &investor["initial_capital"],
        10000.0,
    );
    checks.near(
        "investor max_drawdown_pct",
        &investor["max_drawdown_pct"],
        10.0,
    );
    // From the 11000 peak (the first snapshot) to the 9900 trough (the second).
    checks.eq(
        "investor max_drawdown_start",
        &investor["max_drawdown_start"],
        points[0]["timestamp"].clone(),
    );
    checks.eq(
        "investor max_drawdown_end",
        &investor["max_drawdown_end"],
        points[1]["timestamp"].clone(),
    );
    checks.near(
        "investor total_return_usd",
        &investor["total_return_usd"],
        num(&investor["current_equity"]) - num(&investor["initial_capital"]),
    );
    checks.near(
        "investor current_nav",
        &investor["current_nav"],
        num(&investor["current_equity"]),
    );
    checks.done();

    // Another user sees none of it.
    let (_, other) = server.user(&email("e-other")).await;
    for path in [
        "/api/v1/dashboard/equity-curve",
        "/api/v1/dashboard/drawdown-curve",
        "/api/v1/dashboard/monthly-reports",
    ] {
        assert_eq!(
            data(&server.get(path, Some(&other)).await),
            json!([]),
            "{path}"
        );
    }
    assert_eq!(
        data(&server.get("/api/v1/dashboard/metrics", Some(&other)).await)["max_drawdown_pct"]
            .as_f64(),
        Some(0.0)
    );
}

#[tokio::test]
async fn the_tracker_snapshots_trading_accounts() {
    let server = tracking_server().await;
    let admin = server.admin_token().await;
    // The default strategy never signals (its slow EMA needs more candles than a scan reads).
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&admin),
            json!({"config": {"fast_period": "2", "slow_period": "500"}}),
        )
        .await
        .expect(200);
    let (_, token) = server.user(&email("f-tracked")).await;
    let key = webhook_key(&server, &token).await;
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
    let bought = server
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": key, "symbol": "ETH-USD", "action": "buy", "size_usd": 300}),
        )
        .await;
    let position = bought.data()["trade_id"].as_str().unwrap().to_string();
    server
        .wait_for(&token, "/api/v1/account/positions", 20, |d| {
            d["positions"][0]["position_id"] == position.as_str()
        })
        .await;
    // While the bot runs, history grows by a snapshot a second, oldest first.
    let first = poll(&server, &token, "/api/kpi/history", 20, |d| {
        num(&d["data_points"]) >= 1.0
    })
    .await;
    let points = num(&first["data_points"]) as usize;
    let grown = poll(&server, &token, "/api/kpi/history?hours=24", 20, |d| {
        num(&d["data_points"]) as usize >= points + 2
    })
    .await;
    assert_eq!(grown["period_hours"], 24);
    let history = grown["history"].as_array().unwrap();
    assert_eq!(history.len(), num(&grown["data_points"]) as usize);
    assert!(
        history
            .windows(2)
            .all(|w| millis(&w[0]["timestamp"]) < millis(&w[1]["timestamp"])),
        "not oldest first"
    );
    for snapshot in history {
        assert_figures(snapshot, &KPI);
    }

    let status = poll(&server, &token, "/api/performance/status", 20, |d| {
        d["report_count"].as_u64().unwrap_or(0) >= 1
    })
    .await;
    assert_eq!(status["update_interval"].as_f64(), Some(1.0), "{status}");
    assert_eq!(status["report_interval"].as_f64(), Some(2.0), "{status}");
    assert_eq!(status["running"], true);
    assert_eq!(status["paused"], false);
    assert!(status["update_count"].as_u64().unwrap() >= points as u64 + 2);
    assert_utc(&status["last_update"]);
    assert_utc(&status["last_report"]);

    // Stopped with the position open, the account holds still.
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": false}),
        )
        .await
        .expect(200);
    let stopped_at = chrono::Utc::now().timestamp_millis();

    let current = poll(&server, &token, "/api/kpi/current", 20, |d| {
        millis(&d["timestamp"]) > stopped_at
    })
    .await;
    assert_utc(&current["timestamp"]);
    assert_figures(&current, &KPI);
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    let b = balance.data();
    assert!(
        near(num(&current["account_value"]), num(&b["equity"])),
        "{current} vs {b}"
    );
    assert_ne!(num(&b["equity"]), 10000.0, "the position moved nothing");
    assert!(near(num(&current["cash_balance"]), num(&b["cash"])));
    assert!(near(
        num(&current["unrealized_pnl"]),
        num(&b["unrealized_pnl"])
    ));
    assert_eq!(current["active_positions"], 1);
    assert_eq!(current["total_trades"], 0);
    assert!(num(&current["total_exposure_pct"]) > 0.0, "{current}");

    let summary = data(&server.get("/api/kpi/summary", Some(&token)).await);
    assert_eq!(summary["status"], "active");
    assert_utc(&summary["timestamp"]);
    assert_figures(
        &summary["returns"],
        &["total", "daily", "weekly", "monthly"],
    );
    assert_figures(
        &summary["risk_metrics"],
        &[
            "sharpe_ratio",
            "sortino_ratio",
            "max_drawdown",
            "current_drawdown",
        ],
    );
    assert_figures(
        &summary["trade_stats"],
        &[
            "total_trades",
            "winning_trades",
            "losing_trades",
            "win_rate",
            "profit_factor",
            "avg_win",
            "avg_loss",
        ],
    );
    assert_figures(
        &summary["position_metrics"],
        &["active_positions", "total_exposure"],
    );
    assert_figures(
        &summary["account"],
        &["value", "cash", "unrealized_pnl", "realized_pnl"],
    );
    assert_eq!(summary["position_metrics"]["active_positions"], 1);
    assert!(near(num(&summary["account"]["value"]), num(&b["equity"])));
    assert!(near(num(&summary["account"]["cash"]), num(&b["cash"])));

    // Nobody else's snapshots: a bystander has none, or only their own empty account's.
    let (_, other) = server.user(&email("f-bystander")).await;
    let theirs = server.get("/api/kpi/current", Some(&other)).await;
    if theirs.status == 200 {
        assert_eq!(data(&theirs)["active_positions"], 0, "{}", theirs.text);
    } else {
        assert_error(&theirs, 404, "No KPI data available");
    }
    let history = data(&server.get("/api/kpi/history", Some(&other)).await);
    assert!(
        history["history"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["active_positions"] == 0),
        "{history}"
    );

    // The tracker's snapshots are the dashboard's.
    let curve = data(
        &server
            .get("/api/v1/dashboard/equity-curve", Some(&token))
            .await,
    );
    let last = curve.as_array().unwrap().last().cloned().unwrap();
    assert!(near(num(&last["equity"]), num(&b["equity"])), "{last}");
    let overview = data(&server.get("/api/dashboard/overview", Some(&token)).await);
    assert_eq!(overview["kpi"]["status"], "active");
    assert_eq!(
        overview["performance_tracking"]["update_interval"].as_f64(),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_stopped_account_is_snapshotted_once_more_then_left_alone() {
    // docs/companion.md: a stopped bot's account is snapshotted once after it stops, with the
    // figures the platform reports, and then no more (they no longer move).
    let server = tracking_server().await;
    let (_, token) = server.user(&email("f-stopped")).await;
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
        .post("/api/v1/trading/stop", Some(&token), json!({}))
        .await
        .expect(200);
    let stopped_at = chrono::Utc::now().timestamp_millis();
    let current = poll(&server, &token, "/api/kpi/current", 20, |d| {
        millis(&d["timestamp"]) > stopped_at
    })
    .await;
    let balance = server.get("/api/v1/account/balance", Some(&token)).await;
    assert!(
        (num(&current["account_value"]) - num(&balance.data()["equity"])).abs() < 0.006,
        "{current} vs {}",
        balance.text
    );
    let points = num(&data(&server.get("/api/kpi/history", Some(&token)).await)["data_points"]);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let later = num(&data(&server.get("/api/kpi/history", Some(&token)).await)["data_points"]);
    assert_eq!(later, points, "a stopped account keeps being snapshotted");
}

#[tokio::test]
async fn alarms_fire_and_clear_with_the_users_thresholds() {
    let server = tracking_server().await;
    let (_, token) = server.user(&email("f-alarms")).await;
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
    let balance_low = |d: &Value| {
        d["alarms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["alarm_type"] == "ACCOUNT_BALANCE_LOW")
    };
    let active = data(&server.get("/api/alarms/active", Some(&token)).await);
    assert!(!balance_low(&active), "{active}");

    // A warning threshold far above the account trips the balance alarm.
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"risk_thresholds": {"warning_account_balance": 1000000}}),
        )
        .await
        .expect(200);
    let active = poll(&server, &token, "/api/alarms/active", 20, balance_low).await;
    let alarms = active["alarms"].as_array().unwrap().clone();
    assert_eq!(active["count"].as_u64().unwrap() as usize, alarms.len());
    let alarm = alarms
        .iter()
        .find(|a| a["alarm_type"] == "ACCOUNT_BALANCE_LOW")
        .unwrap()
        .clone();
    assert!(alarm["alarm_id"].as_str().is_some_and(|id| !id.is_empty()));
    assert_utc(&alarm["timestamp"]);
    assert_eq!(alarm["level"], "WARNING");
    assert_eq!(alarm["status"], "active");
    assert!(alarm["cleared_at"].is_null(), "{alarm}");
    assert_eq!(num(&alarm["threshold_value"]), 1000000.0);
    let value = num(&alarm["current_value"]);
    assert!((9000.0..11000.0).contains(&value), "{alarm}");
    assert_eq!(
        alarm["recommended_action"],
        "Reduce position sizes or add funds"
    );
    assert!(alarm["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert!(alarm["metadata"].is_object(), "{alarm}");
    // A warning does not pause the bot.
    assert_eq!(
        server
            .get("/api/v1/trading/status", Some(&token))
            .await
            .data()["status"],
        "running"
    );

    let overview = data(&server.get("/api/dashboard/overview", Some(&token)).await);
    let risk = &overview["risk_alarms"];
    let listed = risk["active_alarms"].as_array().unwrap();
    assert_eq!(
        risk["active_count"].as_u64().unwrap() as usize,
        listed.len()
    );
    assert!(listed.iter().any(|a| a["alarm_id"] == alarm["alarm_id"]));
    assert_eq!(risk["has_warning"], has_level(listed, &["WARNING"]));
    assert_eq!(risk["has_warning"], true);
    assert_eq!(
        risk["has_critical"],
        has_level(listed, &["CRITICAL", "EMERGENCY"])
    );
    // Nobody else's alarms.
    let (_, other) = server.user(&email("f-bystander")).await;
    assert_eq!(
        data(&server.get("/api/alarms/active", Some(&other)).await),
        json!({"alarms": [], "count": 0})
    );
    assert_eq!(
        data(&server.get("/api/alarms/history", Some(&other)).await)["count"],
        0
    );
    let theirs = data(&server.get("/api/dashboard/overview", Some(&other)).await);
    assert_eq!(theirs["risk_alarms"]["active_count"], 0);
    let history = data(
        &server
            .get("/api/alarms/history?hours=1", Some(&token))
            .await,
    );
    assert_eq!(history["period_hours"], 1);
    assert!(
        history["alarms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["alarm_id"] == alarm["alarm_id"]),
        "{history}"
    );

    // Back to the default: the condition clears, and so does the alarm.
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"risk_thresholds": {"warning_account_balance": 500}}),
        )
        .await
        .expect(200);
    poll(&server, &token, "/api/alarms/active", 20, |d| {
        !balance_low(d)
    })
    .await;
    let history = data(&server.get("/api/alarms/history", Some(&token)).await);
    assert_eq!(
        history["count"].as_u64().unwrap() as usize,
        history["alarms"].as_array().unwrap().len()
    );
    let cleared = history["alarms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["alarm_id"] == alarm["alarm_id"])
        .cloned()
        .unwrap_or_else(|| panic!("the alarm left the history: {history}"));
    assert_eq!(cleared["status"], "cleared");
    assert_utc(&cleared["cleared_at"]);
    let overview = data(&server.get("/api/dashboard/overview", Some(&token)).await);
    let listed = overview["risk_alarms"]["active_alarms"].as_array().unwrap();
    assert_eq!(
        overview["risk_alarms"]["has_warning"],
        has_level(listed, &["WARNING"])
    );
    assert!(!listed.iter().any(|a| a["alarm_id"] == alarm["alarm_id"]));
}

#[tokio::test]
async fn routes_need_a_token_and_keep_to_their_sets_errors() {
    let server = quiet_server().await;
    let (_, token) = server.user(&email("f-tokens")).await;
    let routes = [
        (Method::GET, "/api/v1/dashboard/metrics"),
        (Method::GET, "/api/v1/dashboard/equity-curve"),
        (Method::GET, "/api/v1/dashboard/drawdown-curve"),
        (Method::POST, "/api/v1/dashboard/update-snapshot"),
        (Method::GET, "/api/v1/dashboard/investor-summary"),
        (Method::GET, "/api/v1/dashboard/monthly-report/2026/1"),
        (Method::GET, "/api/v1/dashboard/monthly-reports"),
        (Method::GET, "/api/kpi/current"),
        (Method::GET, "/api/kpi/history"),
        (Method::GET, "/api/kpi/summary"),
        (Method::GET, "/api/performance/status"),
        (Method::GET, "/api/alarms/active"),
        (Method::GET, "/api/alarms/history"),
        (Method::GET, "/api/dashboard/overview"),
    ];
    for (method, path) in &routes {
        for bearer in [None, Some("not-a-token")] {
            let refused = server
                .request(method.clone(), path, bearer, Some(snapshot(1.0, 0.0)))
                .await;
            assert_eq!(refused.status, 401, "{method} {path}: {}", refused.text);
            assert_failure(&refused, 401);
        }
    }
    let health = server.get("/api/health", None).await;
    health.expect(200);
    assert_eq!(health.json["success"], true);
    assert_eq!(health.json["status"], "healthy");
    assert_eq!(health.json["service"], "tradehost");
    assert_utc(&health.json["timestamp"]);

    // Unknown paths and wrong methods answer in the set's own error body.
    for path in ["/api/kpi/nothing", "/api/v1/dashboard/nothing"] {
        let missing = server.get(path, Some(&token)).await;
        assert_eq!(missing.status, 404, "{path}: {}", missing.text);
        assert_failure(&missing, 404);
    }
    for (method, path) in [
        (Method::PUT, "/api/kpi/current"),
        (Method::GET, "/api/v1/dashboard/update-snapshot"),
        (Method::POST, "/api/alarms/active"),
    ] {
        let wrong = server
            .request(method.clone(), path, Some(&token), Some(json!({})))
            .await;
        assert_eq!(wrong.status, 405, "{method} {path}: {}", wrong.text);
        assert_failure(&wrong, 405);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn the_sets_can_also_be_served_on_their_own_ports() {
    let (dashboard_port, companion_port) = (free_port(), free_port());
    let server = Server::options()
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .env("TRADEHOST_DASHBOARD_PORT", dashboard_port.to_string())
        .env("TRADEHOST_COMPANION_PORT", companion_port.to_string())
        .start()
        .await;
    let (_, token) = server.user(&email("ports")).await;
    let dashboard = format!("http://127.0.0.1:{dashboard_port}");
    let companion = format!("http://127.0.0.1:{companion_port}");
    let get = |base: &str, path: &str, bearer: bool| {
        let mut request = server.http.get(format!("{base}{path}"));
        if bearer {
            request = request.bearer_auth(&token);
        }
        async move {
            match request.send().await {
                Ok(response) => Some(Reply::from(response).await),
                Err(_) => None,
            }
        }
    };
    // The extra listeners come up with the server.
    let deadline = Instant::now() + Duration::from_secs(20);
    for base in [&dashboard, &companion] {
        while get(base, "/api/health", false).await.is_none() {
            assert!(Instant::now() < deadline, "nothing listens on {base}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    let metrics = get(&dashboard, "/api/v1/dashboard/metrics", true)
        .await
        .unwrap();
    data(&metrics);
    let health = get(&dashboard, "/health", false).await.unwrap();
    health.expect(200);
    assert_eq!(health.json["status"], "healthy");

    let statistics = get(&companion, "/api/trades/statistics", true)
        .await
        .unwrap();
    statistics.expect(200);
    assert_eq!(statistics.json["statistics"]["total_trades"], 0);
    let kpi = get(&companion, "/api/kpi/current", true).await.unwrap();
    assert_error(&kpi, 404, "No KPI data available");
    let page = get(&companion, "/trades", false).await.unwrap();
    page.expect(200);
    assert!(
        page.header("content-type")
            .is_some_and(|c| c.starts_with("text/html"))
    );

    // Each extra port serves its own sets only.
    let other = get(&dashboard, "/api/trades/statistics", true)
        .await
        .unwrap();
    assert_eq!(other.status, 404, "{}", other.text);
    let other = get(&companion, "/api/v1/dashboard/metrics", true)
        .await
        .unwrap();
    assert_eq!(other.status, 404, "{}", other.text);

    // The main port still serves everything.
    data(&server.get("/api/v1/dashboard/metrics", Some(&token)).await);
    server
        .get("/api/trades/statistics", Some(&token))
        .await
        .expect(200);
    let page = server.get("/trades", None).await;
    page.expect(200);
    data(&server.get("/api/v1/account/balance", Some(&token)).await);
}

#[tokio::test]
async fn timestamps_carry_milliseconds() {
    let server = quiet_server().await;
    let (_, token) = server.user(&email("e-micros")).await;
    data(&record(&server, &token, snapshot(10000.0, 0.0)).await);
    let curve = data(
        &server
            .get("/api/v1/dashboard/drawdown-curve", Some(&token))
            .await,
    );
    let equity = data(
        &server
            .get("/api/v1/dashboard/equity-curve", Some(&token))
            .await,
    );
    let investor = data(
        &server
            .get("/api/v1/dashboard/investor-summary", Some(&token))
            .await,
    );
    let overview = data(&server.get("/api/dashboard/overview", Some(&token)).await);
    let health = server.get("/api/health", None).await.json;
    assert_millis(&[
        ("equity-curve timestamp", &equity[0]["timestamp"]),
        ("drawdown-curve timestamp", &curve[0]["timestamp"]),
        ("investor reporting_date", &investor["reporting_date"]),
        ("overview timestamp", &overview["timestamp"]),
        ("/api/health timestamp", &health["timestamp"]),
    ]);
}
