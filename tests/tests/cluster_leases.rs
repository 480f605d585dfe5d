//! Bots shared by three instances of one deployment through leases: spread over the instances,
//! taken over when an instance dies or stalls, and never traded by two at once. At the end every
//! account's books are compared with the paper venue's own record, order by order.

use std::time::{Duration, Instant};

use serde_json::json;
use tradehost_blackbox::redis::OwnRedis;
use tradehost_blackbox::{PASSWORD, Server, email, on_postgres};

const SCRAPE: &str = "scrape-token-for-the-leases";
/// Seconds a lease lasts without renewal.
const LEASE_TTL: f64 = 1.0;

/// How many bots the run trades (`CLUSTER_BOTS`; 50 by default).
fn bots() -> usize {
    std::env::var("CLUSTER_BOTS")
        .ok()
        .and_then(|raw| raw.parse().ok())
        .unwrap_or(50)
}

async fn leases_held(server: &Server) -> f64 {
    server.metric(SCRAPE, "tradehost_bot_leases_held").await
}

/// The users whose lease `instance` holds (and has not let run out).
async fn held_by(server: &Server, instance: &str, now_ms: i64) -> Vec<String> {
    let mut users = Vec::new();
    let pool = server.db().await;
    let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT user_id FROM bot_leases WHERE instance = '{instance}' AND expires_at > {now_ms}"
    )))
    .fetch_all(pool)
    .await
    .unwrap();
    users.extend(rows.into_iter().map(|(user_id,)| user_id));
    users
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Waits until `check` passes, or fails the test with `what` after `secs`.
async fn eventually<F, Fut>(secs: f64, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(secs);
    loop {
        if check().await {
            return started.elapsed();
        }
        assert!(Instant::now() < deadline, "{what} within {secs} s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn bots_are_shared_by_three_instances_and_none_is_traded_by_two_when_one_dies_or_stalls() {
    let redis = OwnRedis::start().unwrap();
    let one = Server::options()
        .env("REDIS_URL", redis.url())
        .env("TRADEHOST_METRICS_TOKEN", SCRAPE)
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .env("TRADEHOST_BOT_LEASE_TTL", LEASE_TTL.to_string())
        .env("TRADEHOST_INSTANCE_ID", "one")
        .start()
        .await;
    let admin = one.admin_token().await;
    one.install_plugin(&admin, "testing/guest-churn", "guest-churn")
        .await;
    one.configure_plugin(
        &admin,
        "paper",
        json!({"fill_parts": "3", "fill_delay_ms": "150", "speed": "60"}),
    )
    .await;
    let two = one
        .another_instance(&[("TRADEHOST_INSTANCE_ID", "two")])
        .await
        .unwrap();
    let mut three = one
        .another_instance(&[("TRADEHOST_INSTANCE_ID", "three")])
        .await
        .unwrap();

    // Users sign up and start their bots through the three instances in turn.
    let count = bots();
    let mut accounts = Vec::new();
    for n in 0..count {
        let server = [&one, &two, &three][n % 3];
        let address = email(&format!("lease{n}"));
        let (user_id, token) = server.user(&address).await;
        // Enterprise: enough entries a day for the run.
        one.put(
            &format!("/api/v1/admin/users/{user_id}"),
            Some(&admin),
            json!({"subscription_tier": "enterprise"}),
        )
        .await
        .expect(200);
        server.connect_paper(&token).await;
        let symbols = [["BTC-USD", "ETH-USD"], ["SOL-USD", "ADA-USD"]][n % 2];
        server
            .post(
                "/api/v1/trading/start",
                Some(&token),
                json!({"broker": "paper", "strategy": "guest-churn", "symbols": symbols}),
            )
            .await
            .expect(200);
        accounts.push((user_id, address));
    }

    // Spread: every instance holds a share, and every bot is held once.
    let share = count.div_ceil(3) as f64;
    eventually(20.0, "the bots spread over the three instances", || async {
        let held = [
            leases_held(&one).await,
            leases_held(&two).await,
            leases_held(&three).await,
        ];
        eprintln!("leases held: {held:?}");
        held.iter().sum::<f64>() == count as f64 && held.iter().all(|h| *h >= share - 1.0)
    })
    .await;
    // Each instance reports itself, its share and its peers.
    let health = two.get("/health", None).await;
    health.expect(200);
    let instance = &health.json["instance"];
    assert_eq!(instance["id"], "two", "{instance}");
    assert_eq!(instance["clustered"], true, "{instance}");
    assert!(
        instance["bot_leases"].as_u64().unwrap() + 1 >= share as u64,
        "{instance}"
    );
    assert_eq!(instance["peers"], json!(["one", "three"]), "{instance}");
    one.wait_count("SELECT COUNT(*) FROM fills", count as i64, 60)
        .await;

    // Instance three dies: its bots are taken over within the lease's life and a scan.
    let orphans = held_by(&one, "three", now_ms()).await;
    assert!(!orphans.is_empty());
    three.kill();
    let died = now_ms();
    let took = eventually(
        LEASE_TTL + 4.0,
        "the dead instance's bots taken over",
        || async {
            let now = now_ms();
            let mut alive = held_by(&one, "one", now).await;
            alive.extend(held_by(&one, "two", now).await);
            orphans.iter().all(|user_id| alive.contains(user_id))
        },
    )
    .await;
    let list = orphans
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(", ");
    one.wait_count(
        &format!("SELECT COUNT(*) FROM orders WHERE user_id IN ({list}) AND created_at > {died}"),
        1,
        10,
    )
    .await;
    eprintln!(
        "{} bots of the dead instance taken over in {took:?}",
        orphans.len()
    );

    // Instance two stalls for three times the lease's life: instance one takes its bots over.
    let stalled_users = held_by(&one, "two", now_ms()).await;
    assert!(!stalled_users.is_empty());
    let refused_before = two
        .metric(SCRAPE, "tradehost_book_writes_refused_total")
        .await;
    two.pause();
    let paused = Instant::now();
    let moved_off = || async {
        let held_by_one = held_by(&one, "one", now_ms()).await;
        stalled_users
            .iter()
            .filter(|user_id| held_by_one.contains(user_id))
            .count()
    };
    // On SQLite an instance stalled inside a write holds the one write lock, and everyone waits
    // for it: the takeover is awaited on PostgreSQL, the deployment several instances are for.
    if on_postgres() {
        eventually(
            LEASE_TTL * 3.0,
            "the stalled instance's bots taken over",
            || async { moved_off().await == stalled_users.len() },
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs_f64(LEASE_TTL * 3.0).saturating_sub(paused.elapsed()))
        .await;
    let moved = moved_off().await;
    // When it goes on, what it had under way for those users is refused by the books, and it
    // lets them go; it trades only what it claims afresh.
    two.resume();
    if moved > 0 {
        eventually(
            10.0,
            "the stalled instance lets its lost bots go",
            || async { two.log().contains("another instance took the user over") },
        )
        .await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let refused_after = two
        .metric(SCRAPE, "tradehost_book_writes_refused_total")
        .await;
    eprintln!(
        "{moved} bots moved off the stalled instance; {} of its writes refused after it went on",
        refused_after - refused_before
    );

    // Every bot stops (through either instance); what is live settles; the books are compared
    // with the venue's record.
    for (n, (_, address)) in accounts.iter().enumerate() {
        let server = [&one, &two][n % 2];
        let token = server.login(address, PASSWORD).await["access_token"]
            .as_str()
            .unwrap()
            .to_string();
        server
            .post("/api/v1/trading/stop", Some(&token), json!({}))
            .await
            .expect(200);
    }
    eventually(60.0, "every order settled", || async {
        one.count(
            "SELECT COUNT(*) FROM orders WHERE status IN ('new', 'submitted', 'partially_filled', 'unknown')",
        )
        .await
            == 0
    })
    .await;
    assert_eq!(
        one.count(
            "SELECT COUNT(*) FROM (SELECT client_order_id FROM orders GROUP BY client_order_id HAVING COUNT(*) > 1) twice"
        )
        .await,
        0
    );
    let mut discrepancies = Vec::new();
    let (mut orders, mut fills) = (0, 0);
    for (user_id, _) in &accounts {
        match one.assert_books_match_venue("paper", user_id).await {
            Ok(compared) => {
                orders += compared.orders;
                fills += compared.fills;
            }
            Err(err) => discrepancies.push(format!("{user_id}: {err:#}")),
        }
    }
    eprintln!("{orders} orders and {fills} fills compared with the venue");
    assert!(discrepancies.is_empty(), "{discrepancies:#?}");
    assert!(orders > count, "too little traded: {orders} orders");
}
