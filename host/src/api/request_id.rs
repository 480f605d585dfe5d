//! A request id on every request and response (`X-Request-Id`), used to find a request in the log.

use std::fmt;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rocket::fairing::{Fairing, Info, Kind};
use rocket::http::Header;
use rocket::{Data, Request, Response};

#[derive(Debug, Clone)]
pub struct RequestId(String);

/// A random prefix drawn once per process, so ids stay unique across restarts and instances.
static PROCESS: LazyLock<u64> = LazyLock::new(rand::random);
static NEXT: AtomicU64 = AtomicU64::new(0);

impl RequestId {
    pub fn of(req: &Request<'_>) -> RequestId {
        req.local_cache(|| {
            // 32 hex digits like a UUID's, without asking the kernel for randomness per request.
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            RequestId(format!("{:016x}{n:016x}", *PROCESS))
        })
        .clone()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// When the request arrived (for the access log and response-time metrics).
#[derive(Clone, Copy)]
pub struct Arrived(pub Instant);

pub struct RequestIdFairing;

#[rocket::async_trait]
impl Fairing for RequestIdFairing {
    fn info(&self) -> Info {
        Info {
            name: "request id",
            kind: Kind::Request | Kind::Response,
        }
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        req.local_cache(|| Arrived(Instant::now()));
        let _ = RequestId::of(req);
    }

    async fn on_response<'r>(&self, req: &'r Request<'_>, res: &mut Response<'r>) {
        let id = RequestId::of(req);
        let elapsed = req.local_cache(|| Arrived(Instant::now())).0.elapsed();
        tracing::debug!(
            request_id = %id,
            method = %req.method(),
            path = %req.uri().path(),
            status = res.status().code,
            micros = elapsed.as_micros() as u64,
            "request"
        );
        if let Some(app) = req.rocket().state::<crate::App>() {
            app.requests.record(elapsed, res.status().code >= 500);
        }
        res.set_header(Header::new("X-Request-Id", id.0));
    }
}
