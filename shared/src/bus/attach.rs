//! Replay-then-live attach to a run's events, exactly once and in order.
//!
//! Subscribe first, then read the log after the client's last seq, then follow the
//! live channel. Every frame passes one gate — `seq == last + 1` — so duplicates
//! (a frame both replayed and received live) are dropped, and a gap (a lost
//! pub/sub message, a lagging receiver, a reconnect) re-reads the log to fill it.
//! When nothing arrives for `idle`, the log is re-read too and an `Idle` item is
//! yielded so the caller can send a keep-alive and check the run in the database.
//!
//! The log is read a page ([`super::READ_PAGE`] events) at a time: a full page
//! means more may follow, and the next page is read once this one has been sent,
//! so a 100,000-event log is never held in memory at once.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::{Bus, Subscription};
use crate::event::Frame;
use crate::ids::RunId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachItem {
    Frame(Frame),
    /// Nothing happened for the idle interval.
    Idle,
}

#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(transparent)]
    Bus(#[from] super::BusError),
}

struct State {
    bus: Arc<dyn Bus>,
    run: RunId,
    sub: Subscription,
    last: u64,
    pending: VecDeque<Frame>,
    /// The last read filled its page: the log may hold more after it.
    more: bool,
    ended: bool,
    idle: Duration,
}

impl State {
    /// Queue the next page of log entries after `last`.
    async fn refill(&mut self) {
        match self.bus.read(&self.run, self.last, super::READ_PAGE).await {
            Ok(frames) => {
                self.more = frames.len() >= super::READ_PAGE;
                self.pending.extend(frames);
            }
            Err(e) => {
                self.more = false;
                tracing::warn!(run.id = %self.run, error = %e, "re-reading event log failed");
            }
        }
    }

    fn next_pending(&mut self) -> Option<Frame> {
        while let Some(frame) = self.pending.pop_front() {
            if frame.seq == self.last + 1 {
                self.last = frame.seq;
                if frame.is_terminal() {
                    self.ended = true;
                    self.pending.clear();
                }
                return Some(frame);
            }
            if frame.seq > self.last + 1 {
                // Out of order: keep it until the gap is filled from the log.
                self.pending.push_front(frame);
                return None;
            }
        }
        None
    }
}

/// Attach to `run` after `after` (0 = from the start). The stream ends after the
/// terminal event.
pub async fn attach(
    bus: Arc<dyn Bus>,
    run: RunId,
    after: u64,
    idle: Duration,
) -> Result<impl Stream<Item = AttachItem> + Send, AttachError> {
    let sub = bus.subscribe(&run).await?;
    let mut state = State {
        bus,
        run,
        sub,
        last: after,
        pending: VecDeque::new(),
        more: false,
        ended: false,
        idle,
    };
    state.refill().await;
    Ok(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(frame) = st.next_pending() {
                return Some((AttachItem::Frame(frame), st));
            }
            if st.ended {
                return None;
            }
            if st.pending.is_empty() && st.more {
                // This page is sent; read the next one.
                st.refill().await;
                continue;
            }
            if !st.pending.is_empty() {
                // A gap sits before the pending frames: fill it from the log.
                st.pending.clear();
                st.refill().await;
                if let Some(frame) = st.next_pending() {
                    return Some((AttachItem::Frame(frame), st));
                }
                if let Some(first) = st.pending.front() {
                    // Frames are logged before they are announced, so what the log
                    // lacks now is gone for good (capped, expired, or lost with a
                    // flushed Redis): skip ahead rather than wait forever.
                    st.last = first.seq - 1;
                    continue;
                }
            }
            match tokio::time::timeout(st.idle, st.sub.rx.recv()).await {
                Ok(Ok(frame)) if frame.seq == 0 => st.refill().await,
                Ok(Ok(frame)) if frame.seq <= st.last => {}
                Ok(Ok(frame)) if frame.seq == st.last + 1 => st.pending.push_back(frame),
                Ok(Ok(_gap)) => st.refill().await,
                Ok(Err(RecvError::Lagged(_))) => st.refill().await,
                Ok(Err(RecvError::Closed)) => {
                    st.refill().await;
                    if st.pending.is_empty() {
                        return None;
                    }
                }
                Err(_idle) => {
                    st.refill().await;
                    if st.pending.is_empty() {
                        return Some((AttachItem::Idle, st));
                    }
                }
            }
        }
    }))
}
