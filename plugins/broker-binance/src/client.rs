//! Requests to Binance's REST API: public ones, and SIGNED ones (`timestamp`, `recvWindow`, the
//! HMAC `signature`, the key in `X-MBX-APIKEY`); Binance's error answers mapped to the broker
//! world's errors.
//!
//! Request weight: every answer says how much of the minute's weight this server's address has
//! used (`X-MBX-USED-WEIGHT-1M`). Close to the limit, the next signed calls of the account wait
//! for the next minute (remembered in its store) instead of being refused, and a 429 or 418 is
//! `rate-limited` with Binance's `Retry-After`, which the host honours for every call.

use exchange_kit::query;
use exchange_kit::request::{self, Http, header, header_value};
use serde_json::Value;
use tradehost_sdk::store::Store;
use tradehost_sdk::types::BrokerError;

use crate::sign::signature;

pub const LIVE_URL: &str = "https://api.binance.com";
pub const TESTNET_URL: &str = "https://testnet.binance.vision";

/// The store key holding when the account may call again after nearing the weight limit.
const WEIGHT_PAUSE_KEY: &str = "weight/pause-until";
/// Share of the weight limit at which calls pause until the next minute.
const WEIGHT_PAUSE_AT_PERCENT: i64 = 90;

/// How this server reaches Binance (the operator's configuration and the connection's params).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub base_url: String,
    pub recv_window: i64,
    pub timeout_ms: u32,
    pub quote_asset: String,
    pub weight_limit: i64,
}

impl Settings {
    /// From the plugin's configuration (`config`) and the connection's `testnet` parameter.
    pub fn new(
        config: &impl Fn(&str) -> Option<String>,
        params: &[(String, String)],
    ) -> Result<Settings, BrokerError> {
        let reader = tradehost_sdk::config::ConfigReader::new(config);
        let invalid =
            |err: tradehost_sdk::config::ConfigError| BrokerError::Invalid(err.to_string());
        let testnet = params
            .iter()
            .any(|(key, value)| key == "testnet" && matches!(value.as_str(), "true" | "1" | "yes"));
        let configured = reader.string("base_url", "");
        let base_url = match configured.trim() {
            "" if testnet => TESTNET_URL.to_string(),
            "" => LIVE_URL.to_string(),
            url => url.trim_end_matches('/').to_string(),
        };
        Ok(Settings {
            base_url,
            recv_window: reader
                .integer_in("recv_window", 5_000, 1, 60_000)
                .map_err(invalid)?,
            timeout_ms: reader
                .integer_in(
                    "request_timeout_ms",
                    i64::from(request::DEFAULT_TIMEOUT_MS),
                    100,
                    30_000,
                )
                .map_err(invalid)? as u32,
            quote_asset: reader.string("quote_asset", "USDT").to_ascii_uppercase(),
            weight_limit: reader
                .integer_in("weight_limit", 6_000, 1, 1_000_000)
                .map_err(invalid)?,
        })
    }
}

/// What a request was for: Binance's errors mean different things to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Place,
    Query,
    Cancel,
    Read,
}

/// Binance's error answer (`{"code": -1121, "msg": "Invalid symbol."}`) as a broker error.
pub fn error_of(status: u16, body: &Value, action: Action) -> BrokerError {
    let code = body["code"].as_i64().unwrap_or(0);
    let msg = body["msg"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("HTTP {status}: {body}"));
    let described = format!("{msg} ({code})");
    match code {
        -2014 | -2015 | -1022 => BrokerError::Auth(described),
        _ if status == 401 => BrokerError::Auth(described),
        // The request was refused before it reached the matching engine.
        -1021 => BrokerError::Rejected(format!(
            "{described}: the server's clock differs from Binance's by more than recvWindow"
        )),
        -2010 if msg.to_ascii_lowercase().contains("insufficient balance") => {
            BrokerError::InsufficientFunds(described)
        }
        -2010 => BrokerError::Rejected(described),
        -1013 => BrokerError::Invalid(described),
        -1121 if action == Action::Place => BrokerError::Invalid(described),
        -1121 | -2013 => BrokerError::NotFound(described),
        -2011 => BrokerError::NotFound(described),
        -1003 | -1015 => BrokerError::RateLimited(request::DEFAULT_RETRY_MS),
        // Binance does not know whether the request took effect.
        -1008..=-1006 => BrokerError::Unavailable(described),
        -1199..=-1100 => BrokerError::Invalid(described),
        _ if status >= 500 => BrokerError::Unavailable(described),
        _ => BrokerError::Rejected(described),
    }
}

/// One account's (or no account's) calls to Binance.
pub struct Client<'a, H: Http, S: Store> {
    pub http: &'a mut H,
    /// The account's store, for calls made for a user.
    pub store: Option<&'a mut S>,
    pub settings: &'a Settings,
    pub api_key: &'a str,
    pub secret: &'a str,
    pub now_ms: i64,
}

impl<H: Http, S: Store> Client<'_, H, S> {
    /// A public endpoint (market data, instrument rules).
    pub fn public(
        &mut self,
        path: &str,
        params: &[(&str, String)],
        action: Action,
    ) -> Result<Value, BrokerError> {
        let url = if params.is_empty() {
            format!("{}{path}", self.settings.base_url)
        } else {
            format!("{}{path}?{}", self.settings.base_url, query::join(params))
        };
        let request = request::build("GET", url, Vec::new(), Vec::new(), self.settings.timeout_ms);
        self.send(&request, action)
    }

    /// A SIGNED endpoint: every parameter in the query string, signed.
    pub fn signed(
        &mut self,
        method: &str,
        path: &str,
        params: &[(&str, String)],
        action: Action,
    ) -> Result<Value, BrokerError> {
        if self.api_key.is_empty() || self.secret.is_empty() {
            return Err(BrokerError::Auth(
                "an API key and secret are required".into(),
            ));
        }
        if let Some(store) = &self.store
            && let Some(until) = store
                .get(WEIGHT_PAUSE_KEY)
                .and_then(|v| v.parse::<i64>().ok())
            && until > self.now_ms
        {
            return Err(BrokerError::RateLimited(
                (until - self.now_ms).clamp(1, 60_000) as u32,
            ));
        }
        let mut all: Vec<(&str, String)> = params.to_vec();
        all.push(("recvWindow", self.settings.recv_window.to_string()));
        all.push(("timestamp", self.now_ms.to_string()));
        let payload = query::join(&all);
        let url = format!(
            "{}{path}?{payload}&signature={}",
            self.settings.base_url,
            signature(self.secret, &payload)
        );
        let request = request::build(
            method,
            url,
            vec![header("X-MBX-APIKEY", self.api_key)],
            Vec::new(),
            self.settings.timeout_ms,
        );
        self.send(&request, action)
    }

    fn send(&mut self, request: &request::Request, action: Action) -> Result<Value, BrokerError> {
        let response = request::exchange(self.http, request)?;
        self.mind_weight(&response);
        let body = request::json(&response).or_else(|err| {
            // An HTML error page from a proxy in front of Binance.
            if response.status >= 500 {
                Ok(Value::Null)
            } else {
                Err(err)
            }
        })?;
        if (200..300).contains(&response.status) {
            Ok(body)
        } else {
            Err(error_of(response.status, &body, action))
        }
    }

    /// Near the minute's weight limit, the account's next signed calls wait for the next minute.
    fn mind_weight(&mut self, response: &request::Response) {
        let Some(used) = header_value(response, "x-mbx-used-weight-1m")
            .and_then(|v| v.trim().parse::<i64>().ok())
        else {
            return;
        };
        if used * 100 < self.settings.weight_limit * WEIGHT_PAUSE_AT_PERCENT {
            return;
        }
        let next_minute = (self.now_ms / 60_000 + 1) * 60_000;
        if let Some(store) = self.store.as_deref_mut() {
            let _ = store.write(vec![(
                WEIGHT_PAUSE_KEY.to_string(),
                Some(next_minute.to_string()),
            )]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn binance_errors_map_to_broker_errors() {
        let error = |status, code: i64, msg: &str, action| {
            error_of(status, &json!({"code": code, "msg": msg}), action)
        };
        assert!(matches!(
            error(
                401,
                -2015,
                "Invalid API-key, IP, or permissions for action.",
                Action::Read
            ),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(
                400,
                -1022,
                "Signature for this request is not valid.",
                Action::Read
            ),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(
                400,
                -2010,
                "Account has insufficient balance for requested action.",
                Action::Place
            ),
            BrokerError::InsufficientFunds(_)
        ));
        assert!(matches!(
            error(400, -2010, "Duplicate order sent.", Action::Place),
            BrokerError::Rejected(_)
        ));
        assert!(matches!(
            error(400, -1013, "Filter failure: NOTIONAL", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(400, -1121, "Invalid symbol.", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(400, -1121, "Invalid symbol.", Action::Read),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(400, -2013, "Order does not exist.", Action::Query),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(
                400,
                -1021,
                "Timestamp for this request is outside of the recvWindow.",
                Action::Place
            ),
            BrokerError::Rejected(_)
        ));
        assert!(matches!(
            error(
                503,
                -1007,
                "Timeout waiting for response from backend server. Send status unknown; execution status unknown.",
                Action::Place
            ),
            BrokerError::Unavailable(_)
        ));
        assert!(matches!(
            error(502, 0, "", Action::Place),
            BrokerError::Unavailable(_)
        ));
        assert!(matches!(
            error(
                400,
                -1102,
                "Mandatory parameter 'price' was not sent",
                Action::Place
            ),
            BrokerError::Invalid(_)
        ));
    }

    #[test]
    fn settings_follow_the_operator_and_the_testnet_switch() {
        let none = |_: &str| None;
        let live = Settings::new(&none, &[]).unwrap();
        assert_eq!(
            (live.base_url.as_str(), live.recv_window, live.timeout_ms),
            (LIVE_URL, 5_000, 10_000)
        );
        let testnet = Settings::new(&none, &[("testnet".into(), "true".into())]).unwrap();
        assert_eq!(testnet.base_url, TESTNET_URL);
        let proxied = |key: &str| (key == "base_url").then(|| "http://127.0.0.1:9000/".to_string());
        assert_eq!(
            Settings::new(&proxied, &[("testnet".into(), "true".into())])
                .unwrap()
                .base_url,
            "http://127.0.0.1:9000"
        );
        let bad = |key: &str| (key == "recv_window").then(|| "70000".to_string());
        assert!(matches!(
            Settings::new(&bad, &[]),
            Err(BrokerError::Invalid(_))
        ));
    }
}
