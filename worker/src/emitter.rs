//! Publishes one run's events: assigns `seq` (continuing across attempts from the
//! bus log), coalesces text and thinking deltas (default 25 ms, 0 disables), and
//! remembers when it last spoke so the loop can emit `heartbeat` after 30 s of
//! silence. Publishing failures are logged, never fatal: Redis is delivery only,
//! the database keeps the reply.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use weft_shared::bus::SharedBus;
use weft_shared::event::{EventKind, Frame, RunEvent};
use weft_shared::ids::RunId;
use weft_shared::time::now_ms;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Text,
    Thinking,
}

pub struct Emitter {
    bus: SharedBus,
    run: RunId,
    seq: u64,
    /// The last published seq, read by the lease heartbeat (the run's high-water mark).
    shared_seq: Arc<AtomicU64>,
    coalesce: Duration,
    buffer: Option<(DeltaKind, u32, String)>,
    flush_at: Option<Instant>,
    last_emit: Instant,
    started: Instant,
}

pub const HEARTBEAT_AFTER: Duration = Duration::from_secs(30);

/// How far seq jumps when an earlier attempt's log was lost: more events than one
/// attempt can publish between two high-water-mark writes.
const LOST_LOG_JUMP: u64 = 1_000_000;

impl Emitter {
    /// `floor`: the high-water mark the database recorded for earlier attempts;
    /// when the log was lost (Redis flushed, embedded restart) seq still continues.
    /// `retried`: an earlier attempt may have published events. If its log is gone,
    /// clients may hold seqs beyond `floor` (it is only written at heartbeats), so
    /// seq jumps past anything that attempt could have sent; clients and `attach`
    /// accept a jump forward, never a step back.
    pub async fn new(
        bus: SharedBus,
        run: RunId,
        coalesce: Duration,
        floor: u64,
        retried: bool,
    ) -> Emitter {
        // A first attempt publishes the run's first event: nothing was logged
        // before it (a run cancelled while queued is never claimed).
        let logged = if retried {
            bus.last_seq(&run).await
        } else {
            Ok(0)
        };
        let seq = match logged {
            Ok(0) if retried => floor + LOST_LOG_JUMP,
            Ok(seq) => seq.max(floor),
            Err(e) => {
                tracing::warn!(run.id = %run, error = %e, "reading last seq failed; starting after 0");
                floor
            }
        };
        Emitter {
            bus,
            run,
            seq,
            shared_seq: Arc::new(AtomicU64::new(seq)),
            coalesce,
            buffer: None,
            flush_at: None,
            last_emit: Instant::now(),
            started: Instant::now(),
        }
    }

    /// The last published seq, readable from other tasks.
    pub fn seq_handle(&self) -> Arc<AtomicU64> {
        self.shared_seq.clone()
    }

    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// When buffered deltas must go out (the loop selects on this).
    pub fn flush_deadline(&self) -> Option<Instant> {
        self.flush_at
    }

    /// When a `heartbeat` is due if nothing else is said.
    pub fn heartbeat_deadline(&self) -> Instant {
        self.last_emit + HEARTBEAT_AFTER
    }

    pub async fn heartbeat(&mut self) {
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        self.emit(EventKind::Heartbeat { elapsed_ms }).await;
    }

    pub async fn text(&mut self, step: u32, delta: &str) {
        self.delta(DeltaKind::Text, step, delta).await;
    }

    pub async fn thinking(&mut self, step: u32, delta: &str) {
        self.delta(DeltaKind::Thinking, step, delta).await;
    }

    async fn delta(&mut self, kind: DeltaKind, step: u32, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some((k, s, buf)) = &mut self.buffer {
            if *k == kind && *s == step {
                buf.push_str(delta);
                return;
            }
            self.flush().await;
        }
        self.buffer = Some((kind, step, delta.to_string()));
        // Leading edge: after a quiet spell the delta goes out at once (the first
        // token is never held back); deltas that follow within the window are batched.
        if self.coalesce.is_zero() || self.last_emit.elapsed() >= self.coalesce {
            self.flush().await;
        } else {
            self.flush_at = Some(self.last_emit + self.coalesce);
        }
    }

    /// Publish buffered deltas now.
    pub async fn flush(&mut self) {
        self.flush_at = None;
        if let Some((kind, step, delta)) = self.buffer.take() {
            let ev = match kind {
                DeltaKind::Text => EventKind::Text { step, delta },
                DeltaKind::Thinking => EventKind::Thinking { step, delta },
            };
            self.publish(ev).await;
        }
    }

    /// Publish an event (flushing buffered deltas first, to keep order).
    pub async fn emit(&mut self, kind: EventKind) {
        self.flush().await;
        self.publish(kind).await;
    }

    async fn publish(&mut self, kind: EventKind) {
        self.seq += 1;
        self.shared_seq.store(self.seq, Ordering::Relaxed);
        self.last_emit = Instant::now();
        let ev = RunEvent {
            run_id: self.run.clone(),
            seq: self.seq,
            ts: now_ms(),
            kind,
        };
        if let Err(e) = self.bus.publish(&self.run, &Frame::encode(&ev)).await {
            tracing::warn!(run.id = %self.run, seq = self.seq, error = %e, "publishing event failed");
        }
    }

    /// The run ended: keep its log for `retention`.
    pub async fn retire(&self, retention: Duration) {
        if let Err(e) = self.bus.retire(&self.run, retention).await {
            tracing::warn!(run.id = %self.run, error = %e, "retiring event log failed");
        }
    }
}
