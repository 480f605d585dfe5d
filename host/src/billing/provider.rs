//! Payment providers. The default records charges and refunds locally (self-hosted use and
//! tests): the platform's own `payments` table is the record, and nothing leaves the machine.
//!
//! Every call carries an idempotency key: a provider moves money once per key, however often it
//! is called with it (the host calls again after a crash left a payment pending).

use rust_decimal::Decimal;

use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::registry::sha256_hex;

pub struct Charge<'a> {
    pub customer_id: &'a str,
    pub payment_method_id: &'a str,
    pub amount: Decimal,
    pub currency: &'a str,
    pub description: &'a str,
    pub idempotency_key: &'a str,
}

pub struct Refund<'a> {
    pub customer_id: &'a str,
    pub amount: Decimal,
    pub currency: &'a str,
    pub idempotency_key: &'a str,
}

#[async_trait::async_trait]
pub trait PaymentProvider: Send + Sync {
    /// The name stored with each payment.
    fn name(&self) -> &'static str;
    /// Takes a payment; the provider's reference for it. `PAYMENT_FAILED` when it is declined.
    async fn charge(&self, charge: &Charge<'_>) -> ApiResult<String>;
    /// Returns money to a customer; the provider's reference for it.
    async fn refund(&self, refund: &Refund<'_>) -> ApiResult<String>;
}

/// Records payments without a payment service. Like a payment service's test mode, a payment
/// method id containing `declined` (e.g. `pm_card_chargeDeclined`) is declined; every other
/// charge succeeds. The reference follows from the idempotency key, so a repeated call is the
/// same payment.
pub struct LocalProvider;

#[async_trait::async_trait]
impl PaymentProvider for LocalProvider {
    fn name(&self) -> &'static str {
        "local"
    }

    async fn charge(&self, charge: &Charge<'_>) -> ApiResult<String> {
        if charge
            .payment_method_id
            .to_ascii_lowercase()
            .contains("declined")
        {
            return Err(ApiError::new(
                ErrorCode::PaymentFailed,
                "The payment method was declined",
            ));
        }
        tracing::info!(customer = charge.customer_id, amount = %charge.amount, currency = charge.currency,
            description = charge.description, "payment recorded locally");
        Ok(format!(
            "local_ch_{}",
            &sha256_hex(charge.idempotency_key.as_bytes())[..24]
        ))
    }

    async fn refund(&self, refund: &Refund<'_>) -> ApiResult<String> {
        tracing::info!(customer = refund.customer_id, amount = %refund.amount, currency = refund.currency,
            "refund recorded locally");
        Ok(format!(
            "local_re_{}",
            &sha256_hex(refund.idempotency_key.as_bytes())[..24]
        ))
    }
}
