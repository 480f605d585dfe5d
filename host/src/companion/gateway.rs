//! Companion set B: the minimal mobile gateway under `/api/v1` (start, stop, balance, positions,
//! performance) with its own shapes, over the engine's real figures.

use serde::Serialize;

use super::{backend, round2};
use crate::App;
use crate::auth::Principal;
use crate::engine::accounting::float;
use crate::engine::metrics;
use crate::engine::{self, StopRequest, reports};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::{iso8601, now_ms, totals as store_totals, trades};

fn now() -> String {
    iso8601(now_ms())
}

const GATEWAY_VERSION: &str = "1.0.0";

/// The service's name, the gateway's API version, the default strategy and where the docs are.
#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct RootInfo {
    /// `tradehost`.
    pub name: &'static str,
    /// The gateway's own API version (companion-routes.md, Versioning), not the server's.
    #[schema(example = "1.0.0")]
    pub version: &'static str,
    /// The default strategy plugin.
    #[schema(example = "ema-cross")]
    pub strategy: String,
    /// `operational`.
    pub status: &'static str,
    /// `/api/docs`.
    pub docs: &'static str,
}

pub fn root(app: &App) -> RootInfo {
    RootInfo {
        name: "tradehost",
        version: GATEWAY_VERSION,
        strategy: app.config.default_strategy.clone(),
        status: "operational",
        docs: "/api/docs",
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = GatewayControl)]
pub struct Control {
    pub success: bool,
    pub message: &'static str,
    pub status: String,
    pub timestamp: String,
}

pub async fn start(app: &App, user: &Principal) -> ApiResult<Control> {
    let not_enabled =
        ApiError::new(ErrorCode::NoBrokerConfigured, backend::NOT_ENABLED).with_status(403);
    backend::start(app, user, not_enabled)
        .await
        .map_err(|err| match err.code {
            ErrorCode::AlreadyRunning => err
                .with_message("Trading is already running")
                .with_status(400),
            _ => err,
        })?;
    // The gateway knows two states: a bot that is starting is reported as running.
    Ok(Control {
        success: true,
        message: "Trading engine started successfully",
        status: "running".into(),
        timestamp: now(),
    })
}

pub async fn stop(app: &App, user: &Principal) -> ApiResult<Control> {
    engine::stop(app, user, StopRequest::default())
        .await
        .map_err(|err| match err.code {
            ErrorCode::NotRunning => err.with_message("Already stopped"),
            _ => err,
        })?;
    Ok(Control {
        success: true,
        message: "Trading engine stopped successfully",
        status: "stopped".into(),
        timestamp: now(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = GatewayBalance)]
pub struct Balance {
    pub success: bool,
    pub balance: f64,
    pub currency: String,
    pub available_for_trading: f64,
    pub broker: Option<String>,
    pub timestamp: String,
}

pub async fn balance(app: &App, user: &Principal) -> ApiResult<Balance> {
    let balance = reports::balance(app, user).await?;
    let broker = balance.broker;
    Ok(Balance {
        success: true,
        balance: balance.equity,
        currency: balance.currency,
        available_for_trading: balance.buying_power,
        broker,
        timestamp: now(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = GatewayPosition)]
pub struct Position {
    pub pair: String,
    pub side: &'static str,
    pub size: f64,
    pub entry_price: f64,
    pub current_price: f64,
    pub unrealized_pnl: f64,
    pub unrealized_pnl_percent: f64,
    pub stop_loss: Option<f64>,
    pub take_profit: Option<f64>,
    pub opened_at: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = GatewayPositions)]
pub struct Positions {
    pub success: bool,
    pub positions: Vec<Position>,
    pub total_positions: usize,
    pub total_unrealized_pnl: Option<f64>,
    pub timestamp: String,
}

pub async fn positions(app: &App, user: &Principal) -> ApiResult<Positions> {
    let open = reports::positions(app, user, None, None).await?;
    let positions: Vec<Position> = open
        .positions
        .into_iter()
        .map(|p| Position {
            pair: p.symbol,
            side: p.side.as_str(),
            size: p.quantity,
            entry_price: p.entry_price,
            current_price: p.current_price,
            unrealized_pnl: p.unrealized_pnl,
            unrealized_pnl_percent: p.unrealized_pnl_pct,
            stop_loss: p.stop_loss,
            take_profit: p.take_profit,
            opened_at: p.opened_at,
        })
        .collect();
    Ok(Positions {
        success: true,
        total_positions: positions.len(),
        total_unrealized_pnl: (!positions.is_empty()).then_some(open.summary.total_unrealized_pnl),
        positions,
        timestamp: now(),
    })
}

/// The periods the gateway accepts, with how far back each reaches.
fn period_start(period: &str, now: i64) -> ApiResult<i64> {
    const DAY: i64 = 86_400_000;
    match period {
        "all_time" => Ok(0),
        "30d" => Ok(now - 30 * DAY),
        "7d" => Ok(now - 7 * DAY),
        "24h" => Ok(now - DAY),
        other => Err(ApiError::invalid_field(
            "period",
            format!("`{other}` is not one of all_time, 30d, 7d, 24h"),
        )
        .detail("in", "query")),
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = GatewayMetrics)]
pub struct Metrics {
    pub total_trades: u64,
    pub winning_trades: u64,
    pub losing_trades: u64,
    pub win_rate: f64,
    pub total_pnl: f64,
    pub total_profit: f64,
    pub total_loss: f64,
    pub average_win: f64,
    pub average_loss: f64,
    pub profit_factor: Option<f64>,
    pub sharpe_ratio: Option<f64>,
    pub max_drawdown: Option<f64>,
    pub active_positions: usize,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = GatewayPerformance)]
pub struct Performance {
    pub success: bool,
    pub metrics: Metrics,
    pub period: String,
    pub timestamp: String,
}

pub async fn performance(
    app: &App,
    user: &Principal,
    period: Option<&str>,
) -> ApiResult<Performance> {
    let period = period.unwrap_or("all_time");
    let since = period_start(period, now_ms())?;
    // All time from the account's running totals; a window summed by the database.
    let totals = if since == 0 {
        store_totals::get(&app.db.pool, &user.user_id).await?.sums
    } else {
        trades::sums_since(&app.db.pool, &user.user_id, since).await?
    };
    let (equity, _) = reports::equity_series(app, &user.user_id, since).await?;
    // Losses as a positive number, as the gateway shows them.
    let (profit, loss) = (float(totals.profit), -float(totals.loss));
    let open = reports::positions(app, user, None, None).await?;
    let daily = metrics::daily_close(&equity);
    let average = |sum: f64, count: u64| {
        if count == 0 {
            0.0
        } else {
            round2(sum / count as f64)
        }
    };
    Ok(Performance {
        success: true,
        metrics: Metrics {
            total_trades: totals.trades,
            winning_trades: totals.winners,
            losing_trades: totals.losers,
            win_rate: totals.win_rate_pct(),
            total_pnl: round2(float(totals.net_pnl)),
            total_profit: round2(profit),
            total_loss: round2(loss),
            average_win: average(profit, totals.winners),
            average_loss: average(loss, totals.losers),
            profit_factor: (loss > 0.0).then(|| round2(profit / loss)),
            // Daily returns need at least two closes (three days of equity).
            sharpe_ratio: (daily.len() >= 3)
                .then(|| round2(metrics::sharpe(&metrics::daily_returns(&daily)))),
            max_drawdown: Some(round2(-metrics::drawdown(&equity).max_drawdown_pct)),
            active_positions: open.positions.len(),
        },
        period: period.to_string(),
        timestamp: now(),
    })
}
