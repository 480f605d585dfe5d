//! The platform API under `/api/v1`.

pub mod account;
pub mod admin;
pub mod analytics;
pub mod auth;
pub mod config;
pub mod notifications;
pub mod plugins;
pub mod subscription;
pub mod trading;
pub mod webhooks;

use rocket::Route;

pub fn routes() -> Vec<Route> {
    [
        auth::routes(),
        admin::routes(),
        plugins::routes(),
        trading::routes(),
        account::routes(),
        analytics::routes(),
        config::routes(),
        notifications::routes(),
        subscription::routes(),
        webhooks::routes(),
    ]
    .concat()
}
