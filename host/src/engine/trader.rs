//! A user's trading state in memory: bot, account, open positions, running statistics and
//! alarms. It is loaded from the database on first use and changed only after the database
//! has committed the change, so it never runs ahead of what survives a crash.

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rust_decimal::Decimal;

use super::BotStatus;
use super::accounting::{self, Account, CompletedTrade, Position};
use super::totals::AccountTotals;
use crate::App;
use crate::billing::plans::Entitlement;
use crate::error::{ApiError, ApiResult};
use crate::plugins::calls::BrokerAccount;
use crate::settings::Settings;
use crate::store::orders::{self, OrderRow};
use crate::store::{accounts, alarms, alarms::AlarmRow, bots, bots::BotRow, positions};
use crate::store::{new_id, now_ms, users};

pub use crate::store::DAY_MS;

/// Figures kept up to date as trades close, for KPI snapshots and risk checks.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// The account's running totals, as `account_totals` holds them.
    pub trades: AccountTotals,
    /// UTC day number the daily figures are for.
    pub day: i64,
    pub opens_today: u32,
    pub day_start_equity: Decimal,
    pub peak_equity: Decimal,
    pub max_drawdown_pct: f64,
    /// Equity at the end of each recent UTC day (for the Sharpe ratio), oldest first.
    pub daily_closes: Vec<(i64, f64)>,
}

impl Stats {
    /// Counts a trade after its transaction committed (the row was updated in it).
    pub fn record(&mut self, trade: &CompletedTrade) {
        self.trades.add(trade);
    }

    /// Rolls the daily figures over at UTC midnight and follows the equity peak.
    pub fn observe(&mut self, now: i64, equity: Decimal) {
        let day = now.div_euclid(DAY_MS);
        if day != self.day {
            if self.day != 0 {
                // The first equity seen on a new day closes the day before.
                self.daily_closes
                    .push((self.day, accounting::float(equity)));
                if self.daily_closes.len() > 400 {
                    self.daily_closes.remove(0);
                }
            }
            self.day = day;
            self.opens_today = 0;
            self.day_start_equity = equity;
        }
        self.peak_equity = self.peak_equity.max(equity);
        let drawdown = self.drawdown_pct(equity);
        self.max_drawdown_pct = self.max_drawdown_pct.max(drawdown);
    }

    /// How far below the peak equity is, in percent (a positive number).
    pub fn drawdown_pct(&self, equity: Decimal) -> f64 {
        // At or above the peak (every new high) there is no drawdown and nothing to divide.
        if self.peak_equity <= Decimal::ZERO || equity >= self.peak_equity {
            return 0.0;
        }
        (accounting::float((self.peak_equity - equity) / self.peak_equity) * 100.0).max(0.0)
    }
}

pub struct Trader {
    pub user_id: String,
    pub bot: BotRow,
    pub account: Account,
    pub positions: Vec<Position>,
    pub entitlement: Entitlement,
    pub settings: Settings,
    /// The user's broker accounts in use (credentials opened from the vault), by broker name.
    pub accounts: HashMap<String, BrokerAccount>,
    /// Orders that may still fill (the rows of `orders` in a live state).
    pub live: Vec<OrderRow>,
    /// Inbound signals may be waiting in `signals` (set when one is accepted, cleared when a scan
    /// finds none), so scans without any do not ask the database.
    pub signals_waiting: bool,
    pub stats: Stats,
    pub active_alarms: HashMap<String, AlarmRow>,
    pub last_raised: HashMap<String, i64>,
    /// Consecutive failed scans (for backoff, then the error state).
    pub failures: u32,
    /// The books must be compared with the venue before the next order (after a start or a
    /// restart).
    pub reconcile: bool,
    /// When the books were last compared with the venue.
    pub last_venue_check_at: i64,
    pub last_snapshot_at: i64,
    pub last_persisted_at: i64,
    /// The user's lease this trader was loaded under (several instances only).
    pub held: Option<super::leases::Held>,
}

impl Trader {
    /// What the trader's writes are fenced with: none for an instance alone.
    pub fn fence(&self) -> Option<&crate::store::writer::Fence> {
        self.held.as_ref().map(|held| &held.fence)
    }

    /// Whether the trader may still send orders: always for an instance alone; with several,
    /// while this instance holds the lease it was loaded under.
    pub fn may_send(&self) -> bool {
        self.held.as_ref().is_none_or(|held| held.holds())
    }

    pub async fn load(app: &App, user_id: &str) -> ApiResult<Trader> {
        let db = &app.db.pool;
        let now = now_ms();
        let user = users::by_id(db, user_id)
            .await?
            .ok_or_else(|| ApiError::internal(format!("trader for unknown user {user_id}")))?;
        let account = match accounts::account(db, user_id).await? {
            Some(account) => account,
            None => {
                let account = Account::new(app.config.initial_capital, "USD");
                accounts::insert_account(db, user_id, &account, now).await?;
                accounts::account(db, user_id).await?.unwrap_or(account)
            }
        };
        let positions = positions::open_positions(db, user_id).await?;
        let live = orders::live(db, user_id).await?;
        let signals_waiting = crate::store::signals::count_waiting(db, user_id).await? > 0;
        let bot = match bots::bot(db, user_id).await? {
            Some(bot) => bot,
            None => BotRow {
                user_id: user_id.to_string(),
                id: new_id(),
                status: BotStatus::Stopped.as_str().into(),
                broker: String::new(),
                paper_trading: 1,
                risk_profile: "medium".into(),
                strategy: app.config.default_strategy.clone(),
                symbols: "[]".into(),
                started_at: None,
                last_scan_at: None,
                scan_seq: 0,
                strategy_state: String::new(),
                last_error: None,
            },
        };
        // The running totals, never the history: a restart costs the same at any age.
        let mut stats = Stats {
            trades: crate::store::totals::get(db, user_id).await?,
            ..Stats::default()
        };
        let equity = accounting::equity(&account, &positions);
        stats.observe(now, equity);
        stats.peak_equity = stats.peak_equity.max(account.initial_capital);
        let day_start = now.div_euclid(DAY_MS) * DAY_MS;
        stats.opens_today = orders::count_opens_since(db, user_id, day_start).await? as u32;
        let active_alarms = alarms::active_alarms(db, user_id)
            .await?
            .into_iter()
            .map(|alarm| (alarm.alarm_type.clone(), alarm))
            .collect();
        let last_raised = alarms::last_raised(db, user_id)
            .await?
            .into_iter()
            .collect();
        let entitlement = Entitlement::of(&user, now);
        let settings = crate::settings::load(app, user_id, &entitlement).await?;
        let mut trader = Trader::new(bot, account, entitlement, settings);
        trader.positions = positions;
        trader.live = live;
        trader.signals_waiting = signals_waiting;
        trader.stats = stats;
        trader.active_alarms = active_alarms;
        trader.last_raised = last_raised;
        // The books are compared with the venue before the first order.
        trader.reconcile = true;
        Ok(trader)
    }

    /// A trader with an account and nothing else yet: no positions, orders, statistics or
    /// alarms, and nothing to compare with a venue.
    pub fn new(
        bot: BotRow,
        account: Account,
        entitlement: Entitlement,
        settings: Settings,
    ) -> Trader {
        Trader {
            user_id: bot.user_id.clone(),
            settings,
            entitlement,
            bot,
            account,
            positions: Vec::new(),
            accounts: HashMap::new(),
            live: Vec::new(),
            signals_waiting: false,
            stats: Stats::default(),
            active_alarms: HashMap::new(),
            last_raised: HashMap::new(),
            failures: 0,
            reconcile: false,
            last_venue_check_at: 0,
            last_snapshot_at: 0,
            last_persisted_at: 0,
            held: None,
        }
    }

    /// The user's account at `broker`, its credentials opened from the vault on first use.
    pub async fn broker_account(
        &mut self,
        app: &App,
        broker: &str,
    ) -> Result<BrokerAccount, String> {
        if let Some(account) = self.accounts.get(broker) {
            return Ok(account.clone());
        }
        let credentials = super::credentials(app, &self.user_id, broker).await?;
        let account = BrokerAccount {
            user_id: self.user_id.clone(),
            credentials,
        };
        self.accounts.insert(broker.to_string(), account.clone());
        Ok(account)
    }

    /// Whether a live order is working for `position_id` or on `symbol`.
    pub fn live_order_for(
        &self,
        position_id: Option<&str>,
        symbol: Option<&str>,
    ) -> Option<&OrderRow> {
        self.live.iter().find(|o| {
            position_id.is_some_and(|id| o.position_id.as_deref() == Some(id))
                || symbol.is_some_and(|s| o.symbol == s)
        })
    }

    pub fn status(&self) -> BotStatus {
        BotStatus::parse(&self.bot.status)
    }

    pub fn equity(&self) -> Decimal {
        accounting::equity(&self.account, &self.positions)
    }

    pub fn symbols(&self) -> Vec<String> {
        serde_json::from_str(&self.bot.symbols).unwrap_or_default()
    }

    pub fn strategy_state(&self) -> Vec<u8> {
        BASE64.decode(&self.bot.strategy_state).unwrap_or_default()
    }

    pub fn set_strategy_state(&mut self, state: &[u8]) {
        self.bot.strategy_state = BASE64.encode(state);
    }

    pub fn position(&self, id: &str) -> Option<&Position> {
        self.positions.iter().find(|p| p.id == id)
    }

    pub fn daily_pnl(&self) -> Decimal {
        self.equity() - self.stats.day_start_equity
    }

    /// A paper trader on the pro plan (positions of up to 2,000, 10 at once, 100 opens a day)
    /// with `cash` and the default pairs.
    #[cfg(test)]
    pub fn paper_for_tests(cash: i64) -> Trader {
        let entitlement = Entitlement {
            tier: crate::billing::plans::Tier::Pro,
            trial_active: false,
            effective: crate::billing::plans::Tier::Pro,
        };
        let settings = Settings::resolve(&Default::default(), &entitlement, cash as f64);
        let bot = BotRow {
            user_id: "u1".into(),
            id: "b1".into(),
            status: "running".into(),
            broker: "paper".into(),
            paper_trading: 1,
            risk_profile: "medium".into(),
            strategy: "ema-cross".into(),
            symbols: "[\"BTC-USD\"]".into(),
            started_at: None,
            last_scan_at: None,
            scan_seq: 0,
            strategy_state: String::new(),
            last_error: None,
        };
        Trader::new(
            bot,
            Account::new(Decimal::from(cash), "USD"),
            entitlement,
            settings,
        )
    }
}
