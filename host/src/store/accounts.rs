//! The trading account of each user: cash, realized P&L and fees paid. Decimals are TEXT in the
//! table and `Decimal` everywhere else.

use super::Executes;
use sqlx::FromRow;

use super::dec;
use crate::engine::accounting::Account;

#[derive(FromRow)]
struct AccountRow {
    currency: String,
    initial_capital: String,
    cash: String,
    realized_pnl: String,
    fees_paid: String,
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
        .bind(account.initial_capital.to_string())
        .bind(account.cash.to_string())
        .bind(account.realized_pnl.to_string())
        .bind(account.fees_paid.to_string())
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}

pub async fn update_account<'e>(
    exec: impl Executes<'e>,
    user_id: &str,
    account: &Account,
    now: i64,
) -> sqlx::Result<()> {
    on!(exec, |c| {
        sqlx::query(
            "UPDATE trading_accounts SET cash = $2, realized_pnl = $3, fees_paid = $4, updated_at = $5 WHERE user_id = $1",
        )
        .bind(user_id)
        .bind(account.cash.to_string())
        .bind(account.realized_pnl.to_string())
        .bind(account.fees_paid.to_string())
        .bind(now)
        .execute(c)
        .await
        .map(|done| done.rows_affected())
    })?;
    Ok(())
}
