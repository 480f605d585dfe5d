//! `GET /health`: one health route for the backend (A) and the gateway (B), their fields
//! together. 503 when the database does not answer.

use rocket::http::Status;
use rocket::{State, get};
use serde::Serialize;
use utoipa::ToSchema;

use super::Json;
use crate::App;
use crate::store::{iso8601, now_ms};

crate::api::handlers![health];

#[derive(Serialize, ToSchema)]
pub struct HealthStatus {
    #[schema(pattern = "^(healthy|unhealthy)$", example = "healthy")]
    status: &'static str,
    #[schema(format = DateTime, example = "2026-11-22T06:40:00.123456Z")]
    timestamp: String,
    /// Always `tradehost`.
    service: &'static str,
    #[schema(example = "0.1.0")]
    version: &'static str,
    /// `ok` or `unreachable`.
    #[schema(pattern = "^(ok|unreachable)$")]
    database: &'static str,
    /// This instance among the others of its deployment (absent when the database does not
    /// answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    instance: Option<crate::cluster::Standing>,
}

#[utoipa::path(
    tag = "health",
    operation_id = "health",
    summary = "Health check",
    description = "Whether the server and its database answer (companion sets A and B), and this instance's id, the bots it owns and the other instances it sees. No token needed.",
    responses(
        (status = 200, description = "Healthy.", body = HealthStatus),
        (status = 503, description = "The database does not answer.", body = HealthStatus)
    ),
)]
#[get("/health")]
async fn health(app: &State<App>) -> (Status, Json<HealthStatus>) {
    let database = app.db.ping().await.is_ok();
    let instance = match database {
        true => crate::cluster::standing(app).await.ok(),
        false => None,
    };
    let status = if database {
        Status::Ok
    } else {
        Status::ServiceUnavailable
    };
    (
        status,
        Json(HealthStatus {
            status: if database { "healthy" } else { "unhealthy" },
            timestamp: iso8601(now_ms()),
            service: "tradehost",
            version: crate::VERSION,
            database: if database { "ok" } else { "unreachable" },
            instance,
        }),
    )
}
