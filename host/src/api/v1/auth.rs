//! `/api/v1/auth/*`: registration, sign-in, token refresh, sign-out and passwords.

use rocket::{Route, State, get, post, put, routes};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, created, ok};
use crate::auth::service::{self, LoginResponse, RefreshResponse, RegisterRequest, UserView};
use crate::auth::{AuthUser, ClientMeta};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![
        register,
        login,
        refresh,
        logout,
        reset_password,
        reset_password_confirm,
        change_password,
        me
    ]
}

#[post("/auth/register", data = "<body>")]
async fn register(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<RegisterRequest>,
) -> ApiResult<Success<UserView>> {
    service::register(app, body.0, &meta).await.map(created)
}

#[derive(Deserialize)]
struct LoginRequest {
    email: String,
    password: String,
}

#[post("/auth/login", data = "<body>")]
async fn login(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<LoginRequest>,
) -> ApiResult<Success<LoginResponse>> {
    service::login(app, &body.0.email, &body.0.password, &meta)
        .await
        .map(ok)
}

#[derive(Deserialize)]
struct RefreshRequest {
    refresh_token: String,
}

#[post("/auth/refresh", data = "<body>")]
async fn refresh(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<RefreshRequest>,
) -> ApiResult<Success<RefreshResponse>> {
    service::refresh(app, &body.0.refresh_token, &meta)
        .await
        .map(ok)
}

#[derive(Deserialize, Default)]
struct LogoutRequest {
    #[serde(default)]
    revoke_all: bool,
}

/// The body is optional: an empty one signs out of this session only.
#[post("/auth/logout", data = "<body>")]
async fn logout(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    body: OptionalBody<LogoutRequest>,
) -> ApiResult<Success<Value>> {
    let revoke_all = body.0.unwrap_or_default().revoke_all;
    let message = service::logout(app, &user.0, revoke_all, &meta).await?;
    Ok(ok(json!({ "message": message })))
}

#[derive(Deserialize)]
struct ResetRequest {
    email: String,
}

#[post("/auth/reset-password", data = "<body>")]
async fn reset_password(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<ResetRequest>,
) -> ApiResult<Success<Value>> {
    let message = service::request_password_reset(app, &body.0.email, &meta).await?;
    Ok(ok(json!({ "message": message })))
}

#[derive(Deserialize)]
struct ResetConfirmRequest {
    token: String,
    new_password: String,
}

#[post("/auth/reset-password/confirm", data = "<body>")]
async fn reset_password_confirm(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<ResetConfirmRequest>,
) -> ApiResult<Success<Value>> {
    service::confirm_password_reset(app, &body.0.token, &body.0.new_password, &meta).await?;
    Ok(ok(
        json!({ "message": "Password changed; every session has been signed out" }),
    ))
}

#[derive(Deserialize)]
struct ChangePasswordRequest {
    current_password: String,
    new_password: String,
}

#[put("/auth/change-password", data = "<body>")]
async fn change_password(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    body: Body<ChangePasswordRequest>,
) -> ApiResult<Success<Value>> {
    let body = body.0;
    let revoked = service::change_password(
        app,
        &user.0,
        &body.current_password,
        &body.new_password,
        &meta,
    )
    .await?;
    Ok(ok(
        json!({ "message": "Password changed", "other_sessions_revoked": revoked }),
    ))
}

/// The signed-in user (an addition to the spec; see docs/api.md).
#[get("/auth/me")]
async fn me(app: &State<App>, user: AuthUser) -> ApiResult<Success<UserView>> {
    service::current_user(app, &user.0).await.map(ok)
}
