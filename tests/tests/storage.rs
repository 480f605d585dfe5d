//! Storage that follows users, not history: retention thins and removes on its schedule, by a
//! rule that keeps the same rows whenever it runs, and never touches what is still in use.

use std::time::{Duration, Instant};

use tradehost_blackbox::{Server, decimal_literal, decimal_sql, email};

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
const MINUTE: i64 = 60_000;

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[tokio::test]
async fn retention_thins_histories_and_removes_what_ended() {
    let server = Server::options()
        .env("TRADEHOST_RETENTION_INTERVAL", "1")
        .start()
        .await;
    let (user_id, token) = server.user(&email("retention")).await;
    // One reading of the clock: two could straddle a millisecond and shift every bucket.
    let now = now_ms();
    let today = now - now.rem_euclid(DAY);
    let five_days_ago = today - 5 * DAY;
    let long_ago = today - 100 * DAY;

    // Tracker snapshots: three in each of two hours five days ago (the last of each hour stays),
    // two at the same instant (the greater id stays), two hours of one day a hundred days ago
    // (the last of the day stays), three within the last hour and three manual ones five days
    // ago (all stay).
    let mut tracker = vec![
        ("t-a1", five_days_ago + 10 * HOUR, "tracker"),
        ("t-a2", five_days_ago + 10 * HOUR + 20 * MINUTE, "tracker"),
        ("t-a3", five_days_ago + 10 * HOUR + 40 * MINUTE, "tracker"),
        ("t-b1", five_days_ago + 11 * HOUR, "tracker"),
        ("t-b2", five_days_ago + 11 * HOUR + 59 * MINUTE, "tracker"),
        ("t-b3", five_days_ago + 11 * HOUR + 30 * MINUTE, "tracker"),
        ("t-c1", five_days_ago + 12 * HOUR + 5 * MINUTE, "tracker"),
        ("t-c2", five_days_ago + 12 * HOUR + 5 * MINUTE, "tracker"),
        ("t-d1", long_ago + 3 * HOUR, "tracker"),
        ("t-d2", long_ago + 7 * HOUR + 30 * MINUTE, "tracker"),
        ("m-1", five_days_ago + 10 * HOUR, "manual"),
        ("m-2", five_days_ago + 10 * HOUR + MINUTE, "manual"),
        ("m-3", five_days_ago + 10 * HOUR + 2 * MINUTE, "manual"),
    ];
    let recent = now_ms() - 30 * MINUTE;
    for (i, id) in ["r-1", "r-2", "r-3"].into_iter().enumerate() {
        tracker.push((id, recent + i as i64 * MINUTE, "tracker"));
    }
    for (id, at, source) in &tracker {
        server
            .exec(&format!(
                "INSERT INTO performance_snapshots (id, user_id, taken_at, source, cash, positions_value, \
                 unrealized_pnl, realized_pnl_today, total_trades, winning_trades, losing_trades) \
                 VALUES ('{id}', '{user_id}', {at}, '{source}', 10000, 0, 0, 0, 0, 0, 0)"
            ))
            .await;
    }
    // The equity curve: two points an hour five days ago, two in the last hour.
    let money = decimal_literal("10000");
    for at in [
        five_days_ago + 10 * HOUR,
        five_days_ago + 10 * HOUR + 30 * MINUTE,
        recent,
        recent + MINUTE,
    ] {
        server
            .exec(&format!(
                "INSERT INTO equity_snapshots (user_id, at, equity, cash, unrealized_pnl) \
                 VALUES ('{user_id}', {at}, {money}, {money}, 0)"
            ))
            .await;
    }
    // Credentials: a session revoked forty days ago with its token, and an expired refresh
    // token on the user's live session.
    let live_session = server
        .scalar(&format!(
            "SELECT id FROM sessions WHERE user_id = '{user_id}'"
        ))
        .await
        .unwrap();
    let old = now_ms() - 40 * DAY;
    server
        .exec(&format!(
            "INSERT INTO sessions (id, user_id, created_at, expires_at, last_used_at, revoked_at) \
             VALUES ('s-ended', '{user_id}', {old}, {}, {old}, {old})",
            now_ms() + DAY
        ))
        .await;
    for (hash, session) in [("h-ended", "s-ended"), ("h-expired", live_session.as_str())] {
        server
            .exec(&format!(
                "INSERT INTO refresh_tokens (token_hash, session_id, created_at, expires_at) \
                 VALUES ('{hash}', '{session}', {old}, {})",
                old + DAY
            ))
            .await;
    }
    // Audit rows 400 and 10 days old; mail delivered 40 and 5 days ago, and mail held 40 days.
    for (id, age) in [("audit-old", 400), ("audit-kept", 10)] {
        server
            .exec(&format!(
                "INSERT INTO audit_log (id, event_type, user_id, metadata, created_at) \
                 VALUES ('{id}', 'test.event', '{user_id}', '{{}}', {})",
                now_ms() - age * DAY
            ))
            .await;
    }
    for (id, status, age) in [
        ("mail-old", "sent", 40),
        ("mail-kept", "sent", 5),
        ("mail-held", "held", 40),
    ] {
        let at = now_ms() - age * DAY;
        server
            .exec(&format!(
                "INSERT INTO mail_outbox (id, to_address, subject, body, kind, status, attempts, created_at, sent_at) \
                 VALUES ('{id}', 'x@example.com', 's', 'b', 'test', '{status}', 1, {at}, {at})"
            ))
            .await;
    }

    let ids = |sql: String| {
        let server = &server;
        async move {
            let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .fetch_all(server.db().await)
                .await
                .unwrap();
            let mut ids: Vec<String> = rows.into_iter().map(|r| r.0).collect();
            ids.sort();
            ids
        }
    };
    let expected_tracker = [
        "m-1", "m-2", "m-3", "r-1", "r-2", "r-3", "t-a3", "t-b2", "t-c2", "t-d2",
    ];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let kept = ids(format!(
            "SELECT id FROM performance_snapshots WHERE user_id = '{user_id}'"
        ))
        .await;
        if kept == expected_tracker {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "tracker snapshots after retention: {kept:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The run that thinned the snapshots did the rest in the same pass: wait for one more.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let equity: Vec<(i64,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT at FROM equity_snapshots WHERE user_id = '{user_id}' ORDER BY at"
    )))
    .fetch_all(server.db().await)
    .await
    .unwrap();
    assert_eq!(
        equity.into_iter().map(|r| r.0).collect::<Vec<_>>(),
        [
            five_days_ago + 10 * HOUR + 30 * MINUTE,
            recent,
            recent + MINUTE
        ]
    );
    assert_eq!(
        ids("SELECT token_hash FROM refresh_tokens WHERE token_hash LIKE 'h-%'".into()).await,
        Vec::<String>::new()
    );
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM sessions WHERE id = 's-ended'")
            .await,
        0
    );
    assert_eq!(
        ids("SELECT id FROM audit_log WHERE id LIKE 'audit-%'".into()).await,
        ["audit-kept"]
    );
    assert_eq!(
        ids("SELECT id FROM mail_outbox WHERE id LIKE 'mail-%'".into()).await,
        ["mail-held", "mail-kept"]
    );
    // What is in use stays: the live session, its token, the user's recent audit rows.
    server
        .get("/api/v1/auth/me", Some(&token))
        .await
        .expect(200);
    assert!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM audit_log WHERE user_id = '{user_id}' AND event_type <> 'test.event'"
            ))
            .await
            > 0
    );
    // Later runs keep the same rows.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        ids(format!(
            "SELECT id FROM performance_snapshots WHERE user_id = '{user_id}'"
        ))
        .await,
        expected_tracker
    );
}

#[tokio::test]
async fn a_retention_setting_out_of_range_stops_the_server() {
    for (name, value) in [
        ("TRADEHOST_RETENTION_INTERVAL", "0"),
        ("TRADEHOST_SNAPSHOT_FULL_DAYS", "0"),
        ("TRADEHOST_AUDIT_RETENTION_DAYS", "forever"),
    ] {
        let err = Server::start_with(Server::options().env(name, value))
            .await
            .err()
            .unwrap_or_else(|| panic!("{name}={value} was accepted"))
            .to_string();
        assert!(err.contains(name), "{err}");
    }
}

/// The running totals are the sum of the trades table, exactly, however the trades were booked,
/// and a restart carries on from them: the trader loads its totals, not the history.
#[tokio::test]
async fn running_totals_agree_with_the_trades_across_a_restart() {
    let mut server = Server::start_trading().await;
    tradehost_blackbox::companion::quiet_strategy(&server).await;
    let (user_id, token) = server.user(&email("totals")).await;
    let key = tradehost_blackbox::companion::webhook_key(&server, &token).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            serde_json::json!({"broker": "paper", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;

    round_trip(&server, &token, &key, "ETH-USD", 1).await;
    round_trip(&server, &token, &key, "SOL-USD", 2).await;
    check_totals(&server, &user_id, &token, 2).await;

    server.restart().await;
    server.wait_running(&token).await;
    check_totals(&server, &user_id, &token, 2).await;
    round_trip(&server, &token, &key, "ETH-USD", 3).await;
    check_totals(&server, &user_id, &token, 3).await;
}

/// A webhook signal opens a position on `symbol` and another closes it.
async fn round_trip(server: &Server, token: &str, key: &str, symbol: &str, expected: usize) {
    let signal = |action: &str| serde_json::json!({"api_key": key, "symbol": symbol, "action": action, "size_usd": 150});
    let opened = server
        .post("/api/v1/webhooks/signals", None, signal("buy"))
        .await;
    let id = opened.data()["trade_id"].as_str().unwrap().to_string();
    tradehost_blackbox::companion::wait_position(server, token, &id).await;
    server
        .post("/api/v1/webhooks/signals", None, signal("close"))
        .await
        .expect(200);
    server
        .wait_for(token, "/api/v1/account/history?status=closed", 20, |d| {
            d["pagination"]["total_items"] == expected
        })
        .await;
}

/// The `account_totals` row against the user's trades, summed here, and the routes that show
/// them.
async fn check_totals(server: &Server, user_id: &str, token: &str, trades: u64) {
    use rust_decimal::Decimal;
    let rows: Vec<(String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT {}, {} FROM trades WHERE user_id = '{user_id}' ORDER BY closed_at, id",
        decimal_sql("net_pnl"),
        decimal_sql("fees")
    )))
    .fetch_all(server.db().await)
    .await
    .unwrap();
    let nets: Vec<Decimal> = rows.iter().map(|r| r.0.parse().unwrap()).collect();
    let net: Decimal = nets.iter().sum();
    let fees: Decimal = rows.iter().map(|r| r.1.parse::<Decimal>().unwrap()).sum();
    let winners = nets.iter().filter(|n| **n > Decimal::ZERO).count() as i64;
    let stored: (i64, i64, String, String, Option<String>, Option<String>) =
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT trades, winners, {}, {}, {}, {} FROM account_totals \
             WHERE user_id = '{user_id}'",
            decimal_sql("net_pnl"),
            decimal_sql("fees"),
            decimal_sql("best_trade"),
            decimal_sql("worst_trade")
        )))
        .fetch_one(server.db().await)
        .await
        .unwrap();
    assert_eq!(stored.0, trades as i64);
    assert_eq!(stored.1, winners);
    assert_eq!(stored.2.parse::<Decimal>().unwrap(), net);
    assert_eq!(stored.3.parse::<Decimal>().unwrap(), fees);
    assert_eq!(
        stored.4.map(|b| b.parse::<Decimal>().unwrap()),
        nets.iter().max().copied()
    );
    assert_eq!(
        stored.5.map(|w| w.parse::<Decimal>().unwrap()),
        nets.iter().min().copied()
    );

    // JSON numbers are the exact figures converted to f64; a conversion may land one unit in
    // the last place away depending on the decimal's scale, so they are compared that closely.
    let close = |json: &serde_json::Value, exact: Decimal| {
        let (got, want) = (
            json.as_f64().unwrap(),
            rust_decimal::prelude::ToPrimitive::to_f64(&exact).unwrap(),
        );
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{got} against {exact}"
        );
    };
    let statistics = server.get("/api/trades/statistics", Some(token)).await;
    statistics.expect(200);
    let s = &statistics.json["statistics"];
    assert_eq!(s["total_trades"], trades);
    close(&s["total_pnl"], net);
    close(&s["total_fees"], fees);
    let status = server.get("/api/status", Some(token)).await;
    status.expect(200);
    assert_eq!(status.json["stats"]["total_trades"], trades);
    close(
        &status.json["stats"]["total_pnl"],
        net.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero),
    );
    let pnl = server.get("/api/pnl", Some(token)).await;
    pnl.expect(200);
    assert_eq!(pnl.json["total_trades"], trades);
}

/// The analytics dashboard's today, last 7 and last 30 days, the statistics' best month and the
/// dashboard metrics' runs are read from the running and per-day totals. Trades moved back in
/// time, with the totals computed again from them as after an upgrade, land in the windows their
/// close times say, also within a window's first, partial day.
#[tokio::test]
async fn period_figures_follow_the_day_totals_of_moved_trades() {
    use rust_decimal::Decimal;
    use std::collections::BTreeMap;

    let mut server = Server::start_trading().await;
    let admin = server.admin_token().await;
    server
        .install_plugin(&admin, "testing/guest-churn", "guest-churn")
        .await;
    let (user_id, token) = server.user(&email("periods")).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            serde_json::json!({"broker": "paper", "strategy": "guest-churn", "symbols": ["BTC-USD", "ETH-USD"]}),
        )
        .await
        .expect(200);
    let count = format!("SELECT COUNT(*) FROM trades WHERE user_id = '{user_id}'");
    server.wait_count(&count, 10, 60).await;
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            serde_json::json!({"close_positions": true}),
        )
        .await
        .expect(200);
    server.kill();

    // Spread the trades: today, hours ago, either side of the 7- and 30-day edges, months back.
    let ids: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM trades WHERE user_id = '{user_id}' ORDER BY closed_at, id"
    )))
    .fetch_all(server.db().await)
    .await
    .unwrap();
    let back = [
        0,
        2 * HOUR,
        3 * DAY,
        7 * DAY - HOUR,
        7 * DAY + HOUR,
        20 * DAY,
        30 * DAY - HOUR,
        30 * DAY + HOUR,
        45 * DAY,
        70 * DAY,
    ];
    let moved_at = now_ms();
    for (n, ((id,), back)) in ids.iter().zip(back.iter().cycle()).enumerate() {
        let closed = moved_at - back - n as i64;
        server
            .exec(&format!(
                "UPDATE trades SET closed_at = {closed}, opened_at = {} WHERE id = '{id}'",
                closed - 5 * MINUTE
            ))
            .await;
    }
    for table in ["account_day_totals", "account_totals"] {
        server
            .exec(&format!("DELETE FROM {table} WHERE user_id = '{user_id}'"))
            .await;
    }
    server
        .exec("DELETE FROM platform_flags WHERE name = 'account_totals_backfilled'")
        .await;
    server.restart().await;

    let rows: Vec<(i64, String, String)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT closed_at, {}, symbol FROM trades WHERE user_id = '{user_id}' \
         ORDER BY closed_at, id",
        decimal_sql("net_pnl")
    )))
    .fetch_all(server.db().await)
    .await
    .unwrap();
    let trades: Vec<(i64, Decimal, String)> = rows
        .into_iter()
        .map(|(at, net, symbol)| (at, net.parse().unwrap(), symbol))
        .collect();
    let exact = |json: &serde_json::Value, want: Decimal| {
        let got = json.as_f64().unwrap();
        let want = rust_decimal::prelude::ToPrimitive::to_f64(&want.round_dp(8)).unwrap();
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1.0),
            "{got} against {want}"
        );
    };

    let now = now_ms();
    let dashboard = server
        .get("/api/v1/analytics/dashboard", Some(&token))
        .await;
    dashboard.expect(200);
    let d = dashboard.data();
    for (period, start) in [
        ("today", now - now.rem_euclid(DAY)),
        ("week", now - 7 * DAY),
        ("month", now - 30 * DAY),
    ] {
        let inside: Vec<_> = trades.iter().filter(|t| t.0 >= start).collect();
        assert_eq!(d[period]["trades"], inside.len(), "{period}");
        exact(&d[period]["pnl"], inside.iter().map(|t| t.1).sum());
        let wins = inside.iter().filter(|t| t.1 > Decimal::ZERO).count();
        let rate = if inside.is_empty() {
            0.0
        } else {
            wins as f64 / inside.len() as f64
        };
        assert_eq!(d[period]["win_rate"].as_f64().unwrap(), rate, "{period}");
    }
    let mut month_by_symbol: BTreeMap<&str, Decimal> = BTreeMap::new();
    for t in trades.iter().filter(|t| t.0 >= now - 30 * DAY) {
        *month_by_symbol.entry(&t.2).or_default() += t.1;
    }
    let top = month_by_symbol
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .unwrap();
    assert_eq!(d["top_performer"]["symbol"], *top.0);
    exact(&d["top_performer"]["pnl"], *top.1);

    let stats = server.get("/api/v1/account/stats", Some(&token)).await;
    stats.expect(200);
    let mut months: BTreeMap<String, Decimal> = BTreeMap::new();
    for t in &trades {
        let month = chrono::DateTime::from_timestamp_millis(t.0)
            .unwrap()
            .format("%Y-%m");
        *months.entry(month.to_string()).or_default() += t.1;
    }
    let best = months
        .iter()
        .reduce(|best, m| if m.1 > best.1 { m } else { best })
        .unwrap();
    let trading = &stats.data()["trading"];
    assert_eq!(trading["best_month"]["month"], *best.0);
    assert_eq!(trading["total_trades_all_time"], trades.len());

    // Runs in close order, after the move.
    let (mut wins, mut losses, mut longest) = (0u64, 0u64, (0u64, 0u64));
    for t in &trades {
        (wins, losses) = match t.1.cmp(&Decimal::ZERO) {
            std::cmp::Ordering::Greater => (wins + 1, 0),
            std::cmp::Ordering::Less => (0, losses + 1),
            std::cmp::Ordering::Equal => (0, 0),
        };
        longest = (longest.0.max(wins), longest.1.max(losses));
    }
    // The figures appear with the account's first performance snapshot.
    let m = server
        .wait_for(&token, "/api/v1/dashboard/metrics", 20, |m| {
            m["total_trades"] == trades.len()
        })
        .await;
    assert_eq!(m["longest_winning_streak"], longest.0);
    assert_eq!(m["longest_losing_streak"], longest.1);

    // This month's report counts the trades closed in it (from the day totals).
    let today = chrono::Utc::now();
    let this_month = today.format("%Y-%m").to_string();
    let in_month: Vec<_> = trades
        .iter()
        .filter(|t| {
            chrono::DateTime::from_timestamp_millis(t.0)
                .unwrap()
                .format("%Y-%m")
                .to_string()
                == this_month
        })
        .collect();
    let report = server
        .get(
            &format!(
                "/api/v1/dashboard/monthly-report/{}/{}",
                chrono::Datelike::year(&today),
                chrono::Datelike::month(&today)
            ),
            Some(&token),
        )
        .await;
    let report = report.data();
    assert_eq!(report["total_trades"], in_month.len(), "{report}");
    assert_eq!(
        report["winning_trades"],
        in_month.iter().filter(|t| t.1 > Decimal::ZERO).count()
    );
    assert_eq!(
        report["losing_trades"],
        in_month.iter().filter(|t| t.1 < Decimal::ZERO).count()
    );
    // Net profit is shown to cents.
    let net: Decimal = in_month.iter().map(|t| t.1).sum();
    let net = rust_decimal::prelude::ToPrimitive::to_f64(&net).unwrap();
    let shown = report["net_profit"].as_f64().unwrap();
    assert!((shown - net).abs() <= 0.005 + 1e-9, "{shown} against {net}");
}

/// A database an earlier release wrote, with money as decimal text, is carried to exact stored
/// decimals on either backend: every value keeps its digits (rounded to eight places, half away
/// from zero, where it had more), NULLs stay NULL, the largest storable amount fits, and the
/// server reads the carried books back through its routes.
#[tokio::test]
async fn the_decimal_migration_carries_every_amount_exactly() {
    const DAY_MS: i64 = 86_400_000;
    let now = now_ms();
    let hash = tradehost_blackbox::password_hash();
    let address = email("decimals");
    let seed = vec![
        format!(
            "INSERT INTO users (id, email, email_lower, full_name, password_hash, subscription_tier, created_at, updated_at) \
             VALUES ('u1', '{address}', '{address}', 'Carried', '{hash}', 'pro', 0, 0)"
        ),
        "INSERT INTO platform_flags (name, value, updated_by, updated_at) \
         VALUES ('account_totals_backfilled', '1', 'migration', 0)"
            .into(),
        "INSERT INTO trading_accounts (user_id, currency, initial_capital, cash, realized_pnl, fees_paid, created_at, updated_at) \
         VALUES ('u1', 'USD', '10000', '9387.123456789012345', '59.5', '0.000000015', 0, 0)"
            .into(),
        format!(
            "INSERT INTO positions (id, user_id, broker, symbol, side, quantity, entry_price, entry_fees, stop_loss, \
             take_profit, trail_pct, extreme_price, current_price, status, opened_at, updated_at, cost, close_attempts, strategy) \
             VALUES ('p1', 'u1', 'paper', 'BTC-USD', 'long', '0.5', '60000.5', '30.00025', '55000', NULL, '0.03', \
             '61000', '61000', 'open', {now}, {now}, '30000.25', 0, 'ema-cross')"
        ),
        format!(
            "INSERT INTO trades (id, user_id, position_id, broker, symbol, side, quantity, entry_price, exit_price, size_usd, \
             gross_pnl, fees, net_pnl, pnl_pct, exit_reason, opened_at, closed_at, duration_minutes, entry_fee, strategy) \
             VALUES ('t1', 'u1', 'p0', 'paper', 'ETH-USD', 'long', '2', '3000', '3050.25', '6000', '100.5', '0.4', '100.1', \
             '1.6683', 'take_profit', {opened}, {closed}, 60, '0.2', 'ema-cross'), \
             ('t2', 'u1', 'p9', 'paper', 'SOL-USD', 'short', '10', '150', '154', '1500', '-40', '0.6', '-40.6', \
             '-2.7067', 'stop_loss', {opened}, {later}, 61, NULL, 'ema-cross')",
            opened = now - DAY_MS,
            closed = now - DAY_MS + 3_600_000,
            later = now - DAY_MS + 3_660_000,
        ),
        format!(
            "INSERT INTO ledger (id, user_id, order_id, position_id, broker, symbol, side, action, quantity, price, notional, \
             fee, realized_pnl, cash_after, created_at, fill_id, entry_fee) \
             VALUES ('l1', 'u1', 'o1', 'p1', 'paper', 'BTC-USD', 'BUY', 'OPEN', '0.5', '60000.5', '30000.25', '30.00025', \
             '0', '9387.123456789012345', {now}, 'f1', NULL), \
             ('l2', 'u1', 'o0', 'p9', 'paper', 'SOL-USD', 'BUY', 'CLOSE', '10', '154', '1540', '0.3', '-12.345678905', \
             '9417.12345679', {now}, NULL, '0.3')"
        ),
        format!(
            "INSERT INTO orders (id, user_id, client_order_id, broker, symbol, side, intent, quantity, position_id, stop_loss, \
             take_profit, status, created_at, updated_at, kind, limit_price, trail_pct, filled_quantity, attempt, checks, strategy) \
             VALUES ('o1', 'u1', 'th-o1', 'paper', 'BTC-USD', 'BUY', 'open_long', '0.5', 'p1', '55000', NULL, 'filled', \
             {now}, {now}, 'limit', '60000.5', '0.03', '0.5', 1, 0, 'ema-cross')"
        ),
        format!(
            "INSERT INTO fills (id, order_id, user_id, venue_trade_id, quantity, price, fee, filled_at, booked_at) \
             VALUES ('f1', 'o1', 'u1', 'v1', '0.5', '60000.5', '30.00025', {now}, {now})"
        ),
        format!(
            "INSERT INTO equity_snapshots (user_id, at, equity, cash, unrealized_pnl) \
             VALUES ('u1', {now}, '39887.37345678901', '9387.12345679', '499.75')"
        ),
        "INSERT INTO venue_baselines (user_id, broker, symbol, quantity, updated_at) VALUES ('u1', 'paper', 'BTC', '-0.25', 0)"
            .into(),
        format!(
            "INSERT INTO signals (id, user_id, symbol, action, size_usd, strategy, status, received_at, limit_price) \
             VALUES ('s1', 'u1', 'DOGE-USD', 'buy', '250.75', 'tv', 'traded', {now}, '0.00001234')"
        ),
        format!(
            "INSERT INTO subscriptions (id, user_id, tier, billing_interval, status, current_period_start, current_period_end, \
             cancel_at_period_end, amount, currency, customer_id, created_at, updated_at) \
             VALUES ('sub1', 'u1', 'pro', 'monthly', 'active', {now}, {end}, 0, '49', 'USD', 'cus_1', {now}, {now})",
            end = now + 30 * DAY_MS
        ),
        format!(
            "INSERT INTO payments (id, user_id, subscription_id, kind, amount, currency, provider, provider_reference, \
             description, created_at, status) \
             VALUES ('pay1', 'u1', 'sub1', 'charge', '92233720368.54775807', 'USD', 'test', 'ref', 'Pro', {now}, 'settled')"
        ),
        format!(
            "INSERT INTO account_totals (user_id, trades, winners, losers, net_pnl, profit, loss, fees, volume, best_trade, \
             worst_trade, streak, streak_started_at, last_closed_at, updated_at, longest_win_streak, longest_loss_streak, \
             hold_ms, first_closed_at) \
             VALUES ('u1', 2, 1, 1, '59.5', '100.1', '-40.6', '1', '92233720368.54775807', '100.1', '-40.6', -1, {later}, \
             {later}, 0, 1, 1, 7260000, {closed})",
            closed = now - DAY_MS + 3_600_000,
            later = now - DAY_MS + 3_660_000,
        ),
        format!(
            "INSERT INTO account_day_totals (user_id, day, symbol, trades, winners, losers, net_pnl, size_usd) \
             VALUES ('u1', {day}, 'ETH-USD', 1, 1, 0, '100.1', '6000'), ('u1', {day}, 'SOL-USD', 1, 0, 1, '-40.6', '1500')",
            day = (now - DAY_MS) / DAY_MS
        ),
    ];
    let server = Server::options().earlier_schema(15, seed).start().await;

    // Every amount, as the database now holds it.
    let expected: &[(&str, &str, &str, Option<&str>)] = &[
        (
            "trading_accounts",
            "initial_capital",
            "user_id = 'u1'",
            Some("10000.00000000"),
        ),
        (
            "trading_accounts",
            "cash",
            "user_id = 'u1'",
            Some("9387.12345679"),
        ),
        (
            "trading_accounts",
            "realized_pnl",
            "user_id = 'u1'",
            Some("59.50000000"),
        ),
        (
            "trading_accounts",
            "fees_paid",
            "user_id = 'u1'",
            Some("0.00000002"),
        ),
        (
            "positions",
            "entry_price",
            "id = 'p1'",
            Some("60000.50000000"),
        ),
        ("positions", "entry_fees", "id = 'p1'", Some("30.00025000")),
        ("positions", "take_profit", "id = 'p1'", None),
        ("positions", "trail_pct", "id = 'p1'", Some("0.03000000")),
        ("positions", "cost", "id = 'p1'", Some("30000.25000000")),
        ("trades", "net_pnl", "id = 't2'", Some("-40.60000000")),
        ("trades", "pnl_pct", "id = 't2'", Some("-2.70670000")),
        ("trades", "entry_fee", "id = 't2'", None),
        ("ledger", "realized_pnl", "id = 'l2'", Some("-12.34567891")),
        ("ledger", "cash_after", "id = 'l1'", Some("9387.12345679")),
        ("orders", "limit_price", "id = 'o1'", Some("60000.50000000")),
        ("orders", "take_profit", "id = 'o1'", None),
        ("orders", "filled_quantity", "id = 'o1'", Some("0.50000000")),
        ("fills", "fee", "id = 'f1'", Some("30.00025000")),
        (
            "equity_snapshots",
            "equity",
            "user_id = 'u1'",
            Some("39887.37345679"),
        ),
        (
            "venue_baselines",
            "quantity",
            "user_id = 'u1'",
            Some("-0.25000000"),
        ),
        ("signals", "limit_price", "id = 's1'", Some("0.00001234")),
        ("signals", "size_usd", "id = 's1'", Some("250.75000000")),
        (
            "subscriptions",
            "amount",
            "id = 'sub1'",
            Some("49.00000000"),
        ),
        (
            "payments",
            "amount",
            "id = 'pay1'",
            Some("92233720368.54775807"),
        ),
        (
            "account_totals",
            "worst_trade",
            "user_id = 'u1'",
            Some("-40.60000000"),
        ),
        (
            "account_day_totals",
            "size_usd",
            "symbol = 'SOL-USD'",
            Some("1500.00000000"),
        ),
    ];
    for (table, column, row, value) in expected {
        let stored = server
            .scalar(&format!(
                "SELECT {} FROM {table} WHERE {row}",
                decimal_sql(column)
            ))
            .await;
        assert_eq!(stored.as_deref(), *value, "{table}.{column}");
    }
    // Sums in SQL are exact now: the trades' net P&L adds up to the account's realized total
    // less its fees, to the last unit.
    let summed = server
        .scalar(&format!(
            "SELECT {} FROM trades WHERE user_id = 'u1'",
            decimal_sql("SUM(net_pnl)")
        ))
        .await;
    assert_eq!(summed.as_deref(), Some("59.50000000"));

    // And the server reads the carried books back.
    let token = server.login(&address, tradehost_blackbox::PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let positions = server.get("/api/v1/account/positions", Some(&token)).await;
    let position = &positions.data()["positions"][0];
    assert_eq!(position["entry_price"], 60000.5, "{}", positions.text);
    assert_eq!(position["quantity"], 0.5);
    let history = server
        .get("/api/v1/account/history?status=closed", Some(&token))
        .await;
    let trades = history.data()["trades"].as_array().unwrap().clone();
    assert_eq!(trades.len(), 2, "{}", history.text);
    let pnl: Vec<f64> = trades
        .iter()
        .map(|t| t["realized_pnl"].as_f64().unwrap())
        .collect();
    assert_eq!(pnl, [-40.6, 100.1], "{}", history.text);
}
