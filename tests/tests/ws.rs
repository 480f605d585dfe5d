//! /ws/v1: authentication, subscriptions, errors and closes, against the real binary.
//! (Event delivery is tested in-process in `host/src/api/ws.rs`, where the test can publish.)

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream, connect_async};
use tradehost_blackbox::{PASSWORD, Server, email};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

const WAIT: Duration = Duration::from_secs(5);

async fn connect(server: &Server) -> Ws {
    connect_async(server.ws_url("/ws/v1"))
        .await
        .expect("the upgrade succeeds")
        .0
}

async fn send(ws: &mut Ws, message: Value) {
    ws.send(Message::Text(message.to_string())).await.unwrap();
}

/// The next JSON message (ping and pong frames skipped).
async fn recv(ws: &mut Ws) -> Value {
    loop {
        let message = tokio::time::timeout(WAIT, ws.next())
            .await
            .expect("a message within 5 s")
            .expect("the socket is open")
            .expect("a valid frame");
        match message {
            Message::Text(text) => return serde_json::from_str(&text).unwrap(),
            Message::Ping(_) | Message::Pong(_) => {}
            other => panic!("expected a text message, got {other:?}"),
        }
    }
}

/// Sends a request and returns the answer.
async fn ask(ws: &mut Ws, message: Value) -> Value {
    send(ws, message).await;
    recv(ws).await
}

#[track_caller]
fn assert_error(message: &Value, code: &str) {
    assert_eq!(message["type"], "error", "{message}");
    assert_eq!(message["code"], code, "{message}");
    assert!(
        message["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{message}"
    );
}

/// Waits for the server's close frame and returns its code and reason.
async fn closed(ws: &mut Ws) -> (u16, String) {
    closed_within(ws, WAIT).await
}

async fn closed_within(ws: &mut Ws, limit: Duration) -> (u16, String) {
    loop {
        let message = tokio::time::timeout(limit, ws.next())
            .await
            .expect("a close in time")
            .expect("a close frame before the end")
            .expect("a valid frame");
        match message {
            Message::Close(Some(frame)) => return (frame.code.into(), frame.reason.into_owned()),
            Message::Ping(_) | Message::Pong(_) => {}
            other => panic!("expected a close frame, got {other:?}"),
        }
    }
}

fn auth(token: &str) -> Value {
    json!({"type": "auth", "token": format!("Bearer {token}")})
}

/// A socket signed in with `token`.
async fn signed_in(server: &Server, token: &str) -> Ws {
    let mut ws = connect(server).await;
    let answer = ask(&mut ws, auth(token)).await;
    assert_eq!(answer["type"], "auth_success", "{answer}");
    ws
}

#[tokio::test]
async fn auth_subscribe_unsubscribe_and_ping() {
    let server = Server::start().await;
    let address = email("ws");
    let (user_id, token) = server.user(&address).await;
    let mut ws = connect(&server).await;
    assert_eq!(
        ask(&mut ws, auth(&token)).await,
        json!({"type": "auth_success", "user_id": user_id, "subscriptions": []})
    );

    for channel in ["positions", "trades", "alarms", "bot_status", "trades"] {
        assert_eq!(
            ask(&mut ws, json!({"type": "subscribe", "channel": channel})).await,
            json!({"type": "subscribed", "channel": channel})
        );
    }
    assert_eq!(
        ask(
            &mut ws,
            json!({"type": "unsubscribe", "channel": "positions"})
        )
        .await,
        json!({"type": "unsubscribed", "channel": "positions"})
    );
    // A newer token of the same user: the answer lists the current subscriptions.
    let newer = server.login(&address, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let subscriptions = ["trades", "alarms", "bot_status"];
    assert_eq!(
        ask(&mut ws, auth(&newer)).await,
        json!({"type": "auth_success", "user_id": user_id, "subscriptions": subscriptions})
    );
    let (_, other_token) = server.user(&email("other")).await;
    assert_error(&ask(&mut ws, auth(&other_token)).await, "INVALID_REQUEST");

    let before = chrono::Utc::now();
    let pong = ask(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(pong["type"], "pong", "{pong}");
    let at = chrono::DateTime::parse_from_rfc3339(pong["timestamp"].as_str().unwrap()).unwrap();
    assert!((at.to_utc() - before).num_milliseconds().abs() < 5_000);

    // WebSocket ping frames are answered with pong frames carrying the same payload.
    ws.send(Message::Ping(b"hi".to_vec())).await.unwrap();
    let frame = tokio::time::timeout(WAIT, ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(frame, Message::Pong(b"hi".to_vec()));

    // The client closes: the server answers the close frame.
    ws.close(None).await.unwrap();
    let answer = tokio::time::timeout(WAIT, ws.next()).await.unwrap();
    assert!(matches!(answer, Some(Ok(Message::Close(_)))), "{answer:?}");
}

#[tokio::test]
async fn mistakes_are_answered_and_the_socket_stays_open() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("ws")).await;
    let mut ws = signed_in(&server, &token).await;
    let invalid_channel = ask(&mut ws, json!({"type": "subscribe", "channel": "news"})).await;
    assert_error(&invalid_channel, "INVALID_CHANNEL");
    assert!(
        invalid_channel["message"]
            .as_str()
            .unwrap()
            .contains("positions")
    );
    assert_error(
        &ask(&mut ws, json!({"type": "unsubscribe", "channel": "Trades"})).await,
        "INVALID_CHANNEL",
    );
    for request in [
        json!({"type": "subscribe"}),
        json!({"type": "subscribe", "channel": 7}),
        json!({"type": "order", "symbol": "BTC"}),
        json!({"channel": "trades"}),
        json!(["subscribe"]),
    ] {
        assert_error(&ask(&mut ws, request).await, "INVALID_REQUEST");
    }
    for frame in [
        Message::Text("{not json".into()),
        Message::Binary(b"{}".to_vec()),
    ] {
        ws.send(frame).await.unwrap();
        assert_error(&recv(&mut ws).await, "INVALID_REQUEST");
    }
    assert_eq!(ask(&mut ws, json!({"type": "ping"})).await["type"], "pong");
}

#[tokio::test]
async fn oversize_messages_close_with_1009() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("ws")).await;
    let mut ws = signed_in(&server, &token).await;
    let padding = "x".repeat(65 * 1024);
    send(&mut ws, json!({"type": "ping", "padding": padding})).await;
    assert_eq!(closed(&mut ws).await.0, 1009);
}

#[tokio::test]
async fn silence_is_closed_with_4001_after_the_auth_deadline() {
    let server = Server::options()
        .env("TRADEHOST_WS_AUTH_TIMEOUT_MS", "400")
        .start()
        .await;
    let started = Instant::now();
    let mut ws = connect(&server).await;
    // Ping frames are answered but do not extend the deadline.
    ws.send(Message::Ping(Vec::new())).await.unwrap();
    assert_eq!(closed(&mut ws).await.0, 4001);
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}

#[tokio::test]
async fn the_default_auth_deadline_is_ten_seconds() {
    let server = Server::start().await;
    let started = Instant::now();
    let mut ws = connect(&server).await;
    assert_eq!(
        closed_within(&mut ws, Duration::from_secs(15)).await.0,
        4001
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(10) && waited < Duration::from_secs(12),
        "{waited:?}"
    );
}

#[tokio::test]
async fn bad_tokens_get_an_error_then_4001() {
    // 0.0003 h rounds up to a 2 s access token, refused from the second after its expiry.
    let server = Server::options()
        .env("JWT_EXPIRATION_HOURS", "0.0003")
        .start()
        .await;
    let (_, token) = server.user(&email("ws")).await;
    for (value, code) in [
        ("Bearer garbage".to_string(), "TOKEN_INVALID"),
        (token.clone(), "TOKEN_INVALID"),
        (format!("Basic {token}"), "TOKEN_INVALID"),
        ("Bearer ".to_string(), "TOKEN_INVALID"),
    ] {
        let mut ws = connect(&server).await;
        let answer = ask(&mut ws, json!({"type": "auth", "token": value})).await;
        assert_error(&answer, code);
        assert_eq!(closed(&mut ws).await.0, 4001, "{value}");
    }
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let mut ws = connect(&server).await;
    assert_error(&ask(&mut ws, auth(&token)).await, "TOKEN_EXPIRED");
    assert_eq!(closed(&mut ws).await.0, 4001);
}

#[tokio::test]
async fn a_signed_out_session_is_refused() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("ws")).await;
    signed_in(&server, &token).await;
    server
        .raw(Method::POST, "/api/v1/auth/logout", Some(&token), "")
        .await
        .expect(200);
    let mut ws = connect(&server).await;
    assert_error(&ask(&mut ws, auth(&token)).await, "TOKEN_INVALID");
    assert_eq!(closed(&mut ws).await.0, 4001);
}

#[tokio::test]
async fn anything_before_auth_gets_an_error_then_4001() {
    let server = Server::start().await;
    for (frame, code) in [
        (
            json!({"type": "subscribe", "channel": "trades"}).to_string(),
            "TOKEN_INVALID",
        ),
        (json!({"type": "ping"}).to_string(), "TOKEN_INVALID"),
        ("{not json".to_string(), "INVALID_REQUEST"),
        (json!({"type": "auth"}).to_string(), "INVALID_REQUEST"),
    ] {
        let mut ws = connect(&server).await;
        ws.send(Message::Text(frame.clone())).await.unwrap();
        assert_error(&recv(&mut ws).await, code);
        assert_eq!(closed(&mut ws).await.0, 4001, "{frame}");
    }
}

#[tokio::test]
async fn a_plain_request_is_not_upgraded() {
    let server = Server::start().await;
    let reply = server.get("/ws/v1", None).await;
    reply.expect_error(400, "INVALID_REQUEST");
}
