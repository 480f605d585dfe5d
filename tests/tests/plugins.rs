//! Plugin administration over HTTP: list, inspect (a live call), upload, activate while calls
//! run, roll back, configure; every change audited and kept across a restart.

use base64::Engine as _;
use serde_json::{Value, json};
use tradehost_blackbox::{Server, email, guest_path, plugin_upload, repo_root};

#[tokio::test]
async fn admins_see_the_builtin_plugins_and_users_do_not() {
    let server = Server::start().await;
    let (_, user) = server.user(&email("user")).await;
    for path in ["/api/v1/admin/plugins", "/api/v1/admin/plugins/paper"] {
        server
            .get(path, Some(&user))
            .await
            .expect_error(403, "UNAUTHORIZED");
    }
    server
        .post(
            "/api/v1/admin/plugins/risk-guards/rollback",
            Some(&user),
            json!({}),
        )
        .await
        .expect_error(403, "UNAUTHORIZED");
    let token = server.admin_token().await;
    let list = server.get("/api/v1/admin/plugins", Some(&token)).await;
    let plugins = list.data()["plugins"].as_array().unwrap().clone();
    let names: Vec<(&str, &str)> = plugins
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("alpaca", "broker"),
            ("apex", "strategy"),
            ("binance", "broker"),
            ("coinbase", "broker"),
            ("ema-cross", "strategy"),
            ("kraken", "broker"),
            ("okx", "broker"),
            ("paper", "broker"),
            ("risk-guards", "risk-rule")
        ]
    );
    for plugin in &plugins {
        assert_eq!(plugin["builtin"], true);
        assert_eq!(plugin["sha256"].as_str().unwrap().len(), 64);
    }
    let paper = server
        .get("/api/v1/admin/plugins/paper", Some(&token))
        .await;
    assert_eq!(paper.data()["live"]["name"], "paper");
    server
        .get("/api/v1/admin/plugins/nope", Some(&token))
        .await
        .expect_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn swap_risk_rules_while_calls_run_then_roll_back() {
    let mut server = Server::start().await;
    let token = server.admin_token().await;
    let upload = plugin_upload("testing/risk-guards-strict", "risk-guards-strict");
    let uploaded = server
        .post("/api/v1/admin/plugins", Some(&token), upload.clone())
        .await;
    let data = uploaded.data();
    assert_eq!(
        data["active_version"], "0.1.0",
        "an upload alone does not activate"
    );
    assert_eq!(data["versions"].as_array().unwrap().len(), 2);
    // The same upload again is idempotent.
    server
        .post("/api/v1/admin/plugins", Some(&token), upload)
        .await
        .expect(200);

    // Live calls into the active risk rule run throughout the swap.
    let base = server.base_url.clone();
    let caller = {
        let token = token.clone();
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut versions = Vec::new();
            for _ in 0..150 {
                let reply = http
                    .get(format!("{base}/api/v1/admin/plugins/risk-guards"))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(reply.status(), 200, "a call failed during the swap");
                let body: Value = reply.json().await.unwrap();
                versions.push(
                    body["data"]["live"]["version"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                );
            }
            versions
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let activated = server
        .post(
            "/api/v1/admin/plugins/risk-guards/activate",
            Some(&token),
            json!({"version": "0.2.0"}),
        )
        .await;
    assert_eq!(activated.data()["active_version"], "0.2.0");
    assert_eq!(activated.data()["previous_version"], "0.1.0");
    let versions = caller.await.unwrap();
    assert!(
        versions.iter().any(|v| v == "0.2.0"),
        "calls reached the new version"
    );

    // Kept across a restart.
    server.restart().await;
    let detail = server
        .get("/api/v1/admin/plugins/risk-guards", Some(&token))
        .await;
    assert_eq!(detail.data()["active_version"], "0.2.0");
    assert_eq!(detail.data()["live"]["version"], "0.2.0");

    let rolled = server
        .post(
            "/api/v1/admin/plugins/risk-guards/rollback",
            Some(&token),
            json!({}),
        )
        .await;
    assert_eq!(rolled.data()["active_version"], "0.1.0");
    assert_eq!(
        server
            .get("/api/v1/admin/plugins/risk-guards", Some(&token))
            .await
            .data()["live"]["version"],
        "0.1.0"
    );

    for event in ["plugin.uploaded", "plugin.activated", "plugin.rolled_back"] {
        assert!(
            server
                .count(&format!(
                    "SELECT COUNT(*) FROM audit_log WHERE event_type = '{event}'"
                ))
                .await
                >= 1,
            "{event} audited"
        );
    }
}

#[tokio::test]
async fn bad_uploads_and_changes_are_refused_and_change_nothing() {
    let server = Server::start().await;
    let token = server.admin_token().await;
    let strict =
        plugin_upload("testing/risk-guards-strict", "risk-guards-strict")["manifest"].clone();
    let ema_cross =
        plugin_upload("strategy-ema-cross", "strategy-ema-cross")["wasm_base64"].clone();
    let cases = vec![
        (
            json!({"manifest": strict, "wasm_base64": "%%%"}),
            "INVALID_REQUEST",
        ),
        (
            json!({"manifest": strict, "wasm_base64": base64::engine::general_purpose::STANDARD.encode(b"\0asm not really")}),
            "INVALID_REQUEST",
        ),
        (
            plugin_upload("testing/guest-forbidden-import", "guest-forbidden-import"),
            "INVALID_REQUEST",
        ),
        (
            json!({"manifest": strict, "wasm_base64": ema_cross}),
            "INVALID_REQUEST",
        ),
        (
            json!({"manifest": {"name": "x"}, "wasm_base64": ""}),
            "INVALID_REQUEST",
        ),
    ];
    for (body, code) in cases {
        server
            .post("/api/v1/admin/plugins", Some(&token), body)
            .await
            .expect_error(400, code);
    }
    assert_eq!(
        server.count("SELECT COUNT(*) FROM plugin_versions").await,
        0
    );
    assert!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'plugin.upload_refused'")
            .await
            >= 3
    );

    server
        .post(
            "/api/v1/admin/plugins/nope/activate",
            Some(&token),
            json!({"version": "1"}),
        )
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .post(
            "/api/v1/admin/plugins/risk-guards/activate",
            Some(&token),
            json!({"version": "9.9.9"}),
        )
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .post(
            "/api/v1/admin/plugins/risk-guards/rollback",
            Some(&token),
            json!({}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&token),
            json!({"config": {"no_such_key": 1}}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&token),
            json!({"config": {"fast_period": "fast"}}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&token),
            json!({"config": {"fast_period": [1]}}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
}

#[tokio::test]
async fn configuration_is_checked_applied_and_kept() {
    let mut server = Server::start().await;
    let token = server.admin_token().await;
    let reply = server
        .put(
            "/api/v1/admin/plugins/ema-cross/config",
            Some(&token),
            json!({"config": {"fast_period": 5, "slow_period": "30"}}),
        )
        .await;
    assert_eq!(reply.data()["config"]["fast_period"], "5");
    assert_eq!(reply.data()["config"]["slow_period"], "30");
    server.restart().await;
    let list = server
        .get("/api/v1/admin/plugins/ema-cross", Some(&token))
        .await;
    assert_eq!(list.data()["config"]["fast_period"], "5");
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'plugin.configured'")
            .await,
        1
    );
}

#[tokio::test]
async fn plugin_check_runs_the_upload_checks_from_the_command_line() {
    let server = Server::start().await;
    let mut good = server.command();
    good.args(["plugin", "check"])
        .arg(guest_path("strategy-apex"))
        .arg("--manifest")
        .arg(repo_root().join("plugins/strategy-apex/plugin.toml"));
    let output = good.output().unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(report["name"], "apex");
    assert_eq!(report["kind"], "strategy");
    assert_eq!(report["describe"]["name"], "apex");

    let mut forbidden = server.command();
    forbidden
        .args(["plugin", "check"])
        .arg(guest_path("guest-forbidden-import"))
        .arg("--manifest")
        .arg(repo_root().join("plugins/testing/guest-forbidden-import/plugin.toml"));
    let output = forbidden.output().unwrap();
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("strategy world"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // A component checked against the wrong kind's manifest.
    let mut mismatch = server.command();
    mismatch
        .args(["plugin", "check"])
        .arg(guest_path("risk-guards"))
        .arg("--manifest")
        .arg(repo_root().join("plugins/strategy-apex/plugin.toml"));
    assert!(!mismatch.output().unwrap().status.success());
}

#[tokio::test]
async fn the_plugin_directory_adds_plugins_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("guest-trap");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::copy(
        repo_root().join("plugins/testing/guest-trap/plugin.toml"),
        plugin.join("plugin.toml"),
    )
    .unwrap();
    std::fs::copy(guest_path("guest-trap"), plugin.join("guest_trap.wasm")).unwrap();
    // A broken entry is skipped with an error in the log; the server still starts.
    std::fs::create_dir_all(dir.path().join("broken")).unwrap();
    std::fs::write(
        dir.path().join("broken/plugin.toml"),
        "name = \"broken\"\nkind = \"strategy\"\nversion = \"1.0.0\"",
    )
    .unwrap();
    std::fs::write(dir.path().join("broken/broken.wasm"), b"not wasm").unwrap();

    let server = Server::options()
        .env("TRADEHOST_PLUGIN_DIR", dir.path().to_string_lossy())
        .start()
        .await;
    let token = server.admin_token().await;
    let list = server.get("/api/v1/admin/plugins", Some(&token)).await;
    let names: Vec<String> = list.data()["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"guest-trap".to_string()), "{names:?}");
    assert!(!names.contains(&"broken".to_string()));
    assert!(
        server.log().contains("plugin not loaded"),
        "{}",
        server.log()
    );
    // Its describe works; what it does when evaluated is contained (see the runtime tests).
    server
        .get("/api/v1/admin/plugins/guest-trap", Some(&token))
        .await
        .expect(200);
}

/// A version uploaded before binaries were kept in the database (its file under the data
/// directory, its row without a binary) still loads after the upgrade, and its binary is copied
/// into the database, where other instances find it.
#[tokio::test]
async fn a_version_stored_as_a_file_by_an_earlier_release_is_copied_into_the_database() {
    use sha2::Digest as _;
    let upload = plugin_upload("testing/risk-guards-strict", "risk-guards-strict");
    let wasm = std::fs::read(guest_path("risk-guards-strict")).unwrap();
    let sha256 = hex::encode(sha2::Sha256::digest(&wasm));
    let manifest = upload["manifest"].to_string().replace('\'', "''");
    let seed = vec![format!(
        "INSERT INTO plugin_versions (name, version, kind, sha256, manifest, file_name, uploaded_by, created_at) \
         VALUES ('risk-guards', '0.2.0', 'risk-rule', '{sha256}', '{manifest}', 'risk-guards/0.2.0.wasm', NULL, 1)"
    )];
    let mut server = Server::options().earlier_schema(21, seed).start().await;
    // The file an earlier release wrote beside the database.
    let file = server.data_dir().join("plugins/risk-guards/0.2.0.wasm");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &wasm).unwrap();
    server.restart().await;
    let token = server.admin_token().await;
    let detail = server
        .get("/api/v1/admin/plugins/risk-guards", Some(&token))
        .await;
    assert_eq!(detail.data()["versions"].as_array().unwrap().len(), 2);
    assert_eq!(
        server
            .count(
                "SELECT COUNT(*) FROM plugin_versions WHERE version = '0.2.0' AND wasm IS NOT NULL"
            )
            .await,
        1
    );
    // Without the file, the version still loads: from the database.
    std::fs::remove_file(&file).unwrap();
    server.restart().await;
    let detail = server
        .get("/api/v1/admin/plugins/risk-guards", Some(&token))
        .await;
    assert_eq!(detail.data()["versions"].as_array().unwrap().len(), 2);
}
