//! Which sessions are live and who is behind them, cached in memory so an authenticated request
//! needs no database round trip: an entry holds the session's state and its user's record, which
//! `GET /auth/me` and the rate limiter read from here.
//!
//! Changes made by this process reach the cache at once: whatever writes a session or a user
//! calls [`SessionCache::forget_session`] or [`SessionCache::forget_user`] after its commit. A
//! read that raced such a change cannot put the old state back: every forget advances an epoch,
//! and an entry read from the database is kept only if no forget happened while it was read.
//! Entries also expire after a short time-to-live, which bounds how long a change made by
//! another process (the CLI, another instance sharing the database) takes to be seen.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use dashmap::mapref::entry::Entry as MapEntry;

use crate::error::{ApiError, ErrorCode};
use crate::store::users::UserRow;
use crate::store::{self, Db, now_ms};

#[derive(Debug, Clone)]
struct Entry {
    user: Arc<UserRow>,
    revoked: bool,
    expires_at: i64,
    checked: Instant,
}

/// The live user behind a request, with their record as of the session check.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user_id: String,
    pub session_id: String,
    pub role: String,
    pub user: Arc<UserRow>,
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role == "admin"
    }

    /// A user acting outside a request (benchmarks, tools), with no session.
    pub fn of_user(user: UserRow) -> Self {
        Self {
            user_id: user.id.clone(),
            session_id: String::new(),
            role: user.role.clone(),
            user: Arc::new(user),
        }
    }

    /// An active user with this id and role, for unit tests of code that takes a principal.
    #[cfg(test)]
    pub fn for_tests(user_id: &str, role: &str) -> Self {
        Self::of_user(UserRow {
            id: user_id.into(),
            email: format!("{user_id}@example.com"),
            full_name: user_id.into(),
            password_hash: String::new(),
            role: role.into(),
            status: "active".into(),
            subscription_tier: "free".into(),
            trial_ends_at: None,
            created_at: 0,
            last_active_at: None,
        })
    }
}

pub struct SessionCache {
    entries: DashMap<String, Entry>,
    ttl: Duration,
    /// Advanced by every forget; see the module docs.
    epoch: AtomicU64,
}

impl SessionCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            entries: DashMap::new(),
            ttl,
            epoch: AtomicU64::new(0),
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
            None => self.load(db, session_id).await?,
        };
        if entry.revoked || entry.expires_at <= now_ms() || entry.user.id != user_id {
            return Err(revoked());
        }
        match entry.user.status.as_str() {
            "active" => Ok(Principal {
                user_id: entry.user.id.clone(),
                session_id: session_id.to_string(),
                role: entry.user.role.clone(),
                user: entry.user,
            }),
            "suspended" => Err(ApiError::code(ErrorCode::AccountSuspended)),
            _ => Err(ApiError::code(ErrorCode::AccountDisabled)),
        }
    }

    async fn load(&self, db: &Db, session_id: &str) -> Result<Entry, ApiError> {
        let epoch = self.epoch.load(Ordering::Acquire);
        let Some(status) = store::sessions::status(db, session_id).await? else {
            return Err(revoked());
        };
        let entry = Entry {
            revoked: status.revoked_at.is_some(),
            expires_at: status.expires_at,
            user: Arc::new(status.user),
            checked: Instant::now(),
        };
        // Activity is recorded when the cache re-checks a session: at most every ttl.
        if !entry.revoked
            && let Err(err) = store::users::touch_last_active(db, &entry.user.id, now_ms()).await
        {
            tracing::warn!(error = %err, "recording user activity failed");
        }
        // Checked under the shard's lock, which a forget also takes after advancing the epoch:
        // either the forget sees this entry and removes it, or this sees the new epoch.
        let slot = self.entries.entry(session_id.to_string());
        if self.epoch.load(Ordering::Acquire) == epoch {
            match slot {
                MapEntry::Occupied(mut occupied) => {
                    occupied.insert(entry.clone());
                }
                MapEntry::Vacant(vacant) => {
                    vacant.insert(entry.clone());
                }
            }
        }
        Ok(entry)
    }

    /// After a session is revoked (sign-out, password change, refresh-token reuse).
    pub fn forget_session(&self, session_id: &str) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.remove(session_id);
    }

    /// After any change to the user's row (status, role, tier, name, password) or a revoke-all.
    pub fn forget_user(&self, user_id: &str) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.retain(|_, entry| entry.user.id != user_id);
    }

    /// Forgets every entry (revocations made elsewhere may have been missed).
    pub fn forget_all(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.entries.clear();
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
