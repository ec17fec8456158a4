//! Handling a message this gateway holds in the inbox ([`super::inbox`]): stored,
//! acked, leased to us. It waits for its turn in its conversation and for a
//! handler slot, then is handled ([`Bot::handle`]) until that succeeds, fails
//! for good, or runs out of time, and the row is marked accordingly.
//!
//! Only database errors are retried (what an outage or a killed connection
//! produces; `retrying` inside has already tried each call four times): a
//! repeat is safe there because the send path is idempotent by the message's key
//! and notices by their `uuid`. Anything else — Lark refusing the answer, a
//! panic — marks the row failed at once: doing it again would do it again.
//! Between tries the handler waits for the database to answer a ping, so an
//! outage does not turn into a stream of THINKING reactions added and removed.

use std::panic::AssertUnwindSafe;
use std::time::{Duration, Instant};

use futures::FutureExt;
use tokio::sync::Semaphore;
use weft_shared::time::now_ms;
use weft_store::{InboxState, StoreError};

use super::Bot;
use super::inbound::Incoming;
use super::inbox::HANDLE_DEADLINE;
use super::turns::ChatTurn;
use crate::error::ApiError;

/// The first and the longest wait between two tries of a handler.
const HANDLE_RETRY: (Duration, Duration) = (Duration::from_millis(500), Duration::from_secs(8));

/// The first and the longest wait between two asks whether an earlier message
/// of the conversation is done: on another gateway, it is usually a download or
/// a send away from done.
const EARLIER_POLL: (Duration, Duration) = (Duration::from_millis(50), Duration::from_millis(500));

/// A message this gateway holds, in line in its conversation.
pub(super) struct Held {
    pub(super) event_id: String,
    pub(super) incoming: Incoming,
    pub(super) turn: ChatTurn,
}

/// How handling ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handling {
    Done,
    /// For good: an error another try would repeat.
    Failed,
    /// The database stayed unreachable past the deadline (or we shut down):
    /// leave it to a sweep.
    Later,
}

impl Bot {
    /// Handles a held message once the ones before it in its conversation are
    /// done and one of the handler `slots` is free, then marks its row.
    pub(super) async fn handle_held(&self, held: Held, slots: &Semaphore) {
        let Held {
            event_id,
            incoming,
            mut turn,
        } = held;
        turn.wait().await;
        if !self.wait_for_earlier(&incoming.message_id).await {
            return;
        }
        let Ok(slot) = slots.acquire().await else {
            return;
        };
        metrics::counter!("weft_lark_events_total", "outcome" => "handled").increment(1);
        let message_id = incoming.message_id.clone();
        // A trace per message: the run it starts stores this span's context
        // (`sessions::submit`), so the worker's run span continues the trace.
        let span = tracing::info_span!(
            parent: None,
            "lark.message",
            lark.message_id = %message_id,
            lark.chat_id = %incoming.chat.chat_id,
            trace_id = tracing::field::Empty,
        );
        weft_shared::telemetry::join_trace(&span, None, None);
        let handling =
            tracing::Instrument::instrument(self.handle_durably(incoming, &event_id), span).await;
        // The conversation's next message need not wait for the bookkeeping.
        drop(slot);
        drop(turn);
        match handling {
            Handling::Done => self.inbox.finish(&message_id, InboxState::Handled).await,
            Handling::Failed => {
                metrics::counter!("weft_lark_events_total", "outcome" => "failed").increment(1);
                self.inbox.finish(&message_id, InboxState::Failed).await
            }
            Handling::Later => self.inbox.release(&message_id).await,
        }
    }

    /// Waits while a message of the conversation that arrived before this one
    /// is on another gateway (or owed by a sweep): Lark spreads one chat's
    /// events over every connection. `false` on shutdown (the row stays
    /// pending; its lease runs out and a sweep takes it).
    async fn wait_for_earlier(&self, message_id: &str) -> bool {
        let inbox = &self.inbox;
        let mut delay = EARLIER_POLL.0;
        let mut waited = false;
        loop {
            match inbox
                .store()
                .lark_turn_waits(message_id, inbox.owner(), now_ms())
                .await
            {
                Ok(false) => return true,
                Ok(true) if !waited => {
                    waited = true;
                    metrics::counter!("weft_lark_events_total", "outcome" => "waited").increment(1);
                    tracing::debug!(lark.message_id = %message_id, "an earlier message of this lark conversation is on another gateway; waiting for it");
                }
                Ok(true) => {}
                // An outage: the handler copes with it (and waits it out).
                Err(e) => {
                    tracing::debug!(lark.message_id = %message_id, error = %e, "could not ask for earlier messages of the conversation; going on");
                    return true;
                }
            }
            if !inbox.pause(&mut delay, EARLIER_POLL.1).await {
                return false;
            }
        }
    }

    async fn handle_durably(&self, incoming: Incoming, event_id: &str) -> Handling {
        let deadline = Instant::now() + HANDLE_DEADLINE;
        let mut delay = HANDLE_RETRY.0;
        loop {
            let tried = AssertUnwindSafe(self.handle(incoming.clone()))
                .catch_unwind()
                .await;
            let error = match tried {
                Ok(Ok(())) => return Handling::Done,
                Ok(Err(e)) => e,
                Err(_) => {
                    tracing::error!(event.id = %event_id, "handling a lark message panicked; it is marked failed");
                    return Handling::Failed;
                }
            };
            if !is_database_error(&error) {
                tracing::warn!(event.id = %event_id, error = %format!("{error:#}"), "handling a lark message failed");
                return Handling::Failed;
            }
            if Instant::now() >= deadline {
                tracing::warn!(event.id = %event_id, error = %format!("{error:#}"), "the database failed a lark message for too long; a sweep will try it again");
                return Handling::Later;
            }
            metrics::counter!("weft_lark_inbox_retries_total", "step" => "handle").increment(1);
            tracing::warn!(event.id = %event_id, error = %format!("{error:#}"), "handling a lark message hit a database error; retrying");
            if !self.database_back(&mut delay, deadline).await {
                return Handling::Later;
            }
        }
    }

    /// Waits (with backoff) until the database answers a ping or `deadline`
    /// passes; `false` on shutdown.
    async fn database_back(&self, delay: &mut Duration, deadline: Instant) -> bool {
        loop {
            if !self.inbox.pause(delay, HANDLE_RETRY.1).await {
                return false;
            }
            if Instant::now() >= deadline || self.state.store.ping().await.is_ok() {
                return true;
            }
        }
    }
}

/// Whether `error` came from the database (unreachable, a killed connection, a
/// pool timeout), directly or as the internal error of a refused send.
fn is_database_error(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<StoreError>(),
            Some(StoreError::Db(_) | StoreError::Other(_))
        ) || matches!(
            cause.downcast_ref::<ApiError>(),
            Some(ApiError::Internal(_))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_database_errors_are_retried() {
        let db = || StoreError::Other("pool timed out".into());
        assert!(is_database_error(&anyhow::Error::new(db())));
        assert!(is_database_error(
            &anyhow::Error::new(db()).context("lark session")
        ));
        let send = ApiError::internal(db());
        assert!(is_database_error(
            &anyhow::Error::new(send).context("send failed")
        ));
        assert!(!is_database_error(&anyhow::Error::new(
            StoreError::NotFound
        )));
        assert!(!is_database_error(&anyhow::anyhow!("lark said no")));
        assert!(!is_database_error(&anyhow::Error::new(
            ApiError::Validation("too long".into())
        )));
    }
}
