//! Read-only views of the engine's books for the ledger route set (companion D): open positions,
//! completed trades and ledger rows, for one user or (admins) all users, newest first.

use sqlx::any::AnyArguments;
use sqlx::{Any, Arguments, FromRow};

use super::Db;

/// Whose rows and which symbol; `None` means no filter.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub user_id: Option<String>,
    pub symbol: Option<String>,
}

impl Scope {
    /// ` AND user_id = $n AND symbol = $m` with the values bound.
    fn conditions(&self, args: &mut AnyArguments, next: &mut usize) -> String {
        let mut sql = String::new();
        for (column, value) in [("user_id", &self.user_id), ("symbol", &self.symbol)] {
            if let Some(value) = value {
                sql.push_str(&format!(" AND {column} = ${next}"));
                *next += 1;
                args.add(value.clone()).expect("a text argument encodes");
            }
        }
        sql
    }
}

#[derive(Debug, FromRow)]
pub struct OpenPositionRow {
    pub id: String,
    pub user_id: String,
    pub symbol: String,
    pub side: String,
    pub quantity: String,
    pub entry_price: String,
    pub entry_fees: String,
    pub stop_loss: Option<String>,
    pub take_profit: Option<String>,
    pub opened_at: i64,
}

pub async fn open_positions(db: &Db, scope: &Scope) -> sqlx::Result<Vec<OpenPositionRow>> {
    let mut args = AnyArguments::default();
    let mut next = 1;
    let conditions = scope.conditions(&mut args, &mut next);
    let sql = format!(
        "SELECT id, user_id, symbol, side, quantity, entry_price, entry_fees, stop_loss, take_profit, opened_at \
         FROM positions WHERE status = 'open'{conditions} ORDER BY opened_at DESC, id DESC"
    );
    sqlx::query_as_with::<Any, OpenPositionRow, _>(sqlx::AssertSqlSafe(sql), args)
        .fetch_all(&db.pool)
        .await
}

#[derive(Debug, FromRow)]
pub struct TradeRow {
    pub id: String,
    pub user_id: String,
    pub position_id: String,
    pub symbol: String,
    pub side: String,
    pub quantity: String,
    pub entry_price: String,
    pub exit_price: String,
    pub size_usd: String,
    pub gross_pnl: String,
    pub fees: String,
    pub entry_fee: Option<String>,
    pub net_pnl: String,
    pub exit_reason: String,
    pub opened_at: i64,
    pub closed_at: i64,
}

/// Completed trades, latest exit first; `limit` None means all.
pub async fn trades(
    db: &Db,
    scope: &Scope,
    limit: Option<i64>,
    offset: i64,
) -> sqlx::Result<Vec<TradeRow>> {
    let mut args = AnyArguments::default();
    let mut next = 1;
    let conditions = scope.conditions(&mut args, &mut next);
    let mut sql = format!(
        "SELECT id, user_id, position_id, symbol, side, quantity, entry_price, exit_price, size_usd, gross_pnl, \
         fees, entry_fee, net_pnl, exit_reason, opened_at, closed_at \
         FROM trades WHERE 1 = 1{conditions} ORDER BY closed_at DESC, id DESC"
    );
    if let Some(limit) = limit {
        sql.push_str(&format!(" LIMIT ${next} OFFSET ${}", next + 1));
        args.add(limit).expect("an integer argument encodes");
        args.add(offset).expect("an integer argument encodes");
    }
    sqlx::query_as_with::<Any, TradeRow, _>(sqlx::AssertSqlSafe(sql), args)
        .fetch_all(&db.pool)
        .await
}

#[derive(Debug, FromRow)]
pub struct LedgerRow {
    pub id: String,
    pub user_id: String,
    pub order_id: String,
    pub position_id: String,
    pub symbol: String,
    pub side: String,
    pub action: String,
    pub quantity: String,
    pub price: String,
    pub notional: String,
    pub fee: String,
    pub created_at: i64,
}

/// Ledger rows, newest first; `limit` None means all.
pub async fn ledger(db: &Db, scope: &Scope, limit: Option<i64>) -> sqlx::Result<Vec<LedgerRow>> {
    let mut args = AnyArguments::default();
    let mut next = 1;
    let conditions = scope.conditions(&mut args, &mut next);
    let mut sql = format!(
        "SELECT id, user_id, order_id, position_id, symbol, side, action, quantity, price, notional, fee, created_at \
         FROM ledger WHERE 1 = 1{conditions} ORDER BY created_at DESC, id DESC"
    );
    if let Some(limit) = limit {
        sql.push_str(&format!(" LIMIT ${next}"));
        args.add(limit).expect("an integer argument encodes");
    }
    sqlx::query_as_with::<Any, LedgerRow, _>(sqlx::AssertSqlSafe(sql), args)
        .fetch_all(&db.pool)
        .await
}

pub async fn count_open_positions(db: &Db, user_id: Option<&str>) -> sqlx::Result<i64> {
    let scope = Scope {
        user_id: user_id.map(str::to_string),
        symbol: None,
    };
    let mut args = AnyArguments::default();
    let mut next = 1;
    let conditions = scope.conditions(&mut args, &mut next);
    let sql = format!("SELECT COUNT(*) FROM positions WHERE status = 'open'{conditions}");
    sqlx::query_scalar_with::<Any, i64, _>(sqlx::AssertSqlSafe(sql), args)
        .fetch_one(&db.pool)
        .await
}

/// The figures of a completed trade that statistics need, without the rest of its row: reading
/// every column of every trade costs far more than the arithmetic.
#[derive(Debug, FromRow)]
pub struct TradeFigureRow {
    pub net_pnl: String,
    pub gross_pnl: String,
    pub fees: String,
    pub size_usd: String,
    pub opened_at: i64,
    pub closed_at: i64,
    pub strategy: Option<String>,
}

/// Figures of the owner's trades closed at or after `since`, in close order.
pub async fn trade_figures(
    db: &Db,
    user_id: Option<&str>,
    since: i64,
) -> sqlx::Result<Vec<TradeFigureRow>> {
    let scope = Scope {
        user_id: user_id.map(str::to_string),
        symbol: None,
    };
    let mut args = AnyArguments::default();
    args.add(since).expect("an integer argument encodes");
    let mut next = 2;
    let conditions = scope.conditions(&mut args, &mut next);
    let sql = format!(
        "SELECT net_pnl, gross_pnl, fees, size_usd, opened_at, closed_at, strategy FROM trades \
         WHERE closed_at >= $1{conditions} ORDER BY closed_at, id"
    );
    sqlx::query_as_with::<Any, TradeFigureRow, _>(sqlx::AssertSqlSafe(sql), args)
        .fetch_all(&db.pool)
        .await
}
