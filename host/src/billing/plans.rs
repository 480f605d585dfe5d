//! The tier table of platform-api.md (Limits). The one place tier limits are written down.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    Free,
    Basic,
    Pro,
    Enterprise,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TierLimits {
    pub max_position_size_usd: f64,
    pub max_positions: u32,
    pub max_daily_trades: u32,
    pub api_calls_per_minute: u32,
    /// `None`: unlimited.
    #[serde(skip)]
    pub max_exchange_connections: Option<u32>,
    #[serde(skip)]
    pub live_trading: bool,
}

impl Tier {
    pub const ALL: [Tier; 4] = [Tier::Free, Tier::Basic, Tier::Pro, Tier::Enterprise];

    pub fn parse(name: &str) -> Option<Tier> {
        Self::ALL.into_iter().find(|tier| tier.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Free => "free",
            Tier::Basic => "basic",
            Tier::Pro => "pro",
            Tier::Enterprise => "enterprise",
        }
    }

    pub fn limits(self) -> TierLimits {
        let (size, positions, trades, calls, connections, live) = match self {
            Tier::Free => (0.0, 3, 10, 10, Some(1), false),
            Tier::Basic => (500.0, 5, 30, 30, Some(2), true),
            Tier::Pro => (2000.0, 10, 100, 100, Some(5), true),
            Tier::Enterprise => (10_000.0, 50, 500, 500, None, true),
        };
        TierLimits {
            max_position_size_usd: size,
            max_positions: positions,
            max_daily_trades: trades,
            api_calls_per_minute: calls,
            max_exchange_connections: connections,
            live_trading: live,
        }
    }

    /// Monthly and yearly list prices in USD (platform-api.md, Limits).
    pub fn price_monthly(self) -> f64 {
        match self {
            Tier::Free => 0.0,
            Tier::Basic => 49.0,
            Tier::Pro => 149.0,
            Tier::Enterprise => 499.0,
        }
    }

    pub fn price_yearly(self) -> f64 {
        match self {
            Tier::Free => 0.0,
            Tier::Basic => 470.0,
            Tier::Pro => 1430.0,
            Tier::Enterprise => 4790.0,
        }
    }

    /// The tier whose limits apply: a free user in an active trial gets basic's (decisions.md).
    pub fn effective(self, trial_active: bool) -> Tier {
        if self == Tier::Free && trial_active {
            Tier::Basic
        } else {
            self
        }
    }
}

/// What a user's subscription grants right now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entitlement {
    pub tier: Tier,
    pub trial_active: bool,
    /// The tier whose limits apply (basic's during a free user's trial).
    pub effective: Tier,
}

impl Entitlement {
    pub fn of(user: &crate::store::users::UserRow, now_ms: i64) -> Entitlement {
        let tier = Tier::parse(&user.subscription_tier).unwrap_or(Tier::Free);
        let trial_active = user.trial_ends_at.is_some_and(|ends| ends > now_ms);
        Entitlement {
            tier,
            trial_active,
            effective: tier.effective(trial_active),
        }
    }

    pub fn limits(&self) -> TierLimits {
        self.effective.limits()
    }

    /// Live trading needs a paid tier or an active trial; paper trading is open to everyone.
    pub fn allows_live_trading(&self) -> bool {
        self.limits().live_trading
    }

    /// The largest position allowed. The free tier's 0 means "no live trading"; its paper
    /// positions get basic's size so a free user can try the platform.
    pub fn max_position_size_usd(&self, paper: bool) -> f64 {
        match self.limits().max_position_size_usd {
            size if size > 0.0 => size,
            _ if paper => Tier::Basic.limits().max_position_size_usd,
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_spec() {
        let rows: Vec<(f64, u32, u32, u32)> = Tier::ALL
            .iter()
            .map(|t| {
                let l = t.limits();
                (
                    l.max_position_size_usd,
                    l.max_positions,
                    l.max_daily_trades,
                    l.api_calls_per_minute,
                )
            })
            .collect();
        assert_eq!(
            rows,
            vec![
                (0.0, 3, 10, 10),
                (500.0, 5, 30, 30),
                (2000.0, 10, 100, 100),
                (10000.0, 50, 500, 500)
            ]
        );
        assert_eq!(Tier::Free.effective(true), Tier::Basic);
        assert_eq!(Tier::Free.effective(false), Tier::Free);
        assert_eq!(Tier::Pro.effective(true), Tier::Pro);
        assert_eq!(Tier::parse("pro"), Some(Tier::Pro));
        assert_eq!(Tier::parse("gold"), None);
    }
}
