//! What one plugin call's `Store` holds, and the host capabilities plugins import.
//!
//! WASI is present (guests built for wasm32-wasip2 import it) but grants nothing: no preopened
//! directories, no environment, no arguments, no network; stdout and stderr go to the log. In a
//! backtest its clocks read the replayed time and its random source is seeded, so a replay is
//! the same every time and a guest cannot tell it from a live scan by the clock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use wasi_rand::SeedableRng;
use wasi_rand::rngs::StdRng;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use super::bindings::LogLevel;
use super::bindings::broker::tradehost::plugin::{http, store};
use super::bindings::strategy::tradehost::plugin::host;
use super::bindings::v0_1;
use super::egress;
use super::storage;
use super::store_access::{HeldWrites, ScopeGuard, StoreAccess};

/// Log lines a plugin may write per call; more are dropped (a plugin cannot flood the log).
const LOG_LINES_PER_CALL: u32 = 32;
const LOG_LINE_MAX_CHARS: usize = 1024;

/// The seed of a replay's WASI random source: the same for every run, so runs repeat exactly.
const REPLAY_SEED: u64 = 0x7472_6164_6568_6f73;

/// The simulated time of a replay's calls (Unix epoch milliseconds): what the host's `now-ms`
/// and WASI's wall and monotonic clocks answer in a backtest. Set before each call; a run's
/// time never goes back, so the monotonic clock stays monotonic.
#[derive(Debug, Clone, Default)]
pub struct SimulatedTime(Arc<AtomicI64>);

impl SimulatedTime {
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::Relaxed);
    }

    pub fn now_ms(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    fn since_epoch(&self) -> Duration {
        Duration::from_millis(self.now_ms().max(0) as u64)
    }
}

impl HostWallClock for SimulatedTime {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        self.since_epoch()
    }
}

impl HostMonotonicClock for SimulatedTime {
    fn resolution(&self) -> u64 {
        1_000_000
    }

    fn now(&self) -> u64 {
        self.since_epoch().as_nanos() as u64
    }
}

/// Per-call state of a plugin's store.
pub struct PluginState {
    pub plugin: Arc<str>,
    pub config: Arc<BTreeMap<String, String>>,
    pub allowed_hosts: Arc<[String]>,
    wasi: WasiCtx,
    table: ResourceTable,
    memory_limit: usize,
    /// Set when the guest asked for more memory than its limit (tells an OOM trap apart).
    pub memory_exceeded: bool,
    log_budget: u32,
    /// The user's store of a broker call made on their behalf.
    store: Option<StoreAccess>,
    http: egress::Client,
    /// When the call began, and how long it has waited on outgoing HTTP since: the deadline
    /// counts the plugin's own time, not the venue's.
    pub started: Instant,
    pub waited: Duration,
    /// The replayed time of a backtest's calls; the real clock's otherwise.
    simulated: Option<SimulatedTime>,
}

impl PluginState {
    pub fn new(
        plugin: Arc<str>,
        config: Arc<BTreeMap<String, String>>,
        allowed_hosts: Arc<[String]>,
        memory_limit: usize,
        store: Option<StoreAccess>,
        http: egress::Client,
        simulated: Option<SimulatedTime>,
    ) -> Self {
        let stdio = LogPipe {
            plugin: plugin.clone(),
        };
        let mut wasi = WasiCtx::builder();
        wasi.stdout(stdio.clone())
            .stderr(stdio)
            .allow_blocking_current_thread(true)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if let Some(time) = &simulated {
            wasi.wall_clock(time.clone())
                .monotonic_clock(time.clone())
                .secure_random(StdRng::seed_from_u64(REPLAY_SEED))
                .insecure_random(StdRng::seed_from_u64(REPLAY_SEED.rotate_left(32)))
                .insecure_random_seed(u128::from(REPLAY_SEED));
        }
        let wasi = wasi.build();
        Self {
            plugin,
            config,
            allowed_hosts,
            wasi,
            table: ResourceTable::new(),
            memory_limit,
            memory_exceeded: false,
            log_budget: LOG_LINES_PER_CALL,
            store,
            http,
            started: Instant::now(),
            waited: Duration::ZERO,
            simulated,
        }
    }

    /// Tells the call's user store that `key` is absent (a call without a user has none).
    pub fn know_absent(&mut self, key: String) {
        if let Some(access) = &mut self.store {
            access.know_absent(key);
        }
    }

    /// The store writes the call held back, with its lock on the store (`None`: a call made
    /// without a user).
    pub fn held_writes(&mut self, lock: ScopeGuard) -> Option<HeldWrites> {
        self.store.as_mut().map(|access| access.take_held(lock))
    }

    /// Sends a request, counting the wait apart from the plugin's own time. Store writes held
    /// back are written first: nothing leaves a call before what it wrote is durable.
    fn send_timed(&mut self, req: http::Request) -> Result<http::Response, http::HttpError> {
        if let Some(access) = &mut self.store {
            access.flush().map_err(|err| {
                http::HttpError::Unreachable(format!(
                    "not sent: the store could not be written ({err})"
                ))
            })?;
        }
        let start = Instant::now();
        let answer = self.http.send(req);
        self.waited += start.elapsed();
        answer
    }

    /// What the call's clock reads: the replayed time in a backtest, the real time otherwise.
    fn clock_now_ms(&self) -> i64 {
        match &self.simulated {
            Some(time) => time.now_ms(),
            None => chrono::Utc::now().timestamp_millis(),
        }
    }

    fn log_line(&mut self, level: LogLevel, message: &str) {
        if self.log_budget == 0 {
            return;
        }
        self.log_budget -= 1;
        let message: String = message.chars().take(LOG_LINE_MAX_CHARS).collect();
        let plugin = &*self.plugin;
        match level {
            LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            LogLevel::Info => tracing::info!(plugin, "{message}"),
            LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl ResourceLimiter for PluginState {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.memory_exceeded = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

impl host::Host for PluginState {
    fn log(&mut self, level: LogLevel, message: String) {
        self.log_line(level, &message);
    }

    fn now_ms(&mut self) -> i64 {
        self.clock_now_ms()
    }

    fn config(&mut self, key: String) -> Option<String> {
        self.config.get(&key).cloned()
    }
}

impl super::bindings::types::Host for PluginState {}

impl http::Host for PluginState {
    fn send(&mut self, req: http::Request) -> Result<http::Response, http::HttpError> {
        self.check_host(&req.url)?;
        self.send_timed(req)
    }
}

impl store::Host for PluginState {
    fn get(&mut self, key: String) -> Option<String> {
        let access = self.store.as_ref()?;
        if !storage::valid_key(&key) {
            return None;
        }
        match access.get(&key) {
            Ok(value) => value,
            Err(err) => {
                tracing::warn!(plugin = &*self.plugin, error = %err, "plugin store read failed");
                None
            }
        }
    }

    fn write(&mut self, changes: Vec<(String, Option<String>)>) -> Result<(), String> {
        let Some(access) = &mut self.store else {
            return Err("this call has no store (it is not made for a user)".into());
        };
        storage::check_changes(&changes)?;
        access.write(changes)
    }

    fn scan(
        &mut self,
        prefix: String,
        start_after: Option<String>,
        limit: u32,
    ) -> Vec<store::Entry> {
        let Some(access) = &mut self.store else {
            return Vec::new();
        };
        if prefix.len() > storage::MAX_KEY_BYTES
            || !prefix.bytes().all(|b| (0x20..0x7f).contains(&b))
        {
            return Vec::new();
        }
        match access.scan(
            &prefix,
            start_after.as_deref(),
            limit.min(storage::MAX_SCAN),
        ) {
            Ok(entries) => entries
                .into_iter()
                .map(|(key, value)| store::Entry { key, value })
                .collect(),
            Err(err) => {
                tracing::warn!(plugin = &*self.plugin, error = %err, "plugin store scan failed");
                Vec::new()
            }
        }
    }
}

// The 0.1.0 package's imports: the same capabilities under the old names.

impl v0_1::strategy::tradehost::plugin::host::Host for PluginState {
    fn log(&mut self, level: v0_1::strategy::tradehost::plugin::host::LogLevel, message: String) {
        use v0_1::strategy::tradehost::plugin::host::LogLevel as Old;
        let level = match level {
            Old::Trace => LogLevel::Trace,
            Old::Debug => LogLevel::Debug,
            Old::Info => LogLevel::Info,
            Old::Warn => LogLevel::Warn,
            Old::Error => LogLevel::Error,
        };
        self.log_line(level, &message);
    }

    fn now_ms(&mut self) -> i64 {
        self.clock_now_ms()
    }

    fn config(&mut self, key: String) -> Option<String> {
        self.config.get(&key).cloned()
    }
}

impl v0_1::types::Host for PluginState {}

impl v0_1::broker::tradehost::plugin::http::Host for PluginState {
    fn send(
        &mut self,
        req: v0_1::broker::tradehost::plugin::http::Request,
    ) -> Result<
        v0_1::broker::tradehost::plugin::http::Response,
        v0_1::broker::tradehost::plugin::http::HttpError,
    > {
        use v0_1::broker::tradehost::plugin::http as old;
        let request = http::Request {
            method: req.method,
            url: req.url,
            headers: req
                .headers
                .into_iter()
                .map(|h| http::Header {
                    name: h.name,
                    value: h.value,
                })
                .collect(),
            body: req.body,
            timeout_ms: req.timeout_ms,
        };
        let answer = self
            .check_host(&request.url)
            .and_then(|()| self.send_timed(request));
        match answer {
            Ok(response) => Ok(old::Response {
                status: response.status,
                headers: response
                    .headers
                    .into_iter()
                    .map(|h| old::Header {
                        name: h.name,
                        value: h.value,
                    })
                    .collect(),
                body: response.body,
            }),
            Err(http::HttpError::Forbidden(reason)) => Err(old::HttpError::Forbidden(reason)),
            Err(http::HttpError::Timeout) => Err(old::HttpError::Timeout),
            Err(http::HttpError::Unreachable(reason) | http::HttpError::Failed(reason)) => {
                Err(old::HttpError::Failed(reason))
            }
        }
    }
}

impl PluginState {
    /// Only the hosts the plugin's manifest declares are reachable.
    fn check_host(&self, url: &str) -> Result<(), http::HttpError> {
        let host = host_of(url)
            .ok_or_else(|| http::HttpError::Failed(format!("not an http(s) URL: {url}")))?;
        if !self
            .allowed_hosts
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(&host))
        {
            tracing::warn!(
                plugin = &*self.plugin,
                host,
                "plugin tried to reach a host its manifest does not declare"
            );
            return Err(http::HttpError::Forbidden(format!(
                "{host} is not in this plugin's allowed hosts"
            )));
        }
        Ok(())
    }
}

/// The host name of an absolute http(s) URL, without port or credentials.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit('@').next()?;
    let host = if let Some(bracketed) = host_port.strip_prefix('[') {
        bracketed.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// stdout/stderr of a guest: each write is one log line at info, attributed to the plugin.
#[derive(Clone)]
struct LogPipe {
    plugin: Arc<str>,
}

impl wasmtime_wasi::cli::IsTerminal for LogPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for LogPipe {
    fn p2_stream(&self) -> Box<dyn wasmtime_wasi::p2::OutputStream> {
        Box::new(LogStream {
            plugin: self.plugin.clone(),
            lines: 0,
        })
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(tokio::io::sink())
    }
}

struct LogStream {
    plugin: Arc<str>,
    lines: u32,
}

#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for LogStream {
    async fn ready(&mut self) {}
}

impl wasmtime_wasi::p2::OutputStream for LogStream {
    fn write(&mut self, bytes: bytes::Bytes) -> wasmtime_wasi::p2::StreamResult<()> {
        if self.lines < LOG_LINES_PER_CALL {
            self.lines += 1;
            let text = String::from_utf8_lossy(&bytes);
            let text: String = text.trim_end().chars().take(LOG_LINE_MAX_CHARS).collect();
            if !text.is_empty() {
                tracing::info!(plugin = &*self.plugin, "{text}");
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> wasmtime_wasi::p2::StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> wasmtime_wasi::p2::StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn host_names_of_urls() {
        assert_eq!(
            host_of("https://api.exchange.com/v1/x?y=1").as_deref(),
            Some("api.exchange.com")
        );
        assert_eq!(
            host_of("http://user:pw@Api.Exchange.com:8443/").as_deref(),
            Some("api.exchange.com")
        );
        assert_eq!(
            host_of("https://evil.com@api.exchange.com/").as_deref(),
            Some("api.exchange.com")
        );
        assert_eq!(host_of("https://[::1]:80/").as_deref(), Some("::1"));
        assert_eq!(host_of("ftp://x.com/"), None);
        assert_eq!(host_of("https:///path"), None);
    }
}
