//! `tradehost candles`: historical candles imported from CSV and downloaded through the paper
//! broker, listed, checked for gaps and deleted, on the server's database.

use std::process::Command;

use reqwest::Method;
use serde_json::{Value, json};
use tradehost_blackbox::Server;

const FIVE_MINUTES: i64 = 300_000;
/// 2024-03-01T00:00:00Z.
const START: i64 = 1_709_251_200_000;

struct Outcome {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn json(&self) -> Value {
        assert!(
            self.ok,
            "the command failed: {}{}",
            self.stdout, self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {}", self.stdout))
    }

    fn refusal(&self) -> String {
        assert!(!self.ok, "the command succeeded: {}", self.stdout);
        self.stderr.clone()
    }
}

fn candles(server: &Server, args: &[&str]) -> Outcome {
    let mut command: Command = server.command();
    command
        .env("TRADEHOST_LOG", "error")
        .arg("candles")
        .args(args);
    let output = command.output().expect("the binary runs");
    Outcome {
        ok: output.status.success(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `count` five-minute candles from `START`, skipping the slots in `skip`; closes rise by
/// `step` a candle.
fn csv(count: i64, skip: &[i64], step: f64) -> String {
    let mut text = String::from("timestamp,open,high,low,close,volume\n");
    for i in (0..count).filter(|i| !skip.contains(i)) {
        let close = 100.0 + step * i as f64;
        text.push_str(&format!(
            "{},{},{},{},{},{}\n",
            START + i * FIVE_MINUTES,
            close - 0.25,
            close + 1.0,
            close - 1.0,
            close,
            10 + i
        ));
    }
    text
}

#[tokio::test]
async fn candles_are_imported_whole_or_not_at_all_and_listed_with_their_gaps() {
    let server = Server::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    };

    // Three days of 5-minute candles (864 slots, spanning two blocks) with two holes.
    let first = file("first.csv", &csv(864, &[100, 101, 102, 500], 0.5));
    let imported = candles(
        &server,
        &[
            "import",
            &first,
            "--symbol",
            "btc-usd",
            "--interval",
            "5m",
            "--json",
        ],
    )
    .json();
    assert_eq!(imported["received"], 860);
    assert_eq!(imported["replaced"], 0);
    let series = &imported["series"];
    assert_eq!(series["source"], "csv");
    assert_eq!(series["symbol"], "BTC-USD");
    assert_eq!(series["candles"], 860);
    assert_eq!(series["missing"], 4);
    assert_eq!(series["first"], "2024-03-01T00:00:00.000Z");
    assert_eq!(series["last_ms"], START + 863 * FIVE_MINUTES);
    assert!(
        series["bytes"].as_i64().unwrap() <= 860 * 42 + 2 * 3,
        "{series}"
    );
    assert_eq!(imported["gap_count"], 2);
    assert_eq!(imported["gaps"][0]["after_ms"], START + 99 * FIVE_MINUTES);
    assert_eq!(imported["gaps"][0]["before_ms"], START + 103 * FIVE_MINUTES);
    assert_eq!(imported["gaps"][0]["missing"], 3);

    // A file with bad rows changes nothing, and says which rows and why.
    let mut broken = csv(10, &[], 1.0);
    broken.push_str(&format!("{},100,99,98,100,1\n", START + 20 * FIVE_MINUTES));
    broken.push_str(&format!("{},100,101,99,100\n", START + 21 * FIVE_MINUTES));
    broken.push_str(&format!("{},100,101,99,100,1\n", START + 60_000));
    let refused = candles(
        &server,
        &[
            "import",
            &file("broken.csv", &broken),
            "--symbol",
            "BTC-USD",
            "--interval",
            "5m",
        ],
    )
    .refusal();
    assert!(refused.contains("line 12: the range"), "{refused}");
    assert!(refused.contains("line 13: 5 columns"), "{refused}");
    assert!(refused.contains("line 14: timestamp"), "{refused}");
    // Bad names are refused by field.
    let bad_interval = candles(
        &server,
        &["import", &first, "--symbol", "BTC-USD", "--interval", "2m"],
    )
    .refusal();
    assert!(bad_interval.contains("'interval'"), "{bad_interval}");
    let bad_symbol = candles(
        &server,
        &["import", &first, "--symbol", "BTCUSD", "--interval", "5m"],
    )
    .refusal();
    assert!(bad_symbol.contains("'symbol'"), "{bad_symbol}");

    let listed = candles(&server, &["list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["candles"], 860);

    // A second file over part of the same range fills the holes and replaces what it covers.
    let second = file("second.csv", &csv(200, &[], 2.0));
    let merged = candles(
        &server,
        &[
            "import",
            &second,
            "--symbol",
            "BTC-USD",
            "--interval",
            "5m",
            "--json",
        ],
    )
    .json();
    assert_eq!(merged["received"], 200);
    assert_eq!(merged["replaced"], 197);
    assert_eq!(merged["series"]["candles"], 863);
    assert_eq!(merged["series"]["missing"], 1);
    let gaps = candles(
        &server,
        &["gaps", "--symbol", "BTC-USD", "--interval", "5m", "--json"],
    )
    .json();
    assert_eq!(gaps["gap_count"], 1);
    assert_eq!(gaps["gaps"][0]["after_ms"], START + 499 * FIVE_MINUTES);
    assert_eq!(gaps["gaps"][0]["missing"], 1);
    // Stored as imported: two blocks of 5-minute candles, with the values of the last file.
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM candle_blocks WHERE symbol = 'BTC-USD'")
            .await,
        2
    );

    // The paper market's hourly candles over 61 days (two pages of the broker's 1,000), through
    // the broker plugin.
    let two_months = [
        "download",
        "--symbol",
        "ETH-USD",
        "--interval",
        "1h",
        "--from",
        "2024-01-01",
        "--to",
        "2024-03-01T23:00:00Z",
        "--json",
    ];
    let downloaded = candles(&server, &two_months).json();
    assert_eq!(downloaded["received"], 61 * 24, "{downloaded}");
    assert_eq!(downloaded["series"]["source"], "paper");
    assert_eq!(downloaded["series"]["first"], "2024-01-01T00:00:00.000Z");
    assert_eq!(downloaded["series"]["last"], "2024-03-01T23:00:00.000Z");
    assert_eq!(downloaded["gap_count"], 0);
    // The paper market is a function of time: the same range again replaces every candle.
    let again = candles(&server, &two_months).json();
    assert_eq!(again["replaced"], 61 * 24);
    assert_eq!(again["series"]["candles"], 61 * 24);
    let backwards = candles(
        &server,
        &[
            "download",
            "--symbol",
            "ETH-USD",
            "--interval",
            "1h",
            "--from",
            "2024-02-01",
            "--to",
            "2024-01-01",
        ],
    )
    .refusal();
    assert!(backwards.contains("'from'"), "{backwards}");

    let deleted = candles(
        &server,
        &[
            "delete",
            "--source",
            "csv",
            "--symbol",
            "BTC-USD",
            "--interval",
            "5m",
        ],
    );
    assert!(
        deleted.ok && deleted.stdout.contains("deleted 863 candles"),
        "{}",
        deleted.stderr
    );
    let listed = candles(&server, &["list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["source"], "paper");
    let gone = candles(
        &server,
        &[
            "delete",
            "--source",
            "csv",
            "--symbol",
            "BTC-USD",
            "--interval",
            "5m",
        ],
    )
    .refusal();
    assert!(gone.contains("No candles of BTC-USD"), "{gone}");
}

#[tokio::test]
async fn operators_keep_candles_through_the_api_and_each_change_is_audited() {
    let server = Server::start().await;
    let admin = server.admin_token().await;
    let (_, user) = server.user(&tradehost_blackbox::email("trader")).await;
    server
        .get("/api/v1/admin/candles", Some(&user))
        .await
        .expect_error(403, "UNAUTHORIZED");

    let import = "/api/v1/admin/candles/import?symbol=BTC-USD&interval=5m";
    let imported = server
        .raw(Method::POST, import, Some(&admin), csv(300, &[7], 1.0))
        .await;
    imported.expect(200);
    assert_eq!(imported.data()["received"], 299);
    assert_eq!(imported.data()["series"]["missing"], 1);
    assert_eq!(
        imported.data()["gaps"][0]["after_ms"],
        START + 6 * FIVE_MINUTES
    );

    // A bad row: nothing imported, the row named in the details.
    let mut broken = csv(5, &[], 1.0);
    broken.push_str("not a time,1,2,0.5,1,1\n");
    let refused = server.raw(Method::POST, import, Some(&admin), broken).await;
    refused.expect_error(400, "INVALID_REQUEST");
    assert_eq!(
        refused.json["error"]["details"]["rows"][0]["line"], 7,
        "{}",
        refused.text
    );
    server
        .raw(
            Method::POST,
            "/api/v1/admin/candles/import?symbol=BTC-USD&interval=2m",
            Some(&admin),
            csv(5, &[], 1.0),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");

    let downloaded = server
        .post(
            "/api/v1/admin/candles/download",
            Some(&admin),
            json!({"broker": "paper", "symbol": "ETH-USD", "interval": "5m",
                   "from": "2024-01-01", "to": "2024-01-01T23:55:00Z"}),
        )
        .await;
    downloaded.expect(200);
    assert_eq!(downloaded.data()["received"], 288);
    assert_eq!(downloaded.data()["series"]["source"], "paper");
    server
        .post(
            "/api/v1/admin/candles/download",
            Some(&admin),
            json!({"broker": "nowhere", "symbol": "ETH-USD", "interval": "5m", "from": "2024-01-01"}),
        )
        .await
        .expect_error(400, "UNSUPPORTED_BROKER");
    let bad_from = server
        .post(
            "/api/v1/admin/candles/download",
            Some(&admin),
            json!({"broker": "paper", "symbol": "ETH-USD", "interval": "5m", "from": "yesterday"}),
        )
        .await;
    bad_from.expect_error(400, "INVALID_REQUEST");
    assert_eq!(bad_from.json["error"]["details"]["field"], "from");
    // More than one request may fetch.
    server
        .post(
            "/api/v1/admin/candles/download",
            Some(&admin),
            json!({"broker": "paper", "symbol": "ETH-USD", "interval": "1m", "from": "2020-01-01"}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");

    let listed = server.get("/api/v1/admin/candles", Some(&admin)).await;
    listed.expect(200);
    let series = listed.data()["series"].as_array().unwrap().clone();
    let names: Vec<(&str, &str)> = series
        .iter()
        .map(|s| (s["source"].as_str().unwrap(), s["symbol"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("csv", "BTC-USD"), ("paper", "ETH-USD")]);

    let gaps = server
        .get("/api/v1/admin/candles/csv/BTC-USD/5m/gaps", Some(&admin))
        .await;
    gaps.expect(200);
    assert_eq!(gaps.data()["gap_count"], 1);
    server
        .get("/api/v1/admin/candles/csv/SOL-USD/5m/gaps", Some(&admin))
        .await
        .expect_error(404, "NOT_FOUND");

    let deleted = server
        .request(
            Method::DELETE,
            "/api/v1/admin/candles/paper/ETH-USD/5m",
            Some(&admin),
            None,
        )
        .await;
    deleted.expect(200);
    assert_eq!(deleted.data()["candles"], 288);
    server
        .request(
            Method::DELETE,
            "/api/v1/admin/candles/paper/ETH-USD/5m",
            Some(&admin),
            None,
        )
        .await
        .expect_error(404, "NOT_FOUND");

    for event in ["candles.imported", "candles.downloaded", "candles.deleted"] {
        assert_eq!(
            server
                .count(&format!(
                    "SELECT COUNT(*) FROM audit_log WHERE event_type = '{event}'"
                ))
                .await,
            1,
            "{event}"
        );
    }
}
