//! Notifications: mail as the settings say, and signed posts to users' own webhooks, retried
//! from a durable queue.

use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use tradehost_blackbox::companion::{quiet_strategy, trade_once_and_hold, webhook_key};
use tradehost_blackbox::receiver::{Received, Receiver};
use tradehost_blackbox::{Server, email};

/// A server whose users may point webhooks at this machine (the receiver), retrying fast.
async fn server() -> Server {
    Server::options()
        .env("TRADEHOST_NOTIFY_ALLOW_PRIVATE_NETWORK", "true")
        .env("TRADEHOST_NOTIFY_RETRY_BASE_MS", "200")
        .env("TRADEHOST_SCAN_INTERVAL", "0.2")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await
}

fn verify(secret: &str, received: &Received) {
    let timestamp = received.header("x-tradehost-timestamp");
    let age = chrono::Utc::now().timestamp() - timestamp.parse::<i64>().unwrap();
    assert!((0..120).contains(&age), "timestamp {timestamp}");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(&received.body);
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(received.header("x-tradehost-signature"), expected);
}

async fn mail_count(server: &Server, to: &str, kind: &str) -> i64 {
    server
        .count(&format!(
            "SELECT COUNT(*) FROM mail_outbox WHERE to_address = '{to}' AND kind = 'notification:{kind}'"
        ))
        .await
}

async fn wait_mail(server: &Server, to: &str, kind: &str, expected: i64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let count = mail_count(server, to, kind).await;
        if count == expected {
            return;
        }
        assert!(
            count < expected && Instant::now() < deadline,
            "{count} mail(s) of {kind} to {to}, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn add_webhook(server: &Server, token: &str, body: Value) -> Value {
    let reply = server
        .post("/api/v1/config/notifications/webhooks", Some(token), body)
        .await;
    reply.expect(201);
    reply.data().clone()
}

#[tokio::test]
async fn trades_reach_mail_and_a_signed_webhook_that_is_retried_until_it_answers() {
    let server = server().await;
    quiet_strategy(&server).await;
    // The receiver fails the first post: it is retried with backoff and delivered.
    let receiver = Receiver::start(&[503]).await;
    let address = email("notified");
    let (_, token) = server.user(&address).await;
    let added = add_webhook(&server, &token, json!({"url": receiver.url})).await;
    let secret = added["secret"]
        .as_str()
        .expect("the first webhook shows the secret");
    assert!(secret.starts_with("whsec_"), "{secret}");
    let webhook_id = added["webhook"]["id"].as_str().unwrap().to_string();
    // The URL shown is its scheme and host only (a chat service's token stays hidden).
    assert_eq!(
        added["webhook"]["url"],
        receiver.url.trim_end_matches("/hook")
    );
    assert_eq!(added["webhook"]["events"].as_array().unwrap().len(), 7);

    let key = webhook_key(&server, &token).await;
    server.start_paper_bot(&token).await;
    trade_once_and_hold(&server, &token, &key).await;

    let closed = receiver
        .wait_for(20, |r| {
            r.answered == 200 && r.header("x-tradehost-event") == "trade_closed"
        })
        .await;
    verify(secret, &closed);
    let event = closed.json();
    assert_eq!(event["type"], "trade_closed");
    assert_eq!(event["data"]["symbol"], "ETH-USD");
    assert_eq!(event["data"]["action"], "closed");
    // Money exactly as booked: decimal text, equal to the trade history's figure.
    let history = server
        .get("/api/v1/account/history?status=closed", Some(&token))
        .await;
    let trade = &history.data()["trades"][0];
    let pnl: f64 = event["data"]["realized_pnl"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (pnl - trade["realized_pnl"].as_f64().unwrap()).abs() < 1e-6,
        "{event} {trade}"
    );
    assert_eq!(event["data"]["trade_id"], trade["trade_id"]);
    let opened = receiver
        .wait_for(20, |r| {
            r.answered == 200
                && r.header("x-tradehost-event") == "trade_opened"
                && r.json()["data"]["symbol"] == "SOL-USD"
        })
        .await;
    verify(secret, &opened);

    // The first post was answered 503 and came again (after its backoff, which may end after
    // the later events were delivered); the deliveries say so.
    let first = &receiver.received()[0];
    assert_eq!(first.answered, 503);
    let first_id = first.header("x-tradehost-delivery").to_string();
    receiver
        .wait_for(20, |r| {
            r.answered == 200 && r.header("x-tradehost-delivery") == first_id
        })
        .await;
    let again: Vec<Received> = receiver
        .received()
        .into_iter()
        .filter(|r| r.header("x-tradehost-delivery") == first.header("x-tradehost-delivery"))
        .collect();
    assert_eq!(again.len(), 2, "the failed post is retried once");
    assert_eq!(again[1].answered, 200);
    assert_eq!(again[0].body, again[1].body);
    // The server records the attempt once the receiver's answer is back.
    let delivered = |d: &Value| d["id"] == first_id.as_str() && d["status"] == "delivered";
    let deliveries = server
        .wait_for(
            &token,
            &format!("/api/v1/config/notifications/webhooks/{webhook_id}/deliveries"),
            10,
            |data| {
                data["deliveries"]
                    .as_array()
                    .is_some_and(|list| list.iter().any(delivered))
            },
        )
        .await;
    let retried = deliveries["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == first_id.as_str())
        .cloned()
        .expect("the retried delivery is listed");
    assert_eq!(retried["status"], "delivered");
    assert_eq!(retried["attempts"], 2);
    assert_eq!(retried["last_http_status"], 200);

    // Mail: one per trade opened (ETH, SOL) and one per trade closed (ETH), as the defaults say.
    wait_mail(&server, &address, "trade_opened", 2).await;
    wait_mail(&server, &address, "trade_closed", 1).await;
    let subject = server
        .scalar(&format!(
            "SELECT subject FROM mail_outbox WHERE to_address = '{address}' AND kind = 'notification:trade_closed'"
        ))
        .await
        .unwrap();
    assert!(
        subject.starts_with("tradehost: Closed long ETH-USD: P&L "),
        "{subject}"
    );
    // Each event was posted once (the retry aside): nothing is dispatched twice.
    let kinds: Vec<String> = receiver
        .received()
        .iter()
        .filter(|r| r.answered == 200)
        .map(|r| r.header("x-tradehost-event").to_string())
        .filter(|k| k.starts_with("trade_"))
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "trade_opened").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "trade_closed").count(),
        1,
        "{kinds:?}"
    );
}

#[tokio::test]
async fn settings_turn_mail_off_and_webhooks_take_only_their_events_in_their_format() {
    let server = server().await;
    quiet_strategy(&server).await;
    let receiver = Receiver::start(&[]).await;
    let address = email("quiet");
    let (_, token) = server.user(&address).await;
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"notifications": {"trade_notifications": false}}),
        )
        .await
        .expect(200);
    let discord = add_webhook(
        &server,
        &token,
        json!({"url": receiver.url, "format": "discord", "events": ["trade_closed"]}),
    )
    .await;
    // The secret is shown with the first webhook only.
    let slack = add_webhook(
        &server,
        &token,
        json!({"url": format!("{}?slack", receiver.url), "format": "slack", "events": ["bot_status"]}),
    )
    .await;
    assert!(discord["secret"].is_string());
    assert!(slack["secret"].is_null());

    let key = webhook_key(&server, &token).await;
    server.start_paper_bot(&token).await;
    trade_once_and_hold(&server, &token, &key).await;
    let closed = receiver
        .wait_for(20, |r| {
            r.path == "/hook" && r.header("x-tradehost-event") == "trade_closed"
        })
        .await;
    let content = closed.json()["content"].as_str().unwrap().to_string();
    assert!(
        content.starts_with("Closed long ETH-USD: P&L "),
        "{content}"
    );
    let status = receiver
        .wait_for(20, |r| {
            r.path == "/hook?slack"
                && r.json()["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Bot running"))
        })
        .await;
    assert!(status.json().get("content").is_none());
    // Only what each subscribed to.
    for received in receiver.received() {
        let event = received.header("x-tradehost-event");
        match received.path.as_str() {
            "/hook" => assert_eq!(event, "trade_closed"),
            _ => assert_eq!(event, "bot_status"),
        }
    }
    // trade_notifications off: no trade mail.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mail_count(&server, &address, "trade_opened").await, 0);
    assert_eq!(mail_count(&server, &address, "trade_closed").await, 0);

    // A test post reaches the one webhook asked for.
    let slack_id = slack["webhook"]["id"].as_str().unwrap();
    server
        .post(
            &format!("/api/v1/config/notifications/webhooks/{slack_id}/test"),
            Some(&token),
            json!({}),
        )
        .await
        .expect(200);
    let test = receiver
        .wait_for(20, |r| r.header("x-tradehost-event") == "test")
        .await;
    assert_eq!(test.path, "/hook?slack");
    assert_eq!(
        receiver
            .received()
            .iter()
            .filter(|r| r.header("x-tradehost-event") == "test")
            .count(),
        1
    );

    // Removed: gone from the list, and another user cannot see or remove the other.
    let (_, other) = server.user(&email("other")).await;
    server
        .request(
            reqwest::Method::DELETE,
            &format!("/api/v1/config/notifications/webhooks/{slack_id}"),
            Some(&other),
            None,
        )
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .request(
            reqwest::Method::DELETE,
            &format!("/api/v1/config/notifications/webhooks/{slack_id}"),
            Some(&token),
            None,
        )
        .await
        .expect(200);
    let list = server
        .get("/api/v1/config/notifications/webhooks", Some(&token))
        .await;
    assert_eq!(list.data()["webhooks"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn webhook_urls_on_private_networks_or_without_tls_are_refused() {
    // The operator has not allowed the private network.
    let server = Server::start().await;
    let (_, token) = server.user(&email("careful")).await;
    for (body, why) in [
        (json!({"url": "http://example.com/hook"}), "https://"),
        (json!({"url": "https://127.0.0.1:9/hook"}), "loopback"),
        (
            json!({"url": "https://169.254.169.254/latest/meta-data"}),
            "link-local",
        ),
        (json!({"url": "https://10.0.0.7/hook"}), "private"),
        (json!({"url": "https://[::1]/hook"}), "loopback"),
        (json!({"url": "https://localhost/hook"}), "localhost"),
        (
            json!({"url": "https://admin:pw@example.com/hook"}),
            "user name",
        ),
        (
            json!({"url": "https://example.com/hook", "format": "telegram"}),
            "chat_id",
        ),
        (
            json!({"url": "https://example.com/hook", "format": "teams"}),
            "format",
        ),
        (
            json!({"url": "https://example.com/hook", "events": ["trades"]}),
            "unknown event",
        ),
        (
            json!({"url": "https://example.com/hook", "secret": "mine"}),
            "secret",
        ),
    ] {
        let reply = server
            .post(
                "/api/v1/config/notifications/webhooks",
                Some(&token),
                body.clone(),
            )
            .await;
        reply.expect_error(400, "INVALID_REQUEST");
        assert!(reply.text.contains(why), "{body}: {}", reply.text);
    }
    let list = server
        .get("/api/v1/config/notifications/webhooks", Some(&token))
        .await;
    assert_eq!(list.data()["webhooks"], json!([]));
    // A public name is taken (it is checked again on every delivery, where it resolves then).
    server
        .post(
            "/api/v1/config/notifications/webhooks",
            Some(&token),
            json!({"url": "https://hooks.example.com/services/T0/B0/x", "format": "slack"}),
        )
        .await
        .expect(201);
    server
        .get("/api/v1/config/notifications/webhooks", None)
        .await
        .expect_error(401, "TOKEN_INVALID");
}

#[tokio::test]
async fn the_kill_switch_mails_users_who_allow_mail_when_the_operator_notifies() {
    let server = server().await;
    let receiver = Receiver::start(&[]).await;
    let admin = server.admin_token().await;
    let (_, told) = server.user(&email("told")).await;
    let told_address = server.get("/api/v1/auth/me", Some(&told)).await.data()["email"]
        .as_str()
        .unwrap()
        .to_string();
    let quiet_address = email("no-mail");
    let (_, quiet) = server.user(&quiet_address).await;
    server
        .put(
            "/api/v1/config/settings",
            Some(&quiet),
            json!({"notifications": {"email_enabled": false}}),
        )
        .await
        .expect(200);
    add_webhook(
        &server,
        &quiet,
        json!({"url": receiver.url, "events": ["kill_switch"]}),
    )
    .await;

    server
        .post(
            "/api/v1/admin/kill-switch",
            Some(&admin),
            json!({"reason": "venue outage", "close_all_positions": false, "notify_users": true}),
        )
        .await
        .expect(200);
    wait_mail(&server, &told_address, "kill_switch", 1).await;
    let body = server
        .scalar(&format!(
            "SELECT body FROM mail_outbox WHERE to_address = '{told_address}' AND kind = 'notification:kill_switch'"
        ))
        .await
        .unwrap();
    assert!(body.contains("Reason: venue outage"), "{body}");
    let posted = receiver
        .wait_for(20, |r| r.header("x-tradehost-event") == "kill_switch")
        .await;
    assert_eq!(posted.json()["data"]["reason"], "venue outage");
    assert_eq!(mail_count(&server, &quiet_address, "kill_switch").await, 0);
}

#[tokio::test]
async fn a_daily_summary_is_made_once_per_day_even_across_restarts() {
    let mut server = server().await;
    let address = email("summarised");
    let (user_id, token) = server.user(&address).await;
    server.start_paper_bot(&token).await;
    // Summaries are made when the server starts and at each UTC midnight: the day before's.
    server.restart().await;
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    wait_mail(&server, &address, "daily_summary", 1).await;
    let subject = server
        .scalar(&format!(
            "SELECT subject FROM mail_outbox WHERE to_address = '{address}' AND kind = 'notification:daily_summary'"
        ))
        .await
        .unwrap();
    assert_eq!(subject, format!("tradehost: Daily summary for {yesterday}"));
    server.restart().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(mail_count(&server, &address, "daily_summary").await, 1);
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM notification_events WHERE user_id = '{user_id}' AND kind = 'daily_summary'"
            ))
            .await,
        1
    );
}

/// Writes that read first (count the webhooks, then add one) beside running bots: on SQLite a
/// transaction that reads and then writes used to fail at once with "database is locked" when a
/// bot committed in between.
#[tokio::test]
async fn webhooks_are_added_beside_running_bots_without_a_locked_database() {
    let server = Server::options()
        .env("TRADEHOST_NOTIFY_ALLOW_PRIVATE_NETWORK", "true")
        .env("TRADEHOST_SCAN_INTERVAL", "0.05")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let mut tokens = Vec::new();
    for name in ["busy-a", "busy-b", "busy-c"] {
        let (_, token) = server.user(&email(name)).await;
        server.start_paper_bot(&token).await;
        tokens.push(token);
    }
    let receiver = Receiver::start(&[]).await;
    let adds = tokens.iter().flat_map(|token| {
        let (server, url) = (&server, receiver.url.as_str());
        (0..MAX_WEBHOOKS).map(move |_| async move {
            let reply = server
                .post(
                    "/api/v1/config/notifications/webhooks",
                    Some(token),
                    json!({"url": url, "events": ["bot_status"]}),
                )
                .await;
            (reply.status.as_u16(), reply.text)
        })
    });
    let answers = futures_util::future::join_all(adds).await;
    for (status, text) in &answers {
        assert_eq!(*status, 201, "{text}");
    }
    for token in &tokens {
        let list = server
            .get("/api/v1/config/notifications/webhooks", Some(token))
            .await;
        assert_eq!(
            list.data()["webhooks"].as_array().unwrap().len(),
            MAX_WEBHOOKS
        );
        // One more is refused: at most ten.
        server
            .post(
                "/api/v1/config/notifications/webhooks",
                Some(token),
                json!({"url": receiver.url}),
            )
            .await
            .expect_error(400, "INVALID_REQUEST");
    }
}

const MAX_WEBHOOKS: usize = 10;
