//! Restarting the trading engine in place (companion set C).

use std::sync::Arc;

use super::{Cell, closing, persist, publish_status, resume_all};
use crate::App;
use crate::error::{ApiError, ApiResult};

/// Restarts the trading engine in place: each loaded bot that is scanning asks for its
/// positions to be closed first when `close_positions` is set, has its state saved, and is then
/// dropped so that its next scan loads it again from the database with fresh plugin instances.
/// Returns how many scanning bots were restarted.
pub async fn restart(app: &App, close_positions: bool) -> ApiResult<usize> {
    let cells: Vec<Arc<Cell>> = app.engine.cells.iter().map(|c| c.clone()).collect();
    let mut restarted = 0;
    for cell in cells {
        let mut guard = cell.trader.lock().await;
        let Some(trader) = guard.as_mut() else {
            continue;
        };
        if trader.status().is_scanned() {
            if close_positions {
                let outcome = closing::close_all(app, trader, "manual").await;
                for (position_id, error) in outcome.failures {
                    tracing::warn!(user_id = %trader.user_id, %position_id, %error, "a close before the restart failed; it is retried");
                }
            }
            persist(app, trader).await?;
            publish_status(app, trader, "Trading engine restarted");
            restarted += 1;
        }
        *guard = None;
    }
    resume_all(app)
        .await
        .map_err(|err| ApiError::internal(format!("rescheduling bots after a restart: {err:#}")))?;
    tracing::info!(restarted, close_positions, "trading engine restarted");
    Ok(restarted)
}
