//! `/api/v1/admin/plugins`: list, inspect, upload, activate, roll back, configure (admins only).

use std::collections::BTreeMap;

use rocket::{State, get, post, put};
use serde::Deserialize;
use serde_json::Value;

use crate::App;
use crate::admin::plugins::{self, PluginDetail, UploadRequest};
use crate::api::envelope::{Body, PluginBody, Success, ok};
use crate::api::openapi::prelude::*;
use crate::auth::{AdminUser, ClientMeta};
use crate::error::ApiResult;
use crate::plugins::registry::PluginSummary;

crate::api::handlers![list, detail, upload, activate, rollback, configure];

#[utoipa::path(
    tag = "plugins",
    operation_id = "pluginsList",
    summary = "List plugins",
    description = "Every plugin (strategies, risk rules, brokers): active and previous version, stored versions, configuration and its schema.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Value>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized)
    ),
)]
#[get("/admin/plugins")]
fn list(app: &State<App>, _admin: AdminUser) -> Success<Value> {
    ok(serde_json::json!({ "plugins": plugins::list(app) }))
}

#[utoipa::path(
    tag = "plugins",
    operation_id = "pluginsGet",
    summary = "One plugin",
    description = "A plugin's summary plus `live`: what its active version answers to `describe` right now.",
    security(("bearerAuth" = [])),
    params(
        ("name" = String, Path, description = "Plugin name.", example = json!("ema-cross"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<PluginDetail>),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound),
        (status = 502, response = Platform502PluginError)
    ),
)]
#[get("/admin/plugins/<name>")]
async fn detail(
    app: &State<App>,
    _admin: AdminUser,
    name: &str,
) -> ApiResult<Success<PluginDetail>> {
    plugins::detail(app, name).await.map(ok)
}

#[utoipa::path(
    tag = "plugins",
    operation_id = "pluginsUpload",
    summary = "Upload a plugin version",
    description = "Checks a WebAssembly component against its manifest and stores it as a new version (active at once with `activate: true`). Uploads may be up to 48 MiB.",
    security(("bearerAuth" = [])),
    request_body(content = UploadRequest, example = json!({"wasm_base64": "AGFzbQ0AAQA...", "activate": false})),
    responses(
        (status = 200, description = "OK", body = Enveloped<PluginSummary>),
        (status = 400, response = Platform400InvalidBody),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 502, response = Platform502PluginError)
    ),
)]
#[post("/admin/plugins", data = "<body>")]
async fn upload(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    body: PluginBody<UploadRequest>,
) -> ApiResult<Success<PluginSummary>> {
    plugins::upload(app, &admin.0, &meta, body.0).await.map(ok)
}

#[derive(utoipa::ToSchema, Deserialize)]
struct ActivateRequest {
    version: String,
}

#[utoipa::path(
    tag = "plugins",
    operation_id = "pluginsActivate",
    summary = "Activate a version",
    description = "Makes a stored version active atomically: running calls finish on the old one, the next uses the new one.",
    security(("bearerAuth" = [])),
    params(
        ("name" = String, Path, description = "Plugin name.", example = json!("ema-cross"))
    ),
    request_body(content = ActivateRequest, example = json!({"version": "1.2.0"})),
    responses(
        (status = 200, description = "OK", body = Enveloped<PluginSummary>),
        (status = 400, response = Platform400InvalidBody),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 502, response = Platform502PluginError)
    ),
)]
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

#[utoipa::path(
    tag = "plugins",
    operation_id = "pluginsRollback",
    summary = "Roll back",
    description = "Makes the previously active version active again.",
    security(("bearerAuth" = [])),
    params(
        ("name" = String, Path, description = "Plugin name.", example = json!("ema-cross"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<PluginSummary>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound)
    ),
)]
#[post("/admin/plugins/<name>/rollback")]
async fn rollback(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    name: &str,
) -> ApiResult<Success<PluginSummary>> {
    plugins::rollback(app, &admin.0, &meta, name).await.map(ok)
}

#[derive(utoipa::ToSchema, Deserialize)]
struct ConfigureRequest {
    config: BTreeMap<String, Value>,
}

#[utoipa::path(
    tag = "plugins",
    operation_id = "pluginsConfigure",
    summary = "Configure a plugin",
    description = "Sets the plugin's configuration (scalars only), checked against its manifest's schema.",
    security(("bearerAuth" = [])),
    params(
        ("name" = String, Path, description = "Plugin name.", example = json!("ema-cross"))
    ),
    request_body(content = ConfigureRequest, example = json!({})),
    responses(
        (status = 200, description = "OK", body = Enveloped<PluginSummary>),
        (status = 400, response = Platform400InvalidBody),
        (status = 403, response = Platform403AccountDisabledOrAccountSuspendedOrUnauthorized),
        (status = 404, response = Platform404NotFound),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
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
