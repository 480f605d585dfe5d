//! The trading account of each user: cash, realized P&L and fees paid. Decimals are stored as
//! [`StoredDecimal`]s.

use super::Executes;
use sqlx::FromRow;

use super::StoredDecimal;
use crate::engine::accounting::Account;

#[derive(FromRow)]
struct AccountRow {
    currency: String,
    initial_capital: StoredDecimal,
    cash: StoredDecimal,
    realized_pnl: StoredDecimal,
    fees_paid: StoredDecimal,
}

pub async fn account<'e>(exec: impl Executes<'e>, user_id: &str) -> sqlx::Result<Option<Account>> {
    let row: Option<AccountRow> = on!(exec, |c| {
        sqlx::query_as(
            "SELECT currency, initial_capital, cash, realized_pnl, fees_paid FROM trading_accounts WHERE user_id = $1",
        )
        .bind(user_id)
        .fetch_optional(c)
        .await
    })?;
    Ok(row.map(|row| Account {
        currency: row.currency,
        initial_capital: row.initial_capital.0,
        cash: row.cash.0,
        realized_pnl: row.realized_pnl.0,
        fees_paid: row.fees_paid.0,
    }))
}

/// Creates the account unless it exists (a concurrent creator wins harmlessly).
pub async fn insert_account<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    account: &Account,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            "INSERT INTO trading_accounts (user_id, currency, initial_capital, cash, realized_pnl, fees_paid, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (user_id) DO NOTHING",
        )
        .bind(user_id)
        .bind(&account.currency)
        .bind(StoredDecimal(account.initial_capital))
        .bind(StoredDecimal(account.cash))
        .bind(StoredDecimal(account.realized_pnl))
        .bind(StoredDecimal(account.fees_paid))
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

/// Writes what a booking changed, `before` → `after`, as additions to the stored row, so two
/// writers of one account add up instead of one overwriting the other.
pub async fn apply_change<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    before: &Account,
    after: &Account,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            "UPDATE trading_accounts SET cash = cash + $2, realized_pnl = realized_pnl + $3, \
             fees_paid = fees_paid + $4, updated_at = $5 WHERE user_id = $1",
        )
        .bind(user_id)
        .bind(StoredDecimal(after.cash - before.cash))
        .bind(StoredDecimal(after.realized_pnl - before.realized_pnl))
        .bind(StoredDecimal(after.fees_paid - before.fees_paid))
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}
