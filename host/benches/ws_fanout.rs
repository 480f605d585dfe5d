//! Fan-out of one user's events to 1,000 WebSocket connections.
//!
//! Starts the real server in-process on an ephemeral port, signs one user in, opens 1,000 sockets
//! for that user subscribed to `trades`, then publishes 200 `trade_executed` events 20 ms apart
//! through the event bus, each carrying its publish time. Server and clients share one
//! multi-threaded runtime. Reports, per event, the time until the last of the 1,000 sockets has
//! it, and the latency of every single delivery.
//!
//! `cargo bench -p tradehost --bench ws_fanout`. The sockets need about 2,100 file descriptors
//! (both ends of 1,000 connections); raise the soft limit (`ulimit -n 4096`) where it is 1,024.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rocket::fairing::AdHoc;
use rocket::futures::{SinkExt, StreamExt, stream};
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tradehost::App;
use tradehost::auth::ClientMeta;
use tradehost::auth::service::{self, RegisterRequest};
use tradehost::config::AppConfig;
use tradehost::events::Channel;

const SOCKETS: usize = 1_000;
const EVENTS: usize = 200;
const SPACING: Duration = Duration::from_millis(20);

type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

#[derive(Deserialize)]
struct Wire {
    data: Stamp,
}

#[derive(Deserialize)]
struct Stamp {
    seq: usize,
    /// Nanoseconds since the benchmark's start when the event was published.
    published_ns: u64,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(run());
}

async fn run() {
    let (app, url, _dir) = serve().await;
    let (user_id, token) = sign_in(&app).await;
    let started = Instant::now();
    let clients: Vec<Client> = stream::iter(0..SOCKETS)
        .map(|_| connect(&url, &token))
        .buffer_unordered(64)
        .collect()
        .await;
    println!(
        "{SOCKETS} sockets connected, signed in and subscribed in {:.2?}",
        started.elapsed()
    );

    let epoch = Instant::now();
    // Per event: the latest arrival over all sockets, in nanoseconds after its publication.
    let slowest: Arc<Vec<AtomicU64>> = Arc::new((0..EVENTS).map(|_| AtomicU64::new(0)).collect());
    let readers: Vec<_> = clients
        .into_iter()
        .map(|client| tokio::spawn(read(client, epoch, slowest.clone())))
        .collect();

    let mut tick = tokio::time::interval(SPACING);
    for seq in 0..EVENTS {
        tick.tick().await;
        let published_ns = epoch.elapsed().as_nanos() as u64;
        let data =
            json!({"seq": seq, "published_ns": published_ns, "pair": "BTC/USD", "side": "buy"});
        app.events
            .publish(&user_id, Channel::Trades, "trade_executed", &data);
    }

    let mut deliveries = Vec::with_capacity(SOCKETS * EVENTS);
    for reader in readers {
        deliveries.extend(reader.await.expect("a reader finishes"));
    }
    let mut reach_all: Vec<u64> = slowest
        .iter()
        .map(|ns| ns.load(Ordering::Relaxed))
        .collect();
    println!(
        "delivered {} of {} messages",
        deliveries.len(),
        SOCKETS * EVENTS
    );
    report("event reaches all 1,000 sockets", &mut reach_all);
    report("single delivery", &mut deliveries);
}

/// Reads every event a socket gets (or stops after 10 s of silence); returns its latencies.
async fn read(mut client: Client, epoch: Instant, slowest: Arc<Vec<AtomicU64>>) -> Vec<u64> {
    let mut latencies = Vec::with_capacity(EVENTS);
    while latencies.len() < EVENTS {
        let Ok(Some(Ok(message))) =
            tokio::time::timeout(Duration::from_secs(10), client.next()).await
        else {
            break;
        };
        let Message::Text(text) = message else {
            continue;
        };
        let received_ns = epoch.elapsed().as_nanos() as u64;
        let stamp = serde_json::from_str::<Wire>(&text).expect("an event").data;
        let latency = received_ns.saturating_sub(stamp.published_ns);
        slowest[stamp.seq].fetch_max(latency, Ordering::Relaxed);
        latencies.push(latency);
    }
    latencies
}

fn report(name: &str, values: &mut [u64]) {
    values.sort_unstable();
    let at = |p: f64| {
        let index = ((values.len() as f64 * p).ceil() as usize).clamp(1, values.len()) - 1;
        Duration::from_nanos(values[index])
    };
    println!(
        "{name}: n = {}, p50 {:.2?}, p99 {:.2?}, max {:.2?}",
        values.len(),
        at(0.50),
        at(0.99),
        at(1.0)
    );
}

/// The server on a fresh SQLite data directory and a free port.
async fn serve() -> (App, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data_dir = dir.path().to_string_lossy().to_string();
    let lookup = move |name: &str| match name {
        "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
        "PORT" => Some("0".to_string()),
        // All 1,000 upgrades come from one address.
        "TRADEHOST_ANON_RATE_LIMIT" => Some("1000000".to_string()),
        _ => None,
    };
    let figment = AppConfig::rocket_figment(&lookup).expect("configuration");
    let config = AppConfig::load(&figment, &lookup).expect("configuration");
    let app = App::init(config).await.expect("the app starts");
    let (port_tx, port_rx) = tokio::sync::oneshot::channel();
    let server =
        tradehost::rocket(figment, app.clone()).attach(AdHoc::on_liftoff("port", |rocket| {
            Box::pin(async move {
                let _ = port_tx.send(rocket.config().port);
            })
        }));
    tokio::spawn(server.launch());
    let port = port_rx.await.expect("the server lifts off");
    (app, format!("ws://127.0.0.1:{port}/ws/v1"), dir)
}

/// Registers and signs in the one user; returns (user id, access token).
async fn sign_in(app: &App) -> (String, String) {
    let (email, password) = ("bench@example.com", "correct horse battery staple");
    let meta = ClientMeta::default();
    let request = RegisterRequest {
        email: email.to_string(),
        password: password.to_string(),
        full_name: "Bench".to_string(),
        accept_terms: true,
    };
    service::register(app, request, &meta)
        .await
        .expect("register");
    let login = service::login(app, email, password, &meta)
        .await
        .expect("login");
    (login.user.user_id, login.access_token)
}

/// A socket signed in and subscribed to `trades`.
async fn connect(url: &str, token: &str) -> Client {
    let (mut client, _) = tokio_tungstenite::connect_async(url)
        .await
        .unwrap_or_else(|err| {
            panic!(
                "connect: {err} (1,000 sockets need ~2,100 file descriptors: try `ulimit -n 4096`)"
            )
        });
    for request in [
        json!({"type": "auth", "token": format!("Bearer {token}")}),
        json!({"type": "subscribe", "channel": "trades"}),
    ] {
        client
            .send(Message::Text(request.to_string()))
            .await
            .expect("send");
        let answer = client.next().await.expect("an answer").expect("a frame");
        assert!(
            !answer.to_string().contains(r#""type":"error""#),
            "{answer}"
        );
    }
    client
}
