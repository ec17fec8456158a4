//! In-process bus for embedded mode: a map of run logs and broadcast channels.
//! Logs live in memory, so they do not survive a restart; clients then read the
//! messages (410 `events_expired`), exactly as after a Redis flush.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::{Bus, Result, Subscription};
use crate::event::Frame;
use crate::ids::RunId;

#[derive(Default)]
struct RunLog {
    frames: Vec<Frame>,
    live: Option<broadcast::Sender<Frame>>,
    expires: Option<Instant>,
}

impl RunLog {
    /// Frames, unless the retention period is over.
    fn frames(&self) -> &[Frame] {
        match self.expires {
            Some(t) if t <= Instant::now() => &[],
            _ => &self.frames,
        }
    }
}

pub struct MemoryBus {
    runs: Arc<Mutex<HashMap<RunId, RunLog>>>,
    cancel: broadcast::Sender<RunId>,
    max_len: usize,
}

impl MemoryBus {
    pub fn new(max_len: usize) -> MemoryBus {
        MemoryBus {
            runs: Arc::default(),
            cancel: broadcast::channel(1024).0,
            max_len,
        }
    }

    fn sweep(runs: &mut HashMap<RunId, RunLog>) {
        let now = Instant::now();
        runs.retain(|_, log| {
            log.expires.is_none_or(|t| t > now)
                || log.live.as_ref().is_some_and(|tx| tx.receiver_count() > 0)
        });
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
        if log.frames.last().is_some_and(|f| f.seq >= frame.seq) {
            return Ok(()); // duplicate publish of an already logged seq
        }
        if log.frames.len() >= self.max_len {
            log.frames.remove(0);
        }
        log.frames.push(frame.clone());
        if let Some(tx) = &log.live {
            let _ = tx.send(frame.clone());
        }
        Ok(())
    }

    async fn read(&self, run: &RunId, after: u64) -> Result<Vec<Frame>> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .get(run)
            .map(|log| {
                let frames = log.frames();
                let start = frames.partition_point(|f| f.seq <= after);
                frames[start..].to_vec()
            })
            .unwrap_or_default())
    }

    async fn last_seq(&self, run: &RunId) -> Result<u64> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs
            .get(run)
            .and_then(|l| l.frames().last())
            .map(|f| f.seq)
            .unwrap_or(0))
    }

    async fn has_log(&self, run: &RunId) -> Result<bool> {
        let runs = self.runs.lock().expect("bus lock");
        Ok(runs.get(run).is_some_and(|l| !l.frames().is_empty()))
    }

    async fn retire(&self, run: &RunId, retention: Duration) -> Result<()> {
        let mut runs = self.runs.lock().expect("bus lock");
        Self::sweep(&mut runs);
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

    async fn ping(&self) -> Result<()> {
        Ok(())
    }
}
