//! Rate limits: per user by tier, per client IP on the auth routes and for other anonymous
//! requests, and failed logins per e-mail. Fixed one-minute windows, so `X-RateLimit-Reset` is the
//! window's end. The limiter is an interface: counted in this process's memory ([`memory`]), or
//! shared by every instance through Redis ([`shared`]) when `REDIS_URL` is set.

pub mod memory;
pub mod shared;

pub use memory::InMemoryRateLimiter;
pub use shared::RedisRateLimiter;

use std::time::Duration;

use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::uri::Origin;
use rocket::http::{Header, Method};
use rocket::{Data, Request, Response};

use crate::App;
use crate::auth::guards::{Bearer, session_check};
use crate::billing::plans::{Entitlement, Tier};
use crate::store::users::UserRow;

pub const MINUTE: Duration = Duration::from_secs(60);

/// The outcome of counting one request against a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Unix time (seconds) at which the window resets.
    pub reset_at: i64,
}

impl Decision {
    /// The decision for a fixed window of `length` seconds that began at `start` and holds
    /// `count` events (this one included when `counted`).
    pub fn of_window(count: u32, limit: u32, start: i64, length: i64, counted: bool) -> Self {
        Decision {
            allowed: if counted {
                count <= limit
            } else {
                count < limit
            },
            limit,
            remaining: limit.saturating_sub(count),
            reset_at: start + length,
        }
    }

    pub fn retry_after_secs(&self) -> u64 {
        (self.reset_at - chrono::Utc::now().timestamp()).max(1) as u64
    }
}

#[rocket::async_trait]
pub trait RateLimiter: Send + Sync + 'static {
    /// Counts one event under `key` and says whether it is within `limit` per `window`.
    async fn hit(&self, key: &str, limit: u32, window: Duration) -> Decision;
    /// Says whether one more event would be allowed, without counting it.
    async fn peek(&self, key: &str, limit: u32, window: Duration) -> Decision;
    async fn clear(&self, key: &str);
    /// Where the counts are kept, for `/health` and `/metrics`.
    fn status(&self) -> LimiterStatus {
        LimiterStatus::default()
    }
}

/// Where a limiter keeps its counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LimiterStatus {
    /// Counts are shared by every instance (Redis).
    pub shared: bool,
    /// The shared store answers now; false while this instance counts on its own.
    pub reachable: bool,
    /// Decisions made in this process's memory because the shared store did not answer.
    pub fallback_decisions: u64,
}

/// A user's requests per minute: their effective tier's, scaled by the operator's multiplier.
/// Operators work at the top tier's budget whatever their own subscription.
pub fn user_limit(user: &UserRow, multiplier: u32) -> u32 {
    let tier = if user.role == "admin" {
        Tier::Enterprise
    } else {
        Entitlement::of(user, crate::store::now_ms()).effective
    };
    tier_limit(tier, multiplier)
}

/// A tier's requests per minute, scaled by the operator's multiplier.
pub fn tier_limit(tier: Tier, multiplier: u32) -> u32 {
    tier.limits()
        .api_calls_per_minute
        .saturating_mul(multiplier)
}

/// The decision for this request, for the response headers and the 429 route.
#[derive(Debug, Clone, Copy)]
pub struct RequestDecision(pub Option<Decision>);

#[rocket::async_trait]
impl<'r> rocket::request::FromRequest<'r> for RequestDecision {
    type Error = std::convert::Infallible;

    async fn from_request(req: &'r Request<'_>) -> rocket::request::Outcome<Self, Self::Error> {
        rocket::request::Outcome::Success(*req.local_cache(|| RequestDecision(None)))
    }
}

/// The path a request had before a limited request was rerouted to [`LIMITED_PATH`].
#[derive(Debug, Clone)]
pub struct OriginalPath(pub Option<String>);

pub const LIMITED_PATH: &str = "/__tradehost/rate-limited";

/// The platform's and the companion backend's sign-in routes share the per-IP auth budget.
fn is_auth_route(path: &str) -> bool {
    path.starts_with("/api/v1/auth/") || path.starts_with("/api/auth/")
}

/// The routes that take credentials (sign-in, registration, refresh, password reset): they stay
/// on the per-IP auth budget even with a valid bearer, which would otherwise buy a guesser the
/// larger per-user budget.
fn is_credential_route(path: &str) -> bool {
    let Some(action) = path
        .strip_prefix("/api/v1/auth/")
        .or_else(|| path.strip_prefix("/api/auth/"))
    else {
        return false;
    };
    matches!(
        action.trim_end_matches('/'),
        "login" | "register" | "refresh" | "reset-password" | "reset-password/confirm"
    )
}

/// The per-IP bucket of a client: its address, or for IPv6 its /64 (one subscriber usually has
/// a whole /64, so single addresses would give them billions of buckets).
pub fn ip_bucket(ip: Option<std::net::IpAddr>) -> String {
    match ip {
        Some(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
        Some(ip) => ip.to_string(),
        None => "unknown".into(),
    }
}

/// Counts every request before routing. A request over its limit is rerouted to a route that
/// answers 429, so its handler never runs.
pub struct RateLimitFairing;

#[rocket::async_trait]
impl Fairing for RateLimitFairing {
    fn info(&self) -> Info {
        Info {
            name: "rate limits",
            kind: Kind::Request | Kind::Response,
        }
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        let Some(app) = req.rocket().state::<App>() else {
            return;
        };
        let path = req.uri().path().as_str();
        let ip = ip_bucket(req.client_ip());
        // The session check the route's guard will use. A request whose token is signed out,
        // expired or forged is not the user's: it counts as anonymous, so an old token cannot
        // spend its user's budget.
        let credentials = is_credential_route(path);
        let signed_in = match Bearer::of(req) {
            Bearer::Valid(_) if !credentials => session_check(req).await.as_ref().ok(),
            _ => None,
        };
        let (key, limit) = match signed_in {
            _ if credentials => (format!("auth-ip:{ip}"), app.config.auth_rate_limit),
            Some(principal) => {
                app.usage.api_call(&principal.user_id);
                (
                    format!("user:{}", principal.user_id),
                    user_limit(&principal.user, app.config.api_rate_multiplier),
                )
            }
            None if is_auth_route(path) => (format!("auth-ip:{ip}"), app.config.auth_rate_limit),
            None => (format!("ip:{ip}"), app.config.anon_rate_limit),
        };
        let decision = app.limiter.hit(&key, limit, MINUTE).await;
        req.local_cache(|| RequestDecision(Some(decision)));
        if !decision.allowed {
            let path = path.to_string();
            req.local_cache(|| OriginalPath(Some(path)));
            req.set_method(Method::Get);
            req.set_uri(Origin::parse(LIMITED_PATH).expect("static path"));
        }
    }

    async fn on_response<'r>(&self, req: &'r Request<'_>, res: &mut Response<'r>) {
        if let RequestDecision(Some(decision)) = req.local_cache(|| RequestDecision(None)) {
            res.set_header(Header::new("X-RateLimit-Limit", decision.limit.to_string()));
            res.set_header(Header::new(
                "X-RateLimit-Remaining",
                decision.remaining.to_string(),
            ));
            res.set_header(Header::new(
                "X-RateLimit-Reset",
                decision.reset_at.to_string(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_clients_share_their_64() {
        let ip = |s: &str| Some(s.parse().unwrap());
        assert_eq!(ip_bucket(ip("203.0.113.7")), "203.0.113.7");
        assert_eq!(ip_bucket(ip("2001:db8:1:2:aaaa::1")), "2001:db8:1:2::/64");
        assert_eq!(
            ip_bucket(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")),
            ip_bucket(ip("2001:db8:1:2::9"))
        );
        assert_ne!(
            ip_bucket(ip("2001:db8:1:3::1")),
            ip_bucket(ip("2001:db8:1:2::1"))
        );
        assert_eq!(ip_bucket(ip("::ffff:198.51.100.1")), "198.51.100.1");
        assert_eq!(ip_bucket(None), "unknown");
    }

    #[test]
    fn credential_routes_keep_the_ip_budget() {
        for path in [
            "/api/v1/auth/login",
            "/api/v1/auth/register",
            "/api/v1/auth/refresh",
            "/api/v1/auth/reset-password",
            "/api/v1/auth/reset-password/confirm",
            "/api/auth/login",
            "/api/auth/register",
        ] {
            assert!(is_credential_route(path), "{path}");
        }
        for path in [
            "/api/v1/auth/me",
            "/api/v1/auth/logout",
            "/api/v1/trading/status",
        ] {
            assert!(!is_credential_route(path), "{path}");
        }
    }
}
