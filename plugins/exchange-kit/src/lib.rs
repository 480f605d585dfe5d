//! What every exchange broker plugin needs besides its venue's own API:
//!
//! - [`request`]: HTTP through the host's `http` import, with transport failures mapped to the
//!   broker world's errors (nothing sent, outcome unknown) and rate limits to `rate-limited`;
//! - [`numbers`]: exact decimals as the interface and the venues write them;
//! - [`query`]: query strings and form bodies, encoded the way venues sign them;
//! - [`symbols`]: tradehost's `BASE-QUOTE` names;
//! - [`venue`]: holdings as positions, and [`export_venue!`] for the component glue.
//!
//! Everything but the `request::send` import works natively, so venue logic is tested without a
//! host.

pub mod numbers;
pub mod query;
pub mod request;
pub mod symbols;
pub mod venue;
