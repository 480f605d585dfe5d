//! `/api/v1/market/*`: market data for charts.

use rocket::{State, get};

use crate::App;
use crate::api::envelope::{Success, ok};
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::market::{self, Chart, ChartRequest};

crate::api::handlers![candles];

#[utoipa::path(
    tag = "market",
    operation_id = "marketCandles",
    summary = "Candles",
    description = "The last closed candles of a pair at a broker, oldest first, as the bot's scans read them (prices for charts; `time` is the bar's open time in Unix seconds).",
    security(("bearerAuth" = [])),
    params(
        ("symbol" = String, Query, description = "The pair (BASE-QUOTE).", example = json!("BTC-USD")),
        ("interval" = Option<String>, Query, pattern = "^(1m|5m|1h)$", description = "Bar length (default 1m; one of `1m`, `5m`, `1h`)."),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "How many bars (default 300)."),
        ("broker" = Option<String>, Query, description = "Whose prices (default `paper`).", example = json!("paper"))
    ),
    responses(
        (status = 200, description = "OK", body = Enveloped<Chart>),
        (status = 400, response = Platform400InvalidRequest),
        (status = 502, response = Platform502BrokerError)
    ),
)]
#[get("/market/candles?<symbol>&<interval>&<limit>&<broker>")]
async fn candles(
    app: &State<App>,
    _user: AuthUser,
    symbol: &str,
    interval: Option<&str>,
    limit: Option<&str>,
    broker: Option<&str>,
) -> ApiResult<Success<Chart>> {
    let request = ChartRequest::parse(broker, symbol, interval, limit)?;
    market::candles(app, request).await.map(ok)
}
