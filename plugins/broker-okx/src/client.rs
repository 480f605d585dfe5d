//! Requests to OKX's v5 REST API: public ones, and private ones signed with the key, the
//! passphrase and an HMAC of the request (`OK-ACCESS-*` headers); OKX's answers
//! (`{"code": "0", "msg": "", "data": [...]}`) unwrapped, and its error codes mapped to the
//! broker world's errors.
//!
//! Rate limits: OKX counts requests per endpoint in 2-second windows and answers HTTP 429 with
//! code 50011 when one is used up, without saying how long to wait. Such an answer is
//! `rate-limited` for the configured wait (by default 1 s, half a window: at most one more
//! refusal per window), which the host honours for every call of the account.

use exchange_kit::query;
use exchange_kit::request::{self, Http, header};
use serde_json::Value;
use tradehost_sdk::store::Store;
use tradehost_sdk::types::BrokerError;

use crate::sign;

pub const LIVE_URL: &str = "https://www.okx.com";
/// The hosts of OKX's regional entities (accounts opened there use them).
pub const EEA_URL: &str = "https://eea.okx.com";
pub const US_URL: &str = "https://us.okx.com";

fn truthy(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "true" | "1" | "yes"
    )
}

/// How this server reaches OKX (the operator's configuration and the connection's params).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub base_url: String,
    pub timeout_ms: u32,
    pub quote_asset: String,
    pub rate_limit_wait_ms: u32,
    /// Demo trading: every request carries `x-simulated-trading: 1`.
    pub demo: bool,
    /// The passphrase chosen when the key was created (`additional_params` `passphrase`).
    pub passphrase: String,
}

impl Settings {
    /// From the plugin's configuration (`config`) and the connection's params (`passphrase`,
    /// `demo` or `testnet`, `region`).
    pub fn new(
        config: &impl Fn(&str) -> Option<String>,
        params: &[(String, String)],
    ) -> Result<Settings, BrokerError> {
        let reader = tradehost_sdk::config::ConfigReader::new(config);
        let invalid =
            |err: tradehost_sdk::config::ConfigError| BrokerError::Invalid(err.to_string());
        let param = |name: &str| {
            params
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.trim())
        };
        let demo = param("demo").or(param("testnet")).is_some_and(truthy);
        let regional = match param("region").map(str::to_ascii_lowercase).as_deref() {
            None | Some("" | "global" | "www") => LIVE_URL,
            Some("eea") => EEA_URL,
            Some("us") => US_URL,
            Some(other) => {
                return Err(BrokerError::Invalid(format!(
                    "region `{other}`: OKX's regions are global, eea and us"
                )));
            }
        };
        let configured = reader.string("base_url", "");
        let base_url = match configured.trim() {
            "" => regional.to_string(),
            url => url.trim_end_matches('/').to_string(),
        };
        Ok(Settings {
            base_url,
            timeout_ms: reader
                .integer_in(
                    "request_timeout_ms",
                    i64::from(request::DEFAULT_TIMEOUT_MS),
                    100,
                    30_000,
                )
                .map_err(invalid)? as u32,
            quote_asset: reader.string("quote_asset", "USDT").to_ascii_uppercase(),
            rate_limit_wait_ms: reader
                .integer_in("rate_limit_wait_ms", 1_000, 100, 60_000)
                .map_err(invalid)? as u32,
            demo,
            passphrase: param("passphrase").unwrap_or_default().to_string(),
        })
    }
}

/// What a request was for: OKX's errors mean different things to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Place,
    Query,
    Cancel,
    Read,
}

/// An OKX error code and message (a response's `code`/`msg`, or an order's `sCode`/`sMsg`) as a
/// broker error.
pub fn error_of(status: u16, code: &str, msg: &str, action: Action) -> BrokerError {
    let msg = if msg.trim().is_empty() {
        format!("HTTP {status}")
    } else {
        msg.trim().to_string()
    };
    let described = format!("{msg} ({code})");
    match code.parse::<u32>().unwrap_or(0) {
        50011 | 50061 => BrokerError::RateLimited(request::DEFAULT_RETRY_MS),
        // The request was refused before it reached the matching engine.
        50102 => BrokerError::Rejected(format!(
            "{described}: the server's clock differs from OKX's by more than 30 seconds"
        )),
        50101 => BrokerError::Auth(format!(
            "{described}: demo trading keys need additional_params demo=true, live keys must not set it"
        )),
        50100 | 50103..=50114 | 50120..=50122 => BrokerError::Auth(described),
        _ if status == 401 || status == 403 => BrokerError::Auth(described),
        51008 | 51119 | 51127 | 51131 => BrokerError::InsufficientFunds(described),
        51001 if action == Action::Place => BrokerError::Invalid(described),
        51001 | 51603 => BrokerError::NotFound(described),
        // Not cancelled: already filled, cancelled or unknown.
        51400..=51402 | 51410 => BrokerError::NotFound(described),
        // OKX does not know whether the request took effect ("endpoint request timeout", busy,
        // unavailable, system error).
        50001 | 50004 | 50013 | 50026 => BrokerError::Unavailable(described),
        // Malformed parameters, or outside the instrument's rules (size, lot, tick, price band).
        50014..=50016 | 51000 | 51006 | 51020 | 51121 | 51201 | 51202 => {
            BrokerError::Invalid(described)
        }
        _ if status >= 500 => BrokerError::Unavailable(described),
        _ => BrokerError::Rejected(described),
    }
}

/// The error of one item of an answer (an order placed or cancelled), if it failed.
pub fn item_error(item: &Value, action: Action) -> Option<BrokerError> {
    let code = text(&item["sCode"]);
    if code.is_empty() || code == "0" {
        return None;
    }
    Some(error_of(200, &code, &text(&item["sMsg"]), action))
}

/// A JSON string or number as text (OKX writes codes and ids as strings).
pub fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => String::new(),
    }
}

/// One account's (or no account's) calls to OKX.
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
    fn base_headers(&self) -> Vec<request::Header> {
        let mut headers = Vec::new();
        if self.settings.demo {
            headers.push(header("x-simulated-trading", "1"));
        }
        headers
    }

    fn path_with(path: &str, params: &[(&str, String)]) -> String {
        if params.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{}", query::join(params))
        }
    }

    /// A public endpoint (market data, instrument rules): its `data`.
    pub fn public(
        &mut self,
        path: &str,
        params: &[(&str, String)],
        action: Action,
    ) -> Result<Vec<Value>, BrokerError> {
        let url = format!(
            "{}{}",
            self.settings.base_url,
            Self::path_with(path, params)
        );
        let request = request::build(
            "GET",
            url,
            self.base_headers(),
            Vec::new(),
            self.settings.timeout_ms,
        );
        self.send(&request, action)
    }

    /// A private endpoint, signed: GET with `params` in the query string, POST with `body` as
    /// JSON. Its `data`.
    pub fn signed(
        &mut self,
        method: &str,
        path: &str,
        params: &[(&str, String)],
        body: Option<&Value>,
        action: Action,
    ) -> Result<Vec<Value>, BrokerError> {
        if self.api_key.is_empty() || self.secret.is_empty() {
            return Err(BrokerError::Auth(
                "an API key and secret are required".into(),
            ));
        }
        if self.settings.passphrase.is_empty() {
            return Err(BrokerError::Auth(
                "OKX keys need the passphrase chosen when the key was created: connect with additional_params {\"passphrase\": \"...\"}".into(),
            ));
        }
        let request_path = Self::path_with(path, params);
        let body = body.map(Value::to_string).unwrap_or_default();
        let timestamp = sign::timestamp(self.now_ms);
        let mut headers = vec![
            header("OK-ACCESS-KEY", self.api_key),
            header(
                "OK-ACCESS-SIGN",
                sign::signature(self.secret, &timestamp, method, &request_path, &body),
            ),
            header("OK-ACCESS-TIMESTAMP", timestamp),
            header("OK-ACCESS-PASSPHRASE", self.settings.passphrase.as_str()),
        ];
        if !body.is_empty() {
            headers.push(header("Content-Type", "application/json"));
        }
        headers.extend(self.base_headers());
        let request = request::build(
            method,
            format!("{}{request_path}", self.settings.base_url),
            headers,
            body.into_bytes(),
            self.settings.timeout_ms,
        );
        self.send(&request, action)
    }

    fn send(
        &mut self,
        request: &request::Request,
        action: Action,
    ) -> Result<Vec<Value>, BrokerError> {
        let response = self.http.send(request).map_err(request::transport_error)?;
        let wait = || {
            request::retry_after_ms(&response)
                .unwrap_or(self.settings.rate_limit_wait_ms)
                .max(1)
        };
        if matches!(response.status, 418 | 429) {
            return Err(BrokerError::RateLimited(wait()));
        }
        let body = match request::json(&response) {
            Ok(body) => body,
            // An HTML error page from a proxy in front of OKX.
            Err(_) if response.status >= 500 => Value::Null,
            Err(err) => return Err(err),
        };
        let code = text(&body["code"]);
        if (200..300).contains(&response.status) && code == "0" {
            return Ok(body["data"].as_array().cloned().unwrap_or_default());
        }
        // A failed order carries its own code and message (`sCode`, `sMsg`) in `data`.
        let failed_item = body["data"]
            .as_array()
            .and_then(|items| items.first())
            .and_then(|item| item_error(item, action));
        let error = failed_item.unwrap_or_else(|| {
            error_of(
                response.status,
                &code,
                body["msg"].as_str().unwrap_or_default(),
                action,
            )
        });
        Err(match error {
            BrokerError::RateLimited(_) => BrokerError::RateLimited(wait()),
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exchange_kit::request::{Response, Scripted};
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn okx_errors_map_to_broker_errors() {
        let error = |status, code: &str, msg: &str, action| error_of(status, code, msg, action);
        assert!(matches!(
            error(401, "50111", "Invalid OK-ACCESS-KEY", Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(401, "50113", "Invalid Sign", Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(
                401,
                "50105",
                "Request header OK-ACCESS-PASSPHRASE incorrect",
                Action::Read
            ),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(
                401,
                "50101",
                "APIKey does not match current environment",
                Action::Read
            ),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            error(401, "50102", "Timestamp request expired", Action::Place),
            BrokerError::Rejected(_)
        ));
        assert!(matches!(
            error(429, "50011", "Too Many Requests", Action::Read),
            BrokerError::RateLimited(_)
        ));
        assert!(matches!(
            error(
                200,
                "51008",
                "Order failed. Insufficient USDT balance in account.",
                Action::Place
            ),
            BrokerError::InsufficientFunds(_)
        ));
        assert!(matches!(
            error(
                200,
                "51121",
                "Order quantity must be a multiple of the lot size.",
                Action::Place
            ),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(200, "51001", "Instrument ID does not exist", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            error(200, "51001", "Instrument ID does not exist", Action::Read),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(200, "51603", "Order does not exist", Action::Query),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(
                200,
                "51400",
                "Order cancellation failed as the order has been filled, canceled or does not exist",
                Action::Cancel
            ),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            error(400, "50004", "Endpoint request timeout", Action::Place),
            BrokerError::Unavailable(_)
        ));
        assert!(matches!(
            error(502, "", "", Action::Place),
            BrokerError::Unavailable(_)
        ));
        // Anything else is the venue refusing the order, with its reason kept.
        assert_eq!(
            error(200, "51009", "Market is closed.", Action::Place),
            BrokerError::Rejected("Market is closed. (51009)".into())
        );
    }

    #[test]
    fn settings_follow_the_operator_and_the_connection() {
        let none = |_: &str| None;
        let live = Settings::new(&none, &[("passphrase".into(), " p4ss ".into())]).unwrap();
        assert_eq!(
            (
                live.base_url.as_str(),
                live.timeout_ms,
                live.demo,
                live.passphrase.as_str(),
                live.rate_limit_wait_ms
            ),
            (LIVE_URL, 10_000, false, "p4ss", 1_000)
        );
        for key in ["demo", "testnet"] {
            assert!(
                Settings::new(&none, &[(key.into(), "true".into())])
                    .unwrap()
                    .demo
            );
        }
        assert!(
            !Settings::new(&none, &[("demo".into(), "false".into())])
                .unwrap()
                .demo
        );
        let eea = Settings::new(&none, &[("region".into(), "EEA".into())]).unwrap();
        assert_eq!(eea.base_url, EEA_URL);
        assert!(matches!(
            Settings::new(&none, &[("region".into(), "moon".into())]),
            Err(BrokerError::Invalid(_))
        ));
        let proxied = |key: &str| (key == "base_url").then(|| "http://127.0.0.1:9000/".to_string());
        assert_eq!(
            Settings::new(&proxied, &[("region".into(), "us".into())])
                .unwrap()
                .base_url,
            "http://127.0.0.1:9000"
        );
        let bad = |key: &str| (key == "request_timeout_ms").then(|| "50".to_string());
        assert!(matches!(
            Settings::new(&bad, &[]),
            Err(BrokerError::Invalid(_))
        ));
    }

    fn client<'a>(
        http: &'a mut Scripted,
        settings: &'a Settings,
    ) -> Client<'a, Scripted, BTreeMap<String, String>> {
        Client {
            http,
            store: None,
            settings,
            api_key: "key",
            secret: "secret",
            now_ms: 1_607_418_537_715,
        }
    }

    #[test]
    fn private_requests_carry_the_signed_headers() {
        let settings = Settings::new(
            &|_: &str| None,
            &[
                ("passphrase".into(), "phrase".into()),
                ("demo".into(), "true".into()),
            ],
        )
        .unwrap();
        let mut http = Scripted::default();
        http.answer(200, json!({"code": "0", "msg": "", "data": [{"uid": "1"}]}));
        let data = client(&mut http, &settings)
            .signed(
                "GET",
                "/api/v5/account/balance",
                &[("ccy", "BTC".into())],
                None,
                Action::Read,
            )
            .unwrap();
        assert_eq!(data, vec![json!({"uid": "1"})]);
        let sent = &http.sent[0];
        assert_eq!(
            sent.url,
            "https://www.okx.com/api/v5/account/balance?ccy=BTC"
        );
        let value = |name: &str| {
            sent.headers
                .iter()
                .find(|h| h.name == name)
                .map(|h| h.value.as_str())
        };
        assert_eq!(value("OK-ACCESS-KEY"), Some("key"));
        assert_eq!(value("OK-ACCESS-PASSPHRASE"), Some("phrase"));
        assert_eq!(
            value("OK-ACCESS-TIMESTAMP"),
            Some("2020-12-08T09:08:57.715Z")
        );
        assert_eq!(
            value("OK-ACCESS-SIGN").map(str::to_string),
            Some(sign::signature(
                "secret",
                "2020-12-08T09:08:57.715Z",
                "GET",
                "/api/v5/account/balance?ccy=BTC",
                ""
            ))
        );
        assert_eq!(value("x-simulated-trading"), Some("1"));
        assert_eq!(value("Content-Type"), None);
    }

    #[test]
    fn a_missing_passphrase_is_an_auth_error_before_anything_is_sent() {
        let settings = Settings::new(&|_: &str| None, &[]).unwrap();
        let mut http = Scripted::default();
        let answer = client(&mut http, &settings).signed(
            "GET",
            "/api/v5/account/config",
            &[],
            None,
            Action::Read,
        );
        assert!(matches!(answer, Err(BrokerError::Auth(m)) if m.contains("passphrase")));
        assert!(http.sent.is_empty());
    }

    #[test]
    fn failures_carry_the_code_of_the_answer_or_of_the_order() {
        let settings =
            Settings::new(&|_: &str| None, &[("passphrase".into(), "p".into())]).unwrap();
        let mut http = Scripted::default();
        http.answer(
            401,
            json!({"code": "50113", "msg": "Invalid Sign", "data": []}),
        );
        http.answer(
            200,
            json!({"code": "1", "msg": "All operations failed", "data": [
                {"clOrdId": "", "ordId": "", "sCode": "51008", "sMsg": "Order failed. Insufficient USDT balance in account.", "tag": "", "ts": "1695190491421"}
            ]}),
        );
        http.answer(429, json!({"code": "50011", "msg": "Too Many Requests"}));
        http.http_error_page();
        let body = json!({"instId": "BTC-USDT"});
        let mut okx = client(&mut http, &settings);
        assert!(matches!(
            okx.signed("GET", "/api/v5/account/config", &[], None, Action::Read),
            Err(BrokerError::Auth(_))
        ));
        assert!(matches!(
            okx.signed("POST", "/api/v5/trade/order", &[], Some(&body), Action::Place),
            Err(BrokerError::InsufficientFunds(m)) if m.contains("Insufficient USDT")
        ));
        // No Retry-After: the configured wait.
        assert_eq!(
            okx.public("/api/v5/market/candles", &[], Action::Read),
            Err(BrokerError::RateLimited(1_000))
        );
        assert!(matches!(
            okx.public("/api/v5/market/candles", &[], Action::Read),
            Err(BrokerError::Unavailable(_))
        ));
        assert_eq!(
            okx.http.sent[1].headers.last().map(|h| h.name.as_str()),
            Some("Content-Type")
        );
    }

    trait ErrorPage {
        fn http_error_page(&mut self);
    }

    impl ErrorPage for Scripted {
        fn http_error_page(&mut self) {
            self.answers.push_back(Ok(Response {
                status: 502,
                headers: Vec::new(),
                body: b"<html>Bad Gateway</html>".to_vec(),
            }));
        }
    }
}
