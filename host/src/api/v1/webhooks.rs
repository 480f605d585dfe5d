//! `/api/v1/webhooks/*`: inbound calls that authenticate themselves (no bearer token).

use rocket::{Route, State, post, routes};

use crate::App;
use crate::api::envelope::{Body, Success, ok};
use crate::error::ApiResult;
use crate::signals::{self, Received, SignalRequest};

pub fn routes() -> Vec<Route> {
    routes![signal]
}

#[post("/webhooks/signals", data = "<body>")]
async fn signal(app: &State<App>, body: Body<SignalRequest>) -> ApiResult<Success<Received>> {
    signals::receive(app, body.0).await.map(ok)
}
