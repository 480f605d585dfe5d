//! Requests to Coinbase Advanced Trade's REST API: public market data, and authenticated calls
//! (a fresh ES256 token per request in `Authorization: Bearer`); Coinbase's error answers mapped
//! to the broker world's errors.
//!
//! Rate limits: a 429 is `rate-limited` with the answer's `Retry-After` (Coinbase does not
//! always send one: then a second, as it advises backing off). The account's store remembers the
//! wait, so a call the host makes before it is over is answered here without reaching Coinbase.

use exchange_kit::query;
use exchange_kit::request::{self, Http, header};
use serde_json::Value;
use tradehost_sdk::store::Store;
use tradehost_sdk::types::BrokerError;

use crate::sign::{self, Key};

pub const LIVE_URL: &str = "https://api.coinbase.com";
pub const SANDBOX_URL: &str = "https://api-sandbox.coinbase.com";

/// The store key holding until when Coinbase asked the account to wait.
const PAUSE_KEY: &str = "rate/pause-until";

/// How this server reaches Coinbase (the operator's configuration and the connection's params).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub base_url: String,
    /// `host[:port]` of `base_url`: what a token's `uri` claim names.
    pub host: String,
    pub timeout_ms: u32,
    pub quote_currency: String,
}

fn switched_on(params: &[(String, String)], name: &str) -> bool {
    params.iter().any(|(key, value)| {
        key == name
            && matches!(
                value.trim().to_ascii_lowercase().as_str(),
                "true" | "1" | "yes"
            )
    })
}

/// The authority of an absolute URL (`https://api.coinbase.com/x` → `api.coinbase.com`).
pub fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    (!host.is_empty()).then(|| host.to_string())
}

impl Settings {
    /// From the plugin's configuration (`config`) and the connection's `sandbox` parameter.
    pub fn new(
        config: &impl Fn(&str) -> Option<String>,
        params: &[(String, String)],
    ) -> Result<Settings, BrokerError> {
        let reader = tradehost_sdk::config::ConfigReader::new(config);
        let invalid =
            |err: tradehost_sdk::config::ConfigError| BrokerError::Invalid(err.to_string());
        let sandbox = switched_on(params, "sandbox");
        let configured = reader.string("base_url", "");
        let base_url = match configured.trim() {
            "" if sandbox => SANDBOX_URL.to_string(),
            "" => LIVE_URL.to_string(),
            url => url.trim_end_matches('/').to_string(),
        };
        let host = host_of(&base_url)
            .ok_or_else(|| BrokerError::Invalid(format!("base_url {base_url} names no host")))?;
        Ok(Settings {
            base_url,
            host,
            timeout_ms: reader
                .integer_in(
                    "request_timeout_ms",
                    i64::from(request::DEFAULT_TIMEOUT_MS),
                    100,
                    30_000,
                )
                .map_err(invalid)? as u32,
            quote_currency: reader
                .string("quote_currency", "USD")
                .trim()
                .to_ascii_uppercase(),
        })
    }
}

/// What a request was for: Coinbase's errors mean different things to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Place,
    Query,
    Cancel,
    Read,
}

/// Coinbase's error answer (`{"error": "NOT_FOUND", "code": 5, "message": "..."}`, or a plain
/// text body) as a broker error.
pub fn error_of(status: u16, body: &Value, action: Action) -> BrokerError {
    let code = body["error"].as_str().unwrap_or_default().to_string();
    let message = [&body["message"], &body["error_details"]]
        .into_iter()
        .filter_map(Value::as_str)
        .find(|m| !m.trim().is_empty())
        .map(str::to_string)
        .or_else(|| {
            body.as_str()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        })
        .unwrap_or_else(|| format!("HTTP {status}"));
    let described = if code.is_empty() || message.contains(&code) {
        format!("{message} (HTTP {status})")
    } else {
        format!("{message} ({code}, HTTP {status})")
    };
    match (status, code.as_str()) {
        (401, _) | (_, "UNAUTHENTICATED") => BrokerError::Auth(described),
        // The key is valid but may not do this (a view-only key placing an order).
        (403, _) | (_, "PERMISSION_DENIED") => BrokerError::Auth(described),
        (404, _) | (_, "NOT_FOUND") => match action {
            Action::Place => BrokerError::Invalid(described),
            _ => BrokerError::NotFound(described),
        },
        (429, _) | (_, "RATE_LIMIT_EXCEEDED") => {
            BrokerError::RateLimited(request::DEFAULT_RETRY_MS)
        }
        (_, "INVALID_ARGUMENT") | (400, _) => BrokerError::Invalid(described),
        // Coinbase may or may not have acted.
        (500.., _) | (_, "INTERNAL" | "UNAVAILABLE" | "DEADLINE_EXCEEDED" | "UNKNOWN") => {
            BrokerError::Unavailable(described)
        }
        _ => BrokerError::Rejected(described),
    }
}

/// One account's (or no account's) calls to Coinbase.
pub struct Client<'a, H: Http, S: Store> {
    pub http: &'a mut H,
    /// The account's store, for calls made for a user.
    pub store: Option<&'a mut S>,
    pub settings: &'a Settings,
    /// The CDP API key's name (`organizations/{org_id}/apiKeys/{key_id}`).
    pub key_name: &'a str,
    /// Its private key's PEM.
    pub secret: &'a str,
    pub now_ms: i64,
    /// Tokens made in this call so far.
    pub tokens: u64,
}

impl<H: Http, S: Store> Client<'_, H, S> {
    /// A public endpoint (market data).
    pub fn public(
        &mut self,
        path: &str,
        params: &[(&str, String)],
        action: Action,
    ) -> Result<Value, BrokerError> {
        let url = self.url(path, params);
        let request = request::build("GET", url, Vec::new(), Vec::new(), self.settings.timeout_ms);
        self.send(&request, action)
    }

    /// An authenticated endpoint: `params` in the query string, `body` as JSON.
    pub fn signed(
        &mut self,
        method: &str,
        path: &str,
        params: &[(&str, String)],
        body: Option<&Value>,
        action: Action,
    ) -> Result<Value, BrokerError> {
        if self.key_name.is_empty() || self.secret.is_empty() {
            return Err(BrokerError::Auth(
                "an API key name and private key are required".into(),
            ));
        }
        let key = Key::from_pem(self.secret).map_err(BrokerError::Auth)?;
        if let Some(store) = &self.store
            && let Some(until) = store.get(PAUSE_KEY).and_then(|v| v.parse::<i64>().ok())
            && until > self.now_ms
        {
            return Err(BrokerError::RateLimited(
                (until - self.now_ms).clamp(1, 600_000) as u32,
            ));
        }
        let token = key.token(
            self.key_name,
            &sign::uri(method, &self.settings.host, path),
            self.now_ms.div_euclid(1_000),
            &self.nonce(),
        );
        let mut headers = vec![header("Authorization", format!("Bearer {token}"))];
        let body = match body {
            Some(body) => {
                headers.push(header("Content-Type", "application/json"));
                body.to_string().into_bytes()
            }
            None => Vec::new(),
        };
        let url = self.url(path, params);
        let request = request::build(method, url, headers, body, self.settings.timeout_ms);
        self.send(&request, action)
    }

    fn url(&self, path: &str, params: &[(&str, String)]) -> String {
        if params.is_empty() {
            format!("{}{path}", self.settings.base_url)
        } else {
            format!("{}{path}?{}", self.settings.base_url, query::join(params))
        }
    }

    /// A nonce for the next token: the time, this call's token count and the host's randomness.
    fn nonce(&mut self) -> String {
        self.tokens += 1;
        sign::nonce(self.key_name, self.now_ms, self.tokens)
    }

    fn send(&mut self, request: &request::Request, action: Action) -> Result<Value, BrokerError> {
        let answer = request::exchange(self.http, request);
        if let Err(BrokerError::RateLimited(wait)) = &answer {
            self.pause(*wait);
        }
        let response = answer?;
        let body = match request::json(&response) {
            Ok(body) => body,
            // Coinbase answers some errors (401) in plain text, a proxy with an HTML page.
            Err(_) if !(200..300).contains(&response.status) => Value::String(
                String::from_utf8_lossy(&response.body)
                    .chars()
                    .take(200)
                    .collect(),
            ),
            Err(err) => return Err(err),
        };
        if (200..300).contains(&response.status) {
            Ok(body)
        } else {
            let error = error_of(response.status, &body, action);
            if let BrokerError::RateLimited(wait) = error {
                self.pause(wait);
            }
            Err(error)
        }
    }

    /// Remembers Coinbase's wait for the account's next calls.
    fn pause(&mut self, wait_ms: u32) {
        let until = self.now_ms + i64::from(wait_ms);
        if let Some(store) = self.store.as_deref_mut() {
            let _ = store.write(vec![(PAUSE_KEY.to_string(), Some(until.to_string()))]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn coinbase_errors_map_to_broker_errors() {
        let error = |status, body: Value, action| error_of(status, &body, action);
        assert!(matches!(
            error(401, json!("Unauthorized"), Action::Read),
            BrokerError::Auth(m) if m.contains("Unauthorized")
        ));
        assert!(matches!(
            error(
                403,
                json!({"error": "PERMISSION_DENIED", "code": 7, "message": "Missing required scopes"}),
                Action::Place
            ),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(
                404,
                json!({"error": "NOT_FOUND", "code": 5, "message": "order with this orderID was not found"}),
                Action::Query
            ),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(
                404,
                json!({"error": "NOT_FOUND", "message": "product not found"}),
                Action::Place
            ),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(
                400,
                json!({"error": "INVALID_ARGUMENT", "code": 3, "message": "invalid product_id"}),
                Action::Read
            ),
            BrokerError::Invalid(_)
        ));
        assert_eq!(
            error(429, json!({"error": "RATE_LIMIT_EXCEEDED"}), Action::Read),
            BrokerError::RateLimited(request::DEFAULT_RETRY_MS)
        );
        assert!(matches!(
            error(503, json!("<html>upstream</html>"), Action::Place),
            BrokerError::Unavailable(_)
        ));
        assert!(matches!(
            error(
                500,
                json!({"error": "INTERNAL", "message": "internal error"}),
                Action::Place
            ),
            BrokerError::Unavailable(_)
        ));
    }

    #[test]
    fn settings_follow_the_operator_and_the_sandbox_switch() {
        let none = |_: &str| None;
        let live = Settings::new(&none, &[]).unwrap();
        assert_eq!(
            (live.base_url.as_str(), live.host.as_str(), live.timeout_ms),
            (LIVE_URL, "api.coinbase.com", 10_000)
        );
        assert_eq!(live.quote_currency, "USD");
        let sandbox = Settings::new(&none, &[("sandbox".into(), "true".into())]).unwrap();
        assert_eq!(
            (sandbox.base_url.as_str(), sandbox.host.as_str()),
            (SANDBOX_URL, "api-sandbox.coinbase.com")
        );
        let proxied = |key: &str| (key == "base_url").then(|| "http://127.0.0.1:9000/".to_string());
        let local = Settings::new(&proxied, &[("sandbox".into(), "true".into())]).unwrap();
        assert_eq!(
            (local.base_url.as_str(), local.host.as_str()),
            ("http://127.0.0.1:9000", "127.0.0.1:9000")
        );
        let bad = |key: &str| (key == "request_timeout_ms").then(|| "50".to_string());
        assert!(matches!(
            Settings::new(&bad, &[]),
            Err(BrokerError::Invalid(_))
        ));
    }
}
