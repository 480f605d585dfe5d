//! `/api/v1/admin/plugins`: list, inspect, upload, activate, roll back, configure (admins only).

use std::collections::BTreeMap;

use rocket::{Route, State, get, post, put, routes};
use serde::Deserialize;
use serde_json::Value;

use crate::App;
use crate::admin::plugins::{self, PluginDetail, UploadRequest};
use crate::api::envelope::{Body, PluginBody, Success, ok};
use crate::auth::{AdminUser, ClientMeta};
use crate::error::ApiResult;
use crate::plugins::registry::PluginSummary;

pub fn routes() -> Vec<Route> {
    routes![list, detail, upload, activate, rollback, configure]
}

#[get("/admin/plugins")]
fn list(app: &State<App>, _admin: AdminUser) -> Success<Value> {
    ok(serde_json::json!({ "plugins": plugins::list(app) }))
}

#[get("/admin/plugins/<name>")]
async fn detail(
    app: &State<App>,
    _admin: AdminUser,
    name: &str,
) -> ApiResult<Success<PluginDetail>> {
    plugins::detail(app, name).await.map(ok)
}

#[post("/admin/plugins", data = "<body>")]
async fn upload(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    body: PluginBody<UploadRequest>,
) -> ApiResult<Success<PluginSummary>> {
    plugins::upload(app, &admin.0, &meta, body.0).await.map(ok)
}

#[derive(Deserialize)]
struct ActivateRequest {
    version: String,
}

#[post("/admin/plugins/<name>/activate", data = "<body>")]
async fn activate(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    name: &str,
    body: Body<ActivateRequest>,
) -> ApiResult<Success<PluginSummary>> {
    plugins::activate(app, &admin.0, &meta, name, &body.0.version)
        .await
        .map(ok)
}

#[post("/admin/plugins/<name>/rollback")]
async fn rollback(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    name: &str,
) -> ApiResult<Success<PluginSummary>> {
    plugins::rollback(app, &admin.0, &meta, name).await.map(ok)
}

#[derive(Deserialize)]
struct ConfigureRequest {
    config: BTreeMap<String, Value>,
}

#[put("/admin/plugins/<name>/config", data = "<body>")]
async fn configure(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    name: &str,
    body: Body<ConfigureRequest>,
) -> ApiResult<Success<PluginSummary>> {
    plugins::configure(app, &admin.0, &meta, name, body.0.config)
        .await
        .map(ok)
}
