//! A restart under load: how long after the server starts every open position of every running
//! bot is managed again (loaded with its stop and take-profit, and checked against the market).
//!
//! `cargo bench -p tradehost --bench restart` writes `BENCH_BOTS` (default 2,000) running paper
//! bots, each with `BENCH_TRADES` (default 10,000) completed trades, their running totals and an
//! open position with a stop and a take-profit on each of its two symbols, on SQLite (or
//! `DATABASE_URL`). It then drops that server and starts a new one on the same database, and
//! measures the time from the start until every bot has completed its first scan: each scan
//! marks the bot's positions and checks their stops, so that is when every position is managed.
//! The strict risk rule is active and the stops are far from the market, so the scans place no
//! orders and the figure is the restart's own.

mod support;

use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use support::{bots_that_place_nothing, env_or};
use tradehost::App;
use tradehost::engine::accounting::{Position, Side};
use tradehost::engine::{self, with_trader};
use tradehost::store::{DAY_MS, StoredDecimal, now_ms, positions, totals};

/// The server with a scan interval longer than the measurement: each bot scans once in it.
async fn app(dir: &std::path::Path) -> App {
    support::app(dir, &[("TRADEHOST_SCAN_INTERVAL", "600")]).await
}

/// `count` completed trades of every user (alternately +1.5 and -1 net), ending now, in one
/// statement per user; and each user's running totals of them.
async fn seed_history(app: &App, users: &[String], count: u64) {
    let now = now_ms();
    let first_close = now - count as i64 * 60_000;
    for user_id in users {
        let query = sqlx::query(
            "INSERT INTO trades (id, user_id, position_id, broker, symbol, side, quantity, entry_price, \
             exit_price, size_usd, gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, \
             duration_minutes, entry_fee, strategy) \
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < CAST($2 AS BIGINT)) \
             SELECT $1 || '-t' || CAST(i AS TEXT), $1, $1 || '-p' || CAST(i AS TEXT), 'paper', \
             CASE WHEN i % 2 = 0 THEN 'BTC-USD' ELSE 'ETH-USD' END, 'long', $4, $5, \
             CASE WHEN i % 2 = 0 THEN $6 ELSE $7 END, $8, CASE WHEN i % 2 = 0 THEN $9 ELSE $10 END, $11, \
             CASE WHEN i % 2 = 0 THEN $12 ELSE $13 END, $14, 'signal', \
             CAST($3 AS BIGINT) + i * 60000 - 30000, CAST($3 AS BIGINT) + i * 60000, 0, $15, 'ema-cross' \
             FROM n",
        )
        .bind(user_id)
        .bind(count as i64)
        .bind(first_close);
        // quantity, entry, exit (win, loss), size, gross (win, loss), fees, net (win, loss),
        // pnl %, entry fee
        let amounts = [
            "0.01", "100", "260", "10", "1", "1.6", "-0.9", "0.1", "1.5", "-1", "0", "0.05",
        ];
        let query = amounts.iter().fold(query, |query, amount| {
            query.bind(StoredDecimal(amount.parse().unwrap()))
        });
        query.execute(app.db.pool.as_sqlite()).await.unwrap();
    }
    // The totals of that history, which booking would have kept (one row per account).
    let (wins, losses) = (count.div_ceil(2) as i64, (count / 2) as i64);
    let net = Decimal::new(15, 1) * Decimal::from(wins) - Decimal::from(losses);
    let profit = Decimal::new(15, 1) * Decimal::from(wins);
    for user_id in users {
        sqlx::query(
            "INSERT INTO account_totals (user_id, trades, winners, losers, net_pnl, profit, loss, fees, volume, \
             best_trade, worst_trade, streak, streak_started_at, last_closed_at, updated_at, \
             longest_win_streak, longest_loss_streak, hold_ms, first_closed_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $13, $14, 1, $10, $10, $10, 1, 1, $11, $12)",
        )
        .bind(user_id)
        .bind(count as i64)
        .bind(wins)
        .bind(losses)
        .bind(StoredDecimal(net))
        .bind(StoredDecimal(profit))
        .bind(StoredDecimal(Decimal::from(losses)))
        .bind(StoredDecimal(Decimal::new(1, 1) * Decimal::from(count)))
        .bind(StoredDecimal(Decimal::from(count)))
        .bind(first_close + (count as i64 - 1) * 60_000)
        .bind(count as i64 * 30_000)
        .bind(first_close)
        .bind(StoredDecimal(Decimal::new(15, 1)))
        .bind(StoredDecimal(-Decimal::ONE))
        .execute(app.db.pool.as_sqlite())
        .await
        .unwrap();
    }
    totals::get(&app.db.pool, &users[0]).await.unwrap();
}

/// An open long on each of the user's two symbols, its stop far below and its take-profit far
/// above the market.
async fn open_positions(app: &App, users: &[String]) {
    let now = now_ms();
    for user_id in users {
        for (symbol, price) in [("BTC-USD", 60_000), ("ETH-USD", 3_000)] {
            let price = Decimal::from(price);
            let quantity = Decimal::new(1, 3);
            let position = Position {
                id: uuid::Uuid::new_v4().to_string(),
                broker: "paper".into(),
                strategy: "ema-cross".into(),
                symbol: symbol.into(),
                side: Side::Long,
                quantity,
                entry_price: price,
                cost: price * quantity,
                entry_fees: Decimal::ZERO,
                stop_loss: Some(Decimal::ONE),
                take_profit: Some(price * Decimal::from(1_000)),
                trail_pct: None,
                extreme_price: price,
                current_price: price,
                opened_at_ms: now - DAY_MS,
                closing: None,
            };
            positions::write(&app.db.pool, &[(user_id, &position)], now)
                .await
                .unwrap();
        }
    }
}

fn main() {
    let bots = env_or("BENCH_BOTS", 2000);
    let trades = env_or("BENCH_TRADES", 10_000);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let seeding = Instant::now();
        let app = app(dir.path()).await;
        bots_that_place_nothing(&app, bots, "ema-cross").await;
        let users: Vec<String> = sqlx::query_scalar("SELECT user_id FROM bots ORDER BY user_id")
            .fetch_all(app.db.pool.as_sqlite())
            .await
            .unwrap();
        seed_history(&app, &users, trades).await;
        open_positions(&app, &users).await;
        println!(
            "seeded {bots} running bots, {} completed trades and {} open positions in {:.0} s",
            bots * trades,
            bots * 2,
            seeding.elapsed().as_secs_f64()
        );
        app.db.pool.close().await;
        app.db.grouped.close().await;
        drop(app);

        // The restart: a new server on the same database.
        let started = Instant::now();
        let app = self::app(dir.path()).await;
        let initialised = started.elapsed();
        let scheduler = tokio::spawn(engine::run(app.clone()));
        while app.engine.scans_completed() < bots {
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "{} of {bots} bots scanned after 300 s",
                app.engine.scans_completed()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let managed = started.elapsed();
        scheduler.abort();

        // What the scans worked on: every position, with its stops, and the totals of the history.
        let mut armed = 0;
        for user_id in &users {
            let (stops, trades_seen) = with_trader(&app, user_id, |trader| {
                (
                    trader
                        .positions
                        .iter()
                        .filter(|p| p.stop_loss.is_some() && p.take_profit.is_some())
                        .count(),
                    trader.stats.trades.sums.trades,
                )
            })
            .await
            .unwrap();
            assert_eq!(trades_seen, trades, "the trader reads its running totals");
            armed += stops;
        }
        assert_eq!(
            armed as u64,
            bots * 2,
            "every position is loaded with its stops"
        );
        println!(
            "restart with {bots} running bots of {trades} trades each: server ready in {:.2} s, \
             every bot scanned and its {} positions managed {:.2} s after the start",
            initialised.as_secs_f64(),
            bots * 2,
            managed.as_secs_f64(),
        );
        support::drop_created_databases().await;
    });
}
