//! `/ws/v1`: a signed-in user's live events (positions, trades, alarms, bot status) from the
//! [`EventBus`](crate::events::EventBus), as JSON text frames.
//!
//! - The upgrade is not authenticated (browsers cannot set headers on it). The first message must
//!   be `{"type":"auth","token":"Bearer <jwt>"}` within `TRADEHOST_WS_AUTH_TIMEOUT_MS` (10 s),
//!   checked as the HTTP guard checks a request. Silence, another message or a bad token close the
//!   socket with 4001, the last two after an `error` message.
//! - Then `subscribe` / `unsubscribe` a channel and `ping`; each is answered. Mistakes (unknown
//!   channel, invalid JSON, unknown type) are answered with an `error` and the socket stays open.
//!   A later `auth` with a newer token of the same user is answered with `auth_success`.
//! - Events of subscribed channels are forwarded as the bus serialised them.
//! - The session is checked again every 30 s, so a sign-out or a suspension ends the stream (4001).
//! - Bounded memory: a socket that falls [`SOCKET_BACKLOG`](crate::events::SOCKET_BACKLOG) events
//!   behind is closed with 4008, a client message over 64 KiB with 1009, and a client that takes
//!   longer than 10 s to accept a frame is dropped.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use rocket::futures::{SinkExt, StreamExt};
use rocket::tokio::sync::broadcast::error::RecvError;
use rocket::tokio::time::{Instant, interval_at, timeout, timeout_at};
use rocket::{State, get};
use rocket_ws::frame::{CloseCode, CloseFrame};
use rocket_ws::result::{Error as WsError, Result as WsResult};
use rocket_ws::stream::DuplexStream;
use rocket_ws::{Config, Message, WebSocket};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::api::envelope::timestamp_now;
use crate::api::openapi::prelude::*;
use crate::auth::guards;
use crate::auth::sessions::Principal;
use crate::error::{ApiError, ErrorCode};
use crate::events::{Channel, Event};

/// Largest client message (and frame) accepted.
const MAX_MESSAGE: usize = 64 << 10;
/// How long a frame may take to go out before the client counts as gone.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// How often a connection checks that its session is still live.
const SESSION_CHECK: Duration = Duration::from_secs(30);
/// How long to wait for the client's answer to our close frame.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

// Close codes: the protocol's own, then the standard ones.
const CLOSE_UNAUTHENTICATED: u16 = 4001;
const CLOSE_TOO_SLOW: u16 = 4008;
const CLOSE_TOO_BIG: u16 = 1009;
const CLOSE_SERVER_ERROR: u16 = 1011;
const CLOSE_GOING_AWAY: u16 = 1001;

crate::api::handlers![connect];

#[utoipa::path(
    tag = "websocket-info",
    operation_id = "websocket",
    summary = "Live events (WebSocket)",
    description = "Upgrade to a WebSocket (Swagger UI cannot open one; use a WebSocket client). The upgrade itself needs no token. Protocol, as JSON text frames:\n\n1. Send `{\"type\":\"auth\",\"token\":\"Bearer <jwt>\"}` within 10 s, else the socket closes with 4001 (a bad token gets `{type: \"error\", code: \"TOKEN_INVALID\"|\"TOKEN_EXPIRED\"}` first). The answer is `{type: \"auth_success\", user_id, subscriptions}`.\n2. `{\"type\":\"subscribe\",\"channel\":\"positions\"}` (or `unsubscribe`); channels `positions`, `trades`, `alarms`, `bot_status`; answered `subscribed` / `unsubscribed`, or `{type: \"error\", code: \"INVALID_CHANNEL\"}`. `{\"type\":\"ping\"}` is answered with `pong`.\n3. Events arrive as `{type, channel, data}`: `trade_executed` (trades), `position_update` (positions), `alarm_triggered` and `alarm_cleared` (alarms), `bot_status` and `kill_switch` (bot_status).\n\nThe session is re-checked every 30 s (sign-out or suspension closes with 4001). A client that falls too far behind is closed with 4008; a message over 64 KiB with 1009.",
    params(
        ("Upgrade" = String, Header, description = "Must be `websocket`.", example = json!("websocket")),
        ("Connection" = String, Header, description = "Must include `Upgrade`.", example = json!("Upgrade")),
        ("Sec-WebSocket-Version" = String, Header, description = "Must be `13`.", example = json!("13")),
        ("Sec-WebSocket-Key" = String, Header, description = "The client's random key.", example = json!("dGhlIHNhbXBsZSBub25jZQ=="))
    ),
    responses(
        (status = 101, description = "Switching Protocols: the WebSocket is open."),
        (status = 400, response = Platform400InvalidRequest)
    ),
)]
#[get("/")]
fn connect(ws: WebSocket, app: &State<App>) -> rocket_ws::Channel<'static> {
    let app = app.inner().clone();
    let config = Config {
        max_message_size: Some(MAX_MESSAGE),
        max_frame_size: Some(MAX_MESSAGE),
        ..Config::default()
    };
    ws.config(config).channel(move |stream| {
        Box::pin(async move {
            Connection { stream, app }.run().await;
            Ok(())
        })
    })
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Request {
    Auth { token: String },
    Subscribe { channel: String },
    Unsubscribe { channel: String },
    Ping,
}

/// One read from the client, sorted.
enum Incoming {
    Request(Request),
    /// Not a message of the protocol; the reason.
    Invalid(String),
    /// Ping and pong frames: the WebSocket layer answers pings itself.
    Control,
    TooBig,
    /// The client sent a close frame.
    Closed,
    /// The connection ended or broke.
    Gone,
}

impl Incoming {
    fn of(read: Option<WsResult<Message>>) -> Incoming {
        match read {
            Some(Ok(Message::Text(text))) => match serde_json::from_str(&text) {
                Ok(request) => Incoming::Request(request),
                Err(err) => Incoming::Invalid(format!("Invalid message: {err}")),
            },
            Some(Ok(Message::Binary(_))) => {
                Incoming::Invalid("Messages must be JSON in text frames".to_string())
            }
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Incoming::Control,
            Some(Ok(Message::Close(_))) => Incoming::Closed,
            Some(Err(WsError::Capacity(_))) => Incoming::TooBig,
            Some(Err(_)) | None => Incoming::Gone,
        }
    }
}

/// What a connection does next.
enum Next {
    Continue,
    Close(u16, &'static str),
    /// Stop without a close frame (the client is gone or has closed).
    End,
}

struct Connection {
    stream: DuplexStream,
    app: App,
}

/// A connection after `auth`.
struct Session {
    principal: Principal,
    subscriptions: HashSet<Channel>,
}

impl Connection {
    async fn run(mut self) {
        let next = match self.wait_for_auth().await {
            Ok(principal) => self.serve(principal).await,
            Err(next) => next,
        };
        match next {
            Next::Close(code, reason) => self.close(code, reason).await,
            Next::Continue | Next::End => {}
        }
    }

    /// Waits for the `auth` message; anything else ends the connection.
    async fn wait_for_auth(&mut self) -> Result<Principal, Next> {
        let deadline = Instant::now() + self.app.config.ws_auth_timeout;
        loop {
            let Ok(read) = timeout_at(deadline, self.stream.next()).await else {
                return Err(Next::Close(
                    CLOSE_UNAUTHENTICATED,
                    "authentication timed out",
                ));
            };
            let refusal = match Incoming::of(read) {
                Incoming::Request(Request::Auth { token }) => {
                    return match guards::authenticate(&self.app, &token).await {
                        Ok(principal) => Ok(principal),
                        Err(err) => Err(self.refuse(err).await),
                    };
                }
                Incoming::Request(_) => ApiError::new(
                    ErrorCode::TokenInvalid,
                    r#"Authenticate first: send {"type":"auth","token":"Bearer <jwt>"}"#,
                ),
                Incoming::Invalid(reason) => ApiError::new(ErrorCode::InvalidRequest, reason),
                Incoming::Control => continue,
                Incoming::TooBig => return Err(Next::Close(CLOSE_TOO_BIG, "message too big")),
                Incoming::Closed => return Err(self.finish().await),
                Incoming::Gone => return Err(Next::End),
            };
            return Err(self.refuse(refusal).await);
        }
    }

    /// The authenticated stream: client requests, the user's events, the periodic session check.
    async fn serve(&mut self, principal: Principal) -> Next {
        let mut events = self.app.events.subscribe(&principal.user_id);
        let mut session = Session {
            principal,
            subscriptions: HashSet::new(),
        };
        let mut next = self.send_json(session.auth_success()).await;
        let mut session_check = interval_at(Instant::now() + SESSION_CHECK, SESSION_CHECK);
        while let Next::Continue = next {
            next = rocket::tokio::select! {
                read = self.stream.next() => self.on_read(read, &mut session).await,
                event = events.recv() => self.on_event(event, &session).await,
                _ = session_check.tick() => self.check_session(&session.principal).await,
            };
        }
        next
    }

    async fn on_event(&mut self, event: Result<Arc<Event>, RecvError>, session: &Session) -> Next {
        match event {
            Ok(event) if event.missed => {
                let user_id = &session.principal.user_id;
                tracing::info!(
                    user_id,
                    "websocket closed: events from other instances were missed"
                );
                Next::Close(CLOSE_TOO_SLOW, "events were missed")
            }
            Ok(event) if session.subscriptions.contains(&event.channel) => {
                self.send(Message::Text(event.json.to_string())).await
            }
            Ok(_) => Next::Continue,
            Err(RecvError::Lagged(missed)) => {
                let user_id = &session.principal.user_id;
                tracing::info!(user_id, missed, "websocket closed: client too slow");
                Next::Close(CLOSE_TOO_SLOW, "too slow")
            }
            Err(RecvError::Closed) => Next::Close(CLOSE_GOING_AWAY, "server shutting down"),
        }
    }

    /// A signed-out or suspended session ends the stream; a database failure does not.
    async fn check_session(&mut self, principal: &Principal) -> Next {
        let Principal {
            user_id,
            session_id,
            ..
        } = principal;
        match self
            .app
            .sessions
            .principal(&self.app.db, session_id, user_id)
            .await
        {
            Ok(_) => Next::Continue,
            Err(err) if err.is_internal() => {
                log_internal("session check", &err);
                Next::Continue
            }
            Err(err) => self.refuse(err).await,
        }
    }

    async fn on_read(&mut self, read: Option<WsResult<Message>>, session: &mut Session) -> Next {
        let request = match Incoming::of(read) {
            Incoming::Request(request) => request,
            Incoming::Invalid(reason) => {
                return self.error(ErrorCode::InvalidRequest, &reason).await;
            }
            Incoming::Control => return Next::Continue,
            Incoming::TooBig => return Next::Close(CLOSE_TOO_BIG, "message too big"),
            Incoming::Closed => return self.finish().await,
            Incoming::Gone => return Next::End,
        };
        match request {
            Request::Auth { token } => match guards::authenticate(&self.app, &token).await {
                Ok(principal) if principal.user_id == session.principal.user_id => {
                    session.principal = principal;
                    self.send_json(session.auth_success()).await
                }
                Ok(_) => {
                    self.error(
                        ErrorCode::InvalidRequest,
                        "This connection is signed in as another user",
                    )
                    .await
                }
                Err(err) => self.refuse(err).await,
            },
            Request::Subscribe { channel } => match Channel::parse(&channel) {
                Some(parsed) => {
                    session.subscriptions.insert(parsed);
                    self.send_json(json!({"type": "subscribed", "channel": channel}))
                        .await
                }
                None => self.invalid_channel(&channel).await,
            },
            Request::Unsubscribe { channel } => match Channel::parse(&channel) {
                Some(parsed) => {
                    session.subscriptions.remove(&parsed);
                    self.send_json(json!({"type": "unsubscribed", "channel": channel}))
                        .await
                }
                None => self.invalid_channel(&channel).await,
            },
            Request::Ping => {
                self.send_json(json!({"type": "pong", "timestamp": timestamp_now()}))
                    .await
            }
        }
    }

    /// Answers a failed authentication: the error, then close 4001 (1011 for a server fault).
    async fn refuse(&mut self, err: ApiError) -> Next {
        if err.is_internal() {
            log_internal("authentication", &err);
            self.error(
                ErrorCode::InternalError,
                ErrorCode::InternalError.default_message(),
            )
            .await;
            return Next::Close(CLOSE_SERVER_ERROR, "internal error");
        }
        match self.error(err.code, &err.message).await {
            Next::Continue => Next::Close(CLOSE_UNAUTHENTICATED, "authentication failed"),
            other => other,
        }
    }

    async fn invalid_channel(&mut self, channel: &str) -> Next {
        let known = Channel::ALL.map(Channel::as_str).join(", ");
        let message = format!("Unknown channel {channel:?}; the channels are {known}");
        self.error_code("INVALID_CHANNEL", &message).await
    }

    async fn error(&mut self, code: ErrorCode, message: &str) -> Next {
        self.error_code(code.as_str(), message).await
    }

    /// `INVALID_CHANNEL` exists only here, so codes are strings rather than [`ErrorCode`]s.
    async fn error_code(&mut self, code: &str, message: &str) -> Next {
        self.send_json(json!({"type": "error", "code": code, "message": message}))
            .await
    }

    async fn send_json(&mut self, message: Value) -> Next {
        self.send(Message::Text(message.to_string())).await
    }

    async fn send(&mut self, message: Message) -> Next {
        match timeout(SEND_TIMEOUT, self.stream.send(message)).await {
            Ok(Ok(())) => Next::Continue,
            Ok(Err(_)) | Err(_) => Next::End,
        }
    }

    /// Sends a close frame and waits briefly for the client's.
    async fn close(&mut self, code: u16, reason: &'static str) {
        let frame = CloseFrame {
            code: CloseCode::from(code),
            reason: reason.into(),
        };
        if let Ok(Ok(())) = timeout(SEND_TIMEOUT, self.stream.close(Some(frame))).await {
            self.finish().await;
        }
    }

    /// Reads until the closing handshake completes, which also sends the answer to a client's
    /// close frame.
    async fn finish(&mut self) -> Next {
        let _ = timeout(CLOSE_TIMEOUT, async {
            while let Some(Ok(_)) = self.stream.next().await {}
        })
        .await;
        Next::End
    }
}

fn log_internal(during: &str, err: &ApiError) {
    let detail = err.log.as_deref().unwrap_or(&err.message);
    tracing::error!("websocket {during} failed: {detail}");
}

impl Session {
    fn auth_success(&self) -> Value {
        let subscriptions: Vec<&str> = Channel::ALL
            .into_iter()
            .filter(|channel| self.subscriptions.contains(channel))
            .map(Channel::as_str)
            .collect();
        json!({
            "type": "auth_success",
            "user_id": self.principal.user_id,
            "subscriptions": subscriptions,
        })
    }
}

#[cfg(test)]
mod tests {
    use rocket::fairing::AdHoc;
    use tokio::net::TcpStream;
    use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

    use super::*;
    use crate::auth::ClientMeta;
    use crate::auth::service::{self, RegisterRequest};
    use crate::config::AppConfig;
    use crate::events::SOCKET_BACKLOG;

    type Client = WebSocketStream<MaybeTlsStream<TcpStream>>;

    /// A real server on a free port (a local client cannot upgrade), with its `App` to publish on.
    async fn serve() -> (App, String, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_string_lossy().to_string();
        let lookup = move |name: &str| match name {
            "TRADEHOST_DATA_DIR" => Some(data_dir.clone()),
            "PORT" => Some("0".to_string()),
            _ => None,
        };
        let figment = AppConfig::rocket_figment(&lookup).unwrap();
        let app = App::init(AppConfig::load(&figment, &lookup).unwrap())
            .await
            .unwrap();
        let (port_tx, port_rx) = tokio::sync::oneshot::channel();
        let server =
            crate::rocket(figment, app.clone()).attach(AdHoc::on_liftoff("port", |rocket| {
                Box::pin(async move {
                    let _ = port_tx.send(rocket.config().port);
                })
            }));
        tokio::spawn(server.launch());
        let url = format!("ws://127.0.0.1:{}/ws/v1", port_rx.await.unwrap());
        (app, url, dir)
    }

    /// Registers and signs in a user; returns (user id, access token).
    async fn user(app: &App, email: &str) -> (String, String) {
        let password = "correct horse battery staple";
        let request = RegisterRequest {
            email: email.to_string(),
            password: password.to_string(),
            full_name: "Test User".to_string(),
            accept_terms: true,
        };
        let meta = ClientMeta::default();
        service::register(app, request, &meta).await.unwrap();
        let login = service::login(app, email, password, &meta).await.unwrap();
        (login.user.user_id, login.access_token)
    }

    async fn recv(client: &mut Client) -> Message {
        timeout(Duration::from_secs(5), client.next())
            .await
            .expect("a frame within 5 s")
            .expect("the socket is open")
            .expect("a valid frame")
    }

    async fn ask(client: &mut Client, request: Value) -> Value {
        client
            .send(Message::Text(request.to_string()))
            .await
            .unwrap();
        let Message::Text(answer) = recv(client).await else {
            panic!("expected a text frame");
        };
        serde_json::from_str(&answer).unwrap()
    }

    /// A socket of `token` subscribed to `channels`.
    async fn subscribed(url: &str, token: &str, channels: &[&str]) -> Client {
        let (mut client, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let auth = json!({"type": "auth", "token": format!("Bearer {token}")});
        assert_eq!(ask(&mut client, auth).await["type"], "auth_success");
        for channel in channels {
            let request = json!({"type": "subscribe", "channel": channel});
            assert_eq!(ask(&mut client, request).await["type"], "subscribed");
        }
        client
    }

    #[tokio::test]
    async fn subscribed_events_arrive_verbatim_and_only_to_their_user() {
        let (app, url, _dir) = serve().await;
        let (alice, alice_token) = user(&app, "alice@example.com").await;
        let (bob, bob_token) = user(&app, "bob@example.com").await;
        let mut alice_socket = subscribed(&url, &alice_token, &["trades", "alarms"]).await;
        let mut bob_socket = subscribed(&url, &bob_token, &["trades"]).await;

        let trade = json!({"trade_id": "t1", "price": "101.5"});
        app.events
            .publish(&alice, Channel::Positions, "position_update", &json!({}));
        app.events
            .publish(&alice, Channel::Trades, "trade_executed", &trade);
        app.events.publish(
            &bob,
            Channel::Trades,
            "trade_executed",
            &json!({"trade_id": "t2"}),
        );
        // Events of one user arrive in order: the unsubscribed position update was skipped.
        let expected = Event::new(Channel::Trades, "trade_executed", &trade);
        assert_eq!(
            recv(&mut alice_socket).await,
            Message::Text(expected.json.to_string())
        );
        let Message::Text(bobs) = recv(&mut bob_socket).await else {
            panic!("expected a text frame");
        };
        assert!(bobs.contains("t2") && !bobs.contains("t1"), "{bobs}");

        let unsubscribe = json!({"type": "unsubscribe", "channel": "trades"});
        assert_eq!(
            ask(&mut alice_socket, unsubscribe).await["type"],
            "unsubscribed"
        );
        app.events
            .publish(&alice, Channel::Trades, "trade_executed", &json!({}));
        app.events.publish(
            &alice,
            Channel::Alarms,
            "alarm",
            &json!({"level": "warning"}),
        );
        let Message::Text(next) = recv(&mut alice_socket).await else {
            panic!("expected a text frame");
        };
        assert!(
            next.starts_with(r#"{"type":"alarm","channel":"alarms""#),
            "{next}"
        );
    }

    /// On a current-thread runtime, publishing without yielding leaves the socket no chance to
    /// keep up.
    #[tokio::test]
    async fn a_socket_that_falls_behind_is_closed_with_4008() {
        let (app, url, _dir) = serve().await;
        let (id, token) = user(&app, "slow@example.com").await;
        let mut client = subscribed(&url, &token, &["positions"]).await;
        for i in 0..SOCKET_BACKLOG + 1 {
            app.events
                .publish(&id, Channel::Positions, "position_update", &i);
        }
        let Message::Close(Some(frame)) = recv(&mut client).await else {
            panic!("expected a close frame");
        };
        assert_eq!(u16::from(frame.code), CLOSE_TOO_SLOW);
        assert_eq!(frame.reason, "too slow");
        assert_eq!(app.events.connected_users(), 0);
    }
}
