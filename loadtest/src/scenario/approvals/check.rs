//! What a resumed run must look like, from its replayed event log and from its
//! stored messages. Every shortfall is a *finding* with a name (the report counts
//! them by name) and one of three kinds: **lost** (something that should be
//! there is not: an event, the terminal `done`, a stored message), **duplicated**
//! (something is there twice: a seq, an approval event, a tool run, a stored
//! reply) and **wrong** (there, once, but not what it should be).
//!
//! The run's stream, replayed from seq 1, must read: seqs 1, 2, 3 … without a
//! gap or repeat; exactly one `approval_required` (for the approval that was
//! decided), one `approval_decided` (`approved`), one `tool_start` and one
//! `tool_end` (ok); the reply `tool current_time said: <output>`; and `done`,
//! once, last. The session's messages must be the user's message, the step that
//! called the tool, exactly one tool result (for that call) and exactly one final
//! reply, the same text the stream carried.

use std::collections::BTreeMap;

use weft_shared::api::MessageDto;
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::fold::RunFold;
use weft_shared::states::Verdict;

/// What is wrong with one run; empty when nothing is.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    pub lost: bool,
    pub duplicated: bool,
    pub wrong: bool,
    pub notes: Vec<String>,
}

impl Findings {
    pub fn lost(&mut self, why: impl Into<String>) {
        self.lost = true;
        self.notes.push(why.into());
    }
    pub fn duplicated(&mut self, why: impl Into<String>) {
        self.duplicated = true;
        self.notes.push(why.into());
    }
    pub fn wrong(&mut self, why: impl Into<String>) {
        self.wrong = true;
        self.notes.push(why.into());
    }
    pub fn clean(&self) -> bool {
        !(self.lost || self.duplicated || self.wrong)
    }
}

/// What the stream said, for the messages check and the latency.
#[derive(Debug, Clone, Default)]
pub struct StreamCheck {
    /// The `done` event's `ts` (unix ms at the worker).
    pub done_ts: Option<i64>,
    /// `tool_end`'s output preview.
    pub tool_output: Option<String>,
    /// The reply's text, after what `retrying` retracted.
    pub reply: String,
}

/// The reply the mock model gives after the tool said `output`.
pub fn expected_reply(output: &str) -> String {
    format!("tool current_time said: {output}")
}

/// Checks the events of one run, replayed from its first.
pub fn events(events: &[RunEvent], approval: &str, f: &mut Findings) -> StreamCheck {
    let mut out = StreamCheck::default();
    let mut last = 0u64;
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut fold = RunFold::default();
    for ev in events {
        if ev.seq <= last {
            f.duplicated("event_seq_repeated");
            continue;
        }
        // A new attempt after a lost log jumps forward at its `run_started`
        // (docs/protocol.md, "Bus layout"); anywhere else a jump is a lost event.
        if ev.seq != last + 1 && !matches!(ev.kind, EventKind::RunStarted { .. }) {
            f.lost(if last == 0 {
                "first_events_missing"
            } else {
                "event_gap"
            });
        }
        last = ev.seq;
        fold.apply(ev);
        *counts.entry(ev.kind.type_name()).or_default() += 1;
        match &ev.kind {
            EventKind::ApprovalRequired { approval_id, .. } if approval_id != approval => {
                f.wrong("approval_required_for_another_approval")
            }
            EventKind::ApprovalDecided { decision, .. } if *decision != Verdict::Approved => {
                f.wrong("approval_not_approved")
            }
            EventKind::ToolEnd { ok, output, .. } => {
                if !ok {
                    f.wrong("tool_failed");
                }
                out.tool_output = Some(output.clone());
            }
            EventKind::Done { .. } => out.done_ts = Some(ev.ts),
            _ => {}
        }
    }
    for ty in [
        "approval_required",
        "approval_decided",
        "tool_start",
        "tool_end",
    ] {
        match counts.get(ty).copied().unwrap_or(0) {
            0 => f.lost(format!("{ty}_missing")),
            1 => {}
            _ => f.duplicated(format!("{ty}_repeated")),
        }
    }
    if counts.get("done").copied().unwrap_or(0) > 1 {
        f.duplicated("done_repeated");
    }
    match events.last().map(|e| &e.kind) {
        Some(EventKind::Done { .. }) => {}
        Some(k) if k.is_terminal() => f.lost(format!("ended_{}", k.type_name())),
        _ => f.lost("no_terminal_event"),
    }
    out.reply = fold.streamed_text();
    if let Some(output) = &out.tool_output
        && out.done_ts.is_some()
        && out.reply != expected_reply(output)
    {
        f.wrong("streamed_reply");
    }
    out
}

/// Checks a run's session: one user message, one tool-calling step, exactly one
/// tool result for `call_id`, exactly one final reply (what the stream said).
pub fn messages(messages: &[MessageDto], call_id: &str, stream: &StreamCheck, f: &mut Findings) {
    let count = |pred: &dyn Fn(&MessageDto) -> bool| messages.iter().filter(|m| pred(m)).count();
    let one = |f: &mut Findings, n: usize, what: &str| match n {
        0 => f.lost(format!("{what}_missing")),
        1 => {}
        _ => f.duplicated(format!("{what}_repeated")),
    };
    one(f, count(&|m| m.role == "user"), "user_message");
    one(
        f,
        count(&|m| m.role == "assistant" && !m.tool_calls.is_empty()),
        "tool_call_message",
    );
    let results: Vec<&MessageDto> = messages.iter().filter(|m| m.role == "tool").collect();
    one(f, results.len(), "tool_result");
    if results
        .iter()
        .any(|m| m.call_id.as_deref() != Some(call_id))
    {
        f.wrong("tool_result_for_another_call");
    }
    let replies: Vec<&MessageDto> = messages
        .iter()
        .filter(|m| m.role == "assistant" && m.tool_calls.is_empty())
        .collect();
    one(f, replies.len(), "final_reply");
    if let (Some(result), Some(reply)) = (results.first(), replies.first()) {
        if reply.content != expected_reply(&result.content) {
            f.wrong("stored_reply");
        }
        if stream.done_ts.is_some() && reply.content != stream.reply {
            f.wrong("stored_reply_differs_from_stream");
        }
    }
}

#[cfg(test)]
mod tests;
