//! Companion set D: the trade ledger (open positions, history, raw ledger, statistics, export).

use rocket::http::{ContentType, Header};
use rocket::{Responder, Route, State, get, routes};

use super::{Json, int_param};
use crate::App;
use crate::auth::AuthUser;
use crate::error::ApiResult;
use crate::ledger::{
    self, Format, Ledger, OpenPositions, StatisticsAnswer, Table, TradeHistory, owner, page,
};

pub fn routes() -> Vec<Route> {
    routes![open_positions, history, transactions, statistics, export]
}

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
