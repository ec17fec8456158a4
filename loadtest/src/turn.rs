//! One chat turn as the web UI does it: send with `stream: true`, read the run's
//! SSE, and when the connection drops re-attach with `Last-Event-ID` (or, before
//! the run id is known, resend with the same `Idempotency-Key`) until a terminal
//! event arrives. Along the way it measures time to first token and stream lag,
//! and checks the stream is coherent: `seq` without gaps or repeats, and the text
//! (after dropping what `retrying` and a new `run_started` attempt retract)
//! exactly the reply the mock was scripted to give.

use std::time::{Duration, Instant};

use rand::Rng;
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::fold::{Change, Outcome, RunFold};

use crate::client::{WeftClient, error_kind};
use crate::sse::{SseEnd, SseReader};
use crate::stats::Recorder;

/// What to send and what must come back.
#[derive(Debug, Clone)]
pub struct TurnPlan {
    pub text: String,
    pub expect: String,
    pub tokens: u32,
    pub ttft: Duration,
    pub itl: Duration,
}

impl TurnPlan {
    /// A reply of `tokens` words `w1 … wn`, first after `ttft_ms`, then one per `itl_ms`.
    pub fn mock(tokens: u32, ttft_ms: u64, itl_ms: u64) -> TurnPlan {
        TurnPlan {
            text: format!("@mock.tokens {tokens} @mock.delay {ttft_ms} {itl_ms}"),
            expect: weft_llm::mockscript::numbered_words("w", tokens).concat(),
            tokens,
            ttft: Duration::from_millis(ttft_ms),
            itl: Duration::from_millis(itl_ms),
        }
    }

    /// When token number `n` (1-based) leaves the mock, counted from the request.
    pub fn nominal(&self, n: u64) -> Duration {
        self.ttft + self.itl * (n.saturating_sub(1) as u32)
    }
}

/// Deliberate disconnects (the `reconnect` scenario).
#[derive(Debug, Clone, Copy, Default)]
pub struct Drops {
    /// At most this many drops per turn.
    pub max: u32,
    /// Chance of dropping the send's response before reading any of it.
    pub before_first_event: f64,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// `done` with the expected text.
    Done,
    /// A terminal event other than a clean `done`, or a wrong reply.
    Failed(String),
    /// No terminal event before the deadline (the message may still be answered).
    Abandoned,
    /// The message was never accepted (e.g. rate limited until the deadline).
    NotSent,
}

#[derive(Debug, Clone)]
pub struct TurnResult {
    pub end: TurnEnd,
    pub run_id: Option<String>,
    /// The gateway accepted the message (a 200 stream was opened).
    pub accepted: bool,
}

#[derive(Default)]
struct StreamState {
    last_seq: u64,
    run_id: Option<String>,
    /// The reply so far, by the protocol's one fold (a retry or a new
    /// attempt voids the steps it redoes).
    fold: RunFold,
    /// Words received of the kept steps (for the stream lag).
    words: u64,
    first_token: Option<Instant>,
    drops: u32,
    incoherent: bool,
}

/// Run one turn against `client`, reporting into `rec`. Bounded by `deadline`.
pub async fn run_turn(
    client: &mut WeftClient,
    session: &str,
    plan: &TurnPlan,
    drops: Drops,
    deadline: Duration,
    rec: &Recorder,
) -> TurnResult {
    let key = uuid::Uuid::new_v4().to_string();
    let t0 = Instant::now();
    let give_up = t0 + deadline;
    let mut st = StreamState::default();
    let mut accepted = false;
    for _connect in 0..200 {
        if Instant::now() >= give_up {
            break;
        }
        let request = match &st.run_id {
            None => client.send_streaming(session, &plan.text, &key).await,
            Some(run) => client.attach(run, st.last_seq).await,
        };
        let response = match request {
            Ok(r) => r,
            Err(e) => {
                rec.error(error_kind(&e));
                client.fail_over();
                pause(Duration::from_millis(200), give_up).await;
                continue;
            }
        };
        let status = response.status();
        if status.as_u16() == 410 {
            // The run is over and its event log is gone (e.g. the process that held
            // it restarted): the web UI reads the messages instead.
            rec.error("http_410");
            if let Some(end) =
                reply_from_messages(client, session, st.run_id.as_deref(), plan).await
            {
                return finish(rec, &st, end, true);
            }
            pause(Duration::from_millis(250), give_up).await;
            continue;
        }
        if !status.is_success() {
            rec.error(format!("http_{}", status.as_u16()));
            let wait = match status.as_u16() {
                429 => retry_after(&response).unwrap_or(Duration::from_secs(1)),
                s if s >= 500 => Duration::from_millis(250),
                _ => {
                    return finish(
                        rec,
                        &st,
                        TurnEnd::Failed(format!("http_{status}")),
                        accepted,
                    );
                }
            };
            pause(wait.min(Duration::from_secs(5)), give_up).await;
            continue;
        }
        accepted = true;
        if st.run_id.is_none() && st.drops < drops.max && chance(drops.before_first_event) {
            st.drops += 1;
            rec.with(|s| s.reconnects += 1);
            drop(response);
            continue;
        }
        let drop_after = (st.drops < drops.max)
            .then(|| rand::rng().random_range(1..=u64::from(plan.tokens).max(1) + 2));
        let mut reader = SseReader::new(Box::pin(response.bytes_stream()));
        let mut read = 0u64;
        let ended = loop {
            let remaining = give_up.saturating_duration_since(Instant::now());
            let ev = match tokio::time::timeout(remaining, reader.next()).await {
                Err(_) => break None,
                Ok(Err(SseEnd::Closed)) => {
                    rec.error("stream_closed_early");
                    break None;
                }
                Ok(Err(SseEnd::Broken(_))) => {
                    rec.error("stream_broken");
                    break None;
                }
                Ok(Ok(ev)) => ev,
            };
            let Ok(event) = serde_json::from_str::<RunEvent>(&ev.data) else {
                rec.error("bad_event_json");
                st.incoherent = true;
                continue;
            };
            let at = ev.at.unwrap_or_else(Instant::now);
            if let Some(end) = on_event(&mut st, plan, event, at, t0, rec) {
                break Some(end);
            }
            read += 1;
            if drop_after == Some(read) {
                st.drops += 1;
                rec.with(|s| s.reconnects += 1);
                break None;
            }
        };
        if let Some(end) = ended {
            if end == TurnEnd::Done {
                rec.with(|s| s.turn.push(t0.elapsed().as_micros() as i64));
            }
            return finish(rec, &st, end, accepted);
        }
        if Instant::now() >= give_up {
            break;
        }
    }
    let end = if accepted {
        TurnEnd::Abandoned
    } else {
        TurnEnd::NotSent
    };
    finish(rec, &st, end, accepted)
}

/// Apply one event; `Some` when the turn is over.
fn on_event(
    st: &mut StreamState,
    plan: &TurnPlan,
    event: RunEvent,
    at: Instant,
    t0: Instant,
    rec: &Recorder,
) -> Option<TurnEnd> {
    if event.seq <= st.last_seq {
        rec.with(|s| s.duplicates += 1);
        st.incoherent = true;
        return None;
    }
    if event.seq != st.last_seq + 1 {
        // A retried attempt whose predecessor's event log was lost (an embedded
        // restart, a Redis flush) continues seq past anything that attempt could
        // have sent, and says so with `run_started {attempt > 1}`: the protocol's
        // one allowed jump (docs/protocol.md, "Bus layout"). Anywhere else a jump is
        // a lost event.
        let new_attempt =
            matches!(event.kind, EventKind::RunStarted { attempt, .. } if attempt > 1);
        if new_attempt {
            rec.with(|s| s.attempt_jumps += 1);
        } else {
            rec.with(|s| s.gaps += 1);
            st.incoherent = true;
        }
    }
    st.last_seq = event.seq;
    if st.drops == 0 {
        let delivered = weft_shared::time::now_ms() - event.ts;
        rec.with(|s| s.delivery.push(delivered * 1000));
    }
    let changes = st.fold.apply(&event);
    for change in &changes {
        match change {
            Change::Started { .. } => st.run_id = Some(event.run_id.0.clone()),
            Change::Text { delta, .. } => {
                if st.first_token.is_none() {
                    st.first_token = Some(at);
                    let ttft = at - t0;
                    rec.with(|s| {
                        s.ttft.push(ttft.as_micros() as i64);
                        s.ttft_overhead.push(Recorder::signed(ttft, plan.ttft));
                    });
                }
                st.words += delta.split_whitespace().count() as u64;
                if st.drops == 0 {
                    let lag = Recorder::signed(at - t0, plan.nominal(st.words));
                    rec.with(|s| s.lag.push(lag));
                }
            }
            Change::Retract { .. } => {
                st.words = st.fold.streamed_text().split_whitespace().count() as u64;
            }
            _ => {}
        }
    }
    if let EventKind::Retrying { .. } = event.kind {
        rec.with(|s| s.retries_seen += 1);
    }
    match &st.fold.outcome {
        Some(Outcome::Done) => {
            if st.fold.streamed_text() != plan.expect {
                rec.error("reply_mismatch");
                st.incoherent = true;
                return Some(TurnEnd::Failed("reply_mismatch".into()));
            }
            Some(TurnEnd::Done)
        }
        Some(Outcome::Failed(e)) => {
            rec.error(format!("run_error:{}", e.code));
            Some(TurnEnd::Failed(e.code.clone()))
        }
        Some(Outcome::Cancelled { .. }) => {
            rec.error("run_cancelled");
            Some(TurnEnd::Failed("cancelled".into()))
        }
        None => None,
    }
}

fn finish(rec: &Recorder, st: &StreamState, end: TurnEnd, accepted: bool) -> TurnResult {
    rec.with(|s| {
        match &end {
            TurnEnd::Done => s.runs_ok += 1,
            TurnEnd::Failed(_) => s.runs_failed += 1,
            TurnEnd::Abandoned => *s.errors.entry("turn_abandoned".into()).or_insert(0) += 1,
            TurnEnd::NotSent => *s.errors.entry("not_sent".into()).or_insert(0) += 1,
        }
        if st.incoherent {
            s.incoherent_streams += 1;
        }
    });
    TurnResult {
        end,
        run_id: st.run_id.clone(),
        accepted,
    }
}

/// After a 410: the assistant message of `run`, if the run left one.
async fn reply_from_messages(
    client: &WeftClient,
    session: &str,
    run: Option<&str>,
    plan: &TurnPlan,
) -> Option<TurnEnd> {
    let run = run?;
    let messages = client.all_messages(session).await.ok()?;
    let reply = messages
        .iter()
        .find(|m| m.role == "assistant" && m.run_id.as_deref() == Some(run))?;
    Some(if reply.content == plan.expect {
        TurnEnd::Done
    } else {
        TurnEnd::Failed("reply_mismatch".into())
    })
}

fn chance(p: f64) -> bool {
    p > 0.0 && rand::rng().random::<f64>() < p
}

fn retry_after(r: &reqwest::Response) -> Option<Duration> {
    let v = r.headers().get("retry-after")?.to_str().ok()?;
    Some(Duration::from_secs(v.trim().parse().ok()?))
}

async fn pause(d: Duration, until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    tokio::time::sleep(d.min(left)).await;
}

#[cfg(test)]
mod tests {
    use weft_shared::ids::{RunId, SessionId};

    use super::*;

    fn ev(seq: u64, kind: EventKind) -> RunEvent {
        RunEvent {
            run_id: RunId::new(),
            seq,
            ts: weft_shared::time::now_ms(),
            kind,
        }
    }

    fn started(seq: u64, attempt: u32, resume_step: u32) -> RunEvent {
        let kind = EventKind::RunStarted {
            session_id: SessionId::new(),
            model: "mock".into(),
            attempt,
            resume_step,
        };
        ev(seq, kind)
    }

    fn text(seq: u64, delta: &str) -> RunEvent {
        let kind = EventKind::Text {
            step: 1,
            delta: delta.into(),
        };
        ev(seq, kind)
    }

    #[test]
    fn a_new_attempt_may_jump_seq_but_nothing_else_may() {
        let plan = TurnPlan::mock(2, 0, 0);
        let rec = Recorder::default();
        let mut st = StreamState::default();
        let t0 = Instant::now();
        for e in [started(1, 1, 1), text(2, "w1 ")] {
            assert_eq!(on_event(&mut st, &plan, e, Instant::now(), t0, &rec), None);
        }
        // The first attempt's log was lost: the retry continues far past it.
        let e = started(1_000_003, 2, 1);
        assert_eq!(on_event(&mut st, &plan, e, Instant::now(), t0, &rec), None);
        let e = text(1_000_004, "w1 w2 ");
        assert_eq!(on_event(&mut st, &plan, e, Instant::now(), t0, &rec), None);
        assert!(!st.incoherent, "a jump to a new attempt is allowed");
        assert_eq!(st.fold.streamed_text(), "w1 w2 ");
        // A jump to anything but a new attempt's first event is a lost event.
        let e = text(1_000_006, "w3");
        assert_eq!(on_event(&mut st, &plan, e, Instant::now(), t0, &rec), None);
        assert!(st.incoherent);
        let s = rec.take();
        assert_eq!((s.attempt_jumps, s.gaps), (1, 1));
    }
}
