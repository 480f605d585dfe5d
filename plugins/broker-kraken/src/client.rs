//! Requests to Kraken's REST API: public ones (`GET /0/public/<Method>`) and private ones
//! (`POST /0/private/<Method>`, a form body with a `nonce`, the key in `API-Key`, the signature
//! in `API-Sign`); Kraken's answers (`{"error": [...], "result": ...}`, HTTP 200 either way)
//! mapped to the broker world's results and errors.
//!
//! - **Nonce.** Kraken refuses a nonce not greater than the last one it saw for the key. Calls
//!   made for a user take `max(now in microseconds + 500, last + 1)` and record it in the user's
//!   store before sending, so it keeps growing across plugin and server restarts. The connection
//!   check, made before there is a store, takes the current millisecond's first microseconds
//!   (below what a user's call takes in the same millisecond). A nonce refused all the same (the
//!   request had no effect) is tried once more a millisecond ahead.
//! - **Call budget.** Kraken counts calls per key (1 each, 2 for trade history; orders and
//!   cancels have their own limiter) against a maximum that decays by the second, per
//!   verification tier. When it refuses with `EAPI:Rate limit exceeded` its counter is full and
//!   it names no wait: the answer is `rate-limited` for the time one call's worth decays at the
//!   connection's tier. The wait is also recorded in the user's store: until it is over, the
//!   account's private calls are answered `rate-limited` without being sent.

use exchange_kit::query;
use exchange_kit::request::{self, Http, header};
use serde_json::Value;
use tradehost_sdk::store::Store;
use tradehost_sdk::types::BrokerError;

use crate::sign;

pub const LIVE_URL: &str = "https://api.kraken.com";

/// The store key holding the last nonce sent with the account's key.
const NONCE_KEY: &str = "nonce";
/// The store key holding until when Kraken asked the account to wait.
const PAUSE_KEY: &str = "pause-until";
/// Microseconds of each millisecond left to calls made without a store (the connection check).
const UNSTORED_NONCES: u64 = 500;
/// The wait after Kraken's trading limiter (`EOrder:Rate limit exceeded`) or its per-address
/// limit on public data refuses a request: both recover at least one unit a second.
const ENGINE_RETRY_MS: u32 = 1_000;
/// The wait after a temporary lockout.
const LOCKOUT_RETRY_MS: u32 = 60_000;

/// A Kraken verification tier: how fast its call counter decays, in thousandths of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tier {
    pub decay_per_second: u64,
}

impl Tier {
    pub fn named(name: &str) -> Option<Tier> {
        match name.trim().to_ascii_lowercase().as_str() {
            "starter" => Some(Tier {
                decay_per_second: 330,
            }),
            "intermediate" => Some(Tier {
                decay_per_second: 500,
            }),
            "pro" => Some(Tier {
                decay_per_second: 1_000,
            }),
            _ => None,
        }
    }

    /// Milliseconds for `units` thousandths to decay.
    pub fn wait_for(&self, units: u64) -> u32 {
        units
            .saturating_mul(1_000)
            .div_ceil(self.decay_per_second)
            .clamp(1, u64::from(u32::MAX)) as u32
    }
}

/// What a private method adds to the call counter, in thousandths.
pub fn cost_of(method: &str) -> u64 {
    match method {
        "AddOrder" | "CancelOrder" | "AddOrderBatch" | "CancelAll" | "EditOrder" => 0,
        "TradesHistory" | "QueryTrades" | "Ledgers" | "QueryLedgers" => 2_000,
        _ => 1_000,
    }
}

/// How this server reaches Kraken (the operator's configuration and the connection's params).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub base_url: String,
    pub timeout_ms: u32,
    pub quote_asset: String,
    pub tier: Tier,
    /// The key's two-factor password, when it has one.
    pub otp: Option<String>,
}

impl Settings {
    /// From the plugin's configuration (`config`) and the connection's parameters (`tier`,
    /// `otp`).
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
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.trim().to_string())
        };
        for switch in ["testnet", "sandbox", "demo", "paper"] {
            if param(switch).is_some_and(|v| matches!(v.as_str(), "true" | "1" | "yes")) {
                return Err(BrokerError::Invalid(format!(
                    "Kraken has no spot {switch}: a Kraken key always trades live"
                )));
            }
        }
        let tier_name =
            param("tier").unwrap_or_else(|| reader.string("default_tier", "intermediate"));
        let tier = Tier::named(&tier_name).ok_or_else(|| {
            BrokerError::Invalid(format!(
                "tier {tier_name:?} is not a Kraken tier (starter, intermediate or pro)"
            ))
        })?;
        let base_url = match reader.string("base_url", "").trim() {
            "" => LIVE_URL.to_string(),
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
            quote_asset: reader
                .string("quote_asset", "USD")
                .trim()
                .to_ascii_uppercase(),
            tier,
            otp: param("otp").filter(|otp| !otp.is_empty()),
        })
    }
}

/// What a request was for: Kraken's errors mean different things to each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Place,
    Query,
    Cancel,
    Read,
}

/// Kraken's error answer (`["EOrder:Insufficient funds"]`) as a broker error; the venue's text
/// is kept.
pub fn error_of(errors: &[String], action: Action) -> BrokerError {
    let text = errors.join("; ");
    let first = errors
        .iter()
        .find(|e| e.starts_with('E'))
        .map(String::as_str)
        .unwrap_or_default();
    let (category, message) = first.split_once(':').unwrap_or((first, ""));
    let message = message.trim();
    match (category, message) {
        ("EAPI", "Invalid key" | "Invalid signature" | "Bad request") => BrokerError::Auth(text),
        ("EAPI", "Invalid nonce") => BrokerError::Auth(format!(
            "{text}: another application uses this key with larger nonces; give tradehost a key of its own"
        )),
        ("EGeneral", "Permission denied") => {
            BrokerError::Auth(format!("{text}: the key lacks a permission this needs"))
        }
        ("EAPI", "Rate limit exceeded") => BrokerError::RateLimited(ENGINE_RETRY_MS),
        ("EOrder", "Rate limit exceeded") | ("EGeneral", "Too many requests") => {
            BrokerError::RateLimited(ENGINE_RETRY_MS)
        }
        ("EGeneral", "Temporary lockout") => BrokerError::RateLimited(LOCKOUT_RETRY_MS),
        ("EOrder", "Insufficient funds" | "Insufficient margin") => {
            BrokerError::InsufficientFunds(text)
        }
        ("EOrder", "Unknown order") => BrokerError::NotFound(text),
        ("EOrder", "Invalid order") if action != Action::Place => BrokerError::NotFound(text),
        ("EQuery", "Unknown asset pair" | "Invalid asset pair") if action == Action::Place => {
            BrokerError::Invalid(text)
        }
        ("EQuery", "Unknown asset pair" | "Invalid asset pair" | "Unknown asset") => {
            BrokerError::NotFound(text)
        }
        ("EGeneral", "Unknown method") => BrokerError::Unsupported(text),
        ("EGeneral", m) if m.starts_with("Invalid arguments") => BrokerError::Invalid(text),
        (
            "EOrder",
            "Order minimum not met"
            | "Cost minimum not met"
            | "Tick size check failed"
            | "Invalid price"
            | "Invalid order",
        ) => BrokerError::Invalid(text),
        // Kraken may have acted: the outcome of an order is learned by asking.
        ("EService", _) | ("EGeneral", "Internal error") => BrokerError::Unavailable(text),
        _ => BrokerError::Rejected(text),
    }
}

/// A failed exchange with Kraken: its own refusal, or anything else.
enum Failure {
    Venue(Vec<String>),
    Other(BrokerError),
}

impl From<BrokerError> for Failure {
    fn from(err: BrokerError) -> Failure {
        Failure::Other(err)
    }
}

/// One account's (or no account's) calls to Kraken.
pub struct Client<'a, H: Http, S: Store> {
    pub http: &'a mut H,
    /// The account's store, for calls made for a user.
    pub store: Option<&'a mut S>,
    pub settings: &'a Settings,
    pub api_key: &'a str,
    pub secret: &'a str,
    pub now_ms: i64,
    /// The last nonce this call sent (for calls without a store).
    pub last_nonce: u64,
}

impl<H: Http, S: Store> Client<'_, H, S> {
    /// A public endpoint (market data, asset and pair listings).
    pub fn public(
        &mut self,
        method: &str,
        params: &[(&str, String)],
        action: Action,
    ) -> Result<Value, BrokerError> {
        let mut url = format!("{}/0/public/{method}", self.settings.base_url);
        if !params.is_empty() {
            url = format!("{url}?{}", query::join(params));
        }
        let request = request::build(
            "GET",
            url,
            vec![user_agent()],
            Vec::new(),
            self.settings.timeout_ms,
        );
        self.send(&request).map_err(|failure| match failure {
            Failure::Venue(errors) => error_of(&errors, action),
            Failure::Other(err) => err,
        })
    }

    /// A private endpoint: signed, with a fresh nonce.
    pub fn private(
        &mut self,
        method: &str,
        params: &[(&str, String)],
        action: Action,
    ) -> Result<Value, BrokerError> {
        if self.api_key.is_empty() || self.secret.is_empty() {
            return Err(BrokerError::Auth(
                "an API key and private key are required".into(),
            ));
        }
        let secret = sign::decode_secret(self.secret)?;
        let cost = cost_of(method);
        let path = format!("/0/private/{method}");
        let mut retried = false;
        loop {
            let nonce = self.begin(retried)?;
            let mut all: Vec<(&str, String)> = vec![("nonce", nonce.to_string())];
            if let Some(otp) = &self.settings.otp {
                all.push(("otp", otp.clone()));
            }
            all.extend(params.iter().cloned());
            let body = query::join(&all);
            let request = request::build(
                "POST",
                format!("{}{path}", self.settings.base_url),
                vec![
                    header("API-Key", self.api_key),
                    header(
                        "API-Sign",
                        sign::signature(&secret, &path, &nonce.to_string(), &body),
                    ),
                    header(
                        "Content-Type",
                        "application/x-www-form-urlencoded; charset=utf-8",
                    ),
                    user_agent(),
                ],
                body.into_bytes(),
                self.settings.timeout_ms,
            );
            let errors = match self.send(&request) {
                Ok(result) => return Ok(result),
                Err(Failure::Other(BrokerError::RateLimited(wait))) => {
                    return Err(self.pause(wait));
                }
                Err(Failure::Other(err)) => return Err(err),
                Err(Failure::Venue(errors)) => errors,
            };
            let first = errors.iter().find(|e| e.starts_with('E'));
            let refused = match first.map(String::as_str) {
                // Refused before it had any effect: once more, a millisecond ahead.
                Some("EAPI:Invalid nonce") if !retried => {
                    retried = true;
                    continue;
                }
                // Kraken's counter is full: the wait is the time one call's worth decays.
                Some("EAPI:Rate limit exceeded") => {
                    BrokerError::RateLimited(self.settings.tier.wait_for(cost.max(1_000)))
                }
                _ => error_of(&errors, action),
            };
            return Err(match refused {
                BrokerError::RateLimited(wait) => self.pause(wait),
                other => other,
            });
        }
    }

    /// Kraken asked the account to wait: the wait is recorded, so that no call of the account
    /// goes out before it is over, from this plugin call or any other (also across a restart
    /// of the server, which forgets the host's own wait).
    fn pause(&mut self, wait: u32) -> BrokerError {
        let until = self.now_ms + i64::from(wait);
        if let Some(store) = self.store.as_deref_mut() {
            let _ = store.write(vec![(PAUSE_KEY.to_string(), Some(until.to_string()))]);
        }
        BrokerError::RateLimited(wait)
    }

    /// Takes the next nonce (recorded before the request goes out), or says how long to wait
    /// while Kraken's last refusal for a rate limit holds.
    fn begin(&mut self, jump: bool) -> Result<u64, BrokerError> {
        let now_us = (self.now_ms.max(0) as u64).saturating_mul(1_000);
        let next_ms_us = now_us.saturating_add(1_000);
        let Some(store) = self.store.as_deref_mut() else {
            let floor = if jump { next_ms_us } else { now_us };
            let nonce = floor.max(self.last_nonce + 1);
            self.last_nonce = nonce;
            return Ok(nonce);
        };
        if let Some(until) = store
            .get(PAUSE_KEY)
            .and_then(|v| v.trim().parse::<i64>().ok())
            && until > self.now_ms
        {
            return Err(BrokerError::RateLimited(
                (until - self.now_ms).clamp(1, i64::from(u32::MAX)) as u32,
            ));
        }
        let last = store
            .get(NONCE_KEY)
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
            .max(self.last_nonce);
        let floor = if jump { next_ms_us } else { now_us } + UNSTORED_NONCES;
        let nonce = floor.max(last + 1);
        let changes = vec![(NONCE_KEY.to_string(), Some(nonce.to_string()))];
        store.write(changes).map_err(|err| {
            BrokerError::Rejected(format!(
                "the request's nonce could not be recorded, so it was not sent: {err}"
            ))
        })?;
        self.last_nonce = nonce;
        Ok(nonce)
    }

    fn send(&mut self, request: &request::Request) -> Result<Value, Failure> {
        let response = request::exchange(self.http, request)?;
        let body = match request::json(&response) {
            Ok(body) => body,
            // An HTML error page from a proxy in front of Kraken.
            Err(_) if response.status >= 500 => {
                return Err(Failure::Other(BrokerError::Unavailable(format!(
                    "Kraken answered HTTP {}",
                    response.status
                ))));
            }
            Err(err) => return Err(Failure::Other(err)),
        };
        let errors: Vec<String> = body["error"]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|e| e.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if errors.iter().any(|e| e.starts_with('E')) {
            return Err(Failure::Venue(errors));
        }
        match body.get("result") {
            Some(result) if (200..300).contains(&response.status) => Ok(result.clone()),
            _ if response.status >= 500 => Err(Failure::Other(BrokerError::Unavailable(format!(
                "Kraken answered HTTP {}: {body}",
                response.status
            )))),
            _ => Err(Failure::Other(BrokerError::Unavailable(format!(
                "Kraken answered HTTP {} without a result: {body}",
                response.status
            )))),
        }
    }
}

fn user_agent() -> request::Header {
    header(
        "User-Agent",
        concat!("tradehost-kraken/", env!("CARGO_PKG_VERSION")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use exchange_kit::request::Scripted;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn errors(text: &str) -> Vec<String> {
        vec![text.to_string()]
    }

    #[test]
    fn kraken_errors_map_to_broker_errors() {
        let map = |text: &str, action| error_of(&errors(text), action);
        assert!(matches!(
            map("EAPI:Invalid key", Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            map("EAPI:Invalid signature", Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            map("EAPI:Invalid nonce", Action::Read),
            BrokerError::Auth(_)
        ));
        assert!(matches!(
            map("EGeneral:Permission denied", Action::Place),
            BrokerError::Auth(_)
        ));
        assert_eq!(
            map("EOrder:Insufficient funds", Action::Place),
            BrokerError::InsufficientFunds("EOrder:Insufficient funds".into())
        );
        assert_eq!(
            map("EOrder:Market is closed.", Action::Place),
            BrokerError::Rejected("EOrder:Market is closed.".into())
        );
        assert!(matches!(
            map("EOrder:Order minimum not met", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            map("EGeneral:Invalid arguments:volume", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            map("EGeneral:Invalid arguments", Action::Read),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            map("EQuery:Unknown asset pair", Action::Place),
            BrokerError::Invalid(_)
        ));
        assert!(matches!(
            map("EQuery:Unknown asset pair", Action::Read),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            map("EOrder:Unknown order", Action::Cancel),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            map("EOrder:Invalid order", Action::Query),
            BrokerError::NotFound(_)
        ));
        assert!(matches!(
            map("EService:Unavailable", Action::Place),
            BrokerError::Unavailable(_)
        ));
        assert!(matches!(
            map("EService:Busy", Action::Place),
            BrokerError::Unavailable(_)
        ));
        assert_eq!(
            map("EOrder:Rate limit exceeded", Action::Place),
            BrokerError::RateLimited(1_000)
        );
        assert_eq!(
            map("EGeneral:Temporary lockout", Action::Read),
            BrokerError::RateLimited(60_000)
        );
        // A warning beside an error does not hide it.
        assert!(matches!(
            error_of(
                &[
                    "WGeneral:Danger".to_string(),
                    "EOrder:Insufficient funds".to_string()
                ],
                Action::Place
            ),
            BrokerError::InsufficientFunds(_)
        ));
    }

    #[test]
    fn settings_follow_the_operator_and_the_connection() {
        let none = |_: &str| None;
        let live = Settings::new(&none, &[]).unwrap();
        assert_eq!(
            (
                live.base_url.as_str(),
                live.timeout_ms,
                live.quote_asset.as_str()
            ),
            (LIVE_URL, 10_000, "USD")
        );
        assert_eq!(live.tier, Tier::named("intermediate").unwrap());
        let pro = Settings::new(
            &none,
            &[("tier".into(), "Pro".into()), ("otp".into(), "pw".into())],
        )
        .unwrap();
        assert_eq!(pro.tier.decay_per_second, 1_000);
        assert_eq!(pro.otp.as_deref(), Some("pw"));
        assert!(matches!(
            Settings::new(&none, &[("tier".into(), "gold".into())]),
            Err(BrokerError::Invalid(_))
        ));
        // No sandbox: a connection asking for one is refused rather than trading live.
        assert!(matches!(
            Settings::new(&none, &[("testnet".into(), "true".into())]),
            Err(BrokerError::Invalid(_))
        ));
        let proxied = |key: &str| (key == "base_url").then(|| "http://127.0.0.1:9000/".to_string());
        assert_eq!(
            Settings::new(&proxied, &[]).unwrap().base_url,
            "http://127.0.0.1:9000"
        );
        let bad = |key: &str| (key == "request_timeout_ms").then(|| "50".to_string());
        assert!(matches!(
            Settings::new(&bad, &[]),
            Err(BrokerError::Invalid(_))
        ));
    }

    const SECRET: &str =
        "kQH5HW/8p1uGOVjbgWA7FunAmGO8lsSUXNsu3eow76sz84Q18fWxnyRzBHCd3pd5nE9qa99HAZtuZuj6F1huXg==";

    fn client<'a>(
        http: &'a mut Scripted,
        store: Option<&'a mut BTreeMap<String, String>>,
        settings: &'a Settings,
        now_ms: i64,
    ) -> Client<'a, Scripted, BTreeMap<String, String>> {
        Client {
            http,
            store,
            settings,
            api_key: "key",
            secret: SECRET,
            now_ms,
            last_nonce: 0,
        }
    }

    fn nonce_of(request: &request::Request) -> u64 {
        let body = String::from_utf8(request.body.clone()).unwrap();
        body.split('&')
            .find_map(|pair| pair.strip_prefix("nonce="))
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn nonces_grow_across_calls_and_restarts_and_requests_are_signed() {
        let settings = Settings::new(&|_: &str| None, &[]).unwrap();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        for _ in 0..3 {
            http.answer(200, json!({"error": [], "result": {"ZUSD": "1"}}));
        }
        // Two calls in the same millisecond, then a "restart" whose clock went back.
        for now in [1_700_000_000_000, 1_700_000_000_000, 1_699_999_999_000] {
            client(&mut http, Some(&mut store), &settings, now)
                .private("Balance", &[], Action::Read)
                .unwrap();
        }
        let nonces: Vec<u64> = http.sent.iter().map(nonce_of).collect();
        assert_eq!(
            nonces,
            vec![
                1_700_000_000_000_500,
                1_700_000_000_000_501,
                1_700_000_000_000_502
            ]
        );
        let sent = &http.sent[0];
        assert_eq!(sent.url, "https://api.kraken.com/0/private/Balance");
        assert_eq!(sent.method, "POST");
        let body = String::from_utf8(sent.body.clone()).unwrap();
        assert_eq!(body, "nonce=1700000000000500");
        let sign = sent.headers.iter().find(|h| h.name == "API-Sign").unwrap();
        assert_eq!(
            sign.value,
            sign::signature(
                &sign::decode_secret(SECRET).unwrap(),
                "/0/private/Balance",
                "1700000000000500",
                &body
            )
        );
        // The connection check (no store) stays below a user's call in the same millisecond.
        let mut unstored = client(&mut http, None, &settings, 1_700_000_000_001);
        http_answer(&mut unstored, json!({"error": [], "result": {}}));
        unstored.private("Balance", &[], Action::Read).unwrap();
        assert_eq!(nonce_of(http.sent.last().unwrap()), 1_700_000_000_001_000);
    }

    fn http_answer(client: &mut Client<'_, Scripted, BTreeMap<String, String>>, body: Value) {
        client.http.answer(200, body);
    }

    #[test]
    fn a_refused_nonce_is_tried_once_more_a_millisecond_ahead() {
        let settings = Settings::new(&|_: &str| None, &[]).unwrap();
        let mut http = Scripted::default();
        http.answer(200, json!({"error": ["EAPI:Invalid nonce"]}));
        http.answer(200, json!({"error": [], "result": {"ZUSD": "1"}}));
        let mut store = BTreeMap::new();
        client(&mut http, Some(&mut store), &settings, 2_000)
            .private("Balance", &[], Action::Read)
            .unwrap();
        assert_eq!(
            http.sent.iter().map(nonce_of).collect::<Vec<_>>(),
            vec![2_000_500, 2_001_500]
        );
        // Twice refused: the key is used elsewhere.
        http.answer(200, json!({"error": ["EAPI:Invalid nonce"]}));
        http.answer(200, json!({"error": ["EAPI:Invalid nonce"]}));
        assert!(matches!(
            client(&mut http, Some(&mut store), &settings, 2_000).private(
                "Balance",
                &[],
                Action::Read
            ),
            Err(BrokerError::Auth(_))
        ));
        assert_eq!(http.sent.len(), 4);
    }

    #[test]
    fn a_full_call_counter_waits_for_one_calls_decay_at_the_tier() {
        let none = |_: &str| None;
        for (tier, method, wait) in [
            ("starter", "Balance", 3_031),
            ("intermediate", "Balance", 2_000),
            ("pro", "Balance", 1_000),
            ("intermediate", "TradesHistory", 4_000),
            // Orders count on another limiter; a refusal of the REST counter still waits a call.
            ("pro", "AddOrder", 1_000),
        ] {
            let settings = Settings::new(&none, &[("tier".into(), tier.into())]).unwrap();
            let mut http = Scripted::default();
            http.answer(200, json!({"error": ["EAPI:Rate limit exceeded"]}));
            assert_eq!(
                client(&mut http, None, &settings, 1).private(method, &[], Action::Read),
                Err(BrokerError::RateLimited(wait)),
                "{tier} {method}"
            );
            assert_eq!(http.sent.len(), 1);
        }
        // With a store, the wait holds for the account's next calls too.
        let settings = Settings::new(&none, &[]).unwrap();
        let mut http = Scripted::default();
        let mut store = BTreeMap::new();
        http.answer(200, json!({"error": ["EAPI:Rate limit exceeded"]}));
        assert_eq!(
            client(&mut http, Some(&mut store), &settings, 10_000).private(
                "Balance",
                &[],
                Action::Read
            ),
            Err(BrokerError::RateLimited(2_000))
        );
        assert_eq!(
            client(&mut http, Some(&mut store), &settings, 11_500).private(
                "AddOrder",
                &[],
                Action::Place
            ),
            Err(BrokerError::RateLimited(500))
        );
        assert_eq!(http.sent.len(), 1);
        http.answer(200, json!({"error": [], "result": {}}));
        client(&mut http, Some(&mut store), &settings, 12_000)
            .private("Balance", &[], Action::Read)
            .unwrap();
        assert_eq!(http.sent.len(), 2);
    }

    #[test]
    fn answers_that_are_not_kraken_json_are_unknown_outcomes() {
        let settings = Settings::new(&|_: &str| None, &[]).unwrap();
        let mut http = Scripted::default();
        http.answers.push_back(Ok(request::Response {
            status: 502,
            headers: Vec::new(),
            body: b"<html>Bad gateway</html>".to_vec(),
        }));
        assert!(matches!(
            client(&mut http, None, &settings, 1).private("AddOrder", &[], Action::Place),
            Err(BrokerError::Unavailable(_))
        ));
        http.answer(429, json!({}));
        assert_eq!(
            client(&mut http, None, &settings, 1).public("OHLC", &[], Action::Read),
            Err(BrokerError::RateLimited(1_000))
        );
        http.fail(request::HttpError::Timeout);
        assert!(matches!(
            client(&mut http, None, &settings, 1).private("AddOrder", &[], Action::Place),
            Err(BrokerError::Timeout(_))
        ));
    }
}
