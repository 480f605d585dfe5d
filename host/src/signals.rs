//! Inbound trading signals: a per-user webhook key (shown once, stored hashed) and
//! `POST /webhooks/signals`, which writes a signal for the user's running bot before answering.
//! The bot acts on it once, in its next scan, through the same limits and risk rules as a
//! strategy's signal; the outcome is announced as `trade_executed`, lands in the ledger, and is
//! readable by the `trade_id` the sender got (`GET /webhooks/signals/{trade_id}`).

use rand::RngCore;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::App;
use crate::auth::ClientMeta;
use crate::auth::sessions::Principal;
use crate::engine::accounting::{self, SCALE};
use crate::engine::signals::{self as inbound, SignalKind, SignalView};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::registry::sha256_hex;
use crate::store::audit::{self, Actor};
use crate::store::signals::SignalRow;
use crate::store::{iso8601, now_ms, webhook_keys};

#[derive(utoipa::ToSchema, Debug, Serialize)]
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
    let rotated = webhook_keys::exists(&app.db.pool, &user.user_id).await?;
    let mut tx = app.db.begin().await?;
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
#[derive(utoipa::ToSchema, Debug, Deserialize)]
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
    /// `market` (the default) or `limit`.
    pub order_type: Option<String>,
    /// A limit entry's price: a JSON number or a decimal string, read exactly.
    pub limit_price: Option<serde_json::Value>,
}

/// The highest limit price accepted (any real instrument is far below it).
const MAX_LIMIT_PRICE: i64 = 10_000_000_000;

/// The limit price a signal asks for, if it asks for a limit entry.
fn limit_price_of(request: &SignalRequest, kind: SignalKind) -> ApiResult<Option<Decimal>> {
    let order_type = request
        .order_type
        .as_deref()
        .map(|t| t.trim().to_lowercase());
    let limit = match (order_type.as_deref(), &request.limit_price) {
        (None | Some("market"), None) => return Ok(None),
        (Some("market"), Some(_)) => {
            return Err(ApiError::invalid_field(
                "limit_price",
                "only a limit order has a limit price",
            ));
        }
        (Some("limit"), None) => {
            return Err(ApiError::invalid_field(
                "limit_price",
                "a limit order needs a limit price",
            ));
        }
        (None | Some("limit"), Some(limit)) => limit,
        (Some(other), _) => {
            return Err(ApiError::invalid_field(
                "order_type",
                format!("`{other}` is not one of market, limit"),
            ));
        }
    };
    if kind == SignalKind::Close {
        return Err(ApiError::invalid_field(
            "order_type",
            "a close is a market order; limit prices are for entries",
        ));
    }
    let text = match limit {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.trim().to_string(),
        _ => String::new(),
    };
    // Prices are kept to SCALE places (the venue's tick rounds them further).
    match text.parse::<Decimal>().map(|price| price.round_dp(SCALE)) {
        Ok(price) if price > Decimal::ZERO && price <= Decimal::from(MAX_LIMIT_PRICE) => {
            Ok(Some(price.normalize()))
        }
        _ => Err(ApiError::invalid_field(
            "limit_price",
            format!("a positive decimal number of at most {MAX_LIMIT_PRICE}"),
        )),
    }
}

/// The largest entry a signal may ask for, in account currency (the settings cap it further).
const MAX_SIZE_USD: f64 = 1e9;

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = SignalReceived)]
pub struct Received {
    pub received: bool,
    pub trade_id: String,
    pub status: &'static str,
}

/// An entry too small for the bot to trade is refused when the signal arrives, with the reason,
/// rather than accepted and skipped. (A size above the user's largest position is capped to it,
/// as for the bot's own entries.)
fn check_entry_size(size_usd: f64) -> ApiResult<()> {
    let minimum = crate::engine::accounting::float(crate::engine::entry::MIN_ORDER_USD);
    if size_usd < minimum {
        return Err(ApiError::invalid_field(
            "size_usd",
            format!("below the minimum order of {minimum} USD"),
        ));
    }
    Ok(())
}

pub async fn receive(app: &App, request: SignalRequest) -> ApiResult<Received> {
    let user_id =
        webhook_keys::user_of(&app.db.pool, &sha256_hex(request.api_key.trim().as_bytes()))
            .await?
            .ok_or_else(|| ApiError::new(ErrorCode::TokenInvalid, "Unknown webhook key"))?;
    let action = request.action.trim().to_lowercase();
    let Some(kind) = SignalKind::parse(&action) else {
        return Err(ApiError::invalid_field(
            "action",
            format!("`{action}` is not one of buy, sell, close"),
        ));
    };
    let symbol = request.symbol.trim().to_uppercase();
    if !crate::settings::valid_pair(&symbol) {
        return Err(ApiError::invalid_field(
            "symbol",
            "a symbol of the form BASE-QUOTE, e.g. BTC-USD",
        ));
    }
    if let Some(size) = request.size_usd
        && !(size.is_finite() && size > 0.0 && size <= MAX_SIZE_USD)
    {
        return Err(ApiError::invalid_field(
            "size_usd",
            format!("a positive number of at most {MAX_SIZE_USD}"),
        ));
    }
    if let Some(size) = request.size_usd
        && kind != SignalKind::Close
    {
        check_entry_size(size)?;
    }
    if request.price.is_some_and(|p| !(p.is_finite() && p > 0.0)) {
        return Err(ApiError::invalid_field("price", "a positive number"));
    }
    let limit_price = limit_price_of(&request, kind)?;
    let trade_id = crate::store::new_id();
    tracing::info!(%user_id, %symbol, action = %request.action, strategy = ?request.strategy, "inbound signal");
    inbound::accept(
        app,
        SignalRow {
            id: trade_id.clone(),
            user_id,
            symbol,
            action: kind.as_str().into(),
            size_usd: request.size_usd.and_then(accounting::decimal),
            strategy: request.strategy.map(|s| s.chars().take(200).collect()),
            status: "received".into(),
            outcome: None,
            order_id: None,
            received_at: now_ms(),
            processed_at: None,
            limit_price,
        },
    )
    .await?;
    Ok(Received {
        received: true,
        trade_id,
        status: "processing",
    })
}

/// Who may read a signal's outcome: the user signed in, or the sender with the webhook key.
pub enum Reader<'a> {
    User(&'a Principal),
    WebhookKey(&'a str),
}

/// What became of signal `trade_id`.
pub async fn status(app: &App, reader: Reader<'_>, trade_id: &str) -> ApiResult<SignalView> {
    let user_id = match reader {
        Reader::User(user) => user.user_id.clone(),
        Reader::WebhookKey(key) => {
            webhook_keys::user_of(&app.db.pool, &sha256_hex(key.trim().as_bytes()))
                .await?
                .ok_or_else(|| ApiError::new(ErrorCode::TokenInvalid, "Unknown webhook key"))?
        }
    };
    inbound::view(app, &user_id, trade_id).await
}
