//! The order supervisor: a background loop that follows up every live order when its next
//! check is due and retries every requested close when its backoff is over, for every user,
//! whether their bot is running or not. At start it first goes through everything left live
//! by the previous run.

use std::time::Duration;

use super::{closing, lock, reconcile};
use crate::App;
use crate::store::{now_ms, orders};

/// How often the supervisor looks for due work.
const TICK: Duration = Duration::from_millis(100);

/// Runs forever; spawned once at liftoff.
pub async fn run(app: App) {
    let mut first = true;
    loop {
        match orders::users_with_due_work(&app.db.pool, now_ms()).await {
            Ok(users) => {
                for user_id in users {
                    // With several instances, each follows up the users it holds.
                    if app.cluster.clustered() && !app.engine.holds(&user_id) {
                        continue;
                    }
                    if let Err(err) = work(&app, &user_id, first).await {
                        tracing::warn!(%user_id, error = %err, "order supervision failed; retried later");
                    }
                }
            }
            Err(err) => tracing::error!(error = %err, "cannot read the orders to supervise"),
        }
        first = false;
        tokio::time::sleep(TICK).await;
    }
}

/// Reconciles the user's due orders (all of them with `all`) and attempts their due closes.
pub async fn work(app: &App, user_id: &str, all: bool) -> Result<(), String> {
    let cell = app.engine.cell(user_id);
    let mut guard = lock(app, &cell).await.map_err(|err| err.message)?;
    let trader = guard.as_mut().expect("loaded");
    let reconciled = reconcile::orders(app, trader, all).await;
    closing::attempt_due(app, trader).await?;
    reconciled
}
