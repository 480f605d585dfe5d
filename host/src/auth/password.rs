//! Password hashing (argon2id, recommended parameters) on a bounded set of blocking threads, and
//! the password policy of decisions.md (NIST SP 800-63B style).

use std::collections::HashSet;
use std::sync::{Arc, LazyLock};

use argon2::{Argon2, PasswordHasher, PasswordVerifier};
use tokio::sync::Semaphore;

use crate::error::{ApiError, ErrorCode};

pub const MIN_LENGTH: usize = 8;
pub const MAX_LENGTH: usize = 128;

static COMMON_PASSWORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    include_str!("common_passwords.txt")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .collect()
});

/// Why a password is refused: one reason per broken rule (empty when it is acceptable).
pub fn weaknesses(password: &str, email: &str) -> Vec<&'static str> {
    let mut reasons = Vec::new();
    let length = password.chars().count();
    if length < MIN_LENGTH {
        reasons.push("must be at least 8 characters long");
    }
    if length > MAX_LENGTH {
        reasons.push("must be at most 128 characters long");
    }
    if COMMON_PASSWORDS.contains(password.to_lowercase().as_str()) {
        reasons.push("is too common: it appears in lists of leaked passwords");
    }
    if !email.is_empty() && password.trim().eq_ignore_ascii_case(email.trim()) {
        reasons.push("must not be the e-mail address");
    }
    reasons
}

pub fn check_strength(password: &str, email: &str) -> Result<(), ApiError> {
    let reasons = weaknesses(password, email);
    if reasons.is_empty() {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::WeakPassword,
        format!("The password {}", reasons.join("; ")),
    )
    .detail("reasons", reasons))
}

/// Hashes and verifies passwords off the async executor. At most `parallelism` hashes run at once,
/// so a burst of logins queues here instead of taking every core from request handling.
#[derive(Clone)]
pub struct Passwords {
    permits: Arc<Semaphore>,
}

/// A real argon2id hash of a random password, verified against when the e-mail is unknown so a
/// login for a missing account costs as much as one for an existing account.
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    Argon2::default()
        .hash_password(uuid::Uuid::new_v4().as_bytes())
        .map(|hash| hash.to_string())
        .unwrap_or_default()
});

impl Passwords {
    pub fn new(parallelism: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(parallelism.max(1))),
        }
    }

    /// One hashing thread per two cores (at least one): the rest stay free for requests.
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Self::new(cores / 2)
    }

    pub async fn hash(&self, password: &str) -> Result<String, ApiError> {
        let password = password.to_owned();
        self.run(move || {
            Argon2::default()
                .hash_password(password.as_bytes())
                .map(|hash| hash.to_string())
                .map_err(|err| ApiError::internal(format!("argon2 hash: {err}")))
        })
        .await?
    }

    /// `Ok(false)` for a wrong password; with `hash: None` it spends the same time and says no.
    pub async fn verify(&self, password: &str, hash: Option<&str>) -> Result<bool, ApiError> {
        let password = password.to_owned();
        let known = hash.is_some();
        let hash = hash.map(str::to_owned);
        self.run(move || {
            let hash = hash.as_deref().unwrap_or(DUMMY_HASH.as_str());
            let matches = Argon2::default()
                .verify_password(password.as_bytes(), hash)
                .is_ok();
            matches && known
        })
        .await
    }

    async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| ApiError::internal("password hashing pool closed"))?;
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|err| ApiError::internal(format!("password hashing task failed: {err}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_lists_every_broken_rule() {
        assert!(weaknesses("correct horse battery", "a@b.co").is_empty());
        assert_eq!(
            weaknesses("short", "a@b.co"),
            vec!["must be at least 8 characters long"]
        );
        assert!(weaknesses(&"x".repeat(129), "a@b.co")[0].contains("at most 128"));
        assert!(weaknesses("password123", "a@b.co")[0].contains("too common"));
        assert!(weaknesses("PASSWORD123", "a@b.co")[0].contains("too common"));
        assert_eq!(
            weaknesses("Alice@Example.com", "alice@example.com"),
            vec!["must not be the e-mail address"]
        );
        // Eight characters, multi-byte: counted as characters, not bytes.
        assert!(weaknesses("ééééééé", "a@b.co").len() == 1);
        let err = check_strength("a@b.co", "a@b.co").unwrap_err();
        assert_eq!(err.code, ErrorCode::WeakPassword);
        assert_eq!(err.details["reasons"].as_array().unwrap().len(), 2);
    }

    #[tokio::test]
    async fn hashes_verify_and_unknown_accounts_never_match() {
        let passwords = Passwords::new(1);
        let hash = passwords.hash("correct horse battery").await.unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(
            passwords
                .verify("correct horse battery", Some(&hash))
                .await
                .unwrap()
        );
        assert!(
            !passwords
                .verify("wrong horse battery", Some(&hash))
                .await
                .unwrap()
        );
        assert!(
            !passwords
                .verify("correct horse battery", None)
                .await
                .unwrap()
        );
        assert!(!passwords.verify("x", Some("not a hash")).await.unwrap());
    }
}
