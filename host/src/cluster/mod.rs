//! Several instances on one database: what they tell each other ([`bus`]).

pub mod bus;

pub use bus::{Bus, BusStatus, Message, Received};

/// This instance among the others, as `/health` reports it.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Standing {
    /// `TRADEHOST_INSTANCE_ID` (made up at start when unset).
    pub id: String,
    /// Joined to other instances through Redis (`REDIS_URL`).
    pub clustered: bool,
    /// Users whose trading this instance owns through their leases (several instances only).
    pub bot_leases: usize,
    /// The other instances alive (seen within two lease lives), by id.
    pub peers: Vec<String>,
}

/// Where this instance stands among the others.
pub async fn standing(app: &crate::App) -> sqlx::Result<Standing> {
    let id = app.cluster.instance().to_string();
    let clustered = app.cluster.clustered();
    let peers = if clustered {
        let since = crate::store::now_ms() - 2 * app.config.bot_lease_ttl.as_millis() as i64;
        crate::store::bot_leases::live_instances(&app.db, since)
            .await?
            .into_iter()
            .filter(|peer| *peer != id)
            .collect()
    } else {
        Vec::new()
    };
    Ok(Standing {
        id,
        clustered,
        bot_leases: app.engine.leases_held(),
        peers,
    })
}
