//! The `account_totals` table, one row of running totals per account that has completed a
//! trade, and `account_day_totals`, one row per account, UTC day, symbol and strategy
//! (`engine::totals`).
//! [`add_trades`] runs in the transaction that books the trade, so the rows always agree with the
//! `trades` table.

use super::Executes;
use super::statements::{Statements, statement};
use std::collections::BTreeMap;

use sqlx::FromRow;

use super::{Db, now_ms};
use super::{StoredDecimal, flags, trades};
use crate::engine::accounting::CompletedTrade;
use crate::engine::totals::{AccountTotals, DayTotals, Sums, Tally, utc_day};

/// Set once the totals of trades booked before the table existed have been computed.
const BACKFILLED_FLAG: &str = "account_totals_backfilled";

const COLUMNS: &str = "trades, winners, losers, net_pnl, profit, loss, fees, volume, best_trade, \
     worst_trade, streak, streak_started_at, longest_win_streak, longest_loss_streak, hold_ms, \
     first_closed_at, last_closed_at";

/// Counts and sums of trades as a statement gives them: an account's running totals, or what the
/// database adds up over a period (`trades::sums_since`).
#[derive(FromRow)]
pub(super) struct SumsRow {
    trades: i64,
    winners: i64,
    losers: i64,
    net_pnl: StoredDecimal,
    profit: StoredDecimal,
    loss: StoredDecimal,
}

impl SumsRow {
    pub(super) fn into_sums(self) -> Sums {
        Sums {
            trades: self.trades.max(0) as u64,
            winners: self.winners.max(0) as u64,
            losers: self.losers.max(0) as u64,
            net_pnl: self.net_pnl.0,
            profit: self.profit.0,
            loss: self.loss.0,
        }
    }
}

#[derive(FromRow)]
struct TotalsRow {
    #[sqlx(flatten)]
    sums: SumsRow,
    fees: StoredDecimal,
    volume: StoredDecimal,
    best_trade: Option<StoredDecimal>,
    worst_trade: Option<StoredDecimal>,
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
        Ok(AccountTotals {
            sums: self.sums.into_sums(),
            fees: self.fees.0,
            volume: self.volume.0,
            best_trade: StoredDecimal::opt(self.best_trade),
            worst_trade: StoredDecimal::opt(self.worst_trade),
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

/// Writes accounts' rows, each user once; `on_conflict` says what an existing row gets.
fn put(statements: &mut Statements, rows: &[(&str, AccountTotals)], on_conflict: &str) {
    let now = now_ms();
    statement!(statements, |query| {
        query.push(format!(
            "INSERT INTO account_totals (user_id, {COLUMNS}, updated_at) "
        ));
        query.push_values(rows, |mut row, (user_id, t)| {
            row.push_bind(user_id.to_string())
                .push_bind(t.sums.trades as i64)
                .push_bind(t.sums.winners as i64)
                .push_bind(t.sums.losers as i64)
                .push_bind(StoredDecimal(t.sums.net_pnl))
                .push_bind(StoredDecimal(t.sums.profit))
                .push_bind(StoredDecimal(t.sums.loss))
                .push_bind(StoredDecimal(t.fees))
                .push_bind(StoredDecimal(t.volume))
                .push_bind(t.best_trade.map(StoredDecimal))
                .push_bind(t.worst_trade.map(StoredDecimal))
                .push_bind(t.streak)
                .push_bind(t.streak_started_at)
                .push_bind(t.longest_win_streak as i64)
                .push_bind(t.longest_loss_streak as i64)
                .push_bind(t.hold_ms)
                .push_bind(t.first_closed_at)
                .push_bind(t.last_closed_at)
                .push_bind(now);
        });
        query.push(format!(" ON CONFLICT (user_id) {on_conflict}"));
    })
}

/// Adds completed trades (in the order they closed) to their accounts' totals and to their days',
/// inside the transaction that books them: each row is merged with the totals of one trade in an
/// upsert, relative to whatever the row holds when the statement runs (no read first, so
/// concurrent bookings of one account add up on PostgreSQL too; the upsert locks the row until
/// the transaction ends). An upsert may touch a row once, so trades of one row go in successive
/// statements, in order: the streak depends on it.
pub fn add_trades(statements: &mut Statements, trades: &[(&str, &CompletedTrade)]) {
    let accounts = trades.iter().map(|(user_id, trade)| {
        let mut one = AccountTotals::default();
        one.add(trade);
        (*user_id, *user_id, one)
    });
    for round in rounds(accounts) {
        put(statements, &round, &MERGE);
    }
    let days = trades.iter().map(|(user_id, trade)| {
        let mut tally = Tally::default();
        tally.add(trade);
        let day = DayTotals {
            day: utc_day(trade.closed_at_ms),
            symbol: trade.symbol.clone(),
            strategy: trade.strategy.clone(),
            tally,
        };
        let key = (
            *user_id,
            day.day,
            trade.symbol.as_str(),
            trade.strategy.as_str(),
        );
        (key, *user_id, day)
    });
    for round in rounds(days) {
        put_day(statements, &round, DAY_MERGE);
    }
}

/// Splits `(key, user, row)` into rounds in which each key appears once, a key's rows in their
/// order across the rounds.
fn rounds<'u, K: Eq + std::hash::Hash, R>(
    rows: impl Iterator<Item = (K, &'u str, R)>,
) -> Vec<Vec<(&'u str, R)>> {
    let mut seen: std::collections::HashMap<K, usize> = std::collections::HashMap::new();
    let mut rounds: Vec<Vec<(&str, R)>> = Vec::new();
    for (key, user_id, row) in rows {
        let round = seen.entry(key).or_insert(0);
        if rounds.len() <= *round {
            rounds.push(Vec::new());
        }
        rounds[*round].push((user_id, row));
        *round += 1;
    }
    rounds
}

/// Whether the new trade (`excluded`, whose streak is +1, −1 or 0) continues the row's run: then
/// the run grows, otherwise the trade starts one of its own (a flat trade ends it).
const SAME_DIRECTION: &str = "((excluded.streak > 0 AND account_totals.streak > 0) \
     OR (excluded.streak < 0 AND account_totals.streak < 0))";

/// An existing row merged with `excluded`, the totals of one trade (`AccountTotals::add` says
/// what one trade contributes).
static MERGE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let streak = format!(
        "(CASE WHEN excluded.streak = 0 THEN 0 WHEN {SAME_DIRECTION} \
         THEN account_totals.streak + excluded.streak ELSE excluded.streak END)"
    );
    format!(
        "DO UPDATE SET trades = account_totals.trades + excluded.trades, \
         winners = account_totals.winners + excluded.winners, \
         losers = account_totals.losers + excluded.losers, \
         net_pnl = account_totals.net_pnl + excluded.net_pnl, \
         profit = account_totals.profit + excluded.profit, \
         loss = account_totals.loss + excluded.loss, \
         fees = account_totals.fees + excluded.fees, \
         volume = account_totals.volume + excluded.volume, \
         best_trade = CASE WHEN account_totals.best_trade IS NULL \
             OR excluded.best_trade > account_totals.best_trade \
             THEN excluded.best_trade ELSE account_totals.best_trade END, \
         worst_trade = CASE WHEN account_totals.worst_trade IS NULL \
             OR excluded.worst_trade < account_totals.worst_trade \
             THEN excluded.worst_trade ELSE account_totals.worst_trade END, \
         streak = {streak}, \
         streak_started_at = CASE WHEN excluded.streak = 0 THEN NULL WHEN {SAME_DIRECTION} \
             THEN account_totals.streak_started_at ELSE excluded.streak_started_at END, \
         longest_win_streak = CASE WHEN {streak} > account_totals.longest_win_streak \
             THEN {streak} ELSE account_totals.longest_win_streak END, \
         longest_loss_streak = CASE WHEN -{streak} > account_totals.longest_loss_streak \
             THEN -{streak} ELSE account_totals.longest_loss_streak END, \
         hold_ms = account_totals.hold_ms + excluded.hold_ms, \
         first_closed_at = COALESCE(account_totals.first_closed_at, excluded.first_closed_at), \
         last_closed_at = excluded.last_closed_at, \
         updated_at = excluded.updated_at"
    )
});

const DAY_COLUMNS: &str = "day, symbol, strategy, trades, winners, losers, net_pnl, size_usd";

#[derive(FromRow)]
struct DayRow {
    day: i64,
    symbol: String,
    strategy: String,
    trades: i64,
    winners: i64,
    losers: i64,
    net_pnl: StoredDecimal,
    size_usd: StoredDecimal,
}

impl DayRow {
    fn into_day(self) -> sqlx::Result<DayTotals> {
        Ok(DayTotals {
            day: self.day,
            symbol: self.symbol,
            strategy: self.strategy,
            tally: Tally {
                trades: self.trades.max(0) as u64,
                winners: self.winners.max(0) as u64,
                losers: self.losers.max(0) as u64,
                net_pnl: self.net_pnl.0,
                size_usd: self.size_usd.0,
            },
        })
    }
}

/// The account's per-day totals from UTC day `from_day` on, by day, symbol and strategy.
pub async fn days_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    from_day: i64,
) -> sqlx::Result<Vec<DayTotals>> {
    let rows: Vec<DayRow> = on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {DAY_COLUMNS} FROM account_day_totals WHERE user_id = $1 AND day >= $2 \
         ORDER BY day, symbol, strategy"
    ))
    .bind(user_id)
    .bind(from_day)
    .fetch_all(c)
    .await)?;
    rows.into_iter().map(DayRow::into_day).collect()
}

const DAY_MERGE: &str = "DO UPDATE SET trades = account_day_totals.trades + excluded.trades, \
     winners = account_day_totals.winners + excluded.winners, \
     losers = account_day_totals.losers + excluded.losers, \
     net_pnl = account_day_totals.net_pnl + excluded.net_pnl, \
     size_usd = account_day_totals.size_usd + excluded.size_usd";

fn put_day(statements: &mut Statements, rows: &[(&str, DayTotals)], on_conflict: &'static str) {
    statement!(statements, |query| {
        query.push(format!(
            "INSERT INTO account_day_totals (user_id, {DAY_COLUMNS}) "
        ));
        query.push_values(rows, |mut row, (user_id, d)| {
            row.push_bind(user_id.to_string())
                .push_bind(d.day)
                .push_bind(d.symbol.clone())
                .push_bind(d.strategy.clone())
                .push_bind(d.tally.trades as i64)
                .push_bind(d.tally.winners as i64)
                .push_bind(d.tally.losers as i64)
                .push_bind(StoredDecimal(d.tally.net_pnl))
                .push_bind(StoredDecimal(d.tally.size_usd));
        });
        query.push(format!(
            " ON CONFLICT (user_id, day, symbol, strategy) {on_conflict}"
        ));
    })
}

/// Computes the totals of trades booked before these tables existed (or before a migration that
/// cleared them), once: the first start after the upgrade reads each account's history a last
/// time, in close order, and writes its rows in one transaction.
pub async fn backfill(db: &Db) -> sqlx::Result<()> {
    if flags::flag(&db.pool, BACKFILLED_FLAG).await?.is_some() {
        return Ok(());
    }
    let users: Vec<(String,)> = on!(&db.pool, |c| sqlx::query_as(schema_checked!(
        "SELECT DISTINCT user_id FROM trades \
         WHERE user_id NOT IN (SELECT user_id FROM account_totals)"
    ))
    .fetch_all(c)
    .await)?;
    for (user_id,) in users {
        let mut tx = db.pool.begin().await?;
        let mut totals = AccountTotals::default();
        let mut days: BTreeMap<(i64, String, String), Tally> = BTreeMap::new();
        for trade in &trades::trades_since(&mut *tx, &user_id, 0).await? {
            totals.add(trade);
            let key = (
                utc_day(trade.closed_at_ms),
                trade.symbol.clone(),
                trade.strategy.clone(),
            );
            days.entry(key).or_default().add(trade);
        }
        // Written only where no row exists: another process migrating the same database at
        // the same moment computes the same rows.
        Statements::once(&mut tx, |statements| {
            put(statements, &[(&user_id, totals)], "DO NOTHING")
        })
        .await?;
        let days: Vec<(&str, DayTotals)> = days
            .into_iter()
            .map(|((day, symbol, strategy), tally)| {
                let day = DayTotals {
                    day,
                    symbol,
                    strategy,
                    tally,
                };
                (user_id.as_str(), day)
            })
            .collect();
        for chunk in days.chunks(super::MAX_ROWS) {
            Statements::once(&mut tx, |statements| {
                put_day(statements, chunk, "DO NOTHING")
            })
            .await?;
        }
        tx.commit().await?;
    }
    flags::set_flag(&db.pool, BACKFILLED_FLAG, "1", "migration", now_ms()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::totals::sample_trade;
    use crate::store::testing::{sqlite, user};

    fn trade(id: usize, net: &str, symbol: &str, closed_at: i64) -> CompletedTrade {
        let mut trade = sample_trade(net, closed_at);
        trade.id = format!("t{id}");
        trade.position_id = format!("p{id}");
        trade.symbol = symbol.into();
        trade.opened_at_ms = closed_at - 1_000;
        trade
    }

    /// The upsert that merges a trade into its rows gives, after every trade, what adding the
    /// trades one by one in Rust gives: runs that grow, turn, end on a flat trade and start
    /// again; best and worst; the day rows per symbol and strategy.
    #[tokio::test]
    async fn merged_rows_equal_the_trades_added_up() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        let nets = [
            "1",
            "2.5",
            "0",
            "-1",
            "-2",
            "-3.75",
            "5",
            "0",
            "0",
            "1",
            "-0.00000001",
            "7",
        ];
        let mut expected = AccountTotals::default();
        let mut days: BTreeMap<(i64, String, String), Tally> = BTreeMap::new();
        for (i, net) in nets.iter().enumerate() {
            // Two trades a day of one symbol, of one strategy or of two: day rows are merged as
            // well as created.
            let symbol = ["BTC-USD", "ETH-USD"][i / 4 % 2];
            let mut trade = trade(
                i,
                net,
                symbol,
                (i as i64 / 2) * 86_400_000 + 1_000 + i as i64,
            );
            trade.strategy = if i % 3 == 0 { "a" } else { "b" }.into();
            let mut tx = db.begin().await.unwrap();
            trades::insert(&mut tx, &[("u1", &trade)]).await.unwrap();
            tx.commit().await.unwrap();
            expected.add(&trade);
            let key = (
                utc_day(trade.closed_at_ms),
                symbol.to_string(),
                trade.strategy.clone(),
            );
            days.entry(key).or_default().add(&trade);
            assert_eq!(get(&db.pool, "u1").await.unwrap(), expected, "after {net}");
        }
        assert_eq!(
            (expected.longest_win_streak, expected.longest_loss_streak),
            (2, 3)
        );
        let stored: Vec<((i64, String, String), Tally)> = days_since(&db.pool, "u1", 0)
            .await
            .unwrap()
            .into_iter()
            .map(|d| ((d.day, d.symbol, d.strategy), d.tally))
            .collect();
        assert_eq!(stored, days.into_iter().collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn trades_of_several_accounts_booked_at_once_add_up_in_order() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        user(&db.pool, "u2").await;
        let nets = ["1", "-2", "-3", "4", "5", "6", "-7", "0", "8"];
        let booked: Vec<(&str, CompletedTrade)> = nets
            .iter()
            .enumerate()
            .map(|(i, net)| {
                let owner = ["u1", "u2"][i % 2];
                // Every trade of an account on one day, symbol and strategy: one day row each.
                (owner, trade(i, net, "BTC-USD", 1_000 + i as i64))
            })
            .collect();
        let batch: Vec<(&str, &CompletedTrade)> = booked.iter().map(|(u, t)| (*u, t)).collect();
        let mut tx = db.begin().await.unwrap();
        trades::insert(&mut tx, &batch).await.unwrap();
        tx.commit().await.unwrap();
        for owner in ["u1", "u2"] {
            let mut expected = AccountTotals::default();
            let mut tally = Tally::default();
            for (_, trade) in booked.iter().filter(|(u, _)| *u == owner) {
                expected.add(trade);
                tally.add(trade);
            }
            assert_eq!(get(&db.pool, owner).await.unwrap(), expected, "{owner}");
            let days = days_since(&db.pool, owner, 0).await.unwrap();
            assert_eq!(days.len(), 1);
            assert_eq!(days[0].tally, tally, "{owner}");
        }
    }

    #[test]
    fn rounds_touch_each_row_once_and_keep_its_order() {
        let rows = [("a", 1), ("b", 2), ("a", 3), ("a", 4), ("c", 5), ("b", 6)];
        let split = rounds(rows.iter().map(|(key, n)| (*key, *key, *n)));
        assert_eq!(
            split,
            vec![
                vec![("a", 1), ("b", 2), ("c", 5)],
                vec![("a", 3), ("b", 6)],
                vec![("a", 4)],
            ]
        );
    }
}
