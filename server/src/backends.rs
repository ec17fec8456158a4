//! The store, bus, queue and sign-in counts for the configured mode.

use std::sync::Arc;

use anyhow::Context;
use weft_config::{Config, Mode};
use weft_shared::bus::{MemoryBus, RedisBus, SharedBus};
use weft_shared::login_limit::{MemoryLoginAttempts, RedisLoginAttempts, SharedLoginAttempts};
use weft_shared::queue::{MemoryQueue, RedisQueue, SharedQueue};
use weft_store::Store;

/// The handles every role is built from.
pub struct Backends {
    pub store: Store,
    pub bus: SharedBus,
    pub queue: SharedQueue,
    /// Sign-in counts: in this process (embedded) or in Redis (distributed).
    pub login_attempts: SharedLoginAttempts,
    /// Attachment bytes (`attachments.store`).
    pub blobs: weft_shared::blobs::Blobs,
    pub mode: Mode,
}

impl Backends {
    /// Connects (and migrates) what the mode names: SQLite with an in-process bus
    /// and queue, or Postgres with Redis.
    pub async fn connect(cfg: &Config) -> anyhow::Result<Backends> {
        let mode = cfg.mode()?;
        match &mode {
            Mode::Embedded { database_url } => {
                let store = Store::connect(database_url)
                    .await
                    .with_context(|| format!("opening {}", redact(database_url)))?;
                store.migrate().await?;
                Ok(Backends {
                    store,
                    bus: Arc::new(
                        MemoryBus::new(cfg.events.max_len as usize)
                            .with_budget(cfg.events.memory_budget_bytes),
                    ),
                    queue: Arc::new(MemoryQueue::default()),
                    login_attempts: Arc::new(MemoryLoginAttempts::new(&cfg.login)),
                    blobs: weft_shared::blobs::Blobs::open(cfg)?,
                    mode,
                })
            }
            Mode::Distributed {
                database_url,
                redis_url,
            } => {
                let store = Store::connect_with(database_url, cfg.database_max_connections)
                    .await
                    .with_context(|| format!("connecting to {}", redact(database_url)))?;
                store.migrate().await?;
                let bus = RedisBus::connect(redis_url, &cfg.redis_prefix, cfg.events.max_len)
                    .await
                    .with_context(|| format!("connecting to {}", redact(redis_url)))?;
                let queue = RedisQueue::connect(redis_url, &cfg.redis_prefix).await?;
                let login_attempts =
                    RedisLoginAttempts::connect(redis_url, &cfg.redis_prefix, &cfg.login).await?;
                Ok(Backends {
                    store,
                    bus: Arc::new(bus),
                    queue: Arc::new(queue),
                    login_attempts: Arc::new(login_attempts),
                    blobs: weft_shared::blobs::Blobs::open(cfg)?,
                    mode,
                })
            }
        }
    }

    pub fn embedded(&self) -> bool {
        matches!(self.mode, Mode::Embedded { .. })
    }
}

/// The database URL of either mode (for `migrate` and `admin`, which need no bus).
pub fn database_url(cfg: &Config) -> anyhow::Result<String> {
    Ok(match cfg.mode()? {
        Mode::Embedded { database_url } | Mode::Distributed { database_url, .. } => database_url,
    })
}

/// A URL with its password (if any) hidden.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}://***@{}", &url[..s], &url[at + 1..]),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_passwords_only() {
        assert_eq!(
            super::redact("postgres://u:secret@db:5432/weft"),
            "postgres://***@db:5432/weft"
        );
        assert_eq!(super::redact("sqlite:/tmp/weft.db"), "sqlite:/tmp/weft.db");
    }
}
