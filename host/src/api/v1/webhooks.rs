//! `/api/v1/webhooks/*`: inbound calls that authenticate themselves (no bearer token).

use rocket::data::{Data, ToByteUnit};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::{Route, State, get, post, routes};

use crate::App;
use crate::api::envelope::{Body, Success, ok};
use crate::auth::AuthUser;
use crate::billing::webhook::{self, Received as PaymentReceived};
use crate::engine::signals::SignalView;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::signals::{self, Reader, Received, SignalRequest};

/// Largest payment-provider event accepted.
const MAX_EVENT_BYTES: u64 = 256 * 1024;

pub fn routes() -> Vec<Route> {
    routes![signal, signal_status, payment]
}

#[post("/webhooks/signals", data = "<body>")]
async fn signal(app: &State<App>, body: Body<SignalRequest>) -> ApiResult<Success<Received>> {
    signals::receive(app, body.0).await.map(ok)
}

/// The `X-Webhook-Key` header, if any.
pub struct WebhookKey(Option<String>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for WebhookKey {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Self::Error> {
        Outcome::Success(WebhookKey(
            req.headers().get_one("X-Webhook-Key").map(str::to_string),
        ))
    }
}

/// What became of a signal: for its sender (the webhook key in `X-Webhook-Key`) or the user.
#[get("/webhooks/signals/<trade_id>")]
async fn signal_status(
    app: &State<App>,
    key: WebhookKey,
    user: Option<AuthUser>,
    trade_id: &str,
) -> ApiResult<Success<SignalView>> {
    let reader = match (&key.0, &user) {
        (Some(key), _) => Reader::WebhookKey(key),
        (None, Some(user)) => Reader::User(&user.0),
        (None, None) => {
            return Err(ApiError::new(
                ErrorCode::TokenInvalid,
                "Send the webhook key in X-Webhook-Key, or a bearer token",
            ));
        }
    };
    signals::status(app, reader, trade_id).await.map(ok)
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
