//! User administration: the list with search and filters, one user's full picture, and changes
//! of tier, status and notes. Suspending or disabling a user ends their sessions at once and stops
//! their bot.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::App;
use crate::api::query::{Page, Pagination};
use crate::auth::ClientMeta;
use crate::auth::sessions::Principal;
use crate::billing::plans::{Entitlement, Tier};
use crate::engine::accounting::float;
use crate::error::{ApiError, ApiResult, ErrorCode};
use crate::store::audit::{self, Actor};
use crate::store::users::{self, UserFilter};
use crate::store::{Filter, accounts, bots, brokers, iso8601, now_ms, positions, sessions, totals};

pub const USERS_DEFAULT_PER_PAGE: i64 = 50;
pub const USERS_MAX_PER_PAGE: i64 = 100;
const STATUSES: [&str; 3] = ["active", "suspended", "disabled"];

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserListItem {
    pub user_id: String,
    pub email: String,
    pub full_name: String,
    pub subscription_tier: String,
    pub status: String,
    pub total_trades: i64,
    pub total_pnl: f64,
    pub joined_at: String,
    pub last_active: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserList {
    pub users: Vec<UserListItem>,
    pub pagination: Pagination,
}

fn net(realized: Option<Decimal>, fees: Option<Decimal>) -> f64 {
    float(realized.unwrap_or_default() - fees.unwrap_or_default())
}

pub fn check_filter(filter: &UserFilter) -> ApiResult<()> {
    if let Some(tier) = &filter.tier
        && Tier::parse(tier).is_none()
    {
        return Err(ApiError::invalid_field(
            "tier",
            "one of free, basic, pro, enterprise",
        ));
    }
    if let Some(status) = &filter.status
        && !STATUSES.contains(&status.as_str())
    {
        return Err(ApiError::invalid_field(
            "status",
            "one of active, suspended, disabled",
        ));
    }
    Ok(())
}

pub async fn list(app: &App, filter: &UserFilter, page: Page) -> ApiResult<UserList> {
    check_filter(filter)?;
    let (rows, total) =
        users::list_for_admin(&app.db, filter, page.per_page, page.offset()).await?;
    Ok(UserList {
        users: rows
            .into_iter()
            .map(|row| UserListItem {
                total_pnl: net(row.realized_pnl, row.fees_paid),
                user_id: row.id,
                email: row.email,
                full_name: row.full_name,
                subscription_tier: row.subscription_tier,
                status: row.status,
                total_trades: row.total_trades,
                joined_at: iso8601(row.created_at),
                last_active: row.last_active_at.map(iso8601),
            })
            .collect(),
        pagination: page.info(total),
    })
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserDetail {
    pub user: UserRecord,
}

/// Everything an admin sees of one user.
#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserRecord {
    pub user_id: String,
    pub email: String,
    pub full_name: String,
    pub role: String,
    pub status: String,
    pub notes: Option<String>,
    pub subscription: UserSubscription,
    pub trading: UserTrading,
    pub brokers: Vec<UserBroker>,
    #[schema(format = DateTime)]
    pub joined_at: String,
    #[schema(format = DateTime)]
    pub last_active: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserSubscription {
    pub tier: String,
    pub effective_tier: &'static str,
    /// `trialing` or `active`.
    pub status: &'static str,
    #[schema(format = DateTime)]
    pub started: String,
    #[schema(format = DateTime)]
    pub renews: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserTrading {
    pub total_trades: usize,
    pub total_pnl: f64,
    pub win_rate: f64,
    pub active_positions: i64,
    pub bot_status: String,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
pub struct UserBroker {
    pub name: String,
    pub status: String,
}

pub async fn detail(app: &App, user_id: &str) -> ApiResult<UserDetail> {
    let db = &app.db.pool;
    let user = users::by_id(db, user_id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "User not found"))?;
    let entitlement = Entitlement::of(&user, now_ms());
    let totals = totals::get(db, user_id).await?;
    let account = accounts::account(db, user_id).await?;
    let connections = brokers::list(db, user_id).await?;
    Ok(UserDetail {
        user: UserRecord {
            notes: users::notes(db, user_id).await?,
            subscription: UserSubscription {
                tier: user.subscription_tier.clone(),
                effective_tier: entitlement.effective.as_str(),
                status: if entitlement.trial_active {
                    "trialing"
                } else {
                    "active"
                },
                started: iso8601(user.created_at),
                renews: user
                    .trial_ends_at
                    .filter(|_| entitlement.trial_active)
                    .map(iso8601),
            },
            trading: UserTrading {
                total_trades: totals.sums.trades as usize,
                total_pnl: account
                    .as_ref()
                    .map_or(0.0, |a| float(a.realized_pnl - a.fees_paid)),
                win_rate: totals.sums.win_rate(),
                active_positions: positions::count_open(db, &Filter::user(user_id)).await?,
                bot_status: bots::bot(db, user_id)
                    .await?
                    .map_or("stopped".to_string(), |bot| bot.status),
            },
            brokers: connections
                .iter()
                .map(|c| UserBroker {
                    name: c.name.clone(),
                    status: c.status.clone(),
                })
                .collect(),
            joined_at: iso8601(user.created_at),
            last_active: user.last_active_at.map(iso8601),
            user_id: user.id,
            email: user.email,
            full_name: user.full_name,
            role: user.role,
            status: user.status,
        },
    })
}

#[derive(utoipa::ToSchema, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserUpdate {
    pub subscription_tier: Option<String>,
    pub status: Option<String>,
    pub notes: Option<String>,
}

#[derive(utoipa::ToSchema, Debug, Serialize)]
#[schema(as = UserUpdated)]
pub struct Updated {
    pub message: String,
    pub sessions_revoked: usize,
    pub bot_stopped: bool,
}

pub async fn update(
    app: &App,
    admin: &Principal,
    meta: &ClientMeta,
    user_id: &str,
    change: UserUpdate,
) -> ApiResult<Updated> {
    if change.subscription_tier.is_none() && change.status.is_none() && change.notes.is_none() {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "Give subscription_tier, status or notes",
        ));
    }
    if let Some(tier) = &change.subscription_tier
        && Tier::parse(tier).is_none()
    {
        return Err(ApiError::invalid_field(
            "subscription_tier",
            "one of free, basic, pro, enterprise",
        ));
    }
    if let Some(status) = &change.status
        && !STATUSES.contains(&status.as_str())
    {
        return Err(ApiError::invalid_field(
            "status",
            "one of active, suspended, disabled",
        ));
    }
    if change.notes.as_ref().is_some_and(|n| n.len() > 10_000) {
        return Err(ApiError::invalid_field(
            "notes",
            "at most 10,000 characters",
        ));
    }
    let user = users::by_id(&app.db.pool, user_id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "User not found"))?;
    let locking = change.status.as_deref().is_some_and(|s| s != "active");
    if locking && user_id == admin.user_id {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "Admins cannot suspend or disable themselves",
        ));
    }
    let now = now_ms();
    let mut tx = app.db.begin().await?;
    users::update_by_admin(
        &mut *tx,
        user_id,
        change.subscription_tier.as_deref(),
        change.status.as_deref(),
        change.notes.as_deref(),
        now,
    )
    .await?;
    let revoked = if locking {
        sessions::revoke_all(
            &mut *tx,
            user_id,
            &format!("account_{}", change.status.as_deref().unwrap_or("locked")),
        )
        .await?
    } else {
        Vec::new()
    };
    audit::record(
        &mut *tx,
        "admin.user_updated",
        &Actor {
            user_id: Some(&admin.user_id),
            ip_address: meta.ip.as_deref(),
            user_agent: meta.user_agent.as_deref(),
        },
        json!({
            "target_user_id": user_id,
            "subscription_tier": change.subscription_tier,
            "status": change.status,
            "notes_changed": change.notes.is_some(),
            "sessions_revoked": revoked.len(),
        }),
    )
    .await?;
    tx.commit().await?;
    app.user_changed(user_id);
    let bot_stopped = if locking {
        crate::engine::stop_for_account(app, user_id, "The account was suspended or disabled")
            .await?
    } else {
        crate::engine::entitlement_changed(app, user_id).await?;
        false
    };
    Ok(Updated {
        message: format!("User {} updated", user.email),
        sessions_revoked: revoked.len(),
        bot_stopped,
    })
}
