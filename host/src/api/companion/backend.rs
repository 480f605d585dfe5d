//! Companion set A: the unversioned backend under `/api`. Errors are `{detail}`.

use rocket::{State, delete, get, post};
use serde::Deserialize;
use serde_json::{Map, Value};

use rocket::http::CookieJar;

use super::{Json, safety};
use crate::App;
use crate::api::envelope::{Body, OptionalBody};
use crate::api::openapi::prelude::*;
use crate::auth::{AuthUser, ClientMeta};
use crate::companion::backend::{
    self, BotAnswer, BrokerCredentials, BrokerList, Config, Control, Credentials, Pnl, Position,
    Profile, Registration, Status, TokenResponse,
};
use crate::error::ApiResult;

crate::api::handlers![
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
];

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendRegister",
    summary = "Register (backend)",
    description = "Creates an account on the 14-day `free` trial and signs it in. `subscription_tier` must be basic, pro or enterprise when given, but a paid tier is only granted through billing. Answers 200 (not 201). Validation errors are FastAPI's 422 detail list.",
    request_body(content = Registration, example = json!({"email": "ada@example.com", "password": "correct horse battery", "subscription_tier": "basic"})),
    responses(
        (status = 200, description = "Registered and signed in.", body = TokenResponse),
        (status = 409, description = "Conflict: User already exists", body = DetailError),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
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

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendLogin",
    summary = "Sign in (backend)",
    description = "Signs in with e-mail and password; the token also works on the platform API.",
    request_body(content = Credentials, example = json!({"email": "ada@example.com", "password": "correct horse battery"})),
    responses(
        (status = 200, description = "Signed in.", body = TokenResponse),
        (status = 401, description = "Not authenticated: Invalid credentials", body = DetailError, headers(("WWW-Authenticate"))),
        (status = 403, description = "Forbidden: Account suspended; Account disabled", body = DetailError),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
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

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendProfile",
    summary = "Profile",
    description = "The account, its broker names and its trading limits (`permissions`) from the trading settings.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Profile)
    ),
)]
#[get("/api/user/profile")]
async fn profile(app: &State<App>, user: AuthUser) -> ApiResult<Json<Profile>> {
    backend::profile(app, &user.0).await.map(Json)
}

/// The original client sends no body (but a JSON content type); any body is ignored.
#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendStartBot",
    summary = "Start the bot",
    description = "Starts the bot on the user's broker (the paper connection when there is one, else the first) with the user's settings. No body.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = BotAnswer, example = json!({"message": "Bot started successfully", "user_id": "0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601", "status": "starting"})),
        (status = 400, description = "Bad request: User not enabled or no permissions configured; Bot is already running", body = DetailError),
        (status = 402, description = "Payment required: Live trading needs a paid subscription", body = DetailError),
        (status = 403, description = "Forbidden: Trading is blocked by the kill switch", body = DetailError)
    ),
)]
#[post("/api/start_bot")]
async fn start_bot(app: &State<App>, user: AuthUser) -> ApiResult<Json<BotAnswer>> {
    backend::start_bot(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendStopBot",
    summary = "Stop the bot",
    description = "Stops the bot, leaving positions open. No body.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = BotAnswer, example = json!({"message": "Bot stopped successfully", "user_id": "0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601", "status": "stopped"})),
        (status = 400, description = "Bad request: No active trading instance found", body = DetailError)
    ),
)]
#[post("/api/stop_bot")]
async fn stop_bot(app: &State<App>, user: AuthUser) -> ApiResult<Json<BotAnswer>> {
    backend::stop_bot(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendStatus",
    summary = "Trading status",
    description = "Whether trading is on, the engine state, the last scan and totals.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Status)
    ),
)]
#[get("/api/status")]
async fn status(app: &State<App>, user: AuthUser) -> ApiResult<Json<Status>> {
    backend::status(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendPositions",
    summary = "Open positions (backend)",
    description = "The open positions as a bare JSON array.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Vec<Position>)
    ),
)]
#[get("/api/positions")]
async fn positions(app: &State<App>, user: AuthUser) -> ApiResult<Json<Vec<Position>>> {
    backend::positions(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendPnl",
    summary = "Profit and loss",
    description = "Trade count, win rate (percent), P&L, profit, loss (positive) and open positions.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Pnl)
    ),
)]
#[get("/api/pnl")]
async fn pnl(app: &State<App>, user: AuthUser) -> ApiResult<Json<Pnl>> {
    backend::pnl(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendGetConfig",
    summary = "Trading limits",
    description = "The user's trading settings in the backend's shape.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Config)
    ),
)]
#[get("/api/config")]
async fn config(app: &State<App>, user: AuthUser) -> ApiResult<Json<Config>> {
    backend::config(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendUpdateConfig",
    summary = "Change trading limits",
    description = "Changes the same settings as `PUT /api/v1/config/settings` (tier limits included) and answers the GET shape. Nothing changes on an error: 400 with the platform's message for a bad or over-limit value, 422 for an unknown field or a non-object body.",
    security(("bearerAuth" = [])),
    request_body(content = Object, example = json!({"max_position_size_usd": 250.0, "max_daily_loss_usd": 200.0, "max_positions": 3, "paper_trading": true, "risk_level": "low"})),
    responses(
        (status = 200, description = "OK", body = Config),
        (status = 400, description = "Bad request: Risk level must be low, medium or high", body = DetailError),
        (status = 403, description = "Forbidden: The value is above your subscription tier's limit", body = DetailError),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
#[post("/api/config", data = "<body>")]
async fn update_config(
    app: &State<App>,
    user: AuthUser,
    body: Body<Map<String, Value>>,
) -> ApiResult<Json<Config>> {
    backend::update_config(app, &user.0, body.0).await.map(Json)
}

#[derive(utoipa::ToSchema, Debug, Default, Deserialize)]
struct ControlRequest {
    #[serde(default)]
    action: Option<String>,
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendTradingControl",
    summary = "Start, stop, pause or resume",
    description = "One route for the four bot commands (`action` in any case).",
    security(("bearerAuth" = [])),
    request_body(content = ControlRequest, example = json!({"action": "start"})),
    responses(
        (status = 403, description = "Forbidden: Trading is blocked by the kill switch (starting)", body = DetailError),
        (status = 200, description = "OK", body = Control, example = json!({"action": "start", "message": "Trading started", "status": "starting", "user_id": "0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"})),
        (status = 400, description = "Bad request: Action is required (start/stop/pause/resume); Invalid action. Use: start, stop, pause or resume; Bot is already running; No active trading instance found", body = DetailError)
    ),
)]
#[post("/api/trading/control", data = "<body>")]
async fn control(
    app: &State<App>,
    user: AuthUser,
    body: OptionalBody<ControlRequest>,
) -> ApiResult<Json<Control>> {
    let action = body.0.and_then(|b| b.action);
    backend::control(app, &user.0, action).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendListBrokers",
    summary = "Connected brokers",
    description = "The lower-case names of the user's broker connections.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = BrokerList)
    ),
)]
#[get("/api/user/brokers")]
async fn brokers(app: &State<App>, user: AuthUser) -> ApiResult<Json<BrokerList>> {
    backend::brokers(app, &user.0).await.map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendAddBroker",
    summary = "Connect a broker (backend)",
    description = "Connects the broker through its plugin like `POST /api/v1/config/brokers`; posting again replaces the stored credentials. Answers 200 with the path value as sent.",
    security(("bearerAuth" = [])),
    params(
        ("broker" = String, Path, description = "Broker name, any case: paper, coinbase, kraken, binance, okx or alpaca.", example = json!("kraken"))
    ),
    request_body(content = BrokerCredentials, example = json!({"api_key": "pk_1234", "api_secret": "sk_abcd"})),
    responses(
        (status = 409, description = "Conflict: the bot is running on this broker; stop it before changing its keys", body = DetailError),
        (status = 403, description = "Forbidden: the subscription tier's number of exchange connections is reached", body = DetailError),
        (status = 200, description = "OK", body = backend::CredentialsChanged),
        (status = 400, description = "Bad request: Unsupported broker. Supported: paper, coinbase, kraken, binance, okx, alpaca; The broker rejected the API key", body = DetailError),
        (status = 422, description = "Validation error: a missing or mistyped body field, listed FastAPI-style in `detail`.", body = ValidationError)
    ),
)]
#[post("/api/user/brokers/<broker>", data = "<body>")]
async fn add_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    broker: &str,
    body: Body<BrokerCredentials>,
) -> ApiResult<Json<backend::CredentialsChanged>> {
    backend::add_broker(app, &user.0, &meta, broker, body.0)
        .await
        .map(Json)
}

#[utoipa::path(
    tag = "companion-backend",
    operation_id = "backendRemoveBroker",
    summary = "Disconnect a broker (backend)",
    description = "Removes the broker's stored credentials; refused while the running bot uses it.",
    security(("bearerAuth" = [])),
    params(
        ("broker" = String, Path, description = "Broker name, any case: paper, coinbase, kraken, binance, okx or alpaca.", example = json!("kraken"))
    ),
    responses(
        (status = 200, description = "OK", body = backend::CredentialsChanged),
        (status = 404, description = "Not found: No kraken credentials found", body = DetailError),
        (status = 409, description = "Conflict: The bot is running on this broker", body = DetailError)
    ),
)]
#[delete("/api/user/brokers/<broker>")]
async fn remove_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    broker: &str,
) -> ApiResult<Json<backend::CredentialsChanged>> {
    backend::remove_broker(app, &user.0, &meta, broker)
        .await
        .map(Json)
}
