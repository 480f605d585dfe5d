//! The safety routes the original single-page client calls (`/api/safety/*`): the status answers
//! everyone (more to a known caller); stopping and lifting need the caller's bearer and act on
//! the caller's own bot only. Errors are `{success: false, error}`.
//!
//! The original client polls the status without an `Authorization` header, so the companion
//! sign-in also leaves its access token in an HttpOnly cookie scoped to the status path: the
//! poll then describes the caller's own bot. The cookie is read by that read-only route only,
//! so it cannot be used to change anything.

use rocket::http::{Cookie, CookieJar, SameSite};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::{State, delete, get, post};
use serde::Deserialize;

use super::Json;
use crate::App;
use crate::api::envelope::OptionalBody;
use crate::auth::guards::Bearer;
use crate::auth::{AuthUser, Principal};
use crate::companion::safety::{self, SafetyStatus, StopAnswer};
use crate::error::ApiResult;

crate::api::handlers![status, emergency_stop, lift];

const STATUS_PATH: &str = "/api/safety/status";
const CALLER_COOKIE: &str = "tradehost_safety";

/// Leaves the access token of a companion sign-in for the status poll (see the module docs).
pub fn remember_caller(cookies: &CookieJar<'_>, access_token: &str, ttl: std::time::Duration) {
    let max_age = rocket::time::Duration::seconds(ttl.as_secs().min(i64::MAX as u64) as i64);
    cookies.add(
        Cookie::build((CALLER_COOKIE, access_token.to_string()))
            .path(STATUS_PATH)
            .http_only(true)
            .same_site(SameSite::Strict)
            .max_age(max_age),
    );
}

/// The caller of the status poll: the bearer's user, else the companion sign-in's cookie's;
/// nobody when neither names a live session.
struct Caller(Option<Principal>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for Caller {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        let Some(app) = req.rocket().state::<App>() else {
            return Outcome::Success(Caller(None));
        };
        let claims = match Bearer::of(req) {
            Bearer::Valid(claims) => Some(claims.clone()),
            Bearer::Invalid(_) => None,
            Bearer::Missing => req
                .cookies()
                .get(CALLER_COOKIE)
                .and_then(|cookie| app.jwt.verify(cookie.value()).ok()),
        };
        let principal = match claims {
            Some(claims) => app
                .sessions
                .principal(&app.db, &claims.sid, &claims.sub)
                .await
                .ok(),
            None => None,
        };
        Outcome::Success(Caller(principal))
    }
}

#[utoipa::path(
    tag = "companion-safety",
    operation_id = "safetyStatus",
    summary = "Safety status",
    description = "The platform's trading state for anyone; the caller's own (mode, emergency stop, credentials, whether trading is on) when the request carries a valid bearer or the HttpOnly `tradehost_safety` cookie that the companion sign-in (`POST /api/auth/login`, `/api/auth/register`) sets for this path only. The original client polls it every 5 s without a token; it shows `trading_allowed` as its trading toggle and disables the toggle when `ui_indicators.allow_toggle` is false (the kill switch or the caller's emergency stop).",
    responses(
        (status = 200, description = "OK", body = SafetyStatus)
    ),
)]
#[get("/api/safety/status")]
async fn status(app: &State<App>, caller: Caller) -> ApiResult<Json<SafetyStatus>> {
    safety::status(app, caller.0.as_ref()).await.map(Json)
}

/// The client sends `{"reason": "..."}`; other fields are ignored.
#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
#[schema(as = SafetyStopRequest)]
struct StopRequest {
    #[serde(default)]
    reason: Option<String>,
}

#[utoipa::path(
    tag = "companion-safety",
    operation_id = "safetyEmergencyStop",
    summary = "Emergency stop of the caller's bot",
    description = "Stops the caller's bot at once (positions stay open). Needs the caller's bearer: without one the answer is 401 `{success: false, error}`, since an unauthenticated stop would let anyone halt every user.",
    security(("bearerAuth" = [])),
    request_body(content = StopRequest, example = json!({"reason": "User activated emergency stop via UI"})),
    responses(
        (status = 200, description = "OK", body = StopAnswer)
    ),
)]
#[post("/api/safety/emergency-stop", data = "<body>")]
async fn emergency_stop(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<StopRequest>,
) -> ApiResult<Json<StopAnswer>> {
    let reason = body.0.and_then(|b| b.reason);
    safety::emergency_stop(app, &user.0, reason).await.map(Json)
}

#[utoipa::path(
    tag = "companion-safety",
    operation_id = "safetyLiftEmergencyStop",
    summary = "Lift the caller's emergency stop",
    description = "The bot becomes `stopped` and can be started again; without an active emergency stop nothing changes.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = StopAnswer)
    ),
)]
#[delete("/api/safety/emergency-stop")]
async fn lift(app: &State<App>, user: AuthUser) -> ApiResult<Json<StopAnswer>> {
    safety::lift(app, &user.0).await.map(Json)
}
