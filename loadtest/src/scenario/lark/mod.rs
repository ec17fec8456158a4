//! `lark`: the Lark bot under load, measured at the wire. The load tester embeds
//! `weft-lark`'s fake Lark server (the one the conformance tests use, which speaks
//! the real long-connection and REST protocols and enforces Lark's rate limits);
//! Weft connects to it as it would to Lark. Each message is a pushed
//! `im.message.receive_v1` from a new sender in a direct chat of its own, with a
//! reply scripted for the in-process `mock` model (`@mock.tokens N @mock.delay
//! TTFT ITL`), so the model's share of every latency is known. What a user would
//! see is read back from the fake's records, timed by the fake's clock
//! ([`measure`]).
//!
//! Two phases, so an idle bot's latency is not mixed with a busy bot's queueing:
//! * **probes** — messages one at a time, each answered (final card) before the
//!   next and at most one per `probe_interval`, with short replies: push → ack,
//!   → THINKING reaction, → first card text of the path itself. The interval
//!   matters: back-to-back probes alone make ~40 API calls/s, and a distributed
//!   worker's share of the app's budget is ~12/s, so unpaced probes would measure
//!   the rate limiter;
//! * **burst** — `conversations` messages pushed together (spread over `ramp`),
//!   each reply streaming for a few seconds: exactly one complete card per
//!   message while every card shares the app's 50 calls/s, and no 429 provoked;
//! * **groups** — group chats where several people talk at once (20 groups × 5
//!   speakers × 10 messages by default): the acks with the inbox insert in front
//!   of them at the busiest, and every message answered once, checked in the
//!   database the stack wrote ([`groups`]).
//!
//! Every wait is bounded; the fake listens on 127.0.0.1 only.

pub mod groups;
pub mod launch;
pub mod measure;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft_lark::fake::{FakeConfig, FakeLark, PushOptions, Records, sample_message_event};

pub use crate::report::lark::{LarkPhase, LarkResult};
use crate::turn::TurnPlan;

/// After the last final card: how long to keep watching for a late second card.
const GRACE: Duration = Duration::from_secs(2);
/// How long the THINKING reactions may take to go after the replies end.
const REACTIONS_WAIT: Duration = Duration::from_secs(10);
/// How long Weft's long connections may take to come up.
const CONNECT_WAIT: Duration = Duration::from_secs(60);

/// What to send.
#[derive(Debug, Clone)]
pub struct LarkParams {
    /// Messages sent one at a time before the burst.
    pub probes: usize,
    /// The least time from one probe's push to the next.
    pub probe_interval: Duration,
    pub probe_plan: TurnPlan,
    /// Conversations of the burst, one message each.
    pub conversations: usize,
    pub plan: TurnPlan,
    /// The burst's messages are pushed spread over this long.
    pub ramp: Duration,
    /// The longest wait for one probe's final card, and for all of the burst's.
    pub timeout: Duration,
    /// Long connections (gateway replicas) to wait for before pushing.
    pub connections: usize,
    /// The groups phase, if any.
    pub groups: Option<groups::GroupParams>,
    /// The stack's database (read-only), to check the groups phase against.
    pub database_url: Option<String>,
}

impl LarkParams {
    /// The probes' replies: the burst's TTFT, then five quick words (the probes
    /// measure up to the first text; a short tail keeps the phase short).
    pub fn probe_plan(plan: &TurnPlan) -> TurnPlan {
        TurnPlan::mock(5, plan.ttft.as_millis() as u64, 10)
    }
}

/// The fake as Lark behaves, except that an unacked event is redelivered after
/// 2 s instead of minutes, so a missed ack shows up (and is deduplicated) within
/// the run.
pub fn fake_config() -> FakeConfig {
    FakeConfig {
        redelivery_delays: vec![Duration::from_secs(2)],
        ..FakeConfig::default()
    }
}

/// The settings that point Weft at `fake`, with this process's share of the app's
/// API calls per second.
pub fn weft_env(fake: &FakeLark, calls_per_second: u32) -> Vec<(String, String)> {
    let c = fake.config();
    vec![
        ("WEFT_LARK__APP_ID".into(), c.app_id.clone()),
        ("WEFT_LARK__APP_SECRET".into(), c.app_secret.clone()),
        ("WEFT_LARK__BASE_URL".into(), fake.base_url()),
        (
            "WEFT_LARK__CALLS_PER_SECOND".into(),
            calls_per_second.to_string(),
        ),
    ]
}

/// One pushed message.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub event_id: String,
    pub message_id: String,
}

/// Runs both phases against the Weft connected to `fake` and measures them.
pub async fn run(fake: &FakeLark, p: &LarkParams) -> anyhow::Result<LarkResult> {
    wait_connections(fake, p.connections.max(1)).await?;
    let tag = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let finals = EndedCards::default();
    let mut probes = Vec::with_capacity(p.probes);
    for i in 0..p.probes {
        let next = tokio::time::Instant::now() + p.probe_interval;
        probes.push(push(fake, &format!("{tag}_p{i}"), &p.probe_plan));
        let answered = finals.wait_for(fake, probes.len(), p.timeout).await;
        tokio::time::sleep_until(next).await;
        if !answered {
            tracing::warn!(
                probe = i,
                "a probe got no final card in time; stopping probes"
            );
            break;
        }
    }
    let burst = push_burst(fake, &tag, p).await;
    if !finals
        .wait_for(fake, probes.len() + burst.len(), p.timeout)
        .await
    {
        tracing::warn!("not every burst message got a final card in time");
    }
    tokio::time::sleep(GRACE).await;
    let (records, sent) = (fake.records(), fake.sent_messages());
    let probes = measure::phase(&records, &sent, &probes, &p.probe_plan);
    let burst = measure::phase(&records, &sent, &burst, &p.plan);
    let groups = match &p.groups {
        Some(g) => {
            let pushed = groups::push(fake, &tag, g).await;
            let timeout = p.timeout.max(Duration::from_secs(180));
            let measured = groups::measure(fake, p.database_url.as_deref(), g, &pushed, timeout);
            let measured = measured.await?;
            tokio::time::sleep(GRACE).await;
            Some(measured)
        }
        None => None,
    };
    wait_reactions_gone(fake).await;
    let records = fake.records();
    let mut result = LarkResult {
        probes,
        burst,
        groups,
        ..measure::whole_run(&records)
    };
    result.reactions_left = fake.live_reactions().len() as u64;
    let replies = result.probes.messages + result.burst.messages;
    result.calls_per_reply = result.calls.values().sum::<u64>() as f64 / replies.max(1) as f64;
    Ok(result)
}

/// Pushes the burst's messages, spread evenly over the ramp.
async fn push_burst(fake: &FakeLark, tag: &str, p: &LarkParams) -> Vec<Pushed> {
    let n = p.conversations.max(1);
    let start = tokio::time::Instant::now();
    let mut pushed = Vec::with_capacity(n);
    for i in 0..p.conversations {
        tokio::time::sleep_until(start + p.ramp.mul_f64(i as f64 / n as f64)).await;
        pushed.push(push(fake, &format!("{tag}_b{i}"), &p.plan));
    }
    pushed
}

/// Pushes one direct message from a sender of its own.
fn push(fake: &FakeLark, id: &str, plan: &TurnPlan) -> Pushed {
    let m = Pushed {
        event_id: format!("ev_lt_{id}"),
        message_id: format!("om_lt_{id}"),
    };
    let envelope = direct_message(&m, &format!("ou_lt_{id}"), &plan.text);
    fake.push_event(envelope, PushOptions::default());
    m
}

/// The fake's sample event, made a p2p chat with `sender` (groups would need a
/// mention).
fn direct_message(m: &Pushed, sender: &str, text: &str) -> Value {
    let chat = format!("oc_lt_{}", m.message_id);
    let mut e = sample_message_event(&m.event_id, &m.message_id, &chat, text);
    e["event"]["message"]["chat_type"] = json!("p2p");
    e["event"]["sender"]["sender_id"]["open_id"] = json!(sender);
    e
}

/// Cards that reached an ended state (done, failed, stopped), counted from the
/// card contents the fake accepted. The count is kept across checks and each
/// check reads only the calls it has not seen, because it runs under the fake's
/// lock on every REST call: a full scan (or parsing every card) there would delay
/// the very acks and calls being timed.
#[derive(Default)]
struct EndedCards {
    scanned: AtomicUsize,
    cards: Mutex<HashSet<String>>,
}

impl EndedCards {
    /// Waits (at most `timeout`) until `n` cards have ended.
    async fn wait_for(&self, fake: &FakeLark, n: usize, timeout: Duration) -> bool {
        fake.wait_until(timeout, |r| self.count(r) >= n)
            .await
            .is_ok()
    }

    fn count(&self, records: &Records) -> usize {
        let mut cards = self.cards.lock().unwrap_or_else(|e| e.into_inner());
        let from = self.scanned.swap(records.calls.len(), Ordering::Relaxed);
        for call in records.calls.iter().skip(from) {
            // A plain card's create or patch, or a CardKit entity's full update.
            let content = call.body["content"]
                .as_str()
                .or_else(|| call.body["card"]["data"].as_str())
                .unwrap_or_default();
            if call.status == 200 && ENDED.iter().any(|t| content.contains(t)) {
                cards.insert(call.path.clone());
            }
        }
        cards.len()
    }
}

/// The header colours of an ended card, as they appear in its JSON.
const ENDED: [&str; 3] = [
    r#""template":"green""#,
    r#""template":"red""#,
    r#""template":"grey""#,
];

/// The THINKING reactions go when the replies end; waits (bounded) for that.
async fn wait_reactions_gone(fake: &FakeLark) {
    let deadline = Instant::now() + REACTIONS_WAIT;
    while !fake.live_reactions().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn wait_connections(fake: &FakeLark, n: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + CONNECT_WAIT;
    while fake.live_connections() < n {
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {} of {n} Lark long connections came up within {CONNECT_WAIT:?} (is WEFT_LARK__BASE_URL {}?)",
            fake.live_connections(),
            fake.base_url()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
