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
//! * **Wake-up on push**: a bare `RedisStorage` only polls (we measured 1–5 s
//!   pick-ups), and a single `push` publishes no "available" notification (only the
//!   batch script does, and apalis's `RedisStorageFactory` that listens for it
//!   breaks on queue names containing `:`). So `enqueue` publishes on our own
//!   channel `<prefix>queue:wake`, and the consumer drives the storage through
//!   `PollWith` + `StreamStrategy` fed by that channel, with a fallback tick for
//!   a missed or coalesced notification: 100 ms when idle, 5 ms for half a second
//!   after a push (a wake-up that lands while a fetch is in flight is used up by
//!   that fetch, which may still come back empty: we measured 1 % of pick-ups at
//!   the 100 ms tick under load).
//! * **`PollWith` drops the strategy's waker**: it polls the strategy stream, ignores
//!   the result, then polls the storage. A stream that answers `Ready` registers no
//!   waker, so the next wake-up woke nobody and the consumer slept until its next
//!   heartbeat (we measured 1–5 s pick-ups under load). [`DrainWake`] drains every
//!   queued wake-up and only answers after the channel said `Pending`, so a waker is
//!   always registered.
//!
//! Keys live under `<prefix>queue:*` (apalis's own layout, keyed by queue name).
//! A job lost between fetch and claim is recovered by the reaper from the database
//! (and by apalis's orphan recovery); duplicates are dropped by the claim.

use std::sync::Arc;
use std::time::Duration;

use apalis::prelude::*;
use apalis_core::backend::Vacuum;
use apalis_core::backend::ext::poll_strategy::{PollWith, StreamStrategy};
use apalis_redis::{Config, RedisStorage};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{JobHandler, Queue, QueueError};
use crate::bus::redis::connection_manager;
use crate::job::RunJob;

/// How many fetched-but-not-yet-taken jobs one consumer holds at most.
const IN_FLIGHT: usize = 32;
const VACUUM_EVERY: Duration = Duration::from_secs(60);

pub struct RedisQueue {
    storage: RedisStorage<RunJob>,
    client: redis::Client,
    /// Pub/sub channel announcing pushes.
    wake_channel: String,
}

/// Fallback poll when no push notification arrives (wake-ups coalesce under load,
/// so a burst larger than one fetch batch relies on it).
const POLL_FALLBACK: Duration = Duration::from_millis(100);
/// The fallback tick while pushes are arriving, and for how long after the last one.
const BUSY_TICK: Duration = Duration::from_millis(5);
const BUSY_WINDOW: Duration = Duration::from_millis(500);

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
        Ok(RedisQueue {
            storage: RedisStorage::new(conn).with_config(config),
            client,
            wake_channel: format!("{prefix}queue:wake"),
        })
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
        storage
            .push(job)
            .await
            .map_err(|e| QueueError::Backend(e.to_string()))?;
        // Best effort: a lost wake-up costs at most the fallback poll.
        let _: redis::RedisResult<i64> = redis::cmd("PUBLISH")
            .arg(&self.wake_channel)
            .arg("1")
            .query_async(storage.get_connection())
            .await;
        Ok(())
    }

    async fn consume(
        &self,
        handler: Arc<dyn JobHandler>,
        shutdown: CancellationToken,
    ) -> Result<(), QueueError> {
        let vacuum = tokio::spawn(vacuum_loop(self.storage.clone(), shutdown.clone()));
        let channel = self.wake_channel.clone();
        let mut backoff = Duration::from_millis(200);
        while !shutdown.is_cancelled() {
            let name = format!("weft-worker-{}", uuid::Uuid::now_v7());
            let (wake_tx, wake_rx) = mpsc::channel(1);
            let waker = tokio::spawn(wake_on_push(self.client.clone(), channel.clone(), wake_tx));
            let backend = PollWith::new(
                self.storage.clone(),
                StreamStrategy::new(DrainWake(wake_rx)),
            );
            let worker = WorkerBuilder::new(name)
                .backend(backend)
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
            waker.abort();
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
        (pong == "PONG")
            .then_some(())
            .ok_or(QueueError::Backend(pong))
    }

    /// The length of apalis's pending list (`<prefix>queue:active`): pushed, not
    /// yet fetched. Jobs a consumer fetched but has not taken on are not in it.
    async fn depth(&self) -> Result<Option<u64>, QueueError> {
        let mut storage = self.storage.clone();
        let key = storage.get_config().active_jobs_list();
        let n: u64 = redis::cmd("LLEN")
            .arg(key)
            .query_async(storage.get_connection())
            .await
            .map_err(|e| QueueError::Backend(e.to_string()))?;
        Ok(Some(n))
    }
}

/// Wake-ups for `PollWith`: yields once per burst of queued wake-ups, and always
/// leaves the channel's waker registered (see the module notes).
struct DrainWake(mpsc::Receiver<()>);

impl futures::Stream for DrainWake {
    type Item = ();

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<()>> {
        use std::task::Poll;
        let mut woken = false;
        loop {
            match self.0.poll_recv(cx) {
                Poll::Ready(Some(())) => woken = true,
                // Closed: the waker task ended (the consumer is being restarted).
                Poll::Ready(None) => return Poll::Ready(woken.then_some(())),
                Poll::Pending => break,
            }
        }
        if woken {
            Poll::Ready(Some(()))
        } else {
            Poll::Pending
        }
    }
}

/// Tick `wake` whenever a push is announced, and at least every `POLL_FALLBACK`.
async fn wake_on_push(client: redis::Client, channel: String, wake: mpsc::Sender<()>) {
    loop {
        let mut pubsub = match client.get_async_pubsub().await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "queue wake-up subscription failed; polling");
                if tick(&wake, POLL_FALLBACK).await.is_err() {
                    return;
                }
                continue;
            }
        };
        if pubsub.subscribe(&channel).await.is_err() {
            continue;
        }
        let mut messages = pubsub.on_message();
        let mut last_push: Option<tokio::time::Instant> = None;
        loop {
            // A push announced while a fetch is in flight is drained with the fetch
            // still pending; if that fetch then comes back empty, the consumer parks
            // with the job waiting. While pushes are arriving, tick fast so such a
            // job waits at most BUSY_TICK; when idle, the slow fallback is enough.
            let busy = last_push.is_some_and(|t| t.elapsed() < BUSY_WINDOW);
            let every = if busy { BUSY_TICK } else { POLL_FALLBACK };
            let got = tokio::time::timeout(every, messages.next()).await;
            match got {
                Ok(None) => break, // connection lost: resubscribe
                Ok(Some(_)) => last_push = Some(tokio::time::Instant::now()),
                Err(_) => {}
            }
            // A full channel already holds a wake-up: nothing to add.
            if let Err(mpsc::error::TrySendError::Closed(_)) = wake.try_send(()) {
                return;
            }
        }
    }
}

async fn tick(wake: &mpsc::Sender<()>, after: Duration) -> Result<(), ()> {
    tokio::time::sleep(after).await;
    match wake.try_send(()) {
        Err(mpsc::error::TrySendError::Closed(_)) => Err(()),
        _ => Ok(()),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    use futures::Stream;

    use super::*;

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The property `PollWith` relies on: after the stream answered `Ready`, the
    /// next wake-up still wakes the task (a plain receiver stream fails this).
    #[test]
    fn drain_wake_keeps_a_waker_registered_after_ready() {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let mut cx = Context::from_waker(&waker);
        let (tx, rx) = mpsc::channel(4);
        let mut stream = DrainWake(rx);
        let mut poll = |cx: &mut Context<'_>| std::pin::Pin::new(&mut stream).poll_next(cx);

        assert_eq!(poll(&mut cx), Poll::Pending);
        tx.try_send(()).unwrap();
        tx.try_send(()).unwrap();
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            1,
            "the first send wakes the task"
        );
        // Both queued wake-ups are one burst.
        assert_eq!(poll(&mut cx), Poll::Ready(Some(())));
        assert_eq!(poll(&mut cx), Poll::Pending);
        // Answered Ready above, then Pending: a new wake-up must reach the task.
        tx.try_send(()).unwrap();
        assert_eq!(counter.0.load(Ordering::SeqCst), 2);
        assert_eq!(poll(&mut cx), Poll::Ready(Some(())));
        // Without the Pending poll in between, the waker is still registered too.
        tx.try_send(()).unwrap();
        assert_eq!(counter.0.load(Ordering::SeqCst), 3);
        drop(tx);
        assert_eq!(poll(&mut cx), Poll::Ready(Some(())));
        assert_eq!(poll(&mut cx), Poll::Ready(None));
    }
}
