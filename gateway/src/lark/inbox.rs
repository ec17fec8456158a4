//! Nothing lost after the ack (issue 21): a message event is stored in the
//! database inbox (`lark_inbound`, [`weft_store::InboxEntry`]) before Lark
//! gets its ack, and stays there, pending, until it has been handled.
//!
//! Why store before the ack, rather than ack first and retry after: an ack tells
//! Lark to forget the event, so whatever happens after it — a database error, a
//! SIGKILL, a restart of every process — must be recoverable from the database
//! alone. Storing first costs one insert on the ack path, about 1 ms on an idle
//! Postgres (the issue allows a p50 of 5 ms); in exchange an acked message is
//! never only in memory, and the sweeper ([`super::sweep`]) finds it after any crash.
//!
//! **One writer, natural batches, its own connection.** The dispatch loop never
//! waits: each message's task hands its row to this gateway's one writer task
//! and waits for the answer. The writer takes whatever has queued up meanwhile
//! (up to [`MAX_KEEP_BATCH`] = 200 rows) into one multi-row insert: an idle bot
//! writes one row per statement, with no added delay; a burst of 200 messages in
//! a second costs a handful of statements and commits (each a WAL flush on
//! Postgres) instead of 200. It writes on a connection it keeps
//! ([`weft_store::InboxWriter`]): on the shared pool, the acks of a burst
//! queued behind the handlers of its first messages (20 connections, 100
//! handlers each running a few statements). A 200-message burst, 2 gateways and
//! 2 workers on one busy 2-core VM, alternating runs: ack p50 15–30 ms, p99
//! 91–93 ms on the shared pool; 5–10 ms and 31–43 ms on its own connection
//! (0.9 ms and 8.3 ms on the same VM when quiet; BENCHMARKS.md).
//!
//! **When the database is down** the writer retries the batch with backoff (50 ms
//! doubling to 2 s) for as long as it takes, and the messages stay unacked in
//! memory meanwhile. Lark redelivers what is not acked within 3 s (to this or
//! another gateway); a redelivery waits the same way, and whichever lands second
//! finds the row and is acked as a duplicate. A late ack is harmless: Lark
//! ignores it and redelivers, and the redelivery is a duplicate. A gateway killed
//! while holding unstored events never acked them, so Lark delivers them again.
//!
//! **Exactly once.** The row is the dedupe record: a second delivery, here or on
//! another replica, answers `Duplicate` and is only acked. A retried insert whose
//! first try did commit (its answer lost with a killed connection) carries the
//! same delivery id and gets `New` again. The handler then goes through the
//! ordinary send path, whose idempotency key `lark:<message_id>` makes a second
//! submit of the same message (after a retry, or a takeover by the sweeper) a
//! no-op; notices are sent once per message by their Lark `uuid`.
//!
//! **Leases.** A stored row is leased to this gateway for `lark.inbox_lease_ms`
//! (20 s) and renewed, all rows at once, every quarter of it; the handler retries
//! database errors with backoff for up to [`HANDLE_DEADLINE`] (3 min, well over
//! a minute's outage), then releases the lease for the sweeper. Marking a row
//! handled, or releasing it, is retried until it lands: a row left pending with
//! a live lease and nobody working on it would wait for a restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use weft_shared::time::now_ms;
use weft_store::{InboundClaim, InboxEntry, InboxState, MAX_KEEP_BATCH, Store};

/// How long a handler keeps retrying database errors before it leaves its
/// message to the sweeper.
pub(super) const HANDLE_DEADLINE: Duration = Duration::from_secs(180);

/// The writer's backoff after a failed insert: first and longest.
const STORE_RETRY: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));
/// Marking done and releasing: first and longest backoff.
const FINISH_RETRY: (Duration, Duration) = (Duration::from_millis(250), Duration::from_secs(8));

/// This gateway's side of the inbox; shared by its message tasks.
pub(super) struct Inbox {
    store: Store,
    /// This process's lease owner id (a new one per start).
    owner: String,
    lease: Duration,
    writer: mpsc::UnboundedSender<Keep>,
    last_arrival: AtomicI64,
    shutdown: CancellationToken,
}

/// A row for the writer and where its answer goes.
struct Keep {
    entry: InboxEntry,
    answer: oneshot::Sender<InboundClaim>,
}

impl Inbox {
    /// Starts the writer; it stops with `shutdown`.
    pub(super) fn start(store: Store, lease: Duration, shutdown: CancellationToken) -> Arc<Inbox> {
        let (writer, queue) = mpsc::unbounded_channel();
        let inbox = Arc::new(Inbox {
            store,
            owner: format!("gw-{}", uuid::Uuid::now_v7().simple()),
            lease,
            writer,
            last_arrival: AtomicI64::new(0),
            shutdown,
        });
        tokio::spawn(write(inbox.clone(), queue));
        inbox
    }

    pub(super) fn owner(&self) -> &str {
        &self.owner
    }

    pub(super) fn store(&self) -> &Store {
        &self.store
    }

    pub(super) fn lease(&self) -> Duration {
        self.lease
    }

    pub(super) fn shutdown(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// A lease taken now ends at this time (unix ms).
    pub(super) fn lease_until(&self) -> i64 {
        now_ms() + self.lease.as_millis() as i64
    }

    /// The arrival stamp of a message read now: µs, strictly increasing in this
    /// process (the dispatch loop reads one event at a time, so this is its order).
    pub(super) fn arrival(&self) -> i64 {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let previous = self
            .last_arrival
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                Some(now.max(last + 1))
            })
            .unwrap_or_default();
        now.max(previous + 1)
    }

    /// Stores `entry` (retrying through any outage); `None` when the gateway
    /// shuts down first, in which case the event must not be acked.
    pub(super) async fn keep(&self, entry: InboxEntry) -> Option<InboundClaim> {
        let (answer, answered) = oneshot::channel();
        self.writer.send(Keep { entry, answer }).ok()?;
        answered.await.ok()
    }

    /// Marks a held message done, retrying until it lands (or shutdown: then
    /// the lease runs out and a sweep handles it again, as a no-op send).
    pub(super) async fn finish(&self, message_id: &str, state: InboxState) {
        self.until_it_lands("marking a lark message done", || {
            self.store.finish_lark_inbound(message_id, state)
        })
        .await;
    }

    /// Gives a held message back to the sweepers, retrying until it lands.
    pub(super) async fn release(&self, message_id: &str) {
        self.until_it_lands("releasing a lark message", || {
            self.store.release_lark_inbound(message_id, &self.owner)
        })
        .await;
    }

    async fn until_it_lands<F, Fut>(&self, what: &str, mut op: F)
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = weft_store::Result<()>>,
    {
        let mut delay = FINISH_RETRY.0;
        loop {
            match op().await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(error = %e, what, delay_ms = delay.as_millis() as u64, "database call failed; retrying");
                    if !self.pause(&mut delay, FINISH_RETRY.1).await {
                        return;
                    }
                }
            }
        }
    }

    /// Sleeps `delay` and doubles it up to `max`; `false` on shutdown.
    pub(super) async fn pause(&self, delay: &mut Duration, max: Duration) -> bool {
        let slept = tokio::select! {
            _ = self.shutdown.cancelled() => false,
            _ = tokio::time::sleep(*delay) => true,
        };
        *delay = (*delay * 2).min(max);
        slept
    }
}

/// The writer: one insert for everything queued, retried until it lands.
async fn write(inbox: Arc<Inbox>, mut queue: mpsc::UnboundedReceiver<Keep>) {
    let mut writer = inbox.store.inbox_writer();
    loop {
        let first = tokio::select! {
            _ = inbox.shutdown.cancelled() => return,
            next = queue.recv() => match next {
                Some(keep) => keep,
                None => return,
            },
        };
        let mut batch = vec![first];
        while batch.len() < MAX_KEEP_BATCH {
            match queue.try_recv() {
                Ok(keep) => batch.push(keep),
                Err(_) => break,
            }
        }
        let entries: Vec<InboxEntry> = batch.iter().map(|k| k.entry.clone()).collect();
        let mut delay = STORE_RETRY.0;
        let claims = loop {
            let kept = writer
                .keep(&entries, &inbox.owner, inbox.lease_until())
                .await;
            match kept {
                Ok(claims) => break claims,
                Err(e) => {
                    metrics::counter!("weft_lark_inbox_retries_total", "step" => "store")
                        .increment(1);
                    tracing::warn!(error = %e, messages = entries.len(), delay_ms = delay.as_millis() as u64, "storing lark messages failed; retrying before the ack");
                    // Shut down: nothing acked, Lark delivers them again.
                    if !inbox.pause(&mut delay, STORE_RETRY.1).await {
                        return;
                    }
                }
            }
        };
        for (keep, claim) in batch.into_iter().zip(claims) {
            let _ = keep.answer.send(claim);
        }
    }
}
