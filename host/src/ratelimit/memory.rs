//! Limits counted in this process's memory: the limiter of a single instance, and what a shared
//! limiter falls back on while Redis does not answer.

use std::time::Duration;

use dashmap::DashMap;

use super::{Decision, RateLimiter};

#[derive(Debug, Clone, Copy)]
struct Window {
    start: i64,
    count: u32,
}

/// Counters in this process's memory, swept of finished windows periodically.
#[derive(Default)]
pub struct InMemoryRateLimiter {
    windows: DashMap<String, Window>,
}

impl InMemoryRateLimiter {
    pub(super) fn decide(
        &self,
        key: &str,
        limit: u32,
        window: Duration,
        count_it: bool,
        now: i64,
    ) -> Decision {
        let length = window.as_secs().max(1) as i64;
        let start = now - now.rem_euclid(length);
        if !count_it {
            let count = self
                .windows
                .get(key)
                .filter(|w| w.start == start)
                .map_or(0, |w| w.count);
            return Decision::of_window(count, limit, start, length, false);
        }
        // The key is copied only the first time it is seen.
        let count = |window: &mut Window| {
            if window.start != start {
                *window = Window { start, count: 0 };
            }
            window.count = window.count.saturating_add(1);
            window.count
        };
        let counted = match self.windows.get_mut(key) {
            Some(mut window) => count(&mut window),
            None => count(
                &mut self
                    .windows
                    .entry(key.to_string())
                    .or_insert(Window { start, count: 0 }),
            ),
        };
        Decision::of_window(counted, limit, start, length, true)
    }

    /// Forgets windows that have ended (those of an hour-long window live an hour).
    pub fn sweep(&self, longest_window: Duration) {
        let now = chrono::Utc::now().timestamp();
        let horizon = longest_window.as_secs() as i64;
        self.windows
            .retain(|_, window| now - window.start < horizon);
    }
}

#[rocket::async_trait]
impl RateLimiter for InMemoryRateLimiter {
    async fn hit(&self, key: &str, limit: u32, window: Duration) -> Decision {
        self.decide(key, limit, window, true, chrono::Utc::now().timestamp())
    }

    async fn peek(&self, key: &str, limit: u32, window: Duration) -> Decision {
        self.decide(key, limit, window, false, chrono::Utc::now().timestamp())
    }

    async fn clear(&self, key: &str) {
        self.windows.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ratelimit::MINUTE;

    #[test]
    fn fixed_window_counts_and_resets() {
        let limiter = InMemoryRateLimiter::default();
        let t0 = 1_700_000_080; // 40 s into the minute that starts at ..._040
        for n in 1..=3 {
            let d = limiter.decide("k", 3, MINUTE, true, t0);
            assert!(d.allowed);
            assert_eq!(d.remaining, 3 - n);
            assert_eq!(d.reset_at, 1_700_000_100);
        }
        assert!(!limiter.decide("k", 3, MINUTE, false, t0).allowed);
        let over = limiter.decide("k", 3, MINUTE, true, t0 + 5);
        assert!(!over.allowed);
        assert_eq!(over.remaining, 0);
        // The next window starts fresh; other keys are independent.
        assert!(limiter.decide("k", 3, MINUTE, true, t0 + 20).allowed);
        assert!(limiter.decide("other", 3, MINUTE, true, t0).allowed);
    }

    #[test]
    fn peek_does_not_count() {
        let limiter = InMemoryRateLimiter::default();
        for _ in 0..10 {
            assert!(limiter.decide("k", 1, MINUTE, false, 100).allowed);
        }
        assert!(limiter.decide("k", 1, MINUTE, true, 100).allowed);
        assert!(!limiter.decide("k", 1, MINUTE, false, 100).allowed);
    }
}
