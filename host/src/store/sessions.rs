//! Sessions and their rotating refresh tokens.

use super::Executes;
use sqlx::FromRow;

use super::users::{UserRow, user_columns};
use super::{Db, now_ms};

pub struct NewSession<'a> {
    pub id: &'a str,
    pub user_id: &'a str,
    pub expires_at: i64,
    pub ip_address: Option<&'a str>,
    pub user_agent: Option<&'a str>,
}

pub async fn insert<'e>(exec: impl Executes<'e>, session: &NewSession<'_>) -> sqlx::Result<()> {
    let now = now_ms();
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO sessions (id, user_id, created_at, expires_at, last_used_at, ip_address, user_agent) \
             VALUES ($1, $2, $3, $4, $3, $5, $6)"),
        )
        .bind(session.id)
        .bind(session.user_id)
        .bind(now)
        .bind(session.expires_at)
        .bind(session.ip_address)
        .bind(session.user_agent)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn insert_refresh_token<'e>(
    exec: impl Executes<'e>,
    token_hash: &str,
    session_id: &str,
    expires_at: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            schema_checked!("INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) VALUES ($1, $2, $3, $4)"),
        )
        .bind(token_hash)
        .bind(session_id)
        .bind(now_ms())
        .bind(expires_at)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// What the request guard needs to know about a session: is it live, and who is behind it.
#[derive(Debug, Clone, FromRow)]
pub struct SessionStatus {
    pub revoked_at: Option<i64>,
    pub expires_at: i64,
    #[sqlx(flatten)]
    pub user: UserRow,
}

pub async fn status(db: &Db, session_id: &str) -> sqlx::Result<Option<SessionStatus>> {
    on!(&db.pool, |c| sqlx::query_as(concat!(
        "SELECT s.revoked_at, s.expires_at, ",
        user_columns!("u."),
        " FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = $1"
    ))
    .bind(session_id)
    .fetch_optional(c)
    .await)
}

#[derive(Debug, Clone, FromRow)]
pub struct RefreshTokenRow {
    pub session_id: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub user_id: String,
    pub session_revoked_at: Option<i64>,
}

pub async fn refresh_token<'e>(
    exec: impl Executes<'e>,
    token_hash: &str,
) -> sqlx::Result<Option<RefreshTokenRow>> {
    on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT t.session_id, t.expires_at, t.used_at, s.user_id, s.revoked_at AS session_revoked_at \
             FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.token_hash = $1"),
        )
        .bind(token_hash)
        .fetch_optional(c)
        .await
    })
}

/// Marks a refresh token used; `false` when another request used it first.
pub async fn consume_refresh_token<'e>(
    exec: impl Executes<'e>,
    token_hash: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let result = on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE refresh_tokens SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL"
    ))
    .bind(now)
    .bind(token_hash)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(result == 1)
}

/// Slides a session's expiry forward on refresh.
pub async fn extend<'e>(
    exec: impl Executes<'e>,
    session_id: &str,
    now: i64,
    expires_at: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| sqlx::query(schema_checked!(
        "UPDATE sessions SET last_used_at = $1, expires_at = $2 WHERE id = $3"
    ))
    .bind(now)
    .bind(expires_at)
    .bind(session_id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

pub async fn revoke<'e>(
    exec: impl Executes<'e>,
    session_id: &str,
    reason: &str,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(schema_checked!("UPDATE sessions SET revoked_at = $1, revoke_reason = $2 WHERE id = $3 AND revoked_at IS NULL"))
            .bind(now_ms())
            .bind(reason)
            .bind(session_id)
            .execute(c)
            .await
            .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Revokes every live session of a user and returns their ids (for the in-memory cache).
pub async fn revoke_all<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    reason: &str,
) -> sqlx::Result<Vec<String>> {
    let ids: Vec<(String,)> = on!(exec, |c| sqlx::query_as(schema_checked!(
        "UPDATE sessions SET revoked_at = $1, revoke_reason = $2 \
         WHERE user_id = $3 AND revoked_at IS NULL RETURNING id"
    ))
    .bind(now_ms())
    .bind(reason)
    .bind(user_id)
    .fetch_all(c)
    .await)?;
    Ok(ids.into_iter().map(|(id,)| id).collect())
}

/// Revokes every live session of a user but one (the caller's), returning the revoked ids.
pub async fn revoke_all_except<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    keep_session_id: &str,
    reason: &str,
) -> sqlx::Result<Vec<String>> {
    let ids: Vec<(String,)> = on!(exec, |c| sqlx::query_as(schema_checked!(
        "UPDATE sessions SET revoked_at = $1, revoke_reason = $2 \
         WHERE user_id = $3 AND id <> $4 AND revoked_at IS NULL RETURNING id"
    ))
    .bind(now_ms())
    .bind(reason)
    .bind(user_id)
    .bind(keep_session_id)
    .fetch_all(c)
    .await)?;
    Ok(ids.into_iter().map(|(id,)| id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;
    use crate::store::users::{self, NewUser};

    async fn user(db: &Db) -> String {
        let id = crate::store::new_id();
        let user = NewUser {
            id: &id,
            email: &format!("{id}@example.com"),
            full_name: "T",
            password_hash: "x",
            role: "user",
            trial_ends_at: None,
            created_at: now_ms(),
        };
        assert!(users::insert(&db.pool, &user).await.unwrap());
        id
    }

    async fn session(db: &Db, user_id: &str) -> String {
        let id = crate::store::new_id();
        let new = NewSession {
            id: &id,
            user_id,
            expires_at: now_ms() + 60_000,
            ip_address: None,
            user_agent: None,
        };
        insert(&db.pool, &new).await.unwrap();
        id
    }

    #[tokio::test]
    async fn a_refresh_token_is_consumed_once() {
        let (db, _dir) = testing::sqlite().await;
        let user_id = user(&db).await;
        let sid = session(&db, &user_id).await;
        insert_refresh_token(&db.pool, "h1", &sid, now_ms() + 60_000)
            .await
            .unwrap();
        assert!(
            consume_refresh_token(&db.pool, "h1", now_ms())
                .await
                .unwrap()
        );
        assert!(
            !consume_refresh_token(&db.pool, "h1", now_ms())
                .await
                .unwrap()
        );
        assert!(
            !consume_refresh_token(&db.pool, "unknown", now_ms())
                .await
                .unwrap()
        );
        let row = refresh_token(&db.pool, "h1").await.unwrap().unwrap();
        assert!(row.used_at.is_some());
        assert_eq!(row.user_id, user_id);
    }

    #[tokio::test]
    async fn revoking_reports_exactly_the_sessions_it_ended() {
        let (db, _dir) = testing::sqlite().await;
        let user_id = user(&db).await;
        let other_user = user(&db).await;
        let (a, b, c) = (
            session(&db, &user_id).await,
            session(&db, &user_id).await,
            session(&db, &user_id).await,
        );
        let foreign = session(&db, &other_user).await;
        revoke(&db.pool, &a, "logout").await.unwrap();
        let mut ended = revoke_all_except(&db.pool, &user_id, &b, "password_change")
            .await
            .unwrap();
        assert_eq!(ended, vec![c.clone()]);
        ended = revoke_all(&db.pool, &user_id, "logout_all").await.unwrap();
        assert_eq!(ended, vec![b]);
        assert!(
            status(&db, &foreign)
                .await
                .unwrap()
                .unwrap()
                .revoked_at
                .is_none()
        );
        assert!(status(&db, &a).await.unwrap().unwrap().revoked_at.is_some());
    }
}
