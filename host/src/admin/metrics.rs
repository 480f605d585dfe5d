//! Platform metrics for operators, from real counters: the JSON of `GET /admin/metrics` and the
//! same figures in Prometheus' text format at `/metrics`.

use std::fmt::Write as _;

use rust_decimal::Decimal;
use serde::Serialize;

use crate::App;
use crate::engine::accounting::float;
use crate::error::ApiResult;
use crate::store::{DAY_MS, Filter, billing, bots, ledger, now_ms, positions, trades, users};

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

pub async fn collect(app: &App) -> ApiResult<Metrics> {
    let db = &app.db.pool;
    let day_ago = now_ms() - DAY_MS;
    let tiers = users::count_by_tier(db).await?;
    let tier_count = |tier: &str| tiers.iter().find(|(t, _)| t == tier).map_or(0, |(_, n)| *n);
    // Revenue from recorded subscriptions: the monthly equivalent of every active one; churn is
    // the share of subscriptions live 30 days ago (or started since) that have been cancelled.
    let subscriptions = billing::subscription_figures(db, now_ms() - 30 * DAY_MS).await?;
    let mrr = float((subscriptions.monthly + subscriptions.yearly / Decimal::from(12)).round_dp(2));
    let volume = ledger::notional_since(db, day_ago).await?;
    let last_day = Filter {
        from_ms: Some(day_ago),
        ..Filter::default()
    };
    let minute = app.requests.minute();
    Ok(Metrics {
        users: UserFigures {
            total: tiers.iter().map(|(_, n)| n).sum(),
            active_today: users::count_active_since(db, day_ago).await?,
            free: tier_count("free"),
            basic: tier_count("basic"),
            pro: tier_count("pro"),
            enterprise: tier_count("enterprise"),
        },
        trading: TradingFigures {
            bots_running: bots::count_active(db).await?,
            total_positions: positions::count_open(db, &Filter::default()).await?,
            total_volume_24h: float(volume.round_dp(2)),
            total_trades_24h: trades::count(&app.db, &last_day).await?,
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
            churn_rate: if subscriptions.base == 0 {
                0.0
            } else {
                subscriptions.churned as f64 / subscriptions.base as f64
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
    let bus = app.cluster.status();
    let instance = format!("{{instance=\"{}\"}}", app.cluster.instance());
    metric(
        "tradehost_instance_info",
        "gauge",
        "This instance's id (TRADEHOST_INSTANCE_ID), and 1 while it is joined to others through Redis.",
        &[(instance.as_str(), f64::from(u8::from(bus.clustered)))],
    );
    metric(
        "tradehost_cluster_bus_subscribed",
        "gauge",
        "1 while this instance hears the others (its Redis subscription is up).",
        &[("", f64::from(u8::from(bus.subscribed)))],
    );
    metric(
        "tradehost_cluster_messages_total",
        "counter",
        "Messages between instances: published by this one, received from others, and lost (not published, or not handled).",
        &[
            ("{direction=\"published\"}", bus.published as f64),
            ("{direction=\"received\"}", bus.received as f64),
            ("{direction=\"lost\"}", bus.lost as f64),
        ],
    );
    metric(
        "tradehost_bot_leases_held",
        "gauge",
        "Users whose trading this instance owns (several instances: their leases).",
        &[("", app.engine.leases_held() as f64)],
    );
    metric(
        "tradehost_book_writes_refused_total",
        "counter",
        "Writes of the books refused because their user's lease had moved to another instance.",
        &[("", app.db.writes_refused() as f64)],
    );
    let limits = app.limiter.status();
    metric(
        "tradehost_rate_limits_shared",
        "gauge",
        "1 while rate limits are counted in Redis for every instance; 0 while this instance counts on its own (no REDIS_URL, or Redis not answering).",
        &[("", f64::from(u8::from(limits.shared && limits.reachable)))],
    );
    metric(
        "tradehost_rate_limit_fallback_decisions_total",
        "counter",
        "Rate-limit decisions made in this instance's memory because Redis did not answer.",
        &[("", limits.fallback_decisions as f64)],
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
