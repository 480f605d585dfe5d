//! The companion route sets (docs/companion.md), each with its own shapes and error body (see
//! `envelope::Flavor`): A backend, B gateway, C restart, D ledger, E dashboard, F KPI, and the
//! health route they share.

pub mod backend;
pub mod dashboard;
pub mod gateway;
pub mod health;
pub mod kpi;
pub mod ledger;
pub mod restart;
pub mod safety;

use std::io::Cursor;

use rocket::Route;
use rocket::http::{ContentType, Status};
use rocket::request::Request;
use rocket::response::{self, Responder, Response};
use serde::Serialize;

use crate::error::{ApiError, ApiResult};

/// A JSON body as is (the companion sets have no platform envelope).
pub struct Json<T>(pub T);

impl<'r, T: Serialize> Responder<'r, 'static> for Json<T> {
    fn respond_to(self, _req: &'r Request<'_>) -> response::Result<'static> {
        json_response(Status::Ok, &self.0)
    }
}

/// `{success: true, data}`: the dashboard and KPI sets' envelope.
pub struct Data<T>(pub T);

/// The body of a dashboard or KPI answer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct DataEnvelope<T> {
    /// Always `true`.
    pub success: bool,
    pub data: T,
}

impl<'r, T: Serialize> Responder<'r, 'static> for Data<T> {
    fn respond_to(self, _req: &'r Request<'_>) -> response::Result<'static> {
        json_response(
            Status::Ok,
            &DataEnvelope {
                success: true,
                data: self.0,
            },
        )
    }
}

fn json_response<T: Serialize>(status: Status, value: &T) -> response::Result<'static> {
    let body = serde_json::to_string(value).map_err(|err| {
        tracing::error!("response serialisation failed: {err}");
        Status::InternalServerError
    })?;
    Response::build()
        .status(status)
        .header(ContentType::JSON)
        .sized_body(body.len(), Cursor::new(body))
        .ok()
}

/// An optional whole-number query parameter; anything else is a clear error naming it.
pub fn int_param(name: &str, raw: Option<&str>) -> ApiResult<Option<i64>> {
    raw.map(str::trim)
        .filter(|raw| !raw.is_empty())
        .map(|raw| {
            raw.parse::<i64>().map_err(|_| {
                ApiError::invalid_field(name, "must be a whole number").detail("in", "query")
            })
        })
        .transpose()
}

// Every companion route, for the main port, and its documentation.
crate::api::route_sets![
    health, backend, gateway, restart, ledger, dashboard, kpi, safety
];

/// The dashboard port's routes (E and the health route).
pub fn dashboard_port_routes() -> Vec<Route> {
    [health::routes(), dashboard::routes()].concat()
}

/// The restart/ledger/KPI port's routes (C, D, F and the health route).
pub fn companion_port_routes() -> Vec<Route> {
    [
        health::routes(),
        restart::routes(),
        ledger::routes(),
        kpi::routes(),
    ]
    .concat()
}
