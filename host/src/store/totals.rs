//! The `account_totals` table, one row of running totals per account that has completed a
//! trade, and `account_day_totals`, one row per account, UTC day and symbol (`engine::totals`).
//! [`add_trade`] runs in the transaction that books the trade, so the rows always agree with the
//! `trades` table.

use super::{Conn, Executes};
use std::collections::BTreeMap;

use sqlx::FromRow;

use super::{Db, now_ms};
use super::{dec, flags, trades};
use crate::engine::accounting::CompletedTrade;
use crate::engine::totals::{AccountTotals, DayTotals, Tally, utc_day};

/// Set once the totals of trades booked before the table existed have been computed.
const BACKFILLED_FLAG: &str = "account_totals_backfilled";

const COLUMNS: &str = "trades, winners, losers, net_pnl, profit, loss, fees, volume, best_trade, \
     worst_trade, streak, streak_started_at, longest_win_streak, longest_loss_streak, hold_ms, \
     first_closed_at, last_closed_at";

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
    longest_win_streak: i64,
    longest_loss_streak: i64,
    hold_ms: i64,
    first_closed_at: Option<i64>,
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
            longest_win_streak: self.longest_win_streak.max(0) as u64,
            longest_loss_streak: self.longest_loss_streak.max(0) as u64,
            hold_ms: self.hold_ms,
            first_closed_at: self.first_closed_at,
            last_closed_at: self.last_closed_at,
        })
    }
}

/// The account's totals (all zero before its first completed trade).
pub async fn get<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<AccountTotals> {
    let row: Option<TotalsRow> = on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM account_totals WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)?;
    row.map_or(Ok(AccountTotals::default()), TotalsRow::into_totals)
}

/// The totals of every account, for figures across the platform: one row per account that
/// has traded.
pub async fn all(db: &Db) -> sqlx::Result<Vec<AccountTotals>> {
    let rows: Vec<TotalsRow> = on!(&db.pool, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM account_totals"
    ))
    .fetch_all(c)
    .await)?;
    rows.into_iter().map(TotalsRow::into_totals).collect()
}

/// Writes the account's row; `on_conflict` says what an existing row gets.
async fn put(
    conn: &mut Conn,
    user_id: &str,
    t: &AccountTotals,
    on_conflict: &'static str,
) -> sqlx::Result<()> {
    on!(conn, |c| {
        sqlx::query(sql!(
            "INSERT INTO account_totals (user_id, {COLUMNS}, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) \
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
        .bind(t.longest_win_streak as i64)
        .bind(t.longest_loss_streak as i64)
        .bind(t.hold_ms)
        .bind(t.first_closed_at)
        .bind(t.last_closed_at)
        .bind(now_ms())
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Adds a completed trade to its account's totals and to its day's, inside the transaction that
/// books it.
pub async fn add_trade(conn: &mut Conn, user_id: &str, trade: &CompletedTrade) -> sqlx::Result<()> {
    let lock = row_lock(conn);
    let row: Option<TotalsRow> = on!(&mut *conn, |c| sqlx::query_as(sql!(
        "SELECT {COLUMNS} FROM account_totals WHERE user_id = $1{lock}"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)?;
    let mut totals = row.map_or(Ok(AccountTotals::default()), TotalsRow::into_totals)?;
    totals.add(trade);
    put(conn, user_id, &totals, UPDATE_ALL).await?;

    let (day, symbol) = (utc_day(trade.closed_at_ms), trade.symbol.as_str());
    let row: Option<DayRow> = on!(&mut *conn, |c| sqlx::query_as(sql!(
        "SELECT {DAY_COLUMNS} FROM account_day_totals \
         WHERE user_id = $1 AND day = $2 AND symbol = $3{lock}"
    ))
    .bind(user_id)
    .bind(day)
    .bind(symbol)
    .fetch_optional(c)
    .await)?;
    let mut totals = match row {
        Some(row) => row.into_day()?,
        None => DayTotals {
            day,
            symbol: symbol.to_string(),
            tally: Tally::default(),
        },
    };
    totals.tally.add(trade);
    put_day(conn, user_id, &totals, DAY_UPDATE_ALL).await
}

/// On PostgreSQL a totals row is locked while it is read, so two transactions booking trades of
/// one account add up instead of overwriting each other (SQLite's writer is one at a time
/// already).
fn row_lock(conn: &Conn) -> &'static str {
    if conn.backend() == super::Backend::Postgres {
        " FOR UPDATE"
    } else {
        ""
    }
}

const DAY_COLUMNS: &str = "day, symbol, trades, winners, losers, net_pnl, size_usd";

#[derive(FromRow)]
struct DayRow {
    day: i64,
    symbol: String,
    trades: i64,
    winners: i64,
    losers: i64,
    net_pnl: String,
    size_usd: String,
}

impl DayRow {
    fn into_day(self) -> sqlx::Result<DayTotals> {
        Ok(DayTotals {
            day: self.day,
            symbol: self.symbol,
            tally: Tally {
                trades: self.trades.max(0) as u64,
                winners: self.winners.max(0) as u64,
                losers: self.losers.max(0) as u64,
                net_pnl: dec(&self.net_pnl)?,
                size_usd: dec(&self.size_usd)?,
            },
        })
    }
}

/// The account's per-day totals from UTC day `from_day` on, by day and then symbol.
pub async fn days_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    from_day: i64,
) -> sqlx::Result<Vec<DayTotals>> {
    let rows: Vec<DayRow> = on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {DAY_COLUMNS} FROM account_day_totals WHERE user_id = $1 AND day >= $2 \
         ORDER BY day, symbol"
    ))
    .bind(user_id)
    .bind(from_day)
    .fetch_all(c)
    .await)?;
    rows.into_iter().map(DayRow::into_day).collect()
}

const DAY_UPDATE_ALL: &str = "DO UPDATE SET trades = $4, winners = $5, losers = $6, net_pnl = $7, \
     size_usd = $8";

async fn put_day(
    conn: &mut Conn,
    user_id: &str,
    d: &DayTotals,
    on_conflict: &'static str,
) -> sqlx::Result<()> {
    on!(conn, |c| sqlx::query(sql!(
        "INSERT INTO account_day_totals (user_id, {DAY_COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (user_id, day, symbol) {on_conflict}"
    ))
    .bind(user_id)
    .bind(d.day)
    .bind(&d.symbol)
    .bind(d.tally.trades as i64)
    .bind(d.tally.winners as i64)
    .bind(d.tally.losers as i64)
    .bind(d.tally.net_pnl.to_string())
    .bind(d.tally.size_usd.to_string())
    .execute(c)
    .await
    .map(|done| done.rows_affected()))?;
    Ok(())
}

const UPDATE_ALL: &str = "DO UPDATE SET trades = $2, winners = $3, losers = $4, net_pnl = $5, \
     profit = $6, loss = $7, fees = $8, volume = $9, best_trade = $10, worst_trade = $11, \
     streak = $12, streak_started_at = $13, longest_win_streak = $14, longest_loss_streak = $15, \
     hold_ms = $16, first_closed_at = $17, last_closed_at = $18, updated_at = $19";

/// Computes the totals of trades booked before these tables existed (or before a migration that
/// cleared them), once: the first start after the upgrade reads each account's history a last
/// time, in close order, and writes its rows in one transaction.
pub async fn backfill(db: &Db) -> sqlx::Result<()> {
    if flags::flag(&db.pool, BACKFILLED_FLAG).await?.is_some() {
        return Ok(());
    }
    let users: Vec<(String,)> = on!(&db.pool, |c| sqlx::query_as(
        "SELECT DISTINCT user_id FROM trades \
         WHERE user_id NOT IN (SELECT user_id FROM account_totals)",
    )
    .fetch_all(c)
    .await)?;
    for (user_id,) in users {
        let mut tx = db.pool.begin().await?;
        let mut totals = AccountTotals::default();
        let mut days: BTreeMap<(i64, String), Tally> = BTreeMap::new();
        for trade in &trades::trades_since(&mut *tx, &user_id, 0).await? {
            totals.add(trade);
            days.entry((utc_day(trade.closed_at_ms), trade.symbol.clone()))
                .or_default()
                .add(trade);
        }
        // Written only where no row exists: another process migrating the same database at
        // the same moment computes the same rows.
        put(&mut tx, &user_id, &totals, "DO NOTHING").await?;
        for ((day, symbol), tally) in days {
            let day = DayTotals { day, symbol, tally };
            put_day(&mut tx, &user_id, &day, "DO NOTHING").await?;
        }
        tx.commit().await?;
    }
    flags::set_flag(&db.pool, BACKFILLED_FLAG, "1", "migration", now_ms()).await
}
