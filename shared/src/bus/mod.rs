//! The event bus: per-run event logs (replay) and live fan-out, plus two
//! channels every process listens to: cancel requests and [`Notice`]s. Redis is delivery only — it may be flushed at any moment; the
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

/// Notices buffered per process; a watcher further behind gets `Lagged` and
/// reads the state again (as after [`Notice::is_resync`]).
pub(crate) const NOTICE_BUFFER: usize = 1024;

/// A change outside any run that someone may be watching — a knowledge base
/// document's ingestion moving on (topic `knowledge:<base id>`), later a user's
/// inbox — fanned out to every process, where the watchers of its topic pick it
/// up. Notices have no log: a watcher subscribes ([`Bus::notices`]), *then* reads
/// the state, then applies what arrives, so nothing slips between; a notice lost
/// to a pub/sub reconnect reaches every local watcher as a resync (empty topic),
/// which reads the state again. A notice sent just before the watcher subscribed
/// may still reach it (on Redis it was on its way), so what a notice carries
/// must say how new it is (a document's `updated_at`), not only what it is.
/// Publishing never fails the change it tells of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub topic: Arc<str>,
    /// The event's type (an SSE event name).
    pub kind: Arc<str>,
    pub json: Arc<str>,
}

impl Notice {
    /// "Notices may have been missed: read the state again", for every watcher.
    pub fn resync() -> Notice {
        Notice {
            topic: Arc::from(""),
            kind: Arc::from("resync"),
            json: Arc::from("{}"),
        }
    }

    pub fn is_resync(&self) -> bool {
        self.topic.is_empty()
    }

    /// One line per notice on Redis: `topic`, `kind`, then the JSON.
    pub(crate) fn encode(&self) -> String {
        format!("{}\n{}\n{}", self.topic, self.kind, self.json)
    }

    pub(crate) fn decode(line: &str) -> Option<Notice> {
        let mut parts = line.splitn(3, '\n');
        let (topic, kind, json) = (parts.next()?, parts.next()?, parts.next()?);
        (!topic.is_empty()).then(|| Notice {
            topic: Arc::from(topic),
            kind: Arc::from(kind),
            json: Arc::from(json),
        })
    }
}

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
    /// Tell every process's watchers of `notice.topic` (see [`Notice`]).
    async fn notify(&self, notice: &Notice) -> Result<()>;
    /// Notices as they arrive, from this call on (every process listens).
    fn notices(&self) -> broadcast::Receiver<Notice>;
    /// Readiness probe.
    async fn ping(&self) -> Result<()>;
}

pub type SharedBus = Arc<dyn Bus>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_survives_its_line_and_the_resync_is_never_sent() {
        let n = Notice {
            topic: Arc::from("knowledge:kb_1"),
            kind: Arc::from("document"),
            json: Arc::from("{\"a\":\"line\\nbreak\\n\"}"),
        };
        assert_eq!(Notice::decode(&n.encode()), Some(n));
        assert_eq!(Notice::decode(&Notice::resync().encode()), None);
        assert_eq!(Notice::decode("knowledge:kb_1"), None);
    }
}
