//! The ledger: one row per fill booked (and per dust close), what it did to a position and to
//! the account's cash. Decimals are stored as [`StoredDecimal`]s.

use super::Executes;
use sqlx::{Database, FromRow};

use rust_decimal::Decimal;

use super::{Db, Filter, StoredDecimal, limit_clause};
use crate::engine::accounting::{LedgerAction, LedgerEntry, OrderSide};

pub async fn insert_ledger<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    order_id: &str,
    // The fill the row books; none for dust left at the venue.
    fill_id: Option<&str>,
    e: &LedgerEntry,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            "INSERT INTO ledger (id, user_id, order_id, position_id, broker, symbol, side, action, quantity, price, \
             notional, fee, realized_pnl, cash_after, created_at, fill_id, entry_fee) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
        )
        .bind(&e.id)
        .bind(user_id)
        .bind(order_id)
        .bind(&e.position_id)
        .bind(&e.broker)
        .bind(&e.symbol)
        .bind(e.side.as_str())
        .bind(e.action.as_str())
        .bind(StoredDecimal(e.quantity))
        .bind(StoredDecimal(e.price))
        .bind(StoredDecimal(e.notional))
        .bind(StoredDecimal(e.fee))
        .bind(StoredDecimal(e.realized_pnl))
        .bind(StoredDecimal(e.cash_after))
        .bind(e.at_ms)
        .bind(fill_id)
        .bind(StoredDecimal(e.entry_fee))
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// The closing rows an order booked (one per fill), oldest first: its completed trade's parts.
pub async fn closes_of_order<'e>(
    exec: impl Executes<'e>,
    order_id: &str,
) -> sqlx::Result<Vec<LedgerEntry>> {
    let rows: Vec<LedgerRow> = on!(exec, |c| {
        sqlx::query_as(sql!(
            "SELECT {LEDGER_COLUMNS} FROM ledger WHERE order_id = $1 AND action = 'CLOSE' ORDER BY created_at, id"
        ))
        .bind(order_id)
        .fetch_all(c)
        .await
    })?;
    Ok(rows.into_iter().map(LedgerRow::into_entry).collect())
}

#[derive(Debug, Clone, FromRow)]
pub struct LedgerRow {
    pub id: String,
    pub user_id: String,
    pub order_id: String,
    pub position_id: String,
    pub broker: String,
    pub symbol: String,
    pub side: String,
    pub action: String,
    #[sqlx(try_from = "StoredDecimal")]
    pub quantity: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub price: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub notional: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub fee: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub realized_pnl: Decimal,
    #[sqlx(try_from = "StoredDecimal")]
    pub cash_after: Decimal,
    pub created_at: i64,
    /// The entry fee share a close took (0 on opens, and on rows booked before it was kept).
    #[sqlx(try_from = "StoredDecimal")]
    pub entry_fee: Decimal,
}

const LEDGER_COLUMNS: &str = "id, user_id, order_id, position_id, broker, symbol, side, action, quantity, price, \
                              notional, fee, realized_pnl, cash_after, created_at, COALESCE(entry_fee, 0) AS entry_fee";

impl LedgerRow {
    fn into_entry(self) -> LedgerEntry {
        LedgerEntry {
            side: if self.side == "BUY" {
                OrderSide::Buy
            } else {
                OrderSide::Sell
            },
            action: if self.action == "OPEN" {
                LedgerAction::Open
            } else {
                LedgerAction::Close
            },
            quantity: self.quantity,
            price: self.price,
            notional: self.notional,
            fee: self.fee,
            realized_pnl: self.realized_pnl,
            entry_fee: self.entry_fee,
            cash_after: self.cash_after,
            at_ms: self.created_at,
            id: self.id,
            position_id: self.position_id,
            broker: self.broker,
            symbol: self.symbol,
        }
    }
}

/// Ledger rows, newest first; `limit` None means all.
pub async fn page(
    db: &Db,
    filter: &Filter,
    limit: Option<i64>,
    offset: i64,
) -> sqlx::Result<Vec<LedgerRow>> {
    on!(db, |c, DB| {
        let mut args = <DB as Database>::Arguments::default();
        let conditions = filter.where_clause::<DB>("created_at", &[], &mut args);
        let limit = limit_clause::<DB>(limit, offset, &mut args);
        sqlx::query_as_with(
            sql!("SELECT {LEDGER_COLUMNS} FROM ledger {conditions} ORDER BY created_at DESC, id DESC{limit}"),
            args,
        )
        .fetch_all(c)
        .await
    })
}

/// How many ledger rows the filter takes.
pub async fn count(db: &Db, filter: &Filter) -> sqlx::Result<i64> {
    on!(db, |c, DB| {
        let mut args = <DB as Database>::Arguments::default();
        let conditions = filter.where_clause::<DB>("created_at", &[], &mut args);
        sqlx::query_scalar_with(sql!("SELECT COUNT(*) FROM ledger {conditions}"), args)
            .fetch_one(c)
            .await
    })
}

/// The summed notional of every fill booked at or after `since`, across users.
pub async fn notional_since<'e>(exec: impl Executes<'e>, since: i64) -> sqlx::Result<Decimal> {
    let sum: StoredDecimal = on!(exec, |c| sqlx::query_scalar(
        "SELECT COALESCE(SUM(notional), 0) FROM ledger WHERE created_at >= $1"
    )
    .bind(since)
    .fetch_one(c)
    .await)?;
    Ok(sum.0)
}
