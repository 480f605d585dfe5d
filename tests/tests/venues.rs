//! Each live venue's broker plugin, black-box against the real binary and a local simulator of
//! the venue's REST API (which checks every signature the venue's way): connecting with good and
//! bad keys, testing the connection, a bot trading market orders that fill in parts and are
//! sometimes rejected, rate limits honoured without hammering, an answer lost to a timeout and a
//! server killed after the venue accepted an order, and a limit order that fills later. In every
//! case the books end equal to the venue's own record.

use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use serde_json::{Value, json};
use tradehost_blackbox::companion::webhook_key;
use tradehost_blackbox::exchange::{Simulator, VenueCase};
use tradehost_blackbox::{Server, decimal_sql, email};

const CHURN: (&str, &str) = ("testing/guest-churn", "guest-churn");

/// A simulator of the venue, and a server whose `broker` plugin is pointed at it by the operator
/// (with the private network allowed: the simulator is on loopback). Returns the admin token.
async fn venue_server(case: &VenueCase, config: Value) -> (Simulator, Server, String) {
    let simulator = Simulator::start(case.exchange.clone(), case.face.clone()).await;
    let server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .env("TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK", "true")
        .start()
        .await;
    let admin = server.admin_token().await;
    server.install_plugin(&admin, CHURN.0, CHURN.1).await;
    let mut config = config;
    config["base_url"] = json!(simulator.url);
    server
        .put(
            &format!("/api/v1/admin/plugins/{}/config", case.broker),
            Some(&admin),
            json!({ "config": config }),
        )
        .await
        .expect(200);
    (simulator, server, admin)
}

/// A user connected to the venue: (user id, token).
async fn connected_user(server: &Server, case: &VenueCase, tag: &str) -> (String, String) {
    let (user_id, token) = server.user(&email(tag)).await;
    server
        .post("/api/v1/config/brokers", Some(&token), case.connect.clone())
        .await
        .expect(201);
    (user_id, token)
}

async fn start_churn(server: &Server, token: &str, case: &VenueCase) {
    // The venue's pairs are not among the default allowed pairs (which quote USD).
    server
        .put(
            "/api/v1/config/settings",
            Some(token),
            json!({"trading": {"allowed_pairs": case.symbols}}),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/trading/start",
            Some(token),
            json!({"broker": case.broker, "strategy": "guest-churn", "symbols": case.symbols}),
        )
        .await
        .expect(200);
}

fn live_orders(user_id: &str) -> String {
    format!(
        "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status IN ('new', 'submitted', 'partially_filled', 'unknown')"
    )
}

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

fn trades_of(user_id: &str) -> String {
    format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'")
}

/// Stops the bot, lets what is live finish, and compares the books with the venue's record.
async fn stop_and_compare(
    server: &Server,
    token: &str,
    user_id: &str,
    case: &VenueCase,
) -> tradehost_blackbox::venue::Compared {
    server
        .post("/api/v1/trading/stop", Some(token), json!({}))
        .await
        .expect(200);
    wait_none(server, &live_orders(user_id), 60).await;
    let book = case.exchange.book(case.account, case.face.as_ref());
    server
        .assert_books_match(case.broker, user_id, &book)
        .await
        .unwrap_or_else(|err| panic!("{}: the books differ from the venue: {err:#}", case.broker))
}

/// Connecting (a bad secret is refused the venue's way), testing the connection, and a bot
/// trading market orders that fill in three parts, one of them rejected by the venue.
async fn connects_and_trades(case: VenueCase) {
    let (_simulator, server, _admin) = venue_server(&case, json!({})).await;
    let (user_id, token) = server.user(&email("venue")).await;
    let refused = server
        .post(
            "/api/v1/config/brokers",
            Some(&token),
            case.connect_bad.clone(),
        )
        .await;
    refused.expect_error(400, "INVALID_API_KEY");
    let connected = server
        .post("/api/v1/config/brokers", Some(&token), case.connect.clone())
        .await;
    connected.expect(201);
    let broker_id = connected.data()["broker_id"].as_str().unwrap().to_string();
    let tested = server
        .post(
            &format!("/api/v1/config/brokers/{broker_id}/test"),
            Some(&token),
            json!({}),
        )
        .await;
    tested.expect(200);
    assert_eq!(tested.data()["status"], "connected", "{}", tested.text);
    assert!(
        tested.data()["permissions"]
            .as_array()
            .unwrap()
            .contains(&json!("trade")),
        "{}",
        tested.text
    );
    assert_eq!(
        tested.data()["account_balance"],
        json!(100000.0),
        "{}",
        tested.text
    );

    case.exchange.behave(|b| {
        b.fill_parts = 3;
        b.fill_delay_ms = 150;
        b.reject_next = vec!["Market is closed.".into()];
    });
    start_churn(&server, &token, &case).await;
    server.wait_count(&trades_of(&user_id), 3, 90).await;
    let compared = stop_and_compare(&server, &token, &user_id, &case).await;
    assert!(compared.orders >= 6, "{compared:?}");
    assert_eq!(
        compared.fills,
        compared.orders * 3,
        "every order filled in three parts"
    );
    let rejected = server
        .scalar(&format!(
            "SELECT error FROM orders WHERE user_id = '{user_id}' AND status = 'rejected'"
        ))
        .await
        .unwrap_or_default();
    assert!(
        rejected.contains("Market is closed."),
        "the venue's reason is kept: {rejected:?}"
    );
    // Only the bad secret was refused: every request the plugin signed passed the venue's checks.
    assert_eq!(case.exchange.with_state(|s| s.auth_refusals), 1);
}

/// A venue that allows few requests: the bot trades on, and nothing is sent while the venue has
/// asked to wait.
async fn honours_rate_limits(case: VenueCase) {
    let (_simulator, server, _admin) = venue_server(&case, json!({})).await;
    let (user_id, token) = connected_user(&server, &case, "limited").await;
    case.exchange.behave(|b| b.rate_limit = Some((3, 1_000)));
    start_churn(&server, &token, &case).await;
    server.wait_count(&trades_of(&user_id), 2, 90).await;
    // Waiting for the venue is not a failure of the bot.
    let status = server.get("/api/v1/trading/status", Some(&token)).await;
    assert_eq!(status.data()["status"], "running", "{}", status.text);
    stop_and_compare(&server, &token, &user_id, &case).await;
    let (throttled, hammered) = case.exchange.with_state(|s| (s.throttled, s.hammered));
    assert!(throttled > 0, "the venue's limit was reached");
    assert_eq!(
        hammered, 0,
        "nothing was sent while the venue asked to wait"
    );
}

/// An answer lost to the plugin's timeout after the venue accepted the order, then a server
/// killed while waiting for the venue's answer: each order is learned from the venue after the
/// fact and booked once; none is sent again.
async fn recovers_orders_whose_answer_was_lost(case: VenueCase) {
    let (_simulator, mut server, _admin) =
        venue_server(&case, json!({"request_timeout_ms": "1500"})).await;
    let (user_id, token) = connected_user(&server, &case, "lost").await;
    // The first order's answer comes after the plugin stopped waiting.
    case.exchange.behave(|b| b.stall_next_ms = Some(3_000));
    start_churn(&server, &token, &case).await;
    server
        .wait_count(
            &format!("SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'filled' AND error LIKE 'timed out%'"),
            1,
            60,
        )
        .await;
    // The next order's answer is held until after the server is killed.
    let placed = case.exchange.with_state(|s| s.orders.len());
    case.exchange.behave(|b| b.stall_next_ms = Some(5_000));
    let deadline = Instant::now() + Duration::from_secs(30);
    while case.exchange.with_state(|s| s.orders.len()) == placed {
        assert!(
            Instant::now() < deadline,
            "no further order reached the venue"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    server.restart().await;
    let token = server
        .login(
            &email_of(&server, &user_id).await,
            tradehost_blackbox::PASSWORD,
        )
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    server.wait_count(&trades_of(&user_id), 2, 60).await;
    stop_and_compare(&server, &token, &user_id, &case).await;
}

/// Limit entries sent as signals: one rests at the venue until the price comes down to it, then
/// fills and opens the position (which the strategy closes at market); another is cancelled
/// through the API before it fills. A signal asking for a limit order wrongly is refused and changes nothing.
async fn fills_a_limit_order_later(case: VenueCase) {
    let (_simulator, server, admin) = venue_server(&case, json!({})).await;
    let (user_id, token) = connected_user(&server, &case, "limit").await;
    let key = webhook_key(&server, &token).await;
    server
        .put(
            "/api/v1/config/settings",
            Some(&token),
            json!({"trading": {"allowed_pairs": case.symbols}}),
        )
        .await
        .expect(200);
    // The strategy's own entries are below the venue's minimum order value: they are not sent.
    // It closes what is held at market, so the position a limit entry opens is closed.
    server
        .put(
            "/api/v1/admin/plugins/guest-churn/config",
            Some(&admin),
            json!({"config": {"size_usd": "1"}}),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": case.broker, "strategy": "guest-churn", "symbols": case.symbols}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;

    let signal = |symbol: &str, extra: Value| {
        let mut body = json!({"api_key": key, "symbol": symbol, "action": "buy", "size_usd": 1000});
        for (name, value) in extra.as_object().unwrap() {
            body[name] = value.clone();
        }
        body
    };
    let [first, second] = case.symbols;
    for (extra, field) in [
        (
            json!({"order_type": "stop", "limit_price": "1"}),
            "order_type",
        ),
        (json!({"order_type": "limit"}), "limit_price"),
        (
            json!({"order_type": "market", "limit_price": 100}),
            "limit_price",
        ),
        (json!({"limit_price": "-5"}), "limit_price"),
        (json!({"limit_price": "a lot"}), "limit_price"),
        (json!({"action": "close", "limit_price": 100}), "order_type"),
    ] {
        let refused = server
            .post(
                "/api/v1/webhooks/signals",
                None,
                signal(first, extra.clone()),
            )
            .await;
        refused.expect_error(400, "INVALID_REQUEST");
        assert!(refused.text.contains(field), "{extra}: {}", refused.text);
    }
    let signals = format!("SELECT COUNT(*) FROM signals WHERE user_id = '{user_id}'");
    assert_eq!(
        server.count(&signals).await,
        0,
        "a refused signal is not kept"
    );

    let price_of = |symbol: &str| {
        let (base, quote) = symbol.split_once('-').unwrap();
        case.exchange
            .with_state(|s| s.prices[&(base.to_string(), quote.to_string())])
    };
    let resting = |symbol: &str| {
        format!(
            "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND symbol = '{symbol}' AND kind = 'limit' AND status = 'submitted'"
        )
    };
    // Off the tick on purpose: a buy's limit goes to the venue rounded down to the tick.
    let limit = (price_of(first) * Decimal::new(95, 2)).round_dp(2) + Decimal::new(7, 3);
    server
        .post(
            "/api/v1/webhooks/signals",
            None,
            signal(
                first,
                json!({"order_type": "limit", "limit_price": limit.to_string()}),
            ),
        )
        .await
        .expect(200);
    server.wait_count(&resting(first), 1, 30).await;
    let sent = server
        .scalar(&format!(
            "SELECT {} FROM orders WHERE user_id = '{user_id}' AND symbol = '{first}' AND kind = 'limit'",
            decimal_sql("limit_price")
        ))
        .await
        .unwrap();
    assert_eq!(
        sent.parse::<Decimal>().unwrap(),
        limit.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::ToZero)
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        server.count(&resting(first)).await,
        1,
        "above its limit, the order rests"
    );
    let (base, quote) = first.split_once('-').unwrap();
    case.exchange
        .set_price(base, quote, &(limit - Decimal::ONE).round_dp(2).to_string());
    server
        .wait_count(
            &format!("SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND symbol = '{first}' AND kind = 'limit' AND status = 'filled'"),
            1,
            30,
        )
        .await;

    // The second never reaches its price; it is cancelled.
    let far = (price_of(second) / Decimal::TWO).round_dp(2);
    server
        .post(
            "/api/v1/webhooks/signals",
            None,
            signal(second, json!({"limit_price": far.to_string()})),
        )
        .await
        .expect(200);
    server.wait_count(&resting(second), 1, 30).await;
    let order_id = server
        .scalar(&format!(
            "SELECT id FROM orders WHERE user_id = '{user_id}' AND symbol = '{second}' AND kind = 'limit'"
        ))
        .await
        .unwrap();
    let cancel = format!("/api/v1/trading/orders/{order_id}/cancel");
    let cancelled = server.post(&cancel, Some(&token), json!({})).await;
    cancelled.expect(200);
    assert_eq!(
        cancelled.data()["status"],
        "cancelled",
        "{}",
        cancelled.text
    );
    assert_eq!(cancelled.data()["kind"], "limit");
    server
        .post(&cancel, Some(&token), json!({}))
        .await
        .expect_error(400, "INVALID_REQUEST");
    let (other_id, other) = server.user(&email("limit-other")).await;
    server
        .post(&cancel, Some(&other), json!({}))
        .await
        .expect_error(404, "NOT_FOUND");
    assert_ne!(other_id, user_id);

    server.wait_count(&trades_of(&user_id), 1, 30).await;
    stop_and_compare(&server, &token, &user_id, &case).await;
}

async fn email_of(server: &Server, user_id: &str) -> String {
    server
        .scalar(&format!("SELECT email FROM users WHERE id = '{user_id}'"))
        .await
        .expect("the user exists")
}

/// Without the operator's switch, a broker plugin cannot be pointed at the server's own network:
/// `base_url` at loopback, a private range or the cloud metadata address is refused when
/// configured (a host name is refused by the addresses it resolves to when called: the egress
/// unit tests), so a venue listening on loopback never sees a request.
#[tokio::test]
async fn plugins_cannot_reach_the_private_network() {
    let case = tradehost_blackbox::exchange::binance::case();
    let simulator = Simulator::start(case.exchange.clone(), case.face.clone()).await;
    let server = Server::start().await;
    let admin = server.admin_token().await;
    let config_path = format!("/api/v1/admin/plugins/{}/config", case.broker);
    let plugin_path = format!("/api/v1/admin/plugins/{}", case.broker);
    let before = server.get(&plugin_path, Some(&admin)).await;
    before.expect(200);
    let port = simulator
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    for url in [
        simulator.url.clone(),
        format!("http://127.0.0.1:{port}"),
        "http://169.254.169.254".to_string(),
        "http://[::1]:9".to_string(),
        "http://10.0.0.1".to_string(),
        format!("http://localhost:{port}"),
    ] {
        let refused = server
            .put(
                &config_path,
                Some(&admin),
                json!({"config": {"base_url": url}}),
            )
            .await;
        assert_eq!(refused.status, 400, "{url}: {}", refused.text);
        assert!(refused.text.contains("base_url"), "{url}: {}", refused.text);
    }
    assert_eq!(
        server.get(&plugin_path, Some(&admin)).await.data(),
        before.data(),
        "a refused configuration changes nothing"
    );

    // A user's connection cannot reach the venue on loopback either (the plugin keeps the
    // manifest's public host, and names are checked by the addresses they resolve to).
    let (_, token) = server.user(&email("ssrf")).await;
    let refused = server
        .post("/api/v1/config/brokers", Some(&token), case.connect.clone())
        .await;
    assert!(!refused.status.is_success(), "{}", refused.text);
    assert_eq!(
        case.exchange.with_state(|s| s.seen),
        0,
        "the venue on loopback was reached"
    );
}

macro_rules! venue_suite {
    ($venue:ident) => {
        mod $venue {
            use tradehost_blackbox::exchange::$venue::case;

            #[tokio::test]
            async fn connects_and_trades() {
                super::connects_and_trades(case()).await;
            }

            #[tokio::test]
            async fn honours_rate_limits() {
                super::honours_rate_limits(case()).await;
            }

            #[tokio::test]
            async fn recovers_orders_whose_answer_was_lost() {
                super::recovers_orders_whose_answer_was_lost(case()).await;
            }

            #[tokio::test]
            async fn fills_a_limit_order_later() {
                super::fills_a_limit_order_later(case()).await;
            }
        }
    };
}

venue_suite!(binance);
venue_suite!(kraken);
venue_suite!(coinbase);
venue_suite!(okx);
venue_suite!(alpaca);
