//! Request guards: the bearer token, the signed-in user, the admin, and the client's address.

use rocket::request::{FromRequest, Outcome, Request};

use super::jwt::{Claims, TokenError};
use super::sessions::Principal;
use crate::App;
use crate::api::envelope::fail_with;
use crate::error::{ApiError, ErrorCode};

/// The verified claims of the request's bearer token, computed once per request.
#[derive(Debug, Clone)]
pub enum Bearer {
    Missing,
    Invalid(TokenError),
    Valid(Claims),
}

impl Bearer {
    pub fn of<'r>(req: &'r Request<'_>) -> &'r Bearer {
        req.local_cache(|| {
            let Some(app) = req.rocket().state::<App>() else {
                return Bearer::Missing;
            };
            match bearer_token(req) {
                None => Bearer::Missing,
                Some(token) => match app.jwt.verify(token) {
                    Ok(claims) => Bearer::Valid(claims),
                    Err(err) => Bearer::Invalid(err),
                },
            }
        })
    }
}

fn bearer_token<'r>(req: &'r Request<'_>) -> Option<&'r str> {
    parse_bearer(req.headers().get_one("Authorization")?)
}

/// The token of an `Authorization`-style value `Bearer <token>`.
fn parse_bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

fn missing_token() -> ApiError {
    ApiError::new(ErrorCode::TokenInvalid, "Missing bearer token").detail("token", "missing")
}

fn token_error(err: TokenError) -> ApiError {
    match err {
        TokenError::Expired => ApiError::code(ErrorCode::TokenExpired),
        TokenError::Invalid => ApiError::code(ErrorCode::TokenInvalid),
    }
}

/// The live user behind a `Bearer <jwt>` value, checked exactly as [`AuthUser`] checks a request:
/// for connections that authenticate after they are established (the WebSocket stream).
pub async fn authenticate(app: &App, authorization: &str) -> Result<Principal, ApiError> {
    let token = parse_bearer(authorization).ok_or_else(missing_token)?;
    let claims = app.jwt.verify(token).map_err(token_error)?;
    app.sessions
        .principal(&app.db, &claims.sid, &claims.sub)
        .await
}

/// The session check of the request's bearer, made once per request: the rate limiter (which
/// needs the user's tier) and the route's guard share it.
pub async fn session_check<'r>(req: &'r Request<'_>) -> &'r Result<Principal, ApiError> {
    struct SessionCheck(Result<Principal, ApiError>);
    let check = req.local_cache_async(async {
        let claims = match Bearer::of(req) {
            Bearer::Valid(claims) => claims,
            Bearer::Missing => return SessionCheck(Err(missing_token())),
            Bearer::Invalid(err) => return SessionCheck(Err(token_error(*err))),
        };
        let Some(app) = req.rocket().state::<App>() else {
            return SessionCheck(Err(ApiError::internal("application state missing")));
        };
        SessionCheck(
            app.sessions
                .principal(&app.db, &claims.sid, &claims.sub)
                .await,
        )
    });
    &check.await.0
}

/// A signed-in user with a live session.
#[derive(Debug, Clone)]
pub struct AuthUser(pub Principal);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for AuthUser {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        match session_check(req).await {
            Ok(principal) => Outcome::Success(AuthUser(principal.clone())),
            Err(err) => fail_with(req, err.clone()),
        }
    }
}

/// A signed-in user with the admin role; anyone else gets `UNAUTHORIZED` (403).
#[derive(Debug, Clone)]
pub struct AdminUser(pub Principal);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for AdminUser {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ApiError> {
        match AuthUser::from_request(req).await {
            Outcome::Success(AuthUser(principal)) if principal.is_admin() => {
                Outcome::Success(AdminUser(principal))
            }
            Outcome::Success(_) => fail_with(
                req,
                ApiError::new(
                    ErrorCode::Unauthorized,
                    "This route requires the admin role",
                ),
            ),
            Outcome::Error(err) => Outcome::Error(err),
            Outcome::Forward(status) => Outcome::Forward(status),
        }
    }
}

/// The client's address and user agent, for the audit log and per-IP limits.
#[derive(Debug, Clone, Default)]
pub struct ClientMeta {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

impl ClientMeta {
    pub fn of(req: &Request<'_>) -> Self {
        Self {
            ip: req.client_ip().map(|ip| ip.to_string()),
            user_agent: req
                .headers()
                .get_one("User-Agent")
                .map(|ua| ua.chars().take(512).collect()),
        }
    }
}

#[rocket::async_trait]
impl<'r> FromRequest<'r> for ClientMeta {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        Outcome::Success(ClientMeta::of(req))
    }
}
