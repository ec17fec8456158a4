//! A worker's copy of the histories of the sessions it served (issue 23).
//!
//! Every run used to read its whole session (up to `context.max_messages`,
//! 1,000, through `sqlx::Any`): in the throughput profile that read was two
//! thirds of the worker's CPU per run, growing with the session's length. Now a
//! run reads, in one statement ([`Store::history_since`]), one row of session
//! state and the messages written since this worker's copy (usually the one
//! user message of this run), used when the state says the copy is still good.
//!
//! Why a copy can be trusted (migration 0017): every transaction that inserts
//! messages holds the session's row, stamps them with the session's write
//! count plus one and bumps the count, so "written after the copy" is
//! `seq > the copy's newest seq`; every change to messages already written
//! bumps `history_rev`, and a copy of another revision (or another summary
//! boundary) is read again from scratch. Changes of that kind (undo, redo,
//! retry, edit) are refused while a run is active, so none lands between a
//! run's two reads.
//!
//! Bounded: at most [`MAX_MESSAGES_HELD`] messages over all copies; past that,
//! copies are dropped (any, not the oldest: a dropped copy costs one full read).
//! The count is kept as copies come and go: summing every copy at each run cost
//! a walk over every session the worker had served.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use weft_shared::ids::SessionId;
use weft_store::{HistoryState, Message, Store};

/// The most messages all copies hold together (a few tens of MiB at the sizes
/// chats have).
pub const MAX_MESSAGES_HELD: usize = 200_000;

struct Copy {
    history_rev: i64,
    /// The summary boundary the copy starts after.
    after: Option<String>,
    /// The newest write seen.
    seq: i64,
    msgs: Vec<Arc<Message>>,
}

/// The copies, by session.
pub struct Histories {
    copies: Mutex<Held>,
    /// The most messages all copies hold together.
    cap: usize,
}

#[derive(Default)]
struct Held {
    by_session: HashMap<SessionId, Arc<Copy>>,
    /// Messages over all copies.
    messages: usize,
}

impl Default for Histories {
    fn default() -> Self {
        Histories::holding(MAX_MESSAGES_HELD)
    }
}

impl Histories {
    /// Copies of at most `cap` messages together.
    fn holding(cap: usize) -> Histories {
        Histories {
            copies: Mutex::default(),
            cap,
        }
    }

    /// The session's [`HistoryState`] and its shown messages after the
    /// state's summary, oldest first, the newest `limit` of them, never
    /// starting with a tool result; `None` when the session is gone (its copy
    /// is dropped). With a copy held, one read gives the state and what the
    /// copy lacks ([`Store::history_since`]); a copy of another revision or
    /// summary boundary, or none, costs a second, full read.
    pub async fn read(
        &self,
        store: &Store,
        session: &SessionId,
        limit: usize,
    ) -> weft_store::Result<Option<(HistoryState, Vec<Arc<Message>>)>> {
        let held = self
            .copies
            .lock()
            .expect("histories lock")
            .by_session
            .get(session)
            .cloned();
        let read = match &held {
            Some(copy) => {
                store
                    .history_since(session, copy.after.as_deref(), copy.seq)
                    .await?
            }
            None => store
                .history_state(session)
                .await?
                .map(|state| (state, Vec::new())),
        };
        let Some((state, new)) = read else {
            self.forget(session);
            return Ok(None);
        };
        let after = state.summary.as_ref().map(|s| s.upto_ord.clone());
        let held = held.filter(|c| c.history_rev == state.history_rev && c.after == after);
        let (mut msgs, mut seq) = match held {
            Some(copy) => {
                metrics::counter!("weft_context_copy_hits_total").increment(1);
                if new.is_empty() {
                    return Ok(Some((state, copy.msgs.clone())));
                }
                let mut msgs = copy.msgs.clone();
                merge(&mut msgs, new);
                (msgs, copy.seq)
            }
            None => {
                metrics::counter!("weft_context_copy_misses_total").increment(1);
                let all = store
                    .context_after(session, after.as_deref(), limit)
                    .await?;
                (all.into_iter().map(Arc::new).collect(), 0)
            }
        };
        seq = msgs.iter().map(|m| m.seq).fold(seq, i64::max);
        keep_newest(&mut msgs, limit);
        let copy = Arc::new(Copy {
            history_rev: state.history_rev,
            after,
            seq,
            msgs: msgs.clone(),
        });
        self.keep(session.clone(), copy);
        Ok(Some((state, msgs)))
    }

    /// Drop the copy of a session that is gone.
    pub fn forget(&self, session: &SessionId) {
        let mut held = self.copies.lock().expect("histories lock");
        if let Some(c) = held.by_session.remove(session) {
            held.messages -= c.msgs.len();
        }
    }

    fn keep(&self, session: SessionId, copy: Arc<Copy>) {
        let mut held = self.copies.lock().expect("histories lock");
        let Held {
            by_session,
            messages,
        } = &mut *held;
        *messages += copy.msgs.len();
        if let Some(old) = by_session.insert(session.clone(), copy) {
            *messages -= old.msgs.len();
        }
        while *messages > self.cap {
            let Some(other) = by_session.keys().find(|s| **s != session).cloned() else {
                break;
            };
            if let Some(c) = by_session.remove(&other) {
                *messages -= c.msgs.len();
            }
        }
    }
}

/// `new` (written after everything in `msgs`, though not always later in the
/// conversation: an interrupted run's partial reply sorts before the run that
/// interrupted it) into `msgs`, in conversation order.
fn merge(msgs: &mut Vec<Arc<Message>>, new: Vec<Message>) {
    let in_order = match (msgs.last(), new.first()) {
        (Some(last), Some(first)) => first.ord > last.ord,
        _ => true,
    };
    msgs.extend(new.into_iter().map(Arc::new));
    if !in_order {
        msgs.sort_by(|a, b| a.ord.cmp(&b.ord));
    }
}

/// The newest `limit`, never starting with a tool result (its call was cut).
fn keep_newest(msgs: &mut Vec<Arc<Message>>, limit: usize) {
    let extra = msgs.len().saturating_sub(limit);
    let first_non_tool = msgs[extra..]
        .iter()
        .position(|m| m.role != "tool")
        .map_or(msgs.len(), |i| extra + i);
    msgs.drain(..first_non_tool);
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_shared::ids::MessageId;

    fn msg(ord: &str, role: &str) -> Message {
        Message {
            reasoning: Vec::new(),
            plan: false,
            id: MessageId::new(),
            session_id: SessionId("s".into()),
            role: role.into(),
            content: ord.into(),
            run_id: None,
            step: None,
            call_id: String::new(),
            name: None,
            tool_calls: Vec::new(),
            created_at: 0,
            ord: ord.into(),
            attachments: Vec::new(),
            author_id: None,
            author_name: None,
            seq: 0,
            citations: Vec::new(),
        }
    }

    fn ords(msgs: &[Arc<Message>]) -> Vec<&str> {
        msgs.iter().map(|m| m.ord.as_str()).collect()
    }

    #[test]
    fn messages_written_later_but_earlier_in_the_conversation_take_their_place() {
        let mut msgs = vec![Arc::new(msg("a", "user")), Arc::new(msg("c", "user"))];
        merge(&mut msgs, vec![msg("d", "user")]);
        assert_eq!(ords(&msgs), ["a", "c", "d"]);
        merge(&mut msgs, vec![msg("b", "assistant"), msg("e", "user")]);
        assert_eq!(ords(&msgs), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn the_newest_are_kept_and_never_an_orphaned_tool_result_first() {
        let mut msgs: Vec<Arc<Message>> = [
            ("a", "user"),
            ("b", "assistant"),
            ("c", "tool"),
            ("d", "user"),
        ]
        .into_iter()
        .map(|(o, r)| Arc::new(msg(o, r)))
        .collect();
        keep_newest(&mut msgs, 10);
        assert_eq!(ords(&msgs), ["a", "b", "c", "d"]);
        keep_newest(&mut msgs, 2);
        assert_eq!(ords(&msgs), ["d"]);
    }

    fn copy_of(n: usize) -> Arc<Copy> {
        Arc::new(Copy {
            history_rev: 0,
            after: None,
            seq: 0,
            msgs: (0..n)
                .map(|i| Arc::new(msg(&i.to_string(), "user")))
                .collect(),
        })
    }

    fn held(h: &Histories) -> (usize, usize) {
        let held = h.copies.lock().unwrap();
        let counted: usize = held.by_session.values().map(|c| c.msgs.len()).sum();
        assert_eq!(held.messages, counted, "the kept count matches the copies");
        (held.by_session.len(), held.messages)
    }

    #[test]
    fn copies_stay_under_the_cap_counting_replacements_and_forgets_once() {
        let h = Histories::holding(10);
        let (a, b, c) = (SessionId::new(), SessionId::new(), SessionId::new());
        h.keep(a.clone(), copy_of(4));
        h.keep(b.clone(), copy_of(4));
        assert_eq!(held(&h), (2, 8));
        // A session's newer copy replaces its older one.
        h.keep(a.clone(), copy_of(5));
        assert_eq!(held(&h), (2, 9));
        // Past the cap another session's copy goes, never the one just kept.
        h.keep(c.clone(), copy_of(3));
        let (sessions, messages) = held(&h);
        assert!(
            messages <= 10 && sessions == 2,
            "{sessions} copies, {messages}"
        );
        assert!(h.copies.lock().unwrap().by_session.contains_key(&c));
        h.forget(&c);
        h.forget(&c);
        let (_, after) = held(&h);
        assert_eq!(after, messages - 3);
        // One copy bigger than the cap is still kept (a run needs it).
        h.keep(a.clone(), copy_of(12));
        assert_eq!(held(&h), (1, 12));
    }
}
