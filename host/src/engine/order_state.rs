//! The order state machine: where an order stands in tradehost's books, and what moves it.
//!
//! ```text
//!            ┌──────────────── refused ───────────────► rejected
//!            │
//!   new ─────┼── sent, no answer ──► unknown ─┐
//!            │                                 │ (the venue reports, or does not know it)
//!            └── acknowledged ──► submitted ──►├─► partially_filled ─► filled
//!                                              ├─► cancelled / expired (possibly after fills)
//!                                              └─► expired (never placed)
//! ```
//!
//! - `new`: written before it is sent. After a crash it may or may not have reached the venue;
//!   reconciliation asks.
//! - `unknown`: sent, and the answer was lost (timeout, outage, a failed plugin call).
//! - The books follow the fills: an order is `filled` once fills for its whole quantity are
//!   booked, or once the venue calls it filled and every fill it counts is booked (a venue that
//!   takes its fee out of the asset bought reports fills net of it, so they add up to less than
//!   the order). A venue that reports more filled than tradehost has booked keeps the order live
//!   until the missing fills are found.
//! - `filled`, `cancelled`, `rejected` and `expired` are final. A fill reported late for a
//!   cancelled or expired order is still booked (the venue's fills are the truth); if it
//!   completes the order, the order becomes `filled`.
//!
//! Every transition is one database transaction together with the fills it books
//! (`orders.rs`); this module is the pure rule, tested transition by transition.

use rust_decimal::Decimal;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    New,
    Submitted,
    PartiallyFilled,
    Filled,
    Cancelled,
    Rejected,
    Expired,
    Unknown,
}

impl OrderStatus {
    pub const ALL: [OrderStatus; 8] = [
        OrderStatus::New,
        OrderStatus::Submitted,
        OrderStatus::PartiallyFilled,
        OrderStatus::Filled,
        OrderStatus::Cancelled,
        OrderStatus::Rejected,
        OrderStatus::Expired,
        OrderStatus::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::New => "new",
            OrderStatus::Submitted => "submitted",
            OrderStatus::PartiallyFilled => "partially_filled",
            OrderStatus::Filled => "filled",
            OrderStatus::Cancelled => "cancelled",
            OrderStatus::Rejected => "rejected",
            OrderStatus::Expired => "expired",
            OrderStatus::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<OrderStatus> {
        OrderStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Nothing more happens to it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            OrderStatus::Filled
                | OrderStatus::Cancelled
                | OrderStatus::Rejected
                | OrderStatus::Expired
        )
    }

    /// It may still fill: reconciliation follows it.
    pub fn is_live(self) -> bool {
        !self.is_final()
    }
}

/// What the venue says of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VenueStatus {
    Open,
    PartiallyFilled,
    Filled,
    Cancelled,
    Rejected,
    Expired,
}

/// Something that happened to an order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OrderEvent {
    /// The venue refused it: nothing was placed.
    Refused,
    /// It was sent and the answer was lost: the venue may have it.
    OutcomeUnknown,
    /// The venue's report of it (an acknowledgement or a later status), with how much the venue
    /// says filled; its fills are booked first.
    Reported {
        venue: VenueStatus,
        venue_filled: Decimal,
    },
    /// Fills were booked without a status from the venue (found through `fills-since`).
    FillsBooked,
    /// The venue does not know the order (any more) and every fill of it that exists is booked:
    /// what did not fill never will.
    Vanished,
}

/// How much of an order is booked as filled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub quantity: Decimal,
    pub booked: Decimal,
}

impl Progress {
    fn complete(self) -> bool {
        self.booked >= self.quantity
    }

    /// Live with nothing filled, or partly filled.
    fn working(self) -> OrderStatus {
        if self.booked.is_zero() {
            OrderStatus::Submitted
        } else {
            OrderStatus::PartiallyFilled
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("an order cannot go from {from} on {event}")]
pub struct InvalidTransition {
    pub from: &'static str,
    pub event: String,
}

/// The status after `event`, with `progress` counting the fills booked with it.
pub fn apply(
    status: OrderStatus,
    event: OrderEvent,
    progress: Progress,
) -> Result<OrderStatus, InvalidTransition> {
    use OrderStatus as S;
    let invalid = || InvalidTransition {
        from: status.as_str(),
        event: format!("{event:?}"),
    };
    // A venue that reports more filled than is booked keeps the order live until the rest is.
    let missing_fills = |venue_filled: Decimal| venue_filled > progress.booked;
    Ok(match (status, event) {
        (S::New, OrderEvent::Refused) => S::Rejected,
        (S::New, OrderEvent::OutcomeUnknown) => S::Unknown,
        (
            S::New | S::Unknown | S::Submitted | S::PartiallyFilled,
            OrderEvent::Reported {
                venue,
                venue_filled,
            },
        ) => {
            match venue {
                _ if progress.complete() => S::Filled,
                // Filled net of a fee taken in the asset bought: nothing more will come.
                VenueStatus::Filled
                    if !progress.booked.is_zero() && !missing_fills(venue_filled) =>
                {
                    S::Filled
                }
                VenueStatus::Rejected
                    if progress.booked.is_zero() && !missing_fills(venue_filled) =>
                {
                    if matches!(status, S::New | S::Unknown) {
                        S::Rejected
                    } else {
                        // An accepted order the venue later calls rejected ended without filling.
                        S::Expired
                    }
                }
                VenueStatus::Open
                | VenueStatus::PartiallyFilled
                | VenueStatus::Filled
                | VenueStatus::Rejected => {
                    if venue == VenueStatus::PartiallyFilled || missing_fills(venue_filled) {
                        S::PartiallyFilled
                    } else {
                        progress.working()
                    }
                }
                VenueStatus::Cancelled | VenueStatus::Expired if missing_fills(venue_filled) => {
                    S::PartiallyFilled
                }
                VenueStatus::Cancelled => S::Cancelled,
                VenueStatus::Expired => S::Expired,
            }
        }
        (S::New | S::Unknown | S::Submitted | S::PartiallyFilled, OrderEvent::FillsBooked) => {
            if progress.complete() {
                S::Filled
            } else {
                S::PartiallyFilled
            }
        }
        (S::New | S::Unknown | S::Submitted | S::PartiallyFilled, OrderEvent::Vanished) => {
            if progress.complete() {
                S::Filled
            } else if progress.booked.is_zero() {
                S::Expired
            } else {
                S::Cancelled
            }
        }
        // Late fills of an order that ended: booked, and it is filled once they complete it.
        (S::Cancelled | S::Expired, OrderEvent::FillsBooked | OrderEvent::Reported { .. }) => {
            if progress.complete() {
                S::Filled
            } else {
                status
            }
        }
        (S::Filled, OrderEvent::FillsBooked) => S::Filled,
        (
            S::Filled,
            OrderEvent::Reported {
                venue: VenueStatus::Filled,
                ..
            },
        ) => S::Filled,
        _ => return Err(invalid()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use OrderStatus as S;

    fn d(text: &str) -> Decimal {
        text.parse().unwrap()
    }

    fn progress(booked: &str) -> Progress {
        Progress {
            quantity: d("3"),
            booked: d(booked),
        }
    }

    fn reported(venue: VenueStatus, venue_filled: &str) -> OrderEvent {
        OrderEvent::Reported {
            venue,
            venue_filled: d(venue_filled),
        }
    }

    fn ok(status: OrderStatus, event: OrderEvent, booked: &str) -> OrderStatus {
        apply(status, event, progress(booked)).unwrap()
    }

    #[test]
    fn names_round_trip() {
        for status in OrderStatus::ALL {
            assert_eq!(OrderStatus::parse(status.as_str()), Some(status));
            assert_eq!(status.is_final(), !status.is_live());
        }
        assert_eq!(OrderStatus::parse("pending"), None);
        assert!(S::Unknown.is_live() && S::New.is_live() && S::Filled.is_final());
    }

    #[test]
    fn a_new_order_refused_is_rejected() {
        assert_eq!(ok(S::New, OrderEvent::Refused, "0"), S::Rejected);
    }

    #[test]
    fn a_new_order_without_an_answer_is_unknown() {
        assert_eq!(ok(S::New, OrderEvent::OutcomeUnknown, "0"), S::Unknown);
    }

    #[test]
    fn an_acknowledged_order_is_submitted_until_it_fills() {
        assert_eq!(
            ok(S::New, reported(VenueStatus::Open, "0"), "0"),
            S::Submitted
        );
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Open, "0"), "0"),
            S::Submitted
        );
    }

    #[test]
    fn part_of_it_filled_is_partially_filled() {
        assert_eq!(
            ok(S::New, reported(VenueStatus::PartiallyFilled, "1"), "1"),
            S::PartiallyFilled
        );
        assert_eq!(
            ok(
                S::Submitted,
                reported(VenueStatus::PartiallyFilled, "2"),
                "2"
            ),
            S::PartiallyFilled
        );
        assert_eq!(
            ok(
                S::PartiallyFilled,
                reported(VenueStatus::PartiallyFilled, "2"),
                "2"
            ),
            S::PartiallyFilled
        );
        // The venue says open, yet a fill was booked: partially filled.
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Open, "1"), "1"),
            S::PartiallyFilled
        );
    }

    #[test]
    fn it_is_filled_only_when_its_fills_are_booked() {
        assert_eq!(
            ok(S::New, reported(VenueStatus::Filled, "3"), "3"),
            S::Filled
        );
        assert_eq!(
            ok(S::PartiallyFilled, reported(VenueStatus::Filled, "3"), "3"),
            S::Filled
        );
        // The venue says filled but has not told us every fill yet.
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Filled, "3"), "1"),
            S::PartiallyFilled
        );
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Filled, "3"), "0"),
            S::PartiallyFilled
        );
        // Filled with nothing counted yet: live until fills show up.
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Filled, "0"), "0"),
            S::Submitted
        );
    }

    #[test]
    fn filled_net_of_a_fee_in_the_asset_bought_is_filled() {
        // 3 bought, 0.003 kept by the venue as its fee: the fills add up to 2.997.
        assert_eq!(
            ok(
                S::Submitted,
                reported(VenueStatus::Filled, "2.997"),
                "2.997"
            ),
            S::Filled
        );
        assert_eq!(
            ok(S::Unknown, reported(VenueStatus::Filled, "2.997"), "2.997"),
            S::Filled
        );
        // Still partly filled at the venue: not filled, however little is left.
        assert_eq!(
            ok(
                S::Submitted,
                reported(VenueStatus::PartiallyFilled, "2.997"),
                "2.997"
            ),
            S::PartiallyFilled
        );
    }

    #[test]
    fn an_unknown_order_takes_the_venues_word() {
        assert_eq!(
            ok(S::Unknown, reported(VenueStatus::Filled, "3"), "3"),
            S::Filled
        );
        assert_eq!(
            ok(S::Unknown, reported(VenueStatus::Open, "0"), "0"),
            S::Submitted
        );
        assert_eq!(
            ok(S::Unknown, reported(VenueStatus::Rejected, "0"), "0"),
            S::Rejected
        );
        assert_eq!(
            ok(S::Unknown, reported(VenueStatus::Cancelled, "0"), "0"),
            S::Cancelled
        );
    }

    #[test]
    fn cancelled_and_expired_keep_what_filled() {
        assert_eq!(
            ok(
                S::PartiallyFilled,
                reported(VenueStatus::Cancelled, "1"),
                "1"
            ),
            S::Cancelled
        );
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Expired, "0"), "0"),
            S::Expired
        );
        // Cancelled at the venue after fills tradehost has not booked: still live until it has.
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Cancelled, "2"), "1"),
            S::PartiallyFilled
        );
    }

    #[test]
    fn a_working_order_the_venue_calls_rejected_ended_unfilled() {
        assert_eq!(
            ok(S::Submitted, reported(VenueStatus::Rejected, "0"), "0"),
            S::Expired
        );
        assert_eq!(
            ok(S::New, reported(VenueStatus::Rejected, "0"), "0"),
            S::Rejected
        );
    }

    #[test]
    fn fills_found_without_a_status_move_it_on() {
        assert_eq!(
            ok(S::Unknown, OrderEvent::FillsBooked, "1"),
            S::PartiallyFilled
        );
        assert_eq!(ok(S::Submitted, OrderEvent::FillsBooked, "3"), S::Filled);
        assert_eq!(ok(S::Filled, OrderEvent::FillsBooked, "3"), S::Filled);
    }

    #[test]
    fn an_order_the_venue_does_not_know_ends_with_what_filled() {
        assert_eq!(ok(S::New, OrderEvent::Vanished, "0"), S::Expired);
        assert_eq!(ok(S::Unknown, OrderEvent::Vanished, "0"), S::Expired);
        assert_eq!(ok(S::Unknown, OrderEvent::Vanished, "3"), S::Filled);
        assert_eq!(
            ok(S::PartiallyFilled, OrderEvent::Vanished, "1"),
            S::Cancelled
        );
        assert_eq!(ok(S::Submitted, OrderEvent::Vanished, "0"), S::Expired);
    }

    #[test]
    fn late_fills_of_an_ended_order_are_booked() {
        assert_eq!(ok(S::Cancelled, OrderEvent::FillsBooked, "2"), S::Cancelled);
        assert_eq!(ok(S::Cancelled, OrderEvent::FillsBooked, "3"), S::Filled);
        assert_eq!(
            ok(S::Expired, reported(VenueStatus::Expired, "3"), "3"),
            S::Filled
        );
    }

    #[test]
    fn final_states_refuse_what_cannot_happen_to_them() {
        for (from, event) in [
            (S::Rejected, OrderEvent::FillsBooked),
            (S::Rejected, reported(VenueStatus::Filled, "3")),
            (S::Filled, reported(VenueStatus::Cancelled, "3")),
            (S::Filled, OrderEvent::Refused),
            (S::Filled, OrderEvent::Vanished),
            (S::Submitted, OrderEvent::Refused),
            (S::Submitted, OrderEvent::OutcomeUnknown),
            (S::Unknown, OrderEvent::OutcomeUnknown),
            (S::Cancelled, OrderEvent::Refused),
            (S::Expired, OrderEvent::Vanished),
        ] {
            assert!(
                apply(from, event, progress("3")).is_err(),
                "{from:?} on {event:?}"
            );
        }
    }
}
