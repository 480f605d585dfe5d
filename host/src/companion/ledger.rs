//! The ledger route set (companion D): open positions, completed trades, raw ledger rows and
//! their statistics, straight from the engine's books, as JSON, CSV or a PDF report. Each table
//! is a list of [`Record`]s whose columns are the original's, so JSON and CSV share one shape.

use rust_decimal::Decimal;
use serde::Serialize;

use crate::App;
use crate::auth::Principal;
use crate::csv_cells;
use crate::engine::accounting::float;
use crate::engine::accounting::{CompletedTrade, Position};
use crate::engine::totals::AccountTotals;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::pdf;
use crate::store::ledger::LedgerRow;
use crate::store::totals;
use crate::store::{Filter, Owned, ledger, positions, trades};
use crate::store::{iso8601, now_ms};

/// Whose books a request reads: its own, or (admins only) one user's or everyone's.
#[derive(Debug, Clone)]
pub struct Owner {
    /// `None`: every user (an admin without a filter).
    pub user_id: Option<String>,
    /// What `statistics.user_id` echoes.
    pub label: String,
}

/// Resolves the `user_id` query parameter: honoured for admins only; `master` is the caller.
pub fn owner(user: &Principal, requested: Option<&str>) -> ApiResult<Owner> {
    let own = || Owner {
        user_id: Some(user.user_id.clone()),
        label: user.user_id.clone(),
    };
    match requested.map(str::trim).filter(|r| !r.is_empty()) {
        None if user.is_admin() => Ok(Owner {
            user_id: None,
            label: "all".into(),
        }),
        None | Some("master") => Ok(own()),
        Some(id) if id == user.user_id => Ok(own()),
        Some(id) if user.is_admin() => Ok(Owner {
            user_id: Some(id.to_string()),
            label: id.to_string(),
        }),
        Some(_) => Err(ApiError::new(
            ErrorCode::Unauthorized,
            "The user_id filter is for admins; you can read only your own books",
        )),
    }
}

fn scope(owner: &Owner, symbol: Option<&str>) -> Filter {
    Filter {
        user_id: owner.user_id.clone(),
        symbol: symbol
            .map(|s| s.trim().to_uppercase())
            .filter(|s| !s.is_empty()),
        ..Filter::default()
    }
}

/// One value of a row: exact decimals stay exact in CSV and become numbers in JSON.
#[derive(Debug, Clone)]
enum Cell {
    Decimal(Decimal),
    Number(f64),
    Text(String),
    Null,
}

impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Cell::Decimal(d) => serializer.serialize_f64(float(*d)),
            Cell::Number(x) if x.is_finite() => serializer.serialize_f64(*x),
            Cell::Number(_) | Cell::Null => serializer.serialize_unit(),
            Cell::Text(text) => serializer.serialize_str(text),
        }
    }
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Cell::Decimal(d) => d.normalize().to_string(),
            Cell::Number(x) => x.to_string(),
            Cell::Text(text) => text.clone(),
            Cell::Null => String::new(),
        }
    }
}

/// A row in its table's column order.
#[derive(Debug, Clone)]
pub struct Record(Vec<(&'static str, Cell)>);

impl Record {
    fn get(&self, column: &str) -> Option<&Cell> {
        self.0.iter().find(|(c, _)| *c == column).map(|(_, v)| v)
    }
}

/// A row is an object of its table's columns (docs/companion.md lists them): exact figures as
/// numbers, text as strings, absent values as null.
impl utoipa::PartialSchema for Record {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(AdditionalProperties::FreeForm(true)))
            .into()
    }
}

impl utoipa::ToSchema for Record {}

/// Written field by field (a page is thousands of them), keys in alphabetical order as a JSON
/// object of them has always been.
impl Serialize for Record {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut columns: Vec<&(&'static str, Cell)> = self.0.iter().collect();
        columns.sort_unstable_by_key(|(column, _)| *column);
        let mut map = serializer.serialize_map(Some(columns.len()))?;
        for (column, cell) in columns {
            map.serialize_entry(column, cell)?;
        }
        map.end()
    }
}

fn upper(text: &str) -> Cell {
    Cell::Text(text.to_uppercase())
}

fn position_record(owned: Owned<Position>) -> Record {
    let Owned { user_id, row: p } = owned;
    let entry_time = Cell::Text(iso8601(p.opened_at_ms));
    Record(vec![
        ("id", Cell::Text(p.id.clone())),
        ("position_id", Cell::Text(p.id)),
        ("user_id", Cell::Text(user_id)),
        ("symbol", Cell::Text(p.symbol)),
        ("side", upper(p.side.as_str())),
        ("entry_price", Cell::Decimal(p.entry_price)),
        ("quantity", Cell::Decimal(p.quantity)),
        (
            "size_usd",
            Cell::Decimal((p.entry_price * p.quantity).round_dp(8)),
        ),
        ("stop_loss", p.stop_loss.map_or(Cell::Null, Cell::Decimal)),
        (
            "take_profit_1",
            p.take_profit.map_or(Cell::Null, Cell::Decimal),
        ),
        ("take_profit_2", Cell::Null),
        ("take_profit_3", Cell::Null),
        ("entry_fee", Cell::Decimal(p.entry_fees)),
        ("entry_time", entry_time.clone()),
        ("status", Cell::Text("open".into())),
        ("notes", Cell::Null),
        ("created_at", entry_time),
        ("position_source", Cell::Text("strategy".into())),
    ])
}

fn trade_record(owned: Owned<CompletedTrade>) -> Record {
    let Owned { user_id, row: t } = owned;
    let profit_pct = if t.size_usd.is_zero() {
        Decimal::ZERO
    } else {
        (t.net_pnl / t.size_usd * Decimal::ONE_HUNDRED).round_dp(4)
    };
    let exit_time = Cell::Text(iso8601(t.closed_at_ms));
    Record(vec![
        ("id", Cell::Text(t.id)),
        ("position_id", Cell::Text(t.position_id)),
        ("user_id", Cell::Text(user_id)),
        ("symbol", Cell::Text(t.symbol)),
        ("side", upper(t.side.as_str())),
        ("entry_price", Cell::Decimal(t.entry_price)),
        ("exit_price", Cell::Decimal(t.exit_price)),
        ("quantity", Cell::Decimal(t.quantity)),
        ("size_usd", Cell::Decimal(t.size_usd)),
        ("entry_fee", Cell::Decimal(t.entry_fee)),
        ("exit_fee", Cell::Decimal(t.fees - t.entry_fee)),
        ("total_fees", Cell::Decimal(t.fees)),
        ("gross_profit", Cell::Decimal(t.gross_pnl)),
        ("net_profit", Cell::Decimal(t.net_pnl)),
        ("profit_pct", Cell::Decimal(profit_pct)),
        ("entry_time", Cell::Text(iso8601(t.opened_at_ms))),
        ("exit_time", exit_time.clone()),
        (
            "duration_seconds",
            Cell::Number((t.closed_at_ms - t.opened_at_ms).max(0) as f64 / 1000.0),
        ),
        ("exit_reason", Cell::Text(t.exit_reason)),
        ("notes", Cell::Null),
        ("created_at", exit_time),
    ])
}

fn ledger_record(l: LedgerRow) -> Record {
    let at = Cell::Text(iso8601(l.created_at));
    Record(vec![
        ("id", Cell::Text(l.id)),
        ("timestamp", at.clone()),
        ("user_id", Cell::Text(l.user_id)),
        ("symbol", Cell::Text(l.symbol)),
        ("side", upper(&l.side)),
        ("action", upper(&l.action)),
        ("price", Cell::Decimal(l.price)),
        ("quantity", Cell::Decimal(l.quantity)),
        ("size_usd", Cell::Decimal(l.notional)),
        ("fee", Cell::Decimal(l.fee)),
        ("order_id", Cell::Text(l.order_id)),
        ("position_id", Cell::Text(l.position_id)),
        ("platform_trade_id", Cell::Null),
        ("notes", Cell::Null),
        ("created_at", at),
    ])
}

fn timestamp() -> String {
    iso8601(now_ms())
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct OpenPositions {
    pub positions: Vec<Record>,
    pub count: usize,
    pub timestamp: String,
}

pub async fn open_positions(
    app: &App,
    owner: &Owner,
    symbol: Option<&str>,
) -> ApiResult<OpenPositions> {
    let positions: Vec<Record> = positions::open_owned(&app.db, &scope(owner, symbol))
        .await?
        .into_iter()
        .map(position_record)
        .collect();
    Ok(OpenPositions {
        count: positions.len(),
        positions,
        timestamp: timestamp(),
    })
}

/// `limit` 1–1000 (default 100) and `offset` ≥ 0.
pub fn page(limit: Option<i64>, offset: Option<i64>) -> ApiResult<(i64, i64)> {
    let limit = limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(
            ApiError::invalid_field("limit", "must be a whole number from 1 to 1000")
                .detail("in", "query"),
        );
    }
    let offset = offset.unwrap_or(0);
    if offset < 0 {
        return Err(
            ApiError::invalid_field("offset", "must be a whole number of at least 0")
                .detail("in", "query"),
        );
    }
    Ok((limit, offset))
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Statistics {
    pub total_trades: u64,
    pub total_pnl: f64,
    pub avg_pnl: Option<f64>,
    pub winners: u64,
    pub losers: u64,
    pub best_trade: Option<f64>,
    pub worst_trade: Option<f64>,
    pub total_fees: f64,
    pub open_positions: i64,
    pub win_rate: f64,
}

/// From the owner's running totals (every account's, for an operator without a filter): one
/// row per account, whatever the length of the history.
async fn statistics_of(app: &App, owner: &Owner) -> ApiResult<Statistics> {
    let totals = match &owner.user_id {
        Some(user_id) => totals::get(&app.db.pool, user_id).await?,
        None => AccountTotals::combine(&totals::all(&app.db).await?),
    };
    Ok(Statistics {
        total_trades: totals.sums.trades,
        total_pnl: float(totals.sums.net_pnl),
        avg_pnl: totals.sums.avg_pnl().map(float),
        winners: totals.sums.winners,
        losers: totals.sums.losers,
        best_trade: totals.best_trade.map(float),
        worst_trade: totals.worst_trade.map(float),
        total_fees: float(totals.fees),
        open_positions: positions::count_open(&app.db.pool, &scope(owner, None)).await?,
        win_rate: totals.sums.win_rate_pct(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct TradeHistory {
    pub trades: Vec<Record>,
    pub count: usize,
    pub statistics: Statistics,
    pub timestamp: String,
}

pub async fn history(
    app: &App,
    owner: &Owner,
    symbol: Option<&str>,
    limit: i64,
    offset: i64,
) -> ApiResult<TradeHistory> {
    let trades: Vec<Record> = trades::page(&app.db, &scope(owner, symbol), Some(limit), offset)
        .await?
        .into_iter()
        .map(trade_record)
        .collect();
    Ok(TradeHistory {
        count: trades.len(),
        trades,
        statistics: statistics_of(app, owner).await?,
        timestamp: timestamp(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct Ledger {
    pub transactions: Vec<Record>,
    pub count: usize,
    pub timestamp: String,
}

pub async fn ledger(
    app: &App,
    owner: &Owner,
    symbol: Option<&str>,
    limit: i64,
) -> ApiResult<Ledger> {
    let transactions = ledger::page(&app.db, &scope(owner, symbol), Some(limit), 0)
        .await?
        .into_iter()
        .map(ledger_record)
        .collect::<Vec<_>>();
    Ok(Ledger {
        count: transactions.len(),
        transactions,
        timestamp: timestamp(),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct StatisticsAnswer {
    pub statistics: Statistics,
    pub user_id: String,
    pub timestamp: String,
}

pub async fn statistics(app: &App, owner: &Owner) -> ApiResult<StatisticsAnswer> {
    Ok(StatisticsAnswer {
        statistics: statistics_of(app, owner).await?,
        user_id: owner.label.clone(),
        timestamp: timestamp(),
    })
}

/// The three tables of the export, with the header row of each (the original's column order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Table {
    TradeLedger,
    OpenPositions,
    CompletedTrades,
}

impl Table {
    pub fn parse(raw: Option<&str>) -> ApiResult<Table> {
        match raw.unwrap_or("completed_trades").trim() {
            "trade_ledger" => Ok(Table::TradeLedger),
            "open_positions" => Ok(Table::OpenPositions),
            "completed_trades" => Ok(Table::CompletedTrades),
            _ => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "Invalid table. Must be one of: trade_ledger, open_positions, completed_trades",
            )
            .detail("field", "table")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Table::TradeLedger => "trade_ledger",
            Table::OpenPositions => "open_positions",
            Table::CompletedTrades => "completed_trades",
        }
    }

    pub fn columns(self) -> &'static [&'static str] {
        match self {
            Table::TradeLedger => &[
                "id",
                "timestamp",
                "user_id",
                "symbol",
                "side",
                "action",
                "price",
                "quantity",
                "size_usd",
                "fee",
                "order_id",
                "position_id",
                "platform_trade_id",
                "notes",
                "created_at",
            ],
            Table::OpenPositions => &[
                "id",
                "position_id",
                "user_id",
                "symbol",
                "side",
                "entry_price",
                "quantity",
                "size_usd",
                "stop_loss",
                "take_profit_1",
                "take_profit_2",
                "take_profit_3",
                "entry_fee",
                "entry_time",
                "status",
                "notes",
                "created_at",
                "position_source",
            ],
            Table::CompletedTrades => &[
                "id",
                "position_id",
                "user_id",
                "symbol",
                "side",
                "entry_price",
                "exit_price",
                "quantity",
                "size_usd",
                "entry_fee",
                "exit_fee",
                "total_fees",
                "gross_profit",
                "net_profit",
                "profit_pct",
                "entry_time",
                "exit_time",
                "duration_seconds",
                "exit_reason",
                "notes",
                "created_at",
            ],
        }
    }

    /// The columns of the PDF report, which has room for fewer.
    fn report_columns(self) -> &'static [&'static str] {
        match self {
            Table::TradeLedger => &[
                "timestamp",
                "symbol",
                "side",
                "action",
                "price",
                "quantity",
                "size_usd",
                "fee",
                "position_id",
            ],
            Table::OpenPositions => &[
                "symbol",
                "side",
                "entry_price",
                "quantity",
                "size_usd",
                "stop_loss",
                "take_profit_1",
                "entry_fee",
                "entry_time",
                "user_id",
            ],
            Table::CompletedTrades => &[
                "symbol",
                "side",
                "entry_price",
                "exit_price",
                "quantity",
                "size_usd",
                "total_fees",
                "net_profit",
                "profit_pct",
                "exit_time",
                "exit_reason",
            ],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    Csv,
    Pdf,
}

impl Format {
    pub fn parse(raw: Option<&str>) -> ApiResult<Format> {
        match raw.unwrap_or("csv").trim().to_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "pdf" => Ok(Format::Pdf),
            _ => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "Invalid format. Use \"csv\" or \"pdf\"",
            )
            .detail("field", "format")),
        }
    }
}

/// A file to download.
pub struct Download {
    pub file_name: String,
    pub content_type: &'static str,
    pub bytes: Vec<u8>,
}

/// Most rows one export holds (the newest).
const EXPORT_ROWS: i64 = 100_000;

async fn records(app: &App, owner: &Owner, table: Table) -> ApiResult<Vec<Record>> {
    let all = scope(owner, None);
    match table {
        Table::TradeLedger => Ok(ledger::page(&app.db, &all, Some(EXPORT_ROWS), 0)
            .await?
            .into_iter()
            .map(ledger_record)
            .collect()),
        Table::OpenPositions => Ok(positions::open_owned(&app.db, &all)
            .await?
            .into_iter()
            .map(position_record)
            .collect()),
        Table::CompletedTrades => Ok(trades::page(&app.db, &all, Some(EXPORT_ROWS), 0)
            .await?
            .into_iter()
            .map(trade_record)
            .collect()),
    }
}

pub async fn export(app: &App, owner: &Owner, table: Table, format: Format) -> ApiResult<Download> {
    let records = records(app, owner, table).await?;
    let stamp = chrono::Utc::now().format("%Y%m%d_%H%M%S");
    Ok(match format {
        Format::Csv => Download {
            file_name: format!("tradehost_{}_{stamp}.csv", table.name()),
            content_type: "text/csv; charset=utf-8",
            bytes: csv(table, &records).into_bytes(),
        },
        Format::Pdf => {
            let statistics = statistics_of(app, owner).await?;
            Download {
                file_name: format!("tradehost_{}_{stamp}.pdf", table.name()),
                content_type: "application/pdf",
                bytes: report(table, owner, &statistics, &records),
            }
        }
    })
}

/// The table as CSV: the header row, then one line per record, CRLF line endings.
fn csv(table: Table, records: &[Record]) -> String {
    let rows = records.iter().map(|record| {
        table
            .columns()
            .iter()
            .map(|column| record.get(column).map(Cell::text).unwrap_or_default())
    });
    csv_cells::write(table.columns(), rows, csv_cells::Terminator::CRLF)
}

fn report(table: Table, owner: &Owner, statistics: &Statistics, records: &[Record]) -> Vec<u8> {
    let figure = |x: Option<f64>| x.map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
    let title = format!("tradehost - {}", table.name().replace('_', " "));
    let heading = format!("{} ({} rows)", table.name(), records.len());
    let columns = table.report_columns();
    let document = pdf::Report {
        title: &title,
        summary: vec![
            ("Account".into(), owner.label.clone()),
            ("Generated".into(), timestamp()),
            (
                "Completed trades".into(),
                statistics.total_trades.to_string(),
            ),
            ("Win rate".into(), format!("{:.2} %", statistics.win_rate)),
            ("Net profit".into(), figure(Some(statistics.total_pnl))),
            ("Fees".into(), figure(Some(statistics.total_fees))),
            ("Best trade".into(), figure(statistics.best_trade)),
            ("Worst trade".into(), figure(statistics.worst_trade)),
            (
                "Open positions".into(),
                statistics.open_positions.to_string(),
            ),
        ],
        tables: vec![pdf::Table {
            heading: &heading,
            columns,
            rows: records
                .iter()
                .map(|record| {
                    columns
                        .iter()
                        .map(|column| record.get(column).map(Cell::text).unwrap_or_default())
                        .collect()
                })
                .collect(),
        }],
    };
    pdf::render(&document)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(id: &str, role: &str) -> Principal {
        Principal::for_tests(id, role)
    }

    #[test]
    fn user_id_filter_is_for_admins_and_master_is_the_caller() {
        let user = principal("u1", "user");
        assert_eq!(owner(&user, None).unwrap().user_id.as_deref(), Some("u1"));
        assert_eq!(
            owner(&user, Some("master")).unwrap().user_id.as_deref(),
            Some("u1")
        );
        assert_eq!(owner(&user, Some("u1")).unwrap().label, "u1");
        assert_eq!(
            owner(&user, Some("u2")).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        let admin = principal("a1", "admin");
        let everyone = owner(&admin, None).unwrap();
        assert_eq!((everyone.user_id, everyone.label.as_str()), (None, "all"));
        assert_eq!(
            owner(&admin, Some("u2")).unwrap().user_id.as_deref(),
            Some("u2")
        );
        assert_eq!(
            owner(&admin, Some("master")).unwrap().user_id.as_deref(),
            Some("a1")
        );
    }

    #[test]
    fn csv_has_the_header_row_crlf_and_quoted_fields() {
        let record = Record(vec![
            ("id", Cell::Text("t1".into())),
            ("timestamp", Cell::Text("2026-01-01T00:00:00.000Z".into())),
            ("symbol", Cell::Text("BTC-USD".into())),
            ("price", Cell::Decimal("62000.50".parse().unwrap())),
            ("notes", Cell::Text("said \"hi\", then left".into())),
            ("platform_trade_id", Cell::Null),
        ]);
        let text = csv(Table::TradeLedger, &[record]);
        let lines: Vec<&str> = text.split("\r\n").collect();
        assert_eq!(
            lines[0],
            "id,timestamp,user_id,symbol,side,action,price,quantity,size_usd,fee,order_id,position_id,platform_trade_id,notes,created_at"
        );
        assert_eq!(
            lines[1],
            "t1,2026-01-01T00:00:00.000Z,,BTC-USD,,,62000.5,,,,,,,\"said \"\"hi\"\", then left\","
        );
        assert_eq!(lines[2], "");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn csv_neutralises_formulas_and_keeps_negative_numbers() {
        let record = Record(vec![
            ("id", Cell::Text("t2".into())),
            ("symbol", Cell::Text("@SUM(A1)".into())),
            ("side", Cell::Text("+BUY".into())),
            ("price", Cell::Decimal("-12.50".parse().unwrap())),
            ("fee", Cell::Number(-0.25)),
            (
                "notes",
                Cell::Text("=HYPERLINK(\"http://x\", \"x\")".into()),
            ),
        ]);
        let text = csv(Table::TradeLedger, &[record]);
        assert_eq!(
            text.split("\r\n").nth(1).unwrap(),
            "t2,,,'@SUM(A1),'+BUY,,-12.5,,,-0.25,,,,\"'=HYPERLINK(\"\"http://x\"\", \"\"x\"\")\","
        );
    }

    /// A big export as the route renders it: 20,000 ledger entries (two per position, with
    /// random ids) in the PDF report.
    #[test]
    fn a_twenty_thousand_row_ledger_pdf_stays_under_two_megabytes() {
        const ENTRIES: usize = 20_000;
        let symbols = [
            ("BTC-USD", 64_000.0),
            ("ETH-USD", 3_100.0),
            ("SOL-USD", 145.0),
            ("DOGE-USD", 0.16),
        ];
        let mut position_id = String::new();
        let records: Vec<Record> = (0..ENTRIES)
            .map(|index| {
                let (symbol, base) = symbols[index / 2 % symbols.len()];
                if index % 2 == 0 {
                    position_id = uuid::Uuid::new_v4().to_string();
                }
                let price = base * (1.0 + 0.03 * (index as f64 * 0.37).sin());
                let quantity = 2_500.0 / base * (1.0 + (index % 7) as f64 / 10.0);
                let notional = price * quantity;
                ledger_record(LedgerRow {
                    id: uuid::Uuid::new_v4().to_string(),
                    user_id: "u1".into(),
                    order_id: uuid::Uuid::new_v4().to_string(),
                    position_id: position_id.clone(),
                    symbol: symbol.into(),
                    side: ["buy", "sell"][index / 2 % 2].into(),
                    action: ["open", "close"][index % 2].into(),
                    quantity: format!("{quantity:.6}").parse().unwrap(),
                    price: format!("{price:.4}").parse().unwrap(),
                    notional: format!("{notional:.2}").parse().unwrap(),
                    fee: format!("{:.4}", notional * 0.001).parse().unwrap(),
                    broker: "paper".into(),
                    realized_pnl: Decimal::ZERO,
                    cash_after: Decimal::ZERO,
                    created_at: 1_767_225_600_000 + index as i64 * 37_000,
                    entry_fee: Decimal::ZERO,
                })
            })
            .collect();
        let statistics = Statistics {
            total_trades: (ENTRIES / 2) as u64,
            total_pnl: 1_234.5,
            avg_pnl: Some(0.12),
            winners: 6_000,
            losers: 4_000,
            best_trade: Some(98.7),
            worst_trade: Some(-65.4),
            total_fees: 321.0,
            open_positions: 0,
            win_rate: 60.0,
        };
        let owner = Owner {
            user_id: Some("u1".into()),
            label: "u1".into(),
        };

        let started = std::time::Instant::now();
        let pdf = report(Table::TradeLedger, &owner, &statistics, &records);
        let elapsed = started.elapsed();
        eprintln!(
            "{ENTRIES} ledger entries: {} bytes of PDF in {elapsed:?}",
            pdf.len()
        );
        assert!(
            pdf.len() < 2_000_000,
            "{ENTRIES} ledger entries take {} bytes",
            pdf.len()
        );

        // Every entry is there: the first on page 1, the last on the last page.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ledger.pdf");
        std::fs::write(&file, &pdf).unwrap();
        let text = |page: usize| {
            let page = page.to_string();
            let output = std::process::Command::new("pdftotext")
                .args(["-layout", "-enc", "UTF-8", "-f", &page, "-l", &page])
                .arg(&file)
                .arg("-")
                .output()
                .expect("pdftotext runs: install the Debian package poppler-utils");
            assert!(output.status.success(), "pdftotext on page {page}");
            String::from_utf8(output.stdout).unwrap()
        };
        let position = |record: &Record| record.get("position_id").unwrap().text();
        let first = text(1);
        let pages = first
            .split("page 1 of ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|count| count.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no page count on page 1:\n{first}"));
        assert!(first.contains(&position(&records[0])), "{first}");
        assert!(text(pages).contains(&position(&records[ENTRIES - 1])));
    }

    #[test]
    fn export_checks_table_then_format_and_limits_pages() {
        assert!(Table::parse(Some("users")).is_err());
        assert_eq!(Table::parse(None).unwrap(), Table::CompletedTrades);
        assert_eq!(Format::parse(Some("PDF")).unwrap(), Format::Pdf);
        assert!(Format::parse(Some("xlsx")).is_err());
        assert_eq!(page(None, None).unwrap(), (100, 0));
        assert!(page(Some(0), None).is_err());
        assert!(page(Some(1001), None).is_err());
        assert!(page(Some(10), Some(-1)).is_err());
    }
}
