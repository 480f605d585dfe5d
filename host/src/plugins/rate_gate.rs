//! Backing off when a venue says so. A broker call answered `rate-limited` closes the gate for
//! that plugin and user (or for the plugin's calls made without a user) until the venue's wait is
//! over; calls in the meantime are answered `rate-limited` without reaching the plugin, so a busy
//! bot, the supervisor's checks and a user's page refreshes never hammer a venue that asked them
//! to slow down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use super::bindings::types::BrokerError;

#[derive(Default)]
pub struct RateGate {
    /// The venue's last request to wait, per (plugin, user; "" for calls without one).
    closed: DashMap<(Arc<str>, String), Asked>,
}

#[derive(Clone, Copy)]
struct Asked {
    at: Instant,
    until: Instant,
}

impl RateGate {
    /// The error to answer instead of calling, while the gate is closed.
    pub fn closed(&self, plugin: &Arc<str>, scope: &str) -> Option<BrokerError> {
        let asked = *self.closed.get(&(plugin.clone(), scope.to_string()))?;
        let left = asked.until.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| {
            BrokerError::RateLimited(left.as_millis().clamp(1, u128::from(u32::MAX)) as u32)
        })
    }

    /// How long the venue still wants calls of `plugin` for `scope` to wait, if it asked for a
    /// wait at or after `since` (zero when that wait is already over).
    pub fn asked_since(&self, plugin: &str, scope: &str, since: Instant) -> Option<Duration> {
        let asked = *self.closed.get(&(Arc::from(plugin), scope.to_string()))?;
        (asked.at >= since).then(|| asked.until.saturating_duration_since(Instant::now()))
    }

    /// Closes the gate when `result` is the venue asking to wait; passes `result` on.
    pub fn observe<T>(
        &self,
        plugin: &Arc<str>,
        scope: &str,
        result: Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        if let Err(BrokerError::RateLimited(ms)) = &result {
            let at = Instant::now();
            let until = at + Duration::from_millis(u64::from((*ms).max(1)));
            self.closed
                .entry((plugin.clone(), scope.to_string()))
                .and_modify(|asked| {
                    asked.at = at;
                    asked.until = asked.until.max(until);
                })
                .or_insert(Asked { at, until });
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_limited_answer_closes_the_gate_for_that_user_until_the_wait_is_over() {
        let gate = RateGate::default();
        let plugin: Arc<str> = Arc::from("venue");
        assert!(gate.closed(&plugin, "alice").is_none());
        let passed: Result<(), _> =
            gate.observe(&plugin, "alice", Err(BrokerError::RateLimited(80)));
        assert_eq!(passed, Err(BrokerError::RateLimited(80)));
        match gate.closed(&plugin, "alice") {
            Some(BrokerError::RateLimited(ms)) => assert!((1..=80).contains(&ms), "{ms}"),
            other => panic!("{other:?}"),
        }
        // Other users and the plugin's calls without a user are not held back.
        assert!(gate.closed(&plugin, "bob").is_none());
        assert!(gate.closed(&plugin, "").is_none());
        // Other answers leave it as it is.
        let _ = gate.observe(
            &plugin,
            "bob",
            Err::<(), _>(BrokerError::Rejected("no".into())),
        );
        assert!(gate.closed(&plugin, "bob").is_none());
        std::thread::sleep(Duration::from_millis(100));
        assert!(gate.closed(&plugin, "alice").is_none());
    }

    #[test]
    fn a_wait_asked_for_during_a_piece_of_work_is_known_after_it() {
        let gate = RateGate::default();
        let plugin: Arc<str> = Arc::from("venue");
        let before = Instant::now();
        let _ = gate.observe(&plugin, "alice", Err::<(), _>(BrokerError::RateLimited(50)));
        let left = gate.asked_since("venue", "alice", before).expect("asked");
        assert!(left <= Duration::from_millis(50), "{left:?}");
        assert!(gate.asked_since("venue", "bob", before).is_none());
        // Asked before the work began: not this work's concern.
        assert!(gate.asked_since("venue", "alice", Instant::now()).is_none());
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(
            gate.asked_since("venue", "alice", before),
            Some(Duration::ZERO)
        );
    }
}
