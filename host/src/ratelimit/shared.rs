//! Limits shared by every instance through Redis: one fixed window per key, counted by a Lua
//! script on Redis's clock, so instances whose clocks differ agree on the window and on
//! `X-RateLimit-Reset`.
//!
//! When Redis does not answer (within [`REDIS_TIMEOUT`]), this instance counts in its own memory
//! and Redis is asked again after [`RETRY_AFTER`]: requests are never refused or held up because
//! Redis is away, but for that time each instance grants the limit on its own. The switch both
//! ways is logged, and `/metrics` and `/health` show it (see [`LimiterStatus`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use redis::Script;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{Decision, InMemoryRateLimiter, LimiterStatus, RateLimiter};

/// How long a request waits on Redis before it is decided in memory.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(150);
/// How long after a failure Redis is left alone before it is asked again.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Counts one event (ARGV[2] = "1") or reads the count (ARGV[2] = "0") in the window of
/// ARGV[1] seconds that holds Redis's present time. Answers {count, window start}.
const COUNT_SCRIPT: &str = r#"
local now = tonumber(redis.call('TIME')[1])
local length = tonumber(ARGV[1])
local start = now - (now % length)
local stored = redis.call('HMGET', KEYS[1], 's', 'c')
local count = 0
if tonumber(stored[1]) == start then
  count = tonumber(stored[2])
end
if ARGV[2] == '1' then
  count = count + 1
  redis.call('HSET', KEYS[1], 's', start, 'c', count)
  redis.call('EXPIRE', KEYS[1], length)
end
return {count, start}
"#;

pub struct RedisRateLimiter {
    connection: ConnectionManager,
    script: Script,
    /// Put before every key, so several deployments can share one Redis.
    prefix: String,
    /// Where counts go while Redis does not answer (swept by the server like a lone instance's).
    local: Arc<InMemoryRateLimiter>,
    /// Unix milliseconds before which Redis is not asked again.
    retry_at: AtomicI64,
    /// Redis answered the last time it was asked.
    reachable: AtomicBool,
    fallback_decisions: AtomicU64,
}

impl RedisRateLimiter {
    /// A limiter on the Redis at `url` (connected on first use; an unreachable Redis at start is
    /// an outage like any other), keys under `prefix`, falling back on `local`.
    pub fn new(url: &str, prefix: &str, local: Arc<InMemoryRateLimiter>) -> anyhow::Result<Self> {
        let client = redis::Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_lazy_with_config(client, config)?;
        Ok(Self {
            connection,
            script: Script::new(COUNT_SCRIPT),
            prefix: format!("{prefix}:rate:"),
            local,
            retry_at: AtomicI64::new(0),
            reachable: AtomicBool::new(true),
            fallback_decisions: AtomicU64::new(0),
        })
    }

    /// The count and window start in Redis, or `None` when Redis is taken to be away.
    async fn count(&self, key: &str, window: Duration, count_it: bool) -> Option<(u32, i64)> {
        let now_ms = chrono::Utc::now().timestamp_millis();
        if now_ms < self.retry_at.load(Ordering::Relaxed) {
            return None;
        }
        let mut connection = self.connection.clone();
        let mut invocation = self.script.key(format!("{}{key}", self.prefix));
        invocation
            .arg(window.as_secs().max(1))
            .arg(if count_it { "1" } else { "0" });
        let answer = tokio::time::timeout(
            REDIS_TIMEOUT,
            invocation.invoke_async::<(u32, i64)>(&mut connection),
        )
        .await;
        match answer {
            Ok(Ok(counted)) => {
                if !self.reachable.swap(true, Ordering::Relaxed) {
                    tracing::info!("rate limits: Redis answers again; limits are shared");
                }
                Some(counted)
            }
            failed => {
                let reason = match failed {
                    Ok(Err(err)) => err.to_string(),
                    _ => format!("no answer within {} ms", REDIS_TIMEOUT.as_millis()),
                };
                self.retry_at
                    .store(now_ms + RETRY_AFTER.as_millis() as i64, Ordering::Relaxed);
                if self.reachable.swap(false, Ordering::Relaxed) {
                    tracing::warn!(
                        reason,
                        "rate limits: Redis does not answer; counting in this instance's memory \
                         until it does (limits hold per instance meanwhile)"
                    );
                }
                None
            }
        }
    }

    async fn decide(&self, key: &str, limit: u32, window: Duration, count_it: bool) -> Decision {
        match self.count(key, window, count_it).await {
            Some((count, start)) => Decision::of_window(
                count,
                limit,
                start,
                window.as_secs().max(1) as i64,
                count_it,
            ),
            None => {
                self.fallback_decisions.fetch_add(1, Ordering::Relaxed);
                let now = chrono::Utc::now().timestamp();
                self.local.decide(key, limit, window, count_it, now)
            }
        }
    }
}

#[rocket::async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn hit(&self, key: &str, limit: u32, window: Duration) -> Decision {
        self.decide(key, limit, window, true).await
    }

    async fn peek(&self, key: &str, limit: u32, window: Duration) -> Decision {
        self.decide(key, limit, window, false).await
    }

    async fn clear(&self, key: &str) {
        self.local.clear(key).await;
        let mut connection = self.connection.clone();
        let deleted = tokio::time::timeout(
            REDIS_TIMEOUT,
            redis::cmd("DEL")
                .arg(format!("{}{key}", self.prefix))
                .query_async::<()>(&mut connection),
        )
        .await;
        if !matches!(deleted, Ok(Ok(()))) {
            tracing::warn!(key, "rate limits: a counter could not be cleared in Redis");
        }
    }

    fn status(&self) -> LimiterStatus {
        LimiterStatus {
            shared: true,
            reachable: self.reachable.load(Ordering::Relaxed),
            fallback_decisions: self.fallback_decisions.load(Ordering::Relaxed),
        }
    }
}
