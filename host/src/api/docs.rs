//! Interactive API docs, served entirely by tradehost (nothing is fetched from the internet):
//! `GET /api/docs` is Swagger UI (vendored in `host/assets/swagger-ui/`, see its README) on the
//! generated OpenAPI 3.1 document (`api::openapi`), served at `GET /api/openapi.json` and, for
//! FastAPI-style clients, `GET /openapi.json`. Every file is embedded in the binary.

use rocket::http::{ContentType, Header};
use rocket::{Responder, get};

use crate::api::openapi;

const PAGE: &str = include_str!("../../assets/api-docs.html");

/// The page loads only these files, all from this server; Swagger UI styles elements inline and
/// draws its icons from `data:` URIs.
const PAGE_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                        img-src 'self' data:; connect-src 'self'; object-src 'none'; \
                        base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const ASSET_CACHE: &str = "public, max-age=86400";

crate::api::handlers![
    page,
    document,
    document_root;
    asset
];

#[derive(Responder)]
struct Page {
    body: &'static str,
    content_type: ContentType,
    csp: Header<'static>,
    nosniff: Header<'static>,
}

#[derive(Responder)]
struct Asset {
    body: &'static [u8],
    content_type: ContentType,
    cache: Header<'static>,
    nosniff: Header<'static>,
}

fn nosniff() -> Header<'static> {
    Header::new("X-Content-Type-Options", "nosniff")
}

#[utoipa::path(
    tag = "docs",
    operation_id = "docsPage",
    summary = "Interactive API docs",
    description = "This page: Swagger UI for the whole API, served by tradehost with no internet access needed. Use **Authorize** with an access token from a sign-in route to try authenticated routes.",
    responses(
        (status = 200, description = "The HTML page.", body = String, content_type = "text/html")
    ),
)]
#[get("/api/docs")]
fn page() -> Page {
    Page {
        body: PAGE,
        content_type: ContentType::HTML,
        csp: Header::new("Content-Security-Policy", PAGE_CSP),
        nosniff: nosniff(),
    }
}

/// The vendored Swagger UI files and our initialiser; any other name is a 404.
#[get("/api/docs/assets/<name>")]
fn asset(name: &str) -> Option<Asset> {
    let (body, content_type): (&'static [u8], ContentType) = match name {
        "swagger-ui-bundle.js" => (
            include_bytes!("../../assets/swagger-ui/swagger-ui-bundle.js"),
            ContentType::JavaScript,
        ),
        "swagger-ui.css" => (
            include_bytes!("../../assets/swagger-ui/swagger-ui.css"),
            ContentType::CSS,
        ),
        "favicon-32x32.png" => (
            include_bytes!("../../assets/swagger-ui/favicon-32x32.png"),
            ContentType::PNG,
        ),
        "init.js" => (
            include_bytes!("../../assets/swagger-ui/init.js"),
            ContentType::JavaScript,
        ),
        _ => return None,
    };
    Some(Asset {
        body,
        content_type,
        cache: Header::new("Cache-Control", ASSET_CACHE),
        nosniff: nosniff(),
    })
}

#[utoipa::path(
    tag = "docs",
    operation_id = "openapiDocument",
    summary = "OpenAPI document",
    description = "The OpenAPI 3.1 description of every route, as used by /api/docs.",
    responses(
        (status = 200, description = "This OpenAPI 3.1 document.", body = Object)
    ),
)]
#[get("/api/openapi.json")]
fn document() -> (ContentType, &'static str) {
    (ContentType::JSON, openapi::json())
}

/// The same document where FastAPI serves it.
#[utoipa::path(
    tag = "docs",
    operation_id = "openapiDocumentRoot",
    summary = "OpenAPI document (root path)",
    description = "The same document at the path FastAPI clients look for.",
    responses(
        (status = 200, description = "This OpenAPI 3.1 document.", body = Object)
    ),
)]
#[get("/openapi.json")]
fn document_root() -> (ContentType, &'static str) {
    (ContentType::JSON, openapi::json())
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use rocket::http::{ContentType, Status};
    use serde_json::Value;

    use super::*;

    const METHODS: [&str; 8] = [
        "get", "put", "post", "delete", "patch", "head", "options", "trace",
    ];

    /// Mounted routes that are not API operations: the internal routes of requests refused before
    /// routing, the static files of the pages, and the web app's page for the reset link.
    const UNDOCUMENTED: [&str; 6] = [
        "/__tradehost/rate-limited",
        "/__tradehost/refused",
        "/api/docs/assets/{name}",
        "/trades/assets/{name}",
        "/app/{name}",
        "/reset-password",
    ];

    fn spec() -> Value {
        serde_json::from_str(openapi::json()).expect("the document is JSON")
    }

    /// Every operation: (METHOD, path, operation).
    fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
        let paths = doc["paths"].as_object().expect("paths is an object");
        let mut ops = Vec::new();
        for (path, item) in paths {
            let item = item.as_object().expect("a path item is an object");
            for (key, op) in item {
                assert!(
                    METHODS.contains(&key.as_str()) || key == "parameters" || key == "summary",
                    "{path}: unexpected key {key}"
                );
                if METHODS.contains(&key.as_str()) {
                    ops.push((key.to_uppercase(), path.clone(), op));
                }
            }
        }
        ops
    }

    /// `{name}` segments of an OpenAPI path.
    fn template_params(path: &str) -> BTreeSet<String> {
        path.split('/')
            .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(str::to_string)
            .collect()
    }

    fn params_in<'a>(op: &'a Value, location: &str) -> BTreeMap<String, &'a Value> {
        op["parameters"]
            .as_array()
            .map(|params| {
                params
                    .iter()
                    .filter(|p| p["in"] == location)
                    .map(|p| (p["name"].as_str().unwrap_or_default().to_string(), p))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn collect_refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    match (key.as_str(), v) {
                        ("$ref", Value::String(target)) => out.push(target),
                        _ => collect_refs(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn document_is_openapi_3_1() {
        let doc = spec();
        let version = doc["openapi"].as_str().expect("openapi is a string");
        assert!(version.starts_with("3.1."), "openapi is {version}");
        assert_eq!(doc["info"]["title"], "tradehost API");
        assert_eq!(doc["info"]["version"], crate::VERSION);
    }

    #[test]
    fn every_operation_is_tagged_summarised_and_answered() {
        let doc = spec();
        let declared: BTreeSet<&str> = doc["tags"]
            .as_array()
            .expect("tags is a list")
            .iter()
            .map(|t| t["name"].as_str().expect("a tag has a name"))
            .collect();
        let mut used = BTreeSet::new();
        let mut ids = BTreeSet::new();
        let ops = operations(&doc);
        assert!(ops.len() > 90, "only {} operations", ops.len());
        for (method, path, op) in ops {
            let tags = op["tags"].as_array().map(Vec::as_slice).unwrap_or_default();
            assert!(!tags.is_empty(), "{method} {path}: no tag");
            for tag in tags {
                let tag = tag.as_str().unwrap_or_default();
                assert!(
                    declared.contains(tag),
                    "{method} {path}: undeclared tag {tag}"
                );
                used.insert(tag);
            }
            let summary = op["summary"].as_str().unwrap_or_default();
            assert!(!summary.trim().is_empty(), "{method} {path}: no summary");
            let responses = op["responses"].as_object();
            assert!(
                responses.is_some_and(|r| !r.is_empty()),
                "{method} {path}: no responses"
            );
            let id = op["operationId"].as_str().unwrap_or_default();
            assert!(!id.is_empty(), "{method} {path}: no operationId");
            assert!(
                ids.insert(id),
                "{method} {path}: operationId {id} is used twice"
            );
            // Path parameters: exactly the template's, each required.
            let declared_params = params_in(op, "path");
            let names: BTreeSet<String> = declared_params.keys().cloned().collect();
            assert_eq!(
                names,
                template_params(&path),
                "{method} {path}: path parameters"
            );
            for (name, param) in declared_params {
                assert_eq!(
                    param["required"], true,
                    "{method} {path}: {name} not required"
                );
            }
        }
        assert_eq!(used, declared, "declared tags without operations");
    }

    #[test]
    fn every_ref_resolves() {
        let doc = spec();
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(refs.len() > 100, "only {} $refs", refs.len());
        for target in refs {
            let pointer = target
                .strip_prefix('#')
                .unwrap_or_else(|| panic!("$ref {target} points outside the document"));
            assert!(
                doc.pointer(pointer).is_some(),
                "$ref {target} does not resolve"
            );
        }
    }

    #[test]
    fn security_is_bearer_jwt() {
        let doc = spec();
        let scheme = &doc["components"]["securitySchemes"]["bearerAuth"];
        assert_eq!(scheme["type"], "http");
        assert_eq!(scheme["scheme"], "bearer");
        assert_eq!(scheme["bearerFormat"], "JWT");
        let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
        assert_eq!(schemes.len(), 1, "only bearerAuth is declared");
        assert!(doc.get("security").is_none(), "no global security");
        let mut secured = 0;
        for (method, path, op) in operations(&doc) {
            let Some(requirements) = op.get("security") else {
                continue;
            };
            let requirements = requirements.as_array().expect("security is a list");
            assert!(!requirements.is_empty(), "{method} {path}: empty security");
            for requirement in requirements {
                let requirement = requirement.as_object().expect("a requirement is an object");
                assert_eq!(
                    requirement.keys().collect::<Vec<_>>(),
                    ["bearerAuth"],
                    "{method} {path}: security other than bearerAuth"
                );
            }
            secured += 1;
        }
        assert!(secured > 60, "only {secured} operations need a token");
        // Spot checks of who needs a token.
        let needs_token = |method: &str, path: &str| {
            doc["paths"][path][method.to_lowercase()]
                .get("security")
                .is_some()
        };
        assert!(needs_token("GET", "/api/v1/auth/me"));
        assert!(needs_token("GET", "/api/v1/admin/users"));
        assert!(!needs_token("POST", "/api/v1/auth/login"));
        assert!(!needs_token("GET", "/api/v1/subscription/plans"));
        assert!(!needs_token("POST", "/api/v1/webhooks/signals"));
        assert!(!needs_token("GET", "/health"));
        assert!(!needs_token("GET", "/api/docs"));
    }

    /// A Rocket route path in OpenAPI's form: `<id>` and `<path..>` become `{id}` and `{path}`.
    fn openapi_path(rocket_path: &str) -> String {
        let path = rocket_path
            .split('/')
            .map(|segment| match segment.strip_prefix('<') {
                Some(rest) => {
                    let name = rest.trim_end_matches('>').trim_end_matches("..");
                    format!("{{{name}}}")
                }
                None => segment.to_string(),
            })
            .collect::<Vec<_>>()
            .join("/");
        if path.is_empty() { "/".into() } else { path }
    }

    /// The named dynamic query parameters of a Rocket route (`?<page>&<per_page>`).
    fn query_params(query: Option<&str>) -> BTreeSet<String> {
        query
            .unwrap_or_default()
            .split('&')
            .filter_map(|p| p.strip_prefix('<').and_then(|p| p.strip_suffix('>')))
            .filter(|p| !p.ends_with(".."))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn rocket_paths_in_openapi_form() {
        assert_eq!(openapi_path("/"), "/");
        assert_eq!(openapi_path("/api/v1/auth/login"), "/api/v1/auth/login");
        assert_eq!(
            openapi_path("/api/v1/admin/plugins/<name>/config"),
            "/api/v1/admin/plugins/{name}/config"
        );
        assert_eq!(openapi_path("/files/<path..>"), "/files/{path}");
        assert_eq!(
            query_params(Some("<page>&<per_page>&x=1&<rest..>")),
            BTreeSet::from(["page".to_string(), "per_page".to_string()])
        );
    }

    #[rocket::async_test]
    async fn every_route_is_documented_and_every_operation_is_mounted() {
        let (client, _dir) = crate::testing::client().await;
        let doc = spec();
        let documented: BTreeMap<(String, String), &Value> = operations(&doc)
            .into_iter()
            .map(|(method, path, op)| ((method, path), op))
            .collect();

        let mut mounted = BTreeSet::new();
        let mut undocumented = Vec::new();
        for route in client.rocket().routes() {
            let path = openapi_path(route.uri.path());
            if UNDOCUMENTED.contains(&path.as_str()) {
                continue;
            }
            let key = (route.method.as_str().to_string(), path);
            match documented.get(&key) {
                None => undocumented.push(format!("{} {}", key.0, key.1)),
                Some(op) => {
                    // The route's query parameters are documented too.
                    let documented_query: BTreeSet<String> =
                        params_in(op, "query").into_keys().collect();
                    for name in query_params(route.uri.query()) {
                        assert!(
                            documented_query.contains(&name),
                            "{} {}: query parameter {name} is not documented",
                            key.0,
                            key.1
                        );
                    }
                }
            }
            mounted.insert(key);
        }
        assert!(
            undocumented.is_empty(),
            "routes missing from the OpenAPI document: {undocumented:#?}"
        );

        let unmounted: Vec<String> = documented
            .keys()
            .filter(|key| !mounted.contains(*key))
            .map(|(method, path)| format!("{method} {path}"))
            .collect();
        assert!(
            unmounted.is_empty(),
            "documented operations without a route: {unmounted:#?}"
        );
    }

    #[rocket::async_test]
    async fn serves_the_page_assets_and_document() {
        let (client, _dir) = crate::testing::client().await;

        let page = client.get("/api/docs").dispatch().await;
        assert_eq!(page.status(), Status::Ok);
        assert_eq!(page.content_type(), Some(ContentType::HTML));
        assert!(
            page.headers()
                .get_one("Content-Security-Policy")
                .is_some_and(|csp| csp.contains("script-src 'self'"))
        );
        let html = page.into_string().await.unwrap();
        assert!(html.contains("<title>tradehost API</title>"));
        for asset in [
            "/api/docs/assets/swagger-ui.css",
            "/api/docs/assets/swagger-ui-bundle.js",
            "/api/docs/assets/init.js",
        ] {
            assert!(html.contains(asset), "the page does not load {asset}");
        }
        assert!(!html.contains("<script>"), "inline script in the page");

        for (name, content_type) in [
            ("swagger-ui-bundle.js", ContentType::JavaScript),
            ("swagger-ui.css", ContentType::CSS),
            ("favicon-32x32.png", ContentType::PNG),
            ("init.js", ContentType::JavaScript),
        ] {
            let reply = client
                .get(format!("/api/docs/assets/{name}"))
                .dispatch()
                .await;
            assert_eq!(reply.status(), Status::Ok, "{name}");
            assert_eq!(reply.content_type(), Some(content_type), "{name}");
            assert_eq!(
                reply.headers().get_one("Cache-Control"),
                Some("public, max-age=86400")
            );
            let body = reply.into_bytes().await.unwrap();
            assert!(!body.is_empty(), "{name} is empty");
            if name != "favicon-32x32.png" {
                let text = String::from_utf8_lossy(&body);
                assert!(
                    !text.contains("sourceMappingURL"),
                    "{name} names a source map"
                );
            }
        }
        let init = client.get("/api/docs/assets/init.js").dispatch().await;
        let init = init.into_string().await.unwrap();
        assert!(init.contains("url: \"/api/openapi.json\""));
        assert!(init.contains("validatorUrl: null"));

        for name in [
            "LICENSE",
            "README.md",
            "swagger-ui.css.map",
            "..%2Fopenapi.json",
        ] {
            let reply = client
                .get(format!("/api/docs/assets/{name}"))
                .dispatch()
                .await;
            assert_eq!(reply.status(), Status::NotFound, "{name}");
        }

        for path in ["/api/openapi.json", "/openapi.json"] {
            let reply = client.get(path).dispatch().await;
            assert_eq!(reply.status(), Status::Ok, "{path}");
            assert_eq!(reply.content_type(), Some(ContentType::JSON), "{path}");
            let doc: Value = reply.into_json().await.unwrap();
            assert_eq!(doc["info"]["version"], crate::VERSION);
            assert!(doc["paths"]["/api/v1/auth/login"]["post"].is_object());
        }
    }
}
