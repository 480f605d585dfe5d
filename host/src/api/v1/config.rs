//! `/api/v1/config/*`: settings, broker connections and the signal webhook key.

use rocket::{State, delete, get, post, put};
use serde_json::{Map, Value, json};
use utoipa::openapi::schema::{AdditionalProperties, ArrayBuilder, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

use crate::App;
use crate::api::envelope::{Body, Success, created, ok};
use crate::api::openapi::prelude::*;
use crate::auth::{AuthUser, ClientMeta};
use crate::brokers::{self, Added, Connections, NewConnection, Removed, TestResult};
use crate::error::ApiResult;
use crate::settings::{self, Settings, Updated};
use crate::signals::{self, WebhookKey};

crate::api::handlers![
    get_settings,
    put_settings,
    list_brokers,
    add_broker,
    remove_broker,
    test_broker,
    webhook_key
];

#[utoipa::path(
    tag = "config",
    operation_id = "configGetSettings",
    summary = "Settings",
    description = "The whole settings object with defaults filled in: trading, notifications, advanced and risk thresholds.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Settings>)
    ),
)]
#[get("/config/settings")]
async fn get_settings(app: &State<App>, user: AuthUser) -> ApiResult<Success<Settings>> {
    settings::get(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configUpdateSettings",
    summary = "Change settings",
    description = "Changes any subset of the settings, nested by section. A refusal changes nothing, not even valid fields beside the bad one. The engine applies the tighter of a setting and the tier.",
    security(("bearerAuth" = [])),
    request_body(content = SettingsPatch),
    responses(
        (status = 200, description = "OK", body = Enveloped<Updated>),
        (status = 400, description = "Bad request: INVALID_SETTING, INVALID_RISK_LEVEL, INVALID_REQUEST", body = PlatformError),
        (status = 402, description = "Payment required: SUBSCRIPTION_REQUIRED", body = PlatformError),
        (status = 403, description = "Forbidden: EXCEEDS_TIER_LIMIT, ACCOUNT_SUSPENDED, ACCOUNT_DISABLED", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge)
    ),
)]
#[put("/config/settings", data = "<body>")]
async fn put_settings(
    app: &State<App>,
    user: AuthUser,
    body: Body<Map<String, Value>>,
) -> ApiResult<Success<Updated>> {
    settings::update(app, &user.0, body.0).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configListBrokers",
    summary = "Broker connections",
    description = "The user's broker connections with masked keys; secrets are never returned.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<Connections>)
    ),
)]
#[get("/config/brokers")]
async fn list_brokers(app: &State<App>, user: AuthUser) -> ApiResult<Success<Connections>> {
    brokers::list(app, &user.0).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configAddBroker",
    summary = "Connect a broker",
    description = "Validates the keys through the broker's plugin, then stores them sealed. Answers 201.",
    security(("bearerAuth" = [])),
    request_body(content = NewConnection, example = json!({"broker": "paper", "api_key": "pk_live_1234", "api_secret": "sk_live_abcd", "additional_params": {}})),
    responses(
        (status = 201, description = "Connected.", body = Enveloped<Added>),
        (status = 400, description = "Bad request: UNSUPPORTED_BROKER, INVALID_API_KEY, INVALID_REQUEST", body = PlatformError),
        (status = 403, description = "Forbidden: EXCEEDS_TIER_LIMIT, ACCOUNT_SUSPENDED, ACCOUNT_DISABLED", body = PlatformError),
        (status = 409, description = "Conflict: BROKER_ALREADY_CONNECTED", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 502, response = Platform502PluginError)
    ),
)]
#[post("/config/brokers", data = "<body>")]
async fn add_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    body: Body<NewConnection>,
) -> ApiResult<Success<Added>> {
    brokers::add(app, &user.0, &meta, body.0).await.map(created)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configRemoveBroker",
    summary = "Disconnect a broker",
    description = "Removes the connection and its keys; warns about positions still open on it. Refused while the bot runs on it.",
    security(("bearerAuth" = [])),
    params(
        ("broker_id" = String, Path, description = "The connection's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Removed>),
        (status = 404, response = Platform404NotFound),
        (status = 409, description = "Conflict: BROKER_IN_USE", body = PlatformError)
    ),
)]
#[delete("/config/brokers/<broker_id>")]
async fn remove_broker(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
    broker_id: &str,
) -> ApiResult<Success<Removed>> {
    brokers::remove(app, &user.0, &meta, broker_id)
        .await
        .map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configTestBroker",
    summary = "Test a broker connection",
    description = "Validates the stored keys with the broker now: latency, permissions and account balance.",
    security(("bearerAuth" = [])),
    params(
        ("broker_id" = String, Path, description = "The connection's id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<TestResult>),
        (status = 400, description = "Bad request: INVALID_API_KEY", body = PlatformError),
        (status = 404, response = Platform404NotFound),
        (status = 502, description = "Bad gateway: BROKER_ERROR, PLUGIN_ERROR", body = PlatformError)
    ),
)]
#[post("/config/brokers/<broker_id>/test")]
async fn test_broker(
    app: &State<App>,
    user: AuthUser,
    broker_id: &str,
) -> ApiResult<Success<TestResult>> {
    brokers::test(app, &user.0, broker_id).await.map(ok)
}

#[utoipa::path(
    tag = "config",
    operation_id = "configCreateWebhookKey",
    summary = "Create the signal webhook key",
    description = "Creates the key for POST /webhooks/signals, shown this once. Creating a new one ends the old at once.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Enveloped<WebhookKey>)
    ),
)]
#[post("/config/webhook-key")]
async fn webhook_key(
    app: &State<App>,
    user: AuthUser,
    meta: ClientMeta,
) -> ApiResult<Success<WebhookKey>> {
    signals::create_key(app, &user.0, &meta).await.map(ok)
}

/// The body of `PUT /config/settings`: any part of the settings document. It is described from
/// the tables `settings::update` checks against, so the two cannot disagree; an unknown section
/// or name is refused (INVALID_SETTING), hence `additionalProperties: false` at every level.
pub struct SettingsPatch;

impl utoipa::PartialSchema for SettingsPatch {
    fn schema() -> RefOr<Schema> {
        let closed = |object: ObjectBuilder| {
            object
                .schema_type(Type::Object)
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        };
        let positive = || {
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .exclusive_minimum(Some(0.0))
        };
        let boolean = || ObjectBuilder::new().schema_type(Type::Boolean);
        let trading = closed(ObjectBuilder::new())
            .property(
                "risk_level",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some(settings::RISK_LEVELS)),
            )
            .property(
                "max_position_size_usd",
                positive().description(Some("At most the subscription tier's limit.")),
            )
            .property(
                "max_concurrent_positions",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .description(Some("At most the subscription tier's limit.")),
            )
            .property("max_daily_loss_usd", positive())
            .property(
                "allowed_pairs",
                ArrayBuilder::new()
                    .items(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .pattern(Some(settings::PAIR_PATTERN)),
                    )
                    .min_items(Some(1))
                    .max_items(Some(settings::MAX_ALLOWED_PAIRS)),
            )
            .property(
                "paper_trading",
                boolean().description(Some("`false` needs a paid subscription.")),
            );
        let switches = |names: &mut dyn Iterator<Item = &'static str>| {
            names.fold(closed(ObjectBuilder::new()), |object, name| {
                object.property(name, boolean())
            })
        };
        let thresholds = settings::THRESHOLDS.iter().fold(
            closed(ObjectBuilder::new()),
            |object, (name, default, min, max)| {
                object.property(
                    *name,
                    ObjectBuilder::new()
                        .schema_type(Type::Number)
                        .minimum(Some(*min))
                        .maximum(Some(*max))
                        .default(Some((*default).into())),
                )
            },
        );
        closed(ObjectBuilder::new())
            .property("trading", trading)
            .property(
                "notifications",
                switches(&mut settings::NOTIFICATIONS.iter().map(|(name, _)| *name)),
            )
            .property(
                "advanced",
                switches(&mut settings::ADVANCED.iter().copied()),
            )
            .property("risk_thresholds", thresholds)
            .min_properties(Some(1))
            .examples([json!({
                "trading": {"risk_level": "low", "max_position_size_usd": 250},
                "notifications": {"daily_summary": false},
                "risk_thresholds": {"max_drawdown_pct": 12}
            })])
            .into()
    }
}

impl utoipa::ToSchema for SettingsPatch {}
