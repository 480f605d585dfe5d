//! API calls counted per user in memory and added to the `api_usage` table every minute (and
//! before a usage report), so counting costs a request no database write.

use dashmap::DashMap;

use crate::App;
use crate::error::ApiResult;
use crate::store::{billing, now_ms};

use crate::store::DAY_MS;

#[derive(Default)]
pub struct UsageCounter {
    /// (user id, UTC day) → calls not yet written.
    pending: DashMap<(String, i64), i64>,
}

impl UsageCounter {
    pub fn api_call(&self, user_id: &str) {
        let day = now_ms().div_euclid(DAY_MS);
        *self.pending.entry((user_id.to_string(), day)).or_default() += 1;
    }

    fn take(&self, keep: impl Fn(&str) -> bool) -> Vec<((String, i64), i64)> {
        let keys: Vec<(String, i64)> = self
            .pending
            .iter()
            .filter(|e| keep(&e.key().0))
            .map(|e| e.key().clone())
            .collect();
        keys.into_iter()
            .filter_map(|key| self.pending.remove(&key))
            .collect()
    }

    async fn write(&self, app: &App, counts: Vec<((String, i64), i64)>) -> ApiResult<()> {
        for ((user_id, day), calls) in counts {
            if let Err(err) = billing::add_api_calls(&app.db.pool, &user_id, day, calls).await {
                // Put them back for the next flush.
                *self.pending.entry((user_id, day)).or_default() += calls;
                return Err(err.into());
            }
        }
        Ok(())
    }

    pub async fn flush(&self, app: &App) -> ApiResult<()> {
        let counts = self.take(|_| true);
        self.write(app, counts).await
    }

    pub async fn flush_user(&self, app: &App, user_id: &str) -> ApiResult<()> {
        let counts = self.take(|id| id == user_id);
        self.write(app, counts).await
    }
}
