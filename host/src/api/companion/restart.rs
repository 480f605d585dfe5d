//! Companion set C: `POST /api/restart` (admin) restarts the trading engine gracefully.

use rocket::{Shutdown, State, post};

use super::Json;
use crate::App;
use crate::api::openapi::prelude::*;
use crate::auth::{AdminUser, ClientMeta};
use crate::companion::restart::{self as engine_restart, Restarted};
use crate::error::ApiResult;

crate::api::handlers![restart];

#[utoipa::path(
    tag = "companion-restart",
    operation_id = "restart",
    summary = "Restart the trading engine",
    description = "Admins only. Each running bot saves its state, closes its positions first when `TRADEHOST_CLOSE_POSITIONS_ON_RESTART=true`, and is loaded again with fresh plugin instances. With `TRADEHOST_EXIT_ON_RESTART=true` the process exits after answering, for its supervisor to restart it. `tradehost restart` does the same from the command line.",
    security(("bearerAuth" = [])),
    responses(
        (status = 200, description = "OK", body = Restarted),
        (status = 403, description = "Forbidden: Admin role required", body = CompanionError)
    ),
)]
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
