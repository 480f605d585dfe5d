//! Response envelopes, the JSON body guard, and how a failed guard's error reaches the catcher.

use std::io::Cursor;
use std::sync::Mutex;

use rocket::data::{self, Data, FromData, ToByteUnit};
use rocket::http::{ContentType, Status};
use rocket::outcome::Outcome;
use rocket::request::Request;
use rocket::response::{self, Responder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorCode};
use crate::ratelimit::OriginalPath;

/// Which envelope a route set's clients expect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `/api/v1`: `{success, data | error{code, message, details}, timestamp}`.
    Platform,
    /// Companion sets A (backend) and B (gateway), and everything outside `/api`: FastAPI-style
    /// `{detail}`, with validation errors as a 422 list.
    Detail,
    /// Companion sets C to F (restart, ledger, dashboard, KPI): `{success: false, error}`.
    Companion,
}

/// Path prefixes of the companion sets C to F.
const COMPANION_PREFIXES: [&str; 10] = [
    "/api/restart",
    "/api/positions/open",
    "/api/trades",
    "/api/v1/dashboard",
    "/api/kpi",
    "/api/performance",
    "/api/alarms",
    "/api/dashboard",
    "/api/health",
    "/api/safety",
];

/// The gateway's (B) routes, which live under `/api/v1` but answer `{detail}`.
const GATEWAY_PATHS: [&str; 5] = [
    "/api/v1/start",
    "/api/v1/stop",
    "/api/v1/balance",
    "/api/v1/positions",
    "/api/v1/performance",
];

fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl Flavor {
    pub fn of(req: &Request<'_>) -> Self {
        // A rate-limited request was rerouted; its envelope is that of the path it asked for.
        if let OriginalPath(Some(path)) = req.local_cache(|| OriginalPath(None)) {
            return Self::for_path(path);
        }
        Self::for_path(req.uri().path().as_str())
    }

    pub fn for_path(path: &str) -> Self {
        let path = path.trim_end_matches('/');
        if COMPANION_PREFIXES.iter().any(|p| under(path, p)) || under(path, "/trades") {
            Self::Companion
        } else if GATEWAY_PATHS.contains(&path) {
            Self::Detail
        } else if under(path, "/api/v1") || path.starts_with("/ws/") {
            Self::Platform
        } else {
            Self::Detail
        }
    }
}

pub fn timestamp_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The message the companion sets' clients show for an error: their historical wording for
/// token and credential failures, the error's own message otherwise.
fn companion_message(err: &ApiError) -> &str {
    match err.code {
        ErrorCode::TokenInvalid if err.details.get("token").is_some_and(|t| t == "missing") => {
            "Not authenticated"
        }
        ErrorCode::TokenInvalid | ErrorCode::TokenExpired => "Invalid or expired token",
        ErrorCode::InvalidCredentials => "Invalid credentials",
        _ => &err.message,
    }
}

/// The platform's error envelope (every error under `/api/v1` and `/ws/v1`).
#[derive(Debug, Serialize, ToSchema)]
pub struct PlatformError {
    /// Always `false`.
    pub success: bool,
    pub error: PlatformErrorDetail,
    /// When the answer was made (UTC, milliseconds).
    #[schema(format = DateTime, example = "2026-11-22T06:40:00.123Z")]
    pub timestamp: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlatformErrorDetail {
    /// Machine-readable error code (its HTTP status is fixed; see docs/api.md).
    pub code: ErrorCode,
    /// What went wrong, for a person.
    pub message: String,
    /// Structured details: `field` and `reason` for INVALID_REQUEST, `reasons` for
    /// WEAK_PASSWORD, `limit` for EXCEEDS_TIER_LIMIT, only `request_id` for internal errors.
    pub details: Value,
}

/// FastAPI-style error of companion sets A and B and of every path outside `/api`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DetailError {
    /// What went wrong.
    #[schema(example = "Invalid or expired token")]
    pub detail: String,
    pub code: ErrorCode,
}

/// Validation error (422) of sets A and B, in FastAPI's list form: a missing or mistyped body
/// field, a bad e-mail, a short password.
#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationError {
    pub detail: Vec<ValidationProblem>,
    pub code: ErrorCode,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ValidationProblem {
    #[serde(rename = "type")]
    #[schema(example = "value_error")]
    pub kind: String,
    /// Where: `body` or `query`, then the field.
    #[schema(example = json!(["body", "email"]))]
    pub loc: [String; 2],
    #[schema(example = "value is not a valid email address")]
    pub msg: String,
}

/// Error of companion sets C (restart), D (ledger), E (dashboard) and F (KPI).
#[derive(Debug, Serialize, ToSchema)]
pub struct CompanionError {
    /// Always `false`.
    pub success: bool,
    /// What went wrong.
    #[schema(example = "No KPI data available")]
    pub error: String,
    pub code: ErrorCode,
}

/// The status and body of an error in a route set's envelope.
pub fn error_body(flavor: Flavor, err: &ApiError) -> (Status, Value) {
    let (status, body) = match flavor {
        Flavor::Platform => (
            err.code.status(),
            serde_json::to_value(PlatformError {
                success: false,
                error: PlatformErrorDetail {
                    code: err.code,
                    message: err.message.clone(),
                    details: Value::Object(err.details.clone()),
                },
                timestamp: timestamp_now(),
            }),
        ),
        Flavor::Detail => match validation_field(err) {
            // FastAPI's list form, which clients of the original backend and gateway parse.
            Some((location, field)) => (
                Status::UnprocessableEntity,
                serde_json::to_value(ValidationError {
                    detail: vec![ValidationProblem {
                        kind: "value_error".into(),
                        loc: [location.into(), field.into()],
                        msg: err.message.clone(),
                    }],
                    code: err.code,
                }),
            ),
            None => (
                err.code.status(),
                serde_json::to_value(DetailError {
                    detail: companion_message(err).into(),
                    code: err.code,
                }),
            ),
        },
        Flavor::Companion => (
            err.code.status(),
            serde_json::to_value(CompanionError {
                success: false,
                error: companion_message(err).into(),
                code: err.code,
            }),
        ),
    };
    (status, body.unwrap_or_else(|_| json!({ "success": false })))
}

/// Where a validation error points (`body` or `query`, and the field), for the 422 list form.
/// An error whose route chose its status answers a plain message instead.
fn validation_field(err: &ApiError) -> Option<(&str, &str)> {
    if err.status.is_some() {
        return None;
    }
    let location = err
        .details
        .get("in")
        .and_then(Value::as_str)
        .unwrap_or("body");
    match err.code {
        ErrorCode::InvalidEmail => Some((location, "email")),
        ErrorCode::WeakPassword => Some((location, "password")),
        ErrorCode::InvalidRequest => Some((
            location,
            err.details
                .get("field")
                .and_then(Value::as_str)
                .unwrap_or("body"),
        )),
        _ => None,
    }
}

/// A successful platform response: `{success: true, data, timestamp}` with a status (200 or 201).
#[derive(Debug)]
pub struct Success<T> {
    status: Status,
    data: T,
}

/// The body of a successful platform response.
#[derive(Debug, Serialize, ToSchema)]
pub struct Enveloped<T> {
    /// Always `true`.
    pub success: bool,
    pub data: T,
    /// When the answer was made (UTC, milliseconds).
    #[schema(format = DateTime, example = "2026-11-22T06:40:00.123Z")]
    pub timestamp: String,
}

pub fn ok<T: Serialize>(data: T) -> Success<T> {
    Success {
        status: Status::Ok,
        data,
    }
}

pub fn created<T: Serialize>(data: T) -> Success<T> {
    Success {
        status: Status::Created,
        data,
    }
}

impl<'r, T: Serialize> Responder<'r, 'static> for Success<T> {
    fn respond_to(self, _req: &'r Request<'_>) -> response::Result<'static> {
        let body = serde_json::to_string(&Enveloped {
            success: true,
            data: self.data,
            timestamp: timestamp_now(),
        })
        .map_err(|err| {
            tracing::error!("response serialisation failed: {err}");
            Status::InternalServerError
        })?;
        Response::build()
            .status(self.status)
            .header(ContentType::JSON)
            .sized_body(body.len(), Cursor::new(body))
            .ok()
    }
}

/// The error of a failed guard, kept for the catcher (Rocket 0.5 catchers only see the status).
struct GuardError(Mutex<Option<ApiError>>);

/// Fails a guard with `err`: the catcher for its status answers with exactly this error.
pub fn fail_with<S, E, F>(req: &Request<'_>, err: ApiError) -> Outcome<S, (Status, E), F>
where
    E: From<ApiError>,
{
    let status = err.code.status();
    let slot = req.local_cache(|| GuardError(Mutex::new(None)));
    if let Ok(mut slot) = slot.0.lock() {
        slot.get_or_insert_with(|| err.clone());
    }
    Outcome::Error((status, E::from(err)))
}

pub fn guard_error(req: &Request<'_>) -> Option<ApiError> {
    let slot = req.local_cache(|| GuardError(Mutex::new(None)));
    slot.0.lock().ok().and_then(|mut slot| slot.take())
}

/// A JSON request body whose errors name the offending field.
#[derive(Debug)]
pub struct Body<T>(pub T);

/// A JSON request body that may be absent: an empty body is `None`, anything else must parse.
#[derive(Debug)]
pub struct OptionalBody<T>(pub Option<T>);

/// A JSON body carrying a plugin upload, under the larger `plugin` limit of Rocket.toml.
#[derive(Debug)]
pub struct PluginBody<T>(pub T);

async fn read_body(req: &Request<'_>, data: Data<'_>) -> Result<Vec<u8>, ApiError> {
    read_body_limited(req, data, "json").await
}

async fn read_body_limited(
    req: &Request<'_>,
    data: Data<'_>,
    limit_name: &str,
) -> Result<Vec<u8>, ApiError> {
    let limit = req.limits().get(limit_name).unwrap_or(256.kibibytes());
    match data.open(limit).into_bytes().await {
        Ok(bytes) if bytes.is_complete() => Ok(bytes.into_inner()),
        Ok(_) => {
            Err(ApiError::code(ErrorCode::PayloadTooLarge).detail("limit_bytes", limit.as_u64()))
        }
        Err(err) => Err(ApiError::invalid_field(
            "body",
            format!("unreadable: {err}"),
        )),
    }
}

#[rocket::async_trait]
impl<'r, T: DeserializeOwned> FromData<'r> for Body<T> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        match read_body(req, data)
            .await
            .and_then(|bytes| parse_json(&bytes))
        {
            Ok(value) => Outcome::Success(Body(value)),
            Err(err) => fail_with(req, err),
        }
    }
}

#[rocket::async_trait]
impl<'r, T: DeserializeOwned> FromData<'r> for PluginBody<T> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        match read_body_limited(req, data, "plugin")
            .await
            .and_then(|bytes| parse_json(&bytes))
        {
            Ok(value) => Outcome::Success(PluginBody(value)),
            Err(err) => fail_with(req, err),
        }
    }
}

#[rocket::async_trait]
impl<'r, T: DeserializeOwned> FromData<'r> for OptionalBody<T> {
    type Error = ApiError;

    async fn from_data(req: &'r Request<'_>, data: Data<'r>) -> data::Outcome<'r, Self> {
        let parsed = read_body(req, data).await.and_then(|bytes| {
            if bytes.iter().all(u8::is_ascii_whitespace) {
                Ok(None)
            } else {
                parse_json(&bytes).map(Some)
            }
        });
        match parsed {
            Ok(value) => Outcome::Success(OptionalBody(value)),
            Err(err) => fail_with(req, err),
        }
    }
}

/// Parses a JSON body; errors say which field is missing or mistyped, or where the syntax broke.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "The request body must be a JSON object",
        )
        .detail("field", "body")
        .detail("reason", "empty body"));
    }
    // Request bodies are objects; serde would also accept a struct written as an array.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "The request body must be a JSON object",
        )
        .detail("field", "body")
        .detail("reason", "expected a JSON object, found an array"));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    if result.is_ok()
        && let Err(err) = de.end()
    {
        return Err(
            ApiError::new(ErrorCode::InvalidRequest, format!("Malformed JSON: {err}"))
                .detail("field", "body")
                .detail("reason", err.to_string()),
        );
    }
    result.map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        match inner.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("Malformed JSON: {inner}"),
                )
                .detail("field", "body")
                .detail("reason", inner.to_string())
            }
            _ => {
                let message = inner.to_string();
                let field = missing_field_name(&message)
                    .map(|name| {
                        if path == "." {
                            name.to_string()
                        } else {
                            format!("{path}.{name}")
                        }
                    })
                    .unwrap_or_else(|| {
                        if path == "." {
                            "body".to_string()
                        } else {
                            path
                        }
                    });
                let reason = message
                    .split(" at line ")
                    .next()
                    .unwrap_or(&message)
                    .to_string();
                ApiError::invalid_field(&field, reason)
            }
        }
    })
}

fn missing_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Login {
        email: String,
        remember: Option<bool>,
    }

    #[test]
    fn names_the_missing_or_mistyped_field() {
        let err = parse_json::<Login>(br#"{"remember": true}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
        assert_eq!(err.details["field"], "email");
        let err = parse_json::<Login>(br#"{"email": "a@b.co", "remember": "yes"}"#).unwrap_err();
        assert_eq!(err.details["field"], "remember");
        let err = parse_json::<Login>(br#"{"email": 5}"#).unwrap_err();
        assert_eq!(err.details["field"], "email");
    }

    #[test]
    fn malformed_and_empty_bodies_are_invalid_requests() {
        for body in [
            &b"{\"email\": "[..],
            b"not json",
            b"",
            b"  ",
            br#"{"email": "a@b.co"} trailing"#,
        ] {
            let err = parse_json::<Login>(body).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRequest, "{body:?}");
            assert_eq!(err.details["field"], "body", "{body:?}");
        }
        let err = parse_json::<Login>(b"[1,2]").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidRequest);
    }
}

#[cfg(test)]
mod flavor_tests {
    use super::Flavor;

    #[test]
    fn each_route_set_answers_in_its_own_envelope() {
        for path in ["/api/v1/auth/login", "/api/v1/account/positions", "/ws/v1"] {
            assert_eq!(Flavor::for_path(path), Flavor::Platform, "{path}");
        }
        for path in [
            "/",
            "/health",
            "/api/auth/login",
            "/api/status",
            "/api/positions",
            "/api/v1/start",
            "/api/v1/positions",
            "/api/v1/performance",
            "/nowhere",
        ] {
            assert_eq!(Flavor::for_path(path), Flavor::Detail, "{path}");
        }
        for path in [
            "/api/restart",
            "/api/positions/open",
            "/api/trades/export",
            "/api/v1/dashboard/metrics",
            "/api/kpi/current",
            "/api/alarms/active",
            "/api/dashboard/overview",
            "/api/health",
            "/trades",
        ] {
            assert_eq!(Flavor::for_path(path), Flavor::Companion, "{path}");
        }
        // Prefixes match whole segments only.
        assert_eq!(Flavor::for_path("/api/tradesx"), Flavor::Detail);
        assert_eq!(Flavor::for_path("/api/v1/positionsx"), Flavor::Platform);
    }
}
