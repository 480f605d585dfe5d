//! Black-box test harness: builds and starts the real `tradehost` binary on a free port with a
//! fresh data directory, and talks HTTP to it.
//!
//! The backend is SQLite unless `TEST_DATABASE_URL` names a PostgreSQL server; then every server
//! gets its own freshly created database, dropped when the test ends.

pub mod chaos;
pub mod companion;
pub mod exchange;
pub mod receiver;
pub mod redis;
pub mod venue;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Row};

pub const PASSWORD: &str = "correct horse battery staple";

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Builds the server binary once per test process (a no-op when it is current) and returns it.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        if let Ok(path) = std::env::var("TRADEHOST_BIN") {
            return PathBuf::from(path);
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--quiet", "-p", "tradehost", "--bin", "tradehost"])
            .current_dir(repo_root());
        // What `cargo test` sets for this test binary is not for the nested build: build scripts
        // that watch such variables (ring watches CARGO_MANIFEST_DIR) would rebuild, and the
        // next `cargo test` would rebuild them back.
        for (name, _) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            let cargo_set = name.starts_with("CARGO_")
                && name != "CARGO_HOME"
                && name != "CARGO_TARGET_DIR"
                && !name.starts_with("CARGO_BUILD_")
                && !name.starts_with("CARGO_NET_")
                && !name.starts_with("CARGO_REGISTRIES_")
                && !name.starts_with("CARGO_REGISTRY_")
                && !name.starts_with("CARGO_PROFILE_")
                && !name.starts_with("CARGO_TERM_")
                && !name.starts_with("CARGO_HTTP_");
            if cargo_set {
                build.env_remove(name);
            }
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "building the tradehost binary failed");
        // target/<profile>/deps/<this test> -> target/<profile>/tradehost
        let exe = std::env::current_exe().expect("test executable path");
        exe.parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .join("tradehost")
    })
}

fn postgres_url() -> Option<String> {
    std::env::var("TEST_DATABASE_URL")
        .ok()
        .filter(|url| url.starts_with("postgres"))
}

pub fn on_postgres() -> bool {
    postgres_url().is_some()
}

/// A SQL expression giving the decimal column (or sum of such columns) `column` as text with
/// eight decimal places on either backend ("-12.50000000"): PostgreSQL keeps money as NUMERIC,
/// SQLite as an INTEGER count of 10^-8 units, and neither reaches a test through `Any` as text.
pub fn decimal_sql(column: &str) -> String {
    if on_postgres() {
        format!("CAST(ROUND(({column}), 8) AS TEXT)")
    } else {
        format!(
            "CASE WHEN ({column}) IS NULL THEN NULL ELSE printf('%s%d.%08d', \
             CASE WHEN ({column}) < 0 THEN '-' ELSE '' END, \
             abs({column}) / 100000000, abs({column}) % 100000000) END"
        )
    }
}

/// A decimal as a test writes it into a decimal column with SQL: the number itself on
/// PostgreSQL, its count of 10^-8 units on SQLite.
pub fn decimal_literal(value: &str) -> String {
    let parsed: rust_decimal::Decimal = value.parse().expect("a decimal literal");
    if on_postgres() {
        parsed.to_string()
    } else {
        (parsed * rust_decimal::Decimal::from(100_000_000))
            .trunc()
            .to_string()
    }
}

/// The database of one test server.
struct TestDatabase {
    url: String,
    /// PostgreSQL: (server URL, database name) to drop at the end.
    postgres: Option<(String, String)>,
}

impl TestDatabase {
    async fn create(data_dir: &Path) -> Result<Self> {
        let Some(server_url) = postgres_url() else {
            return Ok(Self {
                url: format!(
                    "sqlite://{}?mode=rwc",
                    data_dir.join("tradehost.db").display()
                ),
                postgres: None,
            });
        };
        let name = format!("th_test_{}", uuid::Uuid::new_v4().simple());
        let pool = admin_pool(&server_url).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&pool)
            .await?;
        pool.close().await;
        let base = server_url
            .rsplit_once('/')
            .map(|(base, _)| base)
            .unwrap_or(&server_url);
        Ok(Self {
            url: format!("{base}/{name}"),
            postgres: Some((server_url, name)),
        })
    }
}

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

impl TestDatabase {
    /// Applies the server's migrations up to `version` and runs `statements`.
    async fn migrate_to(&self, version: i64, statements: &[String]) -> Result<()> {
        if self.postgres.is_some() {
            let pool = sqlx::PgPool::connect(&self.url).await?;
            POSTGRES_MIGRATIONS.run_to(version, &pool).await?;
            pool.close().await;
        } else {
            let pool = sqlx::SqlitePool::connect(&self.url).await?;
            SQLITE_MIGRATIONS.run_to(version, &pool).await?;
            pool.close().await;
        }
        let pool = admin_pool(&self.url).await?;
        for sql in statements {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .execute(&pool)
                .await
                .with_context(|| sql.clone())?;
        }
        pool.close().await;
        Ok(())
    }
}

/// An argon2 hash of [`PASSWORD`], for users a test writes into the database itself.
pub fn password_hash() -> String {
    use argon2::{Argon2, PasswordHasher};
    Argon2::default()
        .hash_password(PASSWORD.as_bytes())
        .expect("argon2 hashes")
        .to_string()
}

async fn admin_pool(url: &str) -> Result<AnyPool> {
    sqlx::any::install_default_drivers();
    AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .context("connect to TEST_DATABASE_URL")
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some((server_url, name)) = self.postgres.take() else {
            return;
        };
        // Drop runs outside any async context: a small runtime on its own thread.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let pool = admin_pool(&server_url).await.ok()?;
                let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .execute(&pool)
                    .await
                    .ok()
            })
        })
        .join();
    }
}

/// Settings for a test server; unset ones get test-friendly defaults.
#[derive(Clone, Default)]
pub struct ServerOptions {
    pub env: Vec<(String, String)>,
    /// A database an earlier release left: migrated up to this version and filled by these
    /// statements before the server first starts (and migrates it the rest of the way).
    pub earlier_schema: Option<(i64, Vec<String>)>,
}

impl ServerOptions {
    pub fn env(mut self, name: &str, value: impl Into<String>) -> Self {
        self.env.push((name.to_string(), value.into()));
        self
    }

    pub fn earlier_schema(mut self, version: i64, statements: Vec<String>) -> Self {
        self.earlier_schema = Some((version, statements));
        self
    }

    pub async fn start(self) -> Server {
        Server::start_with(self).await.expect("the server starts")
    }
}

/// A running `tradehost serve` with its own data directory and database.
pub struct Server {
    child: Option<Child>,
    pub base_url: String,
    pub http: reqwest::Client,
    log: Arc<Mutex<String>>,
    options: ServerOptions,
    /// Shared with the other instances of [`Server::another_instance`].
    database: Arc<TestDatabase>,
    data_dir: Arc<tempfile::TempDir>,
    pool: tokio::sync::OnceCell<AnyPool>,
}

impl Server {
    pub async fn start() -> Server {
        ServerOptions::default().start().await
    }

    pub fn options() -> ServerOptions {
        ServerOptions::default()
    }

    pub async fn start_with(options: ServerOptions) -> Result<Server> {
        let data_dir = tempfile::tempdir()?;
        let database = TestDatabase::create(data_dir.path()).await?;
        if let Some((version, statements)) = &options.earlier_schema {
            database.migrate_to(*version, statements).await?;
        }
        let mut server = Server {
            child: None,
            base_url: String::new(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()?,
            log: Arc::new(Mutex::new(String::new())),
            options,
            database: Arc::new(database),
            data_dir: Arc::new(data_dir),
            pool: tokio::sync::OnceCell::new(),
        };
        server.spawn().await?;
        Ok(server)
    }

    /// A second `tradehost serve` on the same database and data directory (and so the same
    /// secrets), with this one's settings and `extra` on top: another instance of one deployment.
    pub async fn another_instance(&self, extra: &[(&str, &str)]) -> Result<Server> {
        let mut options = self.options.clone();
        for (name, value) in extra {
            options = options.env(name, *value);
        }
        let mut server = Server {
            child: None,
            base_url: String::new(),
            http: self.http.clone(),
            log: Arc::new(Mutex::new(String::new())),
            options,
            database: self.database.clone(),
            data_dir: self.data_dir.clone(),
            pool: tokio::sync::OnceCell::new(),
        };
        server.spawn().await?;
        Ok(server)
    }

    /// The value of the sample `name` (with its labels, if any) at `/metrics`, read with the
    /// scrape token `token` (`TRADEHOST_METRICS_TOKEN`).
    pub async fn metric(&self, token: &str, name: &str) -> f64 {
        let scraped = self.get("/metrics", Some(token)).await;
        scraped.expect(200);
        scraped
            .text
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {}", scraped.text))
    }

    /// The command line this server runs with (for other subcommands on the same data).
    pub fn command(&self) -> Command {
        let mut command = Command::new(binary());
        command
            .current_dir(self.data_dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("ROCKET_CONFIG", repo_root().join("Rocket.toml"))
            .env("TRADEHOST_DATA_DIR", self.data_dir.path())
            .env("DATABASE_URL", &self.database.url)
            .env("TRADEHOST_LOG", "info")
            .env("TRADEHOST_AUTH_RATE_LIMIT", "10000")
            .env("TRADEHOST_ANON_RATE_LIMIT", "10000")
            .env("PORT", "0")
            // Compiled plugins are shared by every test server (wasmtime's cache is safe to share).
            .env(
                "TRADEHOST_PLUGIN_CACHE_DIR",
                binary().parent().expect("target dir").join("plugin-cache"),
            );
        if self.database.postgres.is_some() {
            command
                .env("JWT_SECRET_KEY", "test-secret-test-secret-test-secret-0123")
                .env("VAULT_ENCRYPTION_KEY", "ab".repeat(32));
        }
        for (name, value) in &self.options.env {
            command.env(name, value);
        }
        command
    }

    /// Starts the process and waits until it listens. The first server of a test binary starts
    /// alone: it compiles the built-in plugins into the shared cache, which the others then
    /// read, rather than every server of the binary compiling the same plugins at once.
    async fn spawn(&mut self) -> Result<()> {
        static CACHE_WARM: tokio::sync::Mutex<bool> = tokio::sync::Mutex::const_new(false);
        let warm = CACHE_WARM.lock().await;
        if *warm {
            drop(warm);
            return self.spawn_and_wait().await;
        }
        let mut warm = warm;
        let started = self.spawn_and_wait().await;
        *warm = started.is_ok();
        started
    }

    async fn spawn_and_wait(&mut self) -> Result<()> {
        let mut child = self
            .command()
            .arg("serve")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<String>();
        for stream in [
            Box::new(child.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().expect("stderr")),
        ] {
            let log = self.log.clone();
            let ready_tx = ready_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Some(rest) = line.split("listening on ").nth(1) {
                        let _ = ready_tx.send(
                            rest.split_whitespace()
                                .next()
                                .unwrap_or_default()
                                .to_string(),
                        );
                    }
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(url) = ready_rx.try_recv() {
                self.base_url = url;
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
                bail!(
                    "the server exited with {status} before listening:\n{}",
                    self.log()
                );
            }
            if Instant::now() > deadline {
                bail!("the server did not start within 60 s:\n{}", self.log());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// Kills the process at once (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the process where it is (SIGSTOP), as a machine that stalls or a network that cuts
    /// it off would: it holds whatever it held, and does nothing.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused process go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("the server runs").id();
        let status = std::process::Command::new("kill")
            .arg(signal)
            .arg(pid.to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Waits up to `secs` for the server to exit on its own; its exit status, or `None`.
    pub async fn wait_exit(&mut self, secs: u64) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }

    /// Kills the server and starts it again on the same data directory and database.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await.expect("the server restarts");
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url, path)
    }

    /// The `ws://` address of a path on this server.
    pub fn ws_url(&self, path: &str) -> String {
        format!("{}{}", self.base_url.replacen("http://", "ws://", 1), path)
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.http.request(method, self.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        Reply::from(request.send().await.expect("the server answers")).await
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Reply {
        self.request(Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::POST, path, token, Some(body)).await
    }

    pub async fn put(&self, path: &str, token: Option<&str>, body: Value) -> Reply {
        self.request(Method::PUT, path, token, Some(body)).await
    }

    /// Sends raw bytes (for malformed bodies).
    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let mut request = self
            .http
            .request(method, self.url(path))
            .header("Content-Type", "application/json")
            .body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        Reply::from(request.send().await.expect("the server answers")).await
    }

    /// Registers a user with [`PASSWORD`] and returns its user id.
    pub async fn register(&self, email: &str) -> String {
        let reply = self
            .post(
                "/api/v1/auth/register",
                None,
                json!({"email": email, "password": PASSWORD, "full_name": "Test User", "accept_terms": true}),
            )
            .await;
        reply.expect(201);
        reply.data()["user_id"].as_str().unwrap().to_string()
    }

    /// Asks for a password-reset mail to `email` (the answer is the same whether or not it is a
    /// user's).
    pub async fn ask_password_reset(&self, email: &str) -> Reply {
        self.post(
            "/api/v1/auth/reset-password",
            None,
            json!({ "email": email }),
        )
        .await
    }

    /// Signs in and returns the login data (access_token, refresh_token, ...).
    pub async fn login(&self, email: &str, password: &str) -> Value {
        let reply = self
            .post(
                "/api/v1/auth/login",
                None,
                json!({"email": email, "password": password}),
            )
            .await;
        reply.expect(200);
        reply.data().clone()
    }

    /// Registers and signs in; returns (user_id, access_token).
    pub async fn user(&self, email: &str) -> (String, String) {
        let id = self.register(email).await;
        let login = self.login(email, PASSWORD).await;
        (id, login["access_token"].as_str().unwrap().to_string())
    }

    /// A server that scans bots every 100 ms, with the API budget raised because the trading
    /// tests poll.
    pub async fn start_trading() -> Server {
        Server::options()
            .env("TRADEHOST_SCAN_INTERVAL", "0.1")
            .env("TRADEHOST_API_RATE_MULTIPLIER", "100")
            .start()
            .await
    }

    /// Uploads the plugin of `plugins/<dir>` (built as `crate_name`) as the admin.
    pub async fn install_plugin(&self, admin: &str, dir: &str, crate_name: &str) {
        self.post(
            "/api/v1/admin/plugins",
            Some(admin),
            plugin_upload(dir, crate_name),
        )
        .await
        .expect(200);
    }

    /// A WebSocket on `/ws/v1`, signed in as the token's user and subscribed to `channels`, once
    /// the server has acknowledged each (so no event after this returns is missed).
    pub async fn socket(&self, token: &str, channels: &[&str]) -> Socket {
        use futures_util::{SinkExt, StreamExt};
        use tokio_tungstenite::tungstenite::Message;

        let (mut socket, _) = tokio_tungstenite::connect_async(self.ws_url("/ws/v1"))
            .await
            .expect("the WebSocket connects");
        let mut send = Vec::new();
        send.push(json!({"type": "auth", "token": format!("Bearer {token}")}));
        send.extend(
            channels
                .iter()
                .map(|c| json!({"type": "subscribe", "channel": c})),
        );
        for message in send {
            socket
                .send(Message::text(message.to_string()))
                .await
                .unwrap();
        }
        let mut acknowledged = 0;
        while acknowledged < channels.len() + 1 {
            let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
                .await
                .expect("the server acknowledges")
                .expect("the socket stays open")
                .expect("a frame");
            if let Message::Text(text) = message {
                let reply: Value = serde_json::from_str(&text).unwrap();
                match reply["type"].as_str() {
                    Some("auth_success" | "subscribed") => acknowledged += 1,
                    Some("error") => panic!("the socket refused: {reply}"),
                    _ => {}
                }
            }
        }
        socket
    }

    /// Connects the paper broker for the user; returns the connection's id.
    pub async fn connect_paper(&self, token: &str) -> String {
        let reply = self
            .post(
                "/api/v1/config/brokers",
                Some(token),
                json!({"broker": "paper", "api_key": "paper-key-1234", "api_secret": "paper-secret"}),
            )
            .await;
        reply.expect(201);
        reply.data()["broker_id"].as_str().unwrap().to_string()
    }

    /// Polls `path` until `check` passes on its data (or fails the test after `secs`).
    pub async fn wait_for(
        &self,
        token: &str,
        path: &str,
        secs: u64,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let reply = self.get(path, Some(token)).await;
            reply.expect(200);
            if check(reply.data()) {
                return reply.data().clone();
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting on {path}: {}",
                reply.data()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the user's bot reports `running`.
    pub async fn wait_running(&self, token: &str) -> Value {
        self.wait_for(token, "/api/v1/trading/status", 20, |d| {
            d["status"] == "running"
        })
        .await
    }

    /// Connects the paper broker for the user, starts their bot on it (paper trading) and waits
    /// until it runs.
    pub async fn start_paper_bot(&self, token: &str) -> Value {
        self.connect_paper(token).await;
        self.post(
            "/api/v1/trading/start",
            Some(token),
            json!({"broker": "paper", "paper_trading": true}),
        )
        .await
        .expect(200);
        self.wait_running(token).await
    }

    /// Polls a count query until it reaches `at_least` (or fails the test after `secs`).
    pub async fn wait_count(&self, sql: &str, at_least: i64, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.count(sql).await < at_least {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {at_least} of: {sql}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sets a plugin's configuration as the admin.
    pub async fn configure_plugin(&self, admin: &str, plugin: &str, config: Value) {
        self.put(
            &format!("/api/v1/admin/plugins/{plugin}/config"),
            Some(admin),
            json!({ "config": config }),
        )
        .await
        .expect(200);
    }

    /// Keeps `ema-cross`, the default strategy, from ever signalling whatever the simulated
    /// market does: its slow average needs more candles than the 200 a scan reads. Tests that
    /// trade by webhook or by hand use it so that no trade of the strategy's own comes between.
    /// (On hourly candles alone, a recent crossover opened positions during some hours of the
    /// day; on minute candles, one in the first scan's lookback did.)
    pub async fn quiet_default_strategy(&self, admin: &str) {
        let quiet = json!({"interval": "1h", "fast_period": "2", "slow_period": "500"});
        self.configure_plugin(admin, "ema-cross", quiet).await;
    }

    /// Creates an admin through the CLI (the only way there is) and returns their access token.
    pub async fn admin_token(&self) -> String {
        let address = email("ops");
        self.create_admin(&address);
        self.login(&address, PASSWORD).await["access_token"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Creates an admin with this e-mail and [`PASSWORD`] through the CLI (the only way).
    pub fn create_admin(&self, address: &str) {
        let output = self
            .command()
            .args([
                "admin",
                "create",
                "--email",
                address,
                "--password",
                PASSWORD,
            ])
            .output()
            .expect("the binary runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// The server's database, for checks a client cannot make (outbox, audit rows, ledger).
    pub async fn db(&self) -> &AnyPool {
        self.pool
            .get_or_init(|| async {
                sqlx::any::install_default_drivers();
                AnyPoolOptions::new()
                    .max_connections(2)
                    .connect(&self.database.url)
                    .await
                    .expect("test db")
            })
            .await
    }

    pub async fn exec(&self, sql: &str) {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .execute(self.db().await)
            .await
            .expect(sql);
    }

    /// The first column of the first row of `sql` as a string (NULL -> None).
    pub async fn scalar(&self, sql: &str) -> Option<String> {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
            .fetch_optional(self.db().await)
            .await
            .expect(sql)?;
        row.try_get::<Option<String>, _>(0)
            .or_else(|_| {
                row.try_get::<Option<i64>, _>(0)
                    .map(|v| v.map(|v| v.to_string()))
            })
            .expect("a text or integer column")
    }

    pub async fn count(&self, sql: &str) -> i64 {
        self.scalar(sql)
            .await
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("---- server log ----\n{}", self.log());
        }
    }
}

/// A response read in full.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    pub async fn from(response: reqwest::Response) -> Reply {
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap_or_default();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply {
            status,
            headers,
            text,
            json,
        }
    }

    #[track_caller]
    pub fn expect(&self, status: u16) -> &Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        self
    }

    /// Asserts a platform error envelope with this status and code.
    #[track_caller]
    pub fn expect_error(&self, status: u16, code: &str) -> &Self {
        self.expect(status);
        assert_eq!(self.json["success"], json!(false), "body: {}", self.text);
        assert_eq!(
            self.json["error"]["code"],
            json!(code),
            "body: {}",
            self.text
        );
        assert!(
            self.json["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "body: {}",
            self.text
        );
        assert!(
            self.json["error"]["details"].is_object(),
            "body: {}",
            self.text
        );
        assert!(self.json["timestamp"].is_string(), "body: {}", self.text);
        self
    }

    #[track_caller]
    pub fn data(&self) -> &Value {
        assert_eq!(self.json["success"], json!(true), "body: {}", self.text);
        &self.json["data"]
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A built guest plugin (`plugins/target/wasm32-wasip2/release/<crate>.wasm`).
pub fn guest_path(crate_name: &str) -> PathBuf {
    repo_root()
        .join("plugins/target/wasm32-wasip2/release")
        .join(format!("{}.wasm", crate_name.replace('-', "_")))
}

/// The body of `POST /api/v1/admin/plugins` for a plugin of `plugins/<dir>` built as `crate_name`.
pub fn plugin_upload(dir: &str, crate_name: &str) -> Value {
    use base64::Engine as _;
    let wasm =
        std::fs::read(guest_path(crate_name)).unwrap_or_else(|e| panic!("{crate_name}: {e}"));
    let text =
        std::fs::read_to_string(repo_root().join("plugins").join(dir).join("plugin.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&text).unwrap();
    json!({
        "manifest": serde_json::to_value(manifest).unwrap(),
        "wasm_base64": base64::engine::general_purpose::STANDARD.encode(wasm),
    })
}

/// A client WebSocket.
pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A unique e-mail address for this test.
/// Returns early in a clock minute: when less than 20 s are left of the current one, it waits
/// for the next. The rate limiter counts in fixed one-minute windows aligned to the clock, so a
/// test that counts requests up to a limit must not have a window end in the middle of it.
pub async fn early_in_a_rate_window() {
    let into_minute = chrono::Utc::now().timestamp_millis().rem_euclid(60_000);
    let left = 60_000 - into_minute;
    if left < 20_000 {
        tokio::time::sleep(Duration::from_millis(left as u64 + 50)).await;
    }
}

pub fn email(tag: &str) -> String {
    format!(
        "{tag}-{}@example.com",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// The next message of `kind` on the socket (other messages are skipped); fails the test after `secs`.
pub async fn next_event(socket: &mut Socket, kind: &str, secs: u64) -> Value {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = tokio::time::timeout(left, socket.next())
            .await
            .unwrap_or_else(|_| panic!("no {kind} within {secs} s"))
            .expect("the socket stays open")
            .expect("a frame");
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).expect("JSON messages");
        if event["type"] == kind {
            return event;
        }
    }
}
