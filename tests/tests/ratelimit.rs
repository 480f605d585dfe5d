//! Rate limits: headers on every response, per-IP limits on the auth routes, per-user limits by
//! tier, failed-login throttling per e-mail; 429 executes nothing.

use serde_json::json;
use tradehost_blackbox::redis::OwnRedis;
use tradehost_blackbox::{PASSWORD, Server, early_in_a_rate_window, email};

fn assert_headers(reply: &tradehost_blackbox::Reply, limit: u32) {
    assert_eq!(
        reply.header("x-ratelimit-limit"),
        Some(limit.to_string().as_str()),
        "{:?}",
        reply.headers
    );
    let remaining: u32 = reply
        .header("x-ratelimit-remaining")
        .unwrap()
        .parse()
        .unwrap();
    assert!(remaining < limit);
    let reset: i64 = reply.header("x-ratelimit-reset").unwrap().parse().unwrap();
    let now = chrono::Utc::now().timestamp();
    assert!(
        reset > now - 1 && reset <= now + 61,
        "reset {reset} now {now}"
    );
}

/// A sign-in as `address` with a wrong password.
async fn wrong_password(server: &Server, address: &str) -> tradehost_blackbox::Reply {
    server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": address, "password": "guess guess guess"}),
        )
        .await
}

#[tokio::test]
async fn every_response_carries_the_headers() {
    let server = Server::options()
        .env("TRADEHOST_AUTH_RATE_LIMIT", "50")
        .env("TRADEHOST_ANON_RATE_LIMIT", "70")
        .start()
        .await;
    let (_, token) = server.user(&email("hdr")).await;
    assert_headers(&server.get("/api/v1/auth/me", Some(&token)).await, 30); // trial: basic's 30/min
    assert_headers(
        &server
            .post(
                "/api/v1/auth/login",
                None,
                json!({"email": "x@y.co", "password": "p"}),
            )
            .await,
        50,
    );
    assert_headers(&server.get("/api/v1/nothing-here", None).await, 70);
    assert_headers(
        &server
            .get("/api/v1/admin/audit-logs", Some("bad token"))
            .await,
        70,
    );
}

#[tokio::test]
async fn auth_routes_are_limited_per_ip_and_a_refused_request_does_nothing() {
    let server = Server::options()
        .env("TRADEHOST_AUTH_RATE_LIMIT", "3")
        .start()
        .await;
    early_in_a_rate_window().await;
    for n in 0..3 {
        server.register(&format!("ip{n}-{}", email("lim"))).await;
    }
    let refused = server
        .post("/api/v1/auth/register", None, json!({"email": email("over"), "password": PASSWORD, "full_name": "O", "accept_terms": true}))
        .await;
    refused.expect_error(429, "RATE_LIMIT_EXCEEDED");
    let retry: u64 = refused
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(refused.header("x-ratelimit-remaining"), Some("0"));
    assert_eq!(
        server.count("SELECT COUNT(*) FROM users").await,
        3,
        "the refused registration did not run"
    );
}

#[tokio::test]
async fn users_are_limited_by_their_tier() {
    let server = Server::start().await;
    early_in_a_rate_window().await;
    // A trial user has basic's 30 requests per minute.
    let (_, trial_token) = server.user(&email("trial")).await;
    for _ in 0..30 {
        server
            .get("/api/v1/auth/me", Some(&trial_token))
            .await
            .expect(200);
    }
    let over = server.get("/api/v1/auth/me", Some(&trial_token)).await;
    over.expect_error(429, "RATE_LIMIT_EXCEEDED");
    assert!(over.header("retry-after").is_some());

    // A free user whose trial has ended has free's 10; another user's budget is their own.
    let address = email("free");
    let id = server.register(&address).await;
    server
        .exec(&format!(
            "UPDATE users SET trial_ends_at = NULL WHERE id = '{id}'"
        ))
        .await;
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..10 {
        server
            .get("/api/v1/auth/me", Some(&token))
            .await
            .expect(200);
    }
    server
        .get("/api/v1/auth/me", Some(&token))
        .await
        .expect_error(429, "RATE_LIMIT_EXCEEDED");

    let address = email("pro");
    let id = server.register(&address).await;
    server
        .exec(&format!(
            "UPDATE users SET subscription_tier = 'pro', trial_ends_at = NULL WHERE id = '{id}'"
        ))
        .await;
    let token = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        server
            .get("/api/v1/auth/me", Some(&token))
            .await
            .header("x-ratelimit-limit"),
        Some("100")
    );
}

#[tokio::test]
async fn failed_logins_are_throttled_per_email() {
    let server = Server::options()
        .env("TRADEHOST_FAILED_LOGIN_LIMIT", "3")
        .start()
        .await;
    early_in_a_rate_window().await;
    let victim = email("victim");
    let bystander = email("bystander");
    server.register(&victim).await;
    server.register(&bystander).await;
    for _ in 0..3 {
        wrong_password(&server, &victim)
            .await
            .expect_error(401, "INVALID_CREDENTIALS");
    }
    // Even the right password is refused while the account is throttled.
    let refused = server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": victim.to_uppercase(), "password": PASSWORD}),
        )
        .await;
    refused.expect_error(429, "RATE_LIMIT_EXCEEDED");
    assert!(
        refused
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert_eq!(server.count("SELECT COUNT(*) FROM sessions").await, 0);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.login_throttled'")
            .await,
        1
    );
    server.login(&bystander, PASSWORD).await;
}

/// 200 parallel guesses at one account's password, the right one among them: at most the limit
/// are ever checked (each attempt is counted before its password is), the rest are refused
/// unchecked, and the lockout is audited once.
#[tokio::test]
async fn parallel_guesses_evaluate_at_most_the_limit() {
    let server = Server::options()
        .env("TRADEHOST_FAILED_LOGIN_LIMIT", "5")
        .env("TRADEHOST_AUTH_RATE_LIMIT", "100000")
        .start()
        .await;
    early_in_a_rate_window().await;
    let victim = email("parallel-victim");
    server.register(&victim).await;
    let sessions_before = server.count("SELECT COUNT(*) FROM sessions").await;
    let guesses = (0..200).map(|i| {
        let password = if i == 150 {
            PASSWORD.to_string()
        } else {
            format!("wrong guess {i}")
        };
        let body = json!({"email": victim, "password": password});
        let server = &server;
        async move { server.post("/api/v1/auth/login", None, body).await }
    });
    let replies = futures_util::future::join_all(guesses).await;
    let evaluated = replies
        .iter()
        .filter(|r| r.status == 401 || r.status == 200)
        .count();
    let refused = replies.iter().filter(|r| r.status == 429).count();
    // A successful sign-in clears the count, so a right guess among the first five lets five more
    // be checked; never more.
    let signed = replies.iter().filter(|r| r.status == 200).count();
    assert!(
        evaluated <= 5 * (1 + signed),
        "{evaluated} passwords were checked"
    );
    assert_eq!(evaluated + refused, 200);
    for reply in replies.iter().filter(|r| r.status == 429) {
        assert_eq!(reply.json["error"]["code"], "RATE_LIMIT_EXCEEDED");
    }
    let failed = server
        .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.login_failed'")
        .await;
    assert!(failed as usize <= 5 * (1 + signed), "{failed}");
    let signed_in = server.count("SELECT COUNT(*) FROM sessions").await - sessions_before;
    assert_eq!(
        signed_in as usize,
        replies.iter().filter(|r| r.status == 200).count()
    );
    if signed_in == 0 {
        assert_eq!(
            server
                .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.login_locked'")
                .await,
            1
        );
    }
}

#[tokio::test]
async fn the_operator_can_scale_tier_limits() {
    let server = Server::options()
        .env("TRADEHOST_API_RATE_MULTIPLIER", "1000")
        .start()
        .await;
    let (_, token) = server.user(&email("scaled")).await;
    let reply = server.get("/api/v1/auth/me", Some(&token)).await;
    assert_eq!(reply.header("x-ratelimit-limit"), Some("30000"));
}

#[tokio::test]
async fn admins_work_at_the_top_tier_budget() {
    let server = Server::start().await;
    let token = server.admin_token().await;
    let reply = server.get("/api/v1/auth/me", Some(&token)).await;
    assert_eq!(reply.header("x-ratelimit-limit"), Some("500"));
}

const SCRAPE: &str = "scrape-token-for-limits";

/// A server on `redis` (shared limits), with a scrape token for `/metrics`.
fn on_redis(redis: &OwnRedis) -> tradehost_blackbox::ServerOptions {
    Server::options()
        .env("REDIS_URL", redis.url())
        .env("TRADEHOST_METRICS_TOKEN", SCRAPE)
}

/// A sign-in with an unknown e-mail: counted against the client's per-IP auth budget.
async fn sign_in_attempt(server: &Server) -> tradehost_blackbox::Reply {
    wrong_password(server, &email("nobody")).await
}

fn remaining(reply: &tradehost_blackbox::Reply) -> u32 {
    reply
        .header("x-ratelimit-remaining")
        .unwrap()
        .parse()
        .unwrap()
}

/// Two instances on one Redis count one client's requests together: the budget of 6 is spent
/// 3 and 3, and then both refuse, with the same window end.
#[tokio::test]
async fn instances_on_one_redis_share_a_limit() {
    let redis = OwnRedis::start().unwrap();
    let options = on_redis(&redis).env("TRADEHOST_AUTH_RATE_LIMIT", "6");
    let (one, two) = (options.clone().start().await, options.start().await);
    assert_eq!(
        one.metric(SCRAPE, "tradehost_rate_limits_shared").await,
        1.0
    );
    early_in_a_rate_window().await;
    let mut left = Vec::new();
    for server in [&one, &one, &one, &two, &two, &two] {
        let reply = sign_in_attempt(server).await;
        reply.expect_error(401, "INVALID_CREDENTIALS");
        left.push(remaining(&reply));
    }
    assert_eq!(left, [5, 4, 3, 2, 1, 0]);
    let refused_one = sign_in_attempt(&one).await;
    let refused_two = sign_in_attempt(&two).await;
    refused_one.expect_error(429, "RATE_LIMIT_EXCEEDED");
    refused_two.expect_error(429, "RATE_LIMIT_EXCEEDED");
    assert_eq!(
        refused_one.header("x-ratelimit-reset"),
        refused_two.header("x-ratelimit-reset")
    );
}

/// Failed logins of one e-mail are counted across instances: guesses spread over two
/// instances lock the account on both.
#[tokio::test]
async fn failed_logins_are_counted_across_instances() {
    let redis = OwnRedis::start().unwrap();
    let options = on_redis(&redis).env("TRADEHOST_FAILED_LOGIN_LIMIT", "3");
    let (one, two) = (options.clone().start().await, options.start().await);
    early_in_a_rate_window().await;
    let victim = email("spread");
    // The same account on both (each test server has a database of its own).
    one.register(&victim).await;
    two.register(&victim).await;
    for server in [&one, &two, &one] {
        wrong_password(server, &victim)
            .await
            .expect_error(401, "INVALID_CREDENTIALS");
    }
    two.post(
        "/api/v1/auth/login",
        None,
        json!({"email": victim, "password": PASSWORD}),
    )
    .await
    .expect_error(429, "RATE_LIMIT_EXCEEDED");
}

/// While Redis does not answer, requests are served as before, counted in the instance's own
/// memory (the limit still holds there), and the outage shows in the log and `/metrics`; when
/// Redis is back, counts are shared again.
#[tokio::test]
async fn without_redis_an_instance_counts_on_its_own_until_redis_is_back() {
    let mut redis = OwnRedis::start().unwrap();
    let server = on_redis(&redis)
        .env("TRADEHOST_AUTH_RATE_LIMIT", "5")
        .start()
        .await;
    early_in_a_rate_window().await;
    sign_in_attempt(&server).await.expect(401);
    let key = "tradehost:rate:auth-ip:127.0.0.1";
    assert_eq!(redis.cli(&["HGET", key, "c"]), "1", "the count is in Redis");

    redis.stop();
    let started = std::time::Instant::now();
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(sign_in_attempt(&server).await.status.as_u16());
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "an outage does not hold requests up: {:?}",
        started.elapsed()
    );
    // The instance's own count starts at this outage: 5 allowed, the 6th refused.
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429]);
    assert_eq!(
        server.metric(SCRAPE, "tradehost_rate_limits_shared").await,
        0.0
    );
    assert!(
        server
            .metric(SCRAPE, "tradehost_rate_limit_fallback_decisions_total")
            .await
            >= 6.0
    );
    assert!(
        server.log().contains("Redis does not answer"),
        "{}",
        server.log()
    );

    redis.resume().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.metric(SCRAPE, "tradehost_rate_limits_shared").await != 1.0 {
        assert!(std::time::Instant::now() < deadline, "{}", server.log());
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(server.log().contains("Redis answers again"));
    assert!(
        !redis
            .cli(&["--scan", "--pattern", "tradehost:rate:*"])
            .is_empty()
    );
}
