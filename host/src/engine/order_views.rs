//! Orders and their fills as the API shows them: a user's orders page by page, and one order
//! with every fill booked for it.

use serde::Serialize;

use super::order_state::OrderStatus;
use crate::App;
use crate::api::query::{Page, Pagination};
use crate::auth::sessions::Principal;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::decimal;
use crate::store::iso8601;
use crate::store::orders::{self as rows, FillRow, OrderRow};

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct FillView {
    pub fill_id: String,
    pub venue_trade_id: String,
    pub quantity: String,
    pub price: String,
    pub fee: String,
    pub filled_at: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct OrderView {
    pub order_id: String,
    pub client_order_id: String,
    pub broker: String,
    pub broker_order_id: Option<String>,
    pub symbol: String,
    /// BUY or SELL.
    pub side: String,
    /// open_long, open_short or close.
    pub intent: String,
    /// market or limit.
    pub kind: String,
    /// Exact decimals, as text.
    pub quantity: String,
    /// A limit order's price, on the venue's tick.
    pub limit_price: Option<String>,
    pub filled_quantity: String,
    /// new, submitted, partially_filled, filled, cancelled, rejected, expired or unknown.
    pub status: String,
    pub position_id: Option<String>,
    pub trade_id: Option<String>,
    pub exit_reason: Option<String>,
    /// Which attempt at closing its position.
    pub attempt: i64,
    pub signal_id: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fills: Option<Vec<FillView>>,
}

fn view(o: OrderRow, fills: Option<Vec<FillRow>>) -> OrderView {
    OrderView {
        order_id: o.id,
        client_order_id: o.client_order_id,
        broker: o.broker,
        broker_order_id: o.broker_order_id,
        symbol: o.symbol,
        side: o.side,
        intent: o.intent,
        kind: o.kind,
        quantity: decimal::text(o.quantity),
        limit_price: o.limit_price.map(decimal::text),
        filled_quantity: decimal::text(o.filled_quantity),
        status: o.status,
        position_id: o.position_id,
        trade_id: o.trade_id,
        exit_reason: o.exit_reason,
        attempt: o.attempt,
        signal_id: o.signal_id,
        error: o.error,
        created_at: iso8601(o.created_at),
        updated_at: iso8601(o.updated_at),
        fills: fills.map(|fills| {
            fills
                .into_iter()
                .map(|f| FillView {
                    fill_id: f.id,
                    venue_trade_id: f.venue_trade_id,
                    quantity: decimal::text(f.quantity),
                    price: decimal::text(f.price),
                    fee: decimal::text(f.fee),
                    filled_at: iso8601(f.filled_at),
                })
                .collect()
        }),
    }
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct OrdersPage {
    pub orders: Vec<OrderView>,
    pub pagination: Pagination,
}

/// The user's orders, newest first, optionally of one status.
pub async fn list(
    app: &App,
    user: &Principal,
    status: Option<&str>,
    page: Page,
) -> ApiResult<OrdersPage> {
    if let Some(status) = status
        && OrderStatus::parse(status).is_none()
    {
        return Err(ApiError::invalid_field(
            "status",
            "one of new, submitted, partially_filled, filled, cancelled, rejected, expired, unknown",
        ));
    }
    let (orders, total) = rows::page(
        &app.db.pool,
        &user.user_id,
        status,
        page.per_page,
        page.offset(),
    )
    .await?;
    Ok(OrdersPage {
        orders: orders.into_iter().map(|o| view(o, None)).collect(),
        pagination: page.info(total),
    })
}

/// One of the user's orders with its fills.
pub async fn detail(app: &App, user: &Principal, order_id: &str) -> ApiResult<OrderView> {
    let db = &app.db.pool;
    let order = rows::by_id(db, &user.user_id, order_id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "Order not found"))?;
    let fills = rows::fills_of(db, &order.id).await?;
    Ok(view(order, Some(fills)))
}
