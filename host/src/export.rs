//! `POST /analytics/export`: writes a user's data as CSV or JSON under the data directory and
//! answers a download link that works for 15 minutes and only for that export: its token is
//! random, stored as a hash, and bound to the export and its owner.

use std::path::PathBuf;

use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::App;
use crate::auth::sessions::Principal;
use crate::csv_cells;
use crate::engine::{metrics, reports};
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::plugins::registry::sha256_hex;
use crate::store::exports::{self, ExportRow};
use crate::store::{Filter, ledger, trades};
use crate::store::{iso8601, new_id, now_ms};

pub const LINK_LIFETIME_MS: i64 = 15 * 60 * 1000;
const DATA_TYPES: [&str; 5] = ["trades", "positions", "ledger", "daily_pnl", "equity_curve"];
/// At most this many rows go into one export.
const MAX_ROWS: i64 = 100_000;

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportRequest {
    #[serde(default = "csv")]
    pub format: String,
    #[serde(default = "trades")]
    pub data_type: String,
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    #[serde(default = "yes")]
    pub include_closed_positions: bool,
    #[serde(default)]
    pub include_open_positions: bool,
}

fn csv() -> String {
    "csv".into()
}
fn trades() -> String {
    "trades".into()
}
fn yes() -> bool {
    true
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Exported {
    pub export_id: String,
    pub download_url: String,
    pub expires_at: String,
    pub file_size_bytes: u64,
    pub rows: usize,
}

/// Rows of one data type, each a flat JSON object with the same keys in the same order.
async fn rows(
    app: &App,
    user: &Principal,
    request: &ExportRequest,
    filter: &Filter,
) -> ApiResult<Vec<Value>> {
    let user_id = &user.user_id;
    Ok(match request.data_type.as_str() {
        "trades" | "positions" => {
            let mut out = Vec::new();
            let want_open = request.data_type == "positions" || request.include_open_positions;
            let want_closed = request.data_type == "trades" && request.include_closed_positions;
            if want_open {
                let open = reports::positions(app, user, None, filter.symbol.as_deref()).await?;
                for p in open.positions {
                    out.push(json!({
                        "trade_id": p.position_id, "status": "open", "symbol": p.symbol, "side": p.side,
                        "quantity": p.quantity, "entry_price": p.entry_price, "exit_price": Value::Null,
                        "size_usd": p.size_usd, "gross_pnl": Value::Null, "fees": Value::Null,
                        "net_pnl": p.unrealized_pnl, "pnl_pct": p.unrealized_pnl_pct, "opened_at": p.opened_at,
                        "closed_at": Value::Null, "exit_reason": Value::Null, "broker": p.broker,
                    }));
                }
            }
            if want_closed {
                let trades = trades::page(&app.db, filter, Some(MAX_ROWS), 0).await?;
                for t in trades.iter().rev() {
                    let r = reports::trade_record(&t.row);
                    out.push(json!({
                        "trade_id": r.trade_id, "status": "closed", "symbol": r.symbol, "side": r.side,
                        "quantity": r.quantity, "entry_price": r.entry_price, "exit_price": r.exit_price,
                        "size_usd": r.size_usd, "gross_pnl": r.gross_pnl, "fees": r.fees, "net_pnl": r.realized_pnl,
                        "pnl_pct": r.realized_pnl_pct, "opened_at": r.opened_at, "closed_at": r.closed_at,
                        "exit_reason": r.exit_reason, "broker": r.broker,
                    }));
                }
            }
            out
        }
        "ledger" => {
            let rows = ledger::page(&app.db, filter, Some(MAX_ROWS), 0).await?;
            rows.into_iter()
                .rev()
                .map(|e| {
                    json!({
                        "entry_id": e.id, "timestamp": iso8601(e.created_at), "order_id": e.order_id,
                        "position_id": e.position_id, "symbol": e.symbol, "side": e.side, "action": e.action,
                        "quantity": e.quantity, "price": e.price, "notional": e.notional, "fee": e.fee,
                        "realized_pnl": e.realized_pnl, "cash_after": e.cash_after, "broker": e.broker,
                    })
                })
                .collect()
        }
        "daily_pnl" => {
            let trades =
                trades::trades_since(&app.db.pool, user_id, filter.from_ms.unwrap_or(0)).await?;
            let closed: Vec<_> = trades
                .iter()
                .filter(|t| filter.until_ms.is_none_or(|until| t.closed_at_ms <= until))
                .map(reports::closed_trade)
                .collect();
            metrics::daily_pnl(&closed)
                .into_iter()
                .map(|(date, pnl)| json!({"date": date.to_string(), "pnl": metrics::finite(pnl)}))
                .collect()
        }
        _ => {
            let (equity, _) =
                reports::equity_series(app, user_id, filter.from_ms.unwrap_or(0)).await?;
            metrics::daily_close(&equity)
                .into_iter()
                .map(|(date, equity)| json!({"date": date.to_string(), "equity": metrics::finite(equity)}))
                .collect()
        }
    })
}

/// The CSV columns of each data type, in order.
fn columns(data_type: &str) -> &'static [&'static str] {
    match data_type {
        "trades" | "positions" => &[
            "trade_id",
            "status",
            "symbol",
            "side",
            "quantity",
            "entry_price",
            "exit_price",
            "size_usd",
            "gross_pnl",
            "fees",
            "net_pnl",
            "pnl_pct",
            "opened_at",
            "closed_at",
            "exit_reason",
            "broker",
        ],
        "ledger" => &[
            "entry_id",
            "timestamp",
            "order_id",
            "position_id",
            "symbol",
            "side",
            "action",
            "quantity",
            "price",
            "notional",
            "fee",
            "realized_pnl",
            "cash_after",
            "broker",
        ],
        "daily_pnl" => &["date", "pnl"],
        _ => &["date", "equity"],
    }
}

/// The rows as CSV: the header row, then one line per row, LF line endings.
fn to_csv(keys: &[&str], rows: &[Value]) -> String {
    let cell = |value: &Value| match value {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let rows = rows
        .iter()
        .map(|row| keys.iter().map(move |key| cell(&row[*key])));
    csv_cells::write(keys, rows, csv_cells::Terminator::Any(b'\n'))
}

/// Where exports were written before their bytes were kept in the database.
fn export_dir(app: &App) -> PathBuf {
    app.config.data_dir.join("exports")
}

pub async fn create(
    app: &App,
    user: &Principal,
    request: ExportRequest,
    from_ms: Option<i64>,
    until_ms: Option<i64>,
) -> ApiResult<Exported> {
    if !["csv", "json"].contains(&request.format.as_str()) {
        return Err(ApiError::invalid_field("format", "csv or json"));
    }
    if !DATA_TYPES.contains(&request.data_type.as_str()) {
        return Err(ApiError::invalid_field(
            "data_type",
            format!("one of {}", DATA_TYPES.join(", ")),
        ));
    }
    if let (Some(from), Some(until)) = (from_ms, until_ms)
        && from > until
    {
        return Err(ApiError::invalid_field("end_date", "before start_date"));
    }
    let filter = Filter {
        from_ms,
        until_ms,
        ..Filter::user(&user.user_id)
    };
    let rows = rows(app, user, &request, &filter).await?;
    let body = if request.format == "json" {
        serde_json::to_string_pretty(&json!({"data_type": request.data_type, "rows": rows}))
            .expect("rows serialise")
    } else {
        to_csv(columns(&request.data_type), &rows)
    };
    let id = new_id();
    let file_name = format!("{id}.{}", request.format);
    let mut secret = [0u8; 32];
    rand::rng().fill_bytes(&mut secret);
    let token = hex::encode(secret);
    let now = now_ms();
    let expires_at = now + LINK_LIFETIME_MS;
    exports::insert(
        &app.db.pool,
        &ExportRow {
            id: id.clone(),
            user_id: user.user_id.clone(),
            token_hash: sha256_hex(token.as_bytes()),
            file_name,
            format: request.format.clone(),
            data_type: request.data_type.clone(),
            size_bytes: body.len() as i64,
            created_at: now,
            expires_at,
        },
        body.as_bytes(),
    )
    .await?;
    Ok(Exported {
        download_url: format!("/api/v1/analytics/export/{id}?token={token}"),
        export_id: id,
        expires_at: iso8601(expires_at),
        file_size_bytes: body.len() as u64,
        rows: rows.len(),
    })
}

/// A finished export's bytes and content type, for the holder of its token.
pub async fn download(
    app: &App,
    export_id: &str,
    token: Option<&str>,
) -> ApiResult<(String, Vec<u8>)> {
    let not_found = || ApiError::new(ErrorCode::NotFound, "Export not found");
    let row = exports::by_id(&app.db.pool, export_id)
        .await?
        .ok_or_else(not_found)?;
    let presented = sha256_hex(token.unwrap_or_default().as_bytes());
    let matches: bool =
        subtle::ConstantTimeEq::ct_eq(presented.as_bytes(), row.token_hash.as_bytes()).into();
    if !matches {
        return Err(ApiError::new(
            ErrorCode::TokenInvalid,
            "The download link is not valid",
        ));
    }
    if row.expires_at <= now_ms() {
        return Err(ApiError::new(
            ErrorCode::TokenExpired,
            "The download link has expired; export again",
        ));
    }
    // Kept in the database (any instance serves it); an earlier release wrote it to the data
    // directory.
    let bytes = match exports::body(&app.db.pool, export_id).await? {
        Some(bytes) => bytes,
        None => tokio::fs::read(export_dir(app).join(&row.file_name))
            .await
            .map_err(|err| {
                ApiError::internal(format!("export {export_id} of {}: {err}", row.user_id))
            })?,
    };
    Ok((row.format, bytes))
}

/// Deletes exports whose links have expired (called by the background sweeper), with the file of
/// one an earlier release wrote.
pub async fn sweep(app: &App) -> anyhow::Result<()> {
    for export in exports::expired(&app.db.pool, now_ms()).await? {
        let _ = tokio::fs::remove_file(export_dir(app).join(&export.file_name)).await;
        exports::delete(&app.db.pool, &export.id).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_and_neutralises_formulas() {
        let rows = vec![
            json!({"a": "x,y", "b": 1.5, "c": null}),
            json!({"a": "=SUM(A1)", "b": "say \"hi\"", "c": true}),
        ];
        assert_eq!(
            to_csv(&["a", "b", "c"], &rows),
            "a,b,c\n\"x,y\",1.5,\n'=SUM(A1),\"say \"\"hi\"\"\",true\n"
        );
        assert_eq!(to_csv(&["date", "pnl"], &[]), "date,pnl\n");
        // Negative numbers stay numbers; text that a spreadsheet would evaluate does not.
        let rows = vec![
            json!({"a": -12.5, "b": "-3", "c": "+1 555 0100"}),
            json!({"a": "@SUM(A1)", "b": "line\nbreak", "c": "a=b"}),
        ];
        assert_eq!(
            to_csv(&["a", "b", "c"], &rows),
            "a,b,c\n-12.5,-3,'+1 555 0100\n'@SUM(A1),\"line\nbreak\",a=b\n"
        );
    }
}
