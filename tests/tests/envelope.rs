//! The envelope: every answer under /api/v1 is JSON in the platform envelope with a request id,
//! whatever goes wrong, and internal errors never leak.

use reqwest::Method;
use serde_json::json;
use tradehost_blackbox::{Server, email};

/// A 405 says which methods the path serves; other answers carry no `Allow`.
#[tokio::test]
async fn a_wrong_method_names_the_allowed_ones() {
    let server = Server::start().await;
    let wrong = server.get("/api/v1/auth/login", None).await;
    wrong.expect_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(wrong.header("allow"), Some("POST"), "{}", wrong.text);
    let wrong = server
        .request(Method::DELETE, "/api/v1/config/settings", None, None)
        .await;
    assert_eq!(wrong.status, 405, "{}", wrong.text);
    assert_eq!(wrong.header("allow"), Some("GET, PUT"), "{}", wrong.text);
    // The companion sets too, in their own envelope.
    let wrong = server.request(Method::PUT, "/api/status", None, None).await;
    assert_eq!(wrong.status, 405, "{}", wrong.text);
    assert_eq!(wrong.header("allow"), Some("GET"), "{}", wrong.text);
    let missing = server.get("/api/v1/nowhere", None).await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("allow"), None);
}

/// A query parameter given twice is refused naming it, in the route set's envelope, before the
/// handler runs; an empty one means the same as an absent one.
#[tokio::test]
async fn repeated_query_parameters_are_refused() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("query-twice")).await;
    let twice = server
        .get(
            "/api/v1/account/performance?period=7d&period=x",
            Some(&token),
        )
        .await;
    twice.expect_error(400, "INVALID_REQUEST");
    assert_eq!(
        twice.json["error"]["details"]["field"], "period",
        "{}",
        twice.text
    );
    let twice = server
        .get("/api/v1/account/history?page=1&page=2", Some(&token))
        .await;
    twice.expect_error(400, "INVALID_REQUEST");
    assert_eq!(
        twice.json["error"]["details"]["field"], "page",
        "{}",
        twice.text
    );
    // A companion set answers in its own envelope.
    let twice = server
        .get("/api/v1/dashboard/equity-curve?days=1&days=2", Some(&token))
        .await;
    assert_eq!(twice.status, 400, "{}", twice.text);
    assert_eq!(twice.json["success"], false, "{}", twice.text);
    // Empty values are dropped: the defaults apply.
    let empty = server
        .get("/api/v1/account/performance?period=", Some(&token))
        .await;
    empty.expect(200);
    let default = server
        .get("/api/v1/account/performance", Some(&token))
        .await;
    assert_eq!(empty.data()["period"], default.data()["period"]);
    server
        .get(
            "/api/v1/account/history?page=&per_page=&symbol=",
            Some(&token),
        )
        .await
        .expect(200);
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods() {
    let server = Server::start().await;
    server
        .get("/api/v1/nowhere", None)
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .get("/api/v1", None)
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .get("/api/v1/auth/login", None)
        .await
        .expect_error(405, "METHOD_NOT_ALLOWED");
    server
        .request(Method::DELETE, "/api/v1/auth/register", None, None)
        .await
        .expect_error(405, "METHOD_NOT_ALLOWED");
    server
        .request(
            Method::PATCH,
            "/api/v1/auth/change-password",
            None,
            Some(json!({})),
        )
        .await
        .expect_error(405, "METHOD_NOT_ALLOWED");
    // Outside the platform API the FastAPI-style shape of the companion sets applies: still JSON.
    let other = server.get("/no/such/page", None).await;
    other.expect(404);
    assert!(other.json["detail"].is_string(), "{}", other.text);
}

#[tokio::test]
async fn malformed_bodies_name_the_problem() {
    let server = Server::start().await;
    let cases: Vec<(&str, &str)> = vec![
        ("", "body"),
        ("{", "body"),
        ("not json", "body"),
        ("[1, 2]", "body"),
        (r#"{"email": "a@b.co", "password": "x"} trailing"#, "body"),
        (r#"{"email": 42, "password": "x"}"#, "email"),
        (r#"{"password": "x"}"#, "email"),
        (r#"{"email": null, "password": "x"}"#, "email"),
    ];
    for (body, field) in cases {
        let reply = server
            .raw(Method::POST, "/api/v1/auth/login", None, body)
            .await;
        reply.expect_error(400, "INVALID_REQUEST");
        assert_eq!(
            reply.json["error"]["details"]["field"], field,
            "body {body:?}: {}",
            reply.text
        );
    }
    let huge = format!(
        r#"{{"email": "{}", "password": "x"}}"#,
        "a".repeat(300 * 1024)
    );
    server
        .raw(Method::POST, "/api/v1/auth/login", None, huge)
        .await
        .expect_error(413, "PAYLOAD_TOO_LARGE");
    // A body where none is expected is ignored, not an error.
    let (_, token) = server.user(&email("body")).await;
    server
        .raw(Method::GET, "/api/v1/auth/me", Some(&token), "{}")
        .await
        .expect(200);
}

#[tokio::test]
async fn every_answer_is_json_with_a_request_id() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("rid")).await;
    let replies = vec![
        server.get("/api/v1/auth/me", Some(&token)).await,
        server.get("/api/v1/auth/me", None).await,
        server.get("/api/v1/missing", None).await,
        server
            .raw(Method::POST, "/api/v1/auth/login", None, "{")
            .await,
        server.get("/api/v1/admin/audit-logs", Some(&token)).await,
        server.get("/elsewhere", None).await,
    ];
    let mut ids = std::collections::HashSet::new();
    for reply in replies {
        let id = reply
            .header("x-request-id")
            .expect("X-Request-Id on every response")
            .to_string();
        assert!(ids.insert(id), "request ids are unique");
        assert!(
            reply
                .header("content-type")
                .unwrap()
                .starts_with("application/json"),
            "{:?}",
            reply.headers
        );
        assert!(reply.json.is_object(), "JSON body: {}", reply.text);
        assert!(!reply.text.to_lowercase().contains("<html"));
    }
}

#[tokio::test]
async fn success_envelope() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("env")).await;
    let reply = server.get("/api/v1/auth/me", Some(&token)).await;
    reply.expect(200);
    assert_eq!(reply.json["success"], true);
    assert!(reply.json["data"].is_object());
    chrono::DateTime::parse_from_rfc3339(reply.json["timestamp"].as_str().unwrap())
        .expect("ISO 8601 timestamp");
}

#[tokio::test]
async fn internal_errors_are_logged_with_the_request_id_and_never_leak() {
    let server = Server::start().await;
    let address = email("boom");
    server.register(&address).await;
    // Break the database under the running server.
    server.exec("DROP TABLE audit_log").await;
    let reply = server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": address, "password": "wrong password!"}),
        )
        .await;
    reply.expect_error(500, "DATABASE_ERROR");
    let request_id = reply.header("x-request-id").unwrap().to_string();
    assert_eq!(
        reply.json["error"]["details"],
        json!({"request_id": request_id})
    );
    assert!(
        !reply.text.contains("audit_log"),
        "no internals in the response: {}",
        reply.text
    );
    let mut logged = false;
    for _ in 0..50 {
        let log = server.log();
        if log
            .lines()
            .any(|line| line.contains(&request_id) && line.contains("audit_log"))
        {
            logged = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        logged,
        "the cause is logged with the request id:\n{}",
        server.log()
    );
}
