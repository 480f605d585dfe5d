//! The chaos run: several bots trade on the paper venue with partial fills and delays while the
//! server is killed (SIGKILL) at random moments and started again, over and over; at the end every
//! account's books are compared with the venue's own record. The test suite runs it with a few
//! kills; `bench/chaos.sh` with a hundred.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use crate::{PASSWORD, Server, email};

#[derive(Debug, Clone, Copy)]
pub struct ChaosOptions {
    pub kills: usize,
    pub users: usize,
    pub seed: u64,
    /// The longest a server runs between two kills.
    pub max_uptime: Duration,
}

#[derive(Debug, Default, Clone)]
pub struct ChaosReport {
    pub kills: usize,
    pub users: usize,
    /// Orders the venue filled, compared one by one with the books.
    pub orders: usize,
    pub fills: usize,
    pub trades: i64,
    /// Accounts whose books differ from the venue (each with what differs).
    pub discrepancies: Vec<String>,
    pub elapsed: Duration,
}

/// A small deterministic generator for the kill moments (xorshift64*).
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % below.max(1)
    }
}

/// Runs the chaos: `users` bots churning on two symbols each, killed `kills` times.
pub async fn run(options: ChaosOptions) -> Result<ChaosReport> {
    let started = Instant::now();
    let mut server = Server::options()
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
        .start()
        .await;
    let admin = server.admin_token().await;
    server
        .install_plugin(&admin, "testing/guest-churn", "guest-churn")
        .await;
    server
        .put(
            "/api/v1/admin/plugins/paper/config",
            Some(&admin),
            json!({"config": {"fill_parts": "3", "fill_delay_ms": "150", "speed": "60"}}),
        )
        .await
        .expect(200);
    let mut accounts = Vec::new();
    for n in 0..options.users {
        let address = email(&format!("chaos{n}"));
        let (user_id, token) = server.user(&address).await;
        // Enterprise: 500 entries a day, so the run is not cut short by the trade limit.
        server
            .put(
                &format!("/api/v1/admin/users/{user_id}"),
                Some(&admin),
                json!({"subscription_tier": "enterprise"}),
            )
            .await
            .expect(200);
        server.connect_paper(&token).await;
        let symbols = [
            ["BTC-USD", "ETH-USD"],
            ["SOL-USD", "ADA-USD"],
            ["XRP-USD", "DOT-USD"],
            ["LTC-USD", "LINK-USD"],
        ][n % 4];
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

    let mut moments = Moments(options.seed | 1);
    for _ in 0..options.kills {
        let uptime = moments.next_ms(options.max_uptime.as_millis() as u64);
        tokio::time::sleep(Duration::from_millis(uptime)).await;
        server.kill();
        server.restart().await;
    }
    // A last stretch of trading, then every bot stops and what is live settles.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for (_, address) in &accounts {
        let token = server.login(address, PASSWORD).await["access_token"]
            .as_str()
            .context("a token")?
            .to_string();
        server
            .post("/api/v1/trading/stop", Some(&token), json!({}))
            .await
            .expect(200);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while server
        .count("SELECT COUNT(*) FROM orders WHERE status IN ('new', 'submitted', 'partially_filled', 'unknown')")
        .await
        > 0
    {
        if Instant::now() > deadline {
            bail!("orders stayed live after the bots stopped");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let mut report = ChaosReport {
        kills: options.kills,
        users: options.users,
        trades: server.count("SELECT COUNT(*) FROM trades").await,
        ..ChaosReport::default()
    };
    for (user_id, _) in &accounts {
        match server.assert_books_match_venue("paper", user_id).await {
            Ok(compared) => {
                report.orders += compared.orders;
                report.fills += compared.fills;
            }
            Err(err) => report.discrepancies.push(format!("{user_id}: {err:#}")),
        }
    }
    report.elapsed = started.elapsed();
    Ok(report)
}
