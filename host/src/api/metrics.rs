//! `GET /metrics`: the platform's counters in Prometheus' text format, for an admin's token or
//! the configured scrape token (`TRADEHOST_METRICS_TOKEN`).

use rocket::http::ContentType;
use rocket::outcome::Outcome;
use rocket::request::{FromRequest, Request};
use rocket::{State, get};
use subtle::ConstantTimeEq;

use crate::App;
use crate::admin::metrics;
use crate::api::openapi::prelude::*;
use crate::auth::AdminUser;
use crate::error::{ApiError, ApiResult};

crate::api::handlers![prometheus];

/// A caller allowed to read the metrics.
pub struct MetricsReader;

#[rocket::async_trait]
impl<'r> FromRequest<'r> for MetricsReader {
    type Error = ApiError;

    async fn from_request(req: &'r Request<'_>) -> rocket::request::Outcome<Self, ApiError> {
        let presented = req
            .headers()
            .get_one("Authorization")
            .and_then(|h| h.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let scrape_token = req
            .rocket()
            .state::<App>()
            .and_then(|app| app.metrics_token.as_deref());
        if let (Some(expected), Some(given)) = (scrape_token, presented)
            && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
        {
            return Outcome::Success(MetricsReader);
        }
        match AdminUser::from_request(req).await {
            Outcome::Success(_) => Outcome::Success(MetricsReader),
            Outcome::Error(err) => Outcome::Error(err),
            Outcome::Forward(status) => Outcome::Forward(status),
        }
    }
}

#[utoipa::path(
    tag = "health",
    operation_id = "prometheusMetrics",
    summary = "Prometheus metrics",
    description = "The platform's counters in Prometheus' text format (requests, 5xx answers, response time, uptime, users by tier, active bots, open positions, scans, 24 h trades and volume, WebSocket users, MRR). For an admin's bearer token or the scrape token `TRADEHOST_METRICS_TOKEN`. Errors use `{detail, code}` (outside `/api`).",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "Prometheus text exposition format 0.0.4.", body = String, content_type = "text/plain; version=0.0.4", example = json!("# TYPE tradehost_http_requests_total counter\ntradehost_http_requests_total 1234\n")),
        (status = 401, description = "Not authenticated: Missing bearer token; The token has expired", body = DetailError, headers(("WWW-Authenticate"))),
        (status = 403, description = "Forbidden: You are not allowed to do this", body = DetailError)
    ),
)]
#[get("/metrics")]
async fn prometheus(app: &State<App>, _reader: MetricsReader) -> ApiResult<(ContentType, String)> {
    let body = metrics::prometheus(app).await?;
    Ok((
        ContentType::new("text", "plain").with_params(("version", "0.0.4")),
        body,
    ))
}
