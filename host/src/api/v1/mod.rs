//! The platform API under `/api/v1`.

pub mod admin;
pub mod auth;
pub mod plugins;

use rocket::Route;

pub fn routes() -> Vec<Route> {
    [auth::routes(), admin::routes(), plugins::routes()].concat()
}
