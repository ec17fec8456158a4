//! Purging rows nobody can use any more: expired login tokens (they no longer
//! authenticate, but would otherwise stay in the table for ever) and idempotency
//! keys past their retention (a retry that late is a new message). Run
//! periodically by every worker's reaper; idempotent, so any number may run.

use super::{Result, Store};

/// What one purge removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    pub login_tokens: u64,
    pub idempotency_keys: u64,
}

impl Store {
    /// Delete tokens that expired at or before `now` and idempotency keys created
    /// before `keys_before` (both unix ms).
    pub async fn purge_expired(&self, now: i64, keys_before: i64) -> Result<Purged> {
        let mut tx = self.begin().await?;
        let tokens =
            sqlx::query("delete from tokens where expires_at is not null and expires_at <= $1")
                .bind(now)
                .execute(&mut *tx)
                .await?;
        let keys = sqlx::query("delete from idempotency_keys where created_at < $1")
            .bind(keys_before)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Purged {
            login_tokens: tokens.rows_affected(),
            idempotency_keys: keys.rows_affected(),
        })
    }
}
