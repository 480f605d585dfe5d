//! Request counters: totals since start and a sliding minute (one slot per second) for the
//! admin metrics' requests per second, average response time and error rate.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const WINDOW_SECS: usize = 60;

#[derive(Clone, Copy, Default)]
struct Slot {
    second: u64,
    requests: u64,
    micros: u64,
    errors: u64,
}

pub struct RequestStats {
    started: Instant,
    total: AtomicU64,
    total_errors: AtomicU64,
    total_micros: AtomicU64,
    window: Mutex<[Slot; WINDOW_SECS]>,
}

/// The last minute's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Minute {
    pub requests: u64,
    pub requests_per_second: f64,
    pub avg_response_time_ms: f64,
    /// Share of 5xx answers (0 to 1).
    pub error_rate: f64,
}

impl Default for RequestStats {
    fn default() -> Self {
        RequestStats {
            started: Instant::now(),
            total: AtomicU64::new(0),
            total_errors: AtomicU64::new(0),
            total_micros: AtomicU64::new(0),
            window: Mutex::new([Slot::default(); WINDOW_SECS]),
        }
    }
}

impl RequestStats {
    fn second(&self, at: Instant) -> u64 {
        at.duration_since(self.started).as_secs()
    }

    pub fn record(&self, elapsed: Duration, server_error: bool) {
        self.record_at(Instant::now(), elapsed, server_error);
    }

    fn record_at(&self, now: Instant, elapsed: Duration, server_error: bool) {
        let micros = elapsed.as_micros() as u64;
        self.total.fetch_add(1, Ordering::Relaxed);
        self.total_micros.fetch_add(micros, Ordering::Relaxed);
        if server_error {
            self.total_errors.fetch_add(1, Ordering::Relaxed);
        }
        let second = self.second(now);
        let mut window = self.window.lock().expect("request stats lock");
        let slot = &mut window[second as usize % WINDOW_SECS];
        if slot.second != second {
            *slot = Slot {
                second,
                ..Slot::default()
            };
        }
        slot.requests += 1;
        slot.micros += micros;
        slot.errors += server_error as u64;
    }

    pub fn minute(&self) -> Minute {
        self.minute_at(Instant::now())
    }

    fn minute_at(&self, now: Instant) -> Minute {
        let current = self.second(now);
        let window = self.window.lock().expect("request stats lock");
        let recent = window.iter().filter(|slot| {
            slot.requests > 0 && current.saturating_sub(slot.second) < WINDOW_SECS as u64
        });
        let (requests, micros, errors) = recent.fold((0, 0, 0), |(r, m, e), slot| {
            (r + slot.requests, m + slot.micros, e + slot.errors)
        });
        // A server up for less than a minute divides by its age.
        let span = (current + 1).min(WINDOW_SECS as u64) as f64;
        Minute {
            requests,
            requests_per_second: requests as f64 / span,
            avg_response_time_ms: if requests == 0 {
                0.0
            } else {
                micros as f64 / requests as f64 / 1000.0
            },
            error_rate: if requests == 0 {
                0.0
            } else {
                errors as f64 / requests as f64
            },
        }
    }

    pub fn uptime(&self) -> Duration {
        self.started.elapsed()
    }

    /// (requests, 5xx answers, summed response time in seconds) since start.
    pub fn totals(&self) -> (u64, u64, f64) {
        (
            self.total.load(Ordering::Relaxed),
            self.total_errors.load(Ordering::Relaxed),
            self.total_micros.load(Ordering::Relaxed) as f64 / 1e6,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minute_window_counts_recent_requests_only() {
        let stats = RequestStats::default();
        let start = stats.started;
        for n in 0..10 {
            stats.record_at(
                start + Duration::from_millis(100 * n),
                Duration::from_millis(2),
                n == 0,
            );
        }
        let minute = stats.minute_at(start + Duration::from_millis(999));
        assert_eq!(minute.requests, 10);
        assert_eq!(minute.requests_per_second, 10.0);
        assert!((minute.avg_response_time_ms - 2.0).abs() < 1e-9);
        assert!((minute.error_rate - 0.1).abs() < 1e-9);
        // Two minutes later they have left the window but stay in the totals.
        let later = stats.minute_at(start + Duration::from_secs(125));
        assert_eq!(later.requests, 0);
        assert_eq!(later.error_rate, 0.0);
        assert_eq!(stats.totals().0, 10);
        assert_eq!(stats.totals().1, 1);
    }
}
