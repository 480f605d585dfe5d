//! Plans and tiers, subscriptions with proration and payments, usage counting and the payment
//! provider's webhook.

pub mod plans;
pub mod provider;
pub mod subscriptions;
pub mod usage;
pub mod webhook;
