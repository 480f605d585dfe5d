//! `/api/v1/auth/*`: registration, sign-in, token refresh, sign-out and passwords.

use rocket::{State, get, post, put};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::App;
use crate::api::envelope::{Body, OptionalBody, Success, created, ok};
use crate::api::openapi::prelude::*;
use crate::auth::service::{self, LoginResponse, RefreshResponse, RegisterRequest, UserView};
use crate::auth::{AuthUser, ClientMeta};
use crate::error::ApiResult;

crate::api::handlers![
    register,
    login,
    refresh,
    logout,
    reset_password,
    reset_password_confirm,
    change_password,
    me
];

#[utoipa::path(
    tag = "auth",
    operation_id = "authRegister",
    summary = "Create an account",
    description = "Creates an account and starts its 14-day trial (tier `free` with basic's limits). No token needed. Answers 201 with the new user; sign in with /auth/login to get tokens.",
    request_body(content = RegisterRequest, example = json!({"email": "ada@example.com", "password": "correct horse battery", "full_name": "Ada Lovelace", "accept_terms": true})),
    responses(
        (status = 201, description = "Account created.", body = Enveloped<UserView>),
        (status = 400, description = "Bad request: INVALID_EMAIL, WEAK_PASSWORD, TERMS_NOT_ACCEPTED, INVALID_REQUEST", body = PlatformError),
        (status = 409, description = "Conflict: EMAIL_ALREADY_EXISTS", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/auth/register", data = "<body>")]
async fn register(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<RegisterRequest>,
) -> ApiResult<Success<UserView>> {
    service::register(app, body.0, &meta).await.map(created)
}

#[derive(utoipa::ToSchema, Deserialize)]
struct LoginRequest {
    email: String,
    password: String,
}

#[utoipa::path(
    tag = "auth",
    operation_id = "authLogin",
    summary = "Sign in",
    description = "Exchanges e-mail and password for an access token (JWT, `expires_in` seconds) and a refresh token. Five failed attempts per e-mail in 15 minutes lock sign-in for that e-mail until the window ends (429). A suspension is revealed only to someone who gave the correct password.",
    request_body(content = LoginRequest, example = json!({"email": "ada@example.com", "password": "correct horse battery"})),
    responses(
        (status = 200, description = "Signed in.", body = Enveloped<LoginResponse>),
        (status = 400, response = Platform400InvalidBody),
        (status = 401, description = "Not authenticated: INVALID_CREDENTIALS", body = PlatformError),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspended),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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

#[derive(utoipa::ToSchema, Deserialize)]
struct RefreshRequest {
    refresh_token: String,
}

#[utoipa::path(
    tag = "auth",
    operation_id = "authRefresh",
    summary = "Refresh the access token",
    description = "Exchanges a refresh token for a new access token and a new refresh token. The presented one is spent; reusing a spent refresh token revokes the whole session.",
    request_body(content = RefreshRequest, example = json!({"refresh_token": "rt_5b0c7f..."})),
    responses(
        (status = 200, description = "New tokens.", body = Enveloped<RefreshResponse>),
        (status = 400, response = Platform400InvalidBody),
        (status = 401, response = Platform401TokenExpiredOrTokenInvalid),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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

#[derive(utoipa::ToSchema, Deserialize, Default)]
struct LogoutRequest {
    #[serde(default)]
    revoke_all: bool,
}

/// The body is optional: an empty one signs out of this session only.
#[utoipa::path(
    tag = "auth",
    operation_id = "authLogout",
    summary = "Sign out",
    description = "Ends this session at once (the access token stops working), or every session of the user with `revoke_all: true`. The body may be empty.",
    security(("bearerAuth" = [])),
    request_body(content = LogoutRequest, example = json!({"revoke_all": false})),
    responses(
        (status = 200, description = "Signed out.", body = Enveloped<Value>, example = json!({"success": true, "data": {"message": "Signed out"}, "timestamp": "2026-11-22T06:40:00.123Z"})),
        (status = 400, response = Platform400InvalidBody),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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

#[derive(utoipa::ToSchema, Deserialize)]
struct ResetRequest {
    email: String,
}

#[utoipa::path(
    tag = "auth",
    operation_id = "authResetPassword",
    summary = "Request a password reset",
    description = "Mails a single-use reset token valid for one hour. Always answers the same message, whether or not the address has an account.",
    request_body(content = ResetRequest, example = json!({"email": "ada@example.com"})),
    responses(
        (status = 200, description = "Accepted.", body = Enveloped<Value>),
        (status = 400, response = Platform400InvalidBody),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/auth/reset-password", data = "<body>")]
async fn reset_password(
    app: &State<App>,
    meta: ClientMeta,
    body: Body<ResetRequest>,
) -> ApiResult<Success<Value>> {
    let message = service::request_password_reset(app, &body.0.email, &meta).await?;
    Ok(ok(json!({ "message": message })))
}

#[derive(utoipa::ToSchema, Deserialize)]
struct ResetConfirmRequest {
    token: String,
    new_password: String,
}

#[utoipa::path(
    tag = "auth",
    operation_id = "authResetPasswordConfirm",
    summary = "Set a new password with a reset token",
    description = "Sets the password from the e-mailed token and signs out every session. An unknown or used token is TOKEN_INVALID, an expired one TOKEN_EXPIRED.",
    request_body(content = ResetConfirmRequest, example = json!({"token": "prt_1d2c...", "new_password": "another long passphrase"})),
    responses(
        (status = 200, description = "Password changed.", body = Enveloped<Value>, example = json!({"success": true, "data": {"message": "Password changed; every session has been signed out"}, "timestamp": "2026-11-22T06:40:00.123Z"})),
        (status = 400, description = "Bad request: WEAK_PASSWORD, INVALID_REQUEST", body = PlatformError),
        (status = 401, response = Platform401TokenExpiredOrTokenInvalid),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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

#[derive(utoipa::ToSchema, Deserialize)]
struct ChangePasswordRequest {
    current_password: String,
    new_password: String,
}

#[utoipa::path(
    tag = "auth",
    operation_id = "authChangePassword",
    summary = "Change the password",
    description = "Changes the password of the signed-in user and signs out their other sessions.",
    security(("bearerAuth" = [])),
    request_body(content = ChangePasswordRequest, example = json!({"current_password": "correct horse battery", "new_password": "another long passphrase"})),
    responses(
        (status = 200, description = "Password changed.", body = Enveloped<Value>),
        (status = 400, description = "Bad request: WEAK_PASSWORD, INVALID_REQUEST", body = PlatformError),
        (status = 401, description = "Not authenticated: INVALID_CREDENTIALS, TOKEN_INVALID, TOKEN_EXPIRED", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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
#[utoipa::path(
    tag = "auth",
    operation_id = "authMe",
    summary = "The signed-in user",
    description = "The signed-in user, in the register answer's shape. (An addition to the specification.)",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<UserView>)
    ),
)]
#[get("/auth/me")]
fn me(user: AuthUser) -> Success<UserView> {
    ok(service::current_user(&user.0))
}

#[cfg(test)]
mod tests {
    use rocket::http::{ContentType, Header, Status};
    use serde_json::{Value, json};

    use crate::testing::client;

    #[rocket::async_test]
    async fn register_login_me_logout() {
        let (client, _dir) = client().await;
        let user = json!({"email": "ada@example.com", "password": "correct horse battery", "full_name": "Ada", "accept_terms": true});
        let reply = client
            .post("/api/v1/auth/register")
            .header(ContentType::JSON)
            .body(user.to_string())
            .dispatch()
            .await;
        assert_eq!(reply.status(), Status::Created);
        let login = json!({"email": "ada@example.com", "password": "correct horse battery"});
        let reply = client
            .post("/api/v1/auth/login")
            .body(login.to_string())
            .dispatch()
            .await;
        assert_eq!(reply.status(), Status::Ok);
        let body: Value = reply.into_json().await.unwrap();
        let bearer = format!("Bearer {}", body["data"]["access_token"].as_str().unwrap());

        let me = client
            .get("/api/v1/auth/me")
            .header(Header::new("Authorization", bearer.clone()))
            .dispatch()
            .await;
        assert_eq!(me.status(), Status::Ok);
        assert_eq!(
            me.into_json::<Value>().await.unwrap()["data"]["email"],
            "ada@example.com"
        );
        let out = client
            .post("/api/v1/auth/logout")
            .header(Header::new("Authorization", bearer.clone()))
            .dispatch()
            .await;
        assert_eq!(out.status(), Status::Ok);
        let me = client
            .get("/api/v1/auth/me")
            .header(Header::new("Authorization", bearer))
            .dispatch()
            .await;
        assert_eq!(me.status(), Status::Unauthorized);
        assert_eq!(
            me.into_json::<Value>().await.unwrap()["error"]["code"],
            "TOKEN_INVALID"
        );
    }
}
