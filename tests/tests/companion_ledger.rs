//! Companion sets C and D (docs/companion.md): the ledger routes and their exports, fed by the
//! engine's own books, with the `user_id` filter for admins only; the `/trades` page shell; and the
//! graceful restart of the trading engine over HTTP and from the command line.

use std::collections::HashMap;
use std::process::Output;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use tradehost_blackbox::companion::*;
use tradehost_blackbox::{Reply, Server, decimal_sql, email};

const TRADE_HEADER: &str = "id,position_id,user_id,symbol,side,entry_price,exit_price,quantity,size_usd,entry_fee,exit_fee,total_fees,gross_profit,net_profit,profit_pct,entry_time,exit_time,duration_seconds,exit_reason,notes,created_at";
const LEDGER_HEADER: &str = "id,timestamp,user_id,symbol,side,action,price,quantity,size_usd,fee,order_id,position_id,platform_trade_id,notes,created_at";
const POSITION_HEADER: &str = "id,position_id,user_id,symbol,side,entry_price,quantity,size_usd,stop_loss,take_profit_1,take_profit_2,take_profit_3,entry_fee,entry_time,status,notes,created_at,position_source";

fn dec(text: &str) -> f64 {
    text.parse()
        .unwrap_or_else(|_| panic!("not a number: {text}"))
}

/// An error of sets C to F: `{success: false, error, code}`.
#[track_caller]
fn assert_failure(reply: &Reply, status: u16) {
    reply.expect(status);
    assert_eq!(reply.json["success"], false, "body: {}", reply.text);
    assert!(
        reply.json["error"].as_str().is_some_and(|e| !e.is_empty()),
        "body: {}",
        reply.text
    );
    assert!(
        reply.json["code"].as_str().is_some_and(|c| !c.is_empty()),
        "body: {}",
        reply.text
    );
}

/// A trader's server after one completed trade and with one open position.
struct Traded {
    server: Server,
    admin: String,
    user_id: String,
    token: String,
    /// The position of the completed ETH-USD trade.
    closed: String,
    /// The open SOL-USD position.
    open: String,
    /// The user's signal key.
    key: String,
}

/// Scans every 100 ms; the default strategy never signals (its slow EMA needs more candles than
/// a scan reads), so only webhook signals trade: ETH-USD bought and closed, then SOL-USD bought
/// and held. The bot keeps running.
async fn traded() -> Traded {
    let server = Server::start_trading().await;
    let admin = server.admin_token().await;
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&admin),
            json!({"config": {"fast_period": "2", "slow_period": "500"}}),
        )
        .await
        .expect(200);
    let (user_id, token) = server.user(&email("d-trader")).await;
    let key = webhook_key(&server, &token).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let signal = |symbol: &str, action: &str| json!({"api_key": key, "symbol": symbol, "action": action, "size_usd": 200});
    let id = |reply: Reply| reply.data()["trade_id"].as_str().unwrap().to_string();
    let closed = id(server
        .post("/api/v1/webhooks/signals", None, signal("ETH-USD", "buy"))
        .await);
    wait_position(&server, &token, &closed).await;
    server
        .post("/api/v1/webhooks/signals", None, signal("ETH-USD", "close"))
        .await
        .expect(200);
    server
        .wait_for(&token, "/api/v1/account/history?status=closed", 20, |d| {
            d["pagination"]["total_items"] == 1
        })
        .await;
    let open = id(server
        .post("/api/v1/webhooks/signals", None, signal("SOL-USD", "buy"))
        .await);
    wait_position(&server, &token, &open).await;
    Traded {
        server,
        admin,
        user_id,
        token,
        closed,
        open,
        key,
    }
}

/// The user's ledger rows, newest first: (order_id, position_id, symbol, side, action, quantity,
/// price, notional, fee, created_at).
type LedgerRow = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    i64,
);

async fn ledger_rows(server: &Server, user_id: &str) -> Vec<LedgerRow> {
    let [quantity, price, notional, fee] =
        ["quantity", "price", "notional", "fee"].map(decimal_sql);
    sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT order_id, position_id, symbol, side, action, {quantity}, {price}, {notional}, {fee}, created_at \
         FROM ledger WHERE user_id = $1 ORDER BY created_at DESC, id DESC",
    )))
    .bind(user_id)
    .fetch_all(server.db().await)
    .await
    .unwrap()
}

/// Splits CSV text (CRLF records, quoted fields allowed) into records.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    assert!(
        text.ends_with("\r\n"),
        "the last record does not end in CRLF: {text:?}"
    );
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {
                assert_eq!(chars.next(), Some('\n'), "a CR without LF in {text:?}");
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, '\n') => panic!("a bare LF line ending in {text:?}"),
            (false, c) => field.push(c),
        }
    }
    records
}

/// Whether a CSV cell holds what the JSON route shows (nulls are empty cells).
fn cell_matches(json: &Value, cell: &str) -> bool {
    match json {
        Value::Null => cell.is_empty(),
        Value::String(text) => text == cell,
        Value::Number(n) => cell
            .parse::<f64>()
            .is_ok_and(|c| near(c, n.as_f64().unwrap())),
        Value::Bool(b) => cell == b.to_string(),
        other => panic!("unexpected value in a row: {other}"),
    }
}

fn id_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("not an id: {other}"),
    }
}

/// Checks a CSV export against the rows of the JSON route, matched by id.
async fn assert_export_matches(
    server: &Server,
    token: &str,
    table: &str,
    header: &str,
    rows: &[Value],
) {
    let reply = server
        .get(
            &format!("/api/trades/export?format=csv&table={table}"),
            Some(token),
        )
        .await;
    reply.expect(200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/csv; charset=utf-8")
    );
    let disposition = reply.header("content-disposition").unwrap_or_default();
    let prefix = format!("attachment; filename=tradehost_{table}_");
    let stamp = disposition
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix(".csv"))
        .unwrap_or_else(|| panic!("Content-Disposition: {disposition}"));
    assert!(
        chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%d_%H%M%S").is_ok() && stamp.len() == 15,
        "Content-Disposition: {disposition}"
    );
    let records = parse_csv(&reply.text);
    assert_eq!(records[0].join(","), header, "{table}");
    let columns: Vec<&str> = header.split(',').collect();
    assert_eq!(records.len() - 1, rows.len(), "{table}: {}", reply.text);
    let by_id: HashMap<String, &Value> = rows.iter().map(|r| (id_text(&r["id"]), r)).collect();
    for record in &records[1..] {
        assert_eq!(record.len(), columns.len(), "{record:?}");
        let row = by_id
            .get(&record[0])
            .unwrap_or_else(|| panic!("{table}: no JSON row with id {}", record[0]));
        for (column, cell) in columns.iter().zip(record) {
            assert!(
                cell_matches(&row[*column], cell),
                "{table}.{column}: CSV {cell:?} vs JSON {}",
                row[*column]
            );
        }
    }
    // Newest first, like the JSON routes.
    let order: Vec<String> = records[1..].iter().map(|r| r[0].clone()).collect();
    let json_order: Vec<String> = rows.iter().map(|r| id_text(&r["id"])).collect();
    assert_eq!(order, json_order, "{table}");
}

fn output_text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn restarts_logged(server: &Server) -> usize {
    server.log().to_lowercase().matches("restart").count()
}

/// Waits until the bot has scanned after `since_ms` while running.
async fn wait_scanned_after(server: &Server, token: &str, since_ms: i64) {
    server
        .wait_for(token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "running"
                && d["last_scan"]
                    .as_str()
                    .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                    .is_some_and(|t| t.timestamp_millis() > since_ms)
        })
        .await;
}

#[tokio::test]
async fn open_positions_and_history_come_from_the_engine() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let ledger = ledger_rows(server, &t.user_id).await;
    let fee_of = |position: &str, action: &str| {
        ledger
            .iter()
            .find(|r| r.1 == position && r.4 == action)
            .map(|r| dec(&r.8))
            .unwrap_or_else(|| panic!("no {action} row for {position}"))
    };

    let open = server.get("/api/positions/open", Some(token)).await;
    open.expect(200);
    assert_eq!(open.json["count"], 1, "{}", open.text);
    assert_utc(&open.json["timestamp"]);
    let p = &open.json["positions"][0];
    let platform = server
        .get(
            &format!("/api/v1/account/positions/{}", t.open),
            Some(token),
        )
        .await;
    let expected = platform.data();
    assert!(!p["id"].is_null());
    assert_eq!(p["position_id"], t.open.as_str());
    assert_eq!(p["user_id"], t.user_id.as_str());
    assert_eq!(p["symbol"], "SOL-USD");
    assert_eq!(p["side"], "LONG");
    assert!(near(num(&p["entry_price"]), num(&expected["entry_price"])));
    assert!(near(num(&p["quantity"]), num(&expected["quantity"])));
    assert!(near(num(&p["size_usd"]), num(&expected["size_usd"])));
    assert!(near(num(&p["entry_fee"]), fee_of(&t.open, "OPEN")));
    for field in [
        "stop_loss",
        "take_profit_1",
        "take_profit_2",
        "take_profit_3",
        "notes",
    ] {
        assert!(p[field].is_null(), "{field}: {p}");
    }
    assert_eq!(p["status"], "open");
    assert_eq!(p["position_source"], "strategy");
    assert_utc(&p["entry_time"]);
    assert_eq!(millis(&p["entry_time"]), millis(&expected["opened_at"]));
    assert_utc(&p["created_at"]);

    let history = server.get("/api/trades/history", Some(token)).await;
    history.expect(200);
    assert_eq!(history.json["count"], 1, "{}", history.text);
    assert_utc(&history.json["timestamp"]);
    let trade = &history.json["trades"][0];
    let platform = server
        .get("/api/v1/account/history?status=closed", Some(token))
        .await;
    let expected = &platform.data()["trades"][0];
    assert!(!trade["id"].is_null());
    assert_eq!(trade["position_id"], t.closed.as_str());
    assert_eq!(trade["user_id"], t.user_id.as_str());
    assert_eq!(trade["symbol"], "ETH-USD");
    assert_eq!(trade["side"], "LONG");
    assert_eq!(trade["exit_reason"], "signal");
    for (field, platform_field) in [
        ("entry_price", "entry_price"),
        ("exit_price", "exit_price"),
        ("quantity", "quantity"),
        ("size_usd", "size_usd"),
        ("total_fees", "fees"),
        ("gross_profit", "gross_pnl"),
        ("net_profit", "realized_pnl"),
    ] {
        assert!(
            near(num(&trade[field]), num(&expected[platform_field])),
            "{field}: {trade} vs {expected}"
        );
    }
    assert!(near(num(&trade["entry_fee"]), fee_of(&t.closed, "OPEN")));
    assert!(near(num(&trade["exit_fee"]), fee_of(&t.closed, "CLOSE")));
    assert!(near(
        num(&trade["entry_fee"]) + num(&trade["exit_fee"]),
        num(&trade["total_fees"])
    ));
    let profit_pct = num(&trade["net_profit"]) / num(&trade["size_usd"]) * 100.0;
    // A percentage to four decimals at least.
    assert!(
        (num(&trade["profit_pct"]) - profit_pct).abs() < 1e-4,
        "{trade}: {profit_pct}"
    );
    assert_utc(&trade["entry_time"]);
    assert_utc(&trade["exit_time"]);
    assert_utc(&trade["created_at"]);
    assert_eq!(millis(&trade["entry_time"]), millis(&expected["opened_at"]));
    assert_eq!(millis(&trade["exit_time"]), millis(&expected["closed_at"]));
    let duration = (millis(&trade["exit_time"]) - millis(&trade["entry_time"])) as f64 / 1000.0;
    assert!(
        (num(&trade["duration_seconds"]) - duration).abs() < 1.0,
        "{trade}"
    );
    assert!(trade["notes"].is_null() || trade["notes"].is_string());

    // The statistics agree with the rows.
    let net = num(&trade["net_profit"]);
    let stats = &history.json["statistics"];
    assert_eq!(stats["total_trades"], 1);
    assert!(near(num(&stats["total_pnl"]), net));
    assert!(near(num(&stats["avg_pnl"]), net));
    assert!(near(num(&stats["best_trade"]), net));
    assert!(near(num(&stats["worst_trade"]), net));
    assert_eq!(stats["winners"], u64::from(net > 0.0));
    assert_eq!(stats["losers"], u64::from(net < 0.0));
    assert_eq!(num(&stats["win_rate"]), if net > 0.0 { 100.0 } else { 0.0 });
    assert!(near(num(&stats["total_fees"]), num(&trade["total_fees"])));
    assert_eq!(stats["open_positions"], 1);
    let statistics = server.get("/api/trades/statistics", Some(token)).await;
    statistics.expect(200);
    assert_eq!(&statistics.json["statistics"], stats);
    assert_eq!(statistics.json["user_id"], t.user_id.as_str());
    assert_utc(&statistics.json["timestamp"]);
}

#[tokio::test]
async fn the_ledger_is_the_engines_ledger() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let rows = ledger_rows(server, &t.user_id).await;
    assert_eq!(rows.len(), 3);
    let ledger = server.get("/api/trades/ledger", Some(token)).await;
    ledger.expect(200);
    assert_eq!(ledger.json["count"], 3, "{}", ledger.text);
    assert_utc(&ledger.json["timestamp"]);
    let transactions = ledger.json["transactions"].as_array().unwrap();
    assert_eq!(transactions.len(), 3);
    for (row, tx) in rows.iter().zip(transactions) {
        let (order_id, position_id, symbol, side, action, quantity, price, notional, fee, at) = row;
        assert_eq!(tx["order_id"], order_id.as_str(), "{tx}");
        assert_eq!(tx["position_id"], position_id.as_str());
        assert_eq!(tx["user_id"], t.user_id.as_str());
        assert_eq!(tx["symbol"], symbol.as_str());
        assert_eq!(tx["side"], side.as_str());
        assert_eq!(tx["action"], action.as_str());
        assert!(near(num(&tx["quantity"]), dec(quantity)));
        assert!(near(num(&tx["price"]), dec(price)));
        assert!(near(num(&tx["size_usd"]), dec(notional)));
        assert!(near(num(&tx["fee"]), dec(fee)));
        assert_utc(&tx["timestamp"]);
        assert_eq!(millis(&tx["timestamp"]), *at);
        assert_utc(&tx["created_at"]);
        assert!(!tx["id"].is_null());
    }
    // Newest first: SOL bought, ETH sold to close, ETH bought.
    let story: Vec<(String, String, String)> = transactions
        .iter()
        .map(|tx| {
            (
                tx["symbol"].as_str().unwrap().to_string(),
                tx["side"].as_str().unwrap().to_string(),
                tx["action"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("SOL-USD", "BUY", "OPEN"),
        ("ETH-USD", "SELL", "CLOSE"),
        ("ETH-USD", "BUY", "OPEN"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(story, expected);
    assert_eq!(transactions[0]["position_id"], t.open.as_str());
    assert_eq!(transactions[1]["position_id"], t.closed.as_str());
}

#[tokio::test]
async fn limits_offsets_and_symbol_filters() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let count = |path: &'static str| async move {
        let reply = server.get(path, Some(token)).await;
        reply.expect(200);
        reply.json["count"].as_u64().unwrap()
    };
    assert_eq!(count("/api/trades/history?limit=1").await, 1);
    assert_eq!(count("/api/trades/history?limit=1000&offset=0").await, 1);
    assert_eq!(count("/api/trades/history?offset=1").await, 0);
    assert_eq!(count("/api/trades/ledger?limit=2").await, 2);
    assert_eq!(count("/api/trades/ledger?limit=1000").await, 3);
    assert_eq!(count("/api/trades/history?symbol=ETH-USD").await, 1);
    assert_eq!(count("/api/trades/history?symbol=SOL-USD").await, 0);
    assert_eq!(count("/api/positions/open?symbol=SOL-USD").await, 1);
    assert_eq!(count("/api/positions/open?symbol=ETH-USD").await, 0);
    assert_eq!(count("/api/trades/ledger?symbol=ETH-USD").await, 2);
    assert_eq!(count("/api/trades/ledger?symbol=BTC-USD").await, 0);
    let newest = server.get("/api/trades/ledger?limit=1", Some(token)).await;
    assert_eq!(
        newest.json["transactions"][0]["position_id"],
        t.open.as_str()
    );
    for path in [
        "/api/trades/history?limit=0",
        "/api/trades/history?limit=1001",
        "/api/trades/history?limit=abc",
        "/api/trades/history?limit=-1",
        "/api/trades/history?offset=-1",
        "/api/trades/history?offset=x",
        "/api/trades/ledger?limit=0",
        "/api/trades/ledger?limit=5000",
        "/api/trades/ledger?limit=1.5",
    ] {
        let refused = server.get(path, Some(token)).await;
        assert_eq!(refused.status, 400, "{path}: {}", refused.text);
        assert_failure(&refused, 400);
    }
}

#[tokio::test]
async fn user_id_is_honoured_for_admins_only() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let (other_id, other) = server.user(&email("d-other")).await;
    let routes = [
        "/api/positions/open",
        "/api/trades/history",
        "/api/trades/ledger",
        "/api/trades/statistics",
        "/api/trades/export?format=csv&table=completed_trades&",
    ];
    let with_user = |route: &str, user: &str| {
        if route.ends_with('&') {
            format!("{route}user_id={user}")
        } else {
            format!("{route}?user_id={user}")
        }
    };

    // Another user sees none of the trader's rows, and may not ask for them.
    for route in routes {
        let refused = server
            .get(&with_user(route, &t.user_id), Some(&other))
            .await;
        assert_failure(&refused, 403);
    }
    let own_query = format!("?user_id={other_id}");
    for query in ["", "?user_id=master", own_query.as_str()] {
        let open = server
            .get(&format!("/api/positions/open{query}"), Some(&other))
            .await;
        open.expect(200);
        assert_eq!(open.json["count"], 0, "{query}: {}", open.text);
        assert_eq!(open.json["positions"], json!([]));
        let history = server
            .get(&format!("/api/trades/history{query}"), Some(&other))
            .await;
        assert_eq!(history.json["count"], 0, "{query}: {}", history.text);
        let ledger = server
            .get(&format!("/api/trades/ledger{query}"), Some(&other))
            .await;
        assert_eq!(ledger.json["count"], 0, "{query}: {}", ledger.text);
        assert_eq!(ledger.json["transactions"], json!([]));
    }
    // An empty account's statistics: zero counts and sums, no average, best or worst.
    let empty = server.get("/api/trades/statistics", Some(&other)).await;
    empty.expect(200);
    assert_eq!(empty.json["user_id"], other_id.as_str());
    let s = &empty.json["statistics"];
    for field in [
        "total_trades",
        "winners",
        "losers",
        "open_positions",
        "total_pnl",
        "total_fees",
        "win_rate",
    ] {
        assert_eq!(s[field].as_f64(), Some(0.0), "{field}: {s}");
    }
    for field in ["avg_pnl", "best_trade", "worst_trade"] {
        assert!(s[field].is_null(), "{field}: {s}");
    }
    let export = server
        .get(
            "/api/trades/export?format=csv&table=completed_trades",
            Some(&other),
        )
        .await;
    export.expect(200);
    assert_eq!(export.text, format!("{TRADE_HEADER}\r\n"));

    // `master` is the caller's own account.
    let own = server
        .get("/api/positions/open?user_id=master", Some(token))
        .await;
    assert_eq!(own.json["count"], 1);
    let own = server
        .get(
            &with_user("/api/trades/statistics", &t.user_id),
            Some(token),
        )
        .await;
    own.expect(200);
    assert_eq!(own.json["statistics"]["total_trades"], 1);

    // An admin gets the user's rows, or everyone's without a filter.
    let admin = t.admin.as_str();
    let theirs = server
        .get(&with_user("/api/positions/open", &t.user_id), Some(admin))
        .await;
    theirs.expect(200);
    assert_eq!(theirs.json["count"], 1);
    assert_eq!(theirs.json["positions"][0]["position_id"], t.open.as_str());
    let ledger = server
        .get(&with_user("/api/trades/ledger", &t.user_id), Some(admin))
        .await;
    assert_eq!(ledger.json["count"], 3);
    let history = server
        .get(&with_user("/api/trades/history", &t.user_id), Some(admin))
        .await;
    assert_eq!(history.json["trades"][0]["position_id"], t.closed.as_str());
    let stats = server
        .get(
            &with_user("/api/trades/statistics", &t.user_id),
            Some(admin),
        )
        .await;
    assert_eq!(stats.json["user_id"], t.user_id.as_str());
    assert_eq!(stats.json["statistics"]["total_trades"], 1);
    assert_eq!(stats.json["statistics"]["open_positions"], 1);
    let everyone = server.get("/api/trades/statistics", Some(admin)).await;
    everyone.expect(200);
    assert_eq!(everyone.json["user_id"], "all");
    assert_eq!(everyone.json["statistics"]["total_trades"], 1);
    let all_open = server.get("/api/positions/open", Some(admin)).await;
    assert_eq!(all_open.json["count"], 1);
    let mine = server
        .get("/api/positions/open?user_id=master", Some(admin))
        .await;
    assert_eq!(mine.json["count"], 0);
    let export = server
        .get(
            &with_user(
                "/api/trades/export?format=csv&table=trade_ledger&",
                &t.user_id,
            ),
            Some(admin),
        )
        .await;
    export.expect(200);
    assert_eq!(parse_csv(&export.text).len(), 4);
}

#[tokio::test]
async fn exports_are_csv_and_pdf_of_the_same_rows() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let rows = |path: &'static str, key: &'static str| async move {
        server.get(path, Some(token)).await.json[key]
            .as_array()
            .unwrap()
            .clone()
    };
    let trades = rows("/api/trades/history", "trades").await;
    let ledger = rows("/api/trades/ledger", "transactions").await;
    let positions = rows("/api/positions/open", "positions").await;
    assert_eq!((trades.len(), ledger.len(), positions.len()), (1, 3, 1));
    assert_export_matches(server, token, "completed_trades", TRADE_HEADER, &trades).await;
    assert_export_matches(server, token, "trade_ledger", LEDGER_HEADER, &ledger).await;
    assert_export_matches(server, token, "open_positions", POSITION_HEADER, &positions).await;

    for table in ["completed_trades", "trade_ledger", "open_positions"] {
        let pdf = server
            .get(
                &format!("/api/trades/export?format=pdf&table={table}"),
                Some(token),
            )
            .await;
        pdf.expect(200);
        assert_eq!(pdf.header("content-type"), Some("application/pdf"));
        assert!(pdf.text.starts_with("%PDF-"), "{table}");
        assert!(pdf.text.trim_end().ends_with("%%EOF"), "{table}");
    }
    // The format's case does not matter.
    server
        .get(
            "/api/trades/export?format=CSV&table=trade_ledger",
            Some(token),
        )
        .await
        .expect(200);

    // The table is checked first, then the format.
    for (query, mentions) in [
        ("format=csv&table=orders", "table"),
        ("format=xlsx&table=trade_ledger", "format"),
        ("format=xlsx&table=orders", "table"),
    ] {
        let refused = server
            .get(&format!("/api/trades/export?{query}"), Some(token))
            .await;
        assert_failure(&refused, 400);
        let error = refused.json["error"].as_str().unwrap().to_lowercase();
        assert!(error.contains(mentions), "{query}: {error}");
    }
}

#[tokio::test]
async fn routes_need_a_token_and_the_page_does_not() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("d-tokens")).await;
    let routes = [
        (Method::GET, "/api/positions/open"),
        (Method::GET, "/api/trades/history"),
        (Method::GET, "/api/trades/ledger"),
        (Method::GET, "/api/trades/statistics"),
        (
            Method::GET,
            "/api/trades/export?format=csv&table=trade_ledger",
        ),
        (Method::POST, "/api/restart"),
    ];
    for (method, path) in &routes {
        for bearer in [None, Some("not-a-token")] {
            let refused = server
                .request(method.clone(), path, bearer, Some(json!({})))
                .await;
            assert_failure(&refused, 401);
            assert!(
                refused
                    .header("www-authenticate")
                    .is_some_and(|h| h.starts_with("Bearer")),
                "{path}: {:?}",
                refused.headers
            );
        }
    }
    // Not an admin.
    let refused = server.post("/api/restart", Some(&token), json!({})).await;
    assert_failure(&refused, 403);

    // The page shell is served by tradehost itself, without a token.
    let page = reqwest::get(server.url("/trades")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(html.to_lowercase().contains("<html"), "{html}");
    for external in ["src=\"http", "href=\"http", "src='http", "href='http"] {
        assert!(!html.contains(external), "fetches from elsewhere: {html}");
    }
}

#[tokio::test]
async fn restart_reloads_the_running_bots_with_their_positions() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let before = server.get("/api/positions/open", Some(token)).await.json["positions"].clone();
    let at = chrono::Utc::now().timestamp_millis();
    let restarted = server.post("/api/restart", Some(&t.admin), json!({})).await;
    restarted.expect(200);
    let body = &restarted.json;
    assert_eq!(body["success"], true);
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert_eq!(body["bots_restarted"], 1, "{body}");
    assert_utc(&body["timestamp"]);
    let pid_file = std::fs::read_to_string(server.data_dir().join("tradehost.pid"))
        .expect("the server writes its pid file");
    assert_eq!(
        body["pid"].as_u64(),
        Some(pid_file.trim().parse::<u64>().unwrap()),
        "{body}"
    );

    // The bot is loaded again and keeps scanning; its positions and trades are intact.
    wait_scanned_after(server, token, at).await;
    let after = server.get("/api/positions/open", Some(token)).await;
    assert_eq!(after.json["positions"], before);
    let platform = server.get("/api/v1/account/positions", Some(token)).await;
    let positions = platform.data()["positions"].as_array().unwrap();
    assert_eq!(positions.len(), 1);
    assert_eq!(positions[0]["position_id"], t.open.as_str());
    let history = server.get("/api/trades/history", Some(token)).await;
    assert_eq!(history.json["count"], 1);
    // It still trades.
    server
        .post(
            "/api/v1/webhooks/signals",
            None,
            json!({"api_key": t.key, "symbol": "SOL-USD", "action": "close"}),
        )
        .await
        .expect(200);
    server
        .wait_for(token, "/api/v1/account/history?status=closed", 20, |d| {
            d["pagination"]["total_items"] == 2
        })
        .await;
}

#[tokio::test]
async fn the_cli_restarts_a_running_server() {
    let mut server = Server::start_trading().await;
    let (_, token) = server.user(&email("c-cli")).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper"}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let pid = std::fs::read_to_string(server.data_dir().join("tradehost.pid"))
        .expect("the server writes its pid file");
    assert!(pid.trim().parse::<u32>().is_ok(), "pid file: {pid:?}");

    let logged = restarts_logged(&server);
    let at = chrono::Utc::now().timestamp_millis();
    let output = server.command().arg("restart").output().unwrap();
    assert!(output.status.success(), "{}", output_text(&output));
    let deadline = Instant::now() + Duration::from_secs(10);
    while restarts_logged(&server) <= logged {
        assert!(
            Instant::now() < deadline,
            "no restart in the log:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The same process goes on serving, and the bot scanning.
    server.get("/health", None).await.expect(200);
    wait_scanned_after(&server, &token, at).await;
    let after = std::fs::read_to_string(server.data_dir().join("tradehost.pid")).unwrap();
    assert_eq!(after.trim(), pid.trim());

    // No server on a data directory: a message and a failure.
    let empty = tempfile::tempdir().unwrap();
    let mut nothing = server.command();
    nothing
        .env("TRADEHOST_DATA_DIR", empty.path())
        .current_dir(empty.path())
        .arg("restart");
    let output = nothing.output().unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(!output_text(&output).trim().is_empty());
    // A server that is gone.
    server.kill();
    let output = server.command().arg("restart").output().unwrap();
    assert!(!output.status.success(), "{}", output_text(&output));
    assert!(!output_text(&output).trim().is_empty());
}

#[tokio::test]
async fn timestamps_carry_milliseconds() {
    let t = traded().await;
    let (server, token) = (&t.server, t.token.as_str());
    let open = server.get("/api/positions/open", Some(token)).await.json;
    let history = server.get("/api/trades/history", Some(token)).await.json;
    let ledger = server.get("/api/trades/ledger", Some(token)).await.json;
    let statistics = server.get("/api/trades/statistics", Some(token)).await.json;
    let position = &open["positions"][0];
    let trade = &history["trades"][0];
    let row = &ledger["transactions"][0];
    let restarted = server
        .post("/api/restart", Some(&t.admin), json!({}))
        .await
        .json;
    assert_millis(&[
        ("restart timestamp", &restarted["timestamp"]),
        ("positions/open timestamp", &open["timestamp"]),
        ("position entry_time", &position["entry_time"]),
        ("position created_at", &position["created_at"]),
        ("history timestamp", &history["timestamp"]),
        ("trade entry_time", &trade["entry_time"]),
        ("trade exit_time", &trade["exit_time"]),
        ("trade created_at", &trade["created_at"]),
        ("ledger timestamp", &ledger["timestamp"]),
        ("ledger row timestamp", &row["timestamp"]),
        ("ledger row created_at", &row["created_at"]),
        ("statistics timestamp", &statistics["timestamp"]),
    ]);
}

#[tokio::test]
async fn a_supervised_restart_saves_the_bots_and_ends_the_process() {
    // TRADEHOST_EXIT_ON_RESTART: the server answers, exits cleanly for its supervisor, and the
    // bot resumes when the server is started again.
    let mut server = Server::options()
        .env("TRADEHOST_EXIT_ON_RESTART", "true")
        .env("TRADEHOST_CLOSE_POSITIONS_ON_RESTART", "true")
        .env("TRADEHOST_SCAN_INTERVAL", "0.1")
        .start()
        .await;
    let admin = server.admin_token().await;
    let (user_id, token) = server.user(&email("c-exit")).await;
    server.connect_paper(&token).await;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "symbols": ["BTC-USD"]}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let restarted = server.post("/api/restart", Some(&admin), json!({})).await;
    restarted.expect(200);
    assert_eq!(restarted.json["success"], true, "{}", restarted.text);
    assert_eq!(restarted.json["bots_restarted"], 1, "{}", restarted.text);
    let status = server
        .wait_exit(30)
        .await
        .expect("the server exits after a supervised restart");
    assert!(status.success(), "exit status {status}");
    assert!(
        !server.data_dir().join("tradehost.pid").exists(),
        "the pid file is removed on the way out"
    );
    // Positions were closed first, as configured, and nothing is left pending.
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM positions WHERE user_id = '{user_id}' AND status = 'open'"
            ))
            .await,
        0
    );
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM orders WHERE user_id = '{user_id}' AND status = 'pending'"
            ))
            .await,
        0
    );
    server.restart().await;
    let status = server.wait_running(&token).await;
    assert_eq!(status["status"], "running", "{status}");
}
