//! A client written for the ORIGINAL backend runs against tradehost unchanged: the fixture of
//! `tests/browser/legacy-client/` (a stand-in reproducing the original single-page client's
//! documented behaviour, companion-shapes.md A.17/A.18) is served from the API's origin through
//! `TRADEHOST_WEB_DIR` and driven in Debian's chromium by `tests/browser/legacy.mjs`
//! (`npm ci --prefix tests/browser` installs playwright-core).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tradehost_blackbox::exchange::{Simulator, binance};
use tradehost_blackbox::{PASSWORD, Server, email, repo_root};

/// The script `tests/browser/<name>`, once node and playwright-core are there.
fn browser_script(name: &str) -> PathBuf {
    let dir = repo_root().join("tests/browser");
    assert!(
        dir.join("node_modules/playwright-core/package.json")
            .is_file(),
        "playwright-core is not installed: run `npm ci --prefix tests/browser` (needs node and npm; \
         the browser is /usr/bin/chromium or $CHROMIUM)"
    );
    dir.join(name)
}

/// Signs in through the original's login route and connects the paper broker for the user, as
/// the harness's `connect_paper` does.
async fn connect_paper(server: &Server, address: &str) {
    let login = server
        .post(
            "/api/auth/login",
            None,
            json!({"email": address, "password": PASSWORD}),
        )
        .await;
    login.expect(200);
    let token = login.json["access_token"]
        .as_str()
        .expect("an access_token")
        .to_string();
    server.connect_paper(&token).await;
}

#[tokio::test]
async fn a_client_of_the_original_backend_works_unchanged() {
    let script = browser_script("legacy.mjs");
    let web_dir = repo_root().join("tests/browser/legacy-client");
    // The broker picker's venues are real plugins: Binance's is pointed at a local simulator.
    let venue = binance::case();
    let simulator = Simulator::start(venue.exchange.clone(), venue.face.clone()).await;
    let server = Server::options()
        .env("TRADEHOST_WEB_DIR", web_dir.display().to_string())
        .env("TRADEHOST_SCAN_INTERVAL", "0.2")
        .env("TRADEHOST_PLUGIN_ALLOW_PRIVATE_NETWORK", "true")
        // The whole flow runs in seconds: more calls than the free tier's minute allows.
        .env("TRADEHOST_API_RATE_MULTIPLIER", "10")
        .start()
        .await;
    let admin = server.admin_token().await;
    server
        .put(
            "/api/v1/admin/plugins/binance/config",
            Some(&admin),
            json!({"config": {"base_url": simulator.url}}),
        )
        .await
        .expect(200);
    let address = email("legacy-client");
    let done = server.data_dir().join("broker-connected");

    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .current_dir(repo_root().join("tests/browser"))
        .env("BASE_URL", &server.base_url)
        .env("EMAIL", &address)
        .env("PASSWORD", PASSWORD)
        .env("BROKER_DONE_FILE", &done)
        .env("VENUE_API_KEY", venue.connect["api_key"].as_str().unwrap())
        .env(
            "VENUE_API_SECRET",
            venue.connect["api_secret"].as_str().unwrap(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("node does not run ({e}); install Node.js 20 or later"));
    let mut stderr = child.stderr.take().expect("piped stderr");
    let errors = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();

    // The script's output, and whether it asked for (and got) the paper broker.
    let mut output = String::new();
    let mut connected = false;
    let finished = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.expect("the script's stdout") {
            output.push_str(&line);
            output.push('\n');
            if line == "READY_FOR_BROKER" && !connected {
                connect_paper(&server, &address).await;
                std::fs::write(&done, b"paper").unwrap();
                connected = true;
            }
        }
        child.wait().await.expect("the script ends")
    })
    .await;
    let status = match finished {
        Ok(status) => status,
        Err(_) => {
            let _ = child.kill().await;
            let errors = errors.await.unwrap_or_default();
            panic!(
                "{} ran longer than 120 s:\n{output}{errors}",
                script.display()
            );
        }
    };
    let errors = errors.await.unwrap_or_default();
    assert!(
        status.success(),
        "{} failed ({status}):\n{output}{errors}",
        script.display()
    );
    assert!(
        connected,
        "the script never asked for the paper broker:\n{output}"
    );
    print!("{output}{errors}");

    // What the page did is what the server holds: no broker left, the bot stopped.
    let login = server
        .post(
            "/api/auth/login",
            None,
            json!({"email": address, "password": PASSWORD}),
        )
        .await;
    login.expect(200);
    let token = login.json["access_token"].as_str().unwrap();
    let brokers = server.get("/api/user/brokers", Some(token)).await;
    brokers.expect(200);
    assert_eq!(brokers.json["brokers"], json!([]), "{}", brokers.text);
    // The venue saw one refused signature (the wrong secret) and none else.
    assert_eq!(venue.exchange.with_state(|s| s.auth_refusals), 1);
    let status = server.get("/api/status", Some(token)).await;
    status.expect(200);
    assert_eq!(status.json["engine_status"], "stopped", "{}", status.text);
    assert_eq!(login.json["subscription_tier"], "free", "{}", login.text);
}
