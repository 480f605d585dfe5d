//! The one error type of the API. Each error has a code (with its HTTP status), a message the user
//! sees, structured details, and optionally a log message that only the server log gets.

use std::io::Cursor;

use rocket::http::{ContentType, Header, Status};
use rocket::request::Request;
use rocket::response::{self, Responder, Response};
use serde_json::{Map, Value, json};

use crate::api::envelope::{Flavor, error_body};
use crate::api::request_id::RequestId;

macro_rules! error_codes {
    ($($variant:ident = $code:literal, $status:literal, $message:literal;)*) => {
        /// Every error code of the API with its HTTP status (platform-api.md and decisions.md).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $($variant),* }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $code),* }
            }

            pub fn status(self) -> Status {
                match self { $(ErrorCode::$variant => Status::new($status)),* }
            }

            /// The message used when the code says all there is to say.
            pub fn default_message(self) -> &'static str {
                match self { $(ErrorCode::$variant => $message),* }
            }
        }
    };
}

impl serde::Serialize for ErrorCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

error_codes! {
    InvalidCredentials = "INVALID_CREDENTIALS", 401, "Wrong e-mail or password";
    TokenExpired = "TOKEN_EXPIRED", 401, "The token has expired";
    TokenInvalid = "TOKEN_INVALID", 401, "The token is missing, malformed or revoked";
    Unauthorized = "UNAUTHORIZED", 403, "You are not allowed to do this";
    EmailAlreadyExists = "EMAIL_ALREADY_EXISTS", 409, "This e-mail address is already registered";
    AlreadyRunning = "ALREADY_RUNNING", 409, "The bot is already running";
    NotRunning = "NOT_RUNNING", 400, "The bot is not running";
    NoBrokerConfigured = "NO_BROKER_CONFIGURED", 400, "No broker is configured";
    SubscriptionRequired = "SUBSCRIPTION_REQUIRED", 402, "Live trading needs a paid subscription";
    KillSwitchActive = "KILL_SWITCH_ACTIVE", 403, "Trading is blocked by the kill switch";
    PositionNotFound = "POSITION_NOT_FOUND", 404, "Position not found";
    InvalidSetting = "INVALID_SETTING", 400, "Setting name not recognised";
    ExceedsTierLimit = "EXCEEDS_TIER_LIMIT", 403, "The value is above your subscription tier's limit";
    InvalidApiKey = "INVALID_API_KEY", 400, "The broker rejected the API key";
    BrokerAlreadyConnected = "BROKER_ALREADY_CONNECTED", 409, "This broker is already connected";
    InternalError = "INTERNAL_ERROR", 500, "Internal error";
    DatabaseError = "DATABASE_ERROR", 500, "A database operation failed";
    BrokerError = "BROKER_ERROR", 502, "The broker returned an error";
    ServiceUnavailable = "SERVICE_UNAVAILABLE", 503, "The service is temporarily unavailable";
    InvalidEmail = "INVALID_EMAIL", 400, "The e-mail address is not valid";
    WeakPassword = "WEAK_PASSWORD", 400, "The password is too weak";
    TermsNotAccepted = "TERMS_NOT_ACCEPTED", 400, "The terms of service must be accepted";
    AccountDisabled = "ACCOUNT_DISABLED", 403, "This account is disabled";
    AccountSuspended = "ACCOUNT_SUSPENDED", 403, "This account is suspended";
    InvalidRiskLevel = "INVALID_RISK_LEVEL", 400, "Risk level must be low, medium or high";
    UnsupportedBroker = "UNSUPPORTED_BROKER", 400, "This broker is not supported";
    InvalidRequest = "INVALID_REQUEST", 400, "The request is not valid";
    NotFound = "NOT_FOUND", 404, "Not found";
    MethodNotAllowed = "METHOD_NOT_ALLOWED", 405, "Method not allowed on this path";
    RateLimitExceeded = "RATE_LIMIT_EXCEEDED", 429, "Too many requests";
    PayloadTooLarge = "PAYLOAD_TOO_LARGE", 413, "The request body is too large";
    BrokerInUse = "BROKER_IN_USE", 409, "The bot is running on this broker";
    InvalidSignature = "INVALID_SIGNATURE", 401, "The signature is missing or invalid";
    PluginError = "PLUGIN_ERROR", 502, "A plugin failed";
    ReconciliationRequired = "RECONCILIATION_REQUIRED", 409, "The books differ from the broker; resolve the differences first";
    PaymentFailed = "PAYMENT_FAILED", 402, "The payment was declined";
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    /// What the user reads.
    pub message: String,
    pub details: Map<String, Value>,
    /// What only the log gets (internal errors).
    pub log: Option<String>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
    /// An HTTP status other than the code's, where a companion route set's clients expect one.
    pub status: Option<Status>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Map::new(),
            log: None,
            retry_after: None,
            status: None,
        }
    }

    pub fn code(code: ErrorCode) -> Self {
        Self::new(code, code.default_message())
    }

    pub fn detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    /// Answers with `status` instead of the code's own (the companion sets' historical statuses).
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(Status::new(status));
        self
    }

    /// The same error with the message the clients of a companion set expect.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// An invalid field: the message and `details.field` name it.
    pub fn invalid_field(field: &str, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Self::new(
            ErrorCode::InvalidRequest,
            format!("Invalid field '{field}': {reason}"),
        )
        .detail("field", field)
        .detail("reason", reason)
    }

    /// An internal failure: the user sees only the code and request id; the log sees `log`.
    pub fn internal(log: impl Into<String>) -> Self {
        Self {
            log: Some(log.into()),
            ..Self::code(ErrorCode::InternalError)
        }
    }

    /// An error of the server itself, whose cause must not leak (500, 503). A broker's or
    /// plugin's failure (502) is not one: what the user can act on stays in its details.
    pub fn is_internal(&self) -> bool {
        self.code.status().code >= 500 && self.code.status().code != 502
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<crate::store::writer::WriteError> for ApiError {
    fn from(err: crate::store::writer::WriteError) -> Self {
        match err {
            crate::store::writer::WriteError::Database(err) => err.into(),
            crate::store::writer::WriteError::LeaseLost => Self {
                log: Some("the user's lease moved to another instance during a write".into()),
                ..Self::new(
                    ErrorCode::ServiceUnavailable,
                    "The bot moved to another server while this was done; nothing was changed. Try again.",
                )
            },
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        let code = match &err {
            sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed => ErrorCode::ServiceUnavailable,
            _ => ErrorCode::DatabaseError,
        };
        Self {
            log: Some(format!("database: {err}")),
            ..Self::code(code)
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(err: anyhow::Error) -> Self {
        match err.downcast::<ApiError>() {
            Ok(api) => api,
            Err(err) => Self::internal(format!("{err:#}")),
        }
    }
}

impl<'r> Responder<'r, 'static> for ApiError {
    fn respond_to(mut self, req: &'r Request<'_>) -> response::Result<'static> {
        let request_id = RequestId::of(req);
        if self.is_internal() {
            tracing::error!(
                request_id = %request_id,
                method = %req.method(),
                path = %req.uri().path(),
                code = self.code.as_str(),
                "{}",
                self.log.as_deref().unwrap_or(&self.message)
            );
            // Internals never leak: only the request id, to find the log line.
            self.details = Map::new();
            self.details
                .insert("request_id".into(), json!(request_id.to_string()));
        } else {
            if let Some(log) = &self.log {
                tracing::debug!(request_id = %request_id, code = self.code.as_str(), "{log}");
            }
            if self.code.status().code >= 500 {
                tracing::warn!(request_id = %request_id, code = self.code.as_str(), "{}", self.message);
                self.details
                    .insert("request_id".into(), json!(request_id.to_string()));
            }
        }
        let flavor = Flavor::of(req);
        let (status, body) = error_body(flavor, &self);
        let body = body.to_string();
        let mut response = Response::build();
        response
            .status(self.status.unwrap_or(status))
            .header(ContentType::JSON)
            .sized_body(body.len(), Cursor::new(body));
        if flavor != Flavor::Platform
            && matches!(self.code, ErrorCode::TokenInvalid | ErrorCode::TokenExpired)
        {
            response.header(Header::new("WWW-Authenticate", "Bearer"));
        }
        if let Some(seconds) = self.retry_after {
            response.header(Header::new("Retry-After", seconds.to_string()));
        }
        response.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_statuses_follow_the_spec() {
        let expect = [
            ("INVALID_CREDENTIALS", 401),
            ("TOKEN_EXPIRED", 401),
            ("TOKEN_INVALID", 401),
            ("UNAUTHORIZED", 403),
            ("EMAIL_ALREADY_EXISTS", 409),
            ("ALREADY_RUNNING", 409),
            ("NOT_RUNNING", 400),
            ("NO_BROKER_CONFIGURED", 400),
            ("SUBSCRIPTION_REQUIRED", 402),
            ("KILL_SWITCH_ACTIVE", 403),
            ("POSITION_NOT_FOUND", 404),
            ("INVALID_SETTING", 400),
            ("EXCEEDS_TIER_LIMIT", 403),
            ("INVALID_API_KEY", 400),
            ("BROKER_ALREADY_CONNECTED", 409),
            ("INTERNAL_ERROR", 500),
            ("DATABASE_ERROR", 500),
            ("BROKER_ERROR", 502),
            ("SERVICE_UNAVAILABLE", 503),
            ("INVALID_EMAIL", 400),
            ("WEAK_PASSWORD", 400),
            ("TERMS_NOT_ACCEPTED", 400),
            ("ACCOUNT_DISABLED", 403),
            ("ACCOUNT_SUSPENDED", 403),
            ("INVALID_RISK_LEVEL", 400),
            ("UNSUPPORTED_BROKER", 400),
            ("INVALID_REQUEST", 400),
            ("NOT_FOUND", 404),
            ("METHOD_NOT_ALLOWED", 405),
            ("RATE_LIMIT_EXCEEDED", 429),
            ("PAYLOAD_TOO_LARGE", 413),
            ("BROKER_IN_USE", 409),
            ("INVALID_SIGNATURE", 401),
            ("PLUGIN_ERROR", 502),
            ("RECONCILIATION_REQUIRED", 409),
            ("PAYMENT_FAILED", 402),
        ];
        assert_eq!(ErrorCode::ALL.len(), expect.len());
        for (code, (name, status)) in ErrorCode::ALL.iter().zip(expect) {
            assert_eq!(code.as_str(), name);
            assert_eq!(code.status().code, status, "{name}");
        }
    }

    #[test]
    fn database_errors_keep_their_cause_out_of_the_message() {
        let err = ApiError::from(sqlx::Error::RowNotFound);
        assert_eq!(err.code, ErrorCode::DatabaseError);
        assert!(!err.message.contains("row"));
        assert!(err.log.unwrap().contains("no rows"));
    }
}
