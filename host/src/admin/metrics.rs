//! Platform metrics for operators, from real counters: the JSON of `GET /admin/metrics` and the
//! same figures in Prometheus' text format at `/metrics`.

use std::fmt::Write as _;

use crate::store::{Executes, on};
use rust_decimal::Decimal;
use serde::Serialize;

use crate::App;
use crate::engine::accounting::float;
use crate::error::ApiResult;
use crate::store::now_ms;

use crate::store::DAY_MS;

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserFigures {
    pub total: i64,
    pub active_today: i64,
    pub free: i64,
    pub basic: i64,
    pub pro: i64,
    pub enterprise: i64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TradingFigures {
    pub bots_running: i64,
    pub total_positions: i64,
    pub total_volume_24h: f64,
    pub total_trades_24h: i64,
    pub bot_scans_total: u64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct SystemFigures {
    pub api_requests_per_second: f64,
    pub avg_response_time_ms: f64,
    /// Share of 5xx answers over the last minute (0 to 1).
    pub error_rate: f64,
    pub uptime_pct: f64,
    pub uptime_seconds: u64,
    pub websocket_users: usize,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct RevenueFigures {
    pub mrr: f64,
    pub arr: f64,
    pub churn_rate: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = AdminMetrics)]
pub struct Metrics {
    pub users: UserFigures,
    pub trading: TradingFigures,
    pub system: SystemFigures,
    pub revenue: RevenueFigures,
}

async fn count<'e>(
    exec: impl Executes<'e>,
    sql: &'static str,
    since: Option<i64>,
) -> sqlx::Result<i64> {
    on!(exec, |c| match since {
        Some(since) => sqlx::query_scalar(sql).bind(since).fetch_one(c).await,
        None => sqlx::query_scalar(sql).fetch_one(c).await,
    })
}

pub async fn collect(app: &App) -> ApiResult<Metrics> {
    let db = &app.db.pool;
    let day_ago = now_ms() - DAY_MS;
    let tiers: Vec<(String, i64)> = on!(db, |c| sqlx::query_as(
        "SELECT subscription_tier, COUNT(*) FROM users GROUP BY subscription_tier"
    )
    .fetch_all(c)
    .await)?;
    let tier_count = |tier: &str| tiers.iter().find(|(t, _)| t == tier).map_or(0, |(_, n)| *n);
    // Revenue from recorded subscriptions: the monthly equivalent of every active one; churn is
    // the share of subscriptions live 30 days ago (or started since) that have been cancelled.
    let subscriptions: Vec<(String, String, String, Option<i64>)> = on!(db, |c| sqlx::query_as(
        "SELECT status, billing_interval, amount, cancelled_at FROM subscriptions"
    )
    .fetch_all(c)
    .await)?;
    let month_ago = now_ms() - 30 * DAY_MS;
    let mrr: Decimal = subscriptions
        .iter()
        .filter(|(status, ..)| status == "active")
        .map(|(_, interval, amount, _)| {
            let amount: Decimal = amount.parse().unwrap_or_default();
            if interval == "yearly" {
                amount / Decimal::from(12)
            } else {
                amount
            }
        })
        .sum();
    let churned = subscriptions
        .iter()
        .filter(|(status, .., cancelled)| {
            status == "cancelled" && cancelled.is_some_and(|at| at >= month_ago)
        })
        .count();
    let base = subscriptions
        .iter()
        .filter(|(status, .., cancelled)| {
            status != "cancelled" || cancelled.is_some_and(|at| at >= month_ago)
        })
        .count();
    let mrr = float(mrr.round_dp(2));
    let notional: Vec<String> = on!(db, |c| sqlx::query_scalar(
        "SELECT notional FROM ledger WHERE created_at >= $1"
    )
    .bind(day_ago)
    .fetch_all(c)
    .await)?;
    let volume: Decimal = notional
        .iter()
        .filter_map(|n| n.parse::<Decimal>().ok())
        .sum();
    let minute = app.requests.minute();
    Ok(Metrics {
        users: UserFigures {
            total: tiers.iter().map(|(_, n)| n).sum(),
            active_today: count(
                db,
                "SELECT COUNT(*) FROM users WHERE last_active_at >= $1",
                Some(day_ago),
            )
            .await?,
            free: tier_count("free"),
            basic: tier_count("basic"),
            pro: tier_count("pro"),
            enterprise: tier_count("enterprise"),
        },
        trading: TradingFigures {
            bots_running: count(
                db,
                "SELECT COUNT(*) FROM bots WHERE status IN ('starting', 'running', 'paused')",
                None,
            )
            .await?,
            total_positions: count(
                db,
                "SELECT COUNT(*) FROM positions WHERE status = 'open'",
                None,
            )
            .await?,
            total_volume_24h: float(volume.round_dp(2)),
            total_trades_24h: count(
                db,
                "SELECT COUNT(*) FROM trades WHERE closed_at >= $1",
                Some(day_ago),
            )
            .await?,
            bot_scans_total: app.engine.scans_completed(),
        },
        system: SystemFigures {
            api_requests_per_second: minute.requests_per_second,
            avg_response_time_ms: minute.avg_response_time_ms,
            error_rate: minute.error_rate,
            // Of the time since this process started, the share it has been serving: all of it.
            uptime_pct: 100.0,
            uptime_seconds: app.requests.uptime().as_secs(),
            websocket_users: app.events.connected_users(),
        },
        revenue: RevenueFigures {
            mrr,
            arr: mrr * 12.0,
            churn_rate: if base == 0 {
                0.0
            } else {
                churned as f64 / base as f64
            },
        },
    })
}

/// The metrics in Prometheus' text exposition format.
pub async fn prometheus(app: &App) -> ApiResult<String> {
    let metrics = collect(app).await?;
    let (requests, errors, seconds) = app.requests.totals();
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(&str, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    metric(
        "tradehost_http_requests_total",
        "counter",
        "HTTP requests answered.",
        &[("", requests as f64)],
    );
    metric(
        "tradehost_http_server_errors_total",
        "counter",
        "HTTP answers with a 5xx status.",
        &[("", errors as f64)],
    );
    metric(
        "tradehost_http_response_seconds_total",
        "counter",
        "Summed response time.",
        &[("", seconds)],
    );
    metric(
        "tradehost_uptime_seconds",
        "gauge",
        "Seconds since the process started.",
        &[("", metrics.system.uptime_seconds as f64)],
    );
    let u = &metrics.users;
    metric(
        "tradehost_users",
        "gauge",
        "Users by subscription tier.",
        &[
            ("{tier=\"free\"}", u.free as f64),
            ("{tier=\"basic\"}", u.basic as f64),
            ("{tier=\"pro\"}", u.pro as f64),
            ("{tier=\"enterprise\"}", u.enterprise as f64),
        ],
    );
    metric(
        "tradehost_users_active_24h",
        "gauge",
        "Users active in the last 24 hours.",
        &[("", u.active_today as f64)],
    );
    let t = &metrics.trading;
    metric(
        "tradehost_bots_active",
        "gauge",
        "Bots starting, running or paused.",
        &[("", t.bots_running as f64)],
    );
    metric(
        "tradehost_open_positions",
        "gauge",
        "Open positions.",
        &[("", t.total_positions as f64)],
    );
    metric(
        "tradehost_bot_scans_total",
        "counter",
        "Bot scans completed by this process.",
        &[("", t.bot_scans_total as f64)],
    );
    metric(
        "tradehost_trades_24h",
        "gauge",
        "Trades closed in the last 24 hours.",
        &[("", t.total_trades_24h as f64)],
    );
    metric(
        "tradehost_volume_24h_usd",
        "gauge",
        "Traded notional in the last 24 hours.",
        &[("", t.total_volume_24h)],
    );
    metric(
        "tradehost_websocket_users",
        "gauge",
        "Users with a live WebSocket.",
        &[("", metrics.system.websocket_users as f64)],
    );
    metric(
        "tradehost_mrr_usd",
        "gauge",
        "Monthly recurring revenue of paid tiers.",
        &[("", metrics.revenue.mrr)],
    );
    Ok(out)
}
