//! Events between instances through the cluster bus (Redis pub/sub), against the in-process
//! path a lone instance takes, in one run.
//!
//! Two buses ("one" and "two") join the Redis at `REDIS_URL` (default `redis://127.0.0.1:6379`)
//! under a prefix of their own. "one" sends user events, each carrying its send time; "two"
//! records when each arrives. Reference: the same events through a `tokio::sync::broadcast`
//! channel, which is how an event reaches a socket on the instance that made it.
//!
//! Two cases: latency at a steady 2,000 events/s for 5 s (p50, p99, max), and a burst (20,000
//! events sent at once: the time until the last arrives, and how many did not).
//!
//! `cargo bench -p tradehost --bench cluster_bus` (`BENCH_BURST=N` for another burst size).

use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};
use tradehost::cluster::{Bus, Message, Received};

const STEADY_RATE: u64 = 2_000;
const STEADY_SECS: u64 = 5;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

fn event(seq: usize, origin: Instant) -> Message {
    Message::Event {
        user_id: Some("bench-user".into()),
        channel: "trades".into(),
        json: format!(
            r#"{{"type":"trade_executed","channel":"trades","data":{{"seq":{seq},"sent_ns":{}}}}}"#,
            origin.elapsed().as_nanos()
        ),
    }
}

/// The send time carried by an event's JSON.
fn sent_ns(json: &str) -> u64 {
    let tail = json.split("\"sent_ns\":").nth(1).expect("a send time");
    tail.trim_end_matches('}').parse().expect("a number")
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1_000.0
}

fn report(name: &str, mut latencies: Vec<u64>) {
    if latencies.is_empty() {
        println!("{name:<32} none arrived");
        return;
    }
    latencies.sort_unstable();
    println!(
        "{name:<32} {:>7} events  p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs",
        latencies.len(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0),
    );
}

/// Arrival latencies of `count` events read from `received`.
async fn collect(
    mut received: mpsc::Receiver<Received>,
    count: usize,
    origin: Instant,
) -> (Vec<u64>, Instant, mpsc::Receiver<Received>) {
    let mut latencies = Vec::with_capacity(count);
    let mut last = Instant::now();
    while latencies.len() < count {
        // Events that have not arrived within 5 s of the last are taken as lost.
        let Ok(next) = tokio::time::timeout(Duration::from_secs(5), received.recv()).await else {
            break;
        };
        let next = next.expect("the bus stays up");
        if let Received::Message(Message::Event { json, .. }) = next {
            let now = origin.elapsed().as_nanos() as u64;
            latencies.push(now.saturating_sub(sent_ns(&json)));
            last = Instant::now();
        }
    }
    (latencies, last, received)
}

async fn run() {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let prefix = format!("bench-{}", std::process::id());
    let one = Bus::new("one".into());
    let two = Bus::new("two".into());
    let _unused = one.connect(&url, &prefix).expect("bus one connects");
    let received = two.connect(&url, &prefix).expect("bus two connects");
    // Both subscribed before anything is sent.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(one.status().subscribed && two.status().subscribed) {
        assert!(
            Instant::now() < deadline,
            "the buses did not subscribe to {url}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let origin = Instant::now();
    let steady = (STEADY_RATE * STEADY_SECS) as usize;
    let spacing = Duration::from_nanos(1_000_000_000 / STEADY_RATE);

    // Reference: the in-process broadcast a lone instance's socket reads.
    let (sender, mut receiver) = broadcast::channel::<(usize, u64)>(1024);
    let local = tokio::spawn(async move {
        let mut latencies = Vec::with_capacity(steady);
        while latencies.len() < steady {
            let (_, sent) = receiver.recv().await.expect("no lag at this rate");
            latencies.push((origin.elapsed().as_nanos() as u64).saturating_sub(sent));
        }
        latencies
    });
    let mut tick = tokio::time::interval(spacing);
    for seq in 0..steady {
        tick.tick().await;
        let _ = sender.send((seq, origin.elapsed().as_nanos() as u64));
    }
    report(
        "in process (reference), steady",
        local.await.expect("the reference ends"),
    );

    let collector = tokio::spawn(collect(received, steady, origin));
    let mut tick = tokio::time::interval(spacing);
    for seq in 0..steady {
        tick.tick().await;
        one.send(event(seq, origin));
    }
    let (latencies, _, received) = collector.await.expect("the collector ends");
    report("across instances (Redis), steady", latencies);

    let burst: usize = std::env::var("BENCH_BURST")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);
    let started = Instant::now();
    let collector = tokio::spawn(collect(received, burst, origin));
    for seq in 0..burst {
        one.send(event(seq, origin));
    }
    let (latencies, last, _) = collector.await.expect("the collector ends");
    let arrived = latencies.len();
    let seconds = last.duration_since(started).as_secs_f64();
    report("across instances (Redis), burst", latencies);
    println!(
        "burst of {burst}: {arrived} arrived in {seconds:.2} s ({:.0} events/s); counted lost: {} sending, {} receiving",
        arrived as f64 / seconds,
        one.status().lost,
        two.status().lost
    );
}
