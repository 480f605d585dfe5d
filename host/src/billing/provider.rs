//! Payment providers. The default records charges and refunds locally (self-hosted use and
//! tests): the platform's own `payments` table is the record, and nothing leaves the machine.

use rust_decimal::Decimal;

use crate::error::ApiResult;
use crate::store::new_id;

pub struct Charge<'a> {
    pub customer_id: &'a str,
    pub payment_method_id: &'a str,
    pub amount: Decimal,
    pub currency: &'a str,
    pub description: &'a str,
}

#[async_trait::async_trait]
pub trait PaymentProvider: Send + Sync {
    /// The name stored with each payment.
    fn name(&self) -> &'static str;
    /// Takes a payment; the provider's reference for it.
    async fn charge(&self, charge: &Charge<'_>) -> ApiResult<String>;
    /// Returns money to a customer; the provider's reference for it.
    async fn refund(&self, customer_id: &str, amount: Decimal, currency: &str)
    -> ApiResult<String>;
}

/// Records payments without a payment service: every charge succeeds.
pub struct LocalProvider;

#[async_trait::async_trait]
impl PaymentProvider for LocalProvider {
    fn name(&self) -> &'static str {
        "local"
    }

    async fn charge(&self, charge: &Charge<'_>) -> ApiResult<String> {
        tracing::info!(customer = charge.customer_id, amount = %charge.amount, currency = charge.currency,
            description = charge.description, "payment recorded locally");
        Ok(format!("local_ch_{}", new_id().replace('-', "")))
    }

    async fn refund(
        &self,
        customer_id: &str,
        amount: Decimal,
        currency: &str,
    ) -> ApiResult<String> {
        tracing::info!(customer = customer_id, %amount, currency, "refund recorded locally");
        Ok(format!("local_re_{}", new_id().replace('-', "")))
    }
}
