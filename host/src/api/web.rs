//! An operator's own browser client on the API's origin (`TRADEHOST_WEB_DIR`): `GET /` answers
//! the directory's `templates/index.html` (or `index.html`) to browsers, and `/static/...` serves
//! `static/`. Clients written for the original backend call `window.location.origin`, so this is
//! how they run against tradehost unchanged. Other clients asking `GET /` still get the JSON
//! root info.

use std::path::{Path, PathBuf};

use rocket::fs::{FileServer, NamedFile};
use rocket::http::Status;
use rocket::outcome::Outcome;
use rocket::request::{self, FromRequest, Request};
use rocket::{Build, Rocket, State, get, routes};

struct WebDir(PathBuf);

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

#[get("/", rank = 1)]
async fn index(_browser: WantsHtml, web: &State<WebDir>) -> Option<NamedFile> {
    for candidate in ["templates/index.html", "index.html"] {
        if let Ok(file) = NamedFile::open(web.0.join(candidate)).await {
            return Some(file);
        }
    }
    None
}

pub fn mount(rocket: Rocket<Build>, dir: &Path) -> Rocket<Build> {
    let rocket = rocket
        .manage(WebDir(dir.to_path_buf()))
        .mount("/", routes![index]);
    let assets = dir.join("static");
    if assets.is_dir() {
        rocket.mount("/static", FileServer::from(assets).rank(20))
    } else {
        rocket
    }
}
