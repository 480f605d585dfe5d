//! A venue's own record of an account (the paper venue's, read from the broker plugin's store;
//! the exchange simulator's, from its engine) and the books compared with it, exactly: the truth
//! a test holds tradehost's order handling to.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result, bail, ensure};
use rust_decimal::Decimal;
use serde_json::Value;
use sqlx::Row;

use crate::Server;

#[derive(Debug, Clone)]
pub struct VenueFill {
    pub trade_id: String,
    pub quantity: Decimal,
    pub price: Decimal,
    pub fee: Decimal,
}

#[derive(Debug, Clone)]
pub struct VenueOrder {
    pub client_order_id: String,
    pub symbol: String,
    pub buy: bool,
    pub quantity: Decimal,
    pub status: String,
    pub fills: Vec<VenueFill>,
}

/// What the venue holds for one account.
#[derive(Debug, Default, Clone)]
pub struct VenueBook {
    pub orders: BTreeMap<String, VenueOrder>,
    /// Cash its fills moved, per asset.
    pub cash: BTreeMap<String, Decimal>,
    /// Signed holdings per asset (`BTC`), beyond what the account held before it traded.
    pub holdings: BTreeMap<String, Decimal>,
}

/// What a comparison covered.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Compared {
    pub orders: usize,
    pub fills: usize,
}

fn dec(value: &Value) -> Result<Decimal> {
    value
        .as_str()
        .with_context(|| format!("not a decimal string: {value}"))?
        .parse()
        .with_context(|| format!("not a decimal: {value}"))
}

/// `BTC` of `BTC-USD`.
pub fn asset_of(symbol: &str) -> &str {
    symbol.split_once('-').map_or(symbol, |(base, _)| base)
}

fn text_dec(text: &str) -> Result<Decimal> {
    text.parse()
        .with_context(|| format!("stored decimal {text:?}"))
}

impl Server {
    /// The venue's record of `user_id`'s account with broker plugin `plugin`.
    pub async fn venue_book(&self, plugin: &str, user_id: &str) -> Result<VenueBook> {
        let rows =
            sqlx::query("SELECT key, value FROM plugin_store WHERE plugin = $1 AND scope = $2")
                .bind(plugin)
                .bind(user_id)
                .fetch_all(self.db().await)
                .await?;
        let mut book = VenueBook::default();
        for row in rows {
            let key: String = row.try_get(0)?;
            let value: String = row.try_get(1)?;
            if key.starts_with("order/") {
                let order: Value = serde_json::from_str(&value)?;
                let fills = order["fills"]
                    .as_array()
                    .context("order fills")?
                    .iter()
                    .map(|f| {
                        Ok(VenueFill {
                            trade_id: f["trade_id"].as_str().context("trade id")?.to_string(),
                            quantity: dec(&f["quantity"])?,
                            price: dec(&f["price"])?,
                            fee: dec(&f["fee"])?,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let client_order_id = order["client_order_id"]
                    .as_str()
                    .context("client id")?
                    .to_string();
                book.orders.insert(
                    client_order_id.clone(),
                    VenueOrder {
                        client_order_id,
                        symbol: order["symbol"].as_str().context("symbol")?.to_string(),
                        buy: order["buy"].as_bool().context("buy")?,
                        quantity: dec(&order["quantity"])?,
                        status: order["status"].as_str().context("status")?.to_string(),
                        fills,
                    },
                );
            } else if key == "account" {
                let account: Value = serde_json::from_str(&value)?;
                for (asset, cash) in account["cash"].as_object().context("cash")? {
                    book.cash.insert(asset.clone(), dec(cash)?);
                }
                for (symbol, holding) in account["holdings"].as_object().context("holdings")? {
                    *book
                        .holdings
                        .entry(asset_of(symbol).to_string())
                        .or_default() += dec(&holding["quantity"])?;
                }
            }
        }
        Ok(book)
    }

    /// Compares the books of `user_id` with the venue's record, exactly: every order the venue
    /// filled is booked with exactly its fills (none lost, none twice), nothing is booked the
    /// venue did not fill, the open positions are what the venue holds, the cash moved is the
    /// cash the venue moved, and cash + marked positions = initial + realized + unrealized − fees.
    /// Meant for an account that trades only on this venue, with no order left live.
    pub async fn assert_books_match_venue(&self, plugin: &str, user_id: &str) -> Result<Compared> {
        let venue = self.venue_book(plugin, user_id).await?;
        self.assert_books_match(plugin, user_id, &venue).await
    }

    /// As [`Server::assert_books_match_venue`], against `venue`. Holdings are compared per asset,
    /// less what the books record as held apart from tradehost (dust left by closes).
    pub async fn assert_books_match(
        &self,
        plugin: &str,
        user_id: &str,
        venue: &VenueBook,
    ) -> Result<Compared> {
        let db = self.db().await;
        let live: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM orders WHERE user_id = $1 AND status IN ('new', 'submitted', 'partially_filled', 'unknown')",
        )
        .bind(user_id)
        .fetch_one(db)
        .await?;
        ensure!(live == 0, "{live} order(s) are still live");

        let d = crate::decimal_sql;
        let orders = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT id, client_order_id, status, {} FROM orders WHERE user_id = $1 AND broker = $2",
            d("filled_quantity")
        )))
        .bind(user_id)
        .bind(plugin)
        .fetch_all(db)
        .await?;
        let mut compared = Compared::default();
        let mut ours = BTreeSet::new();
        for order in &orders {
            let id: String = order.try_get(0)?;
            let client_order_id: String = order.try_get(1)?;
            let status: String = order.try_get(2)?;
            let filled = text_dec(&order.try_get::<String, _>(3)?)?;
            ours.insert(client_order_id.clone());
            let fills = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT venue_trade_id, {}, {}, {} FROM fills WHERE order_id = $1",
                d("quantity"),
                d("price"),
                d("fee")
            )))
            .bind(&id)
            .fetch_all(db)
            .await?;
            let mut booked: BTreeMap<String, (Decimal, Decimal, Decimal)> = BTreeMap::new();
            for fill in &fills {
                let trade_id: String = fill.try_get(0)?;
                let figures = (
                    text_dec(&fill.try_get::<String, _>(1)?)?,
                    text_dec(&fill.try_get::<String, _>(2)?)?,
                    text_dec(&fill.try_get::<String, _>(3)?)?,
                );
                ensure!(
                    booked.insert(trade_id.clone(), figures).is_none(),
                    "fill {trade_id} booked twice"
                );
            }
            let total: Decimal = booked.values().map(|f| f.0).sum();
            ensure!(
                total == filled,
                "order {client_order_id}: filled_quantity {filled} but fills sum to {total}"
            );
            // One ledger row per fill (and, for a close, possibly one for dust left at the venue).
            let ledger: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM ledger WHERE order_id = $1 AND fill_id IS NOT NULL",
            )
            .bind(&id)
            .fetch_one(db)
            .await?;
            ensure!(
                ledger as usize == booked.len(),
                "order {client_order_id}: {ledger} ledger rows for {} fills",
                booked.len()
            );
            match venue.orders.get(&client_order_id) {
                None => ensure!(
                    booked.is_empty() && matches!(status.as_str(), "rejected" | "expired"),
                    "order {client_order_id} ({status}, {} fills) is unknown to the venue",
                    booked.len()
                ),
                Some(at_venue) => {
                    let theirs: BTreeMap<String, (Decimal, Decimal, Decimal)> = at_venue
                        .fills
                        .iter()
                        // The books keep eight decimals; a fee valued in the quote asset has more.
                        .map(|f| (f.trade_id.clone(), (f.quantity, f.price, f.fee.round_dp(8))))
                        .collect();
                    if booked != theirs {
                        bail!(
                            "order {client_order_id}: booked fills {booked:?}, the venue's {theirs:?}"
                        );
                    }
                    let done = matches!(at_venue.status.as_str(), "filled" | "cancelled");
                    ensure!(
                        done,
                        "order {client_order_id} still works at the venue ({})",
                        at_venue.status
                    );
                    compared.orders += 1;
                    compared.fills += booked.len();
                }
            }
        }
        for client_order_id in venue.orders.keys() {
            ensure!(
                ours.contains(client_order_id),
                "the venue has order {client_order_id}, the books do not"
            );
        }

        // Holdings: the open positions are what the venue holds.
        let positions = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT symbol, side, {}, {}, {}, {} FROM positions \
             WHERE user_id = $1 AND broker = $2 AND status = 'open'",
            d("quantity"),
            d("cost"),
            d("entry_price"),
            d("current_price")
        )))
        .bind(user_id)
        .bind(plugin)
        .fetch_all(db)
        .await?;
        let mut held: BTreeMap<String, Decimal> = BTreeMap::new();
        let (mut marked, mut unrealized) = (Decimal::ZERO, Decimal::ZERO);
        for position in &positions {
            let symbol: String = position.try_get(0)?;
            let sign = if position.try_get::<String, _>(1)? == "long" {
                Decimal::ONE
            } else {
                Decimal::NEGATIVE_ONE
            };
            let quantity = text_dec(&position.try_get::<String, _>(2)?)?;
            let cost = match position.try_get::<Option<String>, _>(3)? {
                Some(cost) => text_dec(&cost)?,
                None => quantity * text_dec(&position.try_get::<String, _>(4)?)?,
            };
            let mark = text_dec(&position.try_get::<String, _>(5)?)?;
            *held.entry(asset_of(&symbol).to_string()).or_default() += sign * quantity;
            marked += sign * quantity * mark;
            unrealized += sign * (quantity * mark - cost);
        }
        held.retain(|_, q| !q.is_zero());
        let apart = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT symbol, {} FROM venue_baselines WHERE user_id = $1 AND broker = $2",
            d("quantity")
        )))
        .bind(user_id)
        .bind(plugin)
        .fetch_all(db)
        .await?;
        let mut apart_of: BTreeMap<String, Decimal> = BTreeMap::new();
        for row in &apart {
            apart_of.insert(row.try_get(0)?, text_dec(&row.try_get::<String, _>(1)?)?);
        }
        let venue_holdings: BTreeMap<String, Decimal> = venue
            .holdings
            .iter()
            .map(|(asset, q)| {
                (
                    asset.clone(),
                    *q - apart_of.get(asset).copied().unwrap_or_default(),
                )
            })
            .filter(|(_, q)| !q.is_zero())
            .collect();
        ensure!(
            held == venue_holdings,
            "positions {held:?}, the venue holds {venue_holdings:?}"
        );

        // Cash, and the books' own invariant.
        let account = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {}, {}, {}, {} FROM trading_accounts WHERE user_id = $1",
            d("initial_capital"),
            d("cash"),
            d("realized_pnl"),
            d("fees_paid")
        )))
        .bind(user_id)
        .fetch_one(db)
        .await?;
        let initial = text_dec(&account.try_get::<String, _>(0)?)?;
        let cash = text_dec(&account.try_get::<String, _>(1)?)?;
        let realized = text_dec(&account.try_get::<String, _>(2)?)?;
        let fees = text_dec(&account.try_get::<String, _>(3)?)?;
        let moved: Decimal = venue.cash.values().sum();
        ensure!(
            cash - initial == moved,
            "the books' cash moved {}, the venue's {moved}",
            cash - initial
        );
        ensure!(
            cash + marked == initial + realized + unrealized - fees,
            "cash {cash} + marked {marked} != initial {initial} + realized {realized} + unrealized {unrealized} - fees {fees}"
        );
        Ok(compared)
    }
}
