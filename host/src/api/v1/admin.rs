//! `/api/v1/admin/*` (admin role required).

use rocket::{State, delete, get, post, put};

use crate::App;
use crate::admin::alarms::ActiveAlarms;
use crate::admin::users::{
    self as user_admin, USERS_DEFAULT_PER_PAGE, USERS_MAX_PER_PAGE, UserDetail, UserList,
    UserUpdate,
};
use crate::admin::{self, AUDIT_DEFAULT_PER_PAGE, AUDIT_MAX_PER_PAGE, AuditPage};
use crate::api::envelope::{Body, OptionalBody};
use crate::api::envelope::{Success, ok};
use crate::api::openapi::prelude::*;
use crate::api::query::{Page, parse_time};
use crate::auth::{AdminUser, ClientMeta};
use crate::engine::kill_switch::{
    self as switch, KillSwitchActivated, KillSwitchRequest, KillSwitchState,
};
use crate::engine::reconcile::{self, Reconciliation, ResolveRequest};
use crate::error::ApiResult;
use crate::store::audit::AuditFilter;
use crate::store::users::UserFilter;

crate::api::handlers![
    active_alarms,
    audit_logs,
    users,
    user,
    metrics,
    update_user,
    activate_kill_switch,
    kill_switch,
    deactivate_kill_switch,
    user_reconciliation,
    resolve_user_reconciliation
];

#[utoipa::path(
    tag = "admin",
    operation_id = "adminUserReconciliation",
    summary = "A user's reconciliation",
    description = "The user's discrepancies with their broker.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = String, Path, description = "The user's id.", example = json!("0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Reconciliation>),
        (status = 404, response = Platform404NotFound),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/users/<user_id>/reconciliation")]
async fn user_reconciliation(
    app: &State<App>,
    _admin: AdminUser,
    user_id: &str,
) -> ApiResult<Success<Reconciliation>> {
    reconcile::state_of_user(app, user_id).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminUserReconciliationResolve",
    summary = "Resolve a user's discrepancies",
    description = "As the user's own resolve, by an operator (audited with the operator as actor).",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = String, Path, description = "The user's id.", example = json!("0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"))
    ),
    request_body(content = ResolveRequest, example = json!({})),
    responses(
        (status = 200, description = "OK", body = Enveloped<Reconciliation>),
        (status = 400, response = Platform400InvalidBody),
        (status = 404, response = Platform404NotFound),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 502, description = "`BROKER_ERROR`: the broker could not be asked.", body = PlatformError),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[post("/admin/users/<user_id>/reconciliation/resolve", data = "<body>")]
async fn resolve_user_reconciliation(
    app: &State<App>,
    admin: AdminUser,
    user_id: &str,
    body: Body<ResolveRequest>,
) -> ApiResult<Success<Reconciliation>> {
    reconcile::resolve_for_user(app, user_id, &admin.0.user_id, body.0.resolution)
        .await
        .map(ok)
}

#[allow(clippy::too_many_arguments)]
#[utoipa::path(
    tag = "admin",
    operation_id = "adminAuditLogs",
    summary = "Audit log",
    description = "Security-relevant events (sign-ins, password changes, admin actions, plugin changes), newest first.",
    security(("bearerAuth" = [])),
    params(
        ("page" = Option<i64>, Query, description = "Page number, from 1.", minimum = 1),
        ("per_page" = Option<i64>, Query, description = "Default 100; values above 500 are clamped.", minimum = 1),
        ("event_type" = Option<String>, Query, description = "e.g. `auth.login_failed`.", example = json!("auth.login_failed")),
        ("user_id" = Option<String>, Query, description = "Only this user's events."),
        ("start_date" = Option<String>, Query, description = "YYYY-MM-DD or ISO 8601.", example = json!("2026-11-01")),
        ("end_date" = Option<String>, Query, description = "YYYY-MM-DD (includes that day) or ISO 8601.", example = json!("2026-11-21"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<AuditPage>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/audit-logs?<page>&<per_page>&<event_type>&<user_id>&<start_date>&<end_date>")]
async fn audit_logs(
    app: &State<App>,
    _admin: AdminUser,
    page: Option<&str>,
    per_page: Option<&str>,
    event_type: Option<&str>,
    user_id: Option<&str>,
    start_date: Option<&str>,
    end_date: Option<&str>,
) -> ApiResult<Success<AuditPage>> {
    let page = Page::parse(page, per_page, AUDIT_DEFAULT_PER_PAGE, AUDIT_MAX_PER_PAGE)?;
    let filter = AuditFilter {
        event_type: event_type.map(str::to_string),
        user_id: user_id.map(str::to_string),
        from_ms: parse_time("start_date", start_date, false)?,
        until_ms: parse_time("end_date", end_date, true)?,
    };
    admin::audit_logs(app, &filter, page).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminListUsers",
    summary = "List users",
    description = "Users with their tier, status and trading totals.",
    security(("bearerAuth" = [])),
    params(
        ("page" = Option<i64>, Query, description = "Page number, from 1.", minimum = 1),
        ("per_page" = Option<i64>, Query, description = "Default 50; values above 100 are clamped.", minimum = 1),
        ("search" = Option<String>, Query, description = "Part of an e-mail address, or a user id."),
        ("tier" = Option<String>, Query, pattern = "^(free|basic|pro|enterprise)$", description = "Subscription tier. (one of `free`, `basic`, `pro`, `enterprise`)"),
        ("status" = Option<String>, Query, pattern = "^(active|suspended|disabled)$", description = "Account status. (one of `active`, `suspended`, `disabled`)")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<UserList>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/users?<page>&<per_page>&<search>&<tier>&<status>")]
async fn users(
    app: &State<App>,
    _admin: AdminUser,
    page: Option<&str>,
    per_page: Option<&str>,
    search: Option<&str>,
    tier: Option<&str>,
    status: Option<&str>,
) -> ApiResult<Success<UserList>> {
    let page = Page::parse(page, per_page, USERS_DEFAULT_PER_PAGE, USERS_MAX_PER_PAGE)?;
    let filter = UserFilter {
        search: search
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        tier: tier.map(str::to_string),
        status: status.map(str::to_string),
    };
    user_admin::list(app, &filter, page).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminMetrics",
    summary = "Platform metrics",
    description = "Users by tier, running bots, 24 h volume, request rate, error rate, uptime and revenue (MRR, ARR, churn).",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<crate::admin::metrics::Metrics>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/metrics")]
async fn metrics(
    app: &State<App>,
    _admin: AdminUser,
) -> ApiResult<Success<crate::admin::metrics::Metrics>> {
    crate::admin::metrics::collect(app).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminActiveAlarms",
    summary = "Active alarms of every user",
    description = "Risk alarms still active, across users, newest first (at most 500; `truncated` says when there are more), each with its user's e-mail.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<ActiveAlarms>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/alarms")]
async fn active_alarms(app: &State<App>, _admin: AdminUser) -> ApiResult<Success<ActiveAlarms>> {
    crate::admin::alarms::active(app).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminGetUser",
    summary = "One user",
    description = "A user's account, subscription, trading figures and broker connections.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = String, Path, description = "The user's id.", example = json!("0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<UserDetail>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[get("/admin/users/<user_id>")]
async fn user(
    app: &State<App>,
    _admin: AdminUser,
    user_id: &str,
) -> ApiResult<Success<UserDetail>> {
    user_admin::detail(app, user_id).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminUpdateUser",
    summary = "Change a user's tier, status or notes",
    description = "Sets the tier outright (ending any trial), suspends, disables or reactivates the account (a suspension ends every session and stops the bot; positions stay open), or sets notes. An admin cannot lock themselves out. Audited as `admin.user_updated`.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = String, Path, description = "The user's id.", example = json!("0b7e6c1e-8d5f-4a8e-b2a4-91c3d2e5f601"))
    ),
    request_body(content = UserUpdate, example = json!({"subscription_tier": "pro", "status": "active", "notes": "Upgraded after support call"})),
    responses(
        (status = 200, description = "OK", body = Enveloped<user_admin::Updated>),
        (status = 400, response = Platform400InvalidBody),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[put("/admin/users/<user_id>", data = "<body>")]
async fn update_user(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    user_id: &str,
    body: Body<UserUpdate>,
) -> ApiResult<Success<user_admin::Updated>> {
    user_admin::update(app, &admin.0, &meta, user_id, body.0)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminActivateKillSwitch",
    summary = "Activate the kill switch",
    description = "Stops every active bot at once (closing positions with exit reason `kill_switch` when asked) and blocks starts with KILL_SWITCH_ACTIVE until lifted. Connected users get `{type: \"kill_switch\"}` on the `bot_status` channel. The body may be empty.",
    security(("bearerAuth" = [])),
    request_body(content = KillSwitchRequest, example = json!({"reason": "Exchange incident", "close_all_positions": false, "notify_users": true})),
    responses(
        (status = 200, description = "OK", body = Enveloped<KillSwitchActivated>),
        (status = 400, response = Platform400InvalidBody),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[post("/admin/kill-switch", data = "<body>")]
async fn activate_kill_switch(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    body: OptionalBody<KillSwitchRequest>,
) -> ApiResult<Success<KillSwitchActivated>> {
    switch::activate(app, &admin.0, &meta, body.0.unwrap_or_default())
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminKillSwitch",
    summary = "Kill switch state",
    description = "Whether the kill switch is active, why, by whom and since when.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<KillSwitchState>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/kill-switch")]
async fn kill_switch(app: &State<App>, _admin: AdminUser) -> ApiResult<Success<KillSwitchState>> {
    switch::state(app).await.map(ok)
}

#[utoipa::path(
    tag = "admin",
    operation_id = "adminDeactivateKillSwitch",
    summary = "Lift the kill switch",
    description = "Allows starts again; bots stay stopped until their users start them.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<KillSwitchState>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[delete("/admin/kill-switch")]
async fn deactivate_kill_switch(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
) -> ApiResult<Success<KillSwitchState>> {
    switch::deactivate(app, &admin.0, &meta).await.map(ok)
}

#[cfg(test)]
mod tests {
    use rocket::http::{Header, Status};
    use serde_json::{Value, json};

    use crate::testing::client;

    #[rocket::async_test]
    async fn audit_logs_are_for_admins_only() {
        let (client, _dir) = client().await;
        let user = json!({"email": "bob@example.com", "password": "correct horse battery", "full_name": "Bob", "accept_terms": true});
        client
            .post("/api/v1/auth/register")
            .body(user.to_string())
            .dispatch()
            .await;
        let login = json!({"email": "bob@example.com", "password": "correct horse battery"});
        let body: Value = client
            .post("/api/v1/auth/login")
            .body(login.to_string())
            .dispatch()
            .await
            .into_json()
            .await
            .unwrap();
        let bearer = format!("Bearer {}", body["data"]["access_token"].as_str().unwrap());
        let reply = client
            .get("/api/v1/admin/audit-logs")
            .header(Header::new("Authorization", bearer))
            .dispatch()
            .await;
        assert_eq!(reply.status(), Status::Forbidden);
        assert_eq!(
            reply.into_json::<Value>().await.unwrap()["error"]["code"],
            "UNAUTHORIZED"
        );
    }
}
