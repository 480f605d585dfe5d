//! The safety routes the original single-page client calls (`/api/safety/*`): the status answers
//! everyone (more to a signed-in caller); stopping and lifting need the caller's bearer and act
//! on the caller's own bot only. Errors are `{success: false, error}`.

use rocket::{Route, State, delete, get, post, routes};
use serde::Deserialize;

use super::Json;
use crate::App;
use crate::api::envelope::OptionalBody;
use crate::auth::AuthUser;
use crate::auth::guards::MaybeUser;
use crate::companion::safety::{self, SafetyStatus, StopAnswer};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![status, emergency_stop, lift]
}

#[get("/api/safety/status")]
async fn status(app: &State<App>, caller: MaybeUser) -> ApiResult<Json<SafetyStatus>> {
    safety::status(app, caller.0.as_ref()).await.map(Json)
}

/// The client sends `{"reason": "..."}`; other fields are ignored.
#[derive(Debug, Default, Deserialize)]
struct StopRequest {
    #[serde(default)]
    reason: Option<String>,
}

#[post("/api/safety/emergency-stop", data = "<body>")]
async fn emergency_stop(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<StopRequest>,
) -> ApiResult<Json<StopAnswer>> {
    let reason = body.0.and_then(|b| b.reason);
    safety::emergency_stop(app, &user.0, reason).await.map(Json)
}

#[delete("/api/safety/emergency-stop")]
async fn lift(app: &State<App>, user: AuthUser) -> ApiResult<Json<StopAnswer>> {
    safety::lift(app, &user.0).await.map(Json)
}
