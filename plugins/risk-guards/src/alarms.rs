//! Alarms from a KPI snapshot: at most one per type, the most severe that applies.

use tradehost_sdk::types::{Alarm, AlarmLevel, KpiSnapshot, Threshold};

use crate::{
    CONSECUTIVE_LOSSES_LIMIT, DAILY_LOSS_LIMIT_PCT, MAX_DRAWDOWN_PCT, MAX_TOTAL_EXPOSURE_PCT,
    MIN_ACCOUNT_BALANCE, MIN_PROFIT_FACTOR, MIN_SHARPE_RATIO, MIN_WIN_RATE_PCT, Thresholds,
    WARNING_ACCOUNT_BALANCE, WARNING_DRAWDOWN_PCT, WARNING_WIN_RATE_PCT,
};

/// Win rate and profit factor mean little over fewer trades.
pub const MIN_TRADES_FOR_WIN_RATE: u32 = 10;
pub const MIN_TRADES_FOR_PROFIT_FACTOR: u32 = 10;
/// The Sharpe ratio needs a longer record still.
pub const MIN_TRADES_FOR_SHARPE: u32 = 20;

pub const MAX_DRAWDOWN_EXCEEDED: &str = "MAX_DRAWDOWN_EXCEEDED";
pub const DAILY_LOSS_LIMIT: &str = "DAILY_LOSS_LIMIT";
pub const CONSECUTIVE_LOSSES: &str = "CONSECUTIVE_LOSSES";
pub const LOW_WIN_RATE: &str = "LOW_WIN_RATE";
pub const TOTAL_EXPOSURE_EXCEEDED: &str = "TOTAL_EXPOSURE_EXCEEDED";
pub const ACCOUNT_BALANCE_LOW: &str = "ACCOUNT_BALANCE_LOW";
pub const SHARPE_DEGRADATION: &str = "SHARPE_DEGRADATION";
pub const PROFIT_FACTOR_LOW: &str = "PROFIT_FACTOR_LOW";

/// The alarms `kpi` raises under `thresholds`. A figure that is not a finite number is skipped:
/// there is nothing to judge.
pub fn evaluate_alarms(kpi: &KpiSnapshot, thresholds: &[Threshold]) -> Vec<Alarm> {
    let limits = Thresholds::new(thresholds);
    [
        drawdown(kpi, &limits),
        daily_loss(kpi, &limits),
        consecutive_losses(kpi, &limits),
        win_rate(kpi, &limits),
        exposure(kpi, &limits),
        account_balance(kpi, &limits),
        sharpe(kpi, &limits),
        profit_factor(kpi, &limits),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn alarm(
    level: AlarmLevel,
    alarm_type: &str,
    message: String,
    current_value: f64,
    threshold_value: f64,
    recommended_action: &str,
) -> Option<Alarm> {
    Some(Alarm {
        level,
        alarm_type: alarm_type.into(),
        message,
        current_value,
        threshold_value,
        recommended_action: recommended_action.into(),
    })
}

fn drawdown(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    // Drawdowns are reported as positive percentages; accept a negative sign too.
    let value = finite(kpi.current_drawdown_pct)?.abs();
    let max = limits.get(MAX_DRAWDOWN_PCT);
    let warning = limits.get(WARNING_DRAWDOWN_PCT);
    if value >= max {
        alarm(
            AlarmLevel::Emergency,
            MAX_DRAWDOWN_EXCEEDED,
            format!("Maximum drawdown exceeded: {value:.2}%"),
            value,
            max,
            "STOP TRADING IMMEDIATELY - Review strategy and reduce position sizes",
        )
    } else if value >= warning {
        alarm(
            AlarmLevel::Warning,
            MAX_DRAWDOWN_EXCEEDED,
            format!("Drawdown approaching the maximum: {value:.2}%"),
            value,
            warning,
            "Reduce position sizes and review open positions",
        )
    } else {
        None
    }
}

fn daily_loss(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    let value = finite(kpi.daily_return_pct)?;
    let limit = -limits.get(DAILY_LOSS_LIMIT_PCT);
    if value >= limit {
        return None;
    }
    alarm(
        AlarmLevel::Critical,
        DAILY_LOSS_LIMIT,
        format!("Daily loss limit exceeded: {value:.2}%"),
        value,
        limit,
        "Stop opening positions for the rest of the day",
    )
}

fn consecutive_losses(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    let value = f64::from(kpi.consecutive_losses);
    let limit = limits.get(CONSECUTIVE_LOSSES_LIMIT);
    if value < limit {
        return None;
    }
    alarm(
        AlarmLevel::Warning,
        CONSECUTIVE_LOSSES,
        format!("Consecutive losing trades: {}", kpi.consecutive_losses),
        value,
        limit,
        "Pause trading and review the recent losing trades",
    )
}

fn win_rate(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    if kpi.total_trades < MIN_TRADES_FOR_WIN_RATE {
        return None;
    }
    let value = finite(kpi.win_rate_pct)?;
    let min = limits.get(MIN_WIN_RATE_PCT);
    let warning = limits.get(WARNING_WIN_RATE_PCT);
    if value < min {
        alarm(
            AlarmLevel::Critical,
            LOW_WIN_RATE,
            format!("Win rate critically low: {value:.2}%"),
            value,
            min,
            "Stop trading and review the strategy's entry rules",
        )
    } else if value < warning {
        alarm(
            AlarmLevel::Warning,
            LOW_WIN_RATE,
            format!("Win rate below target: {value:.2}%"),
            value,
            warning,
            "Review the strategy's entry rules",
        )
    } else {
        None
    }
}

fn exposure(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    let value = finite(kpi.exposure_pct)?;
    let max = limits.get(MAX_TOTAL_EXPOSURE_PCT);
    if value <= max {
        return None;
    }
    alarm(
        AlarmLevel::Warning,
        TOTAL_EXPOSURE_EXCEEDED,
        format!("Total exposure above the limit: {value:.2}%"),
        value,
        max,
        "Reduce open positions to bring exposure under the limit",
    )
}

fn account_balance(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    let value = finite(kpi.account_value)?;
    let min = limits.get(MIN_ACCOUNT_BALANCE);
    let warning = limits.get(WARNING_ACCOUNT_BALANCE);
    if value < min {
        alarm(
            AlarmLevel::Emergency,
            ACCOUNT_BALANCE_LOW,
            format!("Account balance below the minimum: {value:.2}"),
            value,
            min,
            "STOP TRADING IMMEDIATELY - Account balance below the minimum",
        )
    } else if value < warning {
        alarm(
            AlarmLevel::Warning,
            ACCOUNT_BALANCE_LOW,
            format!("Account balance low: {value:.2}"),
            value,
            warning,
            "Reduce position sizes or add funds",
        )
    } else {
        None
    }
}

fn sharpe(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    if kpi.total_trades < MIN_TRADES_FOR_SHARPE {
        return None;
    }
    let value = finite(kpi.sharpe_ratio)?;
    let min = limits.get(MIN_SHARPE_RATIO);
    if value >= min {
        return None;
    }
    alarm(
        AlarmLevel::Warning,
        SHARPE_DEGRADATION,
        format!("Sharpe ratio degraded: {value:.2}"),
        value,
        min,
        "Review risk-adjusted returns and consider smaller positions",
    )
}

fn profit_factor(kpi: &KpiSnapshot, limits: &Thresholds) -> Option<Alarm> {
    if kpi.total_trades < MIN_TRADES_FOR_PROFIT_FACTOR {
        return None;
    }
    let value = finite(kpi.profit_factor)?;
    let min = limits.get(MIN_PROFIT_FACTOR);
    if value >= min {
        return None;
    }
    alarm(
        AlarmLevel::Critical,
        PROFIT_FACTOR_LOW,
        format!("Profit factor below {min:.2}: {value:.2}"),
        value,
        min,
        "The strategy loses more than it wins - stop and review it",
    )
}

fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A healthy account that raises no alarm.
    fn healthy() -> KpiSnapshot {
        KpiSnapshot {
            timestamp_ms: 1_709_251_200_000,
            account_value: 10_000.0,
            cash_balance: 5_000.0,
            total_return_pct: 12.0,
            daily_return_pct: 0.4,
            current_drawdown_pct: 3.0,
            max_drawdown_pct: 8.0,
            win_rate_pct: 60.0,
            profit_factor: 1.6,
            sharpe_ratio: 1.2,
            total_trades: 40,
            winning_trades: 24,
            losing_trades: 16,
            consecutive_losses: 1,
            active_positions: 2,
            exposure_pct: 35.0,
            largest_position_pct: 10.0,
        }
    }

    fn only(alarms: Vec<Alarm>) -> Alarm {
        assert_eq!(alarms.len(), 1, "{alarms:?}");
        alarms.into_iter().next().unwrap()
    }

    #[test]
    fn a_healthy_account_raises_nothing() {
        assert!(evaluate_alarms(&healthy(), &[]).is_empty());
    }

    #[test]
    fn drawdown_warns_then_escalates_to_emergency() {
        let warning = only(evaluate_alarms(
            &KpiSnapshot {
                current_drawdown_pct: 15.0,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(warning.level, AlarmLevel::Warning);
        assert_eq!(warning.alarm_type, MAX_DRAWDOWN_EXCEEDED);
        assert_eq!(warning.threshold_value, 15.0);

        let emergency = only(evaluate_alarms(
            &KpiSnapshot {
                current_drawdown_pct: 22.5,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(
            emergency,
            Alarm {
                level: AlarmLevel::Emergency,
                alarm_type: "MAX_DRAWDOWN_EXCEEDED".into(),
                message: "Maximum drawdown exceeded: 22.50%".into(),
                current_value: 22.5,
                threshold_value: 20.0,
                recommended_action:
                    "STOP TRADING IMMEDIATELY - Review strategy and reduce position sizes".into(),
            }
        );

        let custom = [Threshold {
            name: "max_drawdown_pct".into(),
            value: 30.0,
        }];
        let relaxed = only(evaluate_alarms(
            &KpiSnapshot {
                current_drawdown_pct: 22.5,
                ..healthy()
            },
            &custom,
        ));
        assert_eq!(relaxed.level, AlarmLevel::Warning);
    }

    #[test]
    fn daily_loss_beyond_the_limit_is_critical() {
        let at_limit = KpiSnapshot {
            daily_return_pct: -5.0,
            ..healthy()
        };
        assert!(evaluate_alarms(&at_limit, &[]).is_empty());
        let alarm = only(evaluate_alarms(
            &KpiSnapshot {
                daily_return_pct: -6.1,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(alarm.level, AlarmLevel::Critical);
        assert_eq!(alarm.alarm_type, DAILY_LOSS_LIMIT);
        assert_eq!(alarm.message, "Daily loss limit exceeded: -6.10%");
        assert_eq!(alarm.current_value, -6.1);
        assert_eq!(alarm.threshold_value, -5.0);
    }

    #[test]
    fn a_losing_streak_warns() {
        let four = KpiSnapshot {
            consecutive_losses: 4,
            ..healthy()
        };
        assert!(evaluate_alarms(&four, &[]).is_empty());
        let alarm = only(evaluate_alarms(
            &KpiSnapshot {
                consecutive_losses: 5,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(alarm.level, AlarmLevel::Warning);
        assert_eq!(alarm.alarm_type, CONSECUTIVE_LOSSES);
        assert_eq!(alarm.message, "Consecutive losing trades: 5");
        assert_eq!((alarm.current_value, alarm.threshold_value), (5.0, 5.0));
    }

    #[test]
    fn win_rate_needs_ten_trades() {
        let low = |win_rate_pct, total_trades| KpiSnapshot {
            win_rate_pct,
            total_trades,
            // Keep the other trade-count rules quiet.
            profit_factor: 2.0,
            sharpe_ratio: 2.0,
            ..healthy()
        };
        assert!(evaluate_alarms(&low(30.0, 9), &[]).is_empty());
        let critical = only(evaluate_alarms(&low(42.0, 10), &[]));
        assert_eq!(critical.level, AlarmLevel::Critical);
        assert_eq!(critical.alarm_type, LOW_WIN_RATE);
        assert_eq!(critical.message, "Win rate critically low: 42.00%");
        assert_eq!(critical.threshold_value, 50.0);
        let warning = only(evaluate_alarms(&low(52.0, 10), &[]));
        assert_eq!(warning.level, AlarmLevel::Warning);
        assert_eq!(warning.threshold_value, 55.0);
        assert!(evaluate_alarms(&low(55.0, 10), &[]).is_empty());
    }

    #[test]
    fn exposure_above_the_limit_warns() {
        let at_limit = KpiSnapshot {
            exposure_pct: 80.0,
            ..healthy()
        };
        assert!(evaluate_alarms(&at_limit, &[]).is_empty());
        let alarm = only(evaluate_alarms(
            &KpiSnapshot {
                exposure_pct: 85.0,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(alarm.level, AlarmLevel::Warning);
        assert_eq!(alarm.alarm_type, TOTAL_EXPOSURE_EXCEEDED);
        assert_eq!(alarm.message, "Total exposure above the limit: 85.00%");
    }

    #[test]
    fn account_balance_warns_then_escalates_to_emergency() {
        let warning = only(evaluate_alarms(
            &KpiSnapshot {
                account_value: 400.0,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(warning.level, AlarmLevel::Warning);
        assert_eq!(warning.alarm_type, ACCOUNT_BALANCE_LOW);
        assert_eq!(warning.threshold_value, 500.0);
        let emergency = only(evaluate_alarms(
            &KpiSnapshot {
                account_value: 80.0,
                ..healthy()
            },
            &[],
        ));
        assert_eq!(emergency.level, AlarmLevel::Emergency);
        assert_eq!(
            emergency.message,
            "Account balance below the minimum: 80.00"
        );
        assert_eq!(emergency.threshold_value, 100.0);
    }

    #[test]
    fn sharpe_needs_twenty_trades() {
        let weak = |total_trades| KpiSnapshot {
            sharpe_ratio: 0.32,
            total_trades,
            ..healthy()
        };
        assert!(evaluate_alarms(&weak(19), &[]).is_empty());
        let alarm = only(evaluate_alarms(&weak(20), &[]));
        assert_eq!(alarm.level, AlarmLevel::Warning);
        assert_eq!(alarm.alarm_type, SHARPE_DEGRADATION);
        assert_eq!(alarm.message, "Sharpe ratio degraded: 0.32");
    }

    #[test]
    fn profit_factor_below_one_is_critical() {
        let losing = |total_trades| KpiSnapshot {
            profit_factor: 0.85,
            total_trades,
            ..healthy()
        };
        assert!(evaluate_alarms(&losing(9), &[]).is_empty());
        let alarm = only(evaluate_alarms(&losing(10), &[]));
        assert_eq!(alarm.level, AlarmLevel::Critical);
        assert_eq!(alarm.alarm_type, PROFIT_FACTOR_LOW);
        assert_eq!(alarm.message, "Profit factor below 1.00: 0.85");
        assert_eq!((alarm.current_value, alarm.threshold_value), (0.85, 1.0));
    }

    #[test]
    fn several_problems_raise_one_alarm_each() {
        let bad = KpiSnapshot {
            account_value: 90.0,
            daily_return_pct: -8.0,
            current_drawdown_pct: 25.0,
            win_rate_pct: 30.0,
            profit_factor: 0.5,
            sharpe_ratio: -0.4,
            consecutive_losses: 7,
            exposure_pct: 95.0,
            ..healthy()
        };
        let types: Vec<String> = evaluate_alarms(&bad, &[])
            .into_iter()
            .map(|a| a.alarm_type)
            .collect();
        assert_eq!(
            types,
            [
                MAX_DRAWDOWN_EXCEEDED,
                DAILY_LOSS_LIMIT,
                CONSECUTIVE_LOSSES,
                LOW_WIN_RATE,
                TOTAL_EXPOSURE_EXCEEDED,
                ACCOUNT_BALANCE_LOW,
                SHARPE_DEGRADATION,
                PROFIT_FACTOR_LOW,
            ]
        );
    }

    #[test]
    fn figures_that_are_not_numbers_are_skipped() {
        let broken = KpiSnapshot {
            current_drawdown_pct: f64::NAN,
            account_value: f64::NAN,
            exposure_pct: f64::INFINITY,
            ..healthy()
        };
        assert!(evaluate_alarms(&broken, &[]).is_empty());
    }
}
