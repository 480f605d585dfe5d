//! A parameter sweep: one backtest per point of a grid of configuration values, run on every
//! core at once over the same candles, ranked by a chosen figure of the report.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use serde::Serialize;

use super::{Plan, Report, execute, plan};
use crate::billing::plans::Entitlement;
use crate::error::{ApiError, ApiResult};
use crate::plugins::Registry;
use crate::plugins::bindings::types::Candle;
use crate::settings::Settings;

/// The most points a grid may have.
pub const MAX_POINTS: usize = 256;

/// Figures a sweep ranks by where smaller is better; every other one ranks larger first.
const SMALLER_IS_BETTER: &[&str] = &[
    "max_drawdown",
    "max_drawdown_pct",
    "recovery_time_days",
    "total_fees",
    "losing_trades",
];

/// Whether a smaller value of the figure `name` is the better one.
pub fn smaller_is_better(name: &str) -> bool {
    SMALLER_IS_BETTER.contains(&name)
}

/// One value list per configuration key, e.g. `fast_period` → 5, 9, 12.
pub type Grid = BTreeMap<String, Vec<String>>;

/// Every combination of the grid's values, in a fixed order (the last key varies fastest).
pub fn points(grid: &Grid) -> ApiResult<Vec<BTreeMap<String, String>>> {
    let mut count: usize = 1;
    for (key, values) in grid {
        if values.is_empty() {
            return Err(ApiError::invalid_field(
                "sweep",
                format!("{key} has no values"),
            ));
        }
        count = count.saturating_mul(values.len());
    }
    if count > MAX_POINTS {
        return Err(ApiError::invalid_field(
            "sweep",
            format!("{count} combinations; at most {MAX_POINTS}"),
        ));
    }
    let mut points = vec![BTreeMap::new()];
    for (key, values) in grid {
        points = points
            .into_iter()
            .flat_map(|point| {
                values.iter().map(move |value| {
                    let mut next = point.clone();
                    next.insert(key.clone(), value.clone());
                    next
                })
            })
            .collect();
    }
    Ok(points)
}

/// The figure `rank_by` names in a report (one of [`Report::figures`]).
pub fn figure(report: &Report, rank_by: &str) -> Option<f64> {
    report
        .figures()
        .into_iter()
        .find_map(|(name, value)| (name == rank_by).then_some(value))
}

/// Checks that `rank_by` names a figure of a report.
pub fn check_rank_by(rank_by: &str) -> ApiResult<()> {
    if Report::has_figure(rank_by) {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            "rank_by",
            format!("{rank_by:?} is not a figure of the report (e.g. sharpe_ratio, net_pnl)"),
        ))
    }
}

/// One point of the sweep and how it did.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    /// 1 for the best; points that failed come last, unranked (0).
    pub rank: usize,
    pub config: BTreeMap<String, String>,
    pub score: Option<f64>,
    pub report: Option<Report>,
    pub error: Option<String>,
}

/// Runs `base` once per point of `grid` (each point's values over the base configuration),
/// `threads` at a time, and ranks the points by `rank_by`. Points whose configuration the
/// strategy refuses are listed with their error.
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    registry: &Registry,
    base: &Plan,
    candles: &[(String, Vec<Candle>)],
    operator: &(Entitlement, Settings),
    grid: &Grid,
    rank_by: &str,
    threads: usize,
    cancel: &AtomicBool,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> ApiResult<Vec<Ranked>> {
    check_rank_by(rank_by)?;
    let points = points(grid)?;
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Report, String>>>> = Mutex::new(vec![None; points.len()]);
    // Threads the points do not take spread each point's symbols.
    let spread_threads = (threads / points.len().max(1)).max(1);
    let run_point = |point: &BTreeMap<String, String>| -> Result<Report, String> {
        let mut request = base.request.clone();
        request.config.extend(point.clone());
        let planned = plan(registry, request).map_err(|err| err.message)?;
        execute(
            registry,
            &planned,
            candles,
            operator.clone(),
            (cancel, spread_threads),
            &mut |_| {},
        )
        .map_err(|err| err.message)
    };
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, points.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= points.len() || cancel.load(Ordering::Relaxed) {
                        break;
                    }
                    let outcome = run_point(&points[i]);
                    results.lock().expect("no worker panics holding it")[i] = Some(outcome);
                    progress(done.fetch_add(1, Ordering::Relaxed) + 1, points.len());
                }
            });
        }
    });
    let results = results.into_inner().expect("the workers have ended");
    Ok(rank(points, results, rank_by))
}

/// Sorts the points best first by `rank_by` (ties keep the grid's order), failures last.
fn rank(
    points: Vec<BTreeMap<String, String>>,
    results: Vec<Option<Result<Report, String>>>,
    rank_by: &str,
) -> Vec<Ranked> {
    let smaller_is_better = smaller_is_better(rank_by);
    let mut ranked: Vec<Ranked> = points
        .into_iter()
        .zip(results)
        .map(|(config, result)| match result {
            Some(Ok(report)) => Ranked {
                rank: 0,
                config,
                score: figure(&report, rank_by),
                report: Some(report),
                error: None,
            },
            Some(Err(error)) => Ranked {
                rank: 0,
                config,
                score: None,
                report: None,
                error: Some(error),
            },
            None => Ranked {
                rank: 0,
                config,
                score: None,
                report: None,
                error: Some("cancelled before it ran".into()),
            },
        })
        .collect();
    ranked.sort_by(|a, b| match (a.score, b.score) {
        (Some(x), Some(y)) if smaller_is_better => x.total_cmp(&y),
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    for (i, point) in ranked.iter_mut().enumerate() {
        if point.score.is_some() {
            point.rank = i + 1;
        }
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(axes: &[(&str, &[&str])]) -> Grid {
        axes.iter()
            .map(|(key, values)| {
                (
                    key.to_string(),
                    values.iter().map(|v| v.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_grid_gives_every_combination_once() {
        let points = points(&grid(&[("a", &["1", "2", "3"]), ("b", &["x", "y"])])).unwrap();
        assert_eq!(points.len(), 6);
        let pairs: Vec<(String, String)> = points
            .iter()
            .map(|p| (p["a"].clone(), p["b"].clone()))
            .collect();
        assert_eq!(pairs[0], ("1".into(), "x".into()));
        assert_eq!(pairs[1], ("1".into(), "y".into()));
        assert_eq!(pairs[5], ("3".into(), "y".into()));
        let unique: std::collections::BTreeSet<_> = pairs.into_iter().collect();
        assert_eq!(unique.len(), 6);
        assert!(super::points(&grid(&[("a", &[])])).is_err());
        let wide: Vec<String> = (0..17).map(|i| i.to_string()).collect();
        let wide: Vec<&str> = wide.iter().map(String::as_str).collect();
        assert!(super::points(&grid(&[("a", &wide), ("b", &wide)])).is_err());
    }

    #[test]
    fn ranking_knows_the_report_figures() {
        assert!(check_rank_by("sharpe_ratio").is_ok());
        assert!(check_rank_by("max_drawdown_pct").is_ok());
        assert!(check_rank_by("sortino_ratio").is_ok());
        assert!(check_rank_by("final_equity").is_ok());
        assert!(check_rank_by("luck").is_err());
    }
}
