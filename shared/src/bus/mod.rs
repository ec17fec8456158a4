//! The event bus: per-run event logs (replay) and live fan-out, plus the cancel
//! control channel. Redis is delivery only — it may be flushed at any moment; the
//! database stays the truth and a lost log degrades to "read the messages".
//!
//! Delivery contract used by the gateway's attach ([`attach`]): subscribe first,
//! then read the log, then merge live frames by `seq`; a live frame that skips a
//! `seq` (a lost pub/sub message, a reconnect) triggers a re-read of the log.
//!
//! Logs are read a page at a time ([`READ_PAGE`] events): a run's log may hold up
//! to `events.max_len` (100,000) events, and reading one whole on every attach
//! (one `XRANGE` reply, one `Vec`) cost a gateway tens of MB per client at once.

mod attach;
mod memory;
pub(crate) mod redis;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

pub use attach::{AttachError, AttachItem, attach};
pub use memory::MemoryBus;
pub use redis::RedisBus;

use crate::event::Frame;
use crate::ids::RunId;

/// Live frames buffered per run for this process's subscribers. The ring is
/// allocated whole when the first local client attaches, so it is kept small; a
/// subscriber that falls further behind gets `Lagged` and `attach` re-reads the log.
pub(crate) const LIVE_BUFFER: usize = 256;

/// Most log entries one [`Bus::read`] returns; `attach` reads the next page when
/// it has sent this one.
pub const READ_PAGE: usize = 500;

/// A live subscription to one run. Dropping it unsubscribes.
pub struct Subscription {
    pub rx: broadcast::Receiver<Frame>,
    /// Held for its `Drop` (unsubscribe when the last local subscriber leaves).
    pub _guard: Box<dyn Send + Sync>,
}

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    #[error("bus: {0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, BusError>;

#[async_trait::async_trait]
pub trait Bus: Send + Sync + 'static {
    /// Append to the run's log and fan out live. Frames of one run are published
    /// by its one owner, in `seq` order.
    async fn publish(&self, run: &RunId, frame: &Frame) -> Result<()>;
    /// At most `limit` log entries with `seq > after`, in order.
    async fn read(&self, run: &RunId, after: u64, limit: usize) -> Result<Vec<Frame>>;
    /// Highest `seq` in the log (0 when empty or gone).
    async fn last_seq(&self, run: &RunId) -> Result<u64>;
    /// Whether the run has a log at all (false after expiry or a flush).
    async fn has_log(&self, run: &RunId) -> Result<bool>;
    /// The run ended: keep its log for `retention`, then drop it.
    async fn retire(&self, run: &RunId, retention: Duration) -> Result<()>;
    async fn subscribe(&self, run: &RunId) -> Result<Subscription>;
    /// Ask whichever worker owns `run` to stop it.
    async fn request_cancel(&self, run: &RunId) -> Result<()>;
    /// Cancel requests as they arrive (every worker listens).
    fn cancel_requests(&self) -> broadcast::Receiver<RunId>;
    /// Readiness probe.
    async fn ping(&self) -> Result<()>;
}

pub type SharedBus = Arc<dyn Bus>;
