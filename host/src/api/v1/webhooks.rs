//! `/api/v1/webhooks/*`: inbound calls that authenticate themselves (no bearer token).

use rocket::data::{Data, ToByteUnit};
use rocket::request::{FromRequest, Outcome, Request};
use rocket::{State, get, post};

use crate::App;
use crate::api::envelope::{Body, Success, ok};
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::billing::webhook::{self, Received as PaymentReceived};
use crate::engine::signals::SignalView;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::signals::{self, Reader, Received, SignalRequest};

/// Largest payment-provider event accepted.
const MAX_EVENT_BYTES: u64 = 256 * 1024;

crate::api::handlers![signal, signal_status, payment];

#[utoipa::path(
    tag = "webhooks",
    operation_id = "webhooksSignal",
    summary = "Receive a trading signal",
    description = "For alerting tools: `buy` opens a long when flat or closes a short, `sell` the mirror image, `close` closes the symbol's position. Authenticated by the `api_key` field (no bearer token). The running bot acts in its next scan through the same settings, limits and risk rules as a strategy's signal.",
    request_body(content = SignalRequest, example = json!({"api_key": "whk_6a1f...", "symbol": "BTC-USD", "action": "buy", "price": 64000.0, "strategy": "tradingview-breakout", "size_usd": 250.0, "order_type": "limit", "limit_price": "63500.5"})),
    responses(
        (status = 200, description = "Queued for the bot.", body = Enveloped<Received>),
        (status = 400, description = "Bad request: NOT_RUNNING, INVALID_REQUEST", body = PlatformError),
        (status = 401, description = "Not authenticated: TOKEN_INVALID", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 429, description = "Too many requests: RATE_LIMIT_EXCEEDED", body = PlatformError, headers(("Retry-After")))
    ),
)]
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
#[utoipa::path(
    tag = "webhooks",
    operation_id = "webhookSignalStatus",
    summary = "What became of a signal",
    description = "The outcome of a signal by the `trade_id` its sender got: for the sender with the webhook key in `X-Webhook-Key`, or for the user with a bearer token. (Without either: `TOKEN_INVALID`.)",
    params(
        ("trade_id" = String, Path, description = "The signal's trade_id.", example = json!("6f1c2a9e-3b1d-4c55-9a61-2f0d8e7b4a10")),
        ("X-Webhook-Key" = Option<String>, Header, description = "The user's webhook key (instead of a bearer token).")
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<SignalView>),
        (status = 401, response = Platform401TokenExpiredOrTokenInvalid),
        (status = 404, response = Platform404NotFound)
    ),
)]
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

#[utoipa::path(
    tag = "webhooks",
    operation_id = "webhooksPayment",
    summary = "Receive a payment-provider event",
    description = "Stripe-compatible events signed with `PAYMENT_WEBHOOK_SECRET` (`Stripe-Signature: t=…,v1=<hex HMAC-SHA256 of \"t.body\">`, five minutes' tolerance). Handles `invoice.payment_succeeded`, `invoice.payment_failed`, `customer.subscription.deleted` and `customer.subscription.updated`; a repeated event id is answered without acting again. Without a configured secret every event gets SERVICE_UNAVAILABLE.",
    params(
        ("Stripe-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC>", example = json!("t=1795329600,v1=5257a869..."))
    ),
    request_body(content = Object, description = "At most 256 KiB, raw bytes as signed.", example = json!({"id": "evt_1Q2w3E", "type": "invoice.payment_succeeded"})),
    responses(
        (status = 200, description = "OK", body = Enveloped<PaymentReceived>),
        (status = 400, response = Platform400InvalidBody),
        (status = 401, description = "Not authenticated: INVALID_SIGNATURE", body = PlatformError),
        (status = 413, response = Platform413PayloadTooLarge),
        (status = 503, description = "Service unavailable: SERVICE_UNAVAILABLE", body = PlatformError)
    ),
)]
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
