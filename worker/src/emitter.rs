//! Publishes one run's events: assigns `seq` (continuing across attempts from the
//! bus log), coalesces text and thinking deltas (default 25 ms, 0 disables), and
//! remembers when it last spoke so the loop can emit `heartbeat` after 30 s of
//! silence — while the model streams and while a step's tools run
//! ([`Emitter::beating`]): a run whose tool takes minutes is heard from, and
//! each heartbeat says how long the run has said nothing else (`idle_ms`, which
//! clients turn into "still working… 3 min"). Publishing failures are logged,
//! never fatal: Redis is delivery only, the database keeps the reply.
//!
//! Each attempt may publish at most `events.max_bytes_per_run` bytes of event
//! JSON (default 8 MiB, about a million words). An event that would pass it is not
//! published and the emitter reports [`Emitter::log_full`]; the executor then
//! fails the run with `event_log_full` (terminal events are always published).
//! Before, a user could ask the demo model for 200,000 words and the log kept
//! all of it for a day.

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
    /// The last event published that was not a heartbeat.
    last_said: Instant,
    started: Instant,
    /// Silence before a heartbeat ([`HEARTBEAT_AFTER`]; shorter in tests).
    heartbeat_after: Duration,
    /// Bytes of event JSON this attempt may publish, and has published.
    byte_cap: u64,
    bytes: u64,
    full: bool,
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
            last_said: Instant::now(),
            started: Instant::now(),
            heartbeat_after: HEARTBEAT_AFTER,
            byte_cap: u64::MAX,
            bytes: 0,
            full: false,
        }
    }

    /// Publish at most `cap` bytes of events (terminal events excepted).
    pub fn with_byte_cap(mut self, cap: u64) -> Emitter {
        self.byte_cap = cap;
        self
    }

    /// Say `heartbeat` after `after` of silence instead of [`HEARTBEAT_AFTER`]
    /// (tests, which must not wait 30 s).
    #[cfg(test)]
    pub fn with_heartbeat_after(mut self, after: Duration) -> Emitter {
        self.heartbeat_after = after;
        self
    }

    /// An event was held back because the run's byte cap was reached.
    pub fn log_full(&self) -> bool {
        self.full
    }

    pub fn byte_cap(&self) -> u64 {
        self.byte_cap
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
        self.last_emit + self.heartbeat_after
    }

    pub async fn heartbeat(&mut self) {
        let elapsed_ms = self.started.elapsed().as_millis() as u64;
        let idle_ms = self.last_said.elapsed().as_millis() as u64;
        self.emit(EventKind::Heartbeat {
            elapsed_ms,
            idle_ms,
        })
        .await;
    }

    /// Awaits `work` (a step's tool calls), saying `heartbeat` whenever nothing
    /// else was said for the interval. `work` is only awaited here, never
    /// spawned: what it returns, and dropping it when the caller is cancelled,
    /// are as if it were awaited directly.
    pub async fn beating<F: Future>(&mut self, work: F) -> F::Output {
        let mut work = std::pin::pin!(work);
        loop {
            tokio::select! {
                biased;
                out = &mut work => return out,
                _ = tokio::time::sleep_until(self.heartbeat_deadline()) => self.heartbeat().await,
            }
        }
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
        let ev = RunEvent {
            run_id: self.run.clone(),
            seq: self.seq + 1,
            ts: now_ms(),
            kind,
        };
        let frame = Frame::encode(&ev);
        let len = frame.json.len() as u64;
        if !frame.is_terminal() && self.bytes.saturating_add(len) > self.byte_cap {
            self.full = true;
            return;
        }
        self.bytes += len;
        self.seq += 1;
        self.shared_seq.store(self.seq, Ordering::Relaxed);
        self.last_emit = Instant::now();
        if !matches!(ev.kind, EventKind::Heartbeat { .. }) {
            self.last_said = self.last_emit;
        }
        if let Err(e) = self.bus.publish(&self.run, &frame).await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use weft_shared::bus::MemoryBus;

    /// A tool call that outlasts the heartbeat interval: the run is heard from
    /// while it runs. The call ends only once a heartbeat was published, so the
    /// test waits on that event (with a timeout), not on the clock.
    #[tokio::test]
    async fn a_call_longer_than_the_interval_yields_heartbeats() {
        let bus: SharedBus = Arc::new(MemoryBus::new(1_000));
        let run = RunId("r".into());
        let mut live = bus.subscribe(&run).await.unwrap();
        let mut em = Emitter::new(bus.clone(), run.clone(), Duration::ZERO, 0, false)
            .await
            .with_heartbeat_after(Duration::from_millis(20));
        em.emit(EventKind::ToolStart {
            step: 1,
            call_id: "c1".into(),
            name: "slow".into(),
            args: serde_json::json!({}),
        })
        .await;
        let slow_call = async {
            loop {
                let frame = live.rx.recv().await.expect("the run's live events");
                if &*frame.ty == "heartbeat" {
                    return frame.decode().expect("a heartbeat").kind;
                }
            }
        };
        let heard = tokio::time::timeout(Duration::from_secs(10), em.beating(slow_call))
            .await
            .expect("no heartbeat while the call ran");
        let EventKind::Heartbeat {
            elapsed_ms,
            idle_ms,
        } = heard
        else {
            unreachable!("{heard:?}")
        };
        assert!(idle_ms <= elapsed_ms, "{idle_ms} > {elapsed_ms}");
        let logged = bus.read(&run, 0, 100).await.unwrap();
        let types: Vec<&str> = logged.iter().map(|f| &*f.ty).collect();
        assert_eq!(types[..2], ["tool_start", "heartbeat"]);
    }
}
