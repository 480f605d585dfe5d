//! Several instances on one database and one Redis: what happens on one reaches the others at
//! once (events for a user's sockets, sign-outs, the kill switch).

use std::time::{Duration, Instant};

use serde_json::json;
use tradehost_blackbox::companion::{quiet_strategy, webhook_key};
use tradehost_blackbox::redis::OwnRedis;
use tradehost_blackbox::{Server, email, next_event, plugin_upload};

const SCRAPE: &str = "scrape-token-for-the-cluster";

/// Two instances of one deployment on `redis`, each subscribed to the other.
async fn two_instances(redis: &OwnRedis) -> (Server, Server) {
    two_instances_with(redis, &[]).await
}

/// [`two_instances`] with settings of the test's own.
async fn two_instances_with(redis: &OwnRedis, settings: &[(&str, &str)]) -> (Server, Server) {
    let mut options = Server::options();
    for (name, value) in settings {
        options = options.env(name, *value);
    }
    let one = options
        .env("REDIS_URL", redis.url())
        .env("TRADEHOST_METRICS_TOKEN", SCRAPE)
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .env("TRADEHOST_INSTANCE_ID", "one")
        .start()
        .await;
    let two = one
        .another_instance(&[("TRADEHOST_INSTANCE_ID", "two")])
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for server in [&one, &two] {
        while server
            .metric(SCRAPE, "tradehost_cluster_bus_subscribed")
            .await
            != 1.0
        {
            assert!(Instant::now() < deadline, "{}", server.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    (one, two)
}

/// A user's socket is on instance two; their bot runs on instance three, started after the
/// socket opened (it asks the others which users they have sockets for when it joins). The socket
/// gets the bot's status and its trade as they happen.
#[tokio::test]
async fn a_socket_gets_its_users_events_from_the_instance_that_trades() {
    let redis = OwnRedis::start().unwrap();
    let (one, two) = two_instances(&redis).await;
    quiet_strategy(&one).await;
    let (_, token) = one.user(&email("events")).await;
    let key = webhook_key(&one, &token).await;
    let mut socket = two.socket(&token, &["trades", "bot_status"]).await;
    let three = one
        .another_instance(&[("TRADEHOST_INSTANCE_ID", "three")])
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    // Instance two's answer (the only instance with a socket) is what three hears first.
    while three
        .metric(
            SCRAPE,
            "tradehost_cluster_messages_total{direction=\"received\"}",
        )
        .await
        < 1.0
    {
        assert!(Instant::now() < deadline, "{}", three.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    three.start_paper_bot(&token).await;
    let status = next_event(&mut socket, "bot_status", 20).await;
    assert_eq!(status["channel"], "bot_status", "{status}");
    let signal = one
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": key, "symbol": "ETH-USD", "action": "buy", "size_usd": 200}),
        )
        .await;
    signal.expect(200);
    let trade = next_event(&mut socket, "trade_executed", 20).await;
    assert_eq!(trade["data"]["symbol"], "ETH-USD", "{trade}");
    assert_eq!(
        trade["data"]["trade_id"],
        signal.data()["trade_id"],
        "{trade}"
    );
    assert!(
        two.metric(
            SCRAPE,
            "tradehost_cluster_messages_total{direction=\"received\"}"
        )
        .await
            >= 2.0
    );
}

/// A token checked (and cached) on instance two is refused there as soon as its session is
/// signed out on instance one, not after the session cache's time-to-live.
#[tokio::test]
async fn a_sign_out_on_one_instance_refuses_the_token_on_the_other_at_once() {
    let redis = OwnRedis::start().unwrap();
    let (one, two) = two_instances(&redis).await;
    let (_, token) = one.user(&email("signout")).await;
    two.get("/api/v1/auth/me", Some(&token)).await.expect(200);
    one.post("/api/v1/auth/logout", Some(&token), json!({}))
        .await
        .expect(200);
    let deadline = Instant::now() + Duration::from_millis(1_000);
    loop {
        let reply = two.get("/api/v1/auth/me", Some(&token)).await;
        if reply.status == 401 {
            break;
        }
        reply.expect(200);
        assert!(
            Instant::now() < deadline,
            "the token still works on instance two"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The kill switch, switched on instance one, stops the bots instance two scans within a second:
/// instance two stops and saves them, and instance one's answer counts them without taking them
/// over. Leases live a minute here, so that sharing the bots out (a round every quarter of that)
/// moves none to instance one during the test.
#[tokio::test]
async fn the_kill_switch_stops_bots_on_every_instance_within_a_second() {
    let redis = OwnRedis::start().unwrap();
    let (one, two) = two_instances_with(&redis, &[("TRADEHOST_BOT_LEASE_TTL", "60")]).await;
    quiet_strategy(&one).await;
    let mut tokens = Vec::new();
    for n in 0..4 {
        let (_, token) = two.user(&email(&format!("halted{n}"))).await;
        two.start_paper_bot(&token).await;
        tokens.push(token);
    }
    let token = &tokens[0];
    let admin = one.admin_token().await;
    let switched = Instant::now();
    let answer = one
        .post(
            "/api/v1/admin/kill-switch",
            Some(&admin),
            json!({"reason": "drill", "notify_users": false}),
        )
        .await;
    answer.expect(200);
    assert_eq!(answer.data()["affected_users"], 4, "{:?}", answer.data());
    assert_eq!(
        one.count("SELECT COUNT(*) FROM bot_leases WHERE instance = 'one'")
            .await,
        0,
        "the switching instance took bots over"
    );
    for token in &tokens {
        let status = one.get("/api/v1/trading/status", Some(token)).await;
        assert_eq!(status.data()["status"], "stopped");
    }
    loop {
        let status = two.get("/api/v1/trading/status", Some(token)).await;
        if status.data()["status"] == "stopped" {
            break;
        }
        assert!(
            switched.elapsed() < Duration::from_secs(1),
            "still {} on instance two",
            status.data()["status"]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Starting again on instance two is refused at once too.
    two.post(
        "/api/v1/trading/start",
        Some(token),
        json!({"broker": "paper", "paper_trading": true}),
    )
    .await
    .expect_error(403, "KILL_SWITCH_ACTIVE");
}

/// Polls instance `server`'s view of the risk-guards plugin until `check` passes (5 s at most).
async fn wait_for_risk_guards(
    server: &Server,
    admin: &str,
    what: &str,
    check: fn(&serde_json::Value) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let detail = server
            .get("/api/v1/admin/plugins/risk-guards", Some(admin))
            .await;
        detail.expect(200);
        if check(detail.data()) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {}\n{}",
            detail.data(),
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A plugin version uploaded through instance one is loaded by instance two from the database;
/// activated there, instance two's calls run it; rolled back, they run the old one again.
#[tokio::test]
async fn a_plugin_uploaded_and_activated_on_one_instance_runs_on_the_other() {
    let redis = OwnRedis::start().unwrap();
    let (one, two) = two_instances(&redis).await;
    let admin = one.admin_token().await;
    one.post(
        "/api/v1/admin/plugins",
        Some(&admin),
        plugin_upload("testing/risk-guards-strict", "risk-guards-strict"),
    )
    .await
    .expect(200);
    wait_for_risk_guards(&two, &admin, "the upload reaches instance two", |d| {
        d["versions"].as_array().unwrap().len() == 2 && d["active_version"] == "0.1.0"
    })
    .await;
    one.post(
        "/api/v1/admin/plugins/risk-guards/activate",
        Some(&admin),
        json!({"version": "0.2.0"}),
    )
    .await
    .expect(200);
    wait_for_risk_guards(&two, &admin, "the activation reaches instance two", |d| {
        d["active_version"] == "0.2.0" && d["live"]["version"] == "0.2.0"
    })
    .await;
    one.post(
        "/api/v1/admin/plugins/risk-guards/rollback",
        Some(&admin),
        json!({}),
    )
    .await
    .expect(200);
    wait_for_risk_guards(&two, &admin, "the rollback reaches instance two", |d| {
        d["active_version"] == "0.1.0" && d["live"]["version"] == "0.1.0"
    })
    .await;
}

/// The instance holding the KPI tracker's lease.
async fn kpi_holder(server: &Server) -> Option<String> {
    server
        .scalar("SELECT instance FROM job_leases WHERE job = 'kpi_snapshots'")
        .await
}

/// Jobs that must run once (here the KPI tracker, every 0.5 s) run on the one instance holding
/// their lease; when it dies, the other takes them over once the lease has run out.
#[tokio::test]
async fn a_background_job_runs_on_one_instance_and_moves_when_it_dies() {
    let redis = OwnRedis::start().unwrap();
    let (mut one, mut two) =
        two_instances_with(&redis, &[("TRADEHOST_PERF_UPDATE_INTERVAL", "0.5")]).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let holder = loop {
        if let Some(holder) = kpi_holder(&one).await {
            break holder;
        }
        assert!(Instant::now() < deadline, "nobody took the KPI tracker");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        one.count("SELECT COUNT(*) FROM job_leases WHERE job = 'mail'")
            .await,
        1,
        "mail is delivered by one instance"
    );
    let (survivor, survivor_id) = match holder.as_str() {
        "one" => {
            one.kill();
            (&two, "two")
        }
        "two" => {
            two.kill();
            (&one, "one")
        }
        other => panic!("held by {other}"),
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while kpi_holder(survivor).await.as_deref() != Some(survivor_id) {
        assert!(
            Instant::now() < deadline,
            "the KPI tracker did not move to {survivor_id}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Mail queued through the instance that does not deliver mail is sent at once: the holder of
/// the mail job hears of it through the bus rather than at its next round (every 30 s).
#[tokio::test]
async fn mail_queued_on_one_instance_is_sent_at_once_by_the_other() {
    let redis = OwnRedis::start().unwrap();
    let (one, two) = two_instances(&redis).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let holder = loop {
        if let Some(holder) = one
            .scalar("SELECT instance FROM job_leases WHERE job = 'mail'")
            .await
        {
            break holder;
        }
        assert!(Instant::now() < deadline, "nobody took the mail job");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let queuing = if holder == "one" { &two } else { &one };
    let address = email("mailwake");
    queuing.register(&address).await;
    queuing.ask_password_reset(&address).await.expect(200);
    // Without an SMTP server the reset mail (it carries a secret) is held, which is an attempt.
    let attempted = format!(
        "SELECT COUNT(*) FROM mail_outbox WHERE to_address = '{address}' \
         AND kind = 'password_reset' AND attempts > 0"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while queuing.count(&attempted).await != 1 {
        assert!(
            Instant::now() < deadline,
            "the reset mail queued on the instance without the mail job waited"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// An export made through instance one downloads through instance two: its bytes are kept in the
/// database, not on the exporting instance's disk.
#[tokio::test]
async fn an_export_made_on_one_instance_downloads_from_the_other() {
    let redis = OwnRedis::start().unwrap();
    let (one, two) = two_instances(&redis).await;
    let (_, token) = one.user(&email("export")).await;
    let export = one
        .post(
            "/api/v1/analytics/export",
            Some(&token),
            json!({"format": "csv", "data_type": "trades"}),
        )
        .await;
    export.expect(200);
    let url = export.data()["download_url"].as_str().unwrap().to_string();
    let exports = one.data_dir().join("exports");
    assert!(
        !exports.exists() || std::fs::read_dir(&exports).unwrap().next().is_none(),
        "nothing is written to one instance's disk"
    );
    let download = reqwest::get(two.url(&url)).await.unwrap();
    assert_eq!(download.status(), 200);
    let text = download.text().await.unwrap();
    assert_eq!(
        text.len() as u64,
        export.data()["file_size_bytes"].as_u64().unwrap()
    );
    assert!(text.starts_with("trade_id,"), "{text}");
}
