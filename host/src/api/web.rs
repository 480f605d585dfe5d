//! The web app on the API's origin. Browsers asking `GET /` (HTML first) get the built-in app
//! (`host/assets/app/`, built from `web/` and embedded), whose scripts and styles are under
//! `/app/`; `/reset-password` (the e-mailed reset link) opens the same app. An operator's own
//! browser client (`TRADEHOST_WEB_DIR`) takes the place of the built-in one: `GET /` answers the
//! directory's `templates/index.html` (or `index.html`) and `/static/...` serves `static/`
//! (clients written for the original backend call `window.location.origin`, so this is how they
//! run against tradehost unchanged). Other clients asking `GET /` still get the JSON root info.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use rocket::fs::{FileServer, NamedFile};
use rocket::http::{ContentType, Header, Status};
use rocket::outcome::Outcome;
use rocket::request::{self, FromRequest, Request};
use rocket::response::{self, Responder, Response};
use rocket::{Build, Rocket, State, get, routes};
use sha2::{Digest, Sha256};

use crate::api::pages::StaticFile;

const APP_HTML: &str = include_str!("../../assets/app/index.html");
const APP_JS: &str = include_str!("../../assets/app/app.js");
const APP_CSS: &str = include_str!("../../assets/app/app.css");
const APP_JS_GZ: &[u8] = include_bytes!("../../assets/app/app.js.gz");
const APP_CSS_GZ: &[u8] = include_bytes!("../../assets/app/app.css.gz");

/// A script or style sheet of the app: sent gzipped to browsers that accept it, and validated by
/// an ETag of its content, so a browser asks again on every load (`no-cache`) but downloads it
/// only when the binary's copy changed.
struct AppAsset {
    plain: &'static str,
    gzipped: &'static [u8],
    content_type: ContentType,
    etag: &'static str,
}

fn etag_of(body: &str) -> String {
    let digest = Sha256::digest(body.as_bytes());
    format!("\"{}\"", hex::encode(&digest[..12]))
}

static APP_JS_ETAG: LazyLock<String> = LazyLock::new(|| etag_of(APP_JS));
static APP_CSS_ETAG: LazyLock<String> = LazyLock::new(|| etag_of(APP_CSS));

impl<'r> Responder<'r, 'static> for AppAsset {
    fn respond_to(self, req: &'r Request<'_>) -> response::Result<'static> {
        let mut answer = Response::build();
        answer
            .header(Header::new("ETag", self.etag))
            .header(Header::new("Cache-Control", "no-cache"))
            .header(Header::new("Vary", "Accept-Encoding"))
            .header(Header::new("X-Content-Type-Options", "nosniff"));
        let unchanged = req
            .headers()
            .get("If-None-Match")
            .any(|tags| tags.split(',').any(|tag| tag.trim() == self.etag));
        if unchanged {
            return answer.status(Status::NotModified).ok();
        }
        let gzip = req
            .headers()
            .get("Accept-Encoding")
            .any(|codings| codings.split(',').any(|c| c.trim().starts_with("gzip")));
        answer.header(self.content_type);
        if gzip {
            answer
                .header(Header::new("Content-Encoding", "gzip"))
                .sized_body(self.gzipped.len(), Cursor::new(self.gzipped));
        } else {
            answer.sized_body(self.plain.len(), Cursor::new(self.plain));
        }
        answer.ok()
    }
}

/// A request from a browser, which asks for HTML first.
struct WantsHtml;

#[rocket::async_trait]
impl<'r> FromRequest<'r> for WantsHtml {
    type Error = ();

    async fn from_request(req: &'r Request<'_>) -> request::Outcome<Self, ()> {
        match req.accept() {
            Some(accept) if accept.preferred().media_type().is_html() => {
                Outcome::Success(WantsHtml)
            }
            _ => Outcome::Forward(Status::NotFound),
        }
    }
}

fn app_page() -> StaticFile {
    StaticFile::new(APP_HTML, ContentType::HTML)
}

#[get("/", rank = 1)]
fn app_index(_browser: WantsHtml) -> StaticFile {
    app_page()
}

#[get("/reset-password", rank = 1)]
fn app_reset(_browser: WantsHtml) -> StaticFile {
    app_page()
}

#[get("/app/<name>")]
fn app_asset(name: &str) -> Option<AppAsset> {
    Some(match name {
        "app.js" => AppAsset {
            plain: APP_JS,
            gzipped: APP_JS_GZ,
            content_type: ContentType::JavaScript.with_params(("charset", "utf-8")),
            etag: APP_JS_ETAG.as_str(),
        },
        "app.css" => AppAsset {
            plain: APP_CSS,
            gzipped: APP_CSS_GZ,
            content_type: ContentType::CSS,
            etag: APP_CSS_ETAG.as_str(),
        },
        _ => return None,
    })
}

struct WebDir(PathBuf);

#[get("/", rank = 1)]
async fn dir_index(_browser: WantsHtml, web: &State<WebDir>) -> Option<NamedFile> {
    for candidate in ["templates/index.html", "index.html"] {
        if let Ok(file) = NamedFile::open(web.0.join(candidate)).await {
            return Some(file);
        }
    }
    None
}

/// Mounts the operator's client when `dir` is given, else the built-in app.
pub fn mount(rocket: Rocket<Build>, dir: Option<&Path>) -> Rocket<Build> {
    let Some(dir) = dir else {
        return rocket.mount("/", routes![app_index, app_reset, app_asset]);
    };
    let rocket = rocket
        .manage(WebDir(dir.to_path_buf()))
        .mount("/", routes![dir_index]);
    let assets = dir.join("static");
    if assets.is_dir() {
        rocket.mount("/static", FileServer::from(assets).rank(20))
    } else {
        rocket
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::{APP_CSS, APP_CSS_GZ, APP_HTML, APP_JS, APP_JS_GZ};

    #[test]
    fn the_app_loads_only_its_own_assets() {
        assert!(APP_HTML.contains(r#"href="/app/app.css""#));
        assert!(APP_HTML.contains(r#"src="/app/app.js""#));
        // Inline scripts and style attributes would be refused by the CSP.
        assert!(!APP_HTML.contains("style=\""));
        assert!(!APP_HTML.contains("<script>"));
        // Nothing loaded from another host (the favicon's SVG namespace is not a request).
        for reference in ["src=\"http", "href=\"http", "url(http", "@import"] {
            assert!(!APP_HTML.contains(reference) && !APP_CSS.contains(reference));
        }
        assert!(!APP_JS.contains("fetch(\"http") && !APP_JS.contains("import(\"http"));
    }

    #[test]
    fn the_gzipped_copies_are_of_the_same_build() {
        for (plain, gzipped) in [(APP_JS, APP_JS_GZ), (APP_CSS, APP_CSS_GZ)] {
            let mut unpacked = String::new();
            flate2::read::GzDecoder::new(gzipped)
                .read_to_string(&mut unpacked)
                .unwrap();
            assert_eq!(unpacked, plain);
        }
    }
}
