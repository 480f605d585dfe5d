//! Which sessions are live, cached in memory so an authenticated request needs no database round
//! trip. Revocation in this process removes the entry at once; entries also expire after a short
//! time-to-live, which bounds how long another instance sharing the database can lag.

use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::error::{ApiError, ErrorCode};
use crate::store::{self, Db, now_ms};

#[derive(Debug, Clone)]
struct Entry {
    user_id: String,
    role: String,
    user_status: String,
    /// Not revoked, and not past its expiry at `expires_at`.
    revoked: bool,
    expires_at: i64,
    checked: Instant,
}

/// The live user behind a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user_id: String,
    pub session_id: String,
    pub role: String,
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role == "admin"
    }
}

pub struct SessionCache {
    entries: DashMap<String, Entry>,
    ttl: Duration,
}

impl SessionCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            entries: DashMap::new(),
            ttl,
        }
    }

    /// The principal of a live session, or the error to answer with.
    pub async fn principal(
        &self,
        db: &Db,
        session_id: &str,
        user_id: &str,
    ) -> Result<Principal, ApiError> {
        let cached = self
            .entries
            .get(session_id)
            .filter(|entry| entry.checked.elapsed() < self.ttl)
            .map(|entry| entry.clone());
        let entry = match cached {
            Some(entry) => entry,
            None => {
                let entry = match store::sessions::status(db, session_id).await? {
                    Some(status) => Entry {
                        user_id: status.user_id,
                        role: status.role,
                        user_status: status.user_status,
                        revoked: status.revoked_at.is_some(),
                        expires_at: status.expires_at,
                        checked: Instant::now(),
                    },
                    None => return Err(revoked()),
                };
                // Activity is recorded when the cache re-checks a session: at most every ttl.
                if !entry.revoked
                    && let Err(err) =
                        store::users::touch_last_active(db, &entry.user_id, now_ms()).await
                {
                    tracing::warn!(error = %err, "recording user activity failed");
                }
                self.entries.insert(session_id.to_string(), entry.clone());
                entry
            }
        };
        if entry.revoked || entry.expires_at <= now_ms() || entry.user_id != user_id {
            return Err(revoked());
        }
        match entry.user_status.as_str() {
            "active" => Ok(Principal {
                user_id: entry.user_id,
                session_id: session_id.to_string(),
                role: entry.role,
            }),
            "suspended" => Err(ApiError::code(ErrorCode::AccountSuspended)),
            _ => Err(ApiError::code(ErrorCode::AccountDisabled)),
        }
    }

    pub fn forget_session(&self, session_id: &str) {
        self.entries.remove(session_id);
    }

    /// After a change to the user (status, role) or a revoke-all.
    pub fn forget_user(&self, user_id: &str) {
        self.entries.retain(|_, entry| entry.user_id != user_id);
    }

    /// Drops stale entries; called periodically.
    pub fn sweep(&self) {
        self.entries
            .retain(|_, entry| entry.checked.elapsed() < self.ttl);
    }
}

fn revoked() -> ApiError {
    ApiError::new(
        ErrorCode::TokenInvalid,
        "The session of this token has ended; sign in again",
    )
}
