//! Inbound trading signals: a per-user webhook key (shown once, stored hashed) and
//! `POST /webhooks/signals`, which hands a signal to the user's running bot. The bot acts on it
//! in its next scan, through the same limits and risk rules as a strategy's signal; the outcome
//! is announced as `trade_executed` and lands in the ledger.

use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::App;
use crate::auth::ClientMeta;
use crate::auth::sessions::Principal;
use crate::engine::{self, QueuedSignal, SignalKind};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::registry::sha256_hex;
use crate::store::audit::{self, Actor};
use crate::store::{iso8601, now_ms, webhook_keys};

#[derive(Debug, Serialize)]
pub struct WebhookKey {
    pub webhook_key: String,
    pub created_at: String,
}

/// Creates the user's signal key, replacing any previous one (which stops working at once).
pub async fn create_key(app: &App, user: &Principal, meta: &ClientMeta) -> ApiResult<WebhookKey> {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let key = format!("whk_{}", hex::encode(bytes));
    let now = now_ms();
    // Read before the transaction: on SQLite a transaction that reads and then writes fails at
    // once ("database is locked") when a running bot commits in between.
    let rotated = webhook_keys::exists(&app.db.pool, &user.user_id).await?;
    let mut tx = app.db.pool.begin().await?;
    webhook_keys::put(&mut *tx, &user.user_id, &sha256_hex(key.as_bytes()), now).await?;
    audit::record(
        &mut *tx,
        if rotated {
            "webhook_key.rotated"
        } else {
            "webhook_key.created"
        },
        &Actor {
            user_id: Some(&user.user_id),
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(WebhookKey {
        webhook_key: key,
        created_at: iso8601(now),
    })
}

/// A signal as alerting tools send it. Unknown fields are ignored: such tools add their own.
#[derive(Debug, Deserialize)]
pub struct SignalRequest {
    pub api_key: String,
    pub symbol: String,
    pub action: String,
    /// The sender's reference price (informational; orders fill at the broker's price).
    pub price: Option<f64>,
    /// The sender's strategy label, kept in the log.
    pub strategy: Option<String>,
    /// Entry size; default the largest the settings allow.
    pub size_usd: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Received {
    pub received: bool,
    pub trade_id: String,
    pub status: &'static str,
}

pub async fn receive(app: &App, request: SignalRequest) -> ApiResult<Received> {
    let user_id =
        webhook_keys::user_of(&app.db.pool, &sha256_hex(request.api_key.trim().as_bytes()))
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::TokenInvalid, "Unknown webhook key"))?;
    let kind = match request.action.trim().to_lowercase().as_str() {
        "buy" => SignalKind::Buy,
        "sell" => SignalKind::Sell,
        "close" => SignalKind::Close,
        other => {
            return Err(ApiError::invalid_field(
                "action",
                format!("`{other}` is not one of buy, sell, close"),
            ));
        }
    };
    let symbol = request.symbol.trim().to_uppercase();
    if !crate::settings::valid_pair(&symbol) {
        return Err(ApiError::invalid_field(
            "symbol",
            "a symbol of the form BASE-QUOTE, e.g. BTC-USD",
        ));
    }
    if let Some(size) = request.size_usd
        && !(size.is_finite() && size > 0.0)
    {
        return Err(ApiError::invalid_field("size_usd", "a positive number"));
    }
    if request.price.is_some_and(|p| !(p.is_finite() && p > 0.0)) {
        return Err(ApiError::invalid_field("price", "a positive number"));
    }
    let trade_id = crate::store::new_id();
    tracing::info!(%user_id, %symbol, action = %request.action, strategy = ?request.strategy, "inbound signal");
    engine::queue_signal(
        app,
        &user_id,
        QueuedSignal {
            id: trade_id.clone(),
            symbol,
            kind,
            size_usd: request.size_usd,
        },
    )
    .await?;
    Ok(Received {
        received: true,
        trade_id,
        status: "processing",
    })
}
