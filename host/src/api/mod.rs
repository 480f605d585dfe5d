//! HTTP API. Each module exposes `routes()` (and, from the same list of handlers, `openapi()`);
//! everything is mounted here and only here.

/// `routes()` and `openapi()` of an API module from one list of handlers, so what is mounted is
/// what is documented. Handlers after `;` are mounted but are not API operations (static files).
macro_rules! handlers {
    ($($handler:ident),* $(,)? $(; $($plain:ident),* $(,)?)?) => {
        pub fn routes() -> Vec<rocket::Route> {
            rocket::routes![$($handler,)* $($($plain),*)?]
        }

        pub fn openapi() -> utoipa::openapi::OpenApi {
            #[derive(utoipa::OpenApi)]
            #[openapi(paths($($handler),*))]
            struct Doc;
            <Doc as utoipa::OpenApi>::openapi()
        }
    };
}
pub(crate) use handlers;

/// `routes()` and `openapi()` of a family of API modules.
macro_rules! route_sets {
    ($($module:ident),* $(,)?) => {
        pub fn routes() -> Vec<rocket::Route> {
            [$($module::routes()),*].concat()
        }

        pub fn openapi() -> utoipa::openapi::OpenApi {
            let mut doc = utoipa::openapi::OpenApi::default();
            $(doc.merge($module::openapi());)*
            doc
        }
    };
}
pub(crate) use route_sets;

pub mod companion;
pub mod docs;
pub mod envelope;
pub mod metrics;
pub mod openapi;
pub mod pages;
pub mod query;
pub mod request_id;
pub mod v1;
pub mod web;
pub mod ws;

use rocket::http::Status;
use rocket::{Build, Request, Rocket, catch, catchers, get, routes};

use crate::error::{ApiError, ErrorCode};
use crate::ratelimit::RequestDecision;
use envelope::guard_error;

/// Where the platform API and its WebSocket are mounted.
pub const V1_BASE: &str = "/api/v1";
pub const WS_BASE: &str = "/ws/v1";

pub fn mount(rocket: Rocket<Build>) -> Rocket<Build> {
    rocket
        .mount(V1_BASE, v1::routes())
        .mount(WS_BASE, ws::routes())
        .mount("/", routes![rate_limited, refused])
        .mount("/", metrics::routes())
        .mount("/", docs::routes())
        .mount("/", pages::routes())
        .mount("/", companion::routes())
        .register("/", catchers![catch_all])
}

/// The documentation of the route sets mounted at `/`, as `mount` mounts them.
fn root_openapi() -> [utoipa::openapi::OpenApi; 4] {
    [
        metrics::openapi(),
        docs::openapi(),
        pages::openapi(),
        companion::openapi(),
    ]
}

/// A server on an extra port for the companion sets bound to their historical ports: the
/// dashboard set (E) on one, restart, ledger, KPI and the `/trades` page (C, D, F) on another.
pub fn mount_extra_port(rocket: Rocket<Build>, dashboard: bool) -> Rocket<Build> {
    let routes = if dashboard {
        companion::dashboard_port_routes()
    } else {
        [companion::companion_port_routes(), pages::routes()].concat()
    };
    rocket
        .mount("/", routes)
        .mount("/", routes![rate_limited, refused])
        .register("/", catchers![catch_all])
}

/// Where the rate-limit fairing sends a request over its limit.
#[get("/__tradehost/rate-limited")]
fn rate_limited(decision: RequestDecision) -> ApiError {
    match decision {
        RequestDecision(Some(decision)) if !decision.allowed => ApiError::new(
            ErrorCode::RateLimitExceeded,
            format!(
                "Rate limit of {} requests per minute exceeded; retry later",
                decision.limit
            ),
        )
        .detail("limit", decision.limit)
        .detail("reset_at", decision.reset_at)
        .retry_after(decision.retry_after_secs()),
        _ => ApiError::code(ErrorCode::NotFound),
    }
}

/// Where a request refused before routing (a malformed query string) is sent.
#[get("/__tradehost/refused")]
fn refused(refusal: query::RefusedBeforeRouting) -> ApiError {
    refusal
        .0
        .unwrap_or_else(|| ApiError::code(ErrorCode::NotFound))
}

/// Every error Rocket produces itself (unknown route, failed guard, bad body, panic) as JSON in
/// the envelope of the route set the path belongs to (see `Flavor`).
#[catch(default)]
fn catch_all(status: Status, req: &Request<'_>) -> CaughtError {
    if let Some(err) = guard_error(req) {
        return CaughtError::from(err);
    }
    if status.code == 404 {
        let allowed = allowed_methods(req);
        if !allowed.is_empty() {
            return CaughtError {
                error: ApiError::new(
                    ErrorCode::MethodNotAllowed,
                    format!(
                        "{} is not allowed on {}; use {}",
                        req.method(),
                        req.uri().path(),
                        allowed.join(", ")
                    ),
                ),
                allow: Some(allowed.join(", ")),
            };
        }
    }
    CaughtError::from(match status.code {
        404 => ApiError::new(
            ErrorCode::NotFound,
            format!("No route for {} {}", req.method(), req.uri().path()),
        ),
        400 | 422 => ApiError::code(ErrorCode::InvalidRequest),
        401 => ApiError::code(ErrorCode::TokenInvalid),
        403 => ApiError::code(ErrorCode::Unauthorized),
        413 => ApiError::code(ErrorCode::PayloadTooLarge),
        429 => ApiError::code(ErrorCode::RateLimitExceeded),
        503 => ApiError::code(ErrorCode::ServiceUnavailable),
        code => ApiError::internal(format!(
            "unhandled status {code} for {} {}",
            req.method(),
            req.uri()
        )),
    })
}

/// A caught error, with the `Allow` header a 405 carries.
struct CaughtError {
    error: ApiError,
    allow: Option<String>,
}

impl From<ApiError> for CaughtError {
    fn from(error: ApiError) -> Self {
        Self { error, allow: None }
    }
}

impl<'r> rocket::response::Responder<'r, 'static> for CaughtError {
    fn respond_to(self, req: &'r Request<'_>) -> rocket::response::Result<'static> {
        let mut response = self.error.respond_to(req)?;
        if let Some(allow) = self.allow {
            response.set_header(rocket::http::Header::new("Allow", allow));
        }
        Ok(response)
    }
}

/// The methods other routes serve this path with (a non-empty list makes the answer 405, not
/// 404), sorted and without repeats.
fn allowed_methods(req: &Request<'_>) -> Vec<&'static str> {
    let path = req.uri().path();
    let segments: Vec<&str> = path.segments().collect();
    let mut methods: Vec<&'static str> = req
        .rocket()
        .routes()
        .filter(|route| route.method != req.method())
        .filter(|route| template_matches(route.uri.path(), &segments))
        .map(|route| route.method.as_str())
        .collect();
    methods.sort_unstable();
    methods.dedup();
    methods
}

fn template_matches(template: &str, segments: &[&str]) -> bool {
    let parts: Vec<&str> = template.split('/').filter(|s| !s.is_empty()).collect();
    let mut i = 0;
    for part in &parts {
        if part.starts_with('<') && part.ends_with("..>") {
            return true;
        }
        match segments.get(i) {
            Some(segment) if part.starts_with('<') || part == segment => i += 1,
            _ => return false,
        }
    }
    i == segments.len()
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn route_templates() {
        assert!(template_matches(
            "/api/v1/auth/login",
            &["api", "v1", "auth", "login"]
        ));
        assert!(!template_matches(
            "/api/v1/auth/login",
            &["api", "v1", "auth"]
        ));
        assert!(template_matches(
            "/api/v1/positions/<id>",
            &["api", "v1", "positions", "p1"]
        ));
        assert!(template_matches("/files/<path..>", &["files", "a", "b"]));
        assert!(!template_matches(
            "/api/v1/auth/login",
            &["api", "v1", "auth", "login", "x"]
        ));
    }
}
