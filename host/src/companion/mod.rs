//! The companion route sets (docs/companion.md): the unversioned backend (A), the mobile gateway
//! (B), the graceful restart (C) and the ledger (D) as adapters over the platform's own domain
//! modules and books; the dashboard and KPI sets (E, F) are [`crate::performance`].

pub mod backend;
pub mod gateway;
pub mod ledger;
pub mod restart;
pub mod safety;

/// Rounds a display figure to cents (percentages to hundredths).
pub fn round2(x: f64) -> f64 {
    if x.is_finite() {
        // `+ 0.0` turns a rounded -0.0 into 0.0.
        (x * 100.0).round() / 100.0 + 0.0
    } else {
        0.0
    }
}
