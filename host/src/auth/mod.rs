//! Authentication: passwords, access tokens, sessions with rotating refresh tokens, and guards.

pub mod guards;
pub mod jwt;
pub mod password;
pub mod service;
pub mod sessions;
pub mod tokens;

pub use guards::{AdminUser, AuthUser, ClientMeta};
pub use sessions::Principal;
