//! Reconciliation: the books against the venue.
//!
//! - **Orders.** Every order that may still fill (`new` after a crash, `submitted`,
//!   `partially_filled`, `unknown`) is followed up by asking the venue for it by client order
//!   id: its report is booked (fills the books lack, once each; the status it reached). An order
//!   the venue does not know is looked for among the account's fills since it was written
//!   (venues forget a client order id once the order is done); only when neither knows it, past
//!   a short grace, is it taken as never placed. Nothing is ever sent again to find out.
//! - **Positions.** Before a bot's first order after a start or a restart, and every few minutes
//!   while it runs (with no order in flight), each asset it trades is compared: what the venue
//!   holds must equal what it held apart from tradehost (recorded the first time the asset is
//!   compared) plus tradehost's open positions in it (a spot venue holds assets, whatever they
//!   were bought against). A difference puts the bot in
//!   `error` with the difference in `last_error`, an audit row and an alarm; it places nothing
//!   until the user or an operator resolves it.

use std::collections::{BTreeMap, BTreeSet};

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use super::accounting::{self, Fill};
use super::alarms::{self, RECONCILIATION_MISMATCH};
use super::instruments::asset_of;
use super::order_state::{OrderEvent, OrderStatus};
use super::orders::{self, Observation, describe_error, next_check};
use super::trader::Trader;
use super::{BotStatus, IDLE, publish_status};
use crate::App;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::bindings::types::{self as wire, AlarmLevel, BrokerError, OrderQuery};
use crate::plugins::{PluginKind, decimal, off_thread};
use crate::store::accounts::AccountChange;
use crate::store::orders::{self as order_rows, OrderRow};
use crate::store::reconciliation::{self as rows, DiscrepancyRow};
use crate::store::writer::{Booking, Job, LedgerWrite};
use crate::store::{audit, iso8601, new_id, now_ms};

/// How long an order the venue does not know may still be arriving there.
const NOT_FOUND_GRACE_MS: i64 = 5_000;
/// How far before an order's creation its fills are looked for (clocks differ).
const FILL_LOOKBACK_MS: i64 = 60_000;
/// Pages of `fills-since` read when looking for an order's fills.
const FILL_PAGES: usize = 20;
/// How often a running bot's positions are compared with the venue.
pub const VENUE_CHECK_EVERY_MS: i64 = 300_000;
/// When an order's outcome cannot be learned from the venue, it is asked again this seldom.
const UNANSWERABLE_CHECK_MS: i64 = 3_600_000;

async fn broker_call<T: Send + 'static>(
    app: &App,
    broker: &str,
    call: impl FnOnce(
        &crate::plugins::PluginRuntime,
        &crate::plugins::Active,
    ) -> Result<Result<T, BrokerError>, crate::plugins::PluginError>
    + Send
    + 'static,
) -> Result<Result<T, BrokerError>, String> {
    let active = app
        .plugins
        .active(PluginKind::Broker, broker)
        .map_err(|err| err.to_string())?;
    let runtime = app.plugins.runtime().clone();
    off_thread(move || call(&runtime, &active))
        .await?
        .map_err(|err| err.to_string())
}

/// Follows up the user's live orders that are due (every one of them with `all`). An order the
/// venue cannot be asked about now is postponed; the first such failure is returned once the
/// others are done.
pub async fn orders(app: &App, trader: &mut Trader, all: bool) -> Result<(), String> {
    let now = now_ms();
    let due: Vec<OrderRow> = trader
        .live
        .iter()
        .filter(|o| all || o.next_check_at.unwrap_or(0) <= now)
        .cloned()
        .collect();
    let mut first_error = None;
    for order in due {
        if let Err(err) = check(app, trader, &order).await {
            tracing::warn!(user_id = %trader.user_id, order = %order.client_order_id, error = %err, "an order could not be reconciled now");
            let checks = order.checks + 1;
            let _ = order_rows::postpone_check(
                &app.db.pool,
                &order.id,
                next_check(now_ms(), checks),
                checks,
                &err,
            )
            .await;
            if let Some(live) = trader.live.iter_mut().find(|o| o.id == order.id) {
                live.checks = checks;
                live.next_check_at = Some(next_check(now_ms(), checks));
            }
            first_error.get_or_insert(err);
        }
    }
    match first_error {
        None => Ok(()),
        Some(err) => Err(err),
    }
}

/// Asks the venue about one order and books what it says.
async fn check(app: &App, trader: &mut Trader, order: &OrderRow) -> Result<(), String> {
    let account = trader.broker_account(app, &order.broker).await?;
    let query = OrderQuery {
        symbol: order.symbol.clone(),
        client_order_id: Some(order.client_order_id.clone()),
        order_id: order.broker_order_id.clone(),
    };
    let (asked, by) = (account.clone(), query.clone());
    let answer = broker_call(app, &order.broker, move |runtime, active| {
        runtime.broker_get_order(active, &asked, &by)
    })
    .await?;
    match answer {
        Ok(report) => {
            let venue_filled = decimal::parse(&report.filled_quantity).unwrap_or_default();
            let in_report = report
                .fills
                .iter()
                .map(|f| {
                    (
                        f.trade_id.as_str(),
                        decimal::parse(&f.quantity).unwrap_or_default(),
                    )
                })
                .collect::<BTreeMap<_, _>>()
                .values()
                .copied()
                .sum::<Decimal>();
            let mut observation = Observation::report(report);
            // The venue says more filled than its report lists: the rest is among its fills.
            if venue_filled > in_report {
                observation.fills = fills_of(app, trader, order).await?;
            }
            orders::record(app, trader, order, observation).await?;
        }
        Err(BrokerError::NotFound(_)) => {
            let fills = fills_of(app, trader, order).await?;
            let age = now_ms() - order.created_at;
            if fills.is_empty() && age < NOT_FOUND_GRACE_MS {
                // It may still be on its way to the venue: asked again once the grace is over.
                let at = order.created_at + NOT_FOUND_GRACE_MS;
                order_rows::postpone_check(
                    &app.db.pool,
                    &order.id,
                    at,
                    order.checks + 1,
                    "not yet known to the venue",
                )
                .await
                .map_err(|err| err.to_string())?;
                if let Some(live) = trader.live.iter_mut().find(|o| o.id == order.id) {
                    live.next_check_at = Some(at);
                    live.checks = order.checks + 1;
                }
                return Ok(());
            }
            let observation = Observation {
                fills,
                event: Some(OrderEvent::Vanished),
                ..Observation::default()
            };
            orders::record(app, trader, order, observation).await?;
        }
        Err(BrokerError::Unsupported(reason)) => {
            // The venue cannot say (a 0.1.0 broker): an order whose outcome is not known needs a person.
            let status = OrderStatus::parse(&order.status).unwrap_or(OrderStatus::Unknown);
            if matches!(status, OrderStatus::New | OrderStatus::Unknown) {
                let found = vec![DiscrepancyRow {
                    id: new_id(),
                    user_id: trader.user_id.clone(),
                    broker: order.broker.clone(),
                    kind: "order".into(),
                    symbol: Some(order.symbol.clone()),
                    order_id: Some(order.id.clone()),
                    expected: Some(status.as_str().into()),
                    actual: None,
                    detail: format!(
                        "order {} ({} {} {}) was sent and its outcome is unknown; the broker cannot report it ({reason})",
                        order.client_order_id, order.side, order.quantity, order.symbol
                    ),
                    status: "open".into(),
                    found_at: now_ms(),
                    resolved_at: None,
                    resolved_by: None,
                    resolution: None,
                }];
                flag(app, trader, found).await?;
            }
            let now = now_ms();
            order_rows::postpone_check(
                &app.db.pool,
                &order.id,
                now + UNANSWERABLE_CHECK_MS,
                order.checks + 1,
                &reason,
            )
            .await
            .map_err(|err| err.to_string())?;
            if let Some(live) = trader.live.iter_mut().find(|o| o.id == order.id) {
                live.next_check_at = Some(now + UNANSWERABLE_CHECK_MS);
            }
        }
        Err(err) => return Err(describe_error(&err)),
    }
    Ok(())
}

/// The account's fills of `order` since shortly before it was written.
async fn fills_of(
    app: &App,
    trader: &mut Trader,
    order: &OrderRow,
) -> Result<Vec<wire::Fill>, String> {
    let account = trader.broker_account(app, &order.broker).await?;
    let mut since = order.created_at - FILL_LOOKBACK_MS;
    let mut found: Vec<wire::Fill> = Vec::new();
    let mut seen = BTreeSet::new();
    for _ in 0..FILL_PAGES {
        let (asked, symbol) = (account.clone(), order.symbol.clone());
        let page = broker_call(app, &order.broker, move |runtime, active| {
            runtime.broker_fills_since(active, &asked, since, Some(&symbol))
        })
        .await?;
        let page = match page {
            Ok(page) => page,
            Err(BrokerError::Unsupported(_)) => return Ok(found),
            Err(err) => return Err(describe_error(&err)),
        };
        let full = page.len() >= crate::plugins::calls::MAX_ITEMS;
        let last = page.last().map(|f| f.timestamp_ms);
        for fill in page {
            let ours = fill.client_order_id == order.client_order_id
                || order.broker_order_id.as_deref() == Some(fill.order_id.as_str());
            if ours && seen.insert(fill.trade_id.clone()) {
                found.push(fill);
            }
        }
        match last {
            Some(last) if full && last > since => since = last,
            _ => break,
        }
    }
    Ok(found)
}

/// A difference between the books and the venue in one instrument.
fn position_discrepancy(
    trader: &Trader,
    broker: &str,
    symbol: &str,
    expected: Decimal,
    actual: Decimal,
    baseline: Decimal,
) -> DiscrepancyRow {
    DiscrepancyRow {
        id: new_id(),
        user_id: trader.user_id.clone(),
        broker: broker.into(),
        kind: "position".into(),
        symbol: Some(symbol.into()),
        order_id: None,
        expected: Some(decimal::text(expected)),
        actual: Some(decimal::text(actual)),
        detail: format!(
            "{broker} holds {} {symbol}; the books expect {} (tradehost's positions {} plus {} held apart from them)",
            decimal::text(actual),
            decimal::text(expected),
            decimal::text(expected - baseline),
            decimal::text(baseline)
        ),
        status: "open".into(),
        found_at: now_ms(),
        resolved_at: None,
        resolved_by: None,
        resolution: None,
    }
}

/// The books' signed quantity of `asset` at `broker`.
fn ours(trader: &Trader, broker: &str, asset: &str) -> Decimal {
    trader
        .positions
        .iter()
        .filter(|p| p.broker == broker && asset_of(&p.symbol) == asset)
        .map(|p| p.side.sign() * p.quantity)
        .sum()
}

/// What the venue holds, signed, by asset; `None` when the broker cannot say.
async fn venue_holdings(
    app: &App,
    trader: &mut Trader,
    broker: &str,
) -> Result<Option<BTreeMap<String, Decimal>>, String> {
    let account = trader.broker_account(app, broker).await?;
    let answer = broker_call(app, broker, move |runtime, active| {
        runtime.broker_positions(active, &account)
    })
    .await?;
    let positions = match answer {
        Ok(positions) => positions,
        Err(BrokerError::Unsupported(_)) => return Ok(None),
        Err(err) => return Err(format!("the venue's positions: {}", describe_error(&err))),
    };
    let mut holdings = BTreeMap::new();
    for position in positions {
        let quantity = decimal::parse(&position.quantity)
            .map_err(|err| format!("the venue's {} position: {err}", position.symbol))?
            .round_dp(accounting::SCALE);
        let signed = match position.side {
            wire::Side::Long => quantity,
            wire::Side::Short => -quantity,
        };
        *holdings
            .entry(asset_of(&position.symbol).to_string())
            .or_insert(Decimal::ZERO) += signed;
    }
    Ok(Some(holdings))
}

/// What a comparison with the venue came to.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Every broker the bot trades on was compared (none had an order in flight).
    pub complete: bool,
    pub discrepancies: Vec<DiscrepancyRow>,
}

/// Compares the books with the venue: the bot's broker for the instruments it trades, and every
/// broker a position is on. A broker with an order in flight is compared later.
pub async fn positions(app: &App, trader: &mut Trader) -> Result<Comparison, String> {
    let now = now_ms();
    let mut brokers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if !trader.bot.broker.is_empty() {
        brokers
            .entry(trader.bot.broker.clone())
            .or_default()
            .extend(trader.symbols().iter().map(|s| asset_of(s).to_string()));
    }
    for position in &trader.positions {
        brokers
            .entry(position.broker.clone())
            .or_default()
            .insert(asset_of(&position.symbol).to_string());
    }
    let mut comparison = Comparison {
        complete: true,
        discrepancies: Vec::new(),
    };
    for (broker, assets) in brokers {
        if trader.live.iter().any(|o| o.broker == broker) {
            comparison.complete = false;
            continue;
        }
        let Some(holdings) = venue_holdings(app, trader, &broker).await? else {
            continue;
        };
        for symbol in assets {
            let ours = ours(trader, &broker, &symbol);
            let theirs = holdings.get(&symbol).copied().unwrap_or_default();
            let baseline = rows::baseline(&app.db.pool, &trader.user_id, &broker, &symbol)
                .await
                .map_err(|err| err.to_string())?;
            match baseline {
                // First comparison of this instrument: what the venue holds beyond the books is not tradehost's.
                None => rows::set_baseline(
                    &app.db.pool,
                    &trader.user_id,
                    &broker,
                    &symbol,
                    theirs - ours,
                    now,
                )
                .await
                .map_err(|err| err.to_string())?,
                Some(baseline) if theirs != baseline + ours => {
                    comparison.discrepancies.push(position_discrepancy(
                        trader,
                        &broker,
                        &symbol,
                        baseline + ours,
                        theirs,
                        baseline,
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(comparison)
}

/// Records discrepancies (each once while open) and stops the bot: `error`, with the
/// difference in `last_error`, an audit row and an alarm.
pub async fn flag(
    app: &App,
    trader: &mut Trader,
    found: Vec<DiscrepancyRow>,
) -> Result<(), String> {
    let now = now_ms();
    let db = &app.db.pool;
    let open = rows::open(db, &trader.user_id)
        .await
        .map_err(|e| e.to_string())?;
    let fresh: Vec<DiscrepancyRow> = found
        .into_iter()
        .filter(|d| {
            !open.iter().any(|o| {
                o.kind == d.kind
                    && o.broker == d.broker
                    && o.symbol == d.symbol
                    && o.order_id == d.order_id
            })
        })
        .collect();
    let summary = fresh
        .iter()
        .chain(open.iter())
        .map(|d| d.detail.clone())
        .collect::<Vec<_>>()
        .join("; ");
    let mut tx = app.db.begin().await.map_err(|e| e.to_string())?;
    for discrepancy in &fresh {
        rows::insert(&mut *tx, discrepancy)
            .await
            .map_err(|e| e.to_string())?;
    }
    if !fresh.is_empty() {
        audit::record(
            &mut *tx,
            "trading.reconciliation_mismatch",
            &audit::Actor {
                user_id: Some(&trader.user_id),
                ip_address: None,
                user_agent: None,
            },
            serde_json::json!({"discrepancies": fresh.iter().map(|d| &d.detail).collect::<Vec<_>>()}),
        )
        .await
        .map_err(|e| e.to_string())?;
    }
    tx.commit().await.map_err(|e| e.to_string())?;
    tracing::error!(user_id = %trader.user_id, %summary, "the books differ from the venue; the bot is stopped");
    alarms::raise(
        app,
        trader,
        RECONCILIATION_MISMATCH,
        AlarmLevel::Critical,
        format!("The books differ from the venue: {summary}"),
        "Review the differences and resolve them (POST /api/v1/trading/reconciliation/resolve) before starting the bot again",
        now,
    )
    .await?;
    if trader.status() != BotStatus::Error
        || trader.bot.last_error.as_deref() != Some(summary.as_str())
    {
        let was_scanned = trader.status().is_scanned();
        trader.bot.last_error = Some(
            format!("Reconciliation: {summary}")
                .chars()
                .take(2000)
                .collect(),
        );
        if was_scanned {
            trader.bot.status = BotStatus::Error.as_str().into();
        }
        super::persist(app, trader).await.map_err(|e| e.message)?;
        if was_scanned {
            if let Some(cell) = app.engine.cells.get(&trader.user_id) {
                cell.next_scan_at
                    .store(IDLE, std::sync::atomic::Ordering::Release);
            }
            publish_status(app, trader, "Stopped: the books differ from the venue");
        }
    }
    Ok(())
}

// ----- what users and operators see and do -----

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct DiscrepancyView {
    pub discrepancy_id: String,
    pub broker: String,
    pub kind: String,
    pub symbol: Option<String>,
    pub order_id: Option<String>,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub detail: String,
    pub status: String,
    pub found_at: String,
    pub resolved_at: Option<String>,
    pub resolution: Option<String>,
}

fn view(d: DiscrepancyRow) -> DiscrepancyView {
    DiscrepancyView {
        discrepancy_id: d.id,
        broker: d.broker,
        kind: d.kind,
        symbol: d.symbol,
        order_id: d.order_id,
        expected: d.expected,
        actual: d.actual,
        detail: d.detail,
        status: d.status,
        found_at: iso8601(d.found_at),
        resolved_at: d.resolved_at.map(iso8601),
        resolution: d.resolution,
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Reconciliation {
    /// No unresolved discrepancy: the bot may trade.
    pub in_sync: bool,
    pub open: Vec<DiscrepancyView>,
    pub recent: Vec<DiscrepancyView>,
    pub live_orders: usize,
}

pub async fn state(app: &App, user_id: &str) -> ApiResult<Reconciliation> {
    let db = &app.db.pool;
    let open: Vec<DiscrepancyView> = rows::open(db, user_id)
        .await?
        .into_iter()
        .map(view)
        .collect();
    let recent = rows::recent(db, user_id, 20)
        .await?
        .into_iter()
        .map(view)
        .collect();
    let live_orders = super::with_trader(app, user_id, |t| t.live.len()).await?;
    Ok(Reconciliation {
        in_sync: open.is_empty(),
        open,
        recent,
        live_orders,
    })
}

#[derive(utoipa::ToSchema, Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// Ask the venue again: differences that are gone are resolved.
    Recheck,
    /// Take the venue's word: holdings beyond the books are not tradehost's; positions the
    /// venue does not hold are closed in the books at the last price; orders whose outcome
    /// cannot be learned are taken as not filled.
    AcceptVenue,
}

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    pub resolution: Resolution,
}

/// Another user's reconciliation, for an operator.
pub async fn state_of_user(app: &App, user_id: &str) -> ApiResult<Reconciliation> {
    existing_user(app, user_id).await?;
    state(app, user_id).await
}

/// Resolves another user's discrepancies, as an operator.
pub async fn resolve_for_user(
    app: &App,
    user_id: &str,
    by: &str,
    resolution: Resolution,
) -> ApiResult<Reconciliation> {
    existing_user(app, user_id).await?;
    resolve(app, user_id, by, resolution).await
}

async fn existing_user(app: &App, user_id: &str) -> ApiResult<()> {
    crate::store::users::by_id(&app.db.pool, user_id)
        .await?
        .map(|_| ())
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "User not found"))
}

/// Resolves a user's open discrepancies as asked; `by` is whoever resolves (the user or an admin).
pub async fn resolve(
    app: &App,
    user_id: &str,
    by: &str,
    resolution: Resolution,
) -> ApiResult<Reconciliation> {
    let cell = app.engine.cell(user_id);
    let mut guard = super::lock(app, &cell).await?;
    let trader = guard.as_mut().expect("loaded");
    let db = &app.db.pool;
    let now = now_ms();
    let open = rows::open(db, user_id).await?;
    if open.is_empty() {
        drop(guard);
        return state(app, user_id).await;
    }
    let broker_failed = |err: String| {
        ApiError::new(
            ErrorCode::BrokerError,
            format!("Reconciliation failed: {err}"),
        )
    };
    match resolution {
        Resolution::Recheck => {
            orders(app, trader, true).await.map_err(broker_failed)?;
            let comparison = positions(app, trader).await.map_err(broker_failed)?;
            for discrepancy in &open {
                let persists = match discrepancy.kind.as_str() {
                    "position" => {
                        !comparison.complete
                            || comparison.discrepancies.iter().any(|d| {
                                d.broker == discrepancy.broker && d.symbol == discrepancy.symbol
                            })
                    }
                    _ => trader
                        .live
                        .iter()
                        .any(|o| Some(&o.id) == discrepancy.order_id.as_ref()),
                };
                if !persists {
                    rows::resolve(db, &discrepancy.id, by, "recheck", now).await?;
                }
            }
        }
        Resolution::AcceptVenue => {
            for discrepancy in &open {
                match discrepancy.kind.as_str() {
                    "position" => accept_holding(app, trader, discrepancy)
                        .await
                        .map_err(broker_failed)?,
                    _ => {
                        if let Some(order) = trader
                            .live
                            .iter()
                            .find(|o| Some(&o.id) == discrepancy.order_id.as_ref())
                            .cloned()
                        {
                            orders::record(
                                app,
                                trader,
                                &order,
                                Observation::event(
                                    OrderEvent::Vanished,
                                    format!("taken as not filled by {by}"),
                                ),
                            )
                            .await
                            .map_err(ApiError::internal)?;
                        }
                    }
                }
                rows::resolve(db, &discrepancy.id, by, "accept_venue", now).await?;
            }
        }
    }
    let left = rows::count_open(db, user_id).await?;
    audit::record(
        db,
        "trading.reconciliation_resolved",
        &audit::Actor {
            user_id: Some(by),
            ip_address: None,
            user_agent: None,
        },
        serde_json::json!({"user_id": user_id, "resolution": resolution, "open_before": open.len(), "open_after": left}),
    )
    .await?;
    if left == 0 {
        alarms::clear(app, trader, RECONCILIATION_MISMATCH, now)
            .await
            .map_err(ApiError::internal)?;
        trader.bot.last_error =
            Some("Reconciled with the venue; start the bot to trade again".into());
        super::persist(app, trader).await?;
        trader.reconcile = true;
    }
    drop(guard);
    state(app, user_id).await
}

/// Takes the venue's holding of one instrument as right.
async fn accept_holding(
    app: &App,
    trader: &mut Trader,
    discrepancy: &DiscrepancyRow,
) -> Result<(), String> {
    let (broker, Some(symbol)) = (&discrepancy.broker, &discrepancy.symbol) else {
        return Ok(());
    };
    let holdings = venue_holdings(app, trader, broker)
        .await?
        .unwrap_or_default();
    let theirs = holdings.get(symbol).copied().unwrap_or_default();
    let baseline = rows::baseline(&app.db.pool, &trader.user_id, broker, symbol)
        .await
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let held = ours(trader, broker, symbol);
    // What of the books the venue still holds: the books keep no more than that.
    let supported = theirs - baseline;
    let target = if held > Decimal::ZERO {
        supported.clamp(Decimal::ZERO, held)
    } else if held < Decimal::ZERO {
        supported.clamp(held, Decimal::ZERO)
    } else {
        Decimal::ZERO
    };
    let mut excess = (held - target).abs();
    let positions: Vec<String> = trader
        .positions
        .iter()
        .filter(|p| &p.broker == broker && asset_of(&p.symbol) == symbol)
        .map(|p| p.id.clone())
        .collect();
    for position_id in positions {
        if excess.is_zero() {
            break;
        }
        let quantity = trader
            .position(&position_id)
            .map_or(Decimal::ZERO, |p| p.quantity)
            .min(excess);
        write_off(app, trader, &position_id, quantity, &discrepancy.id).await?;
        excess -= quantity;
    }
    rows::set_baseline(
        &app.db.pool,
        &trader.user_id,
        broker,
        symbol,
        theirs - target,
        now_ms(),
    )
    .await
    .map_err(|e| e.to_string())
}

/// Closes `quantity` of a position in the books only (the venue no longer holds it), at its last
/// price and without a fee, as a completed trade with exit reason `reconciliation`.
async fn write_off(
    app: &App,
    trader: &mut Trader,
    position_id: &str,
    quantity: Decimal,
    reference: &str,
) -> Result<(), String> {
    let now = now_ms();
    let Some(mut position) = trader.position(position_id).cloned() else {
        return Ok(());
    };
    let mut account = trader.account.clone();
    let fill = Fill {
        quantity,
        price: position.current_price,
        fee: Decimal::ZERO,
        at_ms: now,
    };
    let (entry, _) = account.close(
        &mut position,
        fill,
        "reconciliation",
        new_id(),
        String::new(),
    );
    let trade = accounting::trade_of_closes(
        new_id(),
        "reconciliation",
        &position,
        std::slice::from_ref(&entry),
    )
    .ok_or("nothing to write off")?;
    let booking = Booking {
        user_id: trader.user_id.clone(),
        positions: vec![position.clone()],
        ledger: vec![LedgerWrite {
            order_id: reference.to_string(),
            fill_id: Some(reference.to_string()),
            entry,
        }],
        events: vec![crate::notices::event(
            Some(&trader.user_id),
            crate::notices::Kind::TradeClosed,
            &super::orders::closed_notice(&trade),
            now,
        )],
        account: Some(AccountChange::between(
            &trader.user_id,
            &trader.account,
            &account,
        )),
        trade: Some(trade.clone()),
        ..Booking::default()
    };
    app.db
        .write_under(trader.fence(), Job::Booking(Box::new(booking)))
        .await
        .map_err(|e| e.to_string())?;
    app.notifier.wake();
    trader.account = account;
    trader.stats.record(&trade);
    if position.quantity.is_zero() {
        trader.positions.retain(|p| p.id != position_id);
    } else if let Some(slot) = trader.positions.iter_mut().find(|p| p.id == position_id) {
        *slot = position;
    }
    Ok(())
}
