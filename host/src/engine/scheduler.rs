//! The scheduler: each tick takes the bots that are due, fetches the market data they need once
//! per (broker, symbol, interval), runs their scans with bounded parallelism, and writes the
//! tick's equity snapshots and bot rows in one transaction. A scan that fails, or panics, moves
//! its bot's next scan back and counts toward its retries.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::scan::{self, CANDLE_HISTORY, Market, MarketKey, ScanFailure};
use super::{BotStatus, Cell, IDLE, MAX_RETRIES, lock_scanned, publish_status};
use crate::App;
use crate::plugins::PluginKind;
use crate::plugins::bindings::types::BrokerError;
use crate::store::bots::BotRow;
use crate::store::now_ms;
use crate::store::snapshots::Snapshot;
use crate::store::writer::{Fence, Job, ScanProgress, WriteError};

/// How often a bot's scan progress (sequence, strategy state) is written while nothing else changes.
const PROGRESS_EVERY_MS: i64 = 10_000;

/// Runs forever; spawned once at liftoff.
pub async fn run(app: App) {
    match super::resume_all(&app).await {
        Ok(0) => {}
        Ok(count) => tracing::info!("resuming {count} bot(s)"),
        Err(err) => tracing::error!(error = %err, "cannot resume bots"),
    }
    loop {
        let now = now_ms();
        let due: Vec<Arc<Cell>> = app
            .engine
            .cells
            .iter()
            .filter(|cell| cell.next_scan_at.load(Ordering::Acquire) <= now)
            .map(|cell| cell.clone())
            .collect();
        if due.is_empty() {
            let next = app
                .engine
                .cells
                .iter()
                .map(|cell| cell.next_scan_at.load(Ordering::Acquire))
                .min()
                .unwrap_or(IDLE);
            let wait = next.saturating_sub(now).clamp(2, 1000) as u64;
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(wait)) => {}
                _ = app.engine.wake.notified() => {}
            }
            continue;
        }
        tick(&app, due).await;
    }
}

/// One tick over the due bots. Public for the benchmark.
pub async fn tick(app: &App, due: Vec<Arc<Cell>>) {
    let market = fetch_market(app, &due).await;
    let market = Arc::new(market);
    let permits = Arc::new(Semaphore::new(app.config.scan_parallelism));
    let mut scans = JoinSet::new();
    let mut cells = HashMap::new();
    for cell in due {
        let app = app.clone();
        let market = market.clone();
        let permits = permits.clone();
        let task_cell = cell.clone();
        let handle = scans.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore open");
            scan_one(&app, &task_cell, &market).await
        });
        cells.insert(handle.id(), cell);
    }
    let mut progress = ScanProgress::default();
    while let Some(result) = scans.join_next_with_id().await {
        match result {
            Ok((_, scanned)) => {
                progress.snapshots.extend(scanned.snapshot);
                progress.bots.extend(scanned.bot);
                progress.fences.extend(scanned.fence);
            }
            Err(err) => {
                tracing::error!(error = %err, "a scan task panicked");
                if let Some(cell) = cells.get(&err.id()) {
                    failed(app, cell, format!("the scan failed unexpectedly: {err}")).await;
                }
            }
        }
    }
    if let Err(err) = write_batch(app, progress).await {
        tracing::error!(error = %err, "writing the tick's snapshots failed");
    }
}

/// Writes what the tick's scans leave behind through the books' writer: on SQLite a second
/// writer would hold the write lock while bookings wait. A user's rows are left out when their
/// lease moved on during the tick.
async fn write_batch(app: &App, progress: ScanProgress) -> Result<(), WriteError> {
    if progress.snapshots.is_empty() && progress.bots.is_empty() {
        return Ok(());
    }
    app.db
        .write(Job::ScanProgress(Box::new(progress)))
        .await
        .map(drop)
}

/// What one scan leaves for the tick's write.
#[derive(Default)]
struct Scanned {
    snapshot: Option<Snapshot>,
    bot: Option<BotRow>,
    /// The lease the scan ran under (several instances only).
    fence: Option<Fence>,
}

/// Traders loaded at the same time when a tick finds them not in memory.
const LOAD_PARALLELISM: usize = 8;

/// Loads the traders of the due bots that are not in memory yet (after a start, every one),
/// several at a time: a load is a dozen reads, and one after another they would hold a start
/// with thousands of bots for seconds before their positions are watched again. A load that
/// fails is tried again where the tick locks the bot.
async fn load_missing(app: &App, due: &[Arc<Cell>]) {
    let permits = Arc::new(Semaphore::new(LOAD_PARALLELISM));
    let mut loads = JoinSet::new();
    for cell in due {
        if !cell.trader.try_lock().is_ok_and(|trader| trader.is_none()) {
            continue;
        }
        let (app, cell, permits) = (app.clone(), cell.clone(), permits.clone());
        loads.spawn(async move {
            let _permit = permits.acquire_owned().await.expect("semaphore open");
            let _ = lock_scanned(&app, &cell).await;
        });
    }
    while loads.join_next().await.is_some() {}
}

/// Candles for every (broker, symbol, interval) the due bots trade, one plugin call each.
async fn fetch_market(app: &App, due: &[Arc<Cell>]) -> Market {
    load_missing(app, due).await;
    let mut keys: HashSet<MarketKey> = HashSet::new();
    for cell in due {
        let Ok(Some(guard)) = lock_scanned(app, cell).await else {
            continue;
        };
        let Some(trader) = guard.as_ref() else {
            continue;
        };
        if !trader.status().is_scanned() || trader.bot.broker.is_empty() {
            continue;
        }
        let interval = scan::strategy_interval(app, &trader.bot.strategy);
        for symbol in trader.symbols() {
            keys.insert(MarketKey {
                broker: trader.bot.broker.clone(),
                symbol,
                interval: interval.clone(),
            });
        }
        // Positions on another broker are marked at that broker's prices.
        for position in &trader.positions {
            keys.insert(MarketKey {
                broker: position.broker.clone(),
                symbol: position.symbol.clone(),
                interval: interval.clone(),
            });
        }
    }
    let now = now_ms();
    let mut fetches = JoinSet::new();
    for key in keys {
        let runtime = app.plugins.runtime().clone();
        let active = app.plugins.active(PluginKind::Broker, &key.broker);
        fetches.spawn_blocking(move || {
            let candles = match active {
                Err(err) => Err(ScanFailure::from(err.to_string())),
                Ok(active) => match runtime.broker_candles(
                    &active,
                    &key.symbol,
                    &key.interval,
                    CANDLE_HISTORY,
                    now,
                ) {
                    Ok(Ok(candles)) => Ok(Arc::new(candles)),
                    Ok(Err(BrokerError::RateLimited(ms))) => Err(ScanFailure {
                        reason: format!("the broker asks to wait {ms} ms"),
                        wait_ms: Some(u64::from(ms)),
                    }),
                    Ok(Err(err)) => Err(ScanFailure::from(format!("broker: {err:?}"))),
                    Err(err) => Err(ScanFailure::from(err.to_string())),
                },
            };
            (key, candles)
        });
    }
    let mut market = Market::new();
    while let Some(result) = fetches.join_next().await {
        if let Ok((key, candles)) = result {
            market.insert(key, candles);
        }
    }
    market
}

/// Scans one bot and schedules its next scan: one interval on, or a doubling backoff after a
/// failure, or `error` once the retries are used up.
async fn scan_one(app: &App, cell: &Cell, market: &Market) -> Scanned {
    let interval_ms = app.config.scan_interval.as_millis() as i64;
    let mut guard = match lock_scanned(app, cell).await {
        Ok(Some(guard)) => guard,
        // Not this instance's (any more): its lease loop scans it when it holds it.
        Ok(None) => {
            cell.next_scan_at.store(IDLE, Ordering::Release);
            return Scanned::default();
        }
        Err(_) => {
            app.engine.schedule(cell, now_ms() + interval_ms);
            return Scanned::default();
        }
    };
    let trader = guard.as_mut().expect("loaded");
    if !trader.status().is_scanned() {
        cell.next_scan_at.store(IDLE, Ordering::Release);
        return Scanned::default();
    }
    // The lease's renewal is late: nothing is done for the bot until it is renewed (or lost).
    if !trader.may_send() {
        cell.next_scan_at
            .store(now_ms() + interval_ms, Ordering::Release);
        return Scanned::default();
    }
    let started = std::time::Instant::now();
    match scan::scan(app, trader, market).await {
        Ok(outcome) => {
            app.engine.scans.fetch_add(1, Ordering::Relaxed);
            let next = if trader.status().is_scanned() {
                now_ms() + interval_ms
            } else {
                IDLE
            };
            cell.next_scan_at.store(next, Ordering::Release);
            if outcome.status_changed
                && let Err(err) = super::persist(app, trader).await
            {
                tracing::error!(user_id = %trader.user_id, error = %err, "saving the bot failed");
            }
            let bot = (now_ms() - trader.last_persisted_at >= PROGRESS_EVERY_MS).then(|| {
                trader.last_persisted_at = now_ms();
                trader.bot.clone()
            });
            Scanned {
                snapshot: outcome.snapshot,
                bot,
                fence: trader.fence().cloned(),
            }
        }
        // A venue that asked to wait while the scan ran is waited for: the bot has not failed.
        Err(ScanFailure { reason, wait_ms })
            if wait_ms.is_some()
                || app
                    .plugins
                    .runtime()
                    .venue_asked_to_wait(&trader.bot.broker, &trader.user_id, started)
                    .is_some() =>
        {
            let asked = app
                .plugins
                .runtime()
                .venue_asked_to_wait(&trader.bot.broker, &trader.user_id, started)
                .map_or(0, |left| left.as_millis() as u64);
            let wait_ms = i64::try_from(wait_ms.unwrap_or(0).max(asked))
                .unwrap_or(i64::MAX)
                .max(interval_ms);
            tracing::debug!(user_id = %trader.user_id, %reason, wait_ms, "scan waits for the venue");
            cell.next_scan_at
                .store(now_ms().saturating_add(wait_ms), Ordering::Release);
            Scanned::default()
        }
        Err(ScanFailure { reason, .. }) => {
            record_failure(app, cell, trader, reason);
            if trader.status() == BotStatus::Error
                && let Err(err) = super::persist(app, trader).await
            {
                tracing::error!(user_id = %trader.user_id, error = %err, "saving the bot failed");
            }
            Scanned::default()
        }
    }
}

/// Counts a failed scan: the next one waits 1, 2, 4 ... intervals; after [`MAX_RETRIES`] the bot
/// goes to `error`.
fn record_failure(app: &App, cell: &Cell, trader: &mut super::Trader, reason: String) {
    let interval_ms = app.config.scan_interval.as_millis() as i64;
    trader.failures += 1;
    tracing::warn!(user_id = %trader.user_id, failures = trader.failures, %reason, "scan failed");
    if trader.failures > MAX_RETRIES {
        trader.bot.status = BotStatus::Error.as_str().into();
        trader.bot.last_error = Some(format!("{reason} (after {MAX_RETRIES} retries)"));
        trader.accounts.clear();
        cell.next_scan_at.store(IDLE, Ordering::Release);
        publish_status(app, trader, "Bot stopped on an error");
        return;
    }
    let backoff = interval_ms
        .saturating_mul(1 << trader.failures.min(10))
        .min(300_000);
    cell.next_scan_at
        .store(now_ms() + backoff, Ordering::Release);
}

/// A scan that panicked: its bot is treated as after any failed scan.
async fn failed(app: &App, cell: &Cell, reason: String) {
    // The panicking task released the lock as it unwound.
    let Ok(Some(mut guard)) = lock_scanned(app, cell).await else {
        return;
    };
    let Some(trader) = guard.as_mut() else { return };
    record_failure(app, cell, trader, reason);
    if trader.status() == BotStatus::Error
        && let Err(err) = super::persist(app, trader).await
    {
        tracing::error!(user_id = %trader.user_id, error = %err, "saving the bot failed");
    }
}
