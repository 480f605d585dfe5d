//! What is the same in every venue plugin: a spot account's holdings reported as positions, and
//! the component glue from the broker world to a venue's operations ([`export_venue!`]).

use rust_decimal::Decimal;
use tradehost_sdk::broker::BrokerPosition;
use tradehost_sdk::types::{AssetBalance, Side};

use crate::{numbers, symbols};

/// A spot account's holdings as the broker world's positions: every asset but `quote` with a
/// positive total (free and locked), held long against `quote`.
pub fn holdings_as_positions(balances: Vec<AssetBalance>, quote: &str) -> Vec<BrokerPosition> {
    balances
        .into_iter()
        .filter(|b| b.asset != quote)
        .filter_map(|b| {
            let total = numbers::parse(&b.free)? + numbers::parse(&b.locked)?;
            let symbol = symbols::join(&b.asset, quote);
            (total > Decimal::ZERO && symbols::split(&symbol).is_ok()).then(|| BrokerPosition {
                symbol,
                side: Side::Long,
                quantity: numbers::text(total),
                entry_price: None,
            })
        })
        .collect()
}

/// Exports a venue as the broker world.
///
/// `$with` runs an operation for an account:
/// `fn with<T>(creds: Option<&Credentials>, for_user: bool, work: impl FnOnce(&mut V) -> Result<T, BrokerError>) -> Result<T, BrokerError>`,
/// where `V` has `validate`, `balances`, `positions`, `instrument`, `candles`, `place`, `get`,
/// `open_orders`, `fills_since` and `cancel`. `for_user` says whether the call is made for a
/// connected user (and so may use the user's store): every account call but the check of new
/// credentials, which comes before the connection exists. Market data is asked for without
/// credentials.
#[macro_export]
macro_rules! export_venue {
    ($guest:ident, $describe:path, $with:path) => {
        struct $guest;

        impl ::tradehost_sdk::broker::Guest for $guest {
            fn describe() -> ::tradehost_sdk::broker::BrokerInfo {
                $describe()
            }

            fn validate_credentials(
                creds: ::tradehost_sdk::broker::Credentials,
            ) -> Result<::tradehost_sdk::broker::AccountCheck, ::tradehost_sdk::types::BrokerError>
            {
                $with(Some(&creds), false, |venue| venue.validate())
            }

            fn balances(
                creds: ::tradehost_sdk::broker::Credentials,
            ) -> Result<Vec<::tradehost_sdk::types::AssetBalance>, ::tradehost_sdk::types::BrokerError>
            {
                $with(Some(&creds), true, |venue| venue.balances())
            }

            fn positions(
                creds: ::tradehost_sdk::broker::Credentials,
            ) -> Result<
                Vec<::tradehost_sdk::broker::BrokerPosition>,
                ::tradehost_sdk::types::BrokerError,
            > {
                $with(Some(&creds), true, |venue| venue.positions())
            }

            fn instrument(
                creds: ::tradehost_sdk::broker::Credentials,
                symbol: String,
            ) -> Result<::tradehost_sdk::types::Instrument, ::tradehost_sdk::types::BrokerError>
            {
                $with(Some(&creds), true, |venue| venue.instrument(&symbol))
            }

            fn candles(
                symbol: String,
                interval: String,
                limit: u32,
                end_ms: i64,
            ) -> Result<Vec<::tradehost_sdk::types::Candle>, ::tradehost_sdk::types::BrokerError>
            {
                $with(None, false, |venue| {
                    venue.candles(&symbol, &interval, limit, end_ms)
                })
            }

            fn place_order(
                creds: ::tradehost_sdk::broker::Credentials,
                order: ::tradehost_sdk::types::OrderRequest,
            ) -> Result<::tradehost_sdk::types::OrderReport, ::tradehost_sdk::types::BrokerError>
            {
                $with(Some(&creds), true, |venue| venue.place(&order))
            }

            fn get_order(
                creds: ::tradehost_sdk::broker::Credentials,
                query: ::tradehost_sdk::types::OrderQuery,
            ) -> Result<::tradehost_sdk::types::OrderReport, ::tradehost_sdk::types::BrokerError>
            {
                $with(Some(&creds), true, |venue| venue.get(&query))
            }

            fn open_orders(
                creds: ::tradehost_sdk::broker::Credentials,
                symbol: Option<String>,
            ) -> Result<
                Vec<::tradehost_sdk::types::OrderReport>,
                ::tradehost_sdk::types::BrokerError,
            > {
                $with(Some(&creds), true, |venue| venue.open_orders(symbol.as_deref()))
            }

            fn fills_since(
                creds: ::tradehost_sdk::broker::Credentials,
                since_ms: i64,
                symbol: Option<String>,
            ) -> Result<Vec<::tradehost_sdk::types::Fill>, ::tradehost_sdk::types::BrokerError> {
                $with(Some(&creds), true, |venue| {
                    venue.fills_since(since_ms, symbol.as_deref())
                })
            }

            fn cancel_order(
                creds: ::tradehost_sdk::broker::Credentials,
                query: ::tradehost_sdk::types::OrderQuery,
            ) -> Result<::tradehost_sdk::types::OrderReport, ::tradehost_sdk::types::BrokerError>
            {
                $with(Some(&creds), true, |venue| venue.cancel(&query))
            }
        }

        ::tradehost_sdk::export_broker!($guest);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn balance(asset: &str, free: &str, locked: &str) -> AssetBalance {
        AssetBalance {
            asset: asset.into(),
            free: free.into(),
            locked: locked.into(),
        }
    }

    #[test]
    fn holdings_other_than_the_quote_are_long_positions() {
        let positions = holdings_as_positions(
            vec![
                balance("USDT", "1000", "0"),
                balance("BTC", "0.5", "0.25"),
                balance("ETH", "0", "0"),
                balance("SOL", "0", "3"),
            ],
            "USDT",
        );
        let held: Vec<(String, String)> = positions
            .iter()
            .map(|p| (p.symbol.clone(), p.quantity.clone()))
            .collect();
        assert_eq!(
            held,
            [
                ("BTC-USDT".to_string(), "0.75".to_string()),
                ("SOL-USDT".to_string(), "3".to_string())
            ]
        );
        assert!(positions.iter().all(|p| p.side == Side::Long));
    }
}
