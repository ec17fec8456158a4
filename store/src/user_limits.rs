//! The per-user run limits (`[limits] active_runs_per_user`,
//! `runs_per_minute_per_user`), checked by every path that creates a run: a send
//! (whatever its `multitask`), and the follow-up run that a run's end, a cancel,
//! Lark's `/flush` or the reaper makes of the messages waiting in a session.
//!
//! The check counts the user's runs inside the transaction that would insert the
//! new one, after the transaction's own writes (an interrupted run it just ended
//! no longer counts as active). To make "count, then insert" atomic per user, the
//! user's row is locked first on Postgres (`for no key update`, see
//! [`lock_user`]), so two transactions of one
//! user (parallel sends to different sessions, a send beside a run's end) take
//! turns; SQLite's `begin immediate` already serialises every writer. The user's
//! row is always the *last* lock a transaction takes (after its session and run
//! rows), so the order is the same everywhere and cannot deadlock. A batch of
//! schedule fires (`store::schedules`) takes several users' rows but no other
//! existing row, in user order.
//!
//! A follow-up over the limits is not lost: it is simply not created yet. Its
//! messages stay waiting (`queued = 1`) and the reaper makes them a run once the
//! user is back within the limits (or the user's next send picks them up).

use super::runs::ACTIVE;
use super::storage_quota::lock_user;
use super::{Result, get_i64, get_opt_i64};
use weft_wire::ids::UserId;

/// The limits, as configured; 0 disables either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunLimits {
    /// Runs a user may have queued, running or waiting for approval at once.
    pub active_per_user: u64,
    /// Runs a user may create per rolling minute (cancelled ones included).
    pub per_minute_per_user: u64,
}

/// The per-user run limits every path that creates a run checks, from the
/// config's `[limits]`.
impl From<&weft_config::Limits> for RunLimits {
    fn from(limits: &weft_config::Limits) -> RunLimits {
        RunLimits {
            active_per_user: limits.active_runs_per_user,
            per_minute_per_user: limits.runs_per_minute_per_user,
        }
    }
}

impl RunLimits {
    pub fn unlimited() -> RunLimits {
        RunLimits::default()
    }

    fn enabled(&self) -> bool {
        self.active_per_user > 0 || self.per_minute_per_user > 0
    }
}

/// Whether the user may create one more run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LimitCheck {
    Within,
    TooManyActive,
    RateLimited { retry_after_secs: u64 },
}

/// Lock the user (Postgres) and count their runs against `limits`.
pub(super) async fn check_run_limits(
    tx: &mut crate::TxConn,
    lock_suffix: &str,
    user: &UserId,
    limits: &RunLimits,
    now: i64,
) -> Result<LimitCheck> {
    if !limits.enabled() {
        return Ok(LimitCheck::Within);
    }
    lock_user(tx, lock_suffix, user).await?;
    let since = now - 60_000;
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "select
             (select count(*) from runs u where u.user_id = $1 and u.status in {ACTIVE}) as active,
             (select count(*) from runs u where u.user_id = $1 and u.created_at > $2) as recent,
             (select min(u.created_at) from runs u where u.user_id = $1 and u.created_at > $2) as oldest"
    )))
    .bind(&user.0)
    .bind(since)
    .fetch_one(&mut *tx)
    .await?;
    if limits.active_per_user > 0 && get_i64(&row, "active")? as u64 >= limits.active_per_user {
        return Ok(LimitCheck::TooManyActive);
    }
    if limits.per_minute_per_user > 0
        && get_i64(&row, "recent")? as u64 >= limits.per_minute_per_user
    {
        let oldest = get_opt_i64(&row, "oldest")?.unwrap_or(now);
        let wait_ms = (oldest + 60_000 - now).max(1000);
        return Ok(LimitCheck::RateLimited {
            retry_after_secs: (wait_ms as u64).div_ceil(1000),
        });
    }
    Ok(LimitCheck::Within)
}
