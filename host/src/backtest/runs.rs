//! A user's backtest runs: asked for over the API, checked and limited by plan, run in the
//! background on a blocking thread, their progress announced on the `backtests` channel and
//! their reports kept in `backtests` until deleted.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lookahead::Lookahead;
use super::report::{BacktestPosition, BacktestTrade, CurvePoint, Report};
use super::{Costs, Request};
use crate::App;
use crate::auth::Principal;
use crate::billing::plans::{Entitlement, Tier};
use crate::candles;
use crate::engine::metrics::PerformanceMetrics;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::events::Channel;
use crate::plugins::Registry;
use crate::store::backtests::{self as rows, BacktestRow};
use crate::store::{iso8601, new_id, now_ms, users};

/// What a plan allows: runs at once, and candles a run (symbols × steps).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunLimits {
    pub at_once: i64,
    pub candles: i64,
}

pub fn limits(tier: Tier) -> RunLimits {
    let (at_once, candles) = match tier {
        Tier::Free => (1, 200_000),
        Tier::Basic => (1, 1_000_000),
        Tier::Pro => (2, 5_000_000),
        Tier::Enterprise => (4, 20_000_000),
    };
    RunLimits { at_once, candles }
}

/// The cancel flags of the runs this process is running.
pub struct Runs {
    running: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// When this process began: runs recorded before then were another process's.
    since_ms: i64,
}

impl Default for Runs {
    fn default() -> Self {
        Runs {
            running: Mutex::default(),
            since_ms: now_ms(),
        }
    }
}

impl Runs {
    fn add(&self, id: &str) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(false));
        self.lock().insert(id.to_string(), flag.clone());
        flag
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn cancel(&self, id: &str) -> bool {
        match self.lock().get(id) {
            Some(flag) => {
                flag.store(true, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<AtomicBool>>> {
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A backtest as asked for over the API.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct NewBacktest {
    /// The strategy plugin.
    pub strategy: String,
    /// The version it must be (the installed one when left out).
    #[serde(default)]
    pub version: Option<String>,
    /// Settings of its configuration that differ from the installed ones.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub config: BTreeMap<String, Value>,
    pub symbols: Vec<String>,
    /// 1m, 5m or 1h.
    pub interval: String,
    /// The first step (ISO 8601, a date, or epoch ms).
    pub start: Value,
    /// The last step.
    pub end: Value,
    pub initial_capital: Value,
    #[serde(default)]
    pub fee_bps: Option<f64>,
    #[serde(default)]
    pub slippage_bps: Option<f64>,
    #[serde(default)]
    pub spread_bps: Option<f64>,
    /// Whose candles: a broker's name (downloaded through it when missing) or an import's
    /// source (default `paper`).
    #[serde(default)]
    pub source: Option<String>,
    /// low, medium or high (the trailing stop), default medium.
    #[serde(default)]
    pub risk_profile: Option<String>,
    /// Run the lookahead check after the backtest with this many cuts (1–20): the replay again
    /// on the data cut short, reporting every signal that changes without the later candles.
    #[serde(default)]
    pub lookahead_check: Option<u64>,
}

/// A run as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BacktestView {
    pub id: String,
    /// queued, running, completed, failed or cancelled.
    pub status: String,
    pub progress_pct: i64,
    pub candles: i64,
    pub error: Option<String>,
    pub strategy: String,
    pub symbols: Vec<String>,
    pub interval: String,
    pub source: String,
    pub start: String,
    pub end: String,
    pub initial_capital: Decimal,
    pub costs: Option<Costs>,
    pub config: BTreeMap<String, String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The figures of a completed (or cancelled) run: the platform's performance metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<PerformanceMetrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<BacktestSummary>,
    /// The lookahead check's findings, when the run asked for it and completed.
    pub lookahead: Option<Lookahead>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BacktestSummary {
    pub strategy_version: String,
    pub final_equity: Decimal,
    pub realized_pnl: Decimal,
    pub fees_paid: Decimal,
    pub sortino_ratio: f64,
    pub signals: u64,
    pub open_positions: usize,
    pub entries_refused: u64,
    pub loss_limit_days: u64,
    /// Threads the strategy's symbols were evaluated on.
    pub threads: usize,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BacktestTrades {
    pub trades: Vec<BacktestTrade>,
    pub open_positions: Vec<BacktestPosition>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BacktestEquity {
    pub points: Vec<CurvePoint>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BacktestDeleted {
    pub id: String,
    pub deleted: bool,
}

/// What the `backtests` channel carries.
#[derive(Debug, Serialize)]
struct Progress<'a> {
    backtest_id: &'a str,
    status: &'a str,
    progress_pct: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

/// The request a body asks for, or the first field at fault.
fn request_of(registry: &Registry, body: NewBacktest) -> ApiResult<Request> {
    let time = |name: &str, value: &Value| -> ApiResult<i64> {
        let parsed = match value {
            Value::String(text) => candles::parse_time(text),
            Value::Number(n) => n.as_i64(),
            _ => None,
        };
        parsed.ok_or_else(|| {
            ApiError::invalid_field(name, "a time: ISO 8601, a date, or epoch milliseconds")
        })
    };
    let initial_capital = match &body.initial_capital {
        Value::String(text) => text.trim().parse::<Decimal>().ok(),
        Value::Number(n) => n.to_string().parse::<Decimal>().ok(),
        _ => None,
    }
    .ok_or_else(|| ApiError::invalid_field("initial_capital", "an amount"))?;
    let mut config = BTreeMap::new();
    for (key, value) in body.config {
        let text = match value {
            Value::String(text) => text,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(ApiError::invalid_field(
                    "config",
                    format!("{key}: a string, number or boolean"),
                ));
            }
        };
        config.insert(key, text);
    }
    let costs =
        super::costs_overriding(registry, (body.fee_bps, body.slippage_bps, body.spread_bps));
    let lookahead_cuts = match body.lookahead_check {
        None => 0,
        Some(cuts) if (1..=super::MAX_LOOKAHEAD_CUTS as u64).contains(&cuts) => cuts as usize,
        Some(cuts) => {
            return Err(ApiError::invalid_field(
                "lookahead_check",
                format!("{cuts} cuts: between 1 and {}", super::MAX_LOOKAHEAD_CUTS),
            ));
        }
    };
    Ok(Request {
        strategy: body.strategy,
        config,
        symbols: body.symbols,
        interval: body.interval,
        source: body.source.unwrap_or_else(|| "paper".into()),
        from_ms: time("start", &body.start)?,
        to_ms: time("end", &body.end)?,
        initial_capital,
        costs,
        risk_profile: body.risk_profile.unwrap_or_else(|| "medium".into()),
        lookahead_cuts,
    })
}

/// Checks a run against the installed plugins and the user's plan, records it and starts it.
pub async fn start(app: &App, user: &Principal, body: NewBacktest) -> ApiResult<BacktestView> {
    let version = body.version.clone();
    let plan = super::plan(&app.plugins, request_of(&app.plugins, body)?)?;
    let installed = &plan.strategy.plugin.manifest.version;
    if let Some(version) = version.filter(|v| v != installed) {
        return Err(ApiError::invalid_field(
            "version",
            format!(
                "{version} is not installed; {} is at {installed}",
                plan.request.strategy
            ),
        ));
    }
    super::check_stored(&app.db, &app.plugins, &plan).await?;
    let now = now_ms();
    let row = users::by_id(&app.db.pool, &user.user_id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::NotFound))?;
    let entitlement = Entitlement::of(&row, now);
    let allowed = limits(entitlement.effective);
    let steps = (plan.request.to_ms - plan.request.from_ms) / plan.interval_ms + 1;
    // The lookahead check replays up to each cut again: about half the range a cut.
    let candles = steps
        .saturating_mul(plan.request.symbols.len() as i64)
        .saturating_mul(2 + plan.request.lookahead_cuts as i64)
        / 2;
    if candles > allowed.candles {
        return Err(ApiError::new(
            ErrorCode::ExceedsTierLimit,
            format!(
                "The run replays {candles} candles; the plan allows {} per run",
                allowed.candles
            ),
        )
        .detail("field", "end")
        .detail("limit", allowed.candles));
    }
    let running = rows::count_unfinished(&app.db.pool, &user.user_id).await?;
    if running >= allowed.at_once {
        return Err(ApiError::new(
            ErrorCode::ExceedsTierLimit,
            format!(
                "{running} backtests are running; the plan allows {} at once",
                allowed.at_once
            ),
        )
        .detail("limit", allowed.at_once));
    }
    let settings = crate::settings::load(app, &user.user_id, &entitlement).await?;
    let row = BacktestRow {
        id: new_id(),
        user_id: user.user_id.clone(),
        status: "queued".into(),
        request: serde_json::to_string(&plan.request)
            .map_err(|err| ApiError::internal(err.to_string()))?,
        progress_pct: 0,
        candles,
        error: None,
        report: None,
        created_at: now,
        started_at: None,
        finished_at: None,
    };
    rows::insert(&app.db.pool, &row).await?;
    let cancel = app.backtests.add(&row.id);
    let (task_app, id, user_id) = (app.clone(), row.id.clone(), user.user_id.clone());
    tokio::spawn(async move {
        let outcome = run(
            &task_app,
            &id,
            &user_id,
            plan,
            (entitlement, settings),
            cancel,
        )
        .await;
        task_app.backtests.remove(&id);
        if let Err(err) = outcome {
            let message = if err.is_internal() {
                tracing::error!(backtest = %id, error = ?err.log, "backtest failed");
                "the run failed on the server".to_string()
            } else {
                err.message.clone()
            };
            let _ = finish(&task_app, &id, &user_id, "failed", Some(&message), None).await;
        }
    });
    Ok(view(row, None))
}

async fn run(
    app: &App,
    id: &str,
    user_id: &str,
    plan: super::Plan,
    (entitlement, settings): (Entitlement, crate::settings::Settings),
    cancel: Arc<AtomicBool>,
) -> ApiResult<()> {
    rows::started(&app.db.pool, id, now_ms()).await?;
    announce(app, user_id, id, "running", 0, None);
    super::fill_from_broker(&app.db, &app.plugins, &plan).await?;
    let candles = super::load_candles(&app.db, &plan).await?;
    // Progress goes out from the blocking thread as whole percents; the row follows each tenth.
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<i64>();
    let registry = app.plugins.clone();
    let worker = tokio::task::spawn_blocking(move || {
        let mut last = -1;
        let mut progress = |done: f64| {
            let pct = (done * 100.0).floor() as i64;
            if pct != last {
                last = pct;
                let _ = sender.send(pct);
            }
        };
        super::execute(
            &registry,
            &plan,
            &candles,
            (entitlement, settings),
            (&cancel, super::cores()),
            &mut progress,
        )
    });
    let mut written = 0;
    while let Some(pct) = receiver.recv().await {
        announce(app, user_id, id, "running", pct, None);
        if pct >= written + 10 {
            written = pct;
            rows::progress(&app.db.pool, id, pct).await?;
        }
    }
    let report = worker
        .await
        .map_err(|err| ApiError::internal(err.to_string()))??;
    let status = if report.cancelled {
        "cancelled"
    } else {
        "completed"
    };
    let json = serde_json::to_string(&report).map_err(|err| ApiError::internal(err.to_string()))?;
    finish(app, id, user_id, status, None, Some(&json)).await
}

async fn finish(
    app: &App,
    id: &str,
    user_id: &str,
    status: &str,
    error: Option<&str>,
    report: Option<&str>,
) -> ApiResult<()> {
    if rows::finish(&app.db.pool, id, status, error, report, now_ms()).await? {
        let pct = if status == "completed" { 100 } else { -1 };
        announce(app, user_id, id, status, pct, error);
    }
    Ok(())
}

fn announce(app: &App, user_id: &str, id: &str, status: &str, pct: i64, error: Option<&str>) {
    app.events.publish(
        user_id,
        Channel::Backtests,
        if status == "running" {
            "backtest_progress"
        } else {
            "backtest_finished"
        },
        &Progress {
            backtest_id: id,
            status,
            progress_pct: pct.max(0),
            error,
        },
    );
}

pub async fn list(app: &App, user: &Principal) -> ApiResult<Vec<BacktestView>> {
    let listed = rows::list(&app.db.pool, &user.user_id).await?;
    Ok(listed.into_iter().map(|row| view(row, None)).collect())
}

async fn row_and_report(
    app: &App,
    user: &Principal,
    id: &str,
) -> ApiResult<(BacktestRow, Option<Report>)> {
    let row = rows::get(&app.db.pool, &user.user_id, id)
        .await?
        .ok_or_else(|| ApiError::code(ErrorCode::NotFound))?;
    let report = match &row.report {
        Some(json) => {
            Some(serde_json::from_str(json).map_err(|err| ApiError::internal(err.to_string()))?)
        }
        None => None,
    };
    Ok((row, report))
}

pub async fn detail(app: &App, user: &Principal, id: &str) -> ApiResult<BacktestView> {
    let (row, report) = row_and_report(app, user, id).await?;
    Ok(view(row, report.as_ref()))
}

/// The most runs compared at once.
pub const MAX_COMPARED: usize = 10;

/// Runs side by side.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BacktestComparison {
    /// The runs in the order asked for, as their detail shows them.
    pub runs: Vec<BacktestView>,
    /// Each figure of the reports with the runs' values in the same order, and the run that did
    /// best by it (none when they are equal).
    pub figures: Vec<ComparedFigure>,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ComparedFigure {
    pub name: String,
    pub values: Vec<f64>,
    pub best: Option<String>,
}

/// The user's runs `ids` (comma-separated, 2 to [`MAX_COMPARED`], each with a report) side by
/// side.
pub async fn compare(app: &App, user: &Principal, ids: &str) -> ApiResult<BacktestComparison> {
    let ids: Vec<&str> = ids
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .collect();
    if !(2..=MAX_COMPARED).contains(&ids.len()) {
        return Err(ApiError::invalid_field(
            "ids",
            format!("2 to {MAX_COMPARED} backtest ids, comma-separated"),
        ));
    }
    let mut runs = Vec::new();
    let mut figures: Vec<(String, Vec<f64>)> = Vec::new();
    for id in &ids {
        let (row, report) = row_and_report(app, user, id).await?;
        let Some(report) = report else {
            return Err(ApiError::invalid_field(
                "ids",
                format!("backtest {id} has no report yet ({})", row.status),
            ));
        };
        let values = report.figures();
        if figures.is_empty() {
            figures = values
                .iter()
                .map(|(name, _)| (name.clone(), Vec::new()))
                .collect();
        }
        for ((_, column), (_, value)) in figures.iter_mut().zip(values) {
            column.push(value);
        }
        runs.push(view(row, Some(&report)));
    }
    let figures = figures
        .into_iter()
        .map(|(name, values)| {
            let smaller = super::sweep::smaller_is_better(&name);
            let best = values
                .iter()
                .enumerate()
                .max_by(|(_, a), (_, b)| {
                    if smaller {
                        b.total_cmp(a)
                    } else {
                        a.total_cmp(b)
                    }
                })
                .filter(|(_, best)| values.iter().any(|v| v != *best))
                .map(|(i, _)| runs[i].id.clone());
            ComparedFigure { name, values, best }
        })
        .collect();
    Ok(BacktestComparison { runs, figures })
}

pub async fn trades(app: &App, user: &Principal, id: &str) -> ApiResult<BacktestTrades> {
    let (_, report) = row_and_report(app, user, id).await?;
    Ok(match report {
        Some(report) => BacktestTrades {
            trades: report.trades,
            open_positions: report.open_positions,
        },
        None => BacktestTrades {
            trades: Vec::new(),
            open_positions: Vec::new(),
        },
    })
}

pub async fn equity(app: &App, user: &Principal, id: &str) -> ApiResult<BacktestEquity> {
    let (_, report) = row_and_report(app, user, id).await?;
    Ok(BacktestEquity {
        points: report.map(|r| r.equity_curve).unwrap_or_default(),
    })
}

/// Asks a running run to stop; it ends `cancelled` with the report of what it replayed.
pub async fn cancel(app: &App, user: &Principal, id: &str) -> ApiResult<BacktestView> {
    let (row, report) = row_and_report(app, user, id).await?;
    if !matches!(row.status.as_str(), "queued" | "running") {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("The backtest has ended ({})", row.status),
        ));
    }
    if !app.backtests.cancel(id) {
        // Not running here (a stopped server left it): it ends now.
        finish(app, id, &user.user_id, "cancelled", None, None).await?;
    }
    let (row, _) = row_and_report(app, user, id).await.unwrap_or((row, report));
    Ok(view(row, None))
}

pub async fn delete(app: &App, user: &Principal, id: &str) -> ApiResult<BacktestDeleted> {
    app.backtests.cancel(id);
    if !rows::delete(&app.db.pool, &user.user_id, id).await? {
        return Err(ApiError::code(ErrorCode::NotFound));
    }
    Ok(BacktestDeleted {
        id: id.to_string(),
        deleted: true,
    })
}

/// At start: runs a stopped server left unfinished have failed.
pub async fn recover(app: &App) -> ApiResult<u64> {
    Ok(rows::fail_interrupted(&app.db.pool, app.backtests.since_ms, now_ms()).await?)
}

fn view(row: BacktestRow, report: Option<&Report>) -> BacktestView {
    let request: Option<Request> = serde_json::from_str(&row.request).ok();
    let request = request.as_ref();
    BacktestView {
        id: row.id,
        status: row.status,
        progress_pct: row.progress_pct,
        candles: row.candles,
        error: row.error,
        strategy: request.map(|r| r.strategy.clone()).unwrap_or_default(),
        symbols: request.map(|r| r.symbols.clone()).unwrap_or_default(),
        interval: request.map(|r| r.interval.clone()).unwrap_or_default(),
        source: request.map(|r| r.source.clone()).unwrap_or_default(),
        start: request.map(|r| iso8601(r.from_ms)).unwrap_or_default(),
        end: request.map(|r| iso8601(r.to_ms)).unwrap_or_default(),
        initial_capital: request.map(|r| r.initial_capital).unwrap_or_default(),
        costs: request.and_then(|r| r.costs),
        config: request.map(|r| r.config.clone()).unwrap_or_default(),
        created_at: iso8601(row.created_at),
        started_at: row.started_at.map(iso8601),
        finished_at: row.finished_at.map(iso8601),
        metrics: report.map(|r| r.metrics.clone()),
        summary: report.map(|r| BacktestSummary {
            strategy_version: r.strategy_version.clone(),
            final_equity: r.final_equity,
            realized_pnl: r.realized_pnl,
            fees_paid: r.fees_paid,
            sortino_ratio: r.sortino_ratio,
            signals: r.signals,
            open_positions: r.open_positions.len(),
            entries_refused: r.skipped.len() as u64 + r.skipped_more,
            loss_limit_days: r.loss_limit_days,
            threads: r.threads,
        }),
        lookahead: report.and_then(|r| r.lookahead.clone()),
    }
}
