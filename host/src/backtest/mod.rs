//! Backtests: a strategy replayed over stored candles with the live engine's parts (see
//! [`replay`]), and the report of a run with the platform's performance figures.

pub mod costs;
pub mod lookahead;
pub mod replay;
pub mod report;
pub mod runs;
pub mod spread;
pub mod sweep;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::billing::plans::Entitlement;
use crate::candles::{self, interval_ms};
use crate::engine::Trader;
use crate::engine::accounting::Account;
use crate::engine::scan::CANDLE_HISTORY;
use crate::error::{ApiError, ApiResult};
use crate::plugins::bindings::risk_rule::{ProposedOrder, RiskContext};
use crate::plugins::bindings::strategy::{Evaluation, ScanContext};
use crate::plugins::bindings::strategy_replay::exports::tradehost::plugin::replay::{
    SeriesKey, StepContext,
};
use crate::plugins::bindings::types::{Candle, Signal, Verdict};
use crate::plugins::runtime::CallTarget;
use crate::plugins::session::{CallPath, RuleSession, StrategySession};
use crate::plugins::{Active, PluginKind, Registry};
use crate::settings::Settings;
use crate::store::Db;
use crate::store::bots::BotRow;

pub use costs::Costs;
pub use replay::Outcome;
pub use report::Report;

/// Symbols one run may trade at most.
pub const MAX_SYMBOLS: usize = 50;

/// What to backtest.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Request {
    pub strategy: String,
    /// Settings of the strategy's configuration that differ from the installed ones.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    pub symbols: Vec<String>,
    /// 1m, 5m or 1h: the candles replayed and the strategy's interval.
    pub interval: String,
    /// Whose candles: a broker's name for downloaded series, or an import's source.
    #[serde(default = "default_source")]
    pub source: String,
    /// The first step: candles closing from here on are traded, earlier ones are history.
    pub from_ms: i64,
    pub to_ms: i64,
    pub initial_capital: Decimal,
    /// The paper broker's costs unless given.
    #[serde(default)]
    pub costs: Option<Costs>,
    /// Sets the trailing stop as a bot's risk profile does: low, medium or high.
    #[serde(default = "default_risk_profile")]
    pub risk_profile: String,
    /// Cuts of the lookahead check run after the backtest; none when 0.
    #[serde(default)]
    pub lookahead_cuts: usize,
}

/// The most cuts a lookahead check makes.
pub const MAX_LOOKAHEAD_CUTS: usize = 20;

fn default_source() -> String {
    "paper".into()
}

fn default_risk_profile() -> String {
    "medium".into()
}

/// What a run is checked and resolved to before any candle is read.
#[derive(Clone)]
pub struct Plan {
    pub request: Request,
    pub interval_ms: i64,
    pub strategy: Arc<Active>,
    /// The strategy's call target with the run's configuration.
    pub target: CallTarget,
    pub costs: Costs,
}

/// The paper broker's configured costs: a run's unless it overrides them.
fn paper_costs(registry: &Registry) -> Costs {
    registry
        .active(PluginKind::Broker, "paper")
        .map(|paper| Costs::of_config(&paper.target.config))
        .unwrap_or_default()
}

/// The costs of a run that overrides some of fee, slippage and spread (in basis points): the
/// paper broker's for the others. `None` when none is given.
pub fn costs_overriding(
    registry: &Registry,
    (fee, slippage, spread): (Option<f64>, Option<f64>, Option<f64>),
) -> Option<Costs> {
    if fee.is_none() && slippage.is_none() && spread.is_none() {
        return None;
    }
    let paper = paper_costs(registry);
    Some(Costs {
        fee_bps: fee.unwrap_or(paper.fee_bps),
        slippage_bps: slippage.unwrap_or(paper.slippage_bps),
        spread_bps: spread.unwrap_or(paper.spread_bps),
    })
}

/// Checks a request against what is installed, naming the field at fault.
pub fn plan(registry: &Registry, mut request: Request) -> ApiResult<Plan> {
    let strategy = registry
        .active(PluginKind::Strategy, &request.strategy)
        .map_err(|_| {
            ApiError::invalid_field(
                "strategy",
                format!("no strategy plugin named {:?}", request.strategy),
            )
        })?;
    let interval_ms = interval_ms(&request.interval)
        .ok_or_else(|| ApiError::invalid_field("interval", "one of 1m, 5m, 1h"))?;
    if request.symbols.is_empty() {
        return Err(ApiError::invalid_field("symbols", "at least one symbol"));
    }
    if request.symbols.len() > MAX_SYMBOLS {
        return Err(ApiError::invalid_field(
            "symbols",
            format!("at most {MAX_SYMBOLS} symbols"),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for symbol in &request.symbols {
        candles::series_key(&request.source, symbol, &request.interval).map_err(|_| {
            ApiError::invalid_field("symbols", format!("{symbol:?} is not a symbol"))
        })?;
        if !seen.insert(symbol) {
            return Err(ApiError::invalid_field(
                "symbols",
                format!("{symbol} is named twice"),
            ));
        }
    }
    if request.to_ms < request.from_ms + interval_ms {
        return Err(ApiError::invalid_field(
            "to",
            "the range must hold at least one candle after its start",
        ));
    }
    if request.initial_capital <= Decimal::ZERO
        || request.initial_capital > Decimal::from(1_000_000_000_000i64)
    {
        return Err(ApiError::invalid_field(
            "initial_capital",
            "a positive amount up to 1,000,000,000,000",
        ));
    }
    if !["low", "medium", "high"].contains(&request.risk_profile.as_str()) {
        return Err(ApiError::invalid_field(
            "risk_profile",
            "one of low, medium, high",
        ));
    }
    let costs = match request.costs {
        Some(costs) => {
            for (name, value) in [
                ("costs.fee_bps", costs.fee_bps),
                ("costs.slippage_bps", costs.slippage_bps),
                ("costs.spread_bps", costs.spread_bps),
            ] {
                if !value.is_finite() || !(0.0..=costs::MAX_BPS).contains(&value) {
                    return Err(ApiError::invalid_field(
                        name,
                        format!("basis points from 0 to {}", costs::MAX_BPS),
                    ));
                }
            }
            costs
        }
        None => paper_costs(registry),
    };
    request.costs = Some(costs);
    // The strategy reads the candles of the run's interval.
    let mut config = (*strategy.target.config).clone();
    config.extend(request.config.clone());
    config.insert("interval".into(), request.interval.clone());
    let target = CallTarget {
        name: strategy.target.name.clone(),
        config: Arc::new(config),
        allowed_hosts: strategy.target.allowed_hosts.clone(),
    };
    Ok(Plan {
        request,
        interval_ms,
        strategy,
        target,
        costs,
    })
}

/// Refuses, before a run is recorded, a run over imported candles the store does not have in
/// its range (a broker's are downloaded when the run starts).
pub async fn check_stored(db: &Db, registry: &Registry, plan: &Plan) -> ApiResult<()> {
    let request = &plan.request;
    if registry.active(PluginKind::Broker, &request.source).is_ok() {
        return Ok(());
    }
    for symbol in &request.symbols {
        let key = candles::series_key(&request.source, symbol, &request.interval)?;
        let covers = candles::summary(db, &key).await.ok().is_some_and(|s| {
            s.candles > 0
                && s.first_ms + plan.interval_ms <= request.to_ms
                && s.last_ms + plan.interval_ms >= request.from_ms
        });
        if !covers {
            return Err(missing(plan, symbol));
        }
    }
    Ok(())
}

fn missing(plan: &Plan, symbol: &str) -> ApiError {
    let request = &plan.request;
    ApiError::invalid_field(
        "symbols",
        format!(
            "no {symbol} candles at {} from {} in the range; import or download them first",
            request.interval, request.source
        ),
    )
}

/// The candles a run reads for each symbol: its range and the history before it.
pub async fn load_candles(db: &Db, plan: &Plan) -> ApiResult<Vec<(String, Vec<Candle>)>> {
    let request = &plan.request;
    let (from, to) = history_range(plan);
    let mut loaded = Vec::with_capacity(request.symbols.len());
    for symbol in &request.symbols {
        let key = candles::series_key(&request.source, symbol, &request.interval)?;
        let series = candles::load(db, &key, from, to).await?;
        if !series
            .iter()
            .any(|c| c.timestamp_ms + plan.interval_ms >= request.from_ms)
        {
            return Err(missing(plan, symbol));
        }
        loaded.push((symbol.clone(), series));
    }
    Ok(loaded)
}

/// Downloads through the broker named by the run's source the candles the store lacks for the
/// run (nothing when the source is not a broker, or the stored series already spans the range).
pub async fn fill_from_broker(db: &Db, registry: &Registry, plan: &Plan) -> ApiResult<u64> {
    let request = &plan.request;
    let Ok(broker) = registry.active(PluginKind::Broker, &request.source) else {
        return Ok(0);
    };
    let (from, to) = history_range(plan);
    let mut downloaded = 0;
    for symbol in &request.symbols {
        let key = candles::series_key(&request.source, symbol, &request.interval)?;
        let stored = candles::summary(db, &key).await.ok();
        if stored.is_some_and(|s| s.candles > 0 && s.first_ms <= from && s.last_ms >= to) {
            continue;
        }
        let report = candles::download(
            db,
            broker.clone(),
            registry.runtime().clone(),
            &key,
            (from, to),
            candles::MAX_DOWNLOAD,
        )
        .await?;
        downloaded += report.received as u64;
    }
    Ok(downloaded)
}

/// The open times of the candles a run reads: the history a scan is shown before the first
/// step, through the last candle closing by the end.
pub fn history_range(plan: &Plan) -> (i64, i64) {
    let step = plan.interval_ms;
    let request = &plan.request;
    let first_open = request.from_ms.div_euclid(step) * step - step;
    (
        first_open - i64::from(CANDLE_HISTORY) * step,
        request.to_ms - step,
    )
}

/// The plugins of a run: its own strategy instance, and the active risk rules.
pub struct WasmPlugins<'a> {
    pub session: StrategySession<'a>,
    /// The active risk rules in order, each with one instance for the run.
    pub rules: Vec<(String, RuleSession<'a>)>,
    /// Groups of the run's symbols evaluated by instances on other threads, `session` taking
    /// the first (see [`spread`]); none: `session` takes every symbol.
    pub spread: Option<spread::Spread>,
}

impl<'a> WasmPlugins<'a> {
    /// The strategy planned and an instance of every active risk rule.
    pub fn start(
        registry: &'a Registry,
        plan: &Plan,
        path: CallPath,
    ) -> Result<Self, crate::plugins::PluginError> {
        let runtime = registry.runtime();
        let session = StrategySession::start(runtime, &plan.strategy, plan.target.clone(), path)?;
        let mut rules = Vec::new();
        for name in registry.names(PluginKind::RiskRule) {
            let Ok(active) = registry.active(PluginKind::RiskRule, &name) else {
                continue;
            };
            rules.push((name, RuleSession::start(runtime, &active, session.time())?));
        }
        Ok(WasmPlugins {
            session,
            rules,
            spread: None,
        })
    }

    /// Spreads the run's symbols over `threads` threads of `scope` when the strategy declares
    /// them independent and there are enough of them.
    fn spread_over<'scope>(
        mut self,
        scope: &'scope std::thread::Scope<'scope, 'a>,
        registry: &'a Registry,
        plan: &'a Plan,
        threads: usize,
    ) -> Self {
        let count = spread::group_count(threads, plan.request.symbols.len());
        if !plan.strategy.plugin.manifest.independent_symbols || count < 2 || !self.session.steps()
        {
            return self;
        }
        let runtime = registry.runtime();
        self.spread = Some(spread::Spread::new(scope, count, || {
            let mut session = None;
            move |work| match work {
                spread::Work::Begin(series, window) => {
                    let mut started = StrategySession::start(
                        runtime,
                        &plan.strategy,
                        plan.target.clone(),
                        CallPath::Preferred,
                    )
                    .map_err(|err| err.to_string())?;
                    started
                        .begin(&series, window)
                        .map_err(|err| err.to_string())?;
                    session = Some(started);
                    Ok(Vec::new())
                }
                spread::Work::Step(ctx) => session
                    .as_mut()
                    .ok_or_else(|| "a step before the run began".to_string())?
                    .step(&ctx)
                    .map_err(|err| err.to_string()),
            }
        }));
        self
    }
}

impl replay::Plugins for WasmPlugins<'_> {
    fn begin(&mut self, series: &[SeriesKey], window: u32) -> Result<bool, String> {
        if !self.session.steps() {
            return Ok(false);
        }
        let session = &mut self.session;
        let mut local =
            |series: &[SeriesKey]| session.begin(series, window).map_err(|err| err.to_string());
        match &mut self.spread {
            Some(spread) => spread.begin(series, window, local)?,
            None => local(series)?,
        }
        Ok(true)
    }

    fn evaluate(&mut self, ctx: &ScanContext) -> Result<Evaluation, String> {
        self.session.evaluate(ctx).map_err(|err| err.to_string())
    }

    fn step(&mut self, ctx: &StepContext) -> Result<Vec<Signal>, String> {
        let session = &mut self.session;
        let mut local = |ctx: &StepContext| session.step(ctx).map_err(|err| err.to_string());
        match &mut self.spread {
            Some(spread) => spread.step(ctx, local),
            None => local(ctx),
        }
    }

    fn rule_names(&self) -> Vec<String> {
        self.rules.iter().map(|(name, _)| name.clone()).collect()
    }

    fn check(
        &mut self,
        rule: &str,
        order: &ProposedOrder,
        ctx: &RiskContext,
    ) -> Result<Verdict, String> {
        let Some((_, session)) = self.rules.iter_mut().find(|(name, _)| name == rule) else {
            return Ok(Verdict::Allow);
        };
        session
            .check_order(order, ctx)
            .map_err(|err| err.to_string())
    }
}

/// The threads a run or a sweep may take: one per core.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs a planned backtest over loaded candles on the calling thread (a blocking one), its
/// symbols spread over up to `threads` threads when the strategy allows: the same inputs give
/// the same report, however many threads. With `lookahead_cuts`, the lookahead check follows:
/// the replay again on the candles cut at that many points, each with fresh instances.
pub fn execute(
    registry: &Registry,
    plan: &Plan,
    candles: &[(String, Vec<Candle>)],
    operator: (Entitlement, Settings),
    (cancel, threads): (&AtomicBool, usize),
    progress: &mut dyn FnMut(f64),
) -> ApiResult<Report> {
    let started = std::time::Instant::now();
    let request = &plan.request;
    let cuts = request.lookahead_cuts.min(MAX_LOOKAHEAD_CUTS);
    let (outcome, trader) = replay_once(
        registry,
        plan,
        symbol_candles(candles, |series| series),
        cuts > 0,
        operator.clone(),
        (cancel, threads),
        progress,
    )?;
    let check = if cuts == 0 {
        None
    } else {
        let points = lookahead::cut_points(request.from_ms, request.to_ms, plan.interval_ms, cuts);
        let rerun = |cut| {
            let cut_short = symbol_candles(candles, |series| {
                lookahead::truncated(series, cut, plan.interval_ms)
            });
            let mut cut_plan = plan.clone();
            cut_plan.request.to_ms = cut;
            replay_once(
                registry,
                &cut_plan,
                cut_short,
                true,
                operator.clone(),
                (cancel, threads),
                &mut |_| {},
            )
            .map(|(outcome, _)| outcome.signal_log)
            .map_err(|err| err.to_string())
        };
        let check = lookahead::check(&outcome.signal_log, &points, rerun)
            .map_err(|err| ApiError::invalid_field("strategy", err))?;
        Some(check)
    };
    let mut report = Report::of(
        plan,
        &plan.strategy.plugin.manifest.version,
        outcome,
        &trader,
        started.elapsed().as_secs_f64(),
    );
    report.lookahead = check;
    Ok(report)
}

/// One replay of a planned backtest with fresh plugin instances: what it produced and the
/// books it left.
/// Each symbol's candles as the replay reads them, through `select` (all of them, or a cut).
fn symbol_candles<'c>(
    candles: &'c [(String, Vec<Candle>)],
    select: impl Fn(&'c [Candle]) -> &'c [Candle],
) -> Vec<replay::SymbolCandles<'c>> {
    candles
        .iter()
        .map(|(symbol, series)| replay::SymbolCandles::new(symbol.clone(), select(series)))
        .collect()
}

fn replay_once(
    registry: &Registry,
    plan: &Plan,
    symbols: Vec<replay::SymbolCandles<'_>>,
    log_signals: bool,
    (entitlement, settings): (Entitlement, Settings),
    (cancel, threads): (&AtomicBool, usize),
    progress: &mut dyn FnMut(f64),
) -> ApiResult<(replay::Outcome, Trader)> {
    let request = &plan.request;
    let bot = BotRow {
        user_id: "backtest".into(),
        id: "backtest".into(),
        status: "running".into(),
        broker: request.source.clone(),
        paper_trading: 1,
        risk_profile: request.risk_profile.clone(),
        strategy: request.strategy.clone(),
        symbols: serde_json::to_string(&request.symbols).unwrap_or_default(),
        started_at: Some(request.from_ms),
        last_scan_at: None,
        scan_seq: 0,
        strategy_state: String::new(),
        last_error: None,
    };
    let mut trader = Trader::new(
        bot,
        Account::new(request.initial_capital, "USD"),
        entitlement,
        settings,
    );
    trader.stats.peak_equity = request.initial_capital;
    // The helpers the spread starts end when the replay (holding the plugins) is done.
    std::thread::scope(|scope| {
        let plugins = WasmPlugins::start(registry, plan, CallPath::Preferred)
            .map_err(|err| ApiError::invalid_field("strategy", err.to_string()))?
            .spread_over(scope, registry, plan, threads);
        let spread_over = plugins.spread.as_ref().map_or(1, spread::Spread::threads);
        let mut replay = replay::Replay::new(
            trader,
            plugins,
            plan.costs,
            (request.interval.clone(), plan.interval_ms),
            symbols,
            request.source.clone(),
            cancel,
        );
        if log_signals {
            replay = replay.with_signal_log();
        }
        replay
            .run(request.from_ms, request.to_ms, progress)
            .map(|(mut outcome, trader)| {
                outcome.threads = spread_over;
                (outcome, trader)
            })
            .map_err(|err| {
                ApiError::invalid_field("strategy", format!("the strategy failed: {err}"))
            })
    })
}
