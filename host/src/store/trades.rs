//! Completed trades: one row per closed position (or each close of it), booked with the fill that
//! closed it and added to the account's running totals in the same transaction.

use sqlx::{Database, FromRow};

use super::statements::{Statements, statement};
use super::totals::SumsRow;
use super::{Conn, Db, Executes, Filter, Owned, StoredDecimal, limit_clause};
use crate::engine::accounting::{CompletedTrade, Side};
use crate::engine::totals::Sums;

/// Books completed trades, each with its user, and adds them to their accounts' running totals,
/// in the caller's transaction: one statement for the trades, and the totals in as few statements as
/// the rows they touch allow ([`super::totals::add_trades`]).
pub async fn insert(conn: &mut Conn<'_>, trades: &[(&str, &CompletedTrade)]) -> sqlx::Result<()> {
    Statements::once(conn, |statements| push_insert(statements, trades))
        .await
        .map(drop)
}

/// [`insert`] as statements of `statements`.
pub fn push_insert(statements: &mut Statements, trades: &[(&str, &CompletedTrade)]) {
    if trades.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(
            "INSERT INTO trades (id, user_id, position_id, broker, symbol, side, quantity, entry_price, \
                 exit_price, size_usd, gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, \
                 duration_minutes, entry_fee, strategy) ",
        );
        query.push_values(trades, |mut row, (user_id, t)| {
            row.push_bind(t.id.clone())
                .push_bind(user_id.to_string())
                .push_bind(t.position_id.clone())
                .push_bind(t.broker.clone())
                .push_bind(t.symbol.clone())
                .push_bind(t.side.as_str())
                .push_bind(StoredDecimal(t.quantity))
                .push_bind(StoredDecimal(t.entry_price))
                .push_bind(StoredDecimal(t.exit_price))
                .push_bind(StoredDecimal(t.size_usd))
                .push_bind(StoredDecimal(t.gross_pnl))
                .push_bind(StoredDecimal(t.fees))
                .push_bind(StoredDecimal(t.net_pnl))
                .push_bind(StoredDecimal(t.pnl_pct))
                .push_bind(t.exit_reason.clone())
                .push_bind(t.opened_at_ms)
                .push_bind(t.closed_at_ms)
                .push_bind(t.duration_minutes)
                .push_bind(StoredDecimal(t.entry_fee))
                .push_bind(t.strategy.clone());
        });
    });
    super::totals::add_trades(statements, trades);
}

#[derive(FromRow)]
struct TradeRow {
    id: String,
    position_id: String,
    broker: String,
    symbol: String,
    side: String,
    quantity: StoredDecimal,
    entry_price: StoredDecimal,
    exit_price: StoredDecimal,
    size_usd: StoredDecimal,
    gross_pnl: StoredDecimal,
    fees: StoredDecimal,
    net_pnl: StoredDecimal,
    pnl_pct: StoredDecimal,
    exit_reason: String,
    opened_at: i64,
    closed_at: i64,
    duration_minutes: i64,
    entry_fee: Option<StoredDecimal>,
    strategy: Option<String>,
}

impl TradeRow {
    fn into_trade(self) -> sqlx::Result<CompletedTrade> {
        Ok(CompletedTrade {
            side: Side::parse(&self.side).unwrap_or(Side::Long),
            quantity: self.quantity.0,
            entry_price: self.entry_price.0,
            exit_price: self.exit_price.0,
            size_usd: self.size_usd.0,
            gross_pnl: self.gross_pnl.0,
            fees: self.fees.0,
            // Trades booked before the split was recorded count their whole fee as entry fee.
            entry_fee: self.entry_fee.unwrap_or(self.fees).0,
            net_pnl: self.net_pnl.0,
            pnl_pct: self.pnl_pct.0,
            opened_at_ms: self.opened_at,
            closed_at_ms: self.closed_at,
            duration_minutes: self.duration_minutes,
            id: self.id,
            position_id: self.position_id,
            broker: self.broker,
            strategy: self.strategy.unwrap_or_default(),
            symbol: self.symbol,
            exit_reason: self.exit_reason,
        })
    }
}

#[derive(FromRow)]
struct OwnedTradeRow {
    user_id: String,
    #[sqlx(flatten)]
    trade: TradeRow,
}

const TRADE_COLUMNS: &str = "id, position_id, broker, symbol, side, quantity, entry_price, exit_price, size_usd, \
                             gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, duration_minutes, entry_fee, strategy";

/// Completed trades with their owners, latest exit first; `limit` None means all.
pub async fn page(
    db: &Db,
    filter: &Filter,
    limit: Option<i64>,
    offset: i64,
) -> sqlx::Result<Vec<Owned<CompletedTrade>>> {
    let rows: Vec<OwnedTradeRow> = on!(db, |c, DB| {
        let mut args = <DB as Database>::Arguments::default();
        let conditions = filter.where_clause::<DB>("closed_at", &[], &mut args);
        let limit = limit_clause::<DB>(limit, offset, &mut args);
        sqlx::query_as_with(
            sql!("SELECT user_id, {TRADE_COLUMNS} FROM trades {conditions} ORDER BY closed_at DESC, id DESC{limit}"),
            args,
        )
        .fetch_all(c)
        .await
    })?;
    rows.into_iter()
        .map(|owned| {
            Ok(Owned {
                user_id: owned.user_id,
                row: owned.trade.into_trade()?,
            })
        })
        .collect()
}

/// How many completed trades the filter takes: a whole account's from its running totals, so a
/// page does not count the history.
pub async fn count(db: &Db, filter: &Filter) -> sqlx::Result<i64> {
    if filter.is_whole_account()
        && let Some(user_id) = &filter.user_id
    {
        return Ok(super::totals::get(&db.pool, user_id).await?.sums.trades as i64);
    }
    on!(db, |c, DB| {
        let mut args = <DB as Database>::Arguments::default();
        let conditions = filter.where_clause::<DB>("closed_at", &[], &mut args);
        sqlx::query_scalar_with(sql!("SELECT COUNT(*) FROM trades {conditions}"), args)
            .fetch_one(c)
            .await
    })
}

/// Every completed trade closed at or after `since`, oldest first (for statistics).
pub async fn trades_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<Vec<CompletedTrade>> {
    let rows: Vec<TradeRow> = on!(exec, |c| {
        sqlx::query_as(sql!(
            "SELECT {TRADE_COLUMNS} FROM trades WHERE user_id = $1 AND closed_at >= $2 ORDER BY closed_at, id"
        ))
        .bind(user_id)
        .bind(since)
        .fetch_all(c)
        .await
    })?;
    rows.into_iter().map(TradeRow::into_trade).collect()
}

/// The completed trades closed in `[from, until)`, oldest first.
pub async fn trades_between<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    from: i64,
    until: i64,
) -> sqlx::Result<Vec<CompletedTrade>> {
    let rows: Vec<TradeRow> = on!(exec, |c| {
        sqlx::query_as(sql!(
            "SELECT {TRADE_COLUMNS} FROM trades WHERE user_id = $1 AND closed_at >= $2 AND closed_at < $3 \
             ORDER BY closed_at, id"
        ))
        .bind(user_id)
        .bind(from)
        .bind(until)
        .fetch_all(c)
        .await
    })?;
    rows.into_iter().map(TradeRow::into_trade).collect()
}

/// The counts and sums of the account's trades closed at or after `since`, added up by the
/// database over the account's index range (no trade row leaves it).
pub async fn sums_since<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<Sums> {
    let row: SumsRow = on!(exec, |c| {
        sqlx::query_as(
            schema_checked!("SELECT COUNT(*) AS trades, COUNT(CASE WHEN net_pnl > 0 THEN 1 END) AS winners, \
             COUNT(CASE WHEN net_pnl < 0 THEN 1 END) AS losers, COALESCE(SUM(net_pnl), 0) AS net_pnl, \
             COALESCE(SUM(CASE WHEN net_pnl > 0 THEN net_pnl END), 0) AS profit, \
             COALESCE(SUM(CASE WHEN net_pnl < 0 THEN net_pnl END), 0) AS loss \
             FROM trades WHERE user_id = $1 AND closed_at >= $2"),
        )
        .bind(user_id)
        .bind(since)
        .fetch_one(c)
        .await
    })?;
    Ok(row.into_sums())
}
