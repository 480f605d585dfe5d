//! The mail outbox: every mail is recorded here in the transaction that causes it, then delivered.

use super::Executes;
use sqlx::{FromRow, QueryBuilder};

use super::{Db, new_id, now_ms};

#[derive(Debug, Clone, FromRow)]
pub struct MailRow {
    pub id: String,
    pub to_address: String,
    pub subject: String,
    /// Sealed with the vault for the kinds `mail::is_sensitive` names; empty once delivered.
    pub body: String,
    pub kind: String,
    pub status: String,
    pub attempts: i64,
}

const COLUMNS: &str = "id, to_address, subject, body, kind, status, attempts";

/// A mail to queue.
pub struct NewMail {
    pub id: String,
    pub to_address: String,
    pub subject: String,
    pub body: String,
    pub kind: String,
}

pub async fn insert<'e>(
    exec: impl Executes<'e>,
    to_address: &str,
    subject: &str,
    body: &str,
    kind: &str,
) -> sqlx::Result<String> {
    let mail = NewMail {
        id: new_id(),
        to_address: to_address.to_string(),
        subject: subject.to_string(),
        body: body.to_string(),
        kind: kind.to_string(),
    };
    insert_once(exec, std::slice::from_ref(&mail)).await?;
    Ok(mail.id)
}

/// Queues mails in one statement, each under its id once: an id queued before is left as it is
/// (a notification dispatched again after a crash, or by a second instance, is one mail).
pub async fn insert_once<'e>(exec: impl Executes<'e>, mails: &[NewMail]) -> sqlx::Result<()> {
    if mails.is_empty() {
        return Ok(());
    }
    let now = now_ms();
    on!(exec, |c, DB| {
        let mut query = QueryBuilder::<DB>::new(
            "INSERT INTO mail_outbox (id, to_address, subject, body, kind, created_at) ",
        );
        query.push_values(mails, |mut row, mail| {
            row.push_bind(mail.id.clone())
                .push_bind(mail.to_address.clone())
                .push_bind(mail.subject.clone())
                .push_bind(mail.body.clone())
                .push_bind(mail.kind.clone())
                .push_bind(now);
        });
        query.push(" ON CONFLICT (id) DO NOTHING");
        query
            .build()
            .execute(c)
            .await
            .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn pending(db: &Db, limit: i64) -> sqlx::Result<Vec<MailRow>> {
    on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM mail_outbox WHERE status = 'pending' ORDER BY created_at LIMIT $1"
    ))
    .bind(limit)
    .fetch_all(c)
    .await)
}

pub async fn by_id(db: &Db, id: &str) -> sqlx::Result<Option<MailRow>> {
    on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM mail_outbox WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(c)
    .await)
}

/// Mail to `to_address` not delivered yet (held or pending), newest first.
pub async fn undelivered_to(db: &Db, to_address: &str) -> sqlx::Result<Vec<MailRow>> {
    on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM mail_outbox WHERE to_address = $1 AND status IN ('pending', 'held') \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(to_address)
    .fetch_all(c)
    .await)
}

/// Forgets a delivered mail's body (one that carried a secret such as a reset link).
pub async fn erase_body(db: &Db, id: &str) -> sqlx::Result<()> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE mail_outbox SET body = '' WHERE id = $1"
    ))
    .bind(id)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

/// Final or retryable outcome of one delivery attempt.
pub async fn record_attempt(
    db: &Db,
    id: &str,
    status: &str,
    error: Option<&str>,
) -> sqlx::Result<()> {
    let sent_at = (status == "sent" || status == "logged").then(now_ms);
    on!(&db.pool, |c| {
        sqlx::query(
            schema_checked!("UPDATE mail_outbox SET status = $1, attempts = attempts + 1, last_error = $2, sent_at = $3 WHERE id = $4"),
        )
        .bind(status)
        .bind(error)
        .bind(sent_at)
        .bind(id)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}
