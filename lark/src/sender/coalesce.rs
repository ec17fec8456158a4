//! Latest-value-wins update streams.
//!
//! A streaming reply produces far more updates than Lark accepts (5 patches/s per
//! message). Queueing them would put the card ever further behind; instead each
//! stream keeps only the newest pending value, and one worker sends it whenever
//! the rate limiter allows. Older unsent values are dropped (counted in
//! [`UpdateStats::coalesced`]). Retryable failures back off and retry with the
//! newest value; any other failure ends the stream and is returned by `finish`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::rest::{ErrorClass, LarkError};

const MAX_ATTEMPTS: u32 = 3;
const BACKOFF_BASE: Duration = Duration::from_millis(500);

/// What a finished stream did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct UpdateStats {
    /// Requests that succeeded.
    pub sent: u32,
    /// Values replaced by a newer one before they were sent.
    pub coalesced: u32,
}

pub(crate) type SendFn<T> =
    Box<dyn Fn(T) -> Pin<Box<dyn Future<Output = Result<(), LarkError>> + Send>> + Send + Sync>;

struct Slot<T> {
    state: Mutex<SlotState<T>>,
    wake: Notify,
}

struct SlotState<T> {
    pending: Option<T>,
    closed: bool,
    coalesced: u32,
}

/// A handle to push values into; see the module docs.
pub struct Coalescer<T> {
    slot: Arc<Slot<T>>,
    task: Option<JoinHandle<Result<UpdateStats, LarkError>>>,
}

impl<T: Clone + Send + 'static> Coalescer<T> {
    pub(crate) fn spawn(send: SendFn<T>) -> Self {
        let slot = Arc::new(Slot {
            state: Mutex::new(SlotState {
                pending: None,
                closed: false,
                coalesced: 0,
            }),
            wake: Notify::new(),
        });
        let task = tokio::spawn(worker(slot.clone(), send));
        Self {
            slot,
            task: Some(task),
        }
    }

    /// Replaces the pending value with `value`.
    pub fn update(&self, value: T) {
        let mut state = self.slot.state.lock().expect("slot lock");
        if state.pending.replace(value).is_some() {
            state.coalesced += 1;
        }
        drop(state);
        self.slot.wake.notify_one();
    }

    /// Sends the last pending value, then stops; returns what the stream did or the
    /// error that ended it.
    pub async fn finish(mut self) -> Result<UpdateStats, LarkError> {
        let task = self.task.take().expect("finish runs once");
        drop(self);
        task.await.expect("coalescer worker panicked")
    }
}

impl<T> Drop for Coalescer<T> {
    /// Closing lets the worker send the last pending value and stop.
    fn drop(&mut self) {
        if let Ok(mut state) = self.slot.state.lock() {
            state.closed = true;
        }
        self.slot.wake.notify_one();
    }
}

async fn worker<T: Clone + Send + 'static>(
    slot: Arc<Slot<T>>,
    send: SendFn<T>,
) -> Result<UpdateStats, LarkError> {
    let mut stats = UpdateStats::default();
    loop {
        let wake = slot.wake.notified();
        let next = {
            let mut state = slot.state.lock().expect("slot lock");
            stats.coalesced = state.coalesced;
            match state.pending.take() {
                Some(value) => Some(value),
                None if state.closed => return Ok(stats),
                None => None,
            }
        };
        match next {
            Some(value) => {
                send_with_retry(&slot, &send, value).await?;
                stats.sent += 1;
            }
            None => wake.await,
        }
    }
}

async fn send_with_retry<T: Clone>(
    slot: &Slot<T>,
    send: &SendFn<T>,
    mut value: T,
) -> Result<(), LarkError> {
    let mut attempt = 0;
    loop {
        match send(value.clone()).await {
            Ok(()) => return Ok(()),
            Err(e) if e.class() == ErrorClass::Retryable && attempt + 1 < MAX_ATTEMPTS => {
                let backoff = BACKOFF_BASE * 3u32.pow(attempt);
                tracing::warn!(error = %e, backoff_ms = backoff.as_millis() as u64, "lark update retrying");
                tokio::time::sleep(backoff).await;
                attempt += 1;
                // A newer value may have arrived meanwhile; it supersedes this one.
                let mut state = slot.state.lock().expect("slot lock");
                if let Some(newer) = state.pending.take() {
                    state.coalesced += 1;
                    value = newer;
                }
            }
            Err(e) => return Err(e),
        }
    }
}
