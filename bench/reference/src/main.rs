//! The reference the authenticated-read benchmark compares tradehost with (`bench/reads.sh`):
//! Rocket 0.5 with nothing but what any authenticated JSON read needs. A request guard verifies
//! an HS256 bearer exactly as tradehost does (same crate, same validation: HS256 only, no leeway,
//! `exp` and `sub` required), the handler looks the token's subject up in an in-memory map and
//! answers the record in tradehost's success envelope. Same allocator (mimalloc) as tradehost, so
//! the ratio measures the request path.
//!
//! Environment: `JWT_SECRET_KEY` (tradehost's secret, so one token opens both), `REFERENCE_USER_ID`
//! and `REFERENCE_EMAIL` (the record served), `PORT`.

use std::collections::HashMap;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rocket::http::Status;
use rocket::request::{FromRequest, Outcome, Request};
use rocket::serde::json::Json;
use rocket::{State, get, launch, routes};
use serde::{Deserialize, Serialize};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Deserialize)]
struct Claims {
    sub: String,
}

struct Verifier {
    key: DecodingKey,
    validation: Validation,
}

/// The fields of tradehost's `GET /auth/me` answer.
#[derive(Clone, Serialize)]
struct UserRecord {
    user_id: String,
    email: String,
    full_name: String,
    subscription_tier: &'static str,
    trial_active: bool,
    trial_ends_at: Option<String>,
    created_at: &'static str,
}

#[derive(Serialize)]
struct Envelope<T> {
    success: bool,
    data: T,
}

struct Subject(String);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for Subject {
    type Error = ();

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, ()> {
        let verifier = req.rocket().state::<Verifier>().expect("managed");
        let token = req
            .headers()
            .get_one("Authorization")
            .and_then(|value| value.strip_prefix("Bearer "));
        match token.map(|t| jsonwebtoken::decode::<Claims>(t, &verifier.key, &verifier.validation))
        {
            Some(Ok(data)) => Outcome::Success(Subject(data.claims.sub)),
            _ => Outcome::Error((Status::Unauthorized, ())),
        }
    }
}

#[get("/api/v1/auth/me")]
fn me(
    users: &State<HashMap<String, UserRecord>>,
    subject: Subject,
) -> Option<Json<Envelope<UserRecord>>> {
    users.get(&subject.0).map(|user| {
        Json(Envelope {
            success: true,
            data: user.clone(),
        })
    })
}

#[launch]
fn rocket() -> _ {
    let env = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} must be set"));
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "sub"]);
    let user = UserRecord {
        user_id: env("REFERENCE_USER_ID"),
        email: env("REFERENCE_EMAIL"),
        full_name: "Bench".into(),
        subscription_tier: "free",
        trial_active: false,
        trial_ends_at: None,
        created_at: "2026-01-01T00:00:00.000Z",
    };
    let port: u16 = env("PORT").parse().expect("PORT is a port number");
    let config = rocket::Config {
        port,
        log_level: rocket::config::LogLevel::Off,
        ..rocket::Config::release_default()
    };
    rocket::custom(config)
        .manage(Verifier {
            key: DecodingKey::from_secret(env("JWT_SECRET_KEY").as_bytes()),
            validation,
        })
        .manage(HashMap::from([(user.user_id.clone(), user)]))
        .mount("/", routes![me])
}
