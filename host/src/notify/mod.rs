//! Notifications: telling users what happened by mail and through their own outgoing webhooks.
//!
//! What happens is recorded as a notification event in the transaction that makes it happen (a
//! fill booked, an alarm raised), so a crash cannot lose it. The [dispatcher](dispatch) turns
//! each event into mail (as the user's notification settings say) and into one queued delivery
//! per webhook that wants it, in one transaction with marking the event dispatched; the
//! [sender](delivery) posts the deliveries, signed with the user's secret, and retries with
//! backoff. [Summaries](summaries) are events made once per user and period.

pub mod delivery;
pub mod dispatch;
pub mod render;
pub mod summaries;
pub mod webhooks;

use crate::App;

/// Runs the dispatcher, the sender and the summaries until the process ends.
pub fn spawn(app: &App) {
    let dispatcher = app.clone();
    tokio::spawn(async move { dispatch::run(dispatcher).await });
    let sender = app.clone();
    tokio::spawn(async move { delivery::run(sender).await });
    let summaries = app.clone();
    tokio::spawn(async move { summaries::run(summaries).await });
}
