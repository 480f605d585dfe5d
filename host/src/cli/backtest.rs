//! `tradehost backtest`: a strategy replayed over historical candles, with a progress bar and a
//! summary, or the whole report as JSON.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, anyhow};
use clap::Args;
use rust_decimal::Decimal;

use super::candles::time_arg;
use crate::backtest::lookahead::Lookahead;
use crate::backtest::{self, Report, Request};
use crate::billing::plans::{Entitlement, Tier};
use crate::candles;
use crate::config::AppConfig;
use crate::settings::Settings;
use crate::store::{Db, iso8601, now_ms};

#[derive(Debug, Args)]
pub struct BacktestArgs {
    /// The strategy plugin.
    #[arg(long)]
    strategy: String,
    /// Comma-separated symbols, e.g. BTC-USD,ETH-USD.
    #[arg(long, value_delimiter = ',', required = true)]
    symbols: Vec<String>,
    /// 1m, 5m or 1h.
    #[arg(long, default_value = "5m")]
    interval: String,
    /// The first step (ISO 8601, a date, or epoch ms).
    #[arg(long)]
    from: String,
    /// The last step (default: now).
    #[arg(long)]
    to: Option<String>,
    /// Whose stored candles: a broker's name (downloaded through it when missing) or an
    /// import's source.
    #[arg(long, default_value = "paper")]
    source: String,
    /// A CSV file of the one symbol's candles to replay instead of stored ones.
    #[arg(long)]
    data: Option<PathBuf>,
    /// A setting of the strategy's configuration, key=value (repeatable).
    #[arg(long = "config", value_name = "KEY=VALUE")]
    config: Vec<String>,
    #[arg(long, default_value = "10000")]
    capital: Decimal,
    /// Fee in basis points of the notional (default: the paper broker's).
    #[arg(long)]
    fee_bps: Option<f64>,
    #[arg(long)]
    slippage_bps: Option<f64>,
    #[arg(long)]
    spread_bps: Option<f64>,
    /// low, medium or high: the trailing stop's distance.
    #[arg(long, default_value = "medium")]
    risk_profile: String,
    /// Also run the lookahead check: the backtest again on the data cut short at this many
    /// points, reporting any signal that changes when the later candles are there.
    #[arg(long, value_name = "CUTS", num_args = 0..=1, default_missing_value = "4")]
    lookahead_check: Option<usize>,
    /// A parameter sweep: a configuration key and the values to try, KEY=V1,V2,… (repeatable;
    /// every combination runs, on every core, over the same candles).
    #[arg(long = "sweep", value_name = "KEY=V1,V2,…")]
    sweep: Vec<String>,
    /// The figure a sweep ranks by: a field of the report's metrics (sharpe_ratio, net_pnl,
    /// win_rate, profit_factor, max_drawdown_pct, …) or sortino_ratio.
    #[arg(long, default_value = "sharpe_ratio")]
    rank_by: String,
    /// Threads the run may spread its symbols over, when the strategy declares them
    /// independent (default: one per core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// Print the whole report as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(config: &AppConfig, args: BacktestArgs) -> Result<()> {
    let db = Db::connect(&config.database_url).await?;
    db.migrate().await?;
    let registry = crate::plugins::load(config, Some(db.clone())).await?;
    let settings_of = |pairs: &[String]| -> Result<_> {
        pairs
            .iter()
            .map(|pair| {
                pair.split_once('=')
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .ok_or_else(|| anyhow!("--config {pair:?} is not KEY=VALUE"))
            })
            .collect()
    };
    let costs = backtest::costs_overriding(
        &registry,
        (args.fee_bps, args.slippage_bps, args.spread_bps),
    );
    let request = Request {
        strategy: args.strategy,
        config: settings_of(&args.config)?,
        symbols: args.symbols,
        interval: args.interval,
        source: if args.data.is_some() {
            "csv".into()
        } else {
            args.source
        },
        from_ms: time_arg("from", &args.from)?,
        to_ms: match &args.to {
            Some(to) => time_arg("to", to)?,
            None => now_ms(),
        },
        initial_capital: args.capital,
        costs,
        risk_profile: args.risk_profile,
        lookahead_cuts: args
            .lookahead_check
            .map_or(0, |cuts| cuts.clamp(1, backtest::MAX_LOOKAHEAD_CUTS)),
    };
    let plan = backtest::plan(&registry, request)?;
    let candles = match &args.data {
        Some(file) => {
            let [symbol] = plan.request.symbols.as_slice() else {
                return Err(anyhow!("--data holds the candles of one symbol: name one"));
            };
            let text =
                std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
            let (from, to) = backtest::history_range(&plan);
            let mut series = candles::parse_csv(&text, &plan.request.interval)?;
            series.retain(|c| (from..=to).contains(&c.timestamp_ms));
            vec![(symbol.clone(), series)]
        }
        None => {
            let downloaded = backtest::fill_from_broker(&db, &registry, &plan).await?;
            if downloaded > 0 && !args.json {
                eprintln!(
                    "downloaded {downloaded} candles from {}",
                    plan.request.source
                );
            }
            backtest::load_candles(&db, &plan).await?
        }
    };
    let cancel = AtomicBool::new(false);
    let json = args.json;
    let mut bar = |done: f64| {
        if !json {
            let filled = (done * 30.0).round() as usize;
            eprint!(
                "\r[{}{}] {:>3.0}%",
                "#".repeat(filled),
                " ".repeat(30 - filled.min(30)),
                done * 100.0
            );
            let _ = std::io::stderr().flush();
        }
    };
    // The command line is the operator's: every limit of the top plan, the default settings with
    // the run's symbols allowed.
    let entitlement = Entitlement {
        tier: Tier::Enterprise,
        trial_active: false,
        effective: Tier::Enterprise,
    };
    let capital = crate::engine::accounting::float(plan.request.initial_capital);
    let mut settings = Settings::resolve(&Default::default(), &entitlement, capital);
    settings.trading.allowed_pairs = plan.request.symbols.clone();
    let threads = args.threads.map_or_else(backtest::cores, usize::from);
    if !args.sweep.is_empty() {
        let grid = grid_of(&args.sweep)?;
        let show = |done: usize, total: usize| {
            if !json {
                eprint!("\r{done}/{total} runs");
                let _ = std::io::stderr().flush();
            }
        };
        let ranked = tokio::task::block_in_place(|| {
            backtest::sweep::sweep(
                &registry,
                &plan,
                &candles,
                &(entitlement, settings),
                &grid,
                &args.rank_by,
                threads,
                &cancel,
                &show,
            )
        })?;
        if json {
            println!("{}", serde_json::to_string_pretty(&ranked)?);
        } else {
            eprintln!();
            print_sweep(&ranked, &args.rank_by);
        }
        return Ok(());
    }
    let report = tokio::task::block_in_place(|| {
        backtest::execute(
            &registry,
            &plan,
            &candles,
            (entitlement, settings),
            (&cancel, threads),
            &mut bar,
        )
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!();
        print_summary(&report);
    }
    Ok(())
}

fn print_summary(report: &Report) {
    let m = &report.metrics;
    let rows: Vec<(&str, String)> = vec![
        (
            "strategy",
            format!("{} {}", report.strategy, report.strategy_version),
        ),
        ("symbols", report.symbols.join(", ")),
        (
            "period",
            format!(
                "{} to {} ({})",
                iso8601(report.from_ms),
                iso8601(report.to_ms),
                report.interval
            ),
        ),
        (
            "candles",
            format!(
                "{} in {:.2} s ({:.0}/s)",
                report.candles,
                report.seconds,
                report.candles as f64 / report.seconds.max(1e-9)
            ),
        ),
        ("threads", report.threads.to_string()),
        ("trades", m.total_trades.to_string()),
        ("win rate", format!("{:.1} %", m.win_rate * 100.0)),
        ("net P&L", format!("{:.2}", m.net_pnl)),
        ("return", format!("{:.2} %", m.total_pnl_pct)),
        ("fees", format!("{:.2}", m.total_fees)),
        ("profit factor", format!("{:.2}", m.profit_factor)),
        ("Sharpe", format!("{:.2}", m.sharpe_ratio)),
        ("Sortino", format!("{:.2}", report.sortino_ratio)),
        ("max drawdown", format!("{:.2} %", m.max_drawdown_pct)),
        ("final equity", report.final_equity.round_dp(2).to_string()),
        ("open positions", report.open_positions.len().to_string()),
        (
            "entries refused",
            (report.skipped.len() as u64 + report.skipped_more).to_string(),
        ),
    ];
    for (name, value) in rows {
        println!("{name:<16} {value}");
    }
    if report.cancelled {
        println!("(cancelled before the end)");
    }
    if let Some(check) = &report.lookahead {
        print_lookahead(check);
    }
    if !report.trades.is_empty() {
        println!();
        println!(
            "{:<20} {:<10} {:<5} {:>14} {:>14} {:>12} {:<14}",
            "CLOSED", "SYMBOL", "SIDE", "ENTRY", "EXIT", "NET P&L", "REASON"
        );
        for t in &report.trades {
            println!(
                "{:<20} {:<10} {:<5} {:>14} {:>14} {:>12} {:<14}",
                &iso8601(t.closed_at_ms)[..19],
                t.symbol,
                t.side.as_str(),
                t.entry_price.round_dp(4),
                t.exit_price.round_dp(4),
                t.net_pnl.round_dp(2),
                t.exit_reason
            );
        }
    }
}

/// `KEY=V1,V2,…` arguments as a grid.
fn grid_of(arguments: &[String]) -> Result<backtest::sweep::Grid> {
    let mut grid = backtest::sweep::Grid::new();
    for argument in arguments {
        let (key, values) = argument
            .split_once('=')
            .ok_or_else(|| anyhow!("--sweep {argument:?} is not KEY=V1,V2,…"))?;
        let values: Vec<String> = values
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        if values.is_empty() {
            return Err(anyhow!("--sweep {argument:?} names no values"));
        }
        grid.insert(key.trim().to_string(), values);
    }
    Ok(grid)
}

/// The sweep's points best first, side by side.
fn print_sweep(ranked: &[backtest::sweep::Ranked], rank_by: &str) {
    println!(
        "{:>4}  {:<36} {:>7} {:>12} {:>9} {:>8} {:>7} {:>8}  {rank_by}",
        "RANK", "CONFIG", "TRADES", "NET P&L", "RETURN %", "WIN %", "SHARPE", "MAX DD %"
    );
    for point in ranked {
        let config = point
            .config
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        match &point.report {
            Some(report) => {
                let m = &report.metrics;
                println!(
                    "{:>4}  {:<36} {:>7} {:>12.2} {:>9.2} {:>8.1} {:>7.2} {:>8.2}  {}",
                    point.rank,
                    config,
                    m.total_trades,
                    m.net_pnl,
                    m.total_pnl_pct,
                    m.win_rate * 100.0,
                    m.sharpe_ratio,
                    m.max_drawdown_pct,
                    point.score.map_or("-".into(), |s| format!("{s:.4}")),
                );
            }
            None => println!(
                "{:>4}  {:<36} failed: {}",
                "-",
                config,
                point.error.as_deref().unwrap_or("")
            ),
        }
    }
}

fn print_lookahead(check: &Lookahead) {
    let compared: u64 = check.cuts.iter().map(|cut| cut.compared).sum();
    if check.clean {
        println!(
            "lookahead check  clean: {compared} signals at {} cuts unchanged without the later candles",
            check.cuts.len()
        );
        return;
    }
    println!("lookahead check  SIGNALS CHANGED without the later candles:");
    for cut in check.cuts.iter().filter(|cut| cut.changed > 0) {
        println!(
            "  cut at {}: {} of {} signals changed",
            iso8601(cut.cut_ms),
            cut.changed,
            cut.compared
        );
        for change in &cut.changes {
            println!(
                "    {} {}: {} with later data, {} without",
                iso8601(change.at_ms),
                change.symbol,
                change.with_later_data.as_deref().unwrap_or("nothing"),
                change.without_later_data.as_deref().unwrap_or("nothing"),
            );
        }
    }
}
