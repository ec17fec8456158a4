//! Every gateway's inbox upkeep, at start and then every quarter of
//! `lark.inbox_lease_ms` (5 s by default): renew the leases of the messages this
//! gateway holds (one statement for all of them), take over pending messages
//! whose lease ran out — their gateway died, or gave up on them for the time
//! being — and report how many are pending (`weft_lark_inbox_pending`).
//!
//! So a restart of every process loses nothing that was acked: the new
//! gateways find the rows once the old leases run out (at most one lease, plus
//! one sweep interval, after the old gateway stopped renewing) and handle them
//! like fresh messages, in each conversation's arrival order ([`super::turns`]).
//! A message that had in fact been sent already is sent again as a no-op (the
//! idempotency key `lark:<message_id>`). A row taken over [`MAX_ATTEMPTS`] times
//! is marked failed: something about it, not the database, keeps its handlers
//! from finishing.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use weft_lark::event::EventEnvelope;
use weft_shared::time::now_ms;
use weft_store::{InboxState, LeasedInbound};

use super::Bot;
use super::held::Held;
use super::inbound;

/// Rows one sweep takes at most (the rest come with the next).
const SWEEP_LIMIT: i64 = 200;
/// Holds of one message (the first store included) before it is marked failed.
const MAX_ATTEMPTS: i64 = 5;

/// Runs until the gateway shuts down.
pub(super) async fn run(bot: Bot, slots: Arc<Semaphore>) {
    let inbox = bot.inbox.clone();
    let every = (inbox.lease() / 4).max(Duration::from_millis(100));
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = inbox.shutdown().cancelled() => return,
            _ = tick.tick() => {}
        }
        let store = inbox.store();
        // Renew first: a sweep must not find our own rows expired.
        if let Err(e) = store
            .renew_lark_leases(inbox.owner(), inbox.lease_until())
            .await
        {
            tracing::warn!(error = %e, "renewing the leases of held lark messages failed");
            continue;
        }
        match store
            .lease_lark_inbound(inbox.owner(), now_ms(), inbox.lease_until(), SWEEP_LIMIT)
            .await
        {
            Ok(rows) => {
                for row in rows {
                    bot.take_over(row, &slots);
                }
            }
            Err(e) => tracing::warn!(error = %e, "sweeping the lark inbox failed"),
        }
        if let Ok(pending) = store.lark_inbox_pending().await {
            metrics::gauge!("weft_lark_inbox_pending").set(pending as f64);
        }
    }
}

impl Bot {
    /// A pending row this gateway now holds: in line behind its conversation's
    /// messages here, or marked done when there is nothing (more) to do.
    fn take_over(&self, row: LeasedInbound, slots: &Arc<Semaphore>) {
        metrics::counter!("weft_lark_inbox_redone_total").increment(1);
        let LeasedInbound {
            message_id,
            payload,
            received_at,
            attempts,
            ..
        } = row;
        tracing::info!(lark.message_id = %message_id, attempts, "taking over a stored lark message");
        let envelope = match EventEnvelope::parse(payload.as_bytes()) {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::error!(lark.message_id = %message_id, error = %e, "a stored lark event is unreadable; marked failed");
                return self.finish_later(message_id, InboxState::Failed);
            }
        };
        if attempts > MAX_ATTEMPTS {
            tracing::error!(lark.message_id = %message_id, attempts, "a lark message was taken over too often; marked failed");
            metrics::counter!("weft_lark_events_total", "outcome" => "failed").increment(1);
            return self.finish_later(message_id, InboxState::Failed);
        }
        // Judged as when it arrived: an outage must not make it "too old".
        let config = &self.state.config().lark;
        match inbound::classify(&envelope, &self.me, config, received_at) {
            inbound::Verdict::Handle(incoming) => {
                let held = Held {
                    turn: self.chats.rejoin(&incoming.chat.key()),
                    event_id: envelope.header.event_id,
                    incoming,
                };
                let (bot, slots) = (self.clone(), slots.clone());
                tokio::spawn(async move { bot.handle_held(held, &slots).await });
            }
            inbound::Verdict::Ignore(why) => {
                // The configuration changed since (`allowed_chats`, say).
                tracing::info!(lark.message_id = %message_id, why, "a stored lark message is no longer for the bot");
                self.finish_later(message_id, InboxState::Handled);
            }
        }
    }

    fn finish_later(&self, message_id: String, state: InboxState) {
        let inbox = self.inbox.clone();
        tokio::spawn(async move { inbox.finish(&message_id, state).await });
    }
}
