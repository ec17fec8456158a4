//! The `lark` scenario's numbers, computed after the fact from what the fake Lark
//! recorded: every push attempt (with when it went out and when its ack came
//! back), every REST call (with when it arrived and its body), and every message
//! the bot sent as it is now. One clock (the fake's) times everything, so nothing
//! here depends on how quickly the load tester noticed.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::Value;
use weft_lark::card::BODY_ELEMENT_ID;
use weft_lark::fake::{AttemptOutcome, PushAttempt, Records, RestCall, SentMessage};

use super::Pushed;
use crate::report::lark::{LarkPhase, LarkResult};
use crate::stats::{Recorder, Summary};
use crate::turn::TurnPlan;

/// Lark's rate-limit answer: HTTP 429 with code 99991400.
const RATE_LIMITED: i64 = 99991400;
const TOKEN_PATH: &str = "/open-apis/auth/v3/tenant_access_token/internal";

/// A card showing an ended reply (done, failed or stopped).
pub fn is_final(m: &SentMessage) -> bool {
    matches!(template(&m.content), "green" | "red" | "grey")
}

fn template(card: &Value) -> &str {
    card["header"]["template"].as_str().unwrap_or_default()
}

/// The streamed reply text of a card document.
fn reply_body(card: &Value) -> &str {
    card["body"]["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["element_id"] == BODY_ELEMENT_ID)
        .and_then(|e| e["content"].as_str())
        .unwrap_or_default()
}

/// The card a create (`reply`) or `PATCH` call carried, if any.
fn card_of(call: &RestCall) -> Option<Value> {
    serde_json::from_str(call.body["content"].as_str()?).ok()
}

/// Successful calls by path, oldest first.
fn by_path(records: &Records) -> HashMap<&str, Vec<&RestCall>> {
    let mut map: HashMap<&str, Vec<&RestCall>> = HashMap::new();
    for c in records.calls.iter().filter(|c| c.status == 200) {
        map.entry(c.path.as_str()).or_default().push(c);
    }
    map
}

fn since(at: Instant, from: Instant) -> i64 {
    at.saturating_duration_since(from).as_micros() as i64
}

/// Per-message times in microseconds after the push, and when things happened.
#[derive(Default)]
struct Times {
    ack: Vec<i64>,
    reaction: Vec<i64>,
    card: Vec<i64>,
    text: Vec<i64>,
    overhead: Vec<i64>,
    done: Vec<i64>,
    first_push: Option<Instant>,
    last_final: Option<Instant>,
}

/// Measures the messages `pushed` of one phase, whose replies follow `plan`.
pub fn phase(
    records: &Records,
    sent: &[SentMessage],
    pushed: &[Pushed],
    plan: &TurnPlan,
) -> LarkPhase {
    let calls = by_path(records);
    let creates = entity_creates(records);
    let mut times = Times::default();
    let mut made = 0usize;
    let mut out = LarkPhase {
        messages: pushed.len() as u64,
        ..LarkPhase::default()
    };
    for m in pushed {
        let cards: Vec<&SentMessage> = sent
            .iter()
            .filter(|s| s.reply_to == m.message_id && !s.recalled)
            .collect();
        made += calls_for(records, &m.message_id, &cards, &creates);
        match cards.as_slice() {
            [] => out.lost += 1,
            [card] if !is_final(card) => out.lost += 1,
            [card]
                if template(&card.content) == "green"
                    && reply_body(&card.content) == plan.expect =>
            {
                out.complete += 1
            }
            [_] => out.wrong += 1,
            _ => out.duplicated += 1,
        }
        match records
            .attempts_of(&m.event_id)
            .iter()
            .find(|a| a.attempt == 1)
        {
            Some(first) => {
                if !matches!(first.outcome, AttemptOutcome::Acked(_)) {
                    out.redelivered += 1;
                }
                time_one(&mut times, first, (records, &calls), m, &cards, plan);
            }
            None => tracing::warn!(event.id = %m.event_id, "the fake has no record of a push"),
        }
    }
    out.calls_per_reply = made as f64 / pushed.len().max(1) as f64;
    out.ack_ms = Summary::of_micros(&mut times.ack);
    out.reaction_ms = Summary::of_micros(&mut times.reaction);
    out.card_ms = Summary::of_micros(&mut times.card);
    out.first_text_ms = Summary::of_micros(&mut times.text);
    out.first_text_overhead_ms = Summary::of_micros(&mut times.overhead);
    out.final_ms = Summary::of_micros(&mut times.done);
    if let (Some(f), Some(l)) = (times.first_push, times.last_final) {
        out.span_s = l.saturating_duration_since(f).as_secs_f64();
    }
    out
}

/// Adds one message's times: its first delivery's ack, its reaction, and the
/// first card contents showing some, then all, of the reply.
fn time_one(
    times: &mut Times,
    first: &PushAttempt,
    (records, calls): (&Records, &HashMap<&str, Vec<&RestCall>>),
    m: &Pushed,
    cards: &[&SentMessage],
    plan: &TurnPlan,
) {
    let t0 = first.pushed_at;
    times.first_push = Some(times.first_push.map_or(t0, |f| f.min(t0)));
    if let AttemptOutcome::Acked(ack) = &first.outcome {
        times.ack.push(since(ack.at, t0));
    }
    let reactions = format!("/open-apis/im/v1/messages/{}/reactions", m.message_id);
    if let Some(c) = calls.get(reactions.as_str()).and_then(|v| v.first()) {
        times.reaction.push(since(c.at, t0));
    }
    let contents = card_calls(records, calls, &m.message_id, cards);
    if let Some((at, _)) = contents.first() {
        times.card.push(since(*at, t0));
    }
    let partial = |body: &str| !body.trim().is_empty() && plan.expect.starts_with(body.trim());
    if let Some(at) = first_showing(&contents, partial) {
        times.text.push(since(at, t0));
        times.overhead.push(Recorder::signed(
            at.saturating_duration_since(t0),
            plan.ttft,
        ));
    }
    if let Some(at) = first_showing(&contents, |body| body == plan.expect) {
        times.done.push(since(at, t0));
        times.last_final = Some(times.last_final.map_or(at, |l| l.max(at)));
    }
}

/// Every card document the reply cards of `message_id` showed, with when.
/// A plain card shows what its create (`…/{message_id}/reply`) and each patch
/// carried. A CardKit entity shows nothing before the message referencing it
/// is sent, then the document it was created with, each streamed text, and
/// each full update.
fn card_calls(
    records: &Records,
    calls: &HashMap<&str, Vec<&RestCall>>,
    message_id: &str,
    cards: &[&SentMessage],
) -> Vec<(Instant, Value)> {
    let create = format!("/open-apis/im/v1/messages/{message_id}/reply");
    let patches = cards
        .iter()
        .map(|c| format!("/open-apis/im/v1/messages/{}", c.message_id));
    let mut out: Vec<(Instant, Value)> = std::iter::once(create.clone())
        .chain(patches)
        .filter_map(|path| calls.get(path.as_str()))
        .flatten()
        .filter(|c| matches!(c.method.as_str(), "POST" | "PATCH"))
        .filter_map(|c| Some((c.at, card_of(c)?)))
        .collect();
    for card_id in cards.iter().filter_map(|c| c.card_id.as_deref()) {
        let reference = calls
            .get(create.as_str())
            .into_iter()
            .flatten()
            .find(|c| card_of(c).is_some_and(|content| content["data"]["card_id"] == card_id));
        let Some(sent) = reference else {
            continue;
        };
        // Nothing shows before the message referencing the entity is sent.
        let docs = records.entity_documents(card_id);
        let shown_at_send = docs.iter().rev().find(|(at, _)| *at <= sent.at).cloned();
        out.extend(shown_at_send.map(|(_, doc)| (sent.at, doc)));
        out.extend(docs.into_iter().filter(|(at, _)| *at > sent.at));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

/// The calls made for message `message_id` and its reply `cards`: anything on
/// the message (reaction, reply), on a card's message (patch) or on a card's
/// entity (its create and updates).
fn calls_for(
    records: &Records,
    message_id: &str,
    cards: &[&SentMessage],
    creates: &HashMap<String, &RestCall>,
) -> usize {
    let under = format!("/open-apis/im/v1/messages/{message_id}/");
    let mut card_paths = Vec::new();
    let mut entities = 0;
    for card in cards {
        card_paths.push(format!("/open-apis/im/v1/messages/{}", card.message_id));
        if let Some(id) = card.card_id.as_ref().filter(|id| creates.contains_key(*id)) {
            card_paths.push(format!("/open-apis/cardkit/v1/cards/{id}"));
            entities += 1;
        }
    }
    let ours = |path: &str| {
        path.starts_with(&under)
            || card_paths.iter().any(|p| {
                path.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    };
    // Each entity's create (`POST …/cards`) names no card in its path.
    entities + records.calls.iter().filter(|c| ours(&c.path)).count()
}

/// Successful CardKit creates by the card id they answered.
fn entity_creates(records: &Records) -> HashMap<String, &RestCall> {
    records
        .calls
        .iter()
        .filter(|c| {
            c.status == 200 && c.method == "POST" && c.path == "/open-apis/cardkit/v1/cards"
        })
        .filter_map(|c| Some((c.answer["data"]["card_id"].as_str()?.to_owned(), c)))
        .collect()
}

/// When the first card content whose reply text satisfies `shows` arrived.
fn first_showing(contents: &[(Instant, Value)], shows: impl Fn(&str) -> bool) -> Option<Instant> {
    contents
        .iter()
        .find(|(_, card)| shows(reply_body(card)))
        .map(|(at, _)| *at)
}

/// What is measured over the whole run rather than per phase.
pub fn whole_run(records: &Records) -> LarkResult {
    let app_calls: Vec<&RestCall> = records
        .calls
        .iter()
        .filter(|c| c.path != TOKEN_PATH)
        .collect();
    let mut calls = BTreeMap::new();
    for c in &app_calls {
        *calls.entry(kind(c)).or_insert(0) += 1;
    }
    LarkResult {
        rate_limited_calls: app_calls
            .iter()
            .filter(|c| c.status == 429 || c.code == RATE_LIMITED)
            .count() as u64,
        peak_calls_per_s: peak_per_second(app_calls.iter().map(|c| c.at).collect()),
        calls,
        ..LarkResult::default()
    }
}

/// A REST call's kind: its method and path with the ids taken out.
fn kind(c: &RestCall) -> String {
    let mut previous = "";
    let parts: Vec<&str> = c
        .path
        .trim_start_matches("/open-apis/")
        .split('/')
        .map(|part| {
            let is_id = matches!(previous, "messages" | "reactions" | "cards" | "elements");
            previous = part;
            if is_id { "{id}" } else { part }
        })
        .collect();
    format!("{} {}", c.method, parts.join("/"))
}

/// The most instants in any window of one second.
fn peak_per_second(mut at: Vec<Instant>) -> u64 {
    at.sort_unstable();
    let mut start = 0;
    let mut peak = 0;
    for end in 0..at.len() {
        while at[end].duration_since(at[start]) >= Duration::from_secs(1) {
            start += 1;
        }
        peak = peak.max(end + 1 - start);
    }
    peak as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_counts_the_busiest_second() {
        let t = Instant::now();
        let ms = |n: u64| t + Duration::from_millis(n);
        // 500, 999, 1000 and 1200 fall in one second; 0 and 1000 do not (as
        // the fake counts: a call a whole second old has left the window).
        assert_eq!(
            peak_per_second(vec![ms(0), ms(500), ms(999), ms(1000), ms(1200)]),
            4
        );
        assert_eq!(peak_per_second(vec![ms(1000), ms(0), ms(2000)]), 1);
        assert_eq!(peak_per_second(Vec::new()), 0);
    }
}
