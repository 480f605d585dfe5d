//! Test guest: the paper venue with the faults of a real exchange injected on request, so the
//! host's order handling can be shown to survive them. `fault` lists what goes wrong:
//!
//! - `timeout_after_accept`: orders are accepted (and fill as usual), the answer is a timeout;
//! - `duplicate_fills`: every report and `fills-since` lists each fill twice;
//! - `forget_filled`: `get-order` and `cancel-order` know an order only while it works;
//! - `reject`: every order is rejected; `reject_closes`: every reduce-only order is;
//! - `reject_first_close`: the first, third, ... reduce-only order of each symbol is rejected;
//! - `unavailable`: every account call fails as if the exchange were down.
//!
//! `stall_ms` keeps an accepted order's answer back that long.

use std::collections::BTreeSet;

/// The faults named in the `fault` setting.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Faults(BTreeSet<String>);

pub const KNOWN: [&str; 7] = [
    "timeout_after_accept",
    "duplicate_fills",
    "forget_filled",
    "reject",
    "reject_first_close",
    "reject_closes",
    "unavailable",
];

impl Faults {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut faults = BTreeSet::new();
        for name in text
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && *n != "none")
        {
            if !KNOWN.contains(&name) {
                return Err(format!(
                    "unknown fault `{name}`; known: {}",
                    KNOWN.join(", ")
                ));
            }
            faults.insert(name.to_string());
        }
        Ok(Self(faults))
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    use paper_venue::PaperConfig;
    use paper_venue::venue::{HostStore, Store, Venue};
    use tradehost_sdk::broker::{AccountCheck, BrokerInfo, BrokerPosition, Credentials, Guest};
    use tradehost_sdk::config;
    use tradehost_sdk::host;
    use tradehost_sdk::types::{
        AssetBalance, BrokerError, Candle, Fill, Instrument, OrderQuery, OrderReport, OrderRequest,
    };

    use super::Faults;

    struct FaultyBroker;

    struct Setup {
        config: PaperConfig,
        faults: Faults,
        stall_ms: i64,
    }

    fn setup() -> Result<Setup, BrokerError> {
        let reader = config::from_host();
        let misconfigured = |err: String| BrokerError::Unavailable(format!("misconfigured: {err}"));
        let config = PaperConfig::read(&reader).map_err(|err| misconfigured(err.to_string()))?;
        let faults = Faults::parse(&reader.string("fault", "none")).map_err(misconfigured)?;
        let stall_ms = reader
            .integer_in("stall_ms", 0, 0, 60_000)
            .map_err(|err| misconfigured(err.to_string()))?;
        Ok(Setup {
            config,
            faults,
            stall_ms,
        })
    }

    /// Runs `work` on the account's venue, unless the exchange is "down".
    fn with_venue<T>(
        work: impl FnOnce(&mut Venue<'_, HostStore>, &Setup) -> Result<T, BrokerError>,
    ) -> Result<T, BrokerError> {
        let setup = setup()?;
        if setup.faults.has("unavailable") {
            return Err(BrokerError::Unavailable("the exchange is down".into()));
        }
        let mut store = HostStore;
        let mut venue = Venue {
            store: &mut store,
            config: &setup.config,
            now: host::now_ms(),
        };
        work(&mut venue, &setup)
    }

    fn doubled(mut report: OrderReport, faults: &Faults) -> OrderReport {
        if faults.has("duplicate_fills") {
            let copy = report.fills.clone();
            report.fills.extend(copy);
        }
        report
    }

    /// `forget_filled`: an order that no longer works is unknown to `get-order`.
    fn remembered(report: OrderReport, faults: &Faults) -> Result<OrderReport, BrokerError> {
        use tradehost_sdk::types::OrderStatus;
        let working = matches!(
            report.status,
            OrderStatus::Open | OrderStatus::PartiallyFilled
        );
        if faults.has("forget_filled") && !working {
            return Err(BrokerError::NotFound(format!(
                "unknown order {}",
                report.client_order_id
            )));
        }
        Ok(report)
    }

    impl Guest for FaultyBroker {
        fn describe() -> BrokerInfo {
            BrokerInfo {
                name: "guest-faulty-broker".into(),
                display_name: "Test: faulty exchange".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                capabilities: vec![
                    "spot".into(),
                    "short".into(),
                    "market-orders".into(),
                    "simulated".into(),
                ],
            }
        }

        fn validate_credentials(creds: Credentials) -> Result<AccountCheck, BrokerError> {
            paper_venue::validate_credentials(&creds)
        }

        fn balances(_creds: Credentials) -> Result<Vec<AssetBalance>, BrokerError> {
            with_venue(|venue, _| venue.balances())
        }

        fn positions(_creds: Credentials) -> Result<Vec<BrokerPosition>, BrokerError> {
            with_venue(|venue, _| venue.positions())
        }

        fn instrument(_creds: Credentials, symbol: String) -> Result<Instrument, BrokerError> {
            paper_venue::instrument(&setup()?.config, &symbol)
        }

        fn candles(
            symbol: String,
            interval: String,
            limit: u32,
            end_ms: i64,
        ) -> Result<Vec<Candle>, BrokerError> {
            paper_venue::candles(&setup()?.config.market(), &symbol, &interval, limit, end_ms)
        }

        fn place_order(
            _creds: Credentials,
            order: OrderRequest,
        ) -> Result<OrderReport, BrokerError> {
            with_venue(|venue, setup| {
                let faults = &setup.faults;
                if faults.has("reject") || (order.reduce_only && faults.has("reject_closes")) {
                    return Err(BrokerError::Rejected(
                        "rejected by the faulty exchange".into(),
                    ));
                }
                if order.reduce_only && faults.has("reject_first_close") {
                    let key = format!("closes/{}", order.symbol);
                    let seen: u64 = venue
                        .store
                        .get(&key)
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    venue
                        .store
                        .write(vec![(key, Some((seen + 1).to_string()))])
                        .map_err(BrokerError::Unavailable)?;
                    if seen.is_multiple_of(2) {
                        return Err(BrokerError::Rejected(
                            "close rejected by the faulty exchange".into(),
                        ));
                    }
                }
                let report = venue.place(&order)?;
                if setup.stall_ms > 0 {
                    // An exchange has the order before its answer comes back: a scan makes what
                    // the call wrote durable now (the host would otherwise write it with its
                    // booking of the answer).
                    venue.store.scan("order/", None, 1);
                    let until = host::now_ms() + setup.stall_ms;
                    while host::now_ms() < until {}
                }
                if faults.has("timeout_after_accept") {
                    return Err(BrokerError::Timeout("no answer from the exchange".into()));
                }
                Ok(doubled(report, faults))
            })
        }

        fn get_order(_creds: Credentials, query: OrderQuery) -> Result<OrderReport, BrokerError> {
            with_venue(|venue, setup| {
                let report = remembered(venue.get(&query)?, &setup.faults)?;
                Ok(doubled(report, &setup.faults))
            })
        }

        fn open_orders(
            _creds: Credentials,
            symbol: Option<String>,
        ) -> Result<Vec<OrderReport>, BrokerError> {
            with_venue(|venue, setup| {
                Ok(venue
                    .open_orders(symbol.as_deref())?
                    .into_iter()
                    .map(|r| doubled(r, &setup.faults))
                    .collect())
            })
        }

        fn fills_since(
            _creds: Credentials,
            since_ms: i64,
            symbol: Option<String>,
        ) -> Result<Vec<Fill>, BrokerError> {
            with_venue(|venue, setup| {
                let mut fills = venue.fills_since(since_ms, symbol.as_deref())?;
                if setup.faults.has("duplicate_fills") {
                    fills = fills.into_iter().flat_map(|f| [f.clone(), f]).collect();
                }
                Ok(fills)
            })
        }

        fn cancel_order(
            _creds: Credentials,
            query: OrderQuery,
        ) -> Result<OrderReport, BrokerError> {
            with_venue(|venue, setup| remembered(venue.cancel(&query)?, &setup.faults))
        }
    }

    tradehost_sdk::export_broker!(FaultyBroker);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_are_named_from_a_known_list() {
        let faults = Faults::parse("duplicate_fills, forget_filled").unwrap();
        assert!(faults.has("duplicate_fills") && faults.has("forget_filled"));
        assert!(!faults.has("reject"));
        assert_eq!(Faults::parse("none").unwrap(), Faults::default());
        assert_eq!(Faults::parse("").unwrap(), Faults::default());
        assert!(Faults::parse("explode").is_err());
    }
}
