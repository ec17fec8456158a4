//! Why a send was refused, in the domain's terms. The messages are the ones a
//! person reads (the API's `message`, the Lark bot's card); the gateway alone
//! decides which HTTP status each is.

use weft_shared::ids::RunId;
use weft_shared::memory_room::human_size;
use weft_store::{StorageUse, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The message itself is wrong (empty).
    #[error("{0}")]
    Invalid(String),
    /// The message is longer than `limits.message_chars`.
    #[error("text is longer than {limit} characters")]
    TooLong { limit: u64 },
    /// `multitask: reject` and the session has an active run.
    #[error(
        "the session has an active run ({active_run_id}); cancel it or send with multitask \"enqueue\" or \"interrupt\""
    )]
    RunActive { active_run_id: RunId },
    /// The user has `limits.active_runs_per_user` runs going.
    #[error("you already have {limit} active runs; wait for one to finish")]
    TooManyActive { limit: u64 },
    /// `limits.runs_per_minute_per_user` is spent for now.
    #[error("at most {per_minute} runs per minute")]
    RateLimited {
        per_minute: u64,
        retry_after_secs: u64,
    },
    /// `limits.queued_messages_per_session` messages already wait.
    #[error(
        "{limit} messages already wait behind the active run ({active_run_id}); wait for it to finish or send with multitask \"interrupt\""
    )]
    QueueFull { active_run_id: RunId, limit: u64 },
    /// The message's files would take the user past `limits.storage_bytes_per_user`.
    #[error(
        "storage_bytes_per_user: your files take {} of your {}, and this message's files need {} more; delete sessions you no longer need to free space",
        human_size(usage.used_bytes),
        human_size(*limit),
        human_size(usage.adding_bytes)
    )]
    OverStorage { usage: StorageUse, limit: u64 },
    /// Not found, a conflict, or the database failing: the store's own words.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Refusal {
    /// When trying again may succeed, in how many seconds.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Refusal::RateLimited {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            // A run ends, or a waiting message joins one, within seconds.
            Refusal::TooManyActive { .. } | Refusal::QueueFull { .. } => Some(5),
            _ => None,
        }
    }

    /// The database failed (not a refusal of this message): a caller that
    /// must not lose it (the Lark bot, whose event is acked) tries again.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Refusal::Store(e) if !matches!(e, StoreError::NotFound | StoreError::Conflict(_) | StoreError::Invalid(_))
        )
    }
}
