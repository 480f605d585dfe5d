//! /api/v1/auth/*: every success and error path, against the real binary.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use tradehost_blackbox::{PASSWORD, Server, email};

fn register_body(email: &str, password: &str) -> serde_json::Value {
    json!({"email": email, "password": password, "full_name": "Ada Lovelace", "accept_terms": true})
}

#[tokio::test]
async fn register_creates_a_user_in_a_trial() {
    let server = Server::start().await;
    let address = email("ada");
    let reply = server
        .post(
            "/api/v1/auth/register",
            None,
            register_body(&address, PASSWORD),
        )
        .await;
    reply.expect(201);
    let user = reply.data();
    assert_eq!(user["email"], json!(address));
    assert_eq!(user["full_name"], "Ada Lovelace");
    assert_eq!(user["subscription_tier"], "free");
    assert_eq!(user["trial_active"], true);
    let created =
        chrono::DateTime::parse_from_rfc3339(user["created_at"].as_str().unwrap()).unwrap();
    let trial_end =
        chrono::DateTime::parse_from_rfc3339(user["trial_ends_at"].as_str().unwrap()).unwrap();
    assert_eq!((trial_end - created).num_days(), 14);
    let id = user["user_id"].as_str().unwrap();
    assert_eq!(server.count(&format!("SELECT COUNT(*) FROM audit_log WHERE event_type = 'user.registered' AND user_id = '{id}'")).await, 1);
    // The password is stored as an argon2id hash only.
    let hash = server
        .scalar(&format!(
            "SELECT password_hash FROM users WHERE id = '{id}'"
        ))
        .await
        .unwrap();
    assert!(hash.starts_with("$argon2id$") && !hash.contains(PASSWORD));
}

#[tokio::test]
async fn register_refuses_bad_input_and_changes_nothing() {
    let server = Server::start().await;
    let taken = email("taken");
    server.register(&taken).await;
    let cases = [
        (
            register_body("not-an-email", PASSWORD),
            400,
            "INVALID_EMAIL",
        ),
        (register_body("a@b", PASSWORD), 400, "INVALID_EMAIL"),
        (
            register_body(&email("short"), "short"),
            400,
            "WEAK_PASSWORD",
        ),
        (
            register_body(&email("common"), "password123"),
            400,
            "WEAK_PASSWORD",
        ),
        (
            register_body("same@example.com", "same@example.com"),
            400,
            "WEAK_PASSWORD",
        ),
        (
            register_body(&email("long"), &"x".repeat(129)),
            400,
            "WEAK_PASSWORD",
        ),
        (
            json!({"email": email("t"), "password": PASSWORD, "full_name": "A", "accept_terms": false}),
            400,
            "TERMS_NOT_ACCEPTED",
        ),
        (
            register_body(&taken.to_uppercase(), PASSWORD),
            409,
            "EMAIL_ALREADY_EXISTS",
        ),
        (
            json!({"email": email("m"), "password": PASSWORD, "accept_terms": true}),
            400,
            "INVALID_REQUEST",
        ),
        (
            json!({"email": email("m"), "password": PASSWORD, "full_name": "A", "accept_terms": "yes"}),
            400,
            "INVALID_REQUEST",
        ),
        (
            json!({"email": email("m"), "password": PASSWORD, "full_name": "   ", "accept_terms": true}),
            400,
            "INVALID_REQUEST",
        ),
    ];
    for (body, status, code) in cases {
        server
            .post("/api/v1/auth/register", None, body)
            .await
            .expect_error(status, code);
    }
    assert_eq!(server.count("SELECT COUNT(*) FROM users").await, 1);

    let weak = server
        .post(
            "/api/v1/auth/register",
            None,
            register_body("ab@example.com", "ab@example.com"),
        )
        .await;
    let reasons = weak.json["error"]["details"]["reasons"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    let short_and_common = server
        .post(
            "/api/v1/auth/register",
            None,
            register_body("a@bc.io", "a@bc.io"),
        )
        .await;
    assert_eq!(
        short_and_common.json["error"]["details"]["reasons"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let missing = server
        .post("/api/v1/auth/register", None, json!({"email": "a@b.co"}))
        .await;
    assert_eq!(missing.json["error"]["details"]["field"], "password");
}

#[tokio::test]
async fn login_issues_tokens_and_refuses_wrong_or_blocked_accounts() {
    let server = Server::start().await;
    let address = email("login");
    let id = server.register(&address).await;

    let login = server.login(&address.to_uppercase(), PASSWORD).await;
    assert_eq!(login["token_type"], "Bearer");
    assert_eq!(login["expires_in"], 86_400);
    assert_eq!(login["user"]["user_id"], json!(id));
    assert_eq!(login["user"]["subscription_tier"], "free");
    assert!(login["refresh_token"].as_str().unwrap().len() >= 32);
    let token = login["access_token"].as_str().unwrap();
    server.get("/api/v1/auth/me", Some(token)).await.expect(200);

    let wrong = json!({"email": address, "password": "not the password"});
    server
        .post("/api/v1/auth/login", None, wrong)
        .await
        .expect_error(401, "INVALID_CREDENTIALS");
    let unknown = json!({"email": email("nobody"), "password": PASSWORD});
    server
        .post("/api/v1/auth/login", None, unknown)
        .await
        .expect_error(401, "INVALID_CREDENTIALS");
    server
        .post("/api/v1/auth/login", None, json!({"email": address}))
        .await
        .expect_error(400, "INVALID_REQUEST");

    server
        .exec(&format!(
            "UPDATE users SET status = 'suspended' WHERE id = '{id}'"
        ))
        .await;
    let body = json!({"email": address, "password": PASSWORD});
    server
        .post("/api/v1/auth/login", None, body.clone())
        .await
        .expect_error(403, "ACCOUNT_SUSPENDED");
    server
        .exec(&format!(
            "UPDATE users SET status = 'disabled' WHERE id = '{id}'"
        ))
        .await;
    server
        .post("/api/v1/auth/login", None, body.clone())
        .await
        .expect_error(403, "ACCOUNT_DISABLED");
    // The status is only revealed to someone who knows the password.
    server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": address, "password": "wrong wrong wrong"}),
        )
        .await
        .expect_error(401, "INVALID_CREDENTIALS");

    // Audited, with the client's address and user agent.
    let success = format!(
        "SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.login_succeeded' AND user_id = '{id}' AND ip_address = '127.0.0.1'"
    );
    assert_eq!(server.count(&success).await, 1);
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.login_failed'")
            .await,
        5
    );
    let agent = server
        .scalar("SELECT user_agent FROM audit_log WHERE event_type = 'auth.login_failed' LIMIT 1")
        .await;
    assert!(agent.is_none() || !agent.unwrap().is_empty());
}

#[tokio::test]
async fn a_blocked_account_loses_its_sessions_access() {
    let server = Server::start().await;
    let (id, token) = server.user(&email("blocked")).await;
    server
        .exec(&format!(
            "UPDATE users SET status = 'suspended' WHERE id = '{id}'"
        ))
        .await;
    // The session cache may hold the old status for a few seconds; it must converge.
    let mut last = None;
    for _ in 0..60 {
        let reply = server.get("/api/v1/auth/me", Some(&token)).await;
        if reply.status == 403 {
            last = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    last.expect("suspension reaches the session within the cache lifetime")
        .expect_error(403, "ACCOUNT_SUSPENDED");
}

#[tokio::test]
async fn tokens_are_required_and_verified() {
    let server = Server::start().await;
    let (_, token) = server.user(&email("tok")).await;
    server
        .get("/api/v1/auth/me", None)
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .get("/api/v1/auth/me", Some("garbage"))
        .await
        .expect_error(401, "TOKEN_INVALID");
    let wrong_scheme = server
        .http
        .get(server.url("/api/v1/auth/me"))
        .header("Authorization", format!("Basic {token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_scheme.status(), 401);

    let parts: Vec<&str> = token.split('.').collect();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: serde_json::Value =
        serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    claims["role"] = json!("admin");
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(claims.to_string()),
        parts[2]
    );
    server
        .get("/api/v1/auth/me", Some(&forged))
        .await
        .expect_error(401, "TOKEN_INVALID");
    let unsigned = format!(
        "{}.{}.",
        b64.encode(r#"{"alg":"none","typ":"JWT"}"#),
        b64.encode(claims.to_string())
    );
    server
        .get("/api/v1/auth/me", Some(&unsigned))
        .await
        .expect_error(401, "TOKEN_INVALID");
    let hs512 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS512),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(b"whatever-whatever-whatever-whatever"),
    )
    .unwrap();
    server
        .get("/api/v1/auth/me", Some(&hs512))
        .await
        .expect_error(401, "TOKEN_INVALID");
}

#[tokio::test]
async fn access_tokens_expire_and_refresh_renews_them() {
    // 0.0005 h = 1.8 s, rounded up to 2 s.
    let server = Server::options()
        .env("JWT_EXPIRATION_HOURS", "0.0005")
        .start()
        .await;
    let address = email("exp");
    server.register(&address).await;
    let login = server.login(&address, PASSWORD).await;
    assert_eq!(login["expires_in"], 2);
    let token = login["access_token"].as_str().unwrap();
    server.get("/api/v1/auth/me", Some(token)).await.expect(200);
    tokio::time::sleep(Duration::from_millis(3100)).await;
    server
        .get("/api/v1/auth/me", Some(token))
        .await
        .expect_error(401, "TOKEN_EXPIRED");

    let refreshed = server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": login["refresh_token"]}),
        )
        .await;
    let data = refreshed.data();
    assert_eq!(data["token_type"], "Bearer");
    assert_eq!(data["expires_in"], 2);
    server
        .get(
            "/api/v1/auth/me",
            Some(data["access_token"].as_str().unwrap()),
        )
        .await
        .expect(200);
}

#[tokio::test]
async fn refresh_rotates_and_reuse_revokes_the_whole_session() {
    let server = Server::start().await;
    let address = email("rot");
    let id = server.register(&address).await;
    let login = server.login(&address, PASSWORD).await;
    let first = login["refresh_token"].clone();

    let second = server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": first}),
        )
        .await;
    let second = second.data().clone();
    assert_ne!(second["refresh_token"], first);
    let access = second["access_token"].as_str().unwrap().to_string();
    server
        .get("/api/v1/auth/me", Some(&access))
        .await
        .expect(200);

    // The spent token comes back: the whole family ends, including tokens issued after it.
    let reuse = server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": first}),
        )
        .await;
    reuse.expect_error(401, "TOKEN_INVALID");
    server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": second["refresh_token"]}),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .get("/api/v1/auth/me", Some(&access))
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .get(
            "/api/v1/auth/me",
            Some(login["access_token"].as_str().unwrap()),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    let audited = format!(
        "SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.refresh_token_reused' AND user_id = '{id}'"
    );
    assert_eq!(server.count(&audited).await, 1);

    // Bad input.
    server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": "made-up"}),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post("/api/v1/auth/refresh", None, json!({"refresh_token": ""}))
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .post("/api/v1/auth/refresh", None, json!({}))
        .await
        .expect_error(400, "INVALID_REQUEST");

    // An expired refresh token.
    let other = server.login(&address, PASSWORD).await;
    server
        .exec("UPDATE refresh_tokens SET expires_at = 1 WHERE used_at IS NULL")
        .await;
    server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": other["refresh_token"]}),
        )
        .await
        .expect_error(401, "TOKEN_EXPIRED");
}

#[tokio::test]
async fn logout_takes_effect_at_once() {
    let server = Server::start().await;
    let address = email("out");
    let id = server.register(&address).await;
    let a = server.login(&address, PASSWORD).await;
    let b = server.login(&address, PASSWORD).await;
    let c = server.login(&address, PASSWORD).await;
    let (a_token, b_token, c_token) = (
        a["access_token"].as_str().unwrap(),
        b["access_token"].as_str().unwrap(),
        c["access_token"].as_str().unwrap(),
    );
    for token in [a_token, b_token, c_token] {
        server.get("/api/v1/auth/me", Some(token)).await.expect(200);
    }

    // Empty body: this session only.
    let reply = server
        .raw(Method::POST, "/api/v1/auth/logout", Some(a_token), "")
        .await;
    assert!(reply.data()["message"].as_str().is_some());
    server
        .get("/api/v1/auth/me", Some(a_token))
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": a["refresh_token"]}),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .get("/api/v1/auth/me", Some(b_token))
        .await
        .expect(200);
    server
        .post("/api/v1/auth/logout", Some(a_token), json!({}))
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post("/api/v1/auth/logout", None, json!({}))
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post(
            "/api/v1/auth/logout",
            Some(b_token),
            json!({"revoke_all": "yes"}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");

    server
        .post(
            "/api/v1/auth/logout",
            Some(b_token),
            json!({"revoke_all": true}),
        )
        .await
        .expect(200);
    for token in [b_token, c_token] {
        server
            .get("/api/v1/auth/me", Some(token))
            .await
            .expect_error(401, "TOKEN_INVALID");
    }
    server
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refresh_token": c["refresh_token"]}),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    let audited = format!(
        "SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.logout' AND user_id = '{id}'"
    );
    assert_eq!(server.count(&audited).await, 2);
}

/// The reset token of the newest mail to `address`, as the operator reads it without SMTP: the
/// outbox holds the mail sealed and the log never shows it, so `tradehost mail show` prints it.
async fn reset_token_from_outbox(server: &Server, address: &str) -> String {
    let stored = server
        .scalar(&format!("SELECT body FROM mail_outbox WHERE to_address = '{address}' ORDER BY created_at DESC LIMIT 1"))
        .await
        .expect("a reset mail in the outbox");
    assert!(
        !stored.contains("token="),
        "the outbox holds the link in plaintext: {stored}"
    );
    // Without SMTP the mailer marks it held (and goes on to the mail behind it).
    let status = format!(
        "SELECT status FROM mail_outbox WHERE to_address = '{address}' ORDER BY created_at DESC LIMIT 1"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while server.scalar(&status).await.as_deref() != Some("held") {
        assert!(
            std::time::Instant::now() < deadline,
            "the reset mail is {:?}, not held; log:\n{}",
            server.scalar(&status).await,
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!server.log().contains("mail delivery pass failed"));
    let mut command = server.command();
    command.args(["mail", "show", "--to", address]);
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .unwrap()
        .expect("tradehost mail show runs");
    let shown = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{shown}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = shown
        .split("token=")
        .nth(1)
        .unwrap_or_else(|| panic!("no reset link in {shown}"))
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        !server.log().contains(&token),
        "the reset token reached the server log"
    );
    token
}

#[tokio::test]
async fn password_reset_by_mail_token() {
    let server = Server::start().await;
    let address = email("reset");
    let id = server.register(&address).await;
    let old_session = server.login(&address, PASSWORD).await;

    let known = server.ask_password_reset(&address).await;
    let unknown = server.ask_password_reset(&email("ghost")).await;
    // No account enumeration: the same answer either way.
    assert_eq!(known.data()["message"], unknown.data()["message"]);
    server
        .ask_password_reset("nope")
        .await
        .expect_error(400, "INVALID_EMAIL");
    assert_eq!(server.count("SELECT COUNT(*) FROM mail_outbox").await, 1);
    let token = reset_token_from_outbox(&server, &address).await;
    // Only the hash is stored.
    assert_eq!(
        server
            .count(&format!(
                "SELECT COUNT(*) FROM password_reset_tokens WHERE token_hash = '{token}'"
            ))
            .await,
        0
    );

    let confirm = |token: String, password: &str| json!({"token": token, "new_password": password});
    server
        .post(
            "/api/v1/auth/reset-password/confirm",
            None,
            confirm("wrong".into(), "a brand new secret"),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post(
            "/api/v1/auth/reset-password/confirm",
            None,
            confirm(token.clone(), "short"),
        )
        .await
        .expect_error(400, "WEAK_PASSWORD");
    server
        .post(
            "/api/v1/auth/reset-password/confirm",
            None,
            json!({"token": token}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    // A refused attempt leaves the token usable.
    server
        .post(
            "/api/v1/auth/reset-password/confirm",
            None,
            confirm(token.clone(), "a brand new secret"),
        )
        .await
        .expect(200);
    server
        .post(
            "/api/v1/auth/reset-password/confirm",
            None,
            confirm(token, "another new secret"),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");

    server
        .get(
            "/api/v1/auth/me",
            Some(old_session["access_token"].as_str().unwrap()),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .post(
            "/api/v1/auth/login",
            None,
            json!({"email": address, "password": PASSWORD}),
        )
        .await
        .expect_error(401, "INVALID_CREDENTIALS");
    server.login(&address, "a brand new secret").await;
    let audited = format!(
        "SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.password_reset_completed' AND user_id = '{id}'"
    );
    assert_eq!(server.count(&audited).await, 1);

    // An expired token.
    server.ask_password_reset(&address).await.expect(200);
    let token = reset_token_from_outbox(&server, &address).await;
    server
        .exec("UPDATE password_reset_tokens SET expires_at = 1 WHERE used_at IS NULL")
        .await;
    server
        .post(
            "/api/v1/auth/reset-password/confirm",
            None,
            confirm(token, "yet another secret"),
        )
        .await
        .expect_error(401, "TOKEN_EXPIRED");
}

#[tokio::test]
async fn change_password_keeps_this_session_and_ends_the_others() {
    let server = Server::start().await;
    let address = email("chg");
    server.register(&address).await;
    let this = server.login(&address, PASSWORD).await;
    let other = server.login(&address, PASSWORD).await;
    let token = this["access_token"].as_str().unwrap();
    let change =
        |current: &str, new: &str| json!({"current_password": current, "new_password": new});

    server
        .put(
            "/api/v1/auth/change-password",
            None,
            change(PASSWORD, "a brand new secret"),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server
        .put(
            "/api/v1/auth/change-password",
            Some(token),
            change("wrong password", "a brand new secret"),
        )
        .await
        .expect_error(401, "INVALID_CREDENTIALS");
    server
        .put(
            "/api/v1/auth/change-password",
            Some(token),
            change(PASSWORD, "qwertyuiop"),
        )
        .await
        .expect_error(400, "WEAK_PASSWORD");
    server
        .put(
            "/api/v1/auth/change-password",
            Some(token),
            json!({"new_password": "x"}),
        )
        .await
        .expect_error(400, "INVALID_REQUEST");
    server
        .post(
            "/api/v1/auth/change-password",
            Some(token),
            change(PASSWORD, "a brand new secret"),
        )
        .await
        .expect_error(405, "METHOD_NOT_ALLOWED");

    let reply = server
        .put(
            "/api/v1/auth/change-password",
            Some(token),
            change(PASSWORD, "a brand new secret"),
        )
        .await;
    assert_eq!(reply.data()["other_sessions_revoked"], 1);
    server.get("/api/v1/auth/me", Some(token)).await.expect(200);
    server
        .get(
            "/api/v1/auth/me",
            Some(other["access_token"].as_str().unwrap()),
        )
        .await
        .expect_error(401, "TOKEN_INVALID");
    server.login(&address, "a brand new secret").await;
    assert_eq!(
        server
            .count("SELECT COUNT(*) FROM audit_log WHERE event_type = 'auth.password_changed'")
            .await,
        1
    );
}

/// Accepts one SMTP session after another and hands each message's DATA to `mails`.
fn fake_smtp_server() -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (mails, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut writer = stream.try_clone().unwrap();
            let mut reader = BufReader::new(stream);
            let _ = writer.write_all(b"220 test ESMTP\r\n");
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 {
                let command = line.trim_end().to_ascii_uppercase();
                let reply: &[u8] = if command.starts_with("EHLO") || command.starts_with("HELO") {
                    b"250-test\r\n250 8BITMIME\r\n"
                } else if command == "DATA" {
                    let _ = writer.write_all(b"354 go ahead\r\n");
                    let mut data = String::new();
                    let mut chunk = String::new();
                    while reader.read_line(&mut chunk).unwrap_or(0) > 0 && chunk != ".\r\n" {
                        data.push_str(&chunk);
                        chunk.clear();
                    }
                    let _ = mails.send(data);
                    b"250 queued\r\n"
                } else if command == "QUIT" {
                    let _ = writer.write_all(b"221 bye\r\n");
                    break;
                } else {
                    b"250 ok\r\n"
                };
                let _ = writer.write_all(reply);
                line.clear();
            }
        }
    });
    (port, received)
}

#[tokio::test]
async fn reset_mail_goes_out_through_smtp_when_configured() {
    let (port, received) = fake_smtp_server();
    let server = Server::options()
        .env("TRADEHOST_SMTP_URL", format!("smtp://127.0.0.1:{port}"))
        .env("TRADEHOST_MAIL_FROM", "tradehost <noreply@example.com>")
        .start()
        .await;
    let address = email("mail");
    server.register(&address).await;
    server.ask_password_reset(&address).await.expect(200);
    let mail = tokio::task::spawn_blocking(move || received.recv_timeout(Duration::from_secs(20)))
        .await
        .unwrap()
        .expect("the reset mail reached the SMTP server");
    assert!(mail.contains(&address), "{mail}");
    assert!(mail.contains("Reset your tradehost password"), "{mail}");
    // The mail's token works, and the outbox records the delivery.
    // The body is quoted-printable; the token also stands alone on an indented line.
    let token = mail
        .lines()
        .find(|line| line.starts_with("    ") && !line.trim().is_empty())
        .map(|line| line.trim().to_string())
        .expect("the token line");
    let confirm = json!({"token": token, "new_password": "a brand new secret"});
    server
        .post("/api/v1/auth/reset-password/confirm", None, confirm)
        .await
        .expect(200);
    let mut status = None;
    for _ in 0..50 {
        status = server.scalar("SELECT status FROM mail_outbox").await;
        if status.as_deref() == Some("sent") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status.as_deref(), Some("sent"));
    // Once delivered, the outbox forgets the link.
    assert_eq!(
        server
            .scalar("SELECT body FROM mail_outbox")
            .await
            .as_deref(),
        Some("")
    );
}
