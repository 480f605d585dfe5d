//! `/api/v1/webhooks/*`: inbound calls that authenticate themselves (no bearer token).

use rocket::data::{Data, ToByteUnit};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::{Route, State, post, routes};

use crate::App;
use crate::api::envelope::{Body, Success, ok};
use crate::billing::webhook::{self, Received as PaymentReceived};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::signals::{self, Received, SignalRequest};

/// Largest payment-provider event accepted.
const MAX_EVENT_BYTES: u64 = 256 * 1024;

pub fn routes() -> Vec<Route> {
    routes![signal, payment]
}

#[post("/webhooks/signals", data = "<body>")]
async fn signal(app: &State<App>, body: Body<SignalRequest>) -> ApiResult<Success<Received>> {
    signals::receive(app, body.0).await.map(ok)
}

/// The `Stripe-Signature` header, if any.
pub struct StripeSignature(Option<String>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for StripeSignature {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        Outcome::Success(StripeSignature(
            req.headers()
                .get_one("Stripe-Signature")
                .map(str::to_string),
        ))
    }
}

#[post("/webhooks/payments", data = "<body>")]
async fn payment(
    app: &State<App>,
    signature: StripeSignature,
    body: Data<'_>,
) -> ApiResult<Success<PaymentReceived>> {
    // The signature covers the exact bytes, so the body is read raw.
    let bytes = body
        .open(MAX_EVENT_BYTES.bytes())
        .into_bytes()
        .await
        .map_err(|err| ApiError::internal(format!("reading a payment event: {err}")))?;
    if !bytes.is_complete() {
        return Err(ApiError::code(ErrorCode::PayloadTooLarge));
    }
    webhook::receive(app, signature.0.as_deref(), &bytes.into_inner())
        .await
        .map(ok)
}
