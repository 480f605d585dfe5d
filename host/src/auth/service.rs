//! The authentication operations behind `/api/v1/auth/*` and the admin CLI. Every state change and
//! its audit row commit in one transaction.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::guards::ClientMeta;
use super::password::check_strength;
use super::sessions::Principal;
use super::tokens;
use crate::App;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::audit::{self, Actor};
use crate::store::users::{NewUser, UserRow};
use crate::store::{Db, iso8601, new_id, now_ms, outbox, reset_tokens, sessions, users};

pub const TRIAL_DAYS: i64 = 14;
const RESET_TOKEN_TTL: Duration = Duration::from_secs(3600);
pub const RESET_REQUESTED_MESSAGE: &str =
    "If an account exists for this e-mail address, a password reset link has been sent to it";

#[derive(utoipa::ToSchema, Debug, Deserialize)]
pub struct RegisterRequest {
    pub email: String,
    pub password: String,
    pub full_name: String,
    pub accept_terms: bool,
}

/// The user as the API shows it to its owner.
#[derive(utoipa::ToSchema, Debug, Clone, Serialize)]
pub struct UserView {
    pub user_id: String,
    pub email: String,
    pub full_name: String,
    pub subscription_tier: String,
    pub trial_active: bool,
    pub trial_ends_at: Option<String>,
    pub created_at: String,
}

impl UserView {
    pub fn from_row(row: &UserRow, now: i64) -> Self {
        let trial_end = row.trial_ends_at.filter(|&end| end > now);
        Self {
            user_id: row.id.clone(),
            email: row.email.clone(),
            full_name: row.full_name.clone(),
            subscription_tier: row.subscription_tier.clone(),
            trial_active: trial_end.is_some(),
            trial_ends_at: trial_end.map(iso8601),
            created_at: iso8601(row.created_at),
        }
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct LoginUser {
    pub user_id: String,
    pub email: String,
    pub full_name: String,
    pub subscription_tier: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct LoginResponse {
    pub access_token: String,
    pub refresh_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    pub user: LoginUser,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct RefreshResponse {
    pub access_token: String,
    /// The rotated refresh token: the presented one is now spent.
    pub refresh_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
}

fn actor<'a>(user_id: Option<&'a str>, meta: &'a ClientMeta) -> Actor<'a> {
    Actor {
        user_id,
        ip_address: meta.ip.as_deref(),
        user_agent: meta.user_agent.as_deref(),
    }
}

/// A syntactically valid address (RFC 5321 lengths, a dotted domain); no mailbox check.
pub fn validate_email(raw: &str) -> ApiResult<String> {
    let email = raw.trim();
    let invalid = || ApiError::code(ErrorCode::InvalidEmail).detail("field", "email");
    if email.len() > 254 {
        return Err(invalid());
    }
    let (local, domain) = email.split_once('@').ok_or_else(invalid)?;
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !"@<>()[]\\,;:\"".contains(c))
        && !local.starts_with('.')
        && !local.ends_with('.');
    let labels: Vec<&str> = domain.split('.').collect();
    let domain_ok = labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        && labels
            .last()
            .is_some_and(|tld| tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic()));
    if local_ok && domain_ok {
        Ok(email.to_string())
    } else {
        Err(invalid())
    }
}

fn validate_full_name(raw: &str) -> ApiResult<String> {
    let name = raw.trim();
    if name.is_empty() {
        return Err(ApiError::invalid_field("full_name", "must not be empty"));
    }
    if name.chars().count() > 100 {
        return Err(ApiError::invalid_field(
            "full_name",
            "must be at most 100 characters",
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::invalid_field(
            "full_name",
            "must not contain control characters",
        ));
    }
    Ok(name.to_string())
}

pub async fn register(app: &App, req: RegisterRequest, meta: &ClientMeta) -> ApiResult<UserView> {
    let email = validate_email(&req.email)?;
    let full_name = validate_full_name(&req.full_name)?;
    check_strength(&req.password, &email)?;
    if !req.accept_terms {
        return Err(ApiError::code(ErrorCode::TermsNotAccepted).detail("field", "accept_terms"));
    }
    if users::by_email(&app.db, &email).await?.is_some() {
        return Err(ApiError::code(ErrorCode::EmailAlreadyExists));
    }
    let password_hash = app.passwords.hash(&req.password).await?;
    let now = now_ms();
    let id = new_id();
    let new_user = NewUser {
        id: &id,
        email: &email,
        full_name: &full_name,
        password_hash: &password_hash,
        role: "user",
        trial_ends_at: Some(now + TRIAL_DAYS * 86_400_000),
        created_at: now,
    };
    let mut tx = app.db.begin().await?;
    if !users::insert(&mut *tx, &new_user).await? {
        return Err(ApiError::code(ErrorCode::EmailAlreadyExists));
    }
    audit::record(
        &mut *tx,
        "user.registered",
        &actor(Some(&id), meta),
        json!({ "email": email }),
    )
    .await?;
    tx.commit().await?;
    let row = users::by_id(&app.db.pool, &id)
        .await?
        .ok_or_else(|| ApiError::internal("registered user vanished"))?;
    Ok(UserView::from_row(&row, now))
}

fn failed_login_key(email: &str) -> String {
    format!("login-failures:{}", email.to_lowercase())
}

pub async fn login(
    app: &App,
    email: &str,
    password: &str,
    meta: &ClientMeta,
) -> ApiResult<LoginResponse> {
    let email = email.trim();
    let throttle_key = failed_login_key(email);
    let (limit, window) = (
        app.config.failed_login_limit,
        app.config.failed_login_window,
    );
    // The attempt is counted before the password is checked, in one atomic step: of many
    // parallel guesses at most `limit` are ever evaluated. A successful sign-in clears the count.
    let throttle = app.limiter.hit(&throttle_key, limit, window).await;
    if !throttle.allowed {
        tracing::warn!(email, ip = ?meta.ip, "sign-in refused: too many failed attempts");
        audit::record(
            &app.db.pool,
            "auth.login_throttled",
            &actor(None, meta),
            json!({ "email": email }),
        )
        .await?;
        return Err(ApiError::new(
            ErrorCode::RateLimitExceeded,
            "Too many failed sign-in attempts for this account; try again later",
        )
        .retry_after(throttle.retry_after_secs()));
    }

    let user = if email.is_empty() {
        None
    } else {
        users::by_email(&app.db, email).await?
    };
    let password_ok = app
        .passwords
        .verify(password, user.as_ref().map(|u| u.password_hash.as_str()))
        .await?;
    let Some(user) = user.filter(|_| password_ok) else {
        audit::record(
            &app.db.pool,
            "auth.login_failed",
            &actor(None, meta),
            json!({ "email": email, "reason": "invalid_credentials" }),
        )
        .await?;
        if throttle.remaining == 0 {
            // This failure used the last attempt of the window: the account is locked until it ends.
            tracing::warn!(email, ip = ?meta.ip, "sign-in locked after repeated failures");
            audit::record(
                &app.db.pool,
                "auth.login_locked",
                &actor(None, meta),
                json!({ "email": email, "until": throttle.reset_at }),
            )
            .await?;
        }
        return Err(ApiError::code(ErrorCode::InvalidCredentials));
    };
    // Account status only after the password: it is not revealed to someone guessing.
    let status_error = match user.status.as_str() {
        "active" => None,
        "suspended" => Some(ErrorCode::AccountSuspended),
        _ => Some(ErrorCode::AccountDisabled),
    };
    if let Some(code) = status_error {
        audit::record(
            &app.db.pool,
            "auth.login_failed",
            &actor(Some(&user.id), meta),
            json!({ "email": email, "reason": code.as_str() }),
        )
        .await?;
        return Err(ApiError::code(code));
    }
    app.limiter.clear(&throttle_key).await;

    let session_id = new_id();
    let refresh_token = tokens::generate();
    let expires_at = now_ms() + app.config.refresh_token_ttl.as_millis() as i64;
    let mut tx = app.db.begin().await?;
    sessions::insert(
        &mut *tx,
        &sessions::NewSession {
            id: &session_id,
            user_id: &user.id,
            expires_at,
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
    )
    .await?;
    sessions::insert_refresh_token(
        &mut *tx,
        &tokens::hash(&refresh_token),
        &session_id,
        expires_at,
    )
    .await?;
    audit::record(
        &mut *tx,
        "auth.login_succeeded",
        &actor(Some(&user.id), meta),
        json!({ "session_id": session_id }),
    )
    .await?;
    tx.commit().await?;

    Ok(LoginResponse {
        access_token: app.jwt.issue(&user.id, &session_id, &user.role)?,
        refresh_token,
        token_type: "Bearer",
        expires_in: app.jwt.ttl_secs(),
        user: LoginUser {
            user_id: user.id,
            email: user.email,
            full_name: user.full_name,
            subscription_tier: user.subscription_tier,
        },
    })
}

pub async fn refresh(
    app: &App,
    refresh_token: &str,
    meta: &ClientMeta,
) -> ApiResult<RefreshResponse> {
    let invalid = || ApiError::new(ErrorCode::TokenInvalid, "The refresh token is not valid");
    if refresh_token.trim().is_empty() {
        return Err(ApiError::invalid_field(
            "refresh_token",
            "must not be empty",
        ));
    }
    let token_hash = tokens::hash(refresh_token.trim());
    let now = now_ms();
    let row = sessions::refresh_token(&app.db.pool, &token_hash)
        .await?
        .ok_or_else(invalid)?;
    if row.session_revoked_at.is_some() {
        return Err(invalid());
    }
    if row.used_at.is_some() {
        return Err(refresh_reuse(app, &row.session_id, &row.user_id, meta).await?);
    }
    if row.expires_at <= now {
        return Err(ApiError::new(
            ErrorCode::TokenExpired,
            "The refresh token has expired; sign in again",
        ));
    }
    let user = users::by_id(&app.db.pool, &row.user_id)
        .await?
        .ok_or_else(invalid)?;
    match user.status.as_str() {
        "active" => {}
        "suspended" => return Err(ApiError::code(ErrorCode::AccountSuspended)),
        _ => return Err(ApiError::code(ErrorCode::AccountDisabled)),
    }

    let next_token = tokens::generate();
    let expires_at = now + app.config.refresh_token_ttl.as_millis() as i64;
    let mut tx = app.db.begin().await?;
    if !sessions::consume_refresh_token(&mut *tx, &token_hash, now).await? {
        // Another request spent it between our read and now: the same token was used twice.
        tx.rollback().await?;
        return Err(refresh_reuse(app, &row.session_id, &row.user_id, meta).await?);
    }
    sessions::insert_refresh_token(
        &mut *tx,
        &tokens::hash(&next_token),
        &row.session_id,
        expires_at,
    )
    .await?;
    sessions::extend(&mut *tx, &row.session_id, now, expires_at).await?;
    tx.commit().await?;

    Ok(RefreshResponse {
        access_token: app.jwt.issue(&user.id, &row.session_id, &user.role)?,
        refresh_token: next_token,
        token_type: "Bearer",
        expires_in: app.jwt.ttl_secs(),
    })
}

/// A spent refresh token came back: someone holds a copy. The whole session family is revoked.
async fn refresh_reuse(
    app: &App,
    session_id: &str,
    user_id: &str,
    meta: &ClientMeta,
) -> ApiResult<ApiError> {
    let mut tx = app.db.begin().await?;
    sessions::revoke(&mut *tx, session_id, "refresh_token_reuse").await?;
    audit::record(
        &mut *tx,
        "auth.refresh_token_reused",
        &actor(Some(user_id), meta),
        json!({ "session_id": session_id }),
    )
    .await?;
    tx.commit().await?;
    app.session_ended(session_id);
    tracing::warn!(
        user_id,
        session_id,
        "refresh token reuse detected; session revoked"
    );
    Ok(ApiError::new(
        ErrorCode::TokenInvalid,
        "This refresh token was already used; the session has been revoked for safety",
    ))
}

pub async fn logout(
    app: &App,
    principal: &Principal,
    revoke_all: bool,
    meta: &ClientMeta,
) -> ApiResult<String> {
    let mut tx = app.db.begin().await?;
    let revoked = if revoke_all {
        sessions::revoke_all(&mut *tx, &principal.user_id, "logout_all")
            .await?
            .len()
    } else {
        sessions::revoke(&mut *tx, &principal.session_id, "logout").await?;
        1
    };
    audit::record(
        &mut *tx,
        "auth.logout",
        &actor(Some(&principal.user_id), meta),
        json!({ "session_id": principal.session_id, "revoke_all": revoke_all, "sessions_revoked": revoked }),
    )
    .await?;
    tx.commit().await?;
    if revoke_all {
        app.user_changed(&principal.user_id);
        Ok(format!("Signed out of all sessions ({revoked})"))
    } else {
        app.session_ended(&principal.session_id);
        Ok("Signed out".to_string())
    }
}

pub async fn request_password_reset(
    app: &App,
    email: &str,
    meta: &ClientMeta,
) -> ApiResult<&'static str> {
    let email = validate_email(email)?;
    let user = users::by_email(&app.db, &email)
        .await?
        .filter(|user| user.status == "active");
    let Some(user) = user else {
        audit::record(
            &app.db.pool,
            "auth.password_reset_requested",
            &actor(None, meta),
            json!({ "email": email, "account_found": false }),
        )
        .await?;
        return Ok(RESET_REQUESTED_MESSAGE);
    };
    let token = tokens::generate();
    let now = now_ms();
    let link = format!(
        "{}/reset-password?token={token}",
        app.config.public_url.trim_end_matches('/')
    );
    let body = format!(
        "Hello {},\n\nSomeone asked to reset the password of your tradehost account.\n\
         Use this token within one hour to choose a new password:\n\n    {token}\n\n\
         or open {link}\n\nIf it was not you, ignore this mail; your password stays as it is.\n",
        user.full_name
    );
    let mut tx = app.db.begin().await?;
    reset_tokens::insert(
        &mut *tx,
        &tokens::hash(&token),
        &user.id,
        now,
        now + RESET_TOKEN_TTL.as_millis() as i64,
    )
    .await?;
    let mail_id = outbox::insert(
        &mut *tx,
        &user.email,
        "Reset your tradehost password",
        &crate::mail::stored_body(&app.vault, "password_reset", &user.email, &body),
        "password_reset",
    )
    .await?;
    audit::record(
        &mut *tx,
        "auth.password_reset_requested",
        &actor(Some(&user.id), meta),
        json!({ "email": email, "account_found": true, "mail_id": mail_id }),
    )
    .await?;
    tx.commit().await?;
    app.mail_queued();
    Ok(RESET_REQUESTED_MESSAGE)
}

pub async fn confirm_password_reset(
    app: &App,
    token: &str,
    new_password: &str,
    meta: &ClientMeta,
) -> ApiResult<()> {
    let token_hash = tokens::hash(token.trim());
    let now = now_ms();
    let user_id = match reset_tokens::lookup(&app.db.pool, &token_hash).await? {
        Some(found) if found.used_at.is_none() && found.expires_at > now => found.user_id,
        Some(found) if found.used_at.is_none() => {
            return Err(ApiError::new(
                ErrorCode::TokenExpired,
                "The reset token has expired; request a new one",
            ));
        }
        _ => {
            return Err(ApiError::new(
                ErrorCode::TokenInvalid,
                "The reset token is not valid",
            ));
        }
    };
    let user = users::by_id(&app.db.pool, &user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::TokenInvalid))?;
    check_strength(new_password, &user.email)?;
    let password_hash = app.passwords.hash(new_password).await?;
    let mut tx = app.db.begin().await?;
    if reset_tokens::consume(&mut *tx, &token_hash, now)
        .await?
        .is_none()
    {
        return Err(ApiError::new(
            ErrorCode::TokenInvalid,
            "The reset token is not valid",
        ));
    }
    users::set_password(&mut *tx, &user.id, &password_hash).await?;
    let revoked = sessions::revoke_all(&mut *tx, &user.id, "password_reset").await?;
    audit::record(
        &mut *tx,
        "auth.password_reset_completed",
        &actor(Some(&user.id), meta),
        json!({ "sessions_revoked": revoked.len() }),
    )
    .await?;
    tx.commit().await?;
    app.user_changed(&user.id);
    app.limiter.clear(&failed_login_key(&user.email)).await;
    Ok(())
}

pub async fn change_password(
    app: &App,
    principal: &Principal,
    current_password: &str,
    new_password: &str,
    meta: &ClientMeta,
) -> ApiResult<usize> {
    let user = users::by_id(&app.db.pool, &principal.user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::TokenInvalid))?;
    if !app
        .passwords
        .verify(current_password, Some(&user.password_hash))
        .await?
    {
        audit::record(
            &app.db.pool,
            "auth.password_change_failed",
            &actor(Some(&user.id), meta),
            json!({ "reason": "invalid_current_password" }),
        )
        .await?;
        return Err(ApiError::new(
            ErrorCode::InvalidCredentials,
            "The current password is wrong",
        ));
    }
    check_strength(new_password, &user.email)?;
    let password_hash = app.passwords.hash(new_password).await?;
    let mut tx = app.db.begin().await?;
    users::set_password(&mut *tx, &user.id, &password_hash).await?;
    // Other sessions may belong to whoever knew the old password: they end; this one stays.
    let revoked =
        sessions::revoke_all_except(&mut *tx, &user.id, &principal.session_id, "password_change")
            .await?;
    audit::record(
        &mut *tx,
        "auth.password_changed",
        &actor(Some(&user.id), meta),
        json!({ "other_sessions_revoked": revoked.len() }),
    )
    .await?;
    tx.commit().await?;
    // Drops the other sessions' entries and this one's record with the old hash.
    app.user_changed(&user.id);
    Ok(revoked.len())
}

/// The caller's record as the session check read it: no query of its own.
pub fn current_user(principal: &Principal) -> UserView {
    UserView::from_row(&principal.user, now_ms())
}

/// What `tradehost admin create` did.
#[derive(Debug, PartialEq, Eq)]
pub enum AdminOutcome {
    Created(String),
    Promoted(String),
    AlreadyAdmin(String),
}

/// Creates an admin, or promotes the existing user with that e-mail (the CLI's only path to admin).
pub async fn create_admin(db: &Db, email: &str, password: &str) -> anyhow::Result<AdminOutcome> {
    let email = validate_email(email)
        .map_err(|_| anyhow::anyhow!("{email:?} is not a valid e-mail address"))?;
    if let Some(user) = users::by_email(db, &email).await? {
        return promote_row(db, &user).await;
    }
    if let Err(err) = check_strength(password, &email) {
        anyhow::bail!("{}", err.message);
    }
    let password_hash = super::password::Passwords::new(1)
        .hash(password)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let id = new_id();
    let now = now_ms();
    let name = email.split('@').next().unwrap_or("admin").to_string();
    let mut tx = db.begin().await?;
    let user = NewUser {
        id: &id,
        email: &email,
        full_name: &name,
        password_hash: &password_hash,
        role: "admin",
        trial_ends_at: None,
        created_at: now,
    };
    if !users::insert(&mut *tx, &user).await? {
        anyhow::bail!("a user with e-mail {email} was created concurrently; run the command again");
    }
    audit::record(
        &mut *tx,
        "admin.created",
        &Actor {
            user_id: Some(&id),
            ..Actor::default()
        },
        json!({ "email": email, "via": "cli" }),
    )
    .await?;
    tx.commit().await?;
    Ok(AdminOutcome::Created(id))
}

pub async fn promote_admin(db: &Db, email: &str) -> anyhow::Result<AdminOutcome> {
    let user = users::by_email(db, email.trim())
        .await?
        .ok_or_else(|| anyhow::anyhow!("no user with e-mail {}", email.trim()))?;
    promote_row(db, &user).await
}

async fn promote_row(db: &Db, user: &UserRow) -> anyhow::Result<AdminOutcome> {
    if user.role == "admin" {
        return Ok(AdminOutcome::AlreadyAdmin(user.id.clone()));
    }
    let mut tx = db.begin().await?;
    users::set_role(&mut *tx, &user.id, "admin").await?;
    audit::record(
        &mut *tx,
        "admin.promoted",
        &Actor {
            user_id: Some(&user.id),
            ..Actor::default()
        },
        json!({ "email": user.email, "via": "cli" }),
    )
    .await?;
    tx.commit().await?;
    Ok(AdminOutcome::Promoted(user.id.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_validation() {
        for ok in [
            "a@b.co",
            " Alice.Smith+tag@Example.COM ",
            "x_y@sub.domain.org",
        ] {
            assert!(validate_email(ok).is_ok(), "{ok}");
        }
        assert_eq!(validate_email(" a@b.co ").unwrap(), "a@b.co");
        for bad in [
            "", "a", "a@", "@b.co", "a@b", "a b@c.co", "a@b..co", "a@-b.co", "a@b.c", "a@@b.co",
            ".a@b.co", "a@b.c0",
        ] {
            assert_eq!(
                validate_email(bad).unwrap_err().code,
                ErrorCode::InvalidEmail,
                "{bad}"
            );
        }
        assert!(validate_email(&format!("{}@b.co", "a".repeat(65))).is_err());
    }

    #[test]
    fn full_name_validation() {
        assert_eq!(
            validate_full_name("  Ada Lovelace ").unwrap(),
            "Ada Lovelace"
        );
        assert_eq!(
            validate_full_name("   ").unwrap_err().details["field"],
            "full_name"
        );
        assert!(validate_full_name(&"n".repeat(101)).is_err());
        assert!(validate_full_name("a\u{0}b").is_err());
    }
}
