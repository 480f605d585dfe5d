//! Equity snapshots: the account's equity, cash and unrealized P&L over time.

use super::Executes;
use super::statements::{Statements, statement};
use rust_decimal::Decimal;

use super::StoredDecimal;

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub user_id: String,
    pub at: i64,
    pub equity: Decimal,
    pub cash: Decimal,
    pub unrealized_pnl: Decimal,
}

/// Inserts equity snapshots in one statement; a second one of a user at the same instant is
/// dropped.
pub fn push_insert(statements: &mut Statements, snapshots: &[&Snapshot]) {
    if snapshots.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push("INSERT INTO equity_snapshots (user_id, at, equity, cash, unrealized_pnl) ");
        query.push_values(snapshots, |mut row, s| {
            row.push_bind(s.user_id.clone())
                .push_bind(s.at)
                .push_bind(StoredDecimal(s.equity))
                .push_bind(StoredDecimal(s.cash))
                .push_bind(StoredDecimal(s.unrealized_pnl));
        });
        query.push(" ON CONFLICT (user_id, at) DO NOTHING");
    })
}

/// Equity at or after `since`, oldest first, as (time, equity): every snapshot, or with a
/// `bucket_ms` the last snapshot of each bucket (long periods read hourly points, not every minute).
pub async fn equity_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
    bucket_ms: Option<i64>,
) -> sqlx::Result<Vec<(i64, Decimal)>> {
    let rows: Vec<(i64, StoredDecimal)> = match bucket_ms {
        None => on!(exec, |c| {
            sqlx::query_as(schema_checked!("SELECT at, equity FROM equity_snapshots WHERE user_id = $1 AND at >= $2 ORDER BY at"))
                .bind(user_id)
                .bind(since)
                .fetch_all(c)
                .await
        })?,
        Some(bucket) => on!(exec, |c| {
            sqlx::query_as(
                    schema_checked!("SELECT at, equity FROM equity_snapshots WHERE user_id = $1 AND at IN \
                     (SELECT MAX(at) FROM equity_snapshots WHERE user_id = $1 AND at >= $2 GROUP BY at / $3) ORDER BY at"),
                )
                .bind(user_id)
                .bind(since)
                .bind(bucket.max(1))
                .fetch_all(c)
                .await
        })?,
    };
    Ok(rows
        .into_iter()
        .map(|(at, equity)| (at, equity.0))
        .collect())
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::testing::sqlite;
    use crate::store::users::{self, NewUser};

    #[tokio::test]
    async fn long_equity_series_are_read_as_the_last_point_of_each_bucket() {
        let (db, _dir) = sqlite().await;
        let user = NewUser {
            id: "u1",
            email: "u1@example.com",
            full_name: "U",
            password_hash: "x",
            role: "user",
            trial_ends_at: None,
            created_at: 0,
        };
        users::insert(&db.pool, &user).await.unwrap();
        let snapshots: Vec<Snapshot> = (0..180i64)
            .map(|minute| Snapshot {
                user_id: "u1".into(),
                at: minute * 60_000,
                equity: Decimal::from(1000 + minute),
                cash: Decimal::ZERO,
                unrealized_pnl: Decimal::ZERO,
            })
            .collect();
        let snapshots: Vec<&Snapshot> = snapshots.iter().collect();
        Statements::once(&db.pool, |statements| push_insert(statements, &snapshots))
            .await
            .unwrap();
        let all = equity_since(&db.pool, "u1", 0, None).await.unwrap();
        assert_eq!(all.len(), 180);
        let hourly = equity_since(&db.pool, "u1", 0, Some(3_600_000))
            .await
            .unwrap();
        let expected: Vec<(i64, Decimal)> = [59i64, 119, 179]
            .iter()
            .map(|m| (m * 60_000, Decimal::from(1000 + m)))
            .collect();
        assert_eq!(hourly, expected);
    }
}
