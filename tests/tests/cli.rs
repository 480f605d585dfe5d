//! The binary's commands and its configuration policy: admin creation and promotion, migrate,
//! persisted secrets, refusal to start with missing or weak secrets.

use std::process::Command;

use serde_json::json;
use tradehost_blackbox::{PASSWORD, Server, binary, email, on_postgres, repo_root};

fn run(mut command: Command) -> (bool, String) {
    let output = command.output().expect("the binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn admin_create_and_promote_are_the_way_to_admin() {
    let server = Server::start().await;
    let (_, user_token) = server.user(&email("plain")).await;
    server
        .get("/api/v1/admin/audit-logs", Some(&user_token))
        .await
        .expect_error(403, "UNAUTHORIZED");
    server
        .get("/api/v1/admin/audit-logs", None)
        .await
        .expect_error(401, "TOKEN_INVALID");

    let admin = email("root");
    let mut create = server.command();
    create.args(["admin", "create", "--email", &admin, "--password", PASSWORD]);
    let (ok, output) = run(create);
    assert!(ok, "{output}");
    assert!(output.contains("created admin"), "{output}");
    let token = server.login(&admin, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    let logs = server
        .get("/api/v1/admin/audit-logs?per_page=2", Some(&token))
        .await;
    let data = logs.data();
    assert_eq!(data["logs"].as_array().unwrap().len(), 2);
    assert_eq!(data["pagination"]["per_page"], 2);
    assert_eq!(data["pagination"]["page"], 1);
    assert!(data["pagination"]["total_items"].as_i64().unwrap() >= 4);
    assert_eq!(data["pagination"]["has_prev"], false);
    let entry = &data["logs"][0];
    for field in ["log_id", "event_type", "user_id", "metadata", "timestamp"] {
        assert!(entry.get(field).is_some(), "{field} in {entry}");
    }

    // Promote an existing user.
    let promoted = email("promoted");
    server.register(&promoted).await;
    let mut promote = server.command();
    promote.args(["admin", "promote", "--email", &promoted]);
    let (ok, output) = run(promote);
    assert!(ok && output.contains("promoted"), "{output}");
    let token2 = server.login(&promoted, PASSWORD).await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .get("/api/v1/admin/audit-logs", Some(&token2))
        .await
        .expect(200);
    let mut missing = server.command();
    missing.args(["admin", "promote", "--email", "nobody@example.com"]);
    let (ok, output) = run(missing);
    assert!(!ok && output.contains("no user"), "{output}");
    let mut weak = server.command();
    weak.args([
        "admin",
        "create",
        "--email",
        &email("weak"),
        "--password",
        "123",
    ]);
    assert!(!run(weak).0);

    // Filters, clamping and bad parameters.
    let filtered = server
        .get(
            "/api/v1/admin/audit-logs?event_type=admin.promoted",
            Some(&token),
        )
        .await;
    let logs = filtered.data()["logs"].as_array().unwrap().clone();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0]["metadata"]["email"], json!(promoted));
    let clamped = server
        .get("/api/v1/admin/audit-logs?per_page=100000", Some(&token))
        .await;
    assert_eq!(clamped.data()["pagination"]["per_page"], 500);
    for bad in ["page=0", "page=abc", "per_page=-1", "start_date=yesterday"] {
        server
            .get(&format!("/api/v1/admin/audit-logs?{bad}"), Some(&token))
            .await
            .expect_error(400, "INVALID_REQUEST");
    }
    let future = server
        .get(
            "/api/v1/admin/audit-logs?start_date=2999-01-01",
            Some(&token),
        )
        .await;
    assert_eq!(future.data()["pagination"]["total_items"], 0);
}

#[tokio::test]
async fn migrate_is_idempotent() {
    let server = Server::start().await;
    for _ in 0..2 {
        let mut migrate = server.command();
        migrate.arg("migrate");
        let (ok, output) = run(migrate);
        assert!(ok && output.contains("migrated"), "{output}");
    }
}

#[tokio::test]
async fn tokens_survive_a_restart() {
    let mut server = Server::start().await;
    let (_, token) = server.user(&email("persist")).await;
    server.restart().await;
    server
        .get("/api/v1/auth/me", Some(&token))
        .await
        .expect(200);
    if !on_postgres() {
        // Generated secrets are kept under the data directory, owner-only.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(server.data_dir().join("secrets/jwt_secret"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0);
    }
}

fn bare_command(extra: &[(&str, &str)]) -> Command {
    let mut command = Command::new(binary());
    let dir = tempfile::tempdir().unwrap().keep();
    command
        .current_dir(&dir)
        .env_clear()
        .env("ROCKET_CONFIG", repo_root().join("Rocket.toml"))
        .env("TRADEHOST_DATA_DIR", &dir)
        .env("PORT", "0");
    for (name, value) in extra {
        command.env(name, value);
    }
    command.arg("serve");
    command
}

#[test]
fn postgres_requires_secrets_from_the_environment() {
    let url = ("DATABASE_URL", "postgres://tradehost@127.0.0.1:1/none");
    let (ok, output) = run(bare_command(&[url]));
    assert!(!ok && output.contains("JWT_SECRET_KEY"), "{output}");
    let (ok, output) = run(bare_command(&[
        url,
        ("JWT_SECRET_KEY", "k".repeat(32).as_str()),
    ]));
    assert!(!ok && output.contains("VAULT_ENCRYPTION_KEY"), "{output}");
}

#[test]
fn bad_configuration_is_refused_by_name() {
    let (ok, output) = run(bare_command(&[("JWT_SECRET_KEY", "too-short")]));
    assert!(!ok && output.contains("JWT_SECRET_KEY"), "{output}");
    let (ok, output) = run(bare_command(&[("VAULT_ENCRYPTION_KEY", "not-a-key")]));
    assert!(!ok && output.contains("VAULT_ENCRYPTION_KEY"), "{output}");
    let (ok, output) = run(bare_command(&[("PORT", "http")]));
    assert!(!ok && output.contains("PORT"), "{output}");
    let (ok, output) = run(bare_command(&[("DATABASE_URL", "mysql://x/y")]));
    assert!(!ok && output.contains("DATABASE_URL"), "{output}");
}

/// The README's way: `tradehost` in a fresh directory, every setting at its default
/// (a relative `./data`, generated secrets, the built-in plugins).
#[test]
fn serve_starts_with_every_default_in_a_fresh_directory() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(binary())
        .current_dir(dir.path())
        .env_clear()
        .env("ROCKET_CONFIG", repo_root().join("Rocket.toml"))
        .env("PORT", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    let mut ready = false;
    for line in stdout.lines().map_while(Result::ok) {
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("listening on") {
            ready = true;
            break;
        }
    }
    let _ = child.kill();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(
        ready,
        "the server did not start ({status}):\n{seen}{stderr}"
    );
    assert!(seen.contains("plugins loaded"), "{seen}");
    assert!(dir.path().join("data/tradehost.db").exists());
    assert!(dir.path().join("data/secrets/jwt_secret").exists());
    assert!(dir.path().join("data/plugin-cache").is_dir());
}
