//! Requests to Alpaca: the Trading API (`/v2/...`, live or paper) and the market data API, each
//! authenticated with the `APCA-API-KEY-ID` and `APCA-API-SECRET-KEY` headers; Alpaca's error
//! answers (`{"code": 40310000, "message": "..."}`) mapped to the broker world's errors.
//!
//! Rate limits: Alpaca counts requests per account and minute and reports them in
//! `X-RateLimit-Remaining` and `X-RateLimit-Reset` (Unix seconds). Once none remain, the
//! account's next calls wait for the reset (remembered in its store) instead of being refused;
//! a 429 is `rate-limited` for `Retry-After`, else until `X-RateLimit-Reset`, else a back-off.

use exchange_kit::query;
use exchange_kit::request::{self, Http, header, header_value};
use rust_decimal::Decimal;
use serde_json::Value;
use tradehost_sdk::store::Store;
use tradehost_sdk::types::BrokerError;

pub const LIVE_URL: &str = "https://api.alpaca.markets";
pub const PAPER_URL: &str = "https://paper-api.alpaca.markets";
pub const DATA_URL: &str = "https://data.alpaca.markets";

/// The store key holding when the account may call again after using up its requests.
const PAUSE_KEY: &str = "rate/pause-until";
/// The wait after a 429 that names none (Alpaca's limit is per minute).
pub const DEFAULT_BACKOFF_MS: u32 = 3_000;
/// The longest wait taken from Alpaca's headers.
const MAX_WAIT_MS: i64 = 60_000;

/// How this server reaches Alpaca (the operator's configuration and the connection's params).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub trading_url: String,
    pub data_url: String,
    pub timeout_ms: u32,
    /// Alpaca's crypto fee, as a fraction of each fill.
    pub crypto_fee: Decimal,
    /// Coins traded as crypto pairs against USD.
    pub crypto_assets: Vec<String>,
    pub data_key: String,
    pub data_secret: String,
    pub stock_feed: String,
}

impl Settings {
    /// From the plugin's configuration (`config`) and the connection's `paper` parameter.
    pub fn new(
        config: &impl Fn(&str) -> Option<String>,
        params: &[(String, String)],
    ) -> Result<Settings, BrokerError> {
        let reader = tradehost_sdk::config::ConfigReader::new(config);
        let invalid =
            |err: tradehost_sdk::config::ConfigError| BrokerError::Invalid(err.to_string());
        let paper = params
            .iter()
            .any(|(key, value)| key == "paper" && matches!(value.trim(), "true" | "1" | "yes"));
        let configured = reader.string("base_url", "");
        // A configured address (a proxy, a simulator) serves both APIs.
        let (trading_url, data_url) = match configured.trim().trim_end_matches('/') {
            "" if paper => (PAPER_URL.to_string(), DATA_URL.to_string()),
            "" => (LIVE_URL.to_string(), DATA_URL.to_string()),
            url => (url.to_string(), url.to_string()),
        };
        let fee_bps = reader
            .integer_in("crypto_fee_bps", 25, 0, 1_000)
            .map_err(invalid)?;
        Ok(Settings {
            trading_url,
            data_url,
            timeout_ms: reader
                .integer_in(
                    "request_timeout_ms",
                    i64::from(request::DEFAULT_TIMEOUT_MS),
                    100,
                    30_000,
                )
                .map_err(invalid)? as u32,
            crypto_fee: Decimal::new(fee_bps, 4),
            crypto_assets: reader
                .string("crypto_assets", crate::wire::CRYPTO_ASSETS)
                .split(',')
                .map(|coin| coin.trim().to_ascii_uppercase())
                .filter(|coin| !coin.is_empty())
                .collect(),
            data_key: reader.string("data_key_id", ""),
            data_secret: reader.string("data_secret_key", ""),
            stock_feed: reader.string("stock_feed", "iex").to_ascii_lowercase(),
        })
    }
}

/// What a request was for: Alpaca's errors mean different things to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Place,
    Query,
    Cancel,
    Read,
}

/// Alpaca's error answer as a broker error.
pub fn error_of(status: u16, body: &Value, action: Action) -> BrokerError {
    let code = body["code"].as_i64().unwrap_or(0);
    let message = body["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("HTTP {status}: {body}"));
    let described = if code == 0 {
        message.clone()
    } else {
        format!("{message} ({code})")
    };
    let lower = message.to_ascii_lowercase();
    match status {
        401 => BrokerError::Auth(described),
        // Insufficient buying power, cash or quantity; otherwise the key may not do this.
        403 if lower.contains("insufficient") => BrokerError::InsufficientFunds(described),
        // Below the $1 an order must be worth.
        403 if lower.contains("minimal amount") => BrokerError::Invalid(described),
        403 if action == Action::Place => BrokerError::Rejected(described),
        403 => BrokerError::Auth(described),
        404 => BrokerError::NotFound(described),
        422 if action == Action::Place && lower.contains("insufficient") => {
            BrokerError::InsufficientFunds(described)
        }
        // 40010001: the request is malformed or breaks the asset's rules.
        422 | 400 if action == Action::Place && code == 40_010_001 => {
            BrokerError::Invalid(described)
        }
        422 if action == Action::Place => BrokerError::Rejected(described),
        // A symbol or order Alpaca does not know, asked about.
        422 | 400 if lower.contains("not found") => BrokerError::NotFound(described),
        422 | 400 => BrokerError::Invalid(described),
        _ if status >= 500 => BrokerError::Unavailable(described),
        _ => BrokerError::Rejected(described),
    }
}

/// The account's (or, for market data, no account's) calls to Alpaca.
pub struct Client<'a, H: Http, S: Store> {
    pub http: &'a mut H,
    /// The account's store, for calls made for a user.
    pub store: Option<&'a mut S>,
    pub settings: &'a Settings,
    pub key_id: &'a str,
    pub secret: &'a str,
    pub now_ms: i64,
    /// Set when an answer said no requests remain: nothing more is sent in this call.
    pub paused_until: Option<i64>,
}

/// Which of Alpaca's APIs a request goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Trading,
    /// Market data with the operator's data key, when one is configured.
    Data,
}

impl<H: Http, S: Store> Client<'_, H, S> {
    /// A Trading API request for the account; `body` is JSON for POST.
    pub fn trading(
        &mut self,
        method: &str,
        path: &str,
        params: &[(&str, String)],
        body: Option<&Value>,
        action: Action,
    ) -> Result<Value, BrokerError> {
        if self.key_id.is_empty() || self.secret.is_empty() {
            return Err(BrokerError::Auth(
                "an API key id and secret are required".into(),
            ));
        }
        let headers = vec![
            header("APCA-API-KEY-ID", self.key_id),
            header("APCA-API-SECRET-KEY", self.secret),
        ];
        self.request(Api::Trading, method, path, params, headers, body, action)
    }

    /// A market data request (keys only when the operator configured a data key).
    pub fn data(&mut self, path: &str, params: &[(&str, String)]) -> Result<Value, BrokerError> {
        let mut headers = Vec::new();
        if !self.settings.data_key.is_empty() && !self.settings.data_secret.is_empty() {
            headers.push(header("APCA-API-KEY-ID", self.settings.data_key.as_str()));
            headers.push(header(
                "APCA-API-SECRET-KEY",
                self.settings.data_secret.as_str(),
            ));
        }
        self.request(Api::Data, "GET", path, params, headers, None, Action::Read)
    }

    #[allow(clippy::too_many_arguments)]
    fn request(
        &mut self,
        api: Api,
        method: &str,
        path: &str,
        params: &[(&str, String)],
        mut headers: Vec<request::Header>,
        body: Option<&Value>,
        action: Action,
    ) -> Result<Value, BrokerError> {
        self.wait_if_paused()?;
        let base = match api {
            Api::Trading => &self.settings.trading_url,
            Api::Data => &self.settings.data_url,
        };
        let url = if params.is_empty() {
            format!("{base}{path}")
        } else {
            format!("{base}{path}?{}", query::join(params))
        };
        let payload = match body {
            Some(body) => {
                headers.push(header("Content-Type", "application/json"));
                body.to_string().into_bytes()
            }
            None => Vec::new(),
        };
        headers.push(header("Accept", "application/json"));
        let request = request::build(method, url, headers, payload, self.settings.timeout_ms);
        let response = self.http.send(&request).map_err(request::transport_error)?;
        if response.status == 429 {
            let wait = self.wait_of_429(&response);
            self.pause_until(self.now_ms + i64::from(wait));
            return Err(BrokerError::RateLimited(wait));
        }
        self.mind_remaining(&response);
        let body = request::json(&response).or_else(|err| {
            // An HTML error page from a proxy in front of Alpaca, or a plain-text refusal.
            if response.status >= 400 {
                Ok(Value::String(
                    String::from_utf8_lossy(&response.body).trim().to_string(),
                ))
            } else {
                Err(err)
            }
        })?;
        if (200..300).contains(&response.status) {
            Ok(body)
        } else {
            let body = match body {
                Value::String(text) if !text.is_empty() => serde_json::json!({"message": text}),
                other => other,
            };
            Err(error_of(response.status, &body, action))
        }
    }

    fn wait_if_paused(&mut self) -> Result<(), BrokerError> {
        let stored = self
            .store
            .as_deref()
            .and_then(|store| store.get(PAUSE_KEY))
            .and_then(|v| v.parse::<i64>().ok());
        match self.paused_until.max(stored) {
            Some(until) if until > self.now_ms => Err(BrokerError::RateLimited(
                (until - self.now_ms).clamp(1, MAX_WAIT_MS) as u32,
            )),
            _ => Ok(()),
        }
    }

    /// Milliseconds until `X-RateLimit-Reset` (Unix seconds), if the answer carries it.
    fn until_reset(&self, response: &request::Response) -> Option<i64> {
        let reset = header_value(response, "x-ratelimit-reset")?
            .trim()
            .parse::<i64>()
            .ok()?;
        Some((reset * 1_000 - self.now_ms).clamp(1, MAX_WAIT_MS))
    }

    fn wait_of_429(&self, response: &request::Response) -> u32 {
        request::retry_after_ms(response)
            .map(|ms| i64::from(ms).clamp(1, MAX_WAIT_MS))
            .or_else(|| self.until_reset(response))
            .unwrap_or(i64::from(DEFAULT_BACKOFF_MS)) as u32
    }

    /// No requests left this minute: the account's next calls wait for the reset.
    fn mind_remaining(&mut self, response: &request::Response) {
        let remaining = header_value(response, "x-ratelimit-remaining")
            .and_then(|v| v.trim().parse::<i64>().ok());
        if remaining.is_some_and(|left| left <= 0)
            && let Some(wait) = self.until_reset(response)
        {
            self.pause_until(self.now_ms + wait);
        }
    }

    fn pause_until(&mut self, until: i64) {
        self.paused_until = Some(self.paused_until.unwrap_or(0).max(until));
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
    fn alpaca_errors_map_to_broker_errors() {
        let error = |status, code: i64, message: &str, action| {
            error_of(status, &json!({"code": code, "message": message}), action)
        };
        assert!(matches!(
            error(401, 40110000, "request is not authorized", Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error_of(403, &json!({"message": "forbidden"}), Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(403, 40310000, "insufficient buying power", Action::Place),
            BrokerError::InsufficientFunds(_)
        ));
        assert!(matches!(
            error(
                403,
                40310000,
                "insufficient balance for BTC (requested: 1, available: 0.5)",
                Action::Place
            ),
            BrokerError::InsufficientFunds(_)
        ));
        assert!(matches!(
            error(
                403,
                40310000,
                "cost basis must be >= minimal amount of order 1",
                Action::Place
            ),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(
                403,
                40310000,
                "trade denied due to pattern day trading protection",
                Action::Place
            ),
            BrokerError::Rejected(_)
        ));
        assert_eq!(
            error(422, 42210000, "Market is closed.", Action::Place),
            BrokerError::Rejected("Market is closed. (42210000)".into())
        );
        assert!(matches!(
            error(422, 40010001, "qty must be > 0", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(404, 40410000, "order not found", Action::Query),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(422, 40010001, "asset not found", Action::Read),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(422, 42210000, "order is not cancelable", Action::Cancel),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(500, 50010000, "internal server error", Action::Place),
            BrokerError::Unavailable(_)
        ));
    }

    #[test]
    fn settings_follow_the_operator_and_the_paper_switch() {
        let none = |_: &str| None;
        let live = Settings::new(&none, &[]).unwrap();
        assert_eq!(
            (
                live.trading_url.as_str(),
                live.data_url.as_str(),
                live.timeout_ms
            ),
            (LIVE_URL, DATA_URL, 10_000)
        );
        assert_eq!(live.crypto_fee, Decimal::new(25, 4));
        assert!(live.crypto_assets.iter().any(|c| c == "BTC"));
        let paper = Settings::new(&none, &[("paper".into(), "true".into())]).unwrap();
        assert_eq!(
            (paper.trading_url.as_str(), paper.data_url.as_str()),
            (PAPER_URL, DATA_URL)
        );
        let proxied = |key: &str| (key == "base_url").then(|| "http://127.0.0.1:9000/".to_string());
        let proxied = Settings::new(&proxied, &[("paper".into(), "true".into())]).unwrap();
        assert_eq!(
            (proxied.trading_url.as_str(), proxied.data_url.as_str()),
            ("http://127.0.0.1:9000", "http://127.0.0.1:9000")
        );
        let bad = |key: &str| (key == "crypto_fee_bps").then(|| "5000".to_string());
        assert!(matches!(
            Settings::new(&bad, &[]),
            Err(BrokerError::Invalid(_))
        ));
    }
}
