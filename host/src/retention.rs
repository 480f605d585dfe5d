//! Retention: what the platform keeps and for how long, applied on a schedule.
//!
//! Histories that grow with time are thinned or removed, so storage follows the users and not
//! the age of the installation:
//! - KPI tracker snapshots and the equity curve keep every point for `snapshot_full_days`, then
//!   the last point of each hour until `snapshot_hourly_days`, then the last point of each day.
//!   The rule depends only on the rows and the day, so every run (and every instance) keeps the
//!   same points.
//! - Expired refresh and reset tokens go at once; sessions that ended (revoked or expired)
//!   after `session_days`.
//! - Audit rows after `audit_days` (0 keeps them forever).
//! - Delivered or abandoned mail, dispatched notification events and finished webhook
//!   deliveries after `mail_days`; mail still pending or held stays whatever its age.
//!
//! Trades, ledger rows, orders, fills and positions are the books and are never removed here.

use serde::Serialize;

use crate::App;
use crate::config::RetentionPolicy as Policy;
use crate::store::{self, DAY_MS, Db, now_ms};

const HOUR_MS: i64 = 3_600_000;

/// What one run removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Removed {
    pub tracker_snapshots: u64,
    pub equity_points: u64,
    pub credentials: u64,
    pub audit_rows: u64,
    pub mail: u64,
    pub notifications: u64,
}

/// The start of the day (UTC) that `ms` falls in, less `days` days.
fn days_before(ms: i64, days: u32) -> i64 {
    ms - ms.rem_euclid(DAY_MS) - i64::from(days) * DAY_MS
}

/// Applies `policy` once, as of `now`.
pub async fn run_once(db: &Db, policy: &Policy, now: i64) -> sqlx::Result<Removed> {
    use store::retention as rows;
    let full_until = days_before(now, policy.snapshot_full_days);
    let hourly_until = days_before(
        now,
        policy.snapshot_hourly_days.max(policy.snapshot_full_days),
    );
    let mut removed = Removed::default();
    // Daily first, so the hourly pass has less to look at.
    for (before, bucket) in [(hourly_until, DAY_MS), (full_until, HOUR_MS)] {
        removed.tracker_snapshots += rows::thin_tracker_snapshots(db, before, bucket).await?;
        removed.equity_points += rows::thin_equity_snapshots(db, before, bucket).await?;
    }
    removed.credentials =
        rows::expired_credentials(db, now, now - i64::from(policy.session_days) * DAY_MS).await?;
    if policy.audit_days > 0 {
        removed.audit_rows =
            rows::audit_rows(db, now - i64::from(policy.audit_days) * DAY_MS).await?;
    }
    let finished_before = now - i64::from(policy.mail_days) * DAY_MS;
    removed.mail = rows::finished_mail(db, finished_before).await?;
    removed.notifications = rows::finished_notifications(db, finished_before).await?;
    Ok(removed)
}

/// The retention task of a running server: one run per interval, the first one interval after
/// start.
pub async fn run(app: App) {
    let policy = app.config.retention.clone();
    let mut tick = tokio::time::interval(policy.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        if !app.runs_job("retention", policy.interval).await {
            continue;
        }
        match run_once(&app.db, &policy, now_ms()).await {
            Ok(removed) => tracing::info!(?removed, "retention run"),
            Err(err) => tracing::warn!(error = %err, "retention run failed"),
        }
    }
}
