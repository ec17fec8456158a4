//! A long event log replays completely and in order through `attach`, read a page
//! at a time: no single `Bus::read` returns more than `READ_PAGE` frames (before
//! paging, an attach read the whole log at once). Runs on the in-process bus and
//! on Redis (a unique key prefix per test).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use weft_shared::bus::{
    AttachItem, Bus, MemoryBus, READ_PAGE, RedisBus, Result, SharedBus, Subscription, attach,
};
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::RunId;

/// A bus that remembers the largest page it was asked for and served.
struct Counting {
    inner: SharedBus,
    largest_read: AtomicUsize,
}

#[async_trait::async_trait]
impl Bus for Counting {
    async fn publish(&self, run: &RunId, frame: &Frame) -> Result<()> {
        self.inner.publish(run, frame).await
    }
    async fn read(&self, run: &RunId, after: u64, limit: usize) -> Result<Vec<Frame>> {
        let frames = self.inner.read(run, after, limit).await?;
        self.largest_read.fetch_max(frames.len(), Ordering::SeqCst);
        Ok(frames)
    }
    async fn last_seq(&self, run: &RunId) -> Result<u64> {
        self.inner.last_seq(run).await
    }
    async fn has_log(&self, run: &RunId) -> Result<bool> {
        self.inner.has_log(run).await
    }
    async fn retire(&self, run: &RunId, retention: Duration) -> Result<()> {
        self.inner.retire(run, retention).await
    }
    async fn subscribe(&self, run: &RunId) -> Result<Subscription> {
        self.inner.subscribe(run).await
    }
    async fn request_cancel(&self, run: &RunId) -> Result<()> {
        self.inner.request_cancel(run).await
    }
    fn cancel_requests(&self) -> tokio::sync::broadcast::Receiver<RunId> {
        self.inner.cancel_requests()
    }
    async fn notify(&self, notice: &weft_shared::bus::Notice) -> Result<()> {
        self.inner.notify(notice).await
    }
    fn notices(&self) -> tokio::sync::broadcast::Receiver<weft_shared::bus::Notice> {
        self.inner.notices()
    }
    async fn ping(&self) -> Result<()> {
        self.inner.ping().await
    }
}

const EVENTS: u64 = 5 * READ_PAGE as u64 + 123;

async fn long_log_replays_in_pages(inner: SharedBus) {
    let run = RunId::new();
    let ev = |seq: u64, kind: EventKind| {
        Frame::encode(&RunEvent {
            run_id: run.clone(),
            seq,
            ts: 0,
            kind,
        })
    };
    for seq in 1..EVENTS {
        let frame = ev(
            seq,
            EventKind::Text {
                step: 1,
                delta: format!("w{seq} "),
            },
        );
        inner.publish(&run, &frame).await.unwrap();
    }
    let end = ev(EVENTS, EventKind::Cancelled { by: "test".into() });
    inner.publish(&run, &end).await.unwrap();

    let bus = Arc::new(Counting {
        inner,
        largest_read: AtomicUsize::new(0),
    });
    let stream = attach(bus.clone(), run.clone(), 0, Duration::from_secs(30))
        .await
        .unwrap();
    let seqs: Vec<u64> = tokio::time::timeout(
        Duration::from_secs(60),
        stream
            .filter_map(|item| async move {
                match item {
                    AttachItem::Frame(f) => Some(f.seq),
                    AttachItem::Idle => None,
                }
            })
            .collect(),
    )
    .await
    .expect("the replay ends with the terminal event");
    assert_eq!(
        seqs,
        (1..=EVENTS).collect::<Vec<_>>(),
        "complete and in order"
    );
    let largest = bus.largest_read.load(Ordering::SeqCst);
    assert!(
        largest <= READ_PAGE,
        "one read returned {largest} frames (page {READ_PAGE})"
    );
    bus.retire(&run, Duration::from_secs(1)).await.unwrap();
}

#[tokio::test]
async fn memory_bus_pages_a_long_log() {
    long_log_replays_in_pages(Arc::new(MemoryBus::new(1_000_000))).await;
}

#[tokio::test]
async fn redis_bus_pages_a_long_log() {
    let prefix = format!("weft-test-{}:", uuid::Uuid::new_v4());
    let bus = RedisBus::connect("redis://127.0.0.1:6379", &prefix, 1_000_000)
        .await
        .unwrap();
    long_log_replays_in_pages(Arc::new(bus)).await;
}
