//! Daily summaries (each UTC day, of the day before) and weekly reports (each Monday, of the
//! seven days before), made for the users who want one by mail or webhook.
//!
//! Each is an event with an id naming its user and period, so making it again (after a restart,
//! or on a second instance) records nothing new.

use std::time::Duration;

use chrono::{Datelike, NaiveDate, Weekday};
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::App;
use crate::engine::DAY_MS;
use crate::engine::totals::AccountTotals;
use crate::notices::Kind;
use crate::settings;
use crate::store::notifications;
use crate::store::{Filter, accounts, now_ms, positions, trades};

pub async fn run(app: App) {
    let mut made_for = None;
    loop {
        let today = now_ms().div_euclid(DAY_MS);
        if made_for != Some(today) && app.runs_job("summaries", Duration::from_secs(60)).await {
            match make(&app, today).await {
                Ok(count) => {
                    made_for = Some(today);
                    if count > 0 {
                        tracing::info!(count, "summaries recorded");
                        app.notifier.wake();
                    }
                }
                Err(err) => tracing::warn!("making summaries failed: {err:#}"),
            }
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
}

/// A period's figures for one user. Money is decimal text.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub period: &'static str,
    /// First and last day covered (UTC).
    pub from: String,
    pub to: String,
    pub trades: u32,
    pub wins: u32,
    pub losses: u32,
    pub net_pnl: Decimal,
    pub fees: Decimal,
    pub best_trade: Option<Decimal>,
    pub worst_trade: Option<Decimal>,
    pub open_positions: i64,
    pub cash: Option<Decimal>,
}

fn date(day: i64) -> NaiveDate {
    NaiveDate::from_num_days_from_ce_opt(
        i32::try_from(day + 719_163).expect("days since 1970 fit an i32"),
    )
    .expect("a valid day")
}

/// The summary of the days `first_day..end_day` (UTC day numbers).
pub async fn summary(
    app: &App,
    user_id: &str,
    period: &'static str,
    first_day: i64,
    end_day: i64,
) -> sqlx::Result<Summary> {
    let (from, to) = (first_day * DAY_MS, end_day * DAY_MS);
    let mut totals = AccountTotals::default();
    for trade in trades::trades_since(&app.db.pool, user_id, from).await? {
        if trade.closed_at_ms < to {
            totals.add(&trade);
        }
    }
    let account = accounts::account(&app.db.pool, user_id).await?;
    Ok(Summary {
        period,
        from: date(first_day).to_string(),
        to: date(end_day - 1).to_string(),
        trades: totals.sums.trades as u32,
        wins: totals.sums.winners as u32,
        losses: totals.sums.losers as u32,
        net_pnl: totals.sums.net_pnl,
        fees: totals.fees,
        best_trade: totals.best_trade,
        worst_trade: totals.worst_trade,
        open_positions: positions::count_open(&app.db.pool, &Filter::user(user_id)).await?,
        cash: account.map(|a| a.cash),
    })
}

/// Whether anything of the user's asks for `kind`: their mail settings or a webhook.
async fn wanted(app: &App, user_id: &str, kind: Kind) -> sqlx::Result<bool> {
    let recipient = notifications::recipients(&app.db.pool, Some(user_id)).await?;
    let stored: Map<String, Value> = recipient
        .first()
        .and_then(|r| r.settings.as_deref())
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    if super::dispatch::wants_mail(kind, &Value::Null, &settings::notifications_of(&stored)) {
        return Ok(true);
    }
    Ok(notifications::webhooks(&app.db.pool, Some(user_id))
        .await?
        .iter()
        .any(|webhook| super::dispatch::wants_delivery(webhook, kind, &Value::Null)))
}

/// Records the summaries due on `today` (a UTC day number): the day before's, and on Mondays
/// the week before's. How many were new.
pub async fn make(app: &App, today: i64) -> anyhow::Result<usize> {
    let weekly = date(today).weekday() == Weekday::Mon;
    let mut recorded = 0;
    for user_id in notifications::trading_users(&app.db).await? {
        let mut periods = vec![(Kind::DailySummary, "daily", today - 1)];
        if weekly {
            periods.push((Kind::WeeklyReport, "weekly", today - 7));
        }
        for (kind, period, first_day) in periods {
            if !wanted(app, &user_id, kind).await? {
                continue;
            }
            let id = format!("{}:{user_id}:{}", kind.as_str(), date(first_day));
            let summary = summary(app, &user_id, period, first_day, today).await?;
            let payload = serde_json::to_string(&summary).expect("summaries serialise");
            if notifications::insert_event(
                &app.db.pool,
                &id,
                Some(&user_id),
                kind.as_str(),
                &payload,
                now_ms(),
            )
            .await?
            {
                recorded += 1;
            }
        }
    }
    Ok(recorded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_are_utc_dates() {
        assert_eq!(date(0).to_string(), "1970-01-01");
        assert_eq!(date(1_767_225_600_000 / DAY_MS).to_string(), "2026-01-01");
        assert_eq!(date(20_780).to_string(), "2026-11-23");
        assert_eq!(date(20_780).weekday(), Weekday::Mon);
    }
}
