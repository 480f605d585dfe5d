//! The chaos run, short: bots trading with partial fills and delays while the server is killed
//! ten times at random moments; afterwards every account's books equal the paper venue's own
//! record (0 orders lost or doubled, 0 fills lost or booked twice). `bench/chaos.sh` runs a
//! hundred kills.

use std::time::Duration;

use tradehost_blackbox::chaos::{self, ChaosOptions};

#[tokio::test]
async fn ten_kills_at_random_moments_lose_and_double_nothing() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let report = chaos::run(ChaosOptions {
        kills: 10,
        users: 3,
        seed,
        max_uptime: Duration::from_millis(1_500),
    })
    .await
    .unwrap();
    assert!(
        report.discrepancies.is_empty(),
        "seed {seed}: {:#?}",
        report.discrepancies
    );
    assert!(
        report.orders >= 10,
        "too little traded to show anything: {report:?}"
    );
    assert_eq!(
        report.fills,
        report.orders * 3,
        "each order filled in three parts"
    );
}
