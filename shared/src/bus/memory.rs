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
//!
//! The upkeep never walks every log: finished logs wait in a queue ordered by
//! when they expire, and logs holding frames in a set ordered by which goes
//! first past the budget. Until 2026-12-07 each run's retirement scanned the
//! whole map for expired logs, and each publish past the budget scanned and
//! sorted it: with a day's retention that map holds every run of the day, so a
//! run's cost grew with the process's uptime (1.5 % of `weft up`'s CPU after
//! 20 s at 550 runs/s, when it held 11,000 logs; BENCHMARKS.md, Analysis).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, VecDeque};
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
        (!self.expired(Instant::now())).then_some(&self.frames)
    }

    fn expired(&self, now: Instant) -> bool {
        self.expires.is_some_and(|t| t <= now)
    }

    fn has_listeners(&self) -> bool {
        self.live.as_ref().is_some_and(|tx| tx.receiver_count() > 0)
    }

    /// Its place in [`Logs::eviction`]: finished before running, then oldest
    /// first.
    fn eviction_key(&self, id: &RunId) -> (bool, u64, RunId) {
        (self.expires.is_none(), self.born, id.clone())
    }
}

/// The logs, with the two indexes the upkeep walks instead of the map.
#[derive(Default)]
struct Logs {
    map: HashMap<RunId, RunLog>,
    /// Retired logs by when they expire, soonest first: one entry per
    /// retirement, skipped when its log has gone or was given another time
    /// (and dropped in bulk before such entries could outnumber the logs).
    expiring: BinaryHeap<Reverse<(Instant, RunId)>>,
    /// Every log holding frames, in the order the budget drops them.
    eviction: BTreeSet<(bool, u64, RunId)>,
    /// Bytes of event JSON all logs hold.
    bytes: u64,
}

impl Logs {
    fn remove(&mut self, id: &RunId) {
        if let Some(log) = self.map.remove(id) {
            self.bytes -= log.bytes;
            self.eviction.remove(&log.eviction_key(id));
        }
    }

    /// Drop the logs whose retention is over (one still listened to goes when
    /// its last listener leaves, see [`Unsubscribe`]).
    fn sweep(&mut self) {
        let now = Instant::now();
        while let Some(Reverse((at, _))) = self.expiring.peek()
            && *at <= now
        {
            let Some(Reverse((at, id))) = self.expiring.pop() else {
                break;
            };
            if let Some(log) = self.map.get(&id)
                && log.expires == Some(at)
                && !log.has_listeners()
            {
                self.remove(&id);
            }
        }
    }
}

pub struct MemoryBus {
    runs: Arc<Mutex<Logs>>,
    cancel: broadcast::Sender<RunId>,
    notices: broadcast::Sender<Notice>,
    max_len: usize,
    /// Bytes all logs may hold together.
    budget: u64,
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
        self.runs.lock().expect("bus lock").bytes
    }

    /// Logs held now (retired ones included until they expire).
    #[cfg(test)]
    fn logs(&self) -> usize {
        self.runs.lock().expect("bus lock").map.len()
    }

    /// Over the budget: drop whole logs, finished runs' first, then the oldest,
    /// never `keep`'s (the one being written).
    fn evict(&self, logs: &mut Logs, keep: &RunId) {
        logs.sweep();
        while logs.bytes > self.budget {
            let Some(key) = logs.eviction.iter().find(|(_, _, id)| id != keep).cloned() else {
                break;
            };
            logs.eviction.remove(&key);
            let id = key.2;
            let Some(log) = logs.map.get_mut(&id) else {
                continue;
            };
            logs.bytes -= log.bytes;
            log.frames = VecDeque::new();
            log.bytes = 0;
            tracing::info!(run.id = %id, "event log dropped: the in-memory budget is spent");
            if log.live.is_none() {
                logs.map.remove(&id);
            }
        }
    }
}

struct Unsubscribe {
    runs: Arc<Mutex<Logs>>,
    run: RunId,
}

impl Drop for Unsubscribe {
    fn drop(&mut self) {
        let mut logs = self.runs.lock().expect("bus lock");
        let Some(log) = logs.map.get_mut(&self.run) else {
            return;
        };
        // `Subscription.rx` is declared before the guard, so it is already dropped.
        if log.live.is_some() && !log.has_listeners() {
            log.live = None;
            // Nothing logged and not retired, or kept past its retention only
            // for this listener.
            if (log.frames.is_empty() && log.expires.is_none()) || log.expired(Instant::now()) {
                logs.remove(&self.run);
            }
        }
    }
}

#[async_trait::async_trait]
impl Bus for MemoryBus {
    async fn publish(&self, run: &RunId, frame: &Frame) -> Result<()> {
        let mut logs = self.runs.lock().expect("bus lock");
        let Logs {
            map,
            eviction,
            bytes,
            ..
        } = &mut *logs;
        let log = map.entry(run.clone()).or_default();
        if log.frames.back().is_some_and(|f| f.seq >= frame.seq) {
            return Ok(()); // duplicate publish of an already logged seq
        }
        if log.frames.len() >= self.max_len
            && let Some(old) = log.frames.pop_front()
        {
            log.bytes -= old.json.len() as u64;
            *bytes -= old.json.len() as u64;
        }
        if log.born == 0 {
            log.born = self.births.fetch_add(1, Ordering::Relaxed);
        }
        if log.bytes == 0 {
            eviction.insert(log.eviction_key(run));
        }
        log.frames.push_back(frame.clone());
        log.bytes += frame.json.len() as u64;
        *bytes += frame.json.len() as u64;
        if let Some(tx) = &log.live {
            let _ = tx.send(frame.clone());
        }
        if logs.bytes > self.budget {
            self.evict(&mut logs, run);
        }
        Ok(())
    }

    async fn read(&self, run: &RunId, after: u64, limit: usize) -> Result<Vec<Frame>> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .map
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
            .map
            .get(run)
            .and_then(|l| l.frames()?.back())
            .map(|f| f.seq)
            .unwrap_or(0))
    }

    async fn has_log(&self, run: &RunId) -> Result<bool> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .map
            .get(run)
            .and_then(RunLog::frames)
            .is_some_and(|f| !f.is_empty()))
    }

    async fn retire(&self, run: &RunId, retention: Duration) -> Result<()> {
        let mut logs = self.runs.lock().expect("bus lock");
        logs.sweep();
        let Logs {
            map,
            expiring,
            eviction,
            ..
        } = &mut *logs;
        if let Some(log) = map.get_mut(run) {
            let at = Instant::now() + retention;
            // A finished log goes before every running one past the budget.
            let indexed = eviction.remove(&log.eviction_key(run));
            log.expires = Some(at);
            if indexed {
                eviction.insert(log.eviction_key(run));
            }
            expiring.push(Reverse((at, run.clone())));
            // Entries whose logs the budget dropped, or that were given
            // another time, wait for their expiry too: rebuilt without them
            // whenever they could outnumber the logs (amortised O(1) a push).
            if expiring.len() > 2 * map.len() + 1024 {
                expiring.retain(|Reverse((at, id))| {
                    map.get(id).is_some_and(|l| l.expires == Some(*at))
                });
            }
        }
        Ok(())
    }

    async fn subscribe(&self, run: &RunId) -> Result<Subscription> {
        let mut logs = self.runs.lock().expect("bus lock");
        let log = logs.map.entry(run.clone()).or_default();
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

    #[tokio::test]
    async fn retired_logs_go_when_their_retention_ends_or_their_last_listener_leaves() {
        let bus = MemoryBus::new(100);
        let runs: Vec<RunId> = (0..5).map(|_| RunId::new()).collect();
        for run in &runs {
            bus.publish(run, &text(run, 1)).await.unwrap();
        }
        let listened = bus.subscribe(&runs[0]).await.unwrap();
        let held = bus.bytes();
        // Two retired at once, one later, one given a longer time after a
        // shorter one, one never retired.
        for run in &runs[..2] {
            bus.retire(run, Duration::ZERO).await.unwrap();
        }
        bus.retire(&runs[2], Duration::from_secs(3600))
            .await
            .unwrap();
        bus.retire(&runs[3], Duration::from_millis(50))
            .await
            .unwrap();
        bus.retire(&runs[3], Duration::from_secs(3600))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(60)).await;
        // The next retirement sweeps: the listened-to log stays, expired.
        let other = RunId::new();
        bus.retire(&other, Duration::ZERO).await.unwrap();
        assert_eq!(bus.logs(), 4, "runs 0, 2, 3 and 4 are left");
        assert!(!bus.has_log(&runs[0]).await.unwrap(), "expired for readers");
        assert!(!bus.has_log(&runs[1]).await.unwrap());
        assert!(bus.has_log(&runs[3]).await.unwrap(), "the later time holds");
        assert_eq!(bus.bytes(), held - held / 5);
        drop(listened);
        assert_eq!(bus.logs(), 3, "gone with its last listener");
        assert_eq!(bus.bytes(), held - 2 * (held / 5));
        // Past the budget, the finished logs go before the running one, the
        // older first.
        let budget = held - held / 5 - 1;
        let bus = bus.with_budget(budget);
        bus.publish(&runs[4], &text(&runs[4], 2)).await.unwrap();
        assert!(bus.has_log(&runs[4]).await.unwrap());
        assert!(
            !bus.has_log(&runs[2]).await.unwrap(),
            "the older finished one"
        );
        assert!(bus.has_log(&runs[3]).await.unwrap(), "one sufficed");
        assert!(bus.bytes() <= budget, "{}", bus.bytes());
    }

    #[tokio::test]
    async fn expiry_entries_of_logs_the_budget_dropped_do_not_pile_up() {
        // Room for about ten one-frame logs: every later run's log pushes an
        // older finished one out long before its day of retention is over.
        let run = RunId::new();
        let frame = text(&run, 1);
        let bus = MemoryBus::new(100).with_budget(10 * frame.json.len() as u64);
        for _ in 0..20_000 {
            let run = RunId::new();
            bus.publish(&run, &text(&run, 1)).await.unwrap();
            bus.retire(&run, Duration::from_secs(24 * 3600))
                .await
                .unwrap();
        }
        let logs = bus.runs.lock().unwrap();
        assert!(logs.map.len() <= 10, "{} logs", logs.map.len());
        assert!(
            logs.expiring.len() <= 2 * logs.map.len() + 1024,
            "{} expiry entries for {} logs",
            logs.expiring.len(),
            logs.map.len()
        );
    }
}
