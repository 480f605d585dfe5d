//! What a backtest reports: the platform's performance figures computed by the module the live
//! account's are, the trades as the books hold them (exact decimals), what is still open, the
//! equity and drawdown curves, and the entries the checks refused.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::Plan;
use super::costs::Costs;
use super::lookahead::Lookahead;
use super::replay::{Outcome, Skipped};
use crate::engine::Trader;
use crate::engine::accounting::{self, CompletedTrade, Side};
use crate::engine::metrics::{self, EquityPoint, PerformanceMetrics};
use crate::engine::reports::closed_trade;

/// Points of the equity curve a report keeps at most (the last of each equal stretch of steps).
pub const MAX_CURVE_POINTS: usize = 1000;

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Report {
    pub strategy: String,
    pub strategy_version: String,
    pub symbols: Vec<String>,
    pub interval: String,
    pub source: String,
    pub from_ms: i64,
    pub to_ms: i64,
    pub initial_capital: Decimal,
    pub costs: Costs,
    pub config: std::collections::BTreeMap<String, String>,
    /// Candles replayed (closing inside the range).
    pub candles: u64,
    /// Candle closes scanned.
    pub steps: u64,
    /// Entry and exit signals the strategy gave.
    pub signals: u64,
    pub final_equity: Decimal,
    pub cash: Decimal,
    pub realized_pnl: Decimal,
    pub fees_paid: Decimal,
    pub metrics: PerformanceMetrics,
    pub sortino_ratio: f64,
    pub trades: Vec<BacktestTrade>,
    pub open_positions: Vec<BacktestPosition>,
    pub equity_curve: Vec<CurvePoint>,
    pub skipped: Vec<Skipped>,
    pub skipped_more: u64,
    /// Days on which the daily loss limit stopped new entries.
    pub loss_limit_days: u64,
    pub cancelled: bool,
    /// Threads the strategy's symbols were evaluated on: more than one when the strategy
    /// declares its symbols independent and the run may take more cores.
    #[serde(default = "one_thread")]
    pub threads: usize,
    /// Wall time of the replay (left out of the comparison of two runs).
    #[serde(skip)]
    pub seconds: f64,
    /// The lookahead check's findings, when it was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lookahead: Option<Lookahead>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BacktestTrade {
    pub id: String,
    pub symbol: String,
    pub side: Side,
    pub quantity: Decimal,
    pub entry_price: Decimal,
    pub exit_price: Decimal,
    pub size_usd: Decimal,
    pub gross_pnl: Decimal,
    pub fees: Decimal,
    pub net_pnl: Decimal,
    pub pnl_pct: Decimal,
    pub exit_reason: String,
    pub opened_at_ms: i64,
    pub closed_at_ms: i64,
}

impl From<&CompletedTrade> for BacktestTrade {
    fn from(t: &CompletedTrade) -> Self {
        BacktestTrade {
            id: t.id.clone(),
            symbol: t.symbol.clone(),
            side: t.side,
            quantity: t.quantity,
            entry_price: t.entry_price,
            exit_price: t.exit_price,
            size_usd: t.size_usd,
            gross_pnl: t.gross_pnl,
            fees: t.fees,
            net_pnl: t.net_pnl,
            pnl_pct: t.pnl_pct,
            exit_reason: t.exit_reason.clone(),
            opened_at_ms: t.opened_at_ms,
            closed_at_ms: t.closed_at_ms,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BacktestPosition {
    pub symbol: String,
    pub side: Side,
    pub quantity: Decimal,
    pub entry_price: Decimal,
    pub current_price: Decimal,
    pub unrealized_pnl: Decimal,
    pub opened_at_ms: i64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CurvePoint {
    pub at_ms: i64,
    pub equity: f64,
    /// Below the running peak, in percent (≤ 0).
    pub drawdown_pct: f64,
}

fn one_thread() -> usize {
    1
}

impl Report {
    pub fn of(
        plan: &Plan,
        strategy_version: &str,
        outcome: Outcome,
        trader: &Trader,
        seconds: f64,
    ) -> Report {
        let request = &plan.request;
        let initial = accounting::float(request.initial_capital);
        let closed: Vec<_> = outcome.trades.iter().map(closed_trade).collect();
        let metrics = metrics::performance(&closed, &outcome.equity, initial);
        let sortino = metrics::sortino(&metrics::daily_returns(&metrics::daily_close(
            &outcome.equity,
        )));
        Report {
            strategy: request.strategy.clone(),
            strategy_version: strategy_version.to_string(),
            symbols: request.symbols.clone(),
            interval: request.interval.clone(),
            source: request.source.clone(),
            from_ms: request.from_ms,
            to_ms: request.to_ms,
            initial_capital: request.initial_capital,
            costs: plan.costs,
            config: request.config.clone(),
            candles: outcome.candles,
            steps: outcome.steps,
            signals: outcome.signals,
            final_equity: trader.equity().round_dp(accounting::SCALE),
            cash: trader.account.cash,
            realized_pnl: trader.account.realized_pnl,
            fees_paid: trader.account.fees_paid,
            metrics,
            sortino_ratio: metrics::finite(sortino),
            trades: outcome.trades.iter().map(BacktestTrade::from).collect(),
            open_positions: trader
                .positions
                .iter()
                .map(|p| BacktestPosition {
                    symbol: p.symbol.clone(),
                    side: p.side,
                    quantity: p.quantity,
                    entry_price: p.entry_price,
                    current_price: p.current_price,
                    unrealized_pnl: p.unrealized_pnl(),
                    opened_at_ms: p.opened_at_ms,
                })
                .collect(),
            equity_curve: curve(&outcome.equity),
            skipped: outcome.skipped,
            skipped_more: outcome.skipped_more,
            loss_limit_days: outcome.loss_limit_days,
            cancelled: outcome.cancelled,
            threads: outcome.threads.max(1),
            seconds,
            lookahead: None,
        }
    }

    /// Every figure of the report by name, in a fixed order: the performance metrics,
    /// `sortino_ratio` and `final_equity`. Runs are ranked and compared by these.
    pub fn figures(&self) -> Vec<(String, f64)> {
        figures_of(
            &self.metrics,
            self.sortino_ratio,
            accounting::float(self.final_equity),
        )
    }

    /// Whether `name` is one of [`Report::figures`].
    pub fn has_figure(name: &str) -> bool {
        figures_of(&PerformanceMetrics::default(), 0.0, 0.0)
            .iter()
            .any(|(figure, _)| figure == name)
    }
}

fn figures_of(metrics: &PerformanceMetrics, sortino: f64, final_equity: f64) -> Vec<(String, f64)> {
    let mut figures: Vec<(String, f64)> = match serde_json::to_value(metrics) {
        Ok(serde_json::Value::Object(fields)) => fields
            .into_iter()
            .filter_map(|(name, value)| Some((name, value.as_f64()?)))
            .collect(),
        _ => Vec::new(),
    };
    figures.push(("sortino_ratio".into(), sortino));
    figures.push(("final_equity".into(), final_equity));
    figures
}

/// The equity curve thinned to at most [`MAX_CURVE_POINTS`] (the last point of each stretch),
/// with the drawdown from the peak of the whole series so far.
pub fn curve(equity: &[EquityPoint]) -> Vec<CurvePoint> {
    let stretch = equity.len().div_ceil(MAX_CURVE_POINTS).max(1);
    let mut peak = f64::MIN;
    let mut points = Vec::with_capacity(equity.len() / stretch + 1);
    for (i, point) in equity.iter().enumerate() {
        peak = peak.max(point.equity);
        let last_of_stretch = (i + 1) % stretch == 0 || i + 1 == equity.len();
        if last_of_stretch {
            let drawdown_pct = if peak > 0.0 {
                ((point.equity - peak) / peak * 100.0).min(0.0)
            } else {
                0.0
            };
            points.push(CurvePoint {
                at_ms: point.at_ms,
                equity: point.equity,
                drawdown_pct,
            });
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_keeps_the_last_point_of_each_stretch_and_the_drawdown_from_the_peak() {
        // Rises to 1,099 by step 999, then falls by 0.2 a step.
        let equity: Vec<EquityPoint> = (0..2500)
            .map(|i| EquityPoint {
                at_ms: i,
                equity: if i < 1000 {
                    100.0 + i as f64
                } else {
                    1099.0 - (i - 999) as f64 * 0.2
                },
            })
            .collect();
        let points = curve(&equity);
        assert_eq!(points.len(), 834);
        assert_eq!(points[0].at_ms, 2);
        assert_eq!(points[0].drawdown_pct, 0.0);
        let last = points.last().unwrap();
        assert_eq!(last.at_ms, 2499);
        let expected = (1099.0 - 1500.0 * 0.2 - 1099.0) / 1099.0 * 100.0;
        assert!(
            (last.drawdown_pct - expected).abs() < 1e-9,
            "{}",
            last.drawdown_pct
        );
        assert!(curve(&[]).is_empty());
    }
}
