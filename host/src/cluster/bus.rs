//! What one instance tells the others, through Redis pub/sub on one channel
//! (`<TRADEHOST_REDIS_PREFIX>:bus`): events for users' sockets, ended sessions and changed users
//! (so a cached session check never outlives a sign-out elsewhere), the kill switch, and plugin
//! changes.
//!
//! Sending never waits: messages go into a bounded queue that one task publishes in order, so
//! what one instance sends arrives everywhere in the order it was sent. A message that does not
//! fit the queue, or is sent while Redis is away, is lost for the other instances; both are
//! logged and counted (`/metrics`), and an instance whose subscription broke closes its local
//! sockets as lagging when it is back, so their clients reload what they show rather than miss
//! events silently.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rocket::futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// Messages waiting to be published; more are dropped (and counted) rather than buffered.
const QUEUE: usize = 65_536;
/// Messages published in one round trip.
const BATCH: usize = 256;
/// How long a batch may take to publish before it counts as lost.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(2);
/// Wait before connecting again after Redis went away.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// What an instance tells the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// An event for the sockets of `user_id` (none: every connected user), in its wire form.
    Event {
        user_id: Option<String>,
        channel: String,
        json: String,
    },
    /// A session was signed out or revoked.
    SessionEnded { session_id: String },
    /// A user's row changed (tier, status, role, password) or all their sessions ended.
    UserChanged { user_id: String },
    /// The kill switch was switched on or off.
    KillSwitch { active: bool },
    /// An instance asks for a user's lease to act on their trading: the holder gives it up.
    HandOver { user_id: String },
    /// A plugin's stored versions or settings changed (upload, activation, rollback,
    /// configuration).
    PluginChanged { name: String },
    /// Mail was queued: the instance delivering mail sends it now rather than at its next round.
    MailQueued,
    /// The sender has WebSockets of these users: their events are to be sent to it.
    Watching { user_ids: Vec<String> },
    /// The sender joined or missed messages: the others say which users they have sockets for.
    WhoIsWatching,
}

#[derive(Serialize, Deserialize)]
struct Envelope {
    from: String,
    #[serde(flatten)]
    message: Message,
}

/// How the bus is doing, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusStatus {
    /// Instances are connected through Redis (`REDIS_URL`).
    pub clustered: bool,
    /// This instance is subscribed now.
    pub subscribed: bool,
    pub published: u64,
    pub received: u64,
    /// Messages the other instances did not get (queue full, or Redis away).
    pub lost: u64,
}

#[derive(Default)]
struct Counters {
    subscribed: AtomicBool,
    published: AtomicU64,
    received: AtomicU64,
    lost: AtomicU64,
}

/// What the subscription hands over: another instance's message, word that this instance hears
/// the others (it has just subscribed), or word that the subscription was broken and is back
/// (messages sent meanwhile were missed).
#[derive(Debug)]
pub enum Received {
    Message(Message),
    Joined,
    Gap,
}

/// This instance's end of the bus.
pub struct Bus {
    instance: String,
    outbound: OnceLock<mpsc::Sender<Message>>,
    counters: Arc<Counters>,
}

impl Bus {
    /// An instance on its own until [`Bus::connect`]: nothing is sent anywhere.
    pub fn new(instance: String) -> Self {
        Bus {
            instance,
            outbound: OnceLock::new(),
            counters: Arc::default(),
        }
    }

    /// Joins the instances on the Redis at `url`: from now on what this instance sends is
    /// published in order, and what the others send comes out of the returned receiver.
    pub fn connect(&self, url: &str, prefix: &str) -> anyhow::Result<mpsc::Receiver<Received>> {
        let client = redis::Client::open(url)?;
        let channel = format!("{prefix}:bus");
        let (outbound, queue) = mpsc::channel(QUEUE);
        let (inbound, received) = mpsc::channel(QUEUE);
        if self.outbound.set(outbound).is_err() {
            anyhow::bail!("the cluster bus is already connected");
        }
        tokio::spawn(publish(
            client.clone(),
            channel.clone(),
            self.instance.clone(),
            queue,
            self.counters.clone(),
        ));
        tokio::spawn(subscribe(
            client,
            channel,
            self.instance.clone(),
            self.counters.clone(),
            inbound,
        ));
        Ok(received)
    }

    /// This instance's id (`TRADEHOST_INSTANCE_ID`, or made up at start).
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Whether other instances may be listening (messages are worth making).
    pub fn clustered(&self) -> bool {
        self.outbound.get().is_some()
    }

    /// Tells the other instances; never waits.
    pub fn send(&self, message: Message) {
        let Some(outbound) = self.outbound.get() else {
            return;
        };
        if outbound.try_send(message).is_err()
            && self
                .counters
                .lost
                .fetch_add(1, Ordering::Relaxed)
                .is_multiple_of(10_000)
        {
            tracing::warn!("cluster bus: the publish queue is full; messages are being dropped");
        }
    }

    pub fn status(&self) -> BusStatus {
        let c = &self.counters;
        BusStatus {
            clustered: self.clustered(),
            subscribed: c.subscribed.load(Ordering::Relaxed),
            published: c.published.load(Ordering::Relaxed),
            received: c.received.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
        }
    }
}

/// Publishes the queue in order, a batch per round trip; a batch Redis does not take is lost.
async fn publish(
    client: redis::Client,
    channel: String,
    instance: String,
    mut queue: mpsc::Receiver<Message>,
    counters: Arc<Counters>,
) {
    let mut connection: Option<redis::aio::MultiplexedConnection> = None;
    let mut batch = Vec::with_capacity(BATCH);
    while queue.recv_many(&mut batch, BATCH).await > 0 {
        let mut pipe = redis::pipe();
        let count = batch.len() as u64;
        for message in batch.drain(..) {
            let envelope = Envelope {
                from: instance.clone(),
                message,
            };
            let payload = serde_json::to_string(&envelope).expect("messages serialise");
            pipe.cmd("PUBLISH").arg(&channel).arg(payload).ignore();
        }
        if connection.is_none() {
            connection = client.get_multiplexed_async_connection().await.ok();
        }
        let sent = match &mut connection {
            Some(conn) => matches!(
                tokio::time::timeout(PUBLISH_TIMEOUT, pipe.query_async::<()>(conn)).await,
                Ok(Ok(()))
            ),
            None => false,
        };
        if sent {
            counters.published.fetch_add(count, Ordering::Relaxed);
        } else {
            connection = None;
            counters.lost.fetch_add(count, Ordering::Relaxed);
            tracing::warn!(
                count,
                "cluster bus: Redis did not take the messages; they are lost"
            );
        }
    }
}

/// Listens for the other instances' messages, subscribing again whenever Redis went away.
async fn subscribe(
    client: redis::Client,
    channel: String,
    instance: String,
    counters: Arc<Counters>,
    inbound: mpsc::Sender<Received>,
) {
    let mut ever_subscribed = false;
    loop {
        match client.get_async_pubsub().await {
            Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                Ok(()) => {
                    counters.subscribed.store(true, Ordering::Relaxed);
                    if ever_subscribed {
                        tracing::info!("cluster bus: subscribed again");
                        let _ = inbound.send(Received::Gap).await;
                    } else {
                        let _ = inbound.send(Received::Joined).await;
                    }
                    ever_subscribed = true;
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let Ok(envelope) =
                            serde_json::from_slice::<Envelope>(message.get_payload_bytes())
                        else {
                            tracing::warn!("cluster bus: a message that does not parse, skipped");
                            continue;
                        };
                        if envelope.from == instance {
                            continue;
                        }
                        counters.received.fetch_add(1, Ordering::Relaxed);
                        if inbound
                            .try_send(Received::Message(envelope.message))
                            .is_err()
                        {
                            counters.lost.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    counters.subscribed.store(false, Ordering::Relaxed);
                    tracing::warn!("cluster bus: the subscription broke; subscribing again");
                }
                Err(err) => tracing::warn!(error = %err, "cluster bus: cannot subscribe"),
            },
            Err(err) => tracing::warn!(error = %err, "cluster bus: Redis does not answer"),
        }
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_their_form_through_the_envelope() {
        let message = Message::Event {
            user_id: Some("u1".into()),
            channel: "trades".into(),
            json: r#"{"type":"trade_executed"}"#.into(),
        };
        let text = serde_json::to_string(&Envelope {
            from: "a".into(),
            message: message.clone(),
        })
        .unwrap();
        assert!(text.contains(r#""kind":"event""#), "{text}");
        let back: Envelope = serde_json::from_str(&text).unwrap();
        assert_eq!((back.from.as_str(), back.message), ("a", message));
    }
}
