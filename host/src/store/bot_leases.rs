//! Leases on users' trading state when several instances share the database (`bot_leases`), and
//! the instances' heartbeats (`cluster_instances`). See `engine::leases` for how they are used.

use dashmap::DashMap;

use super::orders::LIVE;
use super::writer::Fence;
use super::{Backend, Conn, Db};

/// How long writes of a plugin's store for a user are refused after this instance lost the
/// user's lease: longer than any plugin call that was under way then.
const LOST_FOR_MS: i64 = 60_000;

/// The users' leases this instance holds (several instances only), for the writes made outside a
/// trader: a plugin's store written during a call on the user's behalf carries the lease's fence,
/// so a call that was under way when another instance took the user over writes nothing.
#[derive(Debug, Default)]
pub struct Holdings(DashMap<String, Holding>);

#[derive(Debug, Clone, Copy)]
enum Holding {
    Token(i64),
    LostAt(i64),
}

impl Holdings {
    pub fn hold(&self, user_id: &str, token: i64) {
        self.0.insert(user_id.to_string(), Holding::Token(token));
    }

    pub fn lost(&self, user_id: &str, now: i64) {
        self.0.insert(user_id.to_string(), Holding::LostAt(now));
    }

    /// The fence for a write of the user's data now: their lease's when this instance holds
    /// it, one that never holds when it lost it lately, none otherwise.
    pub fn fence(&self, user_id: &str, now: i64) -> Option<Fence> {
        let token = match *self.0.get(user_id)? {
            Holding::Token(token) => token,
            Holding::LostAt(at) if now - at < LOST_FOR_MS => 0,
            Holding::LostAt(_) => return None,
        };
        Some(Fence {
            user_id: user_id.to_string(),
            token,
        })
    }

    /// Forgets losses older than any call.
    pub fn sweep(&self, now: i64) {
        self.0.retain(
            |_, holding| !matches!(holding, Holding::LostAt(at) if now - *at >= LOST_FOR_MS),
        );
    }
}

/// Records that `instance` is alive at `now`.
pub async fn heartbeat(db: &Db, instance: &str, now: i64) -> sqlx::Result<()> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "INSERT INTO cluster_instances (instance, seen_at) VALUES ($1, $2) \
         ON CONFLICT (instance) DO UPDATE SET seen_at = excluded.seen_at"
    ))
    .bind(instance)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// The instances seen since `since`, in name order.
pub async fn live_instances(db: &Db, since: i64) -> sqlx::Result<Vec<String>> {
    on!(&db.pool, |c| sqlx::query_scalar(schema_checked!(
        "SELECT instance FROM cluster_instances WHERE seen_at >= $1 ORDER BY instance"
    ))
    .bind(since)
    .fetch_all(c)
    .await)
}

/// Forgets an instance that stops (its leases are released apart).
pub async fn leave(db: &Db, instance: &str) -> sqlx::Result<()> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "DELETE FROM cluster_instances WHERE instance = $1"
    ))
    .bind(instance)
    .execute(c)
    .await
    .map(drop))
}

/// Claims the user's lease for `instance` until `until`: granted when nobody holds it, when its
/// holder let it run out before `now`, or when `instance` holds it already (after a restart under
/// the same name). Every claim takes a new fencing token, which it answers. On PostgreSQL it
/// first waits for the books' batches under way for the user ([`tokens`]), but not long (their
/// instance may be stalled with one open): the claim is simply not granted this time.
pub async fn claim(
    db: &Db,
    user_id: &str,
    instance: &str,
    now: i64,
    until: i64,
) -> sqlx::Result<Option<i64>> {
    let mut tx = db.begin().await?;
    if db.backend == Backend::Postgres {
        on!(&mut tx, |c| sqlx::query("SET LOCAL lock_timeout = '250ms'")
            .execute(c)
            .await
            .map(drop))?;
        // Waits for the books' batches under way for the user ([`tokens`]).
        let locked = on!(&mut tx, |c| sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT pg_advisory_xact_lock({LEASE_LOCKS}, hashtext($1) & {})",
            LOCK_BUCKETS - 1
        )))
        .bind(user_id)
        .execute(c)
        .await
        .map(drop));
        match locked {
            Ok(()) => {}
            Err(sqlx::Error::Database(err))
                if err.code().as_deref() == Some(LOCK_NOT_AVAILABLE) =>
            {
                return Ok(None);
            }
            Err(err) => return Err(err),
        }
    }
    let claimed = on!(&mut tx, |c| sqlx::query_scalar(schema_checked!(
        "INSERT INTO bot_leases (user_id, instance, token, expires_at) VALUES ($1, $2, 1, $3) \
         ON CONFLICT (user_id) DO UPDATE SET instance = excluded.instance, \
         token = bot_leases.token + 1, expires_at = excluded.expires_at \
         WHERE bot_leases.expires_at < $4 OR bot_leases.instance = excluded.instance \
         RETURNING token"
    ))
    .bind(user_id)
    .bind(instance)
    .bind(until)
    .bind(now)
    .fetch_optional(c)
    .await);
    match claimed {
        Ok(token) => {
            tx.commit().await?;
            Ok(token)
        }
        Err(sqlx::Error::Database(err)) if err.code().as_deref() == Some(LOCK_NOT_AVAILABLE) => {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// PostgreSQL's SQLSTATE for a lock not granted within `lock_timeout`.
const LOCK_NOT_AVAILABLE: &str = "55P03";

/// Extends every lease `instance` holds until `until`; answers them with their tokens. A lease
/// another instance took over is no longer the instance's, and is not among them.
pub async fn renew(db: &Db, instance: &str, until: i64) -> sqlx::Result<Vec<(String, i64)>> {
    on!(&db.pool, |c| sqlx::query_as(schema_checked!(
        "UPDATE bot_leases SET expires_at = $1 WHERE instance = $2 RETURNING user_id, token"
    ))
    .bind(until)
    .bind(instance)
    .fetch_all(c)
    .await)
}

/// Extends one lease `instance` holds under `token` until `until`; whether it still held it.
pub async fn renew_one(
    db: &Db,
    user_id: &str,
    instance: &str,
    token: i64,
    until: i64,
) -> sqlx::Result<bool> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE bot_leases SET expires_at = $1 WHERE user_id = $2 AND instance = $3 AND token = $4"
    ))
    .bind(until)
    .bind(user_id)
    .bind(instance)
    .bind(token)
    .execute(c)
    .await
    .map(|done| done.rows_affected() == 1))
}

/// Gives the user's lease up, if `instance` holds it (under `token`, when given): anyone may
/// claim it at once. The row and its token stay, so the next claim's token is greater than every
/// earlier one.
pub async fn release(
    db: &Db,
    user_id: &str,
    instance: &str,
    token: Option<i64>,
) -> sqlx::Result<bool> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE bot_leases SET instance = '', expires_at = 0 \
         WHERE user_id = $1 AND instance = $2 AND ($3 IS NULL OR token = $3)"
    ))
    .bind(user_id)
    .bind(instance)
    .bind(token)
    .execute(c)
    .await
    .map(|done| done.rows_affected() == 1))
}

/// The users whose lease another instance than `instance` holds at `now`.
pub async fn held_by_others(db: &Db, instance: &str, now: i64) -> sqlx::Result<Vec<String>> {
    on!(&db.pool, |c| {
        sqlx::query_scalar(
        schema_checked!("SELECT user_id FROM bot_leases WHERE instance <> '' AND instance <> $1 AND expires_at >= $2")
    )
    .bind(instance)
    .bind(now)
    .fetch_all(c)
    .await
    })
}

/// Gives up every lease `instance` holds (it is stopping).
pub async fn release_all(db: &Db, instance: &str) -> sqlx::Result<u64> {
    on!(&db.pool, |c| sqlx::query(schema_checked!(
        "UPDATE bot_leases SET instance = '', expires_at = 0 WHERE instance = $1"
    ))
    .bind(instance)
    .execute(c)
    .await
    .map(|done| done.rows_affected()))
}

/// A user who needs an owner and has none.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Unowned {
    pub user_id: String,
    /// Their lease ran out on an instance that stopped renewing it (rather than nobody holding
    /// it): their bot is waiting for a new owner.
    pub orphaned: bool,
}

/// What needs an owner: how many users have a bot the scheduler scans, and the users with a
/// scanned bot or with orders or closes due whose lease nobody holds (or it ran out before
/// `now`), in a stable order.
pub async fn unowned(db: &Db, now: i64) -> sqlx::Result<(i64, Vec<Unowned>)> {
    let scanned: i64 = on!(&db.pool, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM bots WHERE status IN ('starting', 'running', 'paused')"
    ))
    .fetch_one(c)
    .await)?;
    let free: Vec<Unowned> = on!(&db.pool, |c| {
        sqlx::query_as(sql!(
        "SELECT wanted.user_id, COALESCE(l.instance, '') <> '' AS orphaned FROM ( \
           SELECT user_id FROM bots WHERE status IN ('starting', 'running', 'paused') \
           UNION SELECT user_id FROM orders WHERE status IN {LIVE} AND COALESCE(next_check_at, 0) <= $1 \
           UNION SELECT user_id FROM positions WHERE status = 'open' AND close_reason IS NOT NULL \
             AND COALESCE(next_close_at, 0) <= $1 \
         ) wanted LEFT JOIN bot_leases l ON l.user_id = wanted.user_id \
         WHERE l.user_id IS NULL OR l.expires_at < $1 ORDER BY wanted.user_id"
    ))
    .bind(now)
    .fetch_all(c)
    .await
    })?;
    Ok((scanned, free))
}

/// The namespace of the advisory locks that order takeovers against the books' batches on
/// PostgreSQL. The second key is one of [`LOCK_BUCKETS`] buckets of the user id's hash: a batch
/// takes at most that many locks however many users it writes for (PostgreSQL's lock table
/// holds some 64 per connection), and a takeover waits only for the batches under way in the
/// user's bucket.
const LEASE_LOCKS: i32 = 0x7468_6c73;
/// How many locks the users' leases are spread over (a power of two).
const LOCK_BUCKETS: i32 = 256;

/// The leases' current tokens of `user_ids`, read inside the books' transaction. On PostgreSQL
/// the transaction first takes a shared advisory lock per users' bucket, which a takeover takes
/// exclusively ([`claim`]): a takeover waits for the batches under way, and a batch after it
/// reads its new token (locks in memory, where `FOR SHARE` would write every lease row it reads).
/// SQLite's writer holds the only write lock.
pub async fn tokens(tx: &mut Conn<'_>, user_ids: &[&str]) -> sqlx::Result<Vec<(String, i64)>> {
    let postgres = tx.backend() == Backend::Postgres;
    let mut out = Vec::with_capacity(user_ids.len());
    for chunk in user_ids.chunks(super::MAX_ROWS) {
        let list: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let list = list.join(", ");
        if postgres {
            let sql = format!(
                "SELECT pg_advisory_xact_lock_shared({LEASE_LOCKS}, bucket) FROM ( \
                   SELECT DISTINCT hashtext(id) & {} AS bucket FROM (VALUES ({})) AS users(id) \
                 ) AS buckets",
                LOCK_BUCKETS - 1,
                list.replace(", ", "), (")
            );
            on!(&mut *tx, |c, DB| {
                let mut query = sqlx::query::<DB>(sqlx::AssertSqlSafe(sql.as_str()));
                for user_id in chunk {
                    query = query.bind(*user_id);
                }
                query.execute(c).await.map(drop)
            })?;
        }
        let sql = format!("SELECT user_id, token FROM bot_leases WHERE user_id IN ({list})");
        out.extend(on!(&mut *tx, |c, DB| {
            let mut query = sqlx::query_as::<DB, (String, i64)>(sqlx::AssertSqlSafe(sql.as_str()));
            for user_id in chunk {
                query = query.bind(*user_id);
            }
            query.fetch_all(c).await
        })?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing;

    #[tokio::test]
    async fn every_claim_takes_a_greater_token_and_a_lease_moves_only_once_it_ran_out() {
        let (db, _dir) = testing::sqlite().await;
        assert_eq!(
            claim(&db, "u1", "one", 1_000, 2_000).await.unwrap(),
            Some(1)
        );
        // Held: another instance waits.
        assert_eq!(claim(&db, "u1", "two", 1_500, 2_500).await.unwrap(), None);
        assert_eq!(
            renew(&db, "one", 3_000).await.unwrap(),
            [("u1".to_string(), 1)]
        );
        assert_eq!(claim(&db, "u1", "two", 2_500, 3_500).await.unwrap(), None);
        // Ran out: taken over with a new token; the old holder renews nothing.
        assert_eq!(
            claim(&db, "u1", "two", 3_001, 4_000).await.unwrap(),
            Some(2)
        );
        assert!(renew(&db, "one", 5_000).await.unwrap().is_empty());
        assert!(!release(&db, "u1", "one", None).await.unwrap());
        // A release under a token the lease no longer has is not one.
        assert!(!release(&db, "u1", "two", Some(1)).await.unwrap());
        // Released: claimed at once, and the token still grows.
        assert!(release(&db, "u1", "two", Some(2)).await.unwrap());
        assert_eq!(
            claim(&db, "u1", "one", 3_100, 5_000).await.unwrap(),
            Some(3)
        );
        // The same instance claiming again (a restart under its name) takes a new token too.
        assert_eq!(
            claim(&db, "u1", "one", 3_200, 5_000).await.unwrap(),
            Some(4)
        );
        // Others' leases, as the kill switch sees them: live ones only.
        claim(&db, "u2", "two", 3_200, 6_000).await.unwrap();
        claim(&db, "u3", "two", 3_200, 3_300).await.unwrap();
        assert_eq!(held_by_others(&db, "one", 4_000).await.unwrap(), ["u2"]);
        assert_eq!(held_by_others(&db, "two", 4_000).await.unwrap(), ["u1"]);
    }
}
