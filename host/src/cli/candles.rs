//! `tradehost candles`: the historical candles backtests run on.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;

use crate::candles::{self, GapReport, ImportReport, SeriesSummary};
use crate::config::AppConfig;
use crate::plugins::PluginKind;
use crate::store::{Db, iso8601, now_ms};

#[derive(Debug, Subcommand)]
pub enum CandlesCommand {
    /// Import a CSV file of candles into a series: rows of timestamp (epoch ms or s, or an
    /// ISO 8601 UTC time), open, high, low, close, volume; a header row is allowed. Nothing is
    /// imported when a row is bad; each bad row is named with its line.
    Import {
        /// The CSV file.
        file: PathBuf,
        #[arg(long)]
        symbol: String,
        /// 1m, 5m or 1h.
        #[arg(long)]
        interval: String,
        /// The series' source name.
        #[arg(long, default_value = "csv")]
        source: String,
        #[arg(long)]
        json: bool,
    },
    /// Download closed candles through a broker plugin into the series named after the broker.
    Download {
        #[arg(long, default_value = "paper")]
        broker: String,
        #[arg(long)]
        symbol: String,
        #[arg(long)]
        interval: String,
        /// The first candle's open time (ISO 8601, a date, or epoch ms).
        #[arg(long)]
        from: String,
        /// The last candle's open time (default: the last closed candle).
        #[arg(long)]
        to: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List the stored series.
    List {
        #[arg(long)]
        json: bool,
    },
    /// The gaps of a series: slots without a candle between its first and last.
    Gaps {
        #[arg(long, default_value = "csv")]
        source: String,
        #[arg(long)]
        symbol: String,
        #[arg(long)]
        interval: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a series.
    Delete {
        #[arg(long)]
        source: String,
        #[arg(long)]
        symbol: String,
        #[arg(long)]
        interval: String,
    },
}

pub async fn run(config: &AppConfig, command: CandlesCommand) -> Result<()> {
    let db = Db::connect(&config.database_url).await?;
    db.migrate().await?;
    match command {
        CandlesCommand::Import {
            file,
            symbol,
            interval,
            source,
            json,
        } => {
            let key = candles::series_key(&source, &symbol, &interval)?;
            let text =
                std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let report = candles::import_csv(&db, &key, text).await?;
            print_import(&report, json)
        }
        CandlesCommand::Download {
            broker,
            symbol,
            interval,
            from,
            to,
            json,
        } => {
            let key = candles::series_key(&broker, &symbol, &interval)?;
            let from = time_arg("from", &from)?;
            let to = to
                .map(|to| time_arg("to", &to))
                .transpose()?
                .unwrap_or_else(now_ms);
            let registry = crate::plugins::load(config, Some(db.clone())).await?;
            let active = registry
                .active(PluginKind::Broker, &key.source)
                .map_err(|err| anyhow::anyhow!("no broker plugin {}: {err}", key.source))?;
            let report = candles::download(
                &db,
                active,
                registry.runtime().clone(),
                &key,
                (from, to),
                candles::MAX_DOWNLOAD,
            )
            .await?;
            print_import(&report, json)
        }
        CandlesCommand::List { json } => {
            let series = candles::list(&db).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&series)?);
            } else if series.is_empty() {
                println!("no candles stored");
            } else {
                print_table(&series);
            }
            Ok(())
        }
        CandlesCommand::Gaps {
            source,
            symbol,
            interval,
            json,
        } => {
            let key = candles::series_key(&source, &symbol, &interval)?;
            let report = candles::gaps_of(&db, &key).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print_table(std::slice::from_ref(&report.series));
                print_gaps(&report);
            }
            Ok(())
        }
        CandlesCommand::Delete {
            source,
            symbol,
            interval,
        } => {
            let key = candles::series_key(&source, &symbol, &interval)?;
            let deleted = candles::delete(&db, &key).await?;
            println!(
                "deleted {} candles of {} at {} from {}",
                deleted.candles, deleted.symbol, deleted.interval, deleted.source
            );
            Ok(())
        }
    }
}

/// The time given to the option `--name`.
pub(super) fn time_arg(name: &str, text: &str) -> Result<i64> {
    candles::parse_time(text).ok_or_else(|| {
        anyhow::anyhow!("--{name} {text:?} is not a time (ISO 8601, a date, or epoch ms)")
    })
}

fn print_import(report: &ImportReport, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    println!(
        "{} candles written in {:.2} s ({} replaced stored ones)",
        report.received, report.seconds, report.replaced
    );
    print_table(std::slice::from_ref(&report.series));
    print_gaps(&GapReport {
        series: report.series.clone(),
        gap_count: report.gap_count,
        gaps: report.gaps.clone(),
    });
    Ok(())
}

fn print_table(series: &[SeriesSummary]) {
    println!(
        "{:<12} {:<12} {:<8} {:>10} {:<24} {:<24} {:>8} {:>10}",
        "SOURCE", "SYMBOL", "INTERVAL", "CANDLES", "FIRST", "LAST", "MISSING", "KIB"
    );
    for s in series {
        println!(
            "{:<12} {:<12} {:<8} {:>10} {:<24} {:<24} {:>8} {:>10}",
            s.source,
            s.symbol,
            s.interval,
            s.candles,
            s.first,
            s.last,
            s.missing,
            s.bytes / 1024
        );
    }
}

fn print_gaps(report: &GapReport) {
    if report.gap_count == 0 {
        println!("no gaps");
        return;
    }
    println!("{} gaps:", report.gap_count);
    for gap in &report.gaps {
        println!(
            "  after {} before {}: {} candles missing",
            iso8601(gap.after_ms),
            iso8601(gap.before_ms),
            gap.missing
        );
    }
    if report.gap_count > report.gaps.len() {
        println!("  … and {} more", report.gap_count - report.gaps.len());
    }
}
