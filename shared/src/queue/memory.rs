//! In-process queue for embedded mode: an unbounded channel. Jobs are lost with
//! the process, which is fine: on start the reaper re-enqueues every queued or
//! orphaned run from the database.

use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

use super::{JobHandler, Queue, QueueError};
use crate::job::RunJob;

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
        loop {
            let job = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                job = rx.recv() => job,
            };
            match job {
                Some(job) => handler.handle(job).await,
                None => return Ok(()),
            }
        }
    }

    async fn ping(&self) -> Result<(), QueueError> {
        Ok(())
    }
}
