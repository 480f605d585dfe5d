//! Companion set C: `POST /api/restart` (admin) restarts the trading engine gracefully.

use rocket::{Route, Shutdown, State, post, routes};

use super::Json;
use crate::App;
use crate::auth::{AdminUser, ClientMeta};
use crate::companion::restart::{self as engine_restart, Restarted};
use crate::error::ApiResult;

pub fn routes() -> Vec<Route> {
    routes![restart]
}

#[post("/api/restart")]
async fn restart(
    app: &State<App>,
    admin: AdminUser,
    meta: ClientMeta,
    shutdown: Shutdown,
) -> ApiResult<Json<Restarted>> {
    let restarted = engine_restart::restart(app, Some((&admin.0, &meta))).await?;
    if app.config.exit_on_restart {
        // Rocket finishes this response, then stops; the supervisor starts the server again.
        shutdown.notify();
    }
    Ok(Json(restarted))
}
