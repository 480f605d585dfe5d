//! The event bus: what the engine announces after it has committed a change, fanned out to the
//! WebSocket connections of the user it concerns.
//!
//! Each message is serialised once and shared (`Arc<str>`) by every socket that receives it.
//! Per user there is one bounded broadcast channel: a socket that falls more than
//! [`SOCKET_BACKLOG`] messages behind is told it lagged and is closed by the WebSocket layer, so
//! a slow client never grows server memory. With several instances, an event of a user with a
//! socket on another instance also goes out on the cluster bus ([`crate::cluster::Bus`]), and
//! what other instances announce comes in through [`EventBus::deliver_from_elsewhere`], so a
//! socket on any instance gets its user's events wherever they happen. Instances tell each other
//! which users they have sockets for (when a socket opens, when one joins or missed messages,
//! and every [`WATCHING_REPEAT`]), so an event nobody listens to is not even made.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dashmap::DashMap;

use crate::cluster::{Bus, Message};
use crate::store::now_ms;

use serde::Serialize;
use tokio::sync::broadcast;

/// How many undelivered messages a socket may have before it is disconnected.
pub const SOCKET_BACKLOG: usize = 1024;

/// How often an instance repeats which users it has sockets for.
pub const WATCHING_REPEAT: Duration = Duration::from_secs(20);
/// How long another instance's word that it has sockets for a user holds unless repeated.
const WATCHING_FOR_MS: i64 = 3 * WATCHING_REPEAT.as_millis() as i64;
/// Users per message when an instance tells which users it has sockets for.
const WATCHING_CHUNK: usize = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Positions,
    Trades,
    Alarms,
    BotStatus,
    Backtests,
}

impl Channel {
    pub const ALL: [Channel; 5] = [
        Channel::Positions,
        Channel::Trades,
        Channel::Alarms,
        Channel::BotStatus,
        Channel::Backtests,
    ];

    pub fn parse(name: &str) -> Option<Channel> {
        Self::ALL
            .into_iter()
            .find(|channel| channel.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Positions => "positions",
            Channel::Trades => "trades",
            Channel::Alarms => "alarms",
            Channel::BotStatus => "bot_status",
            Channel::Backtests => "backtests",
        }
    }
}

/// One message for one user, already in its wire form `{type, channel, data}`.
#[derive(Debug)]
pub struct Event {
    pub channel: Channel,
    pub json: Arc<str>,
    /// Not an event but word that events were missed: the socket closes as lagging.
    pub missed: bool,
}

impl Event {
    pub fn new(channel: Channel, kind: &str, data: &impl Serialize) -> Event {
        #[derive(Serialize)]
        struct Wire<'a, T> {
            #[serde(rename = "type")]
            kind: &'a str,
            channel: &'a str,
            data: &'a T,
        }
        let json = serde_json::to_string(&Wire {
            kind,
            channel: channel.as_str(),
            data,
        })
        .expect("event data serialises");
        Event {
            channel,
            json: json.into(),
            missed: false,
        }
    }
}

pub struct EventBus {
    users: RwLock<HashMap<String, broadcast::Sender<Arc<Event>>>>,
    /// Where the other instances hear of events.
    cluster: Arc<Bus>,
    /// Users with a socket on another instance, until when that holds.
    watched_elsewhere: DashMap<String, i64>,
}

impl EventBus {
    pub fn new(cluster: Arc<Bus>) -> Self {
        EventBus {
            users: RwLock::default(),
            cluster,
            watched_elsewhere: DashMap::new(),
        }
    }

    /// Announces an event to every connection of `user_id`, here and on the other instances
    /// (no socket of the user here or elsewhere: dropped unmade).
    pub fn publish(&self, user_id: &str, channel: Channel, kind: &str, data: &impl Serialize) {
        let has_listeners = self
            .users
            .read()
            .expect("event bus lock")
            .get(user_id)
            .is_some_and(|sender| sender.receiver_count() > 0);
        let elsewhere = self.cluster.clustered() && self.watched_elsewhere(user_id);
        if !has_listeners && !elsewhere {
            return;
        }
        let event = Arc::new(Event::new(channel, kind, data));
        if elsewhere {
            self.cluster.send(Message::Event {
                user_id: Some(user_id.to_string()),
                channel: channel.as_str().to_string(),
                json: event.json.to_string(),
            });
        }
        if has_listeners {
            self.deliver(user_id, event);
        }
    }

    /// Announces the same event to every connected user, here and on the other instances (kill
    /// switch notices).
    pub fn publish_to_all(&self, channel: Channel, kind: &str, data: &impl Serialize) {
        let event = Arc::new(Event::new(channel, kind, data));
        if self.cluster.clustered() {
            self.cluster.send(Message::Event {
                user_id: None,
                channel: channel.as_str().to_string(),
                json: event.json.to_string(),
            });
        }
        self.deliver_to_all(event);
    }

    fn deliver_to_all(&self, event: Arc<Event>) {
        for sender in self.users.read().expect("event bus lock").values() {
            let _ = sender.send(event.clone());
        }
    }

    /// An event another instance announced, for this instance's sockets (of `user_id`, or of
    /// every user).
    pub fn deliver_from_elsewhere(&self, user_id: Option<&str>, channel: &str, json: &str) {
        let Some(channel) = Channel::parse(channel) else {
            tracing::warn!(
                channel,
                "cluster bus: an event on an unknown channel, skipped"
            );
            return;
        };
        let event = Arc::new(Event {
            channel,
            json: json.into(),
            missed: false,
        });
        match user_id {
            Some(user_id) => self.deliver(user_id, event),
            None => self.deliver_to_all(event),
        }
    }

    /// Events from other instances may have been missed: every socket here is closed as lagging
    /// (its client reconnects and reloads what it shows).
    pub fn lag_everyone(&self) {
        self.deliver_to_all(Arc::new(Event {
            channel: Channel::BotStatus,
            json: "".into(),
            missed: true,
        }));
    }

    pub fn deliver(&self, user_id: &str, event: Arc<Event>) {
        if let Some(sender) = self.users.read().expect("event bus lock").get(user_id) {
            let _ = sender.send(event);
        }
    }

    /// A receiver of everything announced to `user_id` from now on, here and (once they have
    /// heard of it) on the other instances.
    pub fn subscribe(&self, user_id: &str) -> broadcast::Receiver<Arc<Event>> {
        self.cluster.send(Message::Watching {
            user_ids: vec![user_id.to_string()],
        });
        if let Some(sender) = self.users.read().expect("event bus lock").get(user_id) {
            return sender.subscribe();
        }
        let mut users = self.users.write().expect("event bus lock");
        users
            .entry(user_id.to_string())
            .or_insert_with(|| broadcast::channel(SOCKET_BACKLOG).0)
            .subscribe()
    }

    /// Whether another instance said lately that it has a socket of the user.
    fn watched_elsewhere(&self, user_id: &str) -> bool {
        self.watched_elsewhere
            .get(user_id)
            .is_some_and(|until| *until > now_ms())
    }

    /// Another instance has sockets of these users.
    pub fn watching_elsewhere(&self, user_ids: Vec<String>) {
        let until = now_ms() + WATCHING_FOR_MS;
        for user_id in user_ids {
            self.watched_elsewhere.insert(user_id, until);
        }
    }

    /// Tells the other instances every user with a socket here.
    pub fn announce_watching(&self) {
        let users: Vec<String> = self
            .users
            .read()
            .expect("event bus lock")
            .iter()
            .filter(|(_, sender)| sender.receiver_count() > 0)
            .map(|(user_id, _)| user_id.clone())
            .collect();
        for chunk in users.chunks(WATCHING_CHUNK) {
            self.cluster.send(Message::Watching {
                user_ids: chunk.to_vec(),
            });
        }
    }

    /// Forgets users nobody listens to any more, here or elsewhere (called by the cache sweeper).
    pub fn sweep(&self) {
        self.users
            .write()
            .expect("event bus lock")
            .retain(|_, sender| sender.receiver_count() > 0);
        let now = now_ms();
        self.watched_elsewhere.retain(|_, until| *until > now);
    }

    pub fn connected_users(&self) -> usize {
        self.users
            .read()
            .expect("event bus lock")
            .values()
            .filter(|sender| sender.receiver_count() > 0)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus() -> EventBus {
        EventBus::new(Arc::new(Bus::new("test".into())))
    }

    #[tokio::test]
    async fn a_user_receives_only_their_events() {
        let bus = bus();
        let mut alice = bus.subscribe("alice");
        let mut bob = bus.subscribe("bob");
        bus.publish(
            "alice",
            Channel::Trades,
            "trade_executed",
            &serde_json::json!({"x": 1}),
        );
        let event = alice.recv().await.unwrap();
        assert_eq!(event.channel, Channel::Trades);
        assert_eq!(
            &*event.json,
            r#"{"type":"trade_executed","channel":"trades","data":{"x":1}}"#
        );
        assert!(bob.try_recv().is_err());
    }

    #[tokio::test]
    async fn a_slow_receiver_lags_instead_of_growing() {
        let bus = bus();
        let mut slow = bus.subscribe("u");
        for i in 0..SOCKET_BACKLOG + 10 {
            bus.publish("u", Channel::Positions, "position_update", &i);
        }
        assert!(matches!(
            slow.recv().await,
            Err(broadcast::error::RecvError::Lagged(_))
        ));
    }
}
