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
