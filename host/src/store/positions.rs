//! Positions: what each account holds, opened and changed by fills, with the close the engine is
//! working on. Decimals are stored as [`StoredDecimal`]s.

use super::Executes;
use super::statements::{Statements, statement};
use sqlx::{Database, FromRow};

use super::{Db, Filter, Owned, StoredDecimal};
use crate::engine::accounting::{Closing, Position, Side};

#[derive(FromRow)]
struct PositionRow {
    id: String,
    broker: String,
    strategy: Option<String>,
    symbol: String,
    side: String,
    quantity: StoredDecimal,
    entry_price: StoredDecimal,
    cost: Option<StoredDecimal>,
    entry_fees: StoredDecimal,
    stop_loss: Option<StoredDecimal>,
    take_profit: Option<StoredDecimal>,
    trail_pct: Option<StoredDecimal>,
    extreme_price: StoredDecimal,
    current_price: StoredDecimal,
    opened_at: i64,
    close_reason: Option<String>,
    close_attempts: i64,
    next_close_at: Option<i64>,
    close_error: Option<String>,
}

impl PositionRow {
    fn into_position(self) -> sqlx::Result<Position> {
        let quantity = self.quantity.0;
        let entry_price = self.entry_price.0;
        Ok(Position {
            side: Side::parse(&self.side).ok_or_else(|| {
                sqlx::Error::Decode(format!("position side {:?}", self.side).into())
            })?,
            quantity,
            entry_price,
            // Positions opened before costs were kept were opened in one fill.
            cost: match self.cost {
                Some(cost) => cost.0,
                None => (entry_price * quantity).round_dp(crate::engine::accounting::SCALE),
            },
            entry_fees: self.entry_fees.0,
            stop_loss: StoredDecimal::opt(self.stop_loss),
            take_profit: StoredDecimal::opt(self.take_profit),
            trail_pct: StoredDecimal::opt(self.trail_pct),
            extreme_price: self.extreme_price.0,
            current_price: self.current_price.0,
            opened_at_ms: self.opened_at,
            closing: self.close_reason.map(|reason| Closing {
                reason,
                attempts: self.close_attempts.max(0) as u32,
                next_attempt_at: self.next_close_at.unwrap_or(0),
                last_error: self.close_error,
            }),
            id: self.id,
            broker: self.broker,
            strategy: self.strategy.unwrap_or_default(),
            symbol: self.symbol,
        })
    }
}

#[derive(FromRow)]
struct OwnedPositionRow {
    user_id: String,
    #[sqlx(flatten)]
    position: PositionRow,
}

const POSITION_COLUMNS: &str = "id, broker, strategy, symbol, side, quantity, entry_price, cost, entry_fees, stop_loss, take_profit, \
                                trail_pct, extreme_price, current_price, opened_at, close_reason, close_attempts, \
                                next_close_at, close_error";

pub async fn open_positions<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
) -> sqlx::Result<Vec<Position>> {
    let rows: Vec<PositionRow> = on!(exec, |c| {
        sqlx::query_as(sql!(
            "SELECT {POSITION_COLUMNS} FROM positions WHERE user_id = $1 AND status = 'open' ORDER BY opened_at, id"
        ))
        .bind(user_id)
        .fetch_all(c)
        .await
    })?;
    rows.into_iter().map(PositionRow::into_position).collect()
}

/// Users with an open position.
pub async fn users_with_open_positions<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT DISTINCT user_id FROM positions WHERE status = 'open'"
    ))
    .fetch_all(c)
    .await)
}

/// How many positions each user holds open (users with none left out).
pub async fn open_counts_by_user<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<(String, i64)>> {
    on!(exec, |c| sqlx::query_as(schema_checked!(
        "SELECT user_id, COUNT(*) FROM positions WHERE status = 'open' GROUP BY user_id"
    ))
    .fetch_all(c)
    .await)
}

/// Open positions with their owners, newest first (the ledger routes' view across users).
pub async fn open_owned(db: &Db, filter: &Filter) -> sqlx::Result<Vec<Owned<Position>>> {
    let rows: Vec<OwnedPositionRow> = on!(db, |c, DB| {
        let mut args = <DB as Database>::Arguments::default();
        let conditions = filter.where_clause::<DB>("opened_at", &["status = 'open'"], &mut args);
        sqlx::query_as_with(
            sql!("SELECT user_id, {POSITION_COLUMNS} FROM positions {conditions} ORDER BY opened_at DESC, id DESC"),
            args,
        )
        .fetch_all(c)
        .await
    })?;
    rows.into_iter()
        .map(|owned| {
            Ok(Owned {
                user_id: owned.user_id,
                row: owned.position.into_position()?,
            })
        })
        .collect()
}

/// Open positions that `filter` takes (bounds on when they were opened).
pub async fn count_open<'e>(exec: impl Executes<'e>, filter: &Filter) -> sqlx::Result<i64> {
    on!(exec, |c, DB| {
        let mut args = <DB as Database>::Arguments::default();
        let conditions = filter.where_clause::<DB>("opened_at", &["status = 'open'"], &mut args);
        sqlx::query_scalar_with(sql!("SELECT COUNT(*) FROM positions {conditions}"), args)
            .fetch_one(c)
            .await
    })
}

/// The most positions the user held open at once at any time from `since` on: a running count
/// over the opens and closes of the positions that were open at some point of that window (a
/// close at the same millisecond as an open counts first).
pub async fn peak_open<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "WITH events (at, delta) AS ( \
             SELECT opened_at, 1 FROM positions \
             WHERE user_id = $1 AND (closed_at IS NULL OR closed_at >= $2) \
             UNION ALL SELECT closed_at, -1 FROM positions \
             WHERE user_id = $1 AND closed_at IS NOT NULL AND closed_at >= $2 \
             UNION ALL SELECT CAST($2 AS BIGINT), 0 \
         ), running AS ( \
             SELECT at, SUM(delta) OVER (ORDER BY at, delta ROWS UNBOUNDED PRECEDING) AS open_now \
             FROM events \
         ) \
         SELECT CAST(COALESCE(MAX(open_now), 0) AS BIGINT) FROM running WHERE at >= $2"
    ))
    .bind(user_id)
    .bind(since)
    .fetch_one(c)
    .await)
}

/// A position's pending-close columns (empty when no close is pending).
struct CloseColumns {
    reason: Option<String>,
    attempts: i64,
    next_at: Option<i64>,
    error: Option<String>,
}

impl CloseColumns {
    fn of(closing: Option<&Closing>) -> Self {
        CloseColumns {
            reason: closing.map(|c| c.reason.clone()),
            attempts: closing.map_or(0, |c| i64::from(c.attempts)),
            next_at: closing.map(|c| c.next_attempt_at),
            error: closing.and_then(|c| c.last_error.clone()),
        }
    }
}

/// Writes positions as the books have them after a booking, each with its owner: a new one is
/// inserted, a known one gets its quantity, cost, fees, marks, status and pending close (a zero
/// quantity closes it; its stops and strategy stay as written). One statement for all of them;
/// ids must be distinct.
pub async fn write<'e>(
    exec: impl Executes<'e>,
    positions: &[(&str, &Position)],
    now: i64,
) -> sqlx::Result<()> {
    Statements::once(exec, |statements| push_write(statements, positions, now))
        .await
        .map(drop)
}

/// [`write`] as one of `statements`.
pub fn push_write(statements: &mut Statements, positions: &[(&str, &Position)], now: i64) {
    if positions.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(format!(
            "INSERT INTO positions (user_id, {POSITION_COLUMNS}, status, closed_at, updated_at) "
        ));
        query.push_values(positions, |mut row, (user_id, p)| {
            let closed = p.quantity.is_zero();
            let close = CloseColumns::of(p.closing.as_ref().filter(|_| !closed));
            row.push_bind(*user_id)
                .push_bind(p.id.clone())
                .push_bind(p.broker.clone())
                .push_bind(p.strategy.clone())
                .push_bind(p.symbol.clone())
                .push_bind(p.side.as_str())
                .push_bind(StoredDecimal(p.quantity))
                .push_bind(StoredDecimal(p.entry_price))
                .push_bind(StoredDecimal(p.cost))
                .push_bind(StoredDecimal(p.entry_fees))
                .push_bind(p.stop_loss.map(StoredDecimal))
                .push_bind(p.take_profit.map(StoredDecimal))
                .push_bind(p.trail_pct.map(StoredDecimal))
                .push_bind(StoredDecimal(p.extreme_price))
                .push_bind(StoredDecimal(p.current_price))
                .push_bind(p.opened_at_ms)
                .push_bind(close.reason)
                .push_bind(close.attempts)
                .push_bind(close.next_at)
                .push_bind(close.error)
                .push_bind(if closed { "closed" } else { "open" })
                .push_bind(closed.then_some(now))
                .push_bind(now);
        });
        query.push(
            " ON CONFLICT (id) DO UPDATE SET quantity = excluded.quantity, entry_price = excluded.entry_price, \
             cost = excluded.cost, entry_fees = excluded.entry_fees, extreme_price = excluded.extreme_price, \
             current_price = excluded.current_price, status = excluded.status, closed_at = excluded.closed_at, \
             close_reason = excluded.close_reason, close_attempts = excluded.close_attempts, \
             next_close_at = excluded.next_close_at, close_error = excluded.close_error, \
             updated_at = excluded.updated_at",
        );
    })
}

/// Writes only positions' pending closes (the rest of each is unchanged), each position once.
/// A close written with its order's attempt (the order's id beside it) is written only if that
/// order was: an order whose client id stood already counts no attempt.
pub fn update_closing(
    statements: &mut Statements,
    positions: &[(&Position, Option<&str>)],
    now: i64,
) {
    if positions.is_empty() {
        return;
    }
    statement!(statements, |query| {
        // VALUES columns are column1, column2, … on both backends.
        query.push(
            "UPDATE positions SET close_reason = v.column2, close_attempts = v.column3, \
             next_close_at = v.column4, close_error = v.column5, updated_at = v.column6 FROM (",
        );
        query.push_values(positions, |mut row, (p, order_id)| {
            let close = CloseColumns::of(p.closing.as_ref());
            row.push_bind(p.id.clone())
                .push_bind(close.reason)
                .push_bind(close.attempts)
                .push_bind(close.next_at)
                .push_bind(close.error)
                .push_bind(now)
                .push_bind(order_id.map(str::to_string));
        });
        query.push(
            ") AS v WHERE positions.id = v.column1 AND positions.status = 'open' \
             AND (v.column7 IS NULL OR EXISTS (SELECT 1 FROM orders WHERE orders.id = v.column7))",
        );
    })
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;

    use super::*;
    use crate::store::testing::{sqlite, user};

    fn position(id: &str, symbol: &str, opened_at_ms: i64) -> Position {
        Position {
            id: id.into(),
            broker: "paper".into(),
            strategy: "ema-cross".into(),
            symbol: symbol.into(),
            side: Side::Long,
            quantity: Decimal::ONE,
            entry_price: Decimal::TEN,
            cost: Decimal::TEN,
            entry_fees: Decimal::ZERO,
            stop_loss: None,
            take_profit: None,
            trail_pct: None,
            extreme_price: Decimal::TEN,
            current_price: Decimal::TEN,
            opened_at_ms,
            closing: None,
        }
    }

    #[tokio::test]
    async fn the_peak_counts_what_was_open_together_within_the_window() {
        let (db, _dir) = sqlite().await;
        user(&db.pool, "u1").await;
        user(&db.pool, "u2").await;
        // (id, opened, closed): a and b overlap before the window; b, c and d overlap inside it
        // (c closes at the millisecond d opens, so those two never count together); e is open.
        let spans = [
            ("a", 10, Some(40)),
            ("b", 20, Some(120)),
            ("c", 110, Some(130)),
            ("d", 130, Some(150)),
            ("e", 140, None),
        ];
        for (n, (id, opened, closed)) in spans.into_iter().enumerate() {
            let mut p = position(id, &format!("S{n}-USD"), opened);
            write(&db.pool, &[("u1", &p)], opened).await.unwrap();
            if let Some(closed) = closed {
                p.quantity = Decimal::ZERO;
                write(&db.pool, &[("u1", &p)], closed).await.unwrap();
            }
        }
        // Another user's positions never count.
        for n in 0..5 {
            let p = position(&format!("other-{n}"), &format!("O{n}-USD"), 115);
            write(&db.pool, &[("u2", &p)], 115).await.unwrap();
        }
        assert_eq!(peak_open(&db.pool, "u1", 0).await.unwrap(), 2);
        // From 100: b is open at the start, c joins (2), d replaces c, e joins (2).
        assert_eq!(peak_open(&db.pool, "u1", 100).await.unwrap(), 2);
        // From 145 only d and e: both open at the start of the window.
        assert_eq!(peak_open(&db.pool, "u1", 145).await.unwrap(), 2);
        assert_eq!(peak_open(&db.pool, "u1", 200).await.unwrap(), 1);
        assert_eq!(peak_open(&db.pool, "nobody", 0).await.unwrap(), 0);
        assert_eq!(peak_open(&db.pool, "u2", 0).await.unwrap(), 5);
    }
}
