//! The `account_totals` table: one row of running totals per account that has completed a
//! trade (`engine::totals`). [`add_trade`] runs in the transaction that books the trade, so the
//! row always agrees with the `trades` table.

use sqlx::{Any, AnyConnection, Executor, FromRow};

use super::trading::{self, dec};
use super::{Db, now_ms};
use crate::engine::accounting::CompletedTrade;
use crate::engine::totals::AccountTotals;

/// Set once the totals of trades booked before the table existed have been computed.
const BACKFILLED_FLAG: &str = "account_totals_backfilled";

const COLUMNS: &str = "trades, winners, losers, net_pnl, profit, loss, fees, volume, best_trade, \
     worst_trade, streak, streak_started_at, last_closed_at";

#[derive(FromRow)]
struct TotalsRow {
    trades: i64,
    winners: i64,
    losers: i64,
    net_pnl: String,
    profit: String,
    loss: String,
    fees: String,
    volume: String,
    best_trade: Option<String>,
    worst_trade: Option<String>,
    streak: i64,
    streak_started_at: Option<i64>,
    last_closed_at: Option<i64>,
}

impl TotalsRow {
    fn into_totals(self) -> sqlx::Result<AccountTotals> {
        let opt = |text: Option<String>| text.as_deref().map(dec).transpose();
        Ok(AccountTotals {
            trades: self.trades.max(0) as u64,
            winners: self.winners.max(0) as u64,
            losers: self.losers.max(0) as u64,
            net_pnl: dec(&self.net_pnl)?,
            profit: dec(&self.profit)?,
            loss: dec(&self.loss)?,
            fees: dec(&self.fees)?,
            volume: dec(&self.volume)?,
            best_trade: opt(self.best_trade)?,
            worst_trade: opt(self.worst_trade)?,
            streak: self.streak,
            streak_started_at: self.streak_started_at,
            last_closed_at: self.last_closed_at,
        })
    }
}

/// The account's totals (all zero before its first completed trade).
pub async fn get<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<AccountTotals> {
    let row: Option<TotalsRow> = sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM account_totals WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_optional(exec)
    .await?;
    row.map_or(Ok(AccountTotals::default()), TotalsRow::into_totals)
}

/// The totals of every account, for figures across the platform: one row per account that
/// has traded.
pub async fn all(db: &Db) -> sqlx::Result<Vec<AccountTotals>> {
    let rows: Vec<TotalsRow> = sqlx::query_as(sql!("SELECT {COLUMNS} FROM account_totals"))
        .fetch_all(&db.pool)
        .await?;
    rows.into_iter().map(TotalsRow::into_totals).collect()
}

/// Writes the account's row; `on_conflict` says what an existing row gets.
async fn put(
    conn: &mut AnyConnection,
    user_id: &str,
    t: &AccountTotals,
    on_conflict: &'static str,
) -> sqlx::Result<()> {
    sqlx::query(sql!(
        "INSERT INTO account_totals (user_id, {COLUMNS}, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
         ON CONFLICT (user_id) {on_conflict}"
    ))
    .bind(user_id)
    .bind(t.trades as i64)
    .bind(t.winners as i64)
    .bind(t.losers as i64)
    .bind(t.net_pnl.to_string())
    .bind(t.profit.to_string())
    .bind(t.loss.to_string())
    .bind(t.fees.to_string())
    .bind(t.volume.to_string())
    .bind(t.best_trade.map(|d| d.to_string()))
    .bind(t.worst_trade.map(|d| d.to_string()))
    .bind(t.streak)
    .bind(t.streak_started_at)
    .bind(t.last_closed_at)
    .bind(now_ms())
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds a completed trade to its account's totals, inside the transaction that books it. On
/// PostgreSQL the row is locked while it is read, so two transactions booking trades of one
/// account add up instead of overwriting each other (SQLite's writer is one at a time already).
pub async fn add_trade(
    conn: &mut AnyConnection,
    user_id: &str,
    trade: &CompletedTrade,
) -> sqlx::Result<()> {
    let lock = if conn.backend_name() == "PostgreSQL" {
        " FOR UPDATE"
    } else {
        ""
    };
    let row: Option<TotalsRow> = sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM account_totals WHERE user_id = $1{lock}"
    ))
    .bind(user_id)
    .fetch_optional(&mut *conn)
    .await?;
    let mut totals = row.map_or(Ok(AccountTotals::default()), TotalsRow::into_totals)?;
    totals.add(trade);
    put(conn, user_id, &totals, UPDATE_ALL).await
}

const UPDATE_ALL: &str = "DO UPDATE SET trades = $2, winners = $3, losers = $4, net_pnl = $5, \
     profit = $6, loss = $7, fees = $8, volume = $9, best_trade = $10, worst_trade = $11, \
     streak = $12, streak_started_at = $13, last_closed_at = $14, updated_at = $15";

/// Computes the totals of trades booked before this table existed, once: the first start after
/// the upgrade reads each account's history a last time, in close order.
pub async fn backfill(db: &Db) -> sqlx::Result<()> {
    if trading::flag(&db.pool, BACKFILLED_FLAG).await?.is_some() {
        return Ok(());
    }
    let users: Vec<(String,)> = sqlx::query_as(
        "SELECT DISTINCT user_id FROM trades \
         WHERE user_id NOT IN (SELECT user_id FROM account_totals)",
    )
    .fetch_all(&db.pool)
    .await?;
    let mut conn = db.pool.acquire().await?;
    for (user_id,) in users {
        let mut totals = AccountTotals::default();
        for trade in &trading::trades_since(&mut *conn, &user_id, 0).await? {
            totals.add(trade);
        }
        // Written only where no row exists: another process migrating the same database at
        // the same moment computes the same row.
        put(&mut conn, &user_id, &totals, "DO NOTHING").await?;
    }
    trading::set_flag(&db.pool, BACKFILLED_FLAG, "1", "migration", now_ms()).await
}
