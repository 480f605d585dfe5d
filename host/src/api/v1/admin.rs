//! `/api/v1/admin/*` (admin role required).

use rocket::{Route, State, delete, get, post, put, routes};

use crate::App;
use crate::admin::users::{
    self as user_admin, USERS_DEFAULT_PER_PAGE, USERS_MAX_PER_PAGE, UserDetail, UserList,
    UserUpdate,
};
use crate::admin::{self, AUDIT_DEFAULT_PER_PAGE, AUDIT_MAX_PER_PAGE, AuditPage};
use crate::api::envelope::{Body, OptionalBody};
use crate::api::envelope::{Success, ok};
use crate::api::query::{Page, parse_time};
use crate::auth::{AdminUser, ClientMeta};
use crate::engine::kill_switch::{
    self as switch, KillSwitchActivated, KillSwitchRequest, KillSwitchState,
};
use crate::engine::reconcile::{self, Reconciliation, ResolveRequest};
use crate::error::ApiResult;
use crate::store::audit::AuditFilter;
use crate::store::users::UserFilter;

pub fn routes() -> Vec<Route> {
    routes![
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
    ]
}

#[get("/admin/users/<user_id>/reconciliation")]
async fn user_reconciliation(
    app: &State<App>,
    _admin: AdminUser,
    user_id: &str,
) -> ApiResult<Success<Reconciliation>> {
    reconcile::state_of_user(app, user_id).await.map(ok)
}

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

#[get("/admin/metrics")]
async fn metrics(
    app: &State<App>,
    _admin: AdminUser,
) -> ApiResult<Success<crate::admin::metrics::Metrics>> {
    crate::admin::metrics::collect(app).await.map(ok)
}

#[get("/admin/users/<user_id>")]
async fn user(
    app: &State<App>,
    _admin: AdminUser,
    user_id: &str,
) -> ApiResult<Success<UserDetail>> {
    user_admin::detail(app, user_id).await.map(ok)
}

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

#[get("/admin/kill-switch")]
async fn kill_switch(app: &State<App>, _admin: AdminUser) -> ApiResult<Success<KillSwitchState>> {
    switch::state(app).await.map(ok)
}

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
