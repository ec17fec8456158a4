//! The run-job queue. A job only names a run; the database is the truth, so the
//! queue may lose or duplicate jobs without harm: the worker's compare-and-set
//! claim drops duplicates and the reaper re-enqueues lost runs from the database.

mod memory;
mod redis;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use memory::MemoryQueue;
pub use redis::RedisQueue;

use crate::job::RunJob;

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("queue: {0}")]
    Backend(String),
}

/// What consumes jobs (the worker). `handle` returns once the job is taken on (the
/// run claimed and its execution spawned, or the job dropped); it may wait for
/// capacity, which is how a busy worker pushes back on the queue.
#[async_trait::async_trait]
pub trait JobHandler: Send + Sync + 'static {
    async fn handle(&self, job: RunJob);
}

#[async_trait::async_trait]
pub trait Queue: Send + Sync + 'static {
    async fn enqueue(&self, job: RunJob) -> Result<(), QueueError>;
    /// Consume jobs until `shutdown` fires.
    async fn consume(
        &self,
        handler: Arc<dyn JobHandler>,
        shutdown: CancellationToken,
    ) -> Result<(), QueueError>;
    /// Readiness probe.
    async fn ping(&self) -> Result<(), QueueError>;
    /// Jobs waiting to be fetched by a worker, where the queue can count them
    /// (Redis: the pending list); `None` in-process, where `queued` runs in the
    /// database are the measure.
    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        Ok(None)
    }
}

pub type SharedQueue = Arc<dyn Queue>;
