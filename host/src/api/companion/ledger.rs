//! Companion set D: the trade ledger (open positions, history, raw ledger, statistics, export).

use rocket::http::{ContentType, Header};
use rocket::{Responder, State, get};

use super::{Json, int_param};
use crate::App;
use crate::api::openapi::prelude::*;
use crate::auth::AuthUser;
use crate::companion::ledger::{
    self, Format, Ledger, OpenPositions, StatisticsAnswer, Table, TradeHistory, owner, page,
};
use crate::error::ApiResult;

crate::api::handlers![open_positions, history, transactions, statistics, export];

#[utoipa::path(
    tag = "companion-ledger",
    operation_id = "ledgerOpenPositions",
    summary = "Open positions (ledger)",
    description = "The open positions as the engine's ledger books them, newest first.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = Option<String>, Query, description = "Admins only: another user's id, or `master` for their own account. A non-admin asking for another user gets 403."),
        ("symbol" = Option<String>, Query, description = "Only this pair (exact match).", example = json!("BTC-USD"))
    ),
    responses(
        (status = 200, description = "OK", body = OpenPositions),
        (status = 403, response = Companion403Unauthorized)
    ),
)]
#[get("/api/positions/open?<user_id>&<symbol>")]
async fn open_positions(
    app: &State<App>,
    user: AuthUser,
    user_id: Option<&str>,
    symbol: Option<&str>,
) -> ApiResult<Json<OpenPositions>> {
    let owner = owner(&user.0, user_id)?;
    ledger::open_positions(app, &owner, symbol).await.map(Json)
}

#[utoipa::path(
    tag = "companion-ledger",
    operation_id = "ledgerTradeHistory",
    summary = "Completed trades",
    description = "Completed trades, latest exit first, with the statistics.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = Option<String>, Query, description = "Admins only: another user's id, or `master` for their own account. A non-admin asking for another user gets 403."),
        ("symbol" = Option<String>, Query, description = "Only this pair (exact match).", example = json!("BTC-USD")),
        ("limit" = Option<i64>, Query, description = "1 to 1000 (default 100); anything else is 400.", minimum = 1, maximum = 1000),
        ("offset" = Option<i64>, Query, description = "≥ 0 (default 0); anything else is 400.", minimum = 0)
    ),
    responses(
        (status = 200, description = "OK", body = TradeHistory),
        (status = 400, description = "Bad request: limit must be an integer from 1 to 1000", body = CompanionError),
        (status = 403, response = Companion403Unauthorized)
    ),
)]
#[get("/api/trades/history?<user_id>&<symbol>&<limit>&<offset>")]
async fn history(
    app: &State<App>,
    user: AuthUser,
    user_id: Option<&str>,
    symbol: Option<&str>,
    limit: Option<&str>,
    offset: Option<&str>,
) -> ApiResult<Json<TradeHistory>> {
    let owner = owner(&user.0, user_id)?;
    let (limit, offset) = page(int_param("limit", limit)?, int_param("offset", offset)?)?;
    ledger::history(app, &owner, symbol, limit, offset)
        .await
        .map(Json)
}

#[utoipa::path(
    tag = "companion-ledger",
    operation_id = "ledgerTransactions",
    summary = "Raw ledger",
    description = "Every fill (open and close), newest first.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = Option<String>, Query, description = "Admins only: another user's id, or `master` for their own account. A non-admin asking for another user gets 403."),
        ("symbol" = Option<String>, Query, description = "Only this pair (exact match).", example = json!("BTC-USD")),
        ("limit" = Option<i64>, Query, description = "1 to 1000 (default 100); anything else is 400.", minimum = 1, maximum = 1000)
    ),
    responses(
        (status = 200, description = "OK", body = Ledger),
        (status = 400, description = "Bad request: limit must be an integer from 1 to 1000", body = CompanionError),
        (status = 403, response = Companion403Unauthorized)
    ),
)]
#[get("/api/trades/ledger?<user_id>&<symbol>&<limit>")]
async fn transactions(
    app: &State<App>,
    user: AuthUser,
    user_id: Option<&str>,
    symbol: Option<&str>,
    limit: Option<&str>,
) -> ApiResult<Json<Ledger>> {
    let owner = owner(&user.0, user_id)?;
    let (limit, _) = page(int_param("limit", limit)?, None)?;
    ledger::ledger(app, &owner, symbol, limit).await.map(Json)
}

#[utoipa::path(
    tag = "companion-ledger",
    operation_id = "ledgerStatistics",
    summary = "Trade statistics",
    description = "Totals over the completed trades: counts and sums are 0 without trades; averages and extremes null.",
    security(("bearerAuth" = [])),
    params(
        ("user_id" = Option<String>, Query, description = "Admins only: another user's id, or `master` for their own account. A non-admin asking for another user gets 403.")
    ),
    responses(
        (status = 200, description = "OK", body = StatisticsAnswer),
        (status = 403, response = Companion403Unauthorized)
    ),
)]
#[get("/api/trades/statistics?<user_id>")]
async fn statistics(
    app: &State<App>,
    user: AuthUser,
    user_id: Option<&str>,
) -> ApiResult<Json<StatisticsAnswer>> {
    let owner = owner(&user.0, user_id)?;
    ledger::statistics(app, &owner).await.map(Json)
}

/// An exported table, as an attachment.
#[derive(Responder)]
struct Download {
    body: Vec<u8>,
    content_type: ContentType,
    disposition: Header<'static>,
}

#[utoipa::path(
    tag = "companion-ledger",
    operation_id = "ledgerExport",
    summary = "Export the ledger",
    description = "Downloads a table as CSV (`text/csv; charset=utf-8`, CRLF line endings, newest first, empty fields for nulls) or as a PDF report with the statistics. The table is checked first, then the format.",
    security(("bearerAuth" = [])),
    params(
        ("format" = Option<String>, Query, pattern = "^(csv|pdf)$", description = "csv (default) or pdf. (default \"csv\"; one of `csv`, `pdf`)"),
        ("table" = Option<String>, Query, pattern = "^(trade_ledger|open_positions|completed_trades)$", description = "Default completed_trades. (default \"completed_trades\"; one of `trade_ledger`, `open_positions`, `completed_trades`)"),
        ("user_id" = Option<String>, Query, description = "Admins only: another user's id, or `master` for their own account. A non-admin asking for another user gets 403.")
    ),
    responses(
        (status = 200, description = "An attachment named `tradehost_<table>_<YYYYmmdd_HHMMSS>.<csv|pdf>`.", content(
            (String = "text/csv", example = json!("id,position_id,user_id,symbol,side,entry_price,exit_price,quantity,size_usd,entry_fee,exit_fee,total_fees,gross_profit,net_profit,profit_pct,entry_time,exit_time,duration_seconds,exit_reason,notes,created_at\r\n")),
            (Vec<u8> = "application/pdf")
        )),
        (status = 400, description = "Bad request: Invalid table. Must be one of: trade_ledger, open_positions, completed_trades; Invalid format. Use \"csv\" or \"pdf\"", body = CompanionError),
        (status = 403, response = Companion403Unauthorized)
    ),
)]
#[get("/api/trades/export?<format>&<table>&<user_id>")]
async fn export(
    app: &State<App>,
    user: AuthUser,
    format: Option<&str>,
    table: Option<&str>,
    user_id: Option<&str>,
) -> ApiResult<Download> {
    // The original checks the table first, then the format.
    let table = Table::parse(table)?;
    let format = Format::parse(format)?;
    let owner = owner(&user.0, user_id)?;
    let file = ledger::export(app, &owner, table, format).await?;
    Ok(Download {
        body: file.bytes,
        content_type: ContentType::parse_flexible(file.content_type).unwrap_or(ContentType::Binary),
        disposition: Header::new(
            "Content-Disposition",
            format!("attachment; filename={}", file.file_name),
        ),
    })
}
