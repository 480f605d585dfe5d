//! Account data: balance, positions, trade history, performance and statistics, read from the
//! user's committed state (the in-memory trader, loaded from the database).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::Serialize;

use super::accounting::{self, CompletedTrade, Position, float};
use super::metrics::{self, ClosedTrade, EquityPoint, PerformanceMetrics};
use super::totals;
use super::{BotStatus, read};
use crate::App;
use crate::api::query::{Page, Pagination};
use crate::auth::sessions::Principal;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::totals as store_totals;
use crate::store::{Filter, snapshots, trades};
use crate::store::{iso8601, now_ms};

/// A money figure for JSON: two decimals are not enough for crypto quantities, so 8.
fn money(value: Decimal) -> f64 {
    float(value.round_dp(8))
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Balance {
    pub broker: Option<String>,
    pub cash: f64,
    pub equity: f64,
    pub unrealized_pnl: f64,
    pub realized_pnl: f64,
    pub fees_paid: f64,
    pub buying_power: f64,
    pub initial_capital: f64,
    pub currency: String,
    pub last_updated: String,
}

pub async fn balance(app: &App, user: &Principal) -> ApiResult<Balance> {
    let cell = app.engine.cell(&user.user_id);
    let trader = read(app, &cell).await?;
    let account = &trader.account;
    // Before a bot has run, the balance belongs to the connection a start would use.
    let broker = match trader.bot.broker.is_empty() {
        false => Some(trader.bot.broker.clone()),
        true => super::control::default_broker(
            &crate::store::brokers::list(&app.db.pool, &user.user_id).await?,
        ),
    };
    Ok(Balance {
        broker,
        cash: money(account.cash),
        equity: money(trader.equity()),
        unrealized_pnl: money(accounting::unrealized_pnl(&trader.positions)),
        realized_pnl: money(account.realized_pnl),
        fees_paid: money(account.fees_paid),
        buying_power: money(accounting::buying_power(account, &trader.positions)),
        initial_capital: money(account.initial_capital),
        currency: account.currency.clone(),
        last_updated: iso8601(trader.bot.last_scan_at.unwrap_or_else(now_ms)),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct PositionView {
    pub position_id: String,
    pub symbol: String,
    pub side: accounting::Side,
    pub entry_price: f64,
    pub current_price: f64,
    pub size_usd: f64,
    pub quantity: f64,
    pub unrealized_pnl: f64,
    pub unrealized_pnl_pct: f64,
    pub stop_loss: Option<f64>,
    pub take_profit: Option<f64>,
    pub opened_at: String,
    pub broker: String,
    /// open, or closing: a close was asked for and is working or being retried.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close: Option<CloseView>,
}

/// A position's pending close.
#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct CloseView {
    pub reason: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<String>,
}

fn pct(part: Decimal, whole: Decimal) -> f64 {
    if whole.is_zero() {
        0.0
    } else {
        float((part / whole * Decimal::ONE_HUNDRED).round_dp(4))
    }
}

pub fn position_view(p: &Position) -> PositionView {
    PositionView {
        position_id: p.id.clone(),
        symbol: p.symbol.clone(),
        side: p.side,
        entry_price: money(p.entry_price),
        current_price: money(p.current_price),
        size_usd: money(p.cost_basis()),
        quantity: money(p.quantity),
        unrealized_pnl: money(p.unrealized_pnl()),
        unrealized_pnl_pct: pct(p.unrealized_pnl(), p.cost_basis()),
        stop_loss: p.stop_loss.map(money),
        take_profit: p.take_profit.map(money),
        opened_at: iso8601(p.opened_at_ms),
        broker: p.broker.clone(),
        status: if p.closing.is_some() {
            "closing"
        } else {
            "open"
        },
        close: p.closing.as_ref().map(|c| CloseView {
            reason: c.reason.clone(),
            attempts: c.attempts,
            last_error: c.last_error.clone(),
            next_attempt_at: (c.attempts > 0).then(|| iso8601(c.next_attempt_at)),
        }),
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct PositionSummary {
    pub total_positions: usize,
    pub total_value_usd: f64,
    pub total_unrealized_pnl: f64,
    pub total_unrealized_pnl_pct: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Positions {
    pub positions: Vec<PositionView>,
    pub summary: PositionSummary,
}

pub async fn positions(
    app: &App,
    user: &Principal,
    broker: Option<&str>,
    symbol: Option<&str>,
) -> ApiResult<Positions> {
    let cell = app.engine.cell(&user.user_id);
    let trader = read(app, &cell).await?;
    let symbol = symbol.map(str::to_uppercase);
    let selected: Vec<&Position> = trader
        .positions
        .iter()
        .filter(|p| broker.is_none_or(|b| p.broker == b))
        .filter(|p| symbol.as_deref().is_none_or(|s| p.symbol == s))
        .collect();
    let value: Decimal = selected.iter().map(|p| p.market_value()).sum();
    let basis: Decimal = selected.iter().map(|p| p.cost_basis()).sum();
    let unrealized: Decimal = selected.iter().map(|p| p.unrealized_pnl()).sum();
    Ok(Positions {
        summary: PositionSummary {
            total_positions: selected.len(),
            total_value_usd: money(value),
            total_unrealized_pnl: money(unrealized),
            total_unrealized_pnl_pct: pct(unrealized, basis),
        },
        positions: selected.into_iter().map(position_view).collect(),
    })
}

pub async fn position(app: &App, user: &Principal, position_id: &str) -> ApiResult<PositionView> {
    let cell = app.engine.cell(&user.user_id);
    let trader = read(app, &cell).await?;
    trader
        .position(position_id)
        .map(position_view)
        .ok_or_else(|| ApiError::code(ErrorCode::PositionNotFound))
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TradeRecord {
    pub trade_id: String,
    pub position_id: String,
    pub status: &'static str,
    pub symbol: String,
    pub side: accounting::Side,
    pub entry_price: f64,
    pub exit_price: Option<f64>,
    pub size_usd: f64,
    pub quantity: f64,
    pub realized_pnl: Option<f64>,
    pub realized_pnl_pct: Option<f64>,
    pub gross_pnl: Option<f64>,
    pub fees: f64,
    pub opened_at: String,
    pub closed_at: Option<String>,
    pub duration_minutes: Option<i64>,
    pub exit_reason: Option<String>,
    pub broker: String,
}

pub fn trade_record(t: &CompletedTrade) -> TradeRecord {
    TradeRecord {
        trade_id: t.id.clone(),
        position_id: t.position_id.clone(),
        status: "closed",
        symbol: t.symbol.clone(),
        side: t.side,
        entry_price: money(t.entry_price),
        exit_price: Some(money(t.exit_price)),
        size_usd: money(t.size_usd),
        quantity: money(t.quantity),
        realized_pnl: Some(money(t.net_pnl)),
        realized_pnl_pct: Some(float(t.pnl_pct)),
        gross_pnl: Some(money(t.gross_pnl)),
        fees: money(t.fees),
        opened_at: iso8601(t.opened_at_ms),
        closed_at: Some(iso8601(t.closed_at_ms)),
        duration_minutes: Some(t.duration_minutes),
        exit_reason: Some(t.exit_reason.clone()),
        broker: t.broker.clone(),
    }
}

fn open_record(p: &Position) -> TradeRecord {
    TradeRecord {
        trade_id: p.id.clone(),
        position_id: p.id.clone(),
        status: "open",
        symbol: p.symbol.clone(),
        side: p.side,
        entry_price: money(p.entry_price),
        exit_price: None,
        size_usd: money(p.cost_basis()),
        quantity: money(p.quantity),
        realized_pnl: None,
        realized_pnl_pct: None,
        gross_pnl: None,
        fees: money(p.entry_fees),
        opened_at: iso8601(p.opened_at_ms),
        closed_at: None,
        duration_minutes: None,
        exit_reason: None,
        broker: p.broker.clone(),
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct History {
    pub trades: Vec<TradeRecord>,
    pub pagination: Pagination,
}

/// Trade history: completed trades (`closed`), open positions (`open`), or both when no status
/// is given (open ones first). Orders the broker refused are not trades; `cancelled` is empty.
pub async fn history(
    app: &App,
    user: &Principal,
    filter: &Filter,
    status: Option<&str>,
    page: Page,
) -> ApiResult<History> {
    // Only the caller's own books, whatever the filter names.
    let filter = &Filter {
        user_id: Some(user.user_id.clone()),
        ..filter.clone()
    };
    let (want_open, want_closed) = match status {
        None => (true, true),
        Some("open") => (true, false),
        Some("closed") => (false, true),
        Some("cancelled") => (false, false),
        Some(other) => {
            return Err(ApiError::invalid_field(
                "status",
                format!("`{other}` is not one of open, closed, cancelled"),
            ));
        }
    };
    let open: Vec<TradeRecord> = if want_open {
        let cell = app.engine.cell(&user.user_id);
        let trader = read(app, &cell).await?;
        let mut open: Vec<&Position> = trader
            .positions
            .iter()
            .filter(|p| filter.symbol.as_deref().is_none_or(|s| p.symbol == s))
            .filter(|p| filter.from_ms.is_none_or(|from| p.opened_at_ms >= from))
            .filter(|p| filter.until_ms.is_none_or(|until| p.opened_at_ms <= until))
            .collect();
        open.sort_by_key(|p| std::cmp::Reverse(p.opened_at_ms));
        open.into_iter().map(open_record).collect()
    } else {
        Vec::new()
    };
    let open_count = open.len() as i64;
    let offset = page.offset();
    let mut trades: Vec<TradeRecord> = open
        .into_iter()
        .skip(offset as usize)
        .take(page.per_page as usize)
        .collect();
    let mut total = open_count;
    if want_closed {
        let closed_offset = (offset - open_count).max(0);
        let room = page.per_page - trades.len() as i64;
        let closed = trades::page(&app.db, filter, Some(room.max(0)), closed_offset).await?;
        trades.extend(closed.iter().map(|owned| trade_record(&owned.row)));
        total += trades::count(&app.db, filter).await?;
    }
    Ok(History {
        trades,
        pagination: page.info(total),
    })
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Period {
    Days7,
    Days30,
    Days90,
    Year,
    All,
}

impl Period {
    pub fn parse(raw: Option<&str>) -> ApiResult<Period> {
        match raw.unwrap_or("30d") {
            "7d" => Ok(Period::Days7),
            "30d" => Ok(Period::Days30),
            "90d" => Ok(Period::Days90),
            "1y" => Ok(Period::Year),
            "all" => Ok(Period::All),
            other => Err(ApiError::invalid_field(
                "period",
                format!("`{other}` is not one of 7d, 30d, 90d, 1y, all"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Days7 => "7d",
            Period::Days30 => "30d",
            Period::Days90 => "90d",
            Period::Year => "1y",
            Period::All => "all",
        }
    }

    pub fn since(self, now: i64) -> i64 {
        let days = match self {
            Period::Days7 => 7,
            Period::Days30 => 30,
            Period::Days90 => 90,
            Period::Year => 365,
            Period::All => return 0,
        };
        now - days * super::trader::DAY_MS
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct DatedValue {
    pub date: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pnl: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub equity: Option<f64>,
    /// Percent below the running peak of equity (≤ 0), the day's deepest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawdown_pct: Option<f64>,
}

impl DatedValue {
    fn empty(date: impl ToString) -> Self {
        Self {
            date: date.to_string(),
            pnl: None,
            equity: None,
            drawdown_pct: None,
        }
    }

    fn pnl(date: impl ToString, pnl: f64) -> Self {
        Self {
            pnl: Some(metrics::finite(pnl)),
            ..Self::empty(date)
        }
    }

    fn equity(date: impl ToString, equity: f64) -> Self {
        Self {
            equity: Some(metrics::finite(equity)),
            ..Self::empty(date)
        }
    }

    fn drawdown_pct(date: impl ToString, pct: f64) -> Self {
        Self {
            drawdown_pct: Some(metrics::finite(pct)),
            ..Self::empty(date)
        }
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Performance {
    pub period: &'static str,
    pub metrics: PerformanceMetrics,
    pub daily_pnl: Vec<DatedValue>,
    pub equity_curve: Vec<DatedValue>,
    pub drawdown_curve: Vec<DatedValue>,
}

pub fn closed_trade(t: &CompletedTrade) -> ClosedTrade {
    ClosedTrade {
        net_pnl: float(t.net_pnl),
        gross_pnl: float(t.gross_pnl),
        fees: float(t.fees),
        size_usd: float(t.size_usd),
        opened_at_ms: t.opened_at_ms,
        closed_at_ms: t.closed_at_ms,
    }
}

/// Trades and the equity series of a period, with the current equity as the last point.
pub async fn series(
    app: &App,
    user_id: &str,
    since: i64,
) -> ApiResult<(Vec<CompletedTrade>, Vec<EquityPoint>, f64)> {
    let (equity, initial) = equity_series(app, user_id, since).await?;
    let trades = trades::trades_since(&app.db.pool, user_id, since).await?;
    Ok((trades, equity, initial))
}

/// The equity series of a period with the current equity as the last point, and the initial
/// capital.
pub async fn equity_series(
    app: &App,
    user_id: &str,
    since: i64,
) -> ApiResult<(Vec<EquityPoint>, f64)> {
    let cell = app.engine.cell(user_id);
    let (current, initial) = {
        let trader = read(app, &cell).await?;
        (
            float(trader.equity()),
            float(trader.account.initial_capital),
        )
    };
    // Up to a week at full resolution (a point a minute at most); longer periods hourly.
    let bucket = (now_ms() - since > 7 * super::trader::DAY_MS).then_some(3_600_000);
    let mut equity: Vec<EquityPoint> =
        snapshots::equity_since(&app.db.pool, user_id, since, bucket)
            .await?
            .into_iter()
            .map(|(at_ms, equity)| EquityPoint {
                at_ms,
                equity: float(equity),
            })
            .collect();
    if equity.is_empty() {
        equity.push(EquityPoint {
            at_ms: since.max(0),
            equity: initial,
        });
    }
    equity.push(EquityPoint {
        at_ms: now_ms(),
        equity: current,
    });
    Ok((equity, initial))
}

pub async fn performance(app: &App, user: &Principal, period: Period) -> ApiResult<Performance> {
    let (trades, equity, initial) = series(app, &user.user_id, period.since(now_ms())).await?;
    let closed: Vec<ClosedTrade> = trades.iter().map(closed_trade).collect();
    let metrics = metrics::performance(&closed, &equity, initial);
    Ok(Performance {
        period: period.as_str(),
        daily_pnl: metrics::daily_pnl(&closed)
            .into_iter()
            .map(|(date, pnl)| DatedValue::pnl(date, pnl))
            .collect(),
        equity_curve: metrics::daily_close(&equity)
            .into_iter()
            .map(|(date, equity)| DatedValue::equity(date, equity))
            .collect(),
        drawdown_curve: metrics::daily_drawdown(&equity)
            .into_iter()
            .map(|(date, pct)| DatedValue::drawdown_pct(date, pct))
            .collect(),
        metrics,
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Stats {
    pub account: AccountStats,
    pub trading: TradingStats,
    pub risk: RiskStats,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct AccountStats {
    pub user_id: String,
    pub subscription_tier: String,
    pub account_age_days: i64,
    pub total_deposits: f64,
    pub total_withdrawals: f64,
    pub current_balance: f64,
    pub all_time_high: f64,
    pub all_time_low: f64,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TradingStats {
    pub total_trades_all_time: usize,
    pub total_volume_usd: f64,
    pub total_fees_paid: f64,
    pub best_month: Option<metrics::MonthlyPnl>,
    pub current_streak: StreakView,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct StreakView {
    /// `win`, `loss` or `none`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub count: u64,
    #[schema(format = DateTime)]
    pub started: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct RiskStats {
    /// The user's `trading.risk_level` setting.
    pub current_risk_level: String,
    pub max_position_size_usd: f64,
    pub max_positions: u32,
    pub current_leverage: f64,
    pub available_leverage: f64,
    pub bot_status: BotStatus,
}

/// Read from the account's running totals (kept by its trader) and its per-day totals, never
/// its trades.
pub async fn stats(app: &App, user: &Principal) -> ApiResult<Stats> {
    let user_row = &user.user;
    let (equity, initial) = equity_series(app, &user.user_id, 0).await?;
    let months: BTreeMap<_, f64> =
        totals::monthly(&store_totals::days_since(&app.db.pool, &user.user_id, 0).await?)
            .into_iter()
            .map(|(month, tally)| (month, float(tally.net_pnl)))
            .collect();
    let now = now_ms();
    let cell = app.engine.cell(&user.user_id);
    let trader = read(app, &cell).await?;
    let totals = &trader.stats.trades;
    let current = float(trader.equity());
    let high = equity.iter().map(|p| p.equity).fold(initial, f64::max);
    let low = equity.iter().map(|p| p.equity).fold(initial, f64::min);
    let streak = totals.current_streak();
    let limits = trader.entitlement.limits();
    let exposure = float(accounting::exposure(&trader.positions));
    Ok(Stats {
        account: AccountStats {
            user_id: user.user_id.clone(),
            subscription_tier: user_row.subscription_tier.clone(),
            account_age_days: (now - user_row.created_at).max(0) / super::trader::DAY_MS,
            total_deposits: initial,
            total_withdrawals: 0.0,
            current_balance: current,
            all_time_high: high,
            all_time_low: low,
        },
        trading: TradingStats {
            total_trades_all_time: totals.sums.trades as usize,
            total_volume_usd: money(totals.volume),
            total_fees_paid: money(
                totals.fees
                    + trader
                        .positions
                        .iter()
                        .map(|p| p.entry_fees)
                        .sum::<Decimal>(),
            ),
            best_month: metrics::best_month(&months, &equity, initial),
            current_streak: StreakView {
                kind: streak.kind,
                count: streak.count,
                started: streak.started_ms.map(iso8601),
            },
        },
        risk: RiskStats {
            current_risk_level: trader.settings.trading.risk_level.clone(),
            max_position_size_usd: trader
                .entitlement
                .max_position_size_usd(trader.bot.paper_trading != 0),
            max_positions: limits.max_positions,
            current_leverage: if current > 0.0 {
                metrics::finite(exposure / current)
            } else {
                0.0
            },
            available_leverage: 1.0,
            bot_status: BotStatus::parse(&trader.bot.status),
        },
    })
}
