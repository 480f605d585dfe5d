//! Several instances on one database: what they tell each other ([`bus`]).

pub mod bus;

pub use bus::{Bus, BusStatus, Message, Received};
