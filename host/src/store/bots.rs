//! The bot of each user: what it trades and where, its status and scan progress.

use super::Executes;
use super::statements::{Statements, statement};
use sqlx::FromRow;

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

pub async fn bot<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Option<BotRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {BOT_COLUMNS} FROM bots WHERE user_id = $1"
    ))
    .bind(user_id)
    .fetch_optional(c)
    .await)
}

/// Bots a starting server must resume: everything not stopped for good.
pub async fn resumable_bots<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<BotRow>> {
    on!(exec, |c| sqlx::query_as(sql!(
        "SELECT {BOT_COLUMNS} FROM bots WHERE status IN ('starting', 'running', 'paused')"
    ))
    .fetch_all(c)
    .await)
}

/// The owners of the bots [`resumable_bots`] answers, without reading the rows.
pub async fn resumable_user_ids<'e>(exec: impl Executes<'e>) -> sqlx::Result<Vec<String>> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT user_id FROM bots WHERE status IN ('starting', 'running', 'paused')"
    ))
    .fetch_all(c)
    .await)
}

/// Writes one bot's whole row outside the books' writer (seeding a database); the same statement
/// as [`push_upserts`].
pub async fn upsert_bot<'e>(exec: impl Executes<'e>, bot: &BotRow, now: i64) -> sqlx::Result<()> {
    Statements::once(exec, |statements| push_upserts(statements, &[bot], now))
        .await
        .map(drop)
}

/// Writes bots' whole rows (a status change with everything else the bot is) in one statement;
/// one row per user.
pub fn push_upserts(statements: &mut Statements, bots: &[&BotRow], now: i64) {
    if bots.is_empty() {
        return;
    }
    statement!(statements, |query| {
        query.push(format!("INSERT INTO bots ({BOT_COLUMNS}, updated_at) "));
        query.push_values(bots, |mut row, bot| {
            row.push_bind(bot.user_id.clone())
                .push_bind(bot.id.clone())
                .push_bind(bot.status.clone())
                .push_bind(bot.broker.clone())
                .push_bind(bot.paper_trading)
                .push_bind(bot.risk_profile.clone())
                .push_bind(bot.strategy.clone())
                .push_bind(bot.symbols.clone())
                .push_bind(bot.started_at)
                .push_bind(bot.last_scan_at)
                .push_bind(bot.scan_seq)
                .push_bind(bot.strategy_state.clone())
                .push_bind(bot.last_error.clone())
                .push_bind(now);
        });
        query.push(
            " ON CONFLICT (user_id) DO UPDATE SET status = excluded.status, broker = excluded.broker, \
             paper_trading = excluded.paper_trading, risk_profile = excluded.risk_profile, \
             strategy = excluded.strategy, symbols = excluded.symbols, started_at = excluded.started_at, \
             last_scan_at = excluded.last_scan_at, scan_seq = excluded.scan_seq, \
             strategy_state = excluded.strategy_state, last_error = excluded.last_error, \
             updated_at = excluded.updated_at",
        );
    })
}

/// Records bots' scan progress (the last scan, its sequence number, the strategy's state) in
/// one statement, without touching the status (written under the user's lock as it changes).
pub fn push_scans(statements: &mut Statements, bots: &[&BotRow], now: i64) {
    if bots.is_empty() {
        return;
    }
    statement!(statements, |query| {
        // VALUES columns are column1, column2, … on both backends.
        query.push(
            "UPDATE bots SET last_scan_at = v.column2, scan_seq = v.column3, strategy_state = v.column4, \
             updated_at = v.column5 FROM (",
        );
        query.push_values(bots, |mut row, bot| {
            row.push_bind(bot.user_id.clone())
                .push_bind(bot.last_scan_at)
                .push_bind(bot.scan_seq)
                .push_bind(bot.strategy_state.clone())
                .push_bind(now);
        });
        query.push(") AS v WHERE bots.user_id = v.column1");
    })
}

pub async fn count_bots_by_status<'e>(exec: impl Executes<'e>, status: &str) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM bots WHERE status = $1"
    ))
    .bind(status)
    .fetch_one(c)
    .await)
}

/// Bots that are starting, running or paused.
pub async fn count_active<'e>(exec: impl Executes<'e>) -> sqlx::Result<i64> {
    on!(exec, |c| sqlx::query_scalar(schema_checked!(
        "SELECT COUNT(*) FROM bots WHERE status IN ('starting', 'running', 'paused')"
    ))
    .fetch_one(c)
    .await)
}
