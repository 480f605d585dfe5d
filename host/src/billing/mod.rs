//! Plans and tiers; subscriptions, proration and payments build on this.

pub mod plans;
