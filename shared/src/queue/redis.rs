//! Redis queue for distributed mode, on apalis 1.0 (`apalis-redis`), with each of
//! its known pitfalls handled deliberately:
//!
//! * **Retry count hard-coded to 25 in Redis**: our handler never returns `Err`.
//!   Run-level retries are ours (the `attempt` column, at most `max_attempts`);
//!   apalis only delivers.
//! * **Timeout-layer trap** (a timed-out task stays `Running` forever): no
//!   `.timeout()` layer. The handler returns as soon as the run is claimed and its
//!   execution spawned, so it is short by construction; run deadlines live in the
//!   worker.
//! * **500 ms response timeout** of `apalis_redis::connect`: we build the
//!   `ConnectionManager` ourselves with a 5 s response timeout, and restart the
//!   apalis worker with backoff if its stream ever fails.
//! * **Results never vacuumed**: `persist_results(false)`, plus a periodic
//!   `vacuum()` of finished task data.
//! * **Worker-name reuse** (a restart within the orphan window fails): every
//!   process, and every restart of the consumer, registers a fresh unique name.
//!
//! Keys live under `<prefix>queue:*` (apalis's own layout, keyed by queue name).
//! A job lost between fetch and claim is recovered by the reaper from the database
//! (and by apalis's orphan recovery); duplicates are dropped by the claim.

use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::*;
use apalis_core::backend::Vacuum;
use apalis_redis::{Config, RedisStorage};
use tokio_util::sync::CancellationToken;

use super::{JobHandler, Queue, QueueError};
use crate::bus::redis::connection_manager;
use crate::job::RunJob;

/// How many fetched-but-not-yet-taken jobs one consumer holds at most.
const IN_FLIGHT: usize = 32;
const VACUUM_EVERY: Duration = Duration::from_secs(60);

pub struct RedisQueue {
    storage: RedisStorage<RunJob>,
}

impl RedisQueue {
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisQueue, QueueError> {
        let client = redis::Client::open(url).map_err(|e| QueueError::Backend(e.to_string()))?;
        let conn = connection_manager(&client)
            .await
            .map_err(|e| QueueError::Backend(e.to_string()))?;
        let config = Config::default()
            .queue(format!("{prefix}queue"))
            .persist_results(false)
            .heartbeat_interval(Duration::from_secs(5))
            .missed_heartbeats(3);
        Ok(RedisQueue { storage: RedisStorage::new(conn).with_config(config) })
    }
}

/// The handler as apalis data (a named type keeps the trait object's lifetime
/// `'static`, which apalis's higher-ranked handler bounds need).
#[derive(Clone)]
struct HandlerData(Arc<dyn JobHandler + 'static>);

async fn handle_job(job: RunJob, handler: Data<HandlerData>) -> Result<(), BoxDynError> {
    let HandlerData(inner) = &*handler;
    inner.handle(job).await;
    Ok(())
}

#[async_trait::async_trait]
impl Queue for RedisQueue {
    async fn enqueue(&self, job: RunJob) -> Result<(), QueueError> {
        let mut storage = self.storage.clone();
        storage.push(job).await.map_err(|e| QueueError::Backend(e.to_string()))
    }

    async fn consume(&self, handler: Arc<dyn JobHandler>, shutdown: CancellationToken) -> Result<(), QueueError> {
        let vacuum = tokio::spawn(vacuum_loop(self.storage.clone(), shutdown.clone()));
        let mut backoff = Duration::from_millis(200);
        while !shutdown.is_cancelled() {
            let name = format!("weft-worker-{}", uuid::Uuid::now_v7());
            let worker = WorkerBuilder::new(name)
                .backend(self.storage.clone())
                .concurrency(IN_FLIGHT)
                .data(HandlerData(handler.clone()))
                .build(handle_job);
            let stop = shutdown.clone();
            let result = worker
                .run_until(async move {
                    stop.cancelled().await;
                    Ok::<(), std::io::Error>(())
                })
                .await;
            match result {
                Ok(()) if shutdown.is_cancelled() => break,
                Ok(()) => tracing::warn!("queue consumer stopped; restarting"),
                Err(e) => tracing::warn!(error = %e, "queue consumer failed; restarting"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
        vacuum.abort();
        Ok(())
    }

    async fn ping(&self) -> Result<(), QueueError> {
        let mut storage = self.storage.clone();
        let pong: String = redis::cmd("PING")
            .query_async(storage.get_connection())
            .await
            .map_err(|e| QueueError::Backend(e.to_string()))?;
        (pong == "PONG").then_some(()).ok_or_else(|| QueueError::Backend(pong))
    }
}

async fn vacuum_loop(mut storage: RedisStorage<RunJob>, shutdown: CancellationToken) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(VACUUM_EVERY) => {}
        }
        if let Err(e) = storage.vacuum().await {
            tracing::warn!(error = %e, "vacuuming finished queue tasks failed");
        }
    }
}
