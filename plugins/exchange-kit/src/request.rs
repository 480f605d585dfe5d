//! HTTP to a venue. [`Http`] is the transport (the host's `http` import inside a component,
//! scripted answers in native tests); [`exchange`] sends one request and maps what can go wrong
//! before the venue's own answer is read:
//!
//! - no connection (`unreachable`): nothing was sent;
//! - a timeout or a failure after sending (`timeout`, `unavailable`): the venue may have acted,
//!   so an order's outcome is unknown and the host asks rather than sends again;
//! - a host that is not allowed: `unreachable` with the host's reason;
//! - HTTP 429 (and 418, an IP ban): `rate-limited` with the venue's `Retry-After`.

pub use tradehost_sdk::broker::tradehost::plugin::http::{Header, HttpError, Request, Response};
use tradehost_sdk::types::BrokerError;

/// How long a venue has to answer unless the operator configures otherwise.
pub const DEFAULT_TIMEOUT_MS: u32 = 10_000;
/// The wait when a venue asks to slow down without saying how long.
pub const DEFAULT_RETRY_MS: u32 = 1_000;

/// Sends requests and reads answers.
pub trait Http {
    fn send(&mut self, request: &Request) -> Result<Response, HttpError>;
}

/// The host's outgoing HTTP (inside a component).
#[cfg(target_arch = "wasm32")]
pub struct HostHttp;

#[cfg(target_arch = "wasm32")]
impl Http for HostHttp {
    fn send(&mut self, request: &Request) -> Result<Response, HttpError> {
        tradehost_sdk::broker::tradehost::plugin::http::send(request)
    }
}

pub fn header(name: &str, value: impl Into<String>) -> Header {
    Header {
        name: name.to_string(),
        value: value.into(),
    }
}

/// A response header's value (names compared case-insensitively).
pub fn header_value<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

/// The venue's answer as JSON (an empty body is `null`).
pub fn json(response: &Response) -> Result<serde_json::Value, BrokerError> {
    if response.body.is_empty() {
        return Ok(serde_json::Value::Null);
    }
    serde_json::from_slice(&response.body).map_err(|err| {
        BrokerError::Unavailable(format!(
            "the venue answered {} with a body that is not JSON: {err}",
            response.status
        ))
    })
}

/// Milliseconds to wait from a `Retry-After` header (seconds), if any.
pub fn retry_after_ms(response: &Response) -> Option<u32> {
    header_value(response, "retry-after")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|secs| secs.is_finite())
        .map(|secs| (secs.max(0.0) * 1000.0).min(u32::MAX as f64) as u32)
}

/// Maps a transport failure.
pub fn transport_error(err: HttpError) -> BrokerError {
    match err {
        HttpError::Unreachable(reason) => BrokerError::Unreachable(reason),
        HttpError::Timeout => BrokerError::Timeout("no answer from the venue in time".into()),
        HttpError::Failed(reason) => BrokerError::Unavailable(reason),
        HttpError::Forbidden(reason) => BrokerError::Unreachable(format!("not allowed: {reason}")),
    }
}

/// Sends `request`; a rate-limited answer is an error carrying the venue's wait.
pub fn exchange(http: &mut impl Http, request: &Request) -> Result<Response, BrokerError> {
    let response = http.send(request).map_err(transport_error)?;
    if matches!(response.status, 418 | 429) {
        return Err(BrokerError::RateLimited(
            retry_after_ms(&response).unwrap_or(DEFAULT_RETRY_MS).max(1),
        ));
    }
    Ok(response)
}

/// A request.
pub fn build(
    method: &str,
    url: String,
    headers: Vec<Header>,
    body: Vec<u8>,
    timeout_ms: u32,
) -> Request {
    Request {
        method: method.to_string(),
        url,
        headers,
        body,
        timeout_ms,
    }
}

/// Answers given in order, and the requests they answered (for native tests of venue logic).
#[derive(Default)]
pub struct Scripted {
    pub answers: std::collections::VecDeque<Result<Response, HttpError>>,
    pub sent: Vec<Request>,
}

impl Scripted {
    /// Queues an answer with `status` and a JSON `body`.
    pub fn answer(&mut self, status: u16, body: serde_json::Value) -> &mut Self {
        self.answers.push_back(Ok(Response {
            status,
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
        }));
        self
    }

    pub fn fail(&mut self, err: HttpError) -> &mut Self {
        self.answers.push_back(Err(err));
        self
    }
}

impl Http for Scripted {
    fn send(&mut self, request: &Request) -> Result<Response, HttpError> {
        self.sent.push(request.clone());
        self.answers
            .pop_front()
            .unwrap_or(Err(HttpError::Failed("no answer scripted".into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get() -> Request {
        build(
            "GET",
            "https://venue.example/x".into(),
            Vec::new(),
            Vec::new(),
            1000,
        )
    }

    #[test]
    fn rate_limits_and_transport_failures_become_broker_errors() {
        let mut http = Scripted::default();
        http.answers.push_back(Ok(Response {
            status: 429,
            headers: vec![header("Retry-After", "7")],
            body: Vec::new(),
        }));
        assert_eq!(
            exchange(&mut http, &get()),
            Err(BrokerError::RateLimited(7000))
        );
        http.answer(418, serde_json::json!({}));
        assert_eq!(
            exchange(&mut http, &get()),
            Err(BrokerError::RateLimited(DEFAULT_RETRY_MS))
        );
        http.fail(HttpError::Timeout);
        assert!(matches!(
            exchange(&mut http, &get()),
            Err(BrokerError::Timeout(_))
        ));
        http.fail(HttpError::Unreachable("refused".into()));
        assert!(matches!(
            exchange(&mut http, &get()),
            Err(BrokerError::Unreachable(_))
        ));
        http.answer(200, serde_json::json!({"ok": true}));
        let response = exchange(&mut http, &get()).unwrap();
        assert_eq!(json(&response).unwrap()["ok"], true);
        assert_eq!(http.sent.len(), 5);
    }
}
