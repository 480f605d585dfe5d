//! The OpenAPI 3.1 document, generated rather than written: each operation comes from the
//! `#[utoipa::path]` attribute on its handler (method, path and path/query parameters read from
//! the Rocket route beneath it), each schema from the request or response type the handler
//! really parses or answers with, and each error answer from the error envelope itself. The
//! handler lists are those `routes()` mounts (`api::handlers!`), so a route cannot go
//! undocumented. Served at `GET /api/openapi.json`.

use std::sync::LazyLock;

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, ObjectBuilder, OpenApi, RefOr, Response, ResponseBuilder, Schema, Type,
};
use utoipa::{Modify, OpenApi as _, PartialSchema, ToSchema};

use crate::api::envelope::{Flavor, error_body};
use crate::error::{ApiError, ErrorCode};

/// What the generated attributes on the handlers name.
pub mod prelude {
    pub use super::{
        Companion401TokenExpiredOrTokenInvalid, Companion403Unauthorized,
        Companion429RateLimitExceeded, Companion500InternalError,
        Detail401TokenExpiredOrTokenInvalid, Detail429RateLimitExceeded, Detail500InternalError,
        Platform400InvalidBody, Platform400InvalidRequest,
        Platform400InvalidRequestOrUnsupportedBroker, Platform401TokenExpiredOrTokenInvalid,
        Platform403AccountDisabledOrAccountSuspended,
        Platform403AccountDisabledOrAccountSuspendedOrExceedsTierLimit,
        Platform403AccountDisabledOrAccountSuspendedOrUnauthorized, Platform404NotFound,
        Platform413PayloadTooLarge, Platform429RateLimitExceeded, Platform500InternalError,
        Platform502BrokerError, Platform502PluginError,
    };
    pub use crate::api::companion::DataEnvelope;
    pub use crate::api::envelope::{
        CompanionError, DetailError, Enveloped, PlatformError, ValidationError,
    };
}

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "tradehost API",
        description = "Self-hostable trading automation. One server, one set of users, tokens, bots, brokers and ledger, served through two families of routes:\n\n* **The platform API** under `/api/v1` (and the WebSocket at `/ws/v1`). Success: `{\"success\": true, \"data\": …, \"timestamp\": …}` (200, or 201 for register and broker connection). Error: `{\"success\": false, \"error\": {\"code\", \"message\", \"details\"}, \"timestamp\"}`.\n* **The companion route sets** A–F, kept for clients of the trading service tradehost replaces. Sets A and B (and every path outside `/api`) answer errors as `{\"detail\": \"…\", \"code\": \"…\"}`, validation errors as 422 `{\"detail\": [{\"type\", \"loc\", \"msg\"}]}`; sets C–F as `{\"success\": false, \"error\": \"…\", \"code\": \"…\"}`.\n\n**Authentication.** Sign in with `POST /api/v1/auth/login` (or `POST /api/auth/login`) and send `Authorization: Bearer <access_token>`; press **Authorize** to use it here. The same token works on every route set. Routes without a lock need no token.\n\n**Rate limits.** Per user by tier (free 10, basic 30, pro 100, enterprise 500 calls per minute), per client IP for anonymous calls. Every response carries `X-Request-Id` and `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`; over the limit the answer is 429 with `Retry-After`.\n\nTimestamps are ISO 8601 in UTC with a `Z`. Request bodies are JSON (at most 256 KiB; plugin uploads 48 MiB).\n",
        license(name = "AGPL-3.0-only", identifier = "AGPL-3.0-only"),
    ),
    servers((url = "/", description = "This server")),
    tags(
        (name = "auth", description = "Platform API: registration, sign-in, tokens and passwords."),
        (name = "account", description = "Platform API: balance, positions, trade history, performance and statistics."),
        (name = "trading", description = "Platform API: start, stop, pause and watch the trading bot."),
        (name = "config", description = "Platform API: settings, broker connections and the signal webhook key."),
        (name = "analytics", description = "Platform API: dashboard figures, trade breakdowns and exports."),
        (name = "market", description = "Platform API: candles for charts, from a broker plugin."),
        (name = "candles", description = "Platform API: historical candles for backtests (admins only)."),
        (name = "backtests", description = "Platform API: backtests of strategies over historical candles, with the engine a bot runs."),
        (name = "subscription", description = "Platform API: plans, the current subscription, upgrade, cancel and usage."),
        (name = "webhooks", description = "Platform API: inbound trading signals and payment-provider events (they authenticate themselves; no bearer token)."),
        (name = "admin", description = "Platform API, admins only: users, kill switch, metrics and audit log."),
        (name = "plugins", description = "Platform API, admins only: strategy, risk-rule and broker plugins (WebAssembly)."),
        (name = "websocket-info", description = "The live event stream at `/ws/v1` (WebSocket; described here, not callable from this page)."),
        (name = "companion-backend", description = "Companion set A, the unversioned backend under `/api`. Errors are `{detail, code}`; validation errors are 422 with FastAPI's `detail` list."),
        (name = "companion-gateway", description = "Companion set B, the mobile gateway. Errors are `{detail, code}`; validation errors are 422 with FastAPI's `detail` list."),
        (name = "companion-restart", description = "Companion set C: graceful restart of the trading engine (admins only)."),
        (name = "companion-ledger", description = "Companion set D: the trade ledger, its export and the `/trades` page. Errors are `{success: false, error, code}`."),
        (name = "companion-dashboard", description = "Companion set E: investor-style performance dashboard. Errors are `{success: false, error, code}`."),
        (name = "companion-kpi", description = "Companion set F: KPIs and risk alarms. Errors are `{success: false, error, code}`."),
        (name = "health", description = "Health checks and Prometheus metrics."),
        (name = "docs", description = "These docs and the OpenAPI document."),
        (name = "companion-safety", description = "The safety status and emergency stop the original single-page client calls.")
    ),
    components(
        schemas(
            prelude::PlatformError,
            prelude::DetailError,
            prelude::CompanionError,
            prelude::ValidationError
        ),
        responses(
            Companion401TokenExpiredOrTokenInvalid,
            Companion403Unauthorized,
            Companion429RateLimitExceeded,
            Companion500InternalError,
            Detail401TokenExpiredOrTokenInvalid,
            Detail429RateLimitExceeded,
            Detail500InternalError,
            Platform400InvalidBody,
            Platform400InvalidRequest,
            Platform400InvalidRequestOrUnsupportedBroker,
            Platform401TokenExpiredOrTokenInvalid,
            Platform403AccountDisabledOrAccountSuspended,
            Platform403AccountDisabledOrAccountSuspendedOrExceedsTierLimit,
            Platform403AccountDisabledOrAccountSuspendedOrUnauthorized,
            Platform404NotFound,
            Platform413PayloadTooLarge,
            Platform429RateLimitExceeded,
            Platform500InternalError,
            Platform502PluginError,
            Platform502BrokerError,
            Companion400InvalidRequest,
            Companion413PayloadTooLarge,
            Detail413PayloadTooLarge,
            Detail422Validation
        )
    )
)]
struct Base;

/// The document, built once: the base above with every mounted route set nested at its mount
/// point (the same bases `api::mount` uses).
pub fn document() -> &'static OpenApi {
    static DOCUMENT: LazyLock<OpenApi> = LazyLock::new(|| {
        let mut doc = Base::openapi()
            .nest_with_path_composer(super::V1_BASE, super::v1::openapi(), join)
            .nest_with_path_composer(super::WS_BASE, super::ws::openapi(), join);
        for api in super::root_openapi() {
            doc.merge(api);
        }
        doc.info.version = crate::VERSION.to_string();
        Conventions.modify(&mut doc);
        doc
    });
    &DOCUMENT
}

/// A route's path under its mount point, as Rocket joins them (`/ws/v1` + `/` is `/ws/v1`).
fn join(base: &str, path: &str) -> String {
    if path == "/" {
        base.to_string()
    } else {
        format!("{base}{path}")
    }
}

/// The document as served.
pub fn json() -> &'static str {
    static JSON: LazyLock<String> = LazyLock::new(|| {
        document()
            .to_pretty_json()
            .expect("the OpenAPI document serialises")
    });
    &JSON
}

/// What every operation shares: the bearer scheme, the request id on every answer, the
/// rate-limit headers on every success, `Retry-After` on 429 and `WWW-Authenticate` on the
/// companion sets' 401.
struct Conventions;

impl Modify for Conventions {
    fn modify(&self, doc: &mut OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(
                Http::builder()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        for (name, description, integer) in HEADERS {
            let schema = ObjectBuilder::new().schema_type(if *integer {
                Type::Integer
            } else {
                Type::String
            });
            components.headers.insert(
                name.to_string(),
                RefOr::T(
                    HeaderBuilder::new()
                        .schema(Some(schema))
                        .description(Some(*description))
                        .build(),
                ),
            );
        }
        let header = |name: &str| {
            RefOr::Ref(utoipa::openapi::Ref::new(format!(
                "#/components/headers/{name}"
            )))
        };
        for (path, item) in doc.paths.paths.iter_mut() {
            let flavor = Flavor::for_path(path);
            for operation in operations(item) {
                standard_answers(flavor, operation);
                for (status, response) in operation.responses.responses.iter_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    response
                        .headers
                        .entry("X-Request-Id".into())
                        .or_insert_with(|| header("X-Request-Id"));
                    if response
                        .content
                        .keys()
                        .any(|kind| kind == "text/csv" || kind == "application/pdf")
                    {
                        response
                            .headers
                            .entry("Content-Disposition".into())
                            .or_insert_with(|| header("Content-Disposition"));
                    }
                    if status.starts_with('2') {
                        for name in [
                            "X-RateLimit-Limit",
                            "X-RateLimit-Remaining",
                            "X-RateLimit-Reset",
                        ] {
                            response
                                .headers
                                .entry(name.into())
                                .or_insert_with(|| header(name));
                        }
                    }
                }
            }
        }
        for (name, response) in components.responses.iter_mut() {
            let RefOr::T(response) = response else {
                continue;
            };
            response
                .headers
                .insert("X-Request-Id".into(), header("X-Request-Id"));
            if name.contains("429") {
                response
                    .headers
                    .insert("Retry-After".into(), header("Retry-After"));
            }
            if name.starts_with("Detail401") || name.starts_with("Companion401") {
                response
                    .headers
                    .insert("WWW-Authenticate".into(), header("WWW-Authenticate"));
            }
        }
    }
}

/// The answers every operation can give, which its attribute need not repeat: the rate limit
/// (429) and an internal error (500); for an operation that needs a token, a missing or bad one
/// (401) and, on the platform API, a suspended or disabled account (403); the refusal of its
/// query (a parameter given twice is refused, never silently resolved) and, with a body, of that
/// body (bad JSON, a field missing or mistyped, over the size limit). They come from the guards
/// and catchers, in the envelope of the operation's route set; an attribute that lists one of
/// these statuses itself keeps its own.
fn standard_answers(flavor: Flavor, operation: &mut Operation) {
    // The components are named `<set><status><what>` (see `error_responses!` below).
    let set = match flavor {
        Flavor::Platform => "Platform",
        Flavor::Companion => "Companion",
        Flavor::Detail => "Detail",
    };
    let invalid = match flavor {
        Flavor::Detail => ("422", "Detail422Validation".to_string()),
        _ => ("400", format!("{set}400InvalidRequest")),
    };
    let secured = operation
        .security
        .as_ref()
        .is_some_and(|requirements| !requirements.is_empty());
    let with_body = operation.request_body.is_some();
    let responses = &mut operation.responses.responses;
    let mut add = |status: &str, name: &str| {
        responses.entry(status.into()).or_insert_with(|| {
            RefOr::Ref(utoipa::openapi::Ref::new(format!(
                "#/components/responses/{name}"
            )))
        });
    };
    add("429", &format!("{set}429RateLimitExceeded"));
    add("500", &format!("{set}500InternalError"));
    add(invalid.0, &invalid.1);
    if secured {
        add("401", &format!("{set}401TokenExpiredOrTokenInvalid"));
        if flavor == Flavor::Platform {
            add("403", "Platform403AccountDisabledOrAccountSuspended");
        }
    }
    if with_body {
        add("413", &format!("{set}413PayloadTooLarge"));
    }
}

const HEADERS: &[(&str, &str, bool)] = &[
    (
        "X-Request-Id",
        "The request's id, to find it in the server log.",
        false,
    ),
    (
        "X-RateLimit-Limit",
        "Requests allowed in the current one-minute window.",
        true,
    ),
    (
        "X-RateLimit-Remaining",
        "Requests left in the window.",
        true,
    ),
    (
        "X-RateLimit-Reset",
        "Unix time (seconds) at which the window ends.",
        true,
    ),
    ("Retry-After", "Seconds to wait before trying again.", true),
    (
        "WWW-Authenticate",
        "`Bearer`, on token errors outside the platform API.",
        false,
    ),
    (
        "Content-Disposition",
        "`attachment; filename=\"…\"`.",
        false,
    ),
];

fn operations(item: &mut utoipa::openapi::PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
        item.head.as_mut(),
        item.options.as_mut(),
        item.trace.as_mut(),
    ]
    .into_iter()
    .flatten()
}

impl PartialSchema for ErrorCode {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(ErrorCode::ALL.iter().map(|code| code.as_str())))
            .description(Some(
                "Machine-readable error code (its HTTP status is fixed; see docs/api.md).",
            ))
            .into()
    }
}

impl ToSchema for ErrorCode {}

/// An error answer of one route set: its envelope's schema and, for each code, the body the
/// server really sends for it.
fn error_response(flavor: Flavor, description: &str, codes: &[ErrorCode]) -> Response {
    let examples: Vec<_> = codes
        .iter()
        .map(|code| error_body(flavor, &ApiError::code(*code)))
        .collect();
    let schema = match flavor {
        Flavor::Platform => "PlatformError",
        // A validation error of sets A and B is a 422 in FastAPI's list form.
        Flavor::Detail if examples.iter().any(|(status, _)| status.code == 422) => {
            "ValidationError"
        }
        Flavor::Detail => "DetailError",
        Flavor::Companion => "CompanionError",
    };
    let examples = codes.iter().zip(examples).map(|(code, (_, body))| {
        (
            code.as_str(),
            utoipa::openapi::example::ExampleBuilder::new()
                .summary(code.default_message())
                .value(Some(body))
                .build(),
        )
    });
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(utoipa::openapi::Ref::from_schema_name(schema)))
                .examples_from_iter(examples)
                .build(),
        )
        .build()
}

macro_rules! error_responses {
    ($($name:ident: $flavor:ident, $description:literal, [$($code:ident),*];)*) => {
        $(
            #[doc = $description]
            pub struct $name;

            impl<'r> utoipa::ToResponse<'r> for $name {
                fn response() -> (&'r str, RefOr<Response>) {
                    (
                        stringify!($name),
                        RefOr::T(error_response(
                            Flavor::$flavor,
                            $description,
                            &[$(ErrorCode::$code),*],
                        )),
                    )
                }
            }
        )*
    };
}

error_responses! {
    Companion401TokenExpiredOrTokenInvalid: Companion, "Not authenticated: Not authenticated; Invalid or expired token", [TokenExpired, TokenInvalid];
    Companion403Unauthorized: Companion, "Forbidden: You are not allowed to do this", [Unauthorized];
    Companion429RateLimitExceeded: Companion, "Too many requests: Rate limit of 30 requests per minute exceeded; retry later", [RateLimitExceeded];
    Companion500InternalError: Companion, "Internal error: Internal error", [InternalError];
    Detail401TokenExpiredOrTokenInvalid: Detail, "Not authenticated: Not authenticated; Invalid or expired token", [TokenExpired, TokenInvalid];
    Detail429RateLimitExceeded: Detail, "Too many requests: Rate limit of 30 requests per minute exceeded; retry later", [RateLimitExceeded];
    Detail500InternalError: Detail, "Internal error: Internal error", [InternalError];
    Platform400InvalidBody: Platform, "Bad request: INVALID_REQUEST", [InvalidRequest];
    Platform400InvalidRequest: Platform, "Bad request: INVALID_REQUEST", [InvalidRequest];
    Platform400InvalidRequestOrUnsupportedBroker: Platform, "Bad request: INVALID_REQUEST, UNSUPPORTED_BROKER", [InvalidRequest, UnsupportedBroker];
    Platform401TokenExpiredOrTokenInvalid: Platform, "Not authenticated: TOKEN_INVALID, TOKEN_EXPIRED", [TokenExpired, TokenInvalid];
    Platform403AccountDisabledOrAccountSuspended: Platform, "Forbidden: ACCOUNT_SUSPENDED, ACCOUNT_DISABLED", [AccountDisabled, AccountSuspended];
    Platform403AccountDisabledOrAccountSuspendedOrExceedsTierLimit: Platform, "Forbidden: ACCOUNT_SUSPENDED, ACCOUNT_DISABLED, EXCEEDS_TIER_LIMIT", [AccountDisabled, AccountSuspended, ExceedsTierLimit];
    Platform403AccountDisabledOrAccountSuspendedOrUnauthorized: Platform, "Forbidden: ACCOUNT_SUSPENDED, ACCOUNT_DISABLED, UNAUTHORIZED", [AccountDisabled, AccountSuspended, Unauthorized];
    Platform404NotFound: Platform, "Not found: NOT_FOUND", [NotFound];
    Platform413PayloadTooLarge: Platform, "Payload too large: PAYLOAD_TOO_LARGE", [PayloadTooLarge];
    Platform429RateLimitExceeded: Platform, "Too many requests: RATE_LIMIT_EXCEEDED", [RateLimitExceeded];
    Platform500InternalError: Platform, "Internal error: INTERNAL_ERROR", [InternalError];
    Platform502PluginError: Platform, "Bad gateway: PLUGIN_ERROR", [PluginError];
    Platform502BrokerError: Platform, "Bad gateway: BROKER_ERROR", [BrokerError];
    Companion400InvalidRequest: Companion, "Bad request: a query parameter or the body is not valid", [InvalidRequest];
    Companion413PayloadTooLarge: Companion, "Payload too large", [PayloadTooLarge];
    Detail413PayloadTooLarge: Detail, "Payload too large", [PayloadTooLarge];
    Detail422Validation: Detail, "Validation error: a query parameter or a body field is missing or not valid", [InvalidRequest];
}
