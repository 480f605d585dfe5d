//! Companion set B: the mobile gateway (`GET /` and five routes under `/api/v1`). Errors are
//! `{detail}`.

use rocket::{Route, State, get, post, routes};
use serde_json::{Map, Value};

use super::Json;
use crate::App;
use crate::api::envelope::Body;
use crate::auth::AuthUser;
use crate::companion::gateway::{self, Balance, Control, Performance, Positions};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![root, start, stop, balance, positions, performance]
}

/// Ranked after an operator's own browser client (`api::web`), which answers browsers asking
/// for HTML when one is configured.
#[get("/", rank = 2)]
fn root(app: &State<App>) -> Json<Value> {
    Json(gateway::root(app))
}

/// The body must be a JSON object (`{}` is enough), as the original gateway required.
#[post("/api/v1/start", data = "<_body>")]
async fn start(
    app: &State<App>,
    user: AuthUser,
    _body: Body<Map<String, Value>>,
) -> ApiResult<Json<Control>> {
    gateway::start(app, &user.0).await.map(Json)
}

#[post("/api/v1/stop", data = "<_body>")]
async fn stop(
    app: &State<App>,
    user: AuthUser,
    _body: Body<Map<String, Value>>,
) -> ApiResult<Json<Control>> {
    gateway::stop(app, &user.0).await.map(Json)
}

#[get("/api/v1/balance")]
async fn balance(app: &State<App>, user: AuthUser) -> ApiResult<Json<Balance>> {
    gateway::balance(app, &user.0).await.map(Json)
}

#[get("/api/v1/positions")]
async fn positions(app: &State<App>, user: AuthUser) -> ApiResult<Json<Positions>> {
    gateway::positions(app, &user.0).await.map(Json)
}

#[get("/api/v1/performance?<period>")]
async fn performance(
    app: &State<App>,
    user: AuthUser,
    period: Option<&str>,
) -> ApiResult<Json<Performance>> {
    gateway::performance(app, &user.0, period).await.map(Json)
}
