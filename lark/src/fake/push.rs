//! Pushing events to clients, matching their acks, and redelivering.
//!
//! Each pushed event gets a task that delivers it to one random live connection
//! (cluster mode), waits for a valid ack up to the ack deadline, and on failure
//! redelivers the **same event_id** after the configured delays, recording every
//! attempt. A valid ack echoes the frame: `method=1`, the `SeqID` of one of the
//! fragments, every header of that fragment, a `biz_rt`, and a JSON payload whose
//! `code` is 200 (with `data`, if any, base64 JSON).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::records::{AckRecord, AttemptOutcome, FailReason, PushAttempt};
use super::{ConnCommand, FakeLark, PendingAck};
use crate::frame::{Frame, Header, METHOD_DATA, header, kind};

static NEXT_SEQ_ID: AtomicU64 = AtomicU64::new(1);

/// How to split one push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushOptions {
    /// Number of fragments (`sum`); 1 sends the payload whole.
    pub fragments: usize,
    pub order: FragmentOrder,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self {
            fragments: 1,
            order: FragmentOrder::InOrder,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FragmentOrder {
    InOrder,
    Reversed,
    Shuffled,
}

/// A schema 2.0 `im.message.receive_v1` envelope with a text message.
pub fn sample_message_event(event_id: &str, message_id: &str, chat_id: &str, text: &str) -> Value {
    json!({
        "schema": "2.0",
        "header": {
            "event_id": event_id, "event_type": "im.message.receive_v1",
            "create_time": now_ms().to_string(), "token": "", "app_id": "cli_fake_app", "tenant_key": "tenant_fake",
        },
        "event": {
            "sender": {"sender_id": {"union_id": "on_fake", "user_id": "u_fake", "open_id": "ou_fake"},
                       "sender_type": "user", "tenant_key": "tenant_fake"},
            "message": {
                "message_id": message_id, "root_id": "", "parent_id": "",
                "create_time": now_ms().to_string(), "update_time": now_ms().to_string(),
                "chat_id": chat_id, "chat_type": "group", "message_type": "text",
                "content": json!({"text": text}).to_string(), "mentions": [],
            },
        },
    })
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

impl FakeLark {
    /// Pushes one event; returns its `event_id`. Delivery, ack tracking and
    /// redelivery continue in the background.
    pub fn push_event(&self, envelope: Value, options: PushOptions) -> String {
        self.push_interleaved(vec![(envelope, options)]).remove(0)
    }

    /// Pushes several events to the same connection with all their fragments
    /// shuffled together (each event's own order per its options on redelivery).
    pub fn push_interleaved(&self, events: Vec<(Value, PushOptions)>) -> Vec<String> {
        self.push_on(self.pick_connection(), events)
    }

    /// Pushes one event whose first delivery goes to connection `conn` (see
    /// [`FakeLark::connection_ids`]; a push's `conn_id` in the records names the
    /// one it went to); a redelivery goes to a random one, as always.
    pub fn push_event_to(&self, conn: u64, envelope: Value, options: PushOptions) -> String {
        self.push_on(Some(conn), vec![(envelope, options)])
            .remove(0)
    }

    fn push_on(&self, conn: Option<u64>, events: Vec<(Value, PushOptions)>) -> Vec<String> {
        let mut frames = Vec::new();
        let mut ids = Vec::new();
        for (envelope, options) in events {
            let event_id = envelope["header"]["event_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            self.remember_pushed_message(&envelope);
            let payload = envelope.to_string().into_bytes();
            let (first, done) = self.prepare(&event_id, 1, conn, &payload, options);
            frames.extend(first);
            ids.push(event_id.clone());
            tokio::spawn(self.clone().follow(event_id, payload, options, done));
        }
        if frames.len() > 1 && ids.len() > 1 {
            frames.shuffle(&mut rand::rng());
        }
        self.send_frames(conn, frames);
        ids
    }

    /// A pushed `im.message.receive_v1` is a message that now exists in the chat.
    fn remember_pushed_message(&self, envelope: &Value) {
        if envelope["header"]["event_type"] != "im.message.receive_v1" {
            return;
        }
        let m = &envelope["event"]["message"];
        let text = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
        if !text("message_id").is_empty() {
            let sender = envelope["event"]["sender"]["sender_id"]["open_id"]
                .as_str()
                .unwrap_or_default();
            self.state()
                .rest
                .remember_pushed(&text("message_id"), m, sender);
            self.state().rest.remember_user_message(
                &text("message_id"),
                &text("chat_id"),
                &text("thread_id"),
                &text("message_type"),
            );
        }
    }

    fn pick_connection(&self) -> Option<u64> {
        let state = self.state();
        let live: Vec<u64> = state
            .conns
            .iter()
            .filter(|(_, c)| !c.silenced)
            .map(|(id, _)| *id)
            .collect();
        live.choose(&mut rand::rng()).copied()
    }

    fn send_frames(&self, conn: Option<u64>, frames: Vec<Frame>) {
        let state = self.state();
        if let Some(entry) = conn.and_then(|id| state.conns.get(&id)) {
            for frame in frames {
                let _ = entry.tx.send(ConnCommand::Send(frame));
            }
        }
    }

    /// Records the attempt and registers its pending ack; returns the frames to send.
    fn prepare(
        &self,
        event_id: &str,
        attempt: u32,
        conn: Option<u64>,
        payload: &[u8],
        options: PushOptions,
    ) -> (Vec<Frame>, oneshot::Receiver<Result<AckRecord, FailReason>>) {
        let (done_tx, done_rx) = oneshot::channel();
        let message_id = uuid::Uuid::new_v4().to_string();
        let mut state = self.state();
        let service = conn
            .and_then(|id| state.conns.get(&id))
            .map_or(0, |c| c.service_id);
        let frames = match conn {
            Some(_) => fragment(payload, &message_id, service, options),
            None => Vec::new(),
        };
        state.records.pushes.push(PushAttempt {
            event_id: event_id.to_owned(),
            attempt,
            conn_id: conn,
            message_id: message_id.clone(),
            fragments: frames.len(),
            outcome: AttemptOutcome::Pending,
            pushed_at: std::time::Instant::now(),
        });
        if conn.is_none() {
            let _ = done_tx.send(Err(FailReason::NoConnection));
        } else {
            let fragments = frames
                .iter()
                .map(|f| (f.seq_id, f.headers.clone()))
                .collect();
            let pending = PendingAck {
                event_id: event_id.to_owned(),
                fragments,
                done: done_tx,
            };
            state.pending_acks.insert(message_id, pending);
        }
        drop(state);
        self.notify();
        (frames, done_rx)
    }

    /// Waits for the ack of each attempt and redelivers until acked or out of delays.
    async fn follow(
        self,
        event_id: String,
        payload: Vec<u8>,
        options: PushOptions,
        mut done: oneshot::Receiver<Result<AckRecord, FailReason>>,
    ) {
        let delays = self.config().redelivery_delays.clone();
        let mut attempt = 1u32;
        loop {
            let outcome = match tokio::time::timeout(self.config().ack_timeout, &mut done).await {
                Ok(Ok(Ok(ack))) if ack.code == 200 => AttemptOutcome::Acked(ack),
                Ok(Ok(Ok(ack))) => AttemptOutcome::Failed(FailReason::Code(ack.code)),
                Ok(Ok(Err(reason))) => AttemptOutcome::Failed(reason),
                Ok(Err(_)) | Err(_) => AttemptOutcome::Failed(FailReason::Timeout),
            };
            let finished = matches!(outcome, AttemptOutcome::Acked(_));
            if let AttemptOutcome::Acked(ack) = &outcome {
                self.apply_card_response(&payload, ack);
            }
            self.settle(&event_id, attempt, outcome);
            let Some(delay) = delays.get(attempt as usize - 1).filter(|_| !finished) else {
                return;
            };
            tokio::select! {
                _ = self.shutdown_token().cancelled() => return,
                _ = tokio::time::sleep(*delay) => {}
            }
            attempt += 1;
            let conn = self.pick_connection();
            let (frames, next) = self.prepare(&event_id, attempt, conn, &payload, options);
            self.send_frames(conn, frames);
            done = next;
        }
    }

    fn settle(&self, event_id: &str, attempt: u32, outcome: AttemptOutcome) {
        let mut guard = self.state();
        let state = &mut *guard;
        if let Some(record) = state
            .records
            .pushes
            .iter_mut()
            // The newest: a test may push the same event again by hand.
            .rev()
            .find(|p| p.event_id == event_id && p.attempt == attempt)
        {
            if state.pending_acks.remove(&record.message_id).is_some()
                && outcome == AttemptOutcome::Failed(FailReason::Timeout)
            {
                state.timed_out.insert(record.message_id.clone());
            }
            record.outcome = outcome;
        }
        drop(guard);
        self.notify();
    }
}

fn fragment(payload: &[u8], message_id: &str, service: i32, options: PushOptions) -> Vec<Frame> {
    let sum = options.fragments.clamp(1, payload.len().max(1));
    let chunk = payload.len().div_ceil(sum).max(1);
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let mut frames: Vec<Frame> = payload
        .chunks(chunk)
        .enumerate()
        .map(|(seq, bytes)| {
            let seq_id = NEXT_SEQ_ID.fetch_add(1, Ordering::Relaxed);
            Frame {
                seq_id,
                log_id: seq_id + 7_000_000,
                service,
                method: METHOD_DATA,
                headers: vec![
                    Header::new(header::TYPE, kind::EVENT),
                    Header::new(header::MESSAGE_ID, message_id),
                    Header::new(header::SUM, payload.chunks(chunk).len().to_string()),
                    Header::new(header::SEQ, seq.to_string()),
                    Header::new(header::TRACE_ID, trace_id.clone()),
                    Header::new(header::TIMESTAMP, now_ms().to_string()),
                    Header::new(header::INSTANCE_ID, "fake-instance-1"),
                ],
                payload: Some(bytes.to_vec()),
                log_id_new: Some(format!("{seq_id}_fake")),
                ..Frame::default()
            }
        })
        .collect();
    match options.order {
        FragmentOrder::InOrder => {}
        FragmentOrder::Reversed => frames.reverse(),
        FragmentOrder::Shuffled => frames.shuffle(&mut rand::rng()),
    }
    frames
}

/// Matches an inbound data frame against pending pushes.
pub(super) fn handle_ack(fake: &FakeLark, frame: Frame) {
    let mut state = fake.state();
    let message_id = frame
        .header(header::MESSAGE_ID)
        .unwrap_or_default()
        .to_owned();
    if !state.pending_acks.contains_key(&message_id) {
        if state.timed_out.contains(&message_id) {
            // Acked after the deadline: Lark ignores it (and redelivers).
            state.records.late_acks += 1;
        } else {
            state
                .records
                .bad_frames
                .push(format!("ack for unknown message_id {message_id:?}"));
        }
        return;
    }
    if state.acks_to_lose > 0 {
        state.acks_to_lose -= 1;
        state.records.acks_lost += 1;
        return;
    }
    let pending = state
        .pending_acks
        .remove(&message_id)
        .expect("checked above");
    let _ = pending.done.send(validate_ack(&frame, &pending.fragments));
    tracing::debug!(event.id = %pending.event_id, "fake lark received ack");
}

fn validate_ack(
    frame: &Frame,
    fragments: &HashMap<u64, Vec<Header>>,
) -> Result<AckRecord, FailReason> {
    let bad = |why: String| Err(FailReason::BadAck(why));
    let Some(sent) = fragments.get(&frame.seq_id) else {
        return bad(format!("SeqID {} matches no fragment", frame.seq_id));
    };
    if let Some(missing) = sent
        .iter()
        .find(|h| frame.header(&h.key) != Some(h.value.as_str()))
    {
        return bad(format!("header {} not echoed", missing.key));
    }
    let Some(biz_rt_ms) = frame
        .header(header::BIZ_RT)
        .and_then(|v| v.parse::<i64>().ok())
    else {
        return bad("no numeric biz_rt header".into());
    };
    let body: Value = match serde_json::from_slice(frame.payload_bytes()) {
        Ok(body) => body,
        Err(e) => return bad(format!("payload is not JSON: {e}")),
    };
    let Some(code) = body["code"].as_i64() else {
        return bad("payload has no numeric code".into());
    };
    let data = match body.get("data") {
        None | Some(Value::Null) => None,
        Some(Value::String(b64)) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| FailReason::BadAck(format!("data is not base64: {e}")))?;
            Some(
                serde_json::from_slice(&bytes)
                    .map_err(|e| FailReason::BadAck(format!("data is not JSON: {e}")))?,
            )
        }
        Some(other) => return bad(format!("data is not a string: {other}")),
    };
    Ok(AckRecord {
        code,
        biz_rt_ms,
        data,
        at: std::time::Instant::now(),
    })
}
