//! Trading tables: accounts, bots, orders, positions, trades, the ledger, equity snapshots,
//! alarms and platform flags. Decimals are TEXT here and `Decimal` everywhere else.

use rust_decimal::Decimal;
use sqlx::{Any, Executor, FromRow};

use crate::engine::accounting::{
    Account, Closing, CompletedTrade, LedgerAction, LedgerEntry, OrderSide, Position, Side,
};

pub(super) fn dec(text: &str) -> sqlx::Result<Decimal> {
    text.parse()
        .map_err(|err| sqlx::Error::Decode(format!("stored decimal {text:?}: {err}").into()))
}

fn opt_dec(text: &Option<String>) -> sqlx::Result<Option<Decimal>> {
    text.as_deref().map(dec).transpose()
}

fn text(value: Option<Decimal>) -> Option<String> {
    value.map(|d| d.to_string())
}

// ----- accounts -----

#[derive(FromRow)]
struct AccountRow {
    currency: String,
    initial_capital: String,
    cash: String,
    realized_pnl: String,
    fees_paid: String,
}

pub async fn account<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Option<Account>> {
    let row: Option<AccountRow> = sqlx::query_as(
        "SELECT currency, initial_capital, cash, realized_pnl, fees_paid FROM trading_accounts WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(exec)
    .await?;
    row.map(|row| {
        Ok(Account {
            currency: row.currency,
            initial_capital: dec(&row.initial_capital)?,
            cash: dec(&row.cash)?,
            realized_pnl: dec(&row.realized_pnl)?,
            fees_paid: dec(&row.fees_paid)?,
        })
    })
    .transpose()
}

/// Creates the account unless it exists (a concurrent creator wins harmlessly).
pub async fn insert_account<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    account: &Account,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO trading_accounts (user_id, currency, initial_capital, cash, realized_pnl, fees_paid, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (user_id) DO NOTHING",
    )
    .bind(user_id)
    .bind(&account.currency)
    .bind(account.initial_capital.to_string())
    .bind(account.cash.to_string())
    .bind(account.realized_pnl.to_string())
    .bind(account.fees_paid.to_string())
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

pub async fn update_account<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    account: &Account,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE trading_accounts SET cash = $2, realized_pnl = $3, fees_paid = $4, updated_at = $5 WHERE user_id = $1",
    )
    .bind(user_id)
    .bind(account.cash.to_string())
    .bind(account.realized_pnl.to_string())
    .bind(account.fees_paid.to_string())
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

// ----- bots -----

#[derive(Debug, Clone, FromRow)]
pub struct BotRow {
    pub user_id: String,
    pub id: String,
    pub status: String,
    pub broker: String,
    pub paper_trading: i64,
    pub risk_profile: String,
    pub strategy: String,
    /// JSON array of symbols.
    pub symbols: String,
    pub started_at: Option<i64>,
    pub last_scan_at: Option<i64>,
    pub scan_seq: i64,
    /// Base64 of the strategy's state blob.
    pub strategy_state: String,
    pub last_error: Option<String>,
}

const BOT_COLUMNS: &str = "user_id, id, status, broker, paper_trading, risk_profile, strategy, symbols, \
                           started_at, last_scan_at, scan_seq, strategy_state, last_error";

pub async fn bot<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Option<BotRow>> {
    sqlx::query_as(sql!("SELECT {BOT_COLUMNS} FROM bots WHERE user_id = $1"))
        .bind(user_id)
        .fetch_optional(exec)
        .await
}

/// Bots a starting server must resume: everything not stopped for good.
pub async fn resumable_bots<'e>(
    exec: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Vec<BotRow>> {
    sqlx::query_as(sql!(
        "SELECT {BOT_COLUMNS} FROM bots WHERE status IN ('starting', 'running', 'paused')"
    ))
    .fetch_all(exec)
    .await
}

pub async fn upsert_bot<'e>(
    exec: impl Executor<'e, Database = Any>,
    bot: &BotRow,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO bots (user_id, id, status, broker, paper_trading, risk_profile, strategy, symbols, started_at, \
         last_scan_at, scan_seq, strategy_state, last_error, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (user_id) DO UPDATE SET status = $3, broker = $4, paper_trading = $5, risk_profile = $6, \
         strategy = $7, symbols = $8, started_at = $9, last_scan_at = $10, scan_seq = $11, strategy_state = $12, \
         last_error = $13, updated_at = $14",
    )
    .bind(&bot.user_id)
    .bind(&bot.id)
    .bind(&bot.status)
    .bind(&bot.broker)
    .bind(bot.paper_trading)
    .bind(&bot.risk_profile)
    .bind(&bot.strategy)
    .bind(&bot.symbols)
    .bind(bot.started_at)
    .bind(bot.last_scan_at)
    .bind(bot.scan_seq)
    .bind(&bot.strategy_state)
    .bind(&bot.last_error)
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

/// Records a scan's progress without touching the status (which is written under the user's
/// lock as it changes).
pub async fn record_scan<'e>(
    exec: impl Executor<'e, Database = Any>,
    bot: &BotRow,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE bots SET last_scan_at = $2, scan_seq = $3, strategy_state = $4, updated_at = $5 WHERE user_id = $1",
    )
    .bind(&bot.user_id)
    .bind(bot.last_scan_at)
    .bind(bot.scan_seq)
    .bind(&bot.strategy_state)
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

pub async fn count_bots_by_status<'e>(
    exec: impl Executor<'e, Database = Any>,
    status: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM bots WHERE status = $1")
        .bind(status)
        .fetch_one(exec)
        .await
}

// ----- positions -----

#[derive(FromRow)]
struct PositionRow {
    id: String,
    broker: String,
    strategy: Option<String>,
    symbol: String,
    side: String,
    quantity: String,
    entry_price: String,
    cost: Option<String>,
    entry_fees: String,
    stop_loss: Option<String>,
    take_profit: Option<String>,
    trail_pct: Option<String>,
    extreme_price: String,
    current_price: String,
    opened_at: i64,
    close_reason: Option<String>,
    close_attempts: i64,
    next_close_at: Option<i64>,
    close_error: Option<String>,
}

impl PositionRow {
    fn into_position(self) -> sqlx::Result<Position> {
        let quantity = dec(&self.quantity)?;
        let entry_price = dec(&self.entry_price)?;
        Ok(Position {
            side: Side::parse(&self.side).ok_or_else(|| {
                sqlx::Error::Decode(format!("position side {:?}", self.side).into())
            })?,
            quantity,
            entry_price,
            // Positions opened before costs were kept were opened in one fill.
            cost: match &self.cost {
                Some(cost) => dec(cost)?,
                None => entry_price * quantity,
            },
            entry_fees: dec(&self.entry_fees)?,
            stop_loss: opt_dec(&self.stop_loss)?,
            take_profit: opt_dec(&self.take_profit)?,
            trail_pct: opt_dec(&self.trail_pct)?,
            extreme_price: dec(&self.extreme_price)?,
            current_price: dec(&self.current_price)?,
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

const POSITION_COLUMNS: &str = "id, broker, strategy, symbol, side, quantity, entry_price, cost, entry_fees, stop_loss, take_profit, \
                                trail_pct, extreme_price, current_price, opened_at, close_reason, close_attempts, \
                                next_close_at, close_error";

pub async fn open_positions<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Vec<Position>> {
    let rows: Vec<PositionRow> = sqlx::query_as(sql!(
        "SELECT {POSITION_COLUMNS} FROM positions WHERE user_id = $1 AND status = 'open' ORDER BY opened_at, id"
    ))
    .bind(user_id)
    .fetch_all(exec)
    .await?;
    rows.into_iter().map(PositionRow::into_position).collect()
}

/// Users with an open position.
pub async fn users_with_open_positions<'e>(
    exec: impl Executor<'e, Database = Any>,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT DISTINCT user_id FROM positions WHERE status = 'open'")
        .fetch_all(exec)
        .await
}

pub async fn count_open_positions<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    broker: Option<&str>,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM positions WHERE user_id = $1 AND status = 'open' AND ($2 IS NULL OR broker = $2)",
    )
    .bind(user_id)
    .bind(broker)
    .fetch_one(exec)
    .await
}

pub async fn insert_position<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    p: &Position,
    now: i64,
) -> sqlx::Result<()> {
    let closing = p.closing.as_ref();
    sqlx::query(sql!(
        "INSERT INTO positions (user_id, {POSITION_COLUMNS}, status, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, 'open', $21)"
    ))
    .bind(user_id)
    .bind(&p.id)
    .bind(&p.broker)
    .bind(&p.strategy)
    .bind(&p.symbol)
    .bind(p.side.as_str())
    .bind(p.quantity.to_string())
    .bind(p.entry_price.to_string())
    .bind(p.cost.to_string())
    .bind(p.entry_fees.to_string())
    .bind(text(p.stop_loss))
    .bind(text(p.take_profit))
    .bind(text(p.trail_pct))
    .bind(p.extreme_price.to_string())
    .bind(p.current_price.to_string())
    .bind(p.opened_at_ms)
    .bind(closing.map(|c| c.reason.clone()))
    .bind(closing.map_or(0, |c| i64::from(c.attempts)))
    .bind(closing.map(|c| c.next_attempt_at))
    .bind(closing.and_then(|c| c.last_error.clone()))
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

/// Writes a position's quantity, cost, fees, marks and pending close; a zero quantity closes it.
pub async fn update_position<'e>(
    exec: impl Executor<'e, Database = Any>,
    p: &Position,
    now: i64,
) -> sqlx::Result<()> {
    let closed = p.quantity.is_zero();
    let closing = p.closing.as_ref().filter(|_| !closed);
    sqlx::query(
        "UPDATE positions SET quantity = $2, entry_price = $3, cost = $4, entry_fees = $5, extreme_price = $6, \
         current_price = $7, status = $8, closed_at = $9, close_reason = $10, close_attempts = $11, \
         next_close_at = $12, close_error = $13, updated_at = $14 WHERE id = $1",
    )
    .bind(&p.id)
    .bind(p.quantity.to_string())
    .bind(p.entry_price.to_string())
    .bind(p.cost.to_string())
    .bind(p.entry_fees.to_string())
    .bind(p.extreme_price.to_string())
    .bind(p.current_price.to_string())
    .bind(if closed { "closed" } else { "open" })
    .bind(closed.then_some(now))
    .bind(closing.map(|c| c.reason.clone()))
    .bind(closing.map_or(0, |c| i64::from(c.attempts)))
    .bind(closing.map(|c| c.next_attempt_at))
    .bind(closing.and_then(|c| c.last_error.clone()))
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

/// Writes only a position's pending close (the rest of it is unchanged).
pub async fn update_closing<'e>(
    exec: impl Executor<'e, Database = Any>,
    p: &Position,
    now: i64,
) -> sqlx::Result<()> {
    let closing = p.closing.as_ref();
    sqlx::query(
        "UPDATE positions SET close_reason = $2, close_attempts = $3, next_close_at = $4, close_error = $5, \
         updated_at = $6 WHERE id = $1 AND status = 'open'",
    )
    .bind(&p.id)
    .bind(closing.map(|c| c.reason.clone()))
    .bind(closing.map_or(0, |c| i64::from(c.attempts)))
    .bind(closing.map(|c| c.next_attempt_at))
    .bind(closing.and_then(|c| c.last_error.clone()))
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

// ----- trades and ledger -----

/// Books a completed trade and adds it to its account's running totals, in the caller's
/// transaction.
pub async fn insert_trade(
    conn: &mut sqlx::AnyConnection,
    user_id: &str,
    t: &CompletedTrade,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO trades (id, user_id, position_id, broker, symbol, side, quantity, entry_price, exit_price, size_usd, \
         gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, duration_minutes, entry_fee, strategy) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)",
    )
    .bind(&t.id)
    .bind(user_id)
    .bind(&t.position_id)
    .bind(&t.broker)
    .bind(&t.symbol)
    .bind(t.side.as_str())
    .bind(t.quantity.to_string())
    .bind(t.entry_price.to_string())
    .bind(t.exit_price.to_string())
    .bind(t.size_usd.to_string())
    .bind(t.gross_pnl.to_string())
    .bind(t.fees.to_string())
    .bind(t.net_pnl.to_string())
    .bind(t.pnl_pct.to_string())
    .bind(&t.exit_reason)
    .bind(t.opened_at_ms)
    .bind(t.closed_at_ms)
    .bind(t.duration_minutes)
    .bind(t.entry_fee.to_string())
    .bind(&t.strategy)
    .execute(&mut *conn)
    .await?;
    super::totals::add_trade(conn, user_id, t).await
}

#[derive(FromRow)]
struct TradeRow {
    id: String,
    position_id: String,
    broker: String,
    symbol: String,
    side: String,
    quantity: String,
    entry_price: String,
    exit_price: String,
    size_usd: String,
    gross_pnl: String,
    fees: String,
    net_pnl: String,
    pnl_pct: String,
    exit_reason: String,
    opened_at: i64,
    closed_at: i64,
    duration_minutes: i64,
    entry_fee: Option<String>,
    strategy: Option<String>,
}

impl TradeRow {
    fn into_trade(self) -> sqlx::Result<CompletedTrade> {
        Ok(CompletedTrade {
            side: Side::parse(&self.side).unwrap_or(Side::Long),
            quantity: dec(&self.quantity)?,
            entry_price: dec(&self.entry_price)?,
            exit_price: dec(&self.exit_price)?,
            size_usd: dec(&self.size_usd)?,
            gross_pnl: dec(&self.gross_pnl)?,
            fees: dec(&self.fees)?,
            // Trades booked before the split was recorded count their whole fee as entry fee.
            entry_fee: dec(self.entry_fee.as_deref().unwrap_or(&self.fees))?,
            net_pnl: dec(&self.net_pnl)?,
            pnl_pct: dec(&self.pnl_pct)?,
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

const TRADE_COLUMNS: &str = "id, position_id, broker, symbol, side, quantity, entry_price, exit_price, size_usd, \
                             gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, duration_minutes, entry_fee, strategy";

#[derive(Debug, Default, Clone)]
pub struct TradeFilter {
    pub symbol: Option<String>,
    pub from_ms: Option<i64>,
    pub until_ms: Option<i64>,
}

impl TradeFilter {
    /// No condition: every trade of the account.
    pub fn is_empty(&self) -> bool {
        self.symbol.is_none() && self.from_ms.is_none() && self.until_ms.is_none()
    }
}

/// Completed trades, newest first, with the total count of the filter (for an empty filter the
/// account's running total, so a page does not count the history).
pub async fn trades(
    db: &super::Db,
    user_id: &str,
    filter: &TradeFilter,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<CompletedTrade>, i64)> {
    const WHERE: &str = "WHERE user_id = $1 AND ($2 IS NULL OR symbol = $2) AND ($3 IS NULL OR closed_at >= $3) \
                         AND ($4 IS NULL OR closed_at <= $4)";
    let rows: Vec<TradeRow> = sqlx::query_as(sql!(
        "SELECT {TRADE_COLUMNS} FROM trades {WHERE} ORDER BY closed_at DESC, id DESC LIMIT $5 OFFSET $6"
    ))
    .bind(user_id)
    .bind(&filter.symbol)
    .bind(filter.from_ms)
    .bind(filter.until_ms)
    .bind(limit)
    .bind(offset)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = if filter.is_empty() {
        super::totals::get(&db.pool, user_id).await?.trades as i64
    } else {
        sqlx::query_scalar(sql!("SELECT COUNT(*) FROM trades {WHERE}"))
            .bind(user_id)
            .bind(&filter.symbol)
            .bind(filter.from_ms)
            .bind(filter.until_ms)
            .fetch_one(&db.pool)
            .await?
    };
    Ok((
        rows.into_iter()
            .map(TradeRow::into_trade)
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}

/// Every completed trade closed at or after `since`, oldest first (for statistics).
pub async fn trades_since<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    since: i64,
) -> sqlx::Result<Vec<CompletedTrade>> {
    let rows: Vec<TradeRow> = sqlx::query_as(sql!(
        "SELECT {TRADE_COLUMNS} FROM trades WHERE user_id = $1 AND closed_at >= $2 ORDER BY closed_at, id"
    ))
    .bind(user_id)
    .bind(since)
    .fetch_all(exec)
    .await?;
    rows.into_iter().map(TradeRow::into_trade).collect()
}

/// The completed trades closed in `[from, until)`, oldest first.
pub async fn trades_between<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    from: i64,
    until: i64,
) -> sqlx::Result<Vec<CompletedTrade>> {
    let rows: Vec<TradeRow> = sqlx::query_as(sql!(
        "SELECT {TRADE_COLUMNS} FROM trades WHERE user_id = $1 AND closed_at >= $2 AND closed_at < $3 \
         ORDER BY closed_at, id"
    ))
    .bind(user_id)
    .bind(from)
    .bind(until)
    .fetch_all(exec)
    .await?;
    rows.into_iter().map(TradeRow::into_trade).collect()
}

pub async fn insert_ledger<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    order_id: &str,
    // The fill the row books; none for dust left at the venue.
    fill_id: Option<&str>,
    e: &LedgerEntry,
) -> sqlx::Result<()> {
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
    .execute(exec)
    .await?;
    Ok(())
}

/// The closing rows an order booked (one per fill), oldest first: its completed trade's parts.
pub async fn closes_of_order<'e>(
    exec: impl Executor<'e, Database = Any>,
    order_id: &str,
) -> sqlx::Result<Vec<LedgerEntry>> {
    let rows: Vec<LedgerRow> = sqlx::query_as(
        "SELECT id, order_id, position_id, broker, symbol, side, action, quantity, price, notional, fee, \
         realized_pnl, cash_after, created_at, entry_fee FROM ledger WHERE order_id = $1 AND action = 'CLOSE' \
         ORDER BY created_at, id",
    )
    .bind(order_id)
    .fetch_all(exec)
    .await?;
    rows.into_iter().map(LedgerRow::into_entry).collect()
}

#[derive(Debug, Clone, FromRow)]
pub struct LedgerRow {
    pub id: String,
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

/// Ledger rows, newest first, and the total count.
pub async fn ledger(
    db: &super::Db,
    user_id: &str,
    filter: &TradeFilter,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<LedgerRow>, i64)> {
    const WHERE: &str = "WHERE user_id = $1 AND ($2 IS NULL OR symbol = $2) AND ($3 IS NULL OR created_at >= $3) \
                         AND ($4 IS NULL OR created_at <= $4)";
    let rows = sqlx::query_as(sql!(
        "SELECT id, order_id, position_id, broker, symbol, side, action, quantity, price, notional, fee, \
         realized_pnl, cash_after, created_at, entry_fee FROM ledger {WHERE} ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6"
    ))
    .bind(user_id)
    .bind(&filter.symbol)
    .bind(filter.from_ms)
    .bind(filter.until_ms)
    .bind(limit)
    .bind(offset)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(sql!("SELECT COUNT(*) FROM ledger {WHERE}"))
        .bind(user_id)
        .bind(&filter.symbol)
        .bind(filter.from_ms)
        .bind(filter.until_ms)
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

// ----- equity snapshots -----

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub user_id: String,
    pub at: i64,
    pub equity: Decimal,
    pub cash: Decimal,
    pub unrealized_pnl: Decimal,
}

pub async fn insert_snapshot<'e>(
    exec: impl Executor<'e, Database = Any>,
    s: &Snapshot,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO equity_snapshots (user_id, at, equity, cash, unrealized_pnl) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (user_id, at) DO NOTHING",
    )
    .bind(&s.user_id)
    .bind(s.at)
    .bind(s.equity.to_string())
    .bind(s.cash.to_string())
    .bind(s.unrealized_pnl.to_string())
    .execute(exec)
    .await?;
    Ok(())
}

/// Equity at or after `since`, oldest first, as (time, equity): every snapshot, or with a
/// `bucket_ms` the last snapshot of each bucket (long periods read hourly points, not every minute).
pub async fn equity_since<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    since: i64,
    bucket_ms: Option<i64>,
) -> sqlx::Result<Vec<(i64, Decimal)>> {
    let rows: Vec<(i64, String)> = match bucket_ms {
        None => {
            sqlx::query_as("SELECT at, equity FROM equity_snapshots WHERE user_id = $1 AND at >= $2 ORDER BY at")
                .bind(user_id)
                .bind(since)
                .fetch_all(exec)
                .await?
        }
        Some(bucket) => {
            sqlx::query_as(
                "SELECT at, equity FROM equity_snapshots WHERE user_id = $1 AND at IN \
                 (SELECT MAX(at) FROM equity_snapshots WHERE user_id = $1 AND at >= $2 GROUP BY at / $3) ORDER BY at",
            )
            .bind(user_id)
            .bind(since)
            .bind(bucket.max(1))
            .fetch_all(exec)
            .await?
        }
    };
    rows.into_iter()
        .map(|(at, equity)| Ok((at, dec(&equity)?)))
        .collect()
}

// ----- alarms -----

#[derive(Debug, Clone, FromRow)]
pub struct AlarmRow {
    pub id: String,
    pub alarm_type: String,
    pub level: String,
    pub message: String,
    pub current_value: f64,
    pub threshold_value: f64,
    pub recommended_action: String,
    pub status: String,
    pub raised_at: i64,
    pub cleared_at: Option<i64>,
}

pub async fn insert_alarm<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
    a: &AlarmRow,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO alarms (id, user_id, alarm_type, level, message, current_value, threshold_value, \
         recommended_action, status, raised_at, cleared_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&a.id)
    .bind(user_id)
    .bind(&a.alarm_type)
    .bind(&a.level)
    .bind(&a.message)
    .bind(a.current_value)
    .bind(a.threshold_value)
    .bind(&a.recommended_action)
    .bind(&a.status)
    .bind(a.raised_at)
    .bind(a.cleared_at)
    .execute(exec)
    .await?;
    Ok(())
}

pub async fn clear_alarm<'e>(
    exec: impl Executor<'e, Database = Any>,
    id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE alarms SET status = 'cleared', cleared_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now)
        .execute(exec)
        .await?;
    Ok(())
}

pub async fn active_alarms<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Vec<AlarmRow>> {
    sqlx::query_as(
        "SELECT id, alarm_type, level, message, current_value, threshold_value, recommended_action, status, raised_at, \
         cleared_at FROM alarms WHERE user_id = $1 AND status = 'active' ORDER BY raised_at",
    )
    .bind(user_id)
    .fetch_all(exec)
    .await
}

/// The last time each alarm type was raised for the user (for cooldowns across restarts).
pub async fn last_raised<'e>(
    exec: impl Executor<'e, Database = Any>,
    user_id: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT alarm_type, MAX(raised_at) FROM alarms WHERE user_id = $1 GROUP BY alarm_type",
    )
    .bind(user_id)
    .fetch_all(exec)
    .await
}

// ----- platform flags -----

pub async fn flag<'e>(
    exec: impl Executor<'e, Database = Any>,
    name: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT value FROM platform_flags WHERE name = $1")
        .bind(name)
        .fetch_optional(exec)
        .await
}

pub async fn set_flag<'e>(
    exec: impl Executor<'e, Database = Any>,
    name: &str,
    value: &str,
    by: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO platform_flags (name, value, updated_by, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (name) DO UPDATE SET value = $2, updated_by = $3, updated_at = $4",
    )
    .bind(name)
    .bind(value)
    .bind(by)
    .bind(now)
    .execute(exec)
    .await?;
    Ok(())
}

/// Removes a flag; whether it was set.
pub async fn clear_flag<'e>(
    exec: impl Executor<'e, Database = Any>,
    name: &str,
) -> sqlx::Result<bool> {
    let result = sqlx::query("DELETE FROM platform_flags WHERE name = $1")
        .bind(name)
        .execute(exec)
        .await?;
    Ok(result.rows_affected() > 0)
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
        for minute in 0..180i64 {
            let snapshot = Snapshot {
                user_id: "u1".into(),
                at: minute * 60_000,
                equity: Decimal::from(1000 + minute),
                cash: Decimal::ZERO,
                unrealized_pnl: Decimal::ZERO,
            };
            insert_snapshot(&db.pool, &snapshot).await.unwrap();
        }
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
