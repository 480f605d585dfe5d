//! `/api/v1/trading/*`: starting, stopping, pausing and watching the user's bot.

use rocket::{Route, State, get, post, routes};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, ok};
use crate::auth::AuthUser;
use crate::engine::{self, BotStatusView, EmergencyStopped, Started, StatusChange, Stopped};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![start, stop, status, emergency_stop, pause, resume]
}

#[post("/trading/start", data = "<body>")]
async fn start(
    app: &State<App>,
    user: AuthUser,
    body: Body<engine::StartRequest>,
) -> ApiResult<Success<Started>> {
    engine::start(app, &user.0, body.0).await.map(ok)
}

#[post("/trading/stop", data = "<body>")]
async fn stop(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<engine::StopRequest>,
) -> ApiResult<Success<Stopped>> {
    engine::stop(app, &user.0, body.0.unwrap_or_default())
        .await
        .map(ok)
}

#[get("/trading/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Success<BotStatusView>> {
    engine::status(app, &user.0).await.map(ok)
}

#[post("/trading/emergency-stop", data = "<body>")]
async fn emergency_stop(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<engine::EmergencyRequest>,
) -> ApiResult<Success<EmergencyStopped>> {
    engine::emergency_stop(app, &user.0, body.0.unwrap_or_default())
        .await
        .map(ok)
}

#[post("/trading/pause")]
async fn pause(app: &State<App>, user: AuthUser) -> ApiResult<Success<StatusChange>> {
    engine::pause(app, &user.0).await.map(ok)
}

#[post("/trading/resume")]
async fn resume(app: &State<App>, user: AuthUser) -> ApiResult<Success<StatusChange>> {
    engine::resume(app, &user.0).await.map(ok)
}
