//! In-process bus for embedded mode: a map of run logs and broadcast channels.
//! Logs live in memory, so they do not survive a restart; clients then read the
//! messages (410 `events_expired`), exactly as after a Redis flush.
//!
//! Memory is bounded twice: each log keeps at most `events.max_len` frames (a
//! ring), and all logs together at most `events.memory_budget_bytes` of event
//! JSON (default 256 MiB). Past the budget, logs are dropped whole — those of
//! finished runs first (they only serve re-attaches, and the messages hold their
//! text), then the oldest running ones — never the log being written. Before,
//! every log stayed for its 24 h retention however much the process held.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::{Bus, Notice, Result, Subscription};
use crate::event::Frame;
use crate::ids::RunId;

#[derive(Default)]
struct RunLog {
    /// A ring: the oldest frame leaves at the front when the log is full
    /// (`Vec::remove(0)` moved every frame, under the bus lock).
    frames: VecDeque<Frame>,
    live: Option<broadcast::Sender<Frame>>,
    expires: Option<Instant>,
    /// Bytes of event JSON in `frames`.
    bytes: u64,
    /// When the first frame was logged, in publish order (older is smaller).
    born: u64,
}

impl RunLog {
    /// Frames, unless the retention period is over.
    fn frames(&self) -> Option<&VecDeque<Frame>> {
        match self.expires {
            Some(t) if t <= Instant::now() => None,
            _ => Some(&self.frames),
        }
    }
}

pub struct MemoryBus {
    runs: Arc<Mutex<HashMap<RunId, RunLog>>>,
    cancel: broadcast::Sender<RunId>,
    notices: broadcast::Sender<Notice>,
    max_len: usize,
    /// Bytes all logs may hold together, and hold now (changed under `runs`' lock).
    budget: u64,
    bytes: AtomicU64,
    births: AtomicU64,
}

impl MemoryBus {
    pub fn new(max_len: usize) -> MemoryBus {
        MemoryBus {
            runs: Arc::default(),
            cancel: broadcast::channel(1024).0,
            notices: broadcast::channel(super::NOTICE_BUFFER).0,
            max_len,
            budget: u64::MAX,
            bytes: AtomicU64::new(0),
            births: AtomicU64::new(1),
        }
    }

    /// Hold at most `bytes` of event JSON across all logs (`events.memory_budget_bytes`).
    pub fn with_budget(mut self, bytes: u64) -> MemoryBus {
        self.budget = bytes;
        self
    }

    /// Bytes of event JSON held now.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn sweep(&self, runs: &mut HashMap<RunId, RunLog>) {
        let now = Instant::now();
        runs.retain(|_, log| {
            let keep = log.expires.is_none_or(|t| t > now)
                || log.live.as_ref().is_some_and(|tx| tx.receiver_count() > 0);
            if !keep {
                self.bytes.fetch_sub(log.bytes, Ordering::Relaxed);
            }
            keep
        });
    }

    /// Over the budget: drop whole logs, finished runs' first, then the oldest,
    /// never `keep`'s (the one being written).
    fn evict(&self, runs: &mut HashMap<RunId, RunLog>, keep: &RunId) {
        self.sweep(runs);
        let mut victims: Vec<(bool, u64, RunId)> = runs
            .iter()
            .filter(|(id, log)| *id != keep && log.bytes > 0)
            .map(|(id, log)| (log.expires.is_none(), log.born, id.clone()))
            .collect();
        victims.sort();
        for (_, _, id) in victims {
            if self.bytes() <= self.budget {
                break;
            }
            let Some(log) = runs.get_mut(&id) else {
                continue;
            };
            self.bytes.fetch_sub(log.bytes, Ordering::Relaxed);
            log.frames = VecDeque::new();
            log.bytes = 0;
            tracing::info!(run.id = %id, "event log dropped: the in-memory budget is spent");
            if log.live.is_none() {
                runs.remove(&id);
            }
        }
    }
}

struct Unsubscribe {
    runs: Arc<Mutex<HashMap<RunId, RunLog>>>,
    run: RunId,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        let mut runs = self.runs.lock().expect("bus lock");
        if let Some(log) = runs.get_mut(&self.run) {
            // `Subscription.rx` is declared before the guard, so it is already dropped.
            if log.live.as_ref().is_some_and(|tx| tx.receiver_count() == 0) {
                log.live = None;
                if log.frames.is_empty() && log.expires.is_none() {
                    runs.remove(&self.run);
                }
            }
        }
    }
}

#[async_trait::async_trait]
impl Bus for MemoryBus {
    async fn publish(&self, run: &RunId, frame: &Frame) -> Result<()> {
        let mut runs = self.runs.lock().expect("bus lock");
        let log = runs.entry(run.clone()).or_default();
        if log.frames.back().is_some_and(|f| f.seq >= frame.seq) {
            return Ok(()); // duplicate publish of an already logged seq
        }
        if log.frames.len() >= self.max_len
            && let Some(old) = log.frames.pop_front()
        {
            log.bytes -= old.json.len() as u64;
            self.bytes
                .fetch_sub(old.json.len() as u64, Ordering::Relaxed);
        }
        if log.born == 0 {
            log.born = self.births.fetch_add(1, Ordering::Relaxed);
        }
        log.frames.push_back(frame.clone());
        log.bytes += frame.json.len() as u64;
        self.bytes
            .fetch_add(frame.json.len() as u64, Ordering::Relaxed);
        if let Some(tx) = &log.live {
            let _ = tx.send(frame.clone());
        }
        if self.bytes() > self.budget {
            self.evict(&mut runs, run);
        }
        Ok(())
    }

    async fn read(&self, run: &RunId, after: u64, limit: usize) -> Result<Vec<Frame>> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .get(run)
            .and_then(RunLog::frames)
            .map(|frames| {
                let start = frames.partition_point(|f| f.seq <= after);
                frames.range(start..).take(limit).cloned().collect()
            })
            .unwrap_or_default())
    }

    async fn last_seq(&self, run: &RunId) -> Result<u64> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .get(run)
            .and_then(|l| l.frames()?.back())
            .map(|f| f.seq)
            .unwrap_or(0))
    }

    async fn has_log(&self, run: &RunId) -> Result<bool> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .get(run)
            .and_then(RunLog::frames)
            .is_some_and(|f| !f.is_empty()))
    }

    async fn retire(&self, run: &RunId, retention: Duration) -> Result<()> {
        let mut runs = self.runs.lock().expect("bus lock");
        self.sweep(&mut runs);
        if let Some(log) = runs.get_mut(run) {
            log.expires = Some(Instant::now() + retention);
        }
        Ok(())
    }

    async fn subscribe(&self, run: &RunId) -> Result<Subscription> {
        let mut runs = self.runs.lock().expect("bus lock");
        let log = runs.entry(run.clone()).or_default();
        let rx = match &log.live {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = broadcast::channel(super::LIVE_BUFFER);
                log.live = Some(tx);
                rx
            }
        };
        Ok(Subscription {
            rx,
            _guard: Box::new(Unsubscribe {
                runs: self.runs.clone(),
                run: run.clone(),
            }),
        })
    }

    async fn request_cancel(&self, run: &RunId) -> Result<()> {
        let _ = self.cancel.send(run.clone());
        Ok(())
    }

    fn cancel_requests(&self) -> broadcast::Receiver<RunId> {
        self.cancel.subscribe()
    }

    async fn notify(&self, notice: &Notice) -> Result<()> {
        let _ = self.notices.send(notice.clone());
        Ok(())
    }

    fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventKind, RunEvent};

    fn text(run: &RunId, seq: u64) -> Frame {
        Frame::encode(&RunEvent {
            run_id: run.clone(),
            seq,
            ts: 0,
            kind: EventKind::Text {
                step: 1,
                delta: "x".repeat(900),
            },
        })
    }

    #[tokio::test]
    async fn past_the_budget_finished_logs_go_first_then_the_oldest() {
        let bus = MemoryBus::new(100_000).with_budget(10_000);
        let (done, old, new) = (RunId::new(), RunId::new(), RunId::new());
        for seq in 1..=3 {
            bus.publish(&old, &text(&old, seq)).await.unwrap();
        }
        for seq in 1..=3 {
            bus.publish(&done, &text(&done, seq)).await.unwrap();
        }
        bus.retire(&done, Duration::from_secs(3600)).await.unwrap();
        // ~6 KB so far; the new run's frames push past 10 KB.
        for seq in 1..=5 {
            bus.publish(&new, &text(&new, seq)).await.unwrap();
        }
        assert!(
            !bus.has_log(&done).await.unwrap(),
            "the finished log went first"
        );
        assert!(
            bus.has_log(&old).await.unwrap(),
            "running logs stay while that suffices"
        );
        assert!(bus.bytes() <= 10_000, "{}", bus.bytes());
        for seq in 6..=8 {
            bus.publish(&new, &text(&new, seq)).await.unwrap();
        }
        assert!(
            !bus.has_log(&old).await.unwrap(),
            "then the oldest running log"
        );
        assert_eq!(
            bus.read(&new, 0, 100).await.unwrap().len(),
            8,
            "never the one being written"
        );
        assert!(bus.bytes() <= 10_000, "{}", bus.bytes());
    }
}
