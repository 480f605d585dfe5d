//! The broker vault: a secret appears nowhere in the database or any answer, connections follow
//! the spec's rules, and `tradehost vault rotate-key` re-encrypts every secret.

use reqwest::Method;
use serde_json::json;
use tradehost_blackbox::{Server, email, on_postgres};

const API_KEY: &str = "LIVEKEY-7d1c2a9b";
const API_SECRET: &str = "SECRET-f00dfeedbeef4242";

/// Every stored broker-connection value, as text.
async fn stored_connections(server: &Server) -> String {
    let rows: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT api_key_sealed, api_secret_sealed, params_sealed, api_key_masked FROM broker_connections",
    )
    .fetch_all(server.db().await)
    .await
    .unwrap();
    format!("{rows:?}")
}

#[tokio::test]
async fn secrets_are_sealed_masked_and_survive_a_key_rotation() {
    let mut server = Server::start().await;
    let (_, token) = server.user(&email("vault")).await;
    let added = server
        .post(
            "/api/v1/config/brokers",
            Some(&token),
            json!({"broker": "paper", "api_key": API_KEY, "api_secret": API_SECRET, "additional_params": {"org": "ORG-SECRET-1"}}),
        )
        .await;
    added.expect(201);
    let broker_id = added.data()["broker_id"].as_str().unwrap().to_string();
    assert_eq!(added.data()["status"], "connected");

    let listed = server.get("/api/v1/config/brokers", Some(&token)).await;
    assert_eq!(listed.data()["brokers"][0]["api_key_masked"], "****2a9b");
    assert_eq!(
        listed.data()["brokers"][0]["permissions"],
        json!(["read", "trade"])
    );
    let tested = server
        .post(
            &format!("/api/v1/config/brokers/{broker_id}/test"),
            Some(&token),
            json!({}),
        )
        .await;
    tested.expect(200);
    assert!(tested.data()["latency_ms"].is_u64());
    assert_eq!(tested.data()["account_balance"], 10000.0);
    for reply in [&added, &listed, &tested] {
        assert!(!reply.text.contains(API_SECRET) && !reply.text.contains(API_KEY));
    }

    // Nowhere in the database: not in the connection rows, not in the SQLite file (with its WAL).
    let stored = stored_connections(&server).await;
    for secret in [API_KEY, API_SECRET, "ORG-SECRET-1"] {
        assert!(!stored.contains(secret), "{secret} stored in clear");
    }
    if !on_postgres() {
        for file in ["tradehost.db", "tradehost.db-wal"] {
            if let Ok(bytes) = std::fs::read(server.data_dir().join(file)) {
                for secret in [API_KEY, API_SECRET] {
                    assert!(
                        !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                        "{secret} found in {file}"
                    );
                }
            }
        }
    }

    // The spec's refusals.
    let cases = [
        (
            json!({"broker": "paper", "api_key": "x", "api_secret": "y"}),
            409,
            "BROKER_ALREADY_CONNECTED",
        ),
        (
            json!({"broker": "bitmex", "api_key": "x", "api_secret": "y"}),
            400,
            "UNSUPPORTED_BROKER",
        ),
        (
            json!({"broker": "paper", "api_key": "", "api_secret": "y"}),
            400,
            "INVALID_API_KEY",
        ),
        (
            json!({"broker": "paper", "api_key": "x"}),
            400,
            "INVALID_REQUEST",
        ),
    ];
    for (body, status, code) in cases {
        server
            .post("/api/v1/config/brokers", Some(&token), body)
            .await
            .expect_error(status, code);
    }
    let (_, other) = server.user(&email("other")).await;
    server
        .post(
            &format!("/api/v1/config/brokers/{broker_id}/test"),
            Some(&other),
            json!({}),
        )
        .await
        .expect_error(404, "NOT_FOUND");
    server
        .request(
            Method::DELETE,
            &format!("/api/v1/config/brokers/{broker_id}"),
            Some(&other),
            None,
        )
        .await
        .expect_error(404, "NOT_FOUND");

    // Rotation re-encrypts every secret; the connection still works under the new key.
    server.kill();
    let output = server
        .command()
        .args(["vault", "rotate-key"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(said.contains("re-encrypted 1 broker connection"), "{said}");
    let rotated = stored_connections(&server).await;
    assert_ne!(rotated, stored);
    if on_postgres() {
        // Instances sharing PostgreSQL take the key from their environment: the operator sets it.
        assert!(said.contains("VAULT_ENCRYPTION_KEY"), "{said}");
        return;
    }
    server.restart().await;
    let token = server
        .login(
            listed_email(&server, &broker_id).await.as_str(),
            tradehost_blackbox::PASSWORD,
        )
        .await["access_token"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .post(
            &format!("/api/v1/config/brokers/{broker_id}/test"),
            Some(&token),
            json!({}),
        )
        .await
        .expect(200);
    let removed = server
        .request(
            Method::DELETE,
            &format!("/api/v1/config/brokers/{broker_id}"),
            Some(&token),
            None,
        )
        .await;
    removed.expect(200);
    assert_eq!(removed.data()["open_positions"], 0);
}

/// The e-mail of the owner of a broker connection.
async fn listed_email(server: &Server, broker_id: &str) -> String {
    server
        .scalar(&format!(
            "SELECT u.email FROM users u JOIN broker_connections b ON b.user_id = u.id WHERE b.id = '{broker_id}'"
        ))
        .await
        .unwrap()
}
