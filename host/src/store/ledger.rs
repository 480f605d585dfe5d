//! The ledger: one row per fill booked (and per dust close), what it did to a position and to
//! the account's cash. Decimals are TEXT in the table and `Decimal` everywhere else.

use super::Executes;
use sqlx::{Database, FromRow};

use super::{Db, Filter, dec, limit_clause, opt_dec};
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
        .bind(e.quantity.to_string())
        .bind(e.price.to_string())
        .bind(e.notional.to_string())
        .bind(e.fee.to_string())
        .bind(e.realized_pnl.to_string())
        .bind(e.cash_after.to_string())
        .bind(e.at_ms)
        .bind(fill_id)
        .bind(e.entry_fee.to_string())
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
    rows.into_iter().map(LedgerRow::into_entry).collect()
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
    pub quantity: String,
    pub price: String,
    pub notional: String,
    pub fee: String,
    pub realized_pnl: String,
    pub cash_after: String,
    pub created_at: i64,
    pub entry_fee: Option<String>,
}

const LEDGER_COLUMNS: &str = "id, user_id, order_id, position_id, broker, symbol, side, action, quantity, price, \
                              notional, fee, realized_pnl, cash_after, created_at, entry_fee";

impl LedgerRow {
    fn into_entry(self) -> sqlx::Result<LedgerEntry> {
        Ok(LedgerEntry {
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
            quantity: dec(&self.quantity)?,
            price: dec(&self.price)?,
            notional: dec(&self.notional)?,
            fee: dec(&self.fee)?,
            realized_pnl: dec(&self.realized_pnl)?,
            entry_fee: opt_dec(&self.entry_fee)?.unwrap_or_default(),
            cash_after: dec(&self.cash_after)?,
            at_ms: self.created_at,
            id: self.id,
            position_id: self.position_id,
            broker: self.broker,
            symbol: self.symbol,
        })
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
