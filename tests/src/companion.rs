//! Helpers shared by the companion route suites: number and timestamp checks, error bodies of
//! the `{detail}` sets, and making the bot trade on demand through signals.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{Reply, Server};

pub fn num(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

pub fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * (1.0 + a.abs().max(b.abs()))
}

/// Equal as display figures: money in cents, percentages in hundredths (the sets may round them).
pub fn cents(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.005 + 1e-9
}

/// RFC 3339 in UTC (`Z`).
#[track_caller]
pub fn assert_utc(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {value}"));
    assert!(text.ends_with('Z'), "not UTC with Z: {text}");
    chrono::DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"));
}

/// Whether a timestamp is RFC 3339 in UTC with milliseconds and `Z`
/// (`2026-11-22T06:40:00.123Z`), as docs/companion.md gives every companion timestamp.
pub fn has_millis(value: &Value) -> bool {
    value.as_str().is_some_and(|text| {
        let bytes = text.as_bytes();
        text.len() == 24
            && bytes[10] == b'T'
            && bytes[19] == b'.'
            && text.ends_with('Z')
            && chrono::DateTime::parse_from_rfc3339(text).is_ok()
    })
}

#[track_caller]
pub fn assert_millis(fields: &[(&str, &Value)]) {
    let wrong: Vec<String> = fields
        .iter()
        .filter(|(_, value)| !has_millis(value))
        .map(|(name, value)| format!("{name}: {value}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "not RFC 3339 UTC with milliseconds: {wrong:#?}"
    );
}

pub fn millis(value: &Value) -> i64 {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {value}"));
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|e| panic!("{text}: {e}"))
        .timestamp_millis()
}

/// The default strategy never signals (its slow EMA needs more candles than a scan reads), so
/// only webhook signals trade.
pub async fn quiet_strategy(server: &Server) {
    let admin = server.admin_token().await;
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&admin),
            json!({"config": {"fast_period": "2", "slow_period": "500"}}),
        )
        .await
        .expect(200);
}

pub async fn wait_position(server: &Server, token: &str, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server
        .get(&format!("/api/v1/account/positions/{id}"), Some(token))
        .await
        .status
        != 200
    {
        assert!(Instant::now() < deadline, "position {id} did not open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The user's signal key.
pub async fn webhook_key(server: &Server, token: &str) -> String {
    server
        .post("/api/v1/config/webhook-key", Some(token), json!({}))
        .await
        .data()["webhook_key"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Through signals on the user's running bot: ETH-USD bought and closed (one completed trade),
/// then SOL-USD bought and held (one open position).
pub async fn trade_once_and_hold(server: &Server, token: &str, key: &str) {
    let signal = |symbol: &str, action: &str| json!({"api_key": key, "symbol": symbol, "action": action, "size_usd": 200});
    let id = |reply: Reply| reply.data()["trade_id"].as_str().unwrap().to_string();
    let bought = id(server
        .post("/api/v1/webhooks/signals", None, signal("ETH-USD", "buy"))
        .await);
    wait_position(server, token, &bought).await;
    server
        .post("/api/v1/webhooks/signals", None, signal("ETH-USD", "close"))
        .await
        .expect(200);
    server
        .wait_for(token, "/api/v1/account/history?status=closed", 20, |d| {
            d["pagination"]["total_items"] == 1
        })
        .await;
    let held = id(server
        .post("/api/v1/webhooks/signals", None, signal("SOL-USD", "buy"))
        .await);
    wait_position(server, token, &held).await;
}

/// An error of sets A and B: this status, `detail` this message, and a code.
#[track_caller]
pub fn assert_detail(reply: &Reply, status: u16, message: &str) {
    reply.expect(status);
    assert_eq!(reply.json["detail"], message, "body: {}", reply.text);
    assert!(
        reply.json["code"].as_str().is_some_and(|c| !c.is_empty()),
        "no code: {}",
        reply.text
    );
}

/// A 401 of sets A and B, with `WWW-Authenticate: Bearer`.
#[track_caller]
pub fn assert_unauthenticated(reply: &Reply, message: &str) {
    assert_detail(reply, 401, message);
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|h| h.starts_with("Bearer")),
        "WWW-Authenticate: {:?}",
        reply.headers
    );
}
