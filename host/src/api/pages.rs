//! Pages served by tradehost itself: the `/trades` page (docs/companion.md, section D) and its
//! assets, embedded in the binary. The page signs in and calls the companion routes from the
//! browser; nothing on it comes from another host.

use std::io::Cursor;

use rocket::http::{ContentType, Header};
use rocket::response::{self, Responder};
use rocket::{Request, Response, get};

const TRADES_HTML: &str = include_str!("../../assets/trades/index.html");
const TRADES_CSS: &str = include_str!("../../assets/trades/trades.css");
const TRADES_JS: &str = include_str!("../../assets/trades/trades.js");

/// Everything the page loads comes from this origin; the favicon is a `data:` URL.
const CSP: &str = "default-src 'self'; img-src 'self' data:";

crate::api::handlers![
    trades_page;
    trades_asset
];

/// An embedded file with its content type and the page's security headers.
pub struct StaticFile {
    body: &'static str,
    content_type: ContentType,
}

impl StaticFile {
    pub fn new(body: &'static str, content_type: ContentType) -> Self {
        StaticFile { body, content_type }
    }
}

impl<'r> Responder<'r, 'static> for StaticFile {
    fn respond_to(self, _: &'r Request<'_>) -> response::Result<'static> {
        Response::build()
            .header(self.content_type)
            .header(Header::new("Content-Security-Policy", CSP))
            .header(Header::new("X-Content-Type-Options", "nosniff"))
            .header(Header::new("Referrer-Policy", "no-referrer"))
            // Small files that change with the binary: the browser asks again each time.
            .header(Header::new("Cache-Control", "no-cache"))
            .sized_body(self.body.len(), Cursor::new(self.body))
            .ok()
    }
}

#[utoipa::path(
    tag = "companion-ledger",
    operation_id = "ledgerPage",
    summary = "Trades page",
    description = "A web page served by tradehost itself (no CDN): sign in, then statistics, open positions, trade history and the raw ledger with symbol filters, CSV and PDF export, refreshed every 30 seconds. The page needs no token; its data calls carry one.",
    responses(
        (status = 200, description = "The HTML page.", body = String, content_type = "text/html")
    ),
)]
#[get("/trades")]
fn trades_page() -> StaticFile {
    StaticFile {
        body: TRADES_HTML,
        content_type: ContentType::HTML,
    }
}

#[get("/trades/assets/<name>")]
fn trades_asset(name: &str) -> Option<StaticFile> {
    let (body, content_type) = match name {
        "trades.css" => (TRADES_CSS, ContentType::CSS),
        "trades.js" => (
            TRADES_JS,
            ContentType::JavaScript.with_params(("charset", "utf-8")),
        ),
        _ => return None,
    };
    Some(StaticFile { body, content_type })
}

#[cfg(test)]
mod tests {
    use super::{TRADES_CSS, TRADES_HTML, TRADES_JS};

    #[test]
    fn the_page_loads_only_its_own_assets() {
        assert!(TRADES_HTML.contains(r#"href="/trades/assets/trades.css""#));
        assert!(TRADES_HTML.contains(r#"src="/trades/assets/trades.js""#));
        for file in [TRADES_HTML, TRADES_CSS, TRADES_JS] {
            assert!(!file.contains("http://") && !file.contains("https://"));
            assert!(!file.contains("innerHTML"));
        }
        // Inline scripts and style attributes would be refused by the CSP.
        assert!(!TRADES_HTML.contains("style=\""));
        assert!(!TRADES_HTML.contains("<script>"));
    }
}
