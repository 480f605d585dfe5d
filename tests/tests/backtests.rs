//! Backtests: the command line and the API (progress on the WebSocket, plan limits, refusals by
//! field), determinism, and parity with a paper bot over the same candles, trade for trade.

use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rust_decimal::Decimal;
use serde_json::{Value, json};
use sqlx::Row;
use tradehost_blackbox::{Server, decimal_sql, next_event};

const MINUTE: i64 = 60_000;
const FIVE_MINUTES: i64 = 300_000;
/// 2024-03-01T00:00:00Z.
const START: i64 = 1_709_251_200_000;
const DAY: i64 = 86_400_000;

struct Outcome {
    ok: bool,
    stdout: String,
    stderr: String,
}

fn tradehost(server: &Server, args: &[&str]) -> Outcome {
    let mut command: Command = server.command();
    command.env("TRADEHOST_LOG", "error").args(args);
    let output = command.output().expect("the binary runs");
    Outcome {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn report(outcome: &Outcome) -> Value {
    assert!(outcome.ok, "the backtest failed: {}", outcome.stderr);
    serde_json::from_str(&outcome.stdout).unwrap_or_else(|err| panic!("not JSON ({err})"))
}

fn refusal(outcome: &Outcome) -> String {
    assert!(!outcome.ok, "the backtest ran: {}", outcome.stdout);
    outcome.stderr.clone()
}

fn dec(value: &Value) -> Decimal {
    value
        .as_str()
        .unwrap_or_else(|| panic!("a decimal string: {value}"))
        .parse()
        .unwrap()
}

/// Checks that a report's figures agree with its own trades and books.
fn assert_consistent(report: &Value) {
    let trades = report["trades"].as_array().unwrap();
    let net: Decimal = trades.iter().map(|t| dec(&t["net_pnl"])).sum();
    let gross: Decimal = trades.iter().map(|t| dec(&t["gross_pnl"])).sum();
    let metrics = &report["metrics"];
    assert_eq!(metrics["total_trades"], trades.len());
    assert!(
        (metrics["net_pnl"].as_f64().unwrap() - net.to_string().parse::<f64>().unwrap()).abs()
            < 1e-6
    );
    assert_eq!(dec(&report["realized_pnl"]), gross);
    let unrealized: Decimal = report["open_positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| dec(&p["unrealized_pnl"]))
        .sum();
    // Equity is the capital plus what trading made, less every fee paid (open positions' entry
    // fees included).
    let equity = dec(&report["initial_capital"]) + dec(&report["realized_pnl"]) + unrealized
        - dec(&report["fees_paid"]);
    assert!(
        (equity - dec(&report["final_equity"])).abs() < Decimal::new(1, 6),
        "{equity}"
    );
    for trade in trades {
        assert!(trade["closed_at_ms"].as_i64() >= trade["opened_at_ms"].as_i64());
        assert!(
            ["signal", "stop_loss", "take_profit", "trailing_stop"]
                .contains(&trade["exit_reason"].as_str().unwrap())
        );
    }
}

#[tokio::test]
async fn the_command_line_backtests_deterministically_and_refuses_bad_input_by_field() {
    let server = Server::start().await;
    let from = START.to_string();
    let to = (START + 2 * DAY).to_string();
    let args = [
        "backtest",
        "--strategy",
        "ema-cross",
        "--symbols",
        "BTC-USD,ETH-USD",
        "--interval",
        "5m",
        "--from",
        &from,
        "--to",
        &to,
        "--json",
    ];
    // The paper market's candles are downloaded on the first run and read from the store after.
    let first = tradehost(&server, &args);
    let second = tradehost(&server, &args);
    assert_eq!(first.stdout, second.stdout, "two runs differ");
    let first = report(&first);
    assert_eq!(first["candles"], 2 * 577);
    assert_eq!(first["steps"], 577);
    assert!(
        first["metrics"]["total_trades"].as_u64().unwrap() >= 5,
        "{}",
        first["metrics"]
    );
    assert_consistent(&first);
    let stored = server
        .count("SELECT COUNT(*) FROM candle_blocks WHERE source = 'paper' AND bar_interval = '5m'")
        .await;
    assert!(stored >= 2, "{stored} blocks");

    // The lookahead check reruns on data cut short: a strategy shown closed candles only
    // gives the same signals up to each cut, and the run's own figures are those without it.
    let checked = report(&tradehost(
        &server,
        &[&args[..], &["--lookahead-check", "3"]].concat(),
    ));
    let check = &checked["lookahead"];
    assert_eq!(check["clean"], true, "{check}");
    let cuts = check["cuts"].as_array().unwrap();
    assert_eq!(cuts.len(), 3);
    assert!(cuts.iter().all(|cut| cut["changed"] == 0), "{check}");
    let compared: u64 = cuts
        .iter()
        .map(|cut| cut["compared"].as_u64().unwrap())
        .sum();
    assert!(compared > 0, "{check}");
    assert_eq!(checked["trades"], first["trades"]);
    assert!(first.get("lookahead").is_none());

    // A strategy that declares its symbols independent has them spread over threads (five
    // symbols a thread at least), a group an instance, and gives the same report as one
    // instance over them all.
    let over_threads = |threads: &str| {
        let mut ten = args.to_vec();
        ten[4] =
            "BTC-USD,ETH-USD,SOL-USD,ADA-USD,XRP-USD,DOGE-USD,AVAX-USD,DOT-USD,LINK-USD,LTC-USD";
        report(&tradehost(
            &server,
            &[&ten[..], &["--threads", threads]].concat(),
        ))
    };
    let (mut alone, mut spread) = (over_threads("1"), over_threads("2"));
    assert_eq!(
        (alone["threads"].take(), spread["threads"].take()),
        (Value::from(1), Value::from(2))
    );
    assert_eq!(alone, spread);
    let traded: std::collections::BTreeSet<&str> = alone["trades"]
        .as_array()
        .unwrap()
        .iter()
        .map(|trade| trade["symbol"].as_str().unwrap())
        .collect();
    // Trades in both groups (the first five symbols on the run's thread, the rest on the other).
    let first_group = ["BTC-USD", "ETH-USD", "SOL-USD", "ADA-USD", "XRP-USD"];
    assert!(
        traded.iter().any(|s| first_group.contains(s))
            && traded.iter().any(|s| !first_group.contains(s)),
        "{traded:?}"
    );

    // A sweep runs every combination of the grid on the cores, ranked by the chosen figure;
    // each point is the run its configuration gives alone, and a combination the strategy
    // refuses is listed as failed.
    let swept: Value = serde_json::from_str(
        &tradehost(
            &server,
            &[
                &args[..],
                &[
                    "--sweep",
                    "fast_period=5,9",
                    "--sweep",
                    "slow_period=8,21",
                    "--rank-by",
                    "net_pnl",
                ],
            ]
            .concat(),
        )
        .stdout,
    )
    .unwrap();
    let points = swept.as_array().unwrap();
    assert_eq!(points.len(), 4, "{swept}");
    let scores: Vec<f64> = points[..3]
        .iter()
        .map(|p| p["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert_eq!(
        points[..3]
            .iter()
            .map(|p| p["rank"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 2, 3]
    );
    let failed = &points[3];
    assert_eq!(
        (
            failed["config"]["fast_period"].as_str(),
            failed["config"]["slow_period"].as_str()
        ),
        (Some("9"), Some("8"))
    );
    assert!(
        failed["error"].as_str().unwrap().contains("fast_period"),
        "{failed}"
    );
    let best = &points[0];
    let alone = report(&tradehost(
        &server,
        &[
            &args[..],
            &[
                "--config",
                &format!(
                    "fast_period={}",
                    best["config"]["fast_period"].as_str().unwrap()
                ),
                "--config",
                &format!(
                    "slow_period={}",
                    best["config"]["slow_period"].as_str().unwrap()
                ),
            ],
        ]
        .concat(),
    ));
    assert_eq!(best["report"]["trades"], alone["trades"]);
    assert_eq!(best["score"], alone["metrics"]["net_pnl"]);
    let unknown_figure = refusal(&tradehost(
        &server,
        &[
            &args[..],
            &["--sweep", "fast_period=5", "--rank-by", "luck"],
        ]
        .concat(),
    ));
    assert!(unknown_figure.contains("rank_by"), "{unknown_figure}");

    // Costs given on the command line are the run's.
    let free = report(&tradehost(
        &server,
        &[
            &args[..],
            &["--fee-bps", "0", "--slippage-bps", "0", "--spread-bps", "0"],
        ]
        .concat(),
    ));
    assert_eq!(free["costs"]["fee_bps"], 0.0);
    assert!(
        free["trades"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| dec(&t["fees"]).is_zero())
    );

    // Bad input is refused, naming what is wrong.
    let unknown = refusal(&tradehost(
        &server,
        &[
            "backtest",
            "--strategy",
            "no-such",
            "--symbols",
            "BTC-USD",
            "--from",
            &from,
            "--to",
            &to,
        ],
    ));
    assert!(unknown.contains("strategy"), "{unknown}");
    let empty = refusal(&tradehost(
        &server,
        &[
            "backtest",
            "--strategy",
            "ema-cross",
            "--symbols",
            "BTC-USD",
            "--from",
            &from,
            "--to",
            &from,
        ],
    ));
    assert!(
        empty.contains("'to'") || empty.contains("to:") || empty.contains("range"),
        "{empty}"
    );

    // Imported candles: an interval the data does not have, and a file with a broken row.
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("timestamp,open,high,low,close,volume\n");
    for i in 0..400 {
        let close = 100.0 + (i as f64 / 7.0).sin() * 5.0;
        csv.push_str(&format!(
            "{},{close},{},{},{close},1\n",
            START + i * FIVE_MINUTES,
            close + 1.0,
            close - 1.0
        ));
    }
    let path = dir.path().join("btc.csv");
    std::fs::write(&path, &csv).unwrap();
    let path = path.to_string_lossy().into_owned();
    let imported = tradehost(
        &server,
        &[
            "candles",
            "import",
            &path,
            "--symbol",
            "BTC-USD",
            "--interval",
            "5m",
        ],
    );
    assert!(imported.ok, "{}", imported.stderr);
    let to = (START + 400 * FIVE_MINUTES).to_string();
    // ema-cross over BTC-USD from START to `to`, with `more` arguments.
    let btc = |more: &[&str]| {
        let base = [
            "backtest",
            "--strategy",
            "ema-cross",
            "--symbols",
            "BTC-USD",
            "--from",
            &from,
            "--to",
            &to,
        ];
        tradehost(&server, &[&base[..], more].concat())
    };
    let hourly = refusal(&btc(&["--source", "csv", "--interval", "1h"]));
    assert!(
        hourly.contains("no BTC-USD candles at 1h from csv"),
        "{hourly}"
    );
    let from_store = report(&btc(&["--source", "csv", "--interval", "5m", "--json"]));
    // The same candles from a file give the same report.
    let from_file = report(&btc(&["--data", &path, "--interval", "5m", "--json"]));
    assert_eq!(from_store["trades"], from_file["trades"]);
    assert_eq!(from_store["candles"], 400);
    let broken = dir.path().join("broken.csv");
    std::fs::write(
        &broken,
        format!("{csv}{},100,99,98,100,1\n", START + 400 * FIVE_MINUTES),
    )
    .unwrap();
    let refused = refusal(&btc(&[
        "--data",
        &broken.to_string_lossy(),
        "--interval",
        "5m",
    ]));
    assert!(refused.contains("line 402"), "{refused}");
}

#[tokio::test]
async fn the_api_runs_backtests_in_the_background_with_progress_and_plan_limits() {
    let server = Server::start().await;
    let (_, token) = server.user(&tradehost_blackbox::email("bt")).await;
    let mut socket = server.socket(&token, &["backtests"]).await;
    let body = json!({
        "strategy": "ema-cross",
        "symbols": ["BTC-USD", "ETH-USD"],
        "interval": "5m",
        "start": "2024-03-01",
        "end": "2024-03-03",
        "initial_capital": 10000,
        "config": {"fast_period": 5, "slow_period": 13}
    });
    let created = server
        .post("/api/v1/backtests", Some(&token), body.clone())
        .await;
    created.expect(200);
    let id = created.data()["id"].as_str().unwrap().to_string();
    assert_eq!(created.data()["status"], "queued");
    assert_eq!(created.data()["candles"], 2 * 577);
    let progress = next_event(&mut socket, "backtest_progress", 30).await;
    assert_eq!(progress["channel"], "backtests");
    assert_eq!(progress["data"]["backtest_id"], id.as_str());
    let finished = next_event(&mut socket, "backtest_finished", 60).await;
    assert_eq!(finished["data"]["status"], "completed", "{finished}");
    assert_eq!(finished["data"]["progress_pct"], 100);

    let detail = server
        .get(&format!("/api/v1/backtests/{id}"), Some(&token))
        .await;
    detail.expect(200);
    let detail = detail.data().clone();
    assert_eq!(detail["status"], "completed");
    assert_eq!(detail["config"]["fast_period"], "5");
    let trades = server
        .get(&format!("/api/v1/backtests/{id}/trades"), Some(&token))
        .await;
    trades.expect(200);
    let trades = trades.data()["trades"].clone();
    assert_eq!(
        detail["metrics"]["total_trades"],
        trades.as_array().unwrap().len()
    );
    assert!(!trades.as_array().unwrap().is_empty());
    let equity = server
        .get(&format!("/api/v1/backtests/{id}/equity"), Some(&token))
        .await;
    equity.expect(200);
    let points = equity.data()["points"].as_array().unwrap();
    assert_eq!(points.len(), 577);
    assert!(
        points
            .iter()
            .all(|p| p["drawdown_pct"].as_f64().unwrap() <= 0.0)
    );

    // The same request again, with the lookahead check, gives the same trades, and the check
    // finds no signal that changes without the later candles.
    assert!(detail["lookahead"].is_null());
    let mut checked = body.clone();
    checked["lookahead_check"] = json!(2);
    let again = server
        .post("/api/v1/backtests", Some(&token), checked)
        .await;
    again.expect(200);
    let again_id = again.data()["id"].as_str().unwrap().to_string();
    next_event(&mut socket, "backtest_finished", 60).await;
    let check = server
        .get(&format!("/api/v1/backtests/{again_id}"), Some(&token))
        .await
        .data()["lookahead"]
        .clone();
    assert_eq!(check["clean"], true, "{check}");
    assert_eq!(check["cuts"].as_array().unwrap().len(), 2, "{check}");
    let repeated = server
        .get(
            &format!("/api/v1/backtests/{again_id}/trades"),
            Some(&token),
        )
        .await;
    assert_eq!(repeated.data()["trades"], trades);
    // Two runs side by side: the same request, so every figure is equal and none is best.
    let compared = server
        .get(
            &format!("/api/v1/backtests/compare?ids={id},{again_id}"),
            Some(&token),
        )
        .await;
    compared.expect(200);
    let compared = compared.data().clone();
    assert_eq!(compared["runs"][0]["id"], id.as_str());
    assert_eq!(compared["runs"][1]["id"], again_id.as_str());
    let figures = compared["figures"].as_array().unwrap();
    let net = figures.iter().find(|f| f["name"] == "net_pnl").unwrap();
    assert_eq!(net["values"][0], detail["metrics"]["net_pnl"]);
    assert_eq!(net["values"][0], net["values"][1]);
    assert!(figures.iter().all(|f| f["best"].is_null()), "{compared}");
    for query in [format!("ids={id}"), String::new()] {
        server
            .get(&format!("/api/v1/backtests/compare?{query}"), Some(&token))
            .await
            .expect_error(400, "INVALID_REQUEST");
    }
    server
        .get(
            &format!("/api/v1/backtests/compare?ids={id},no-such"),
            Some(&token),
        )
        .await
        .expect_error(404, "NOT_FOUND");
    let listed = server.get("/api/v1/backtests", Some(&token)).await;
    listed.expect(200);
    assert_eq!(listed.data()["backtests"].as_array().unwrap().len(), 2);
    assert_eq!(listed.data()["backtests"][0]["id"], again_id.as_str());

    // Bad input, by field; nothing is recorded.
    for (change, field) in [
        (json!({"strategy": "no-such"}), "strategy"),
        (json!({"interval": "2m"}), "interval"),
        (json!({"end": "2024-03-01"}), "to"),
        (json!({"symbols": []}), "symbols"),
        (json!({"initial_capital": -5}), "initial_capital"),
        (json!({"start": "yesterday"}), "start"),
        (json!({"fee_bps": 5000}), "costs.fee_bps"),
        (json!({"version": "9.9.9"}), "version"),
        (json!({"source": "csv"}), "symbols"),
        (json!({"lookahead_check": 0}), "lookahead_check"),
        (json!({"lookahead_check": 21}), "lookahead_check"),
    ] {
        let mut bad = body.clone();
        for (key, value) in change.as_object().unwrap() {
            bad[key] = value.clone();
        }
        let refused = server.post("/api/v1/backtests", Some(&token), bad).await;
        refused.expect_error(400, "INVALID_REQUEST");
        let details = &refused.json["error"]["details"];
        assert_eq!(details["field"], field, "{change}: {}", refused.text);
    }
    // Over the plan: a new account (on the basic plan's trial) replays 1,000,000 candles a run.
    let mut large = body.clone();
    large["end"] = json!("2025-03-01");
    large["symbols"] = json!([
        "BTC-USD", "ETH-USD", "SOL-USD", "ADA-USD", "XRP-USD", "DOGE-USD", "AVAX-USD", "DOT-USD",
        "LINK-USD", "LTC-USD"
    ]);
    let refused = server.post("/api/v1/backtests", Some(&token), large).await;
    refused.expect_error(403, "EXCEEDS_TIER_LIMIT");
    assert_eq!(
        server.get("/api/v1/backtests", Some(&token)).await.data()["backtests"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Another user sees none of it; deleting removes the run and its report.
    let (_, other) = server.user(&tradehost_blackbox::email("bt-other")).await;
    server
        .get(&format!("/api/v1/backtests/{id}"), Some(&other))
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .request(
            reqwest::Method::DELETE,
            &format!("/api/v1/backtests/{id}"),
            Some(&token),
            None,
        )
        .await
        .expect(200);
    server
        .get(&format!("/api/v1/backtests/{id}"), Some(&token))
        .await
        .expect_error(404, "NOT_FOUND");
    // An ended run cannot be cancelled.
    server
        .post(
            &format!("/api/v1/backtests/{again_id}/cancel"),
            Some(&token),
            json!({}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Waits until the clock is `from`..`to` seconds into a minute.
async fn within_minute(from: i64, to: i64) {
    loop {
        let second = now_ms() % MINUTE / 1000;
        if (from..to).contains(&second) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A trade or position as both sides state it: symbol, side, quantity, prices, fees, P&L, reason.
type Key = (
    String,
    String,
    Decimal,
    Decimal,
    Decimal,
    Decimal,
    Decimal,
    String,
);

#[tokio::test]
async fn a_backtest_over_the_candles_a_paper_bot_traded_on_gives_its_trades_exactly() {
    let server = Server::start_trading().await;
    let admin = server.admin_token().await;
    // Minute candles of a fast market and quick averages: crossovers every few minutes.
    server
        .configure_plugin(&admin, "paper", json!({"speed": "240"}))
        .await;
    server
        .configure_plugin(
            &admin,
            "ema-cross",
            json!({"interval": "1m", "fast_period": "2", "slow_period": "3", "stop_loss_pct": "0.8", "take_profit_pct": "1.2"}),
        )
        .await;
    let (_, token) = server.user(&tradehost_blackbox::email("parity")).await;
    server.connect_paper(&token).await;
    let symbols = [
        "BTC-USD", "ETH-USD", "SOL-USD", "ADA-USD", "XRP-USD", "DOGE-USD", "AVAX-USD", "DOT-USD",
        "LINK-USD", "LTC-USD",
    ];
    // Started and stopped well inside a minute, so the first scan sees the candle the backtest
    // starts with and the last one was scanned before the stop.
    within_minute(5, 45).await;
    let from = now_ms() / MINUTE * MINUTE;
    server
        .post(
            "/api/v1/trading/start",
            Some(&token),
            json!({"broker": "paper", "paper_trading": true, "symbols": symbols}),
        )
        .await
        .expect(200);
    server.wait_running(&token).await;
    let deadline = Instant::now() + Duration::from_secs(330);
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let trades = server.count("SELECT COUNT(*) FROM trades").await;
        let minutes = (now_ms() - from) / MINUTE;
        if (trades >= 4 && minutes >= 2) || Instant::now() > deadline {
            break;
        }
    }
    within_minute(10, 50).await;
    let to = now_ms() / MINUTE * MINUTE;
    server
        .post(
            "/api/v1/trading/stop",
            Some(&token),
            json!({"close_positions": false}),
        )
        .await
        .expect(200);
    let live_trades: Vec<Key> = rows(
        &server,
        format!(
            "SELECT symbol, side, {}, {}, {}, {}, {}, exit_reason FROM trades ORDER BY closed_at",
            decimal_sql("quantity"),
            decimal_sql("entry_price"),
            decimal_sql("exit_price"),
            decimal_sql("fees"),
            decimal_sql("net_pnl"),
        ),
    )
    .await;
    assert!(
        live_trades.len() >= 2,
        "the bot made {} trades",
        live_trades.len()
    );
    let live_open: Vec<Key> = rows(
        &server,
        format!(
            "SELECT symbol, side, {}, {}, '0', '0', '0', '' FROM positions WHERE status = 'open'",
            decimal_sql("quantity"),
            decimal_sql("entry_price"),
        ),
    )
    .await;

    let capital = server.get("/api/v1/account/balance", Some(&token)).await;
    let initial_capital = capital.data()["initial_capital"].clone();
    let mut socket = server.socket(&token, &["backtests"]).await;
    let created = server
        .post(
            "/api/v1/backtests",
            Some(&token),
            json!({
                "strategy": "ema-cross",
                "symbols": symbols,
                "interval": "1m",
                "start": from,
                "end": to,
                "initial_capital": initial_capital,
            }),
        )
        .await;
    created.expect(200);
    let id = created.data()["id"].as_str().unwrap().to_string();
    let finished = next_event(&mut socket, "backtest_finished", 60).await;
    assert_eq!(finished["data"]["status"], "completed", "{finished}");
    // ema-cross declares its symbols independent: the ten are spread over the cores (five a
    // thread at least), and the parity below holds for the spread run.
    let detail = server
        .get(&format!("/api/v1/backtests/{id}"), Some(&token))
        .await;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert_eq!(
        detail.data()["summary"]["threads"],
        cores.min(symbols.len() / 5),
        "{}",
        detail.data()
    );
    let replayed = server
        .get(&format!("/api/v1/backtests/{id}/trades"), Some(&token))
        .await;
    replayed.expect(200);
    let key = |t: &Value, trade: bool| -> Key {
        let text = |name: &str| t[name].as_str().unwrap_or_default().to_string();
        let zero = || Decimal::ZERO;
        (
            text("symbol"),
            text("side"),
            dec(&t["quantity"]),
            dec(&t["entry_price"]),
            if trade { dec(&t["exit_price"]) } else { zero() },
            if trade { dec(&t["fees"]) } else { zero() },
            if trade { dec(&t["net_pnl"]) } else { zero() },
            if trade {
                text("exit_reason")
            } else {
                String::new()
            },
        )
    };
    let mut backtest_trades: Vec<Key> = replayed.data()["trades"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| key(t, true))
        .collect();
    let mut backtest_open: Vec<Key> = replayed.data()["open_positions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| key(p, false))
        .collect();
    let mut live_trades = live_trades;
    let mut live_open = live_open;
    for list in [
        &mut backtest_trades,
        &mut live_trades,
        &mut backtest_open,
        &mut live_open,
    ] {
        list.sort();
    }
    assert_eq!(backtest_trades, live_trades, "trades differ");
    assert_eq!(backtest_open, live_open, "open positions differ");
}

async fn rows(server: &Server, sql: String) -> Vec<Key> {
    let found = sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_all(server.db().await)
        .await
        .unwrap();
    found
        .iter()
        .map(|row| {
            let text = |i: usize| row.get::<String, _>(i);
            let number = |i: usize| text(i).parse::<Decimal>().unwrap();
            (
                text(0),
                text(1),
                number(2),
                number(3),
                number(4),
                number(5),
                number(6),
                text(7),
            )
        })
        .collect()
}
