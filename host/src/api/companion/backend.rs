//! Companion set A: the unversioned backend under `/api`. Errors are `{detail}`.

use rocket::{Route, State, delete, get, post, routes};
use serde::Deserialize;
use serde_json::{Map, Value};

use rocket::http::CookieJar;

use super::{Json, safety};
use crate::App;
use crate::api::envelope::{Body, OptionalBody};
use crate::auth::{AuthUser, ClientMeta};
use crate::companion::backend::{
    self, BotAnswer, BrokerCredentials, BrokerList, Config, Control, Credentials, Pnl, Position,
    Profile, Registration, Status, TokenResponse,
};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![
        register,
        login,
        profile,
        start_bot,
        stop_bot,
        status,
        positions,
        pnl,
        config,
        update_config,
        control,
        brokers,
        add_broker,
        remove_broker
    ]
}

#[post("/api/auth/register", data = "<body>")]
async fn register(
    app: &State<App>,
    meta: ClientMeta,
    cookies: &CookieJar<'_>,
    body: Body<Registration>,
) -> ApiResult<Json<TokenResponse>> {
    let signed_in = backend::register(app, body.0, &meta).await?;
    safety::remember_caller(
        cookies,
        &signed_in.access_token,
        app.config.access_token_ttl,
    );
    Ok(Json(signed_in))
}

#[post("/api/auth/login", data = "<body>")]
async fn login(
    app: &State<App>,
    meta: ClientMeta,
    cookies: &CookieJar<'_>,
    body: Body<Credentials>,
) -> ApiResult<Json<TokenResponse>> {
    let signed_in = backend::login(app, &body.0.email, &body.0.password, &meta).await?;
    safety::remember_caller(
        cookies,
        &signed_in.access_token,
        app.config.access_token_ttl,
    );
    Ok(Json(signed_in))
}

#[get("/api/user/profile")]
async fn profile(app: &State<App>, user: AuthUser) -> ApiResult<Json<Profile>> {
    backend::profile(app, &user.0).await.map(Json)
}

/// The original client sends no body (but a JSON content type); any body is ignored.
#[post("/api/start_bot")]
async fn start_bot(app: &State<App>, user: AuthUser) -> ApiResult<Json<BotAnswer>> {
    backend::start_bot(app, &user.0).await.map(Json)
}

#[post("/api/stop_bot")]
async fn stop_bot(app: &State<App>, user: AuthUser) -> ApiResult<Json<BotAnswer>> {
    backend::stop_bot(app, &user.0).await.map(Json)
}

#[get("/api/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Json<Status>> {
    backend::status(app, &user.0).await.map(Json)
}

#[get("/api/positions")]
async fn positions(app: &State<App>, user: AuthUser) -> ApiResult<Json<Vec<Position>>> {
    backend::positions(app, &user.0).await.map(Json)
}

#[get("/api/pnl")]
async fn pnl(app: &State<App>, user: AuthUser) -> ApiResult<Json<Pnl>> {
    backend::pnl(app, &user.0).await.map(Json)
}

#[get("/api/config")]
async fn config(app: &State<App>, user: AuthUser) -> ApiResult<Json<Config>> {
    backend::config(app, &user.0).await.map(Json)
}

#[post("/api/config", data = "<body>")]
async fn update_config(
    app: &State<App>,
    user: AuthUser,
    body: Body<Map<String, Value>>,
) -> ApiResult<Json<Config>> {
    backend::update_config(app, &user.0, body.0).await.map(Json)
}

#[derive(Debug, Default, Deserialize)]
struct ControlRequest {
    #[serde(default)]
    action: Option<String>,
}

#[post("/api/trading/control", data = "<body>")]
async fn control(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<ControlRequest>,
) -> ApiResult<Json<Control>> {
    let action = body.0.and_then(|b| b.action);
    backend::control(app, &user.0, action).await.map(Json)
}

#[get("/api/user/brokers")]
async fn brokers(app: &State<App>, user: AuthUser) -> ApiResult<Json<BrokerList>> {
    backend::brokers(app, &user.0).await.map(Json)
}

#[post("/api/user/brokers/<broker>", data = "<body>")]
async fn add_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    broker: &str,
    body: Body<BrokerCredentials>,
) -> ApiResult<Json<Value>> {
    backend::add_broker(app, &user.0, &meta, broker, body.0)
        .await
        .map(Json)
}

#[delete("/api/user/brokers/<broker>")]
async fn remove_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    broker: &str,
) -> ApiResult<Json<Value>> {
    backend::remove_broker(app, &user.0, &meta, broker)
        .await
        .map(Json)
}
