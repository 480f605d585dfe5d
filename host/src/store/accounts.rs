//! The trading account of each user: cash, realized P&L and fees paid. Decimals are stored as
//! [`StoredDecimal`]s.

use super::Executes;
use super::statements::{Statements, statement};
use rust_decimal::Decimal;
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
            schema_checked!("SELECT currency, initial_capital, cash, realized_pnl, fees_paid FROM trading_accounts WHERE user_id = $1"),
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
            schema_checked!("INSERT INTO trading_accounts (user_id, currency, initial_capital, cash, realized_pnl, fees_paid, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (user_id) DO NOTHING"),
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

/// What a booking adds to an account (each figure relative: concurrent bookings add up).
#[derive(Debug, Clone, PartialEq)]
pub struct AccountChange {
    pub user_id: String,
    pub cash: Decimal,
    pub realized_pnl: Decimal,
    pub fees_paid: Decimal,
}

impl AccountChange {
    /// The change from `before` to `after`.
    pub fn between(user_id: &str, before: &Account, after: &Account) -> Self {
        AccountChange {
            user_id: user_id.to_string(),
            cash: after.cash - before.cash,
            realized_pnl: after.realized_pnl - before.realized_pnl,
            fees_paid: after.fees_paid - before.fees_paid,
        }
    }
}

/// Adds changes to their accounts (distinct users), in one statement.
pub async fn apply_changes<'e>(
    exec: impl Executes<'e>,
    changes: &[&AccountChange],
    now: i64,
) -> sqlx::Result<()> {
    Statements::once(exec, |statements| push_changes(statements, changes, now))
        .await
        .map(drop)
}

/// [`apply_changes`] as one of `statements`.
pub fn push_changes(statements: &mut Statements, changes: &[&AccountChange], now: i64) {
    if changes.is_empty() {
        return;
    }
    statement!(statements, |query| {
        // VALUES columns are column1, column2, … on both backends.
        query.push(
            "UPDATE trading_accounts SET cash = cash + v.column2, realized_pnl = realized_pnl + v.column3, \
             fees_paid = fees_paid + v.column4, updated_at = v.column5 FROM (",
        );
        query.push_values(changes, |mut row, change| {
            row.push_bind(change.user_id.clone())
                .push_bind(StoredDecimal(change.cash))
                .push_bind(StoredDecimal(change.realized_pnl))
                .push_bind(StoredDecimal(change.fees_paid))
                .push_bind(now);
        });
        query.push(") AS v WHERE trading_accounts.user_id = v.column1");
    })
}
