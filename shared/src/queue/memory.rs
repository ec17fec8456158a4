//! In-process queue for embedded mode: an unbounded channel. Jobs are lost with
//! the process, which is fine: on start the reaper re-enqueues every queued or
//! orphaned run from the database.
//!
//! Up to [`IN_FLIGHT`] jobs are handed to the handler at once (its claim is a
//! database round trip; one at a time capped embedded throughput at one claim's
//! latency).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{JobHandler, Queue, QueueError};
use crate::job::RunJob;

/// Jobs being handed over (claimed) concurrently.
const IN_FLIGHT: usize = 32;
/// How long shutdown waits for hand-overs in progress before dropping them (a
/// dropped claim rolls back, or leaves a run the reaper recovers).
const DRAIN: Duration = Duration::from_secs(2);

pub struct MemoryQueue {
    tx: mpsc::UnboundedSender<RunJob>,
    rx: Mutex<mpsc::UnboundedReceiver<RunJob>>,
}

impl Default for MemoryQueue {
    fn default() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        MemoryQueue {
            tx,
            rx: Mutex::new(rx),
        }
    }
}

#[async_trait::async_trait]
impl Queue for MemoryQueue {
    async fn enqueue(&self, job: RunJob) -> Result<(), QueueError> {
        self.tx
            .send(job)
            .map_err(|_| QueueError::Backend("in-process queue closed".into()))
    }

    async fn consume(
        &self,
        handler: Arc<dyn JobHandler>,
        shutdown: CancellationToken,
    ) -> Result<(), QueueError> {
        let mut rx = self.rx.lock().await;
        let mut inflight = JoinSet::new();
        loop {
            while inflight.try_join_next().is_some() {}
            if inflight.len() >= IN_FLIGHT {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = inflight.join_next() => continue,
                }
            }
            let job = tokio::select! {
                _ = shutdown.cancelled() => break,
                job = rx.recv() => job,
            };
            let Some(job) = job else { break };
            let handler = handler.clone();
            inflight.spawn(async move { handler.handle(job).await });
        }
        let drained = tokio::time::timeout(DRAIN, async {
            while inflight.join_next().await.is_some() {}
        });
        if drained.await.is_err() {
            inflight.abort_all();
        }
        Ok(())
    }

    async fn ping(&self) -> Result<(), QueueError> {
        Ok(())
    }
}
