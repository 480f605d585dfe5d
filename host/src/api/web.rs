//! The web app on the API's origin. Browsers asking `GET /` (HTML first) get the built-in app
//! (`host/assets/app/`, built from `web/` and embedded), whose scripts and styles are under
//! `/app/`; `/reset-password` (the e-mailed reset link) opens the same app. An operator's own
//! browser client (`TRADEHOST_WEB_DIR`) takes the place of the built-in one: `GET /` answers the
//! directory's `templates/index.html` (or `index.html`) and `/static/...` serves `static/`
//! (clients written for the original backend call `window.location.origin`, so this is how they
//! run against tradehost unchanged). Other clients asking `GET /` still get the JSON root info.

use std::path::{Path, PathBuf};

use rocket::fs::{FileServer, NamedFile};
use rocket::http::{ContentType, Status};
use rocket::outcome::Outcome;
use rocket::request::{self, FromRequest, Request};
use rocket::{Build, Rocket, State, get, routes};

use crate::api::pages::StaticFile;

const APP_HTML: &str = include_str!("../../assets/app/index.html");
const APP_JS: &str = include_str!("../../assets/app/app.js");
const APP_CSS: &str = include_str!("../../assets/app/app.css");

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
fn app_asset(name: &str) -> Option<StaticFile> {
    let (body, content_type) = match name {
        "app.js" => (
            APP_JS,
            ContentType::JavaScript.with_params(("charset", "utf-8")),
        ),
        "app.css" => (APP_CSS, ContentType::CSS),
        _ => return None,
    };
    Some(StaticFile::new(body, content_type))
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
    use super::{APP_CSS, APP_HTML, APP_JS};

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
}
