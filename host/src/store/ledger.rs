//! The ledger: one row per fill booked (and per dust close), what it did to a position and to
//! the account's cash. Decimals are stored as [`StoredDecimal`]s.

use super::Executes;
use super::statements::{Statements, statement};
use sqlx::{Database, FromRow};

use rust_decimal::Decimal;

use super::{Db, Filter, StoredDecimal, limit_clause};
use crate::engine::accounting::{LedgerAction, LedgerEntry, OrderSide};

/// A ledger row to write: an entry of a user's books, from an order (and the fill it books;
/// none for dust left at the venue).
pub struct NewRow<'a> {
    pub user_id: &'a str,
    pub order_id: &'a str,
    pub fill_id: Option<&'a str>,
    pub entry: &'a LedgerEntry,
}

/// Writes ledger rows, in one statement.
pub async fn insert<'e>(exec: impl Executes<'e>, rows: &[NewRow<'_>]) -> sqlx::Result<()> {
    Statements::once(exec, |statements| push_insert(statements, rows))
        .await
        .map(drop)
}

/// [`insert`] as one of `statements`.
pub fn push_insert(statements: &mut Statements, rows: &[NewRow<'_>]) {
    if rows.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(
            "INSERT INTO ledger (id, user_id, order_id, position_id, broker, symbol, side, action, quantity, price, \
             notional, fee, realized_pnl, cash_after, created_at, fill_id, entry_fee) ",
        );
        query.push_values(rows, |mut row, r| {
            let e = r.entry;
            row.push_bind(e.id.clone())
                .push_bind(r.user_id.to_string())
                .push_bind(r.order_id.to_string())
                .push_bind(e.position_id.clone())
                .push_bind(e.broker.clone())
                .push_bind(e.symbol.clone())
                .push_bind(e.side.as_str())
                .push_bind(e.action.as_str())
                .push_bind(StoredDecimal(e.quantity))
                .push_bind(StoredDecimal(e.price))
                .push_bind(StoredDecimal(e.notional))
                .push_bind(StoredDecimal(e.fee))
                .push_bind(StoredDecimal(e.realized_pnl))
                .push_bind(StoredDecimal(e.cash_after))
                .push_bind(e.at_ms)
                .push_bind(r.fill_id.map(str::to_string))
                .push_bind(StoredDecimal(e.entry_fee));
        });
    })
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
    let sum: StoredDecimal = on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COALESCE(SUM(notional), 0) FROM ledger WHERE created_at >= $1"
    ))
    .bind(since)
    .fetch_one(c)
    .await)?;
    Ok(sum.0)
}
