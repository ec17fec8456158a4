//! The `lark` scenario's **groups** phase (issue 21): `groups` group chats with
//! `speakers` people each, every one sending `messages` @mentions of the bot,
//! all pushed spread over `spread` — 20 × 5 × 10 = 1,000 messages in 10 s by
//! default, so each group's messages overlap and fold into follow-up runs
//! (multitask `enqueue`), and the acks go out while the workers are busiest.
//!
//! Whether each message was answered once cannot be read from the fake alone
//! (a folded message gets no card of its own: its run's card replies to the
//! run's newest message), so the verdict joins the fake's cards with the
//! database the stack wrote (read-only; a Weft started by hand is checked from
//! the fake's acks only). A message acked but never stored was refused on
//! purpose — its chat's line on that gateway was full
//! (`lark.queued_messages_per_chat`, 32: one `weft up` gets all 50 of a group's
//! messages in 10 s) — and is counted apart from the lost. Each message's
//! [`MessageFate`] is kept — who sent it,
//! its stored copies, its runs with their owner, status and cards — and the
//! counts are derived from those: lost, duplicated, and runs not owned by
//! their speaker (a run is the Weft user's who sent its first message —
//! `lark:<open_id>` — whoever else's messages folded into it).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::Row;
use weft_lark::fake::{
    AttemptOutcome, FakeLark, PushOptions, Records, SentMessage, sample_message_event,
};

use super::Pushed;
use super::measure::is_final;
use crate::report::lark::{LarkGroups, MessageFate, RunFate};
use crate::stats::Summary;
use crate::turn::TurnPlan;

/// What the groups phase sends.
#[derive(Debug, Clone)]
pub struct GroupParams {
    pub groups: usize,
    pub speakers: usize,
    /// Messages each speaker sends.
    pub messages: usize,
    /// Every message is pushed within this long, evenly.
    pub spread: Duration,
    pub plan: TurnPlan,
}

/// One pushed group message and who sent it.
#[derive(Debug, Clone)]
pub struct GroupMessage {
    pub pushed: Pushed,
    pub group: usize,
    /// The speaker's Lark `open_id`.
    pub speaker: String,
}

/// Pushes every group message, spread evenly over `p.spread`, round by round
/// (each speaker's n-th message, group after group).
pub async fn push(fake: &FakeLark, tag: &str, p: &GroupParams) -> Vec<GroupMessage> {
    let total = (p.groups * p.speakers * p.messages).max(1);
    let start = tokio::time::Instant::now();
    let bot = fake.config().bot_open_id.clone();
    let mut out = Vec::with_capacity(total);
    for m in 0..p.messages {
        for g in 0..p.groups {
            for s in 0..p.speakers {
                tokio::time::sleep_until(start + p.spread.mul_f64(out.len() as f64 / total as f64))
                    .await;
                let id = format!("{tag}_g{g}s{s}m{m}");
                let pushed = Pushed {
                    event_id: format!("ev_lt_{id}"),
                    message_id: format!("om_lt_{id}"),
                };
                let speaker = format!("ou_lt_{tag}_g{g}s{s}");
                let chat = format!("oc_lt_{tag}_g{g}");
                let text = format!("@_user_1 {}", p.plan.text);
                let mut e =
                    sample_message_event(&pushed.event_id, &pushed.message_id, &chat, &text);
                e["event"]["sender"]["sender_id"]["open_id"] = json!(speaker);
                e["event"]["message"]["mentions"] = json!([{
                    "key": "@_user_1", "name": "Weft",
                    "id": {"open_id": bot, "union_id": "", "user_id": ""},
                }]);
                fake.push_event(e, PushOptions::default());
                out.push(GroupMessage {
                    pushed,
                    group: g,
                    speaker,
                });
            }
        }
    }
    out
}

/// Waits (at most `timeout`) for every message to settle, then measures. With
/// no `database_url` only the acks are measured.
pub async fn measure(
    fake: &FakeLark,
    database_url: Option<&str>,
    p: &GroupParams,
    sent: &[GroupMessage],
    timeout: Duration,
) -> anyhow::Result<LarkGroups> {
    let started = Instant::now();
    let mut out = LarkGroups {
        groups: p.groups as u64,
        speakers: p.speakers as u64,
        messages: sent.len() as u64,
        ..LarkGroups::default()
    };
    if let Some(url) = database_url {
        sqlx::any::install_default_drivers();
        let db = sqlx::any::AnyPoolOptions::new()
            .max_connections(1)
            .connect(url)
            .await?;
        loop {
            let rows = stored(&db).await?;
            let over = started.elapsed() >= timeout;
            // Read the fake (under its lock) only once the database is done.
            if over || rows.all_ended(sent) {
                let fates = rows.fates(fake, &fake.records(), sent);
                let settled = fates.iter().all(MessageFate::settled);
                out.fates = fates;
                if settled || over {
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let pending = sqlx::query("select count(*) as n from lark_inbound where state = 'pending'")
            .fetch_one(&db)
            .await?;
        out.pending = pending.try_get::<i64, _>("n")? as u64;
        db.close().await;
        out.checked = true;
        let mut runs = BTreeMap::new();
        for f in &out.fates {
            for r in &f.runs {
                runs.insert(r.run_id.as_str(), r.status.as_str());
            }
        }
        out.runs = runs.len() as u64;
        out.failed_runs = runs.values().filter(|s| **s != "succeeded").count() as u64;
        let mut misowned = std::collections::BTreeSet::new();
        for f in &out.fates {
            misowned.extend(f.runs.iter().filter(|r| r.misowned()).map(|r| &r.run_id));
        }
        out.misowned_runs = misowned.len() as u64;
        out.lost = out.fates.iter().filter(|f| f.lost()).count() as u64;
        out.refused = out.fates.iter().filter(|f| f.refused()).count() as u64;
        out.duplicated = out.fates.iter().filter(|f| f.duplicated()).count() as u64;
    }
    out.span_s = started.elapsed().as_secs_f64();
    acks(&mut out, &fake.records(), sent);
    Ok(out)
}

fn acks(out: &mut LarkGroups, records: &Records, sent: &[GroupMessage]) {
    let mut ack = Vec::with_capacity(sent.len());
    for m in sent {
        let attempts = records.attempts_of(&m.pushed.event_id);
        match attempts.iter().find(|a| a.attempt == 1).map(|a| &a.outcome) {
            Some(AttemptOutcome::Acked(a)) => {
                let first = attempts[0].pushed_at;
                ack.push(a.at.saturating_duration_since(first).as_micros() as i64);
            }
            _ => out.redelivered += 1,
        }
        if !records.acked(&m.pushed.event_id) {
            out.unacked += 1;
        }
    }
    out.ack_ms = Summary::of_micros(&mut ack);
}

/// The group messages' rows in the database.
#[derive(Default)]
struct Stored {
    copies: BTreeMap<String, u32>,
    /// Message ids in the inbox.
    kept: std::collections::BTreeSet<String>,
    /// Message → its runs, as (run, status, owner).
    runs_of: BTreeMap<String, Vec<(String, String, String)>>,
    /// Run → its messages, in order.
    messages_of: BTreeMap<String, Vec<String>>,
}

async fn stored(db: &sqlx::AnyPool) -> anyhow::Result<Stored> {
    let rows = sqlx::query(
        "select m.lark_message_id, m.run_id, r.status, u.username
         from messages m
         left join runs r on r.id = m.run_id
         left join users u on u.id = r.user_id
         where m.role = 'user' and m.lark_message_id is not null
         order by m.ord",
    )
    .fetch_all(db)
    .await?;
    let mut out = Stored::default();
    for row in sqlx::query("select message_id from lark_inbound")
        .fetch_all(db)
        .await?
    {
        out.kept.insert(row.try_get("message_id")?);
    }
    for row in &rows {
        let message: String = row.try_get("lark_message_id")?;
        *out.copies.entry(message.clone()).or_default() += 1;
        if let Some(run) = row.try_get::<Option<String>, _>("run_id")? {
            let status = row
                .try_get::<Option<String>, _>("status")?
                .unwrap_or_default();
            let owner = row
                .try_get::<Option<String>, _>("username")?
                .unwrap_or_default();
            out.runs_of
                .entry(message.clone())
                .or_default()
                .push((run.clone(), status, owner));
            out.messages_of.entry(run).or_default().push(message);
        }
    }
    Ok(out)
}

/// The replies the fake holds to any of `messages`.
fn replies_to<'a>(cards: &'a [SentMessage], messages: &[String]) -> Vec<&'a SentMessage> {
    cards
        .iter()
        .filter(|c| !c.recalled && messages.contains(&c.reply_to))
        .collect()
}

impl Stored {
    /// Every message kept is stored and each of its runs over (one not kept
    /// may have been refused: the fake's acks tell).
    fn all_ended(&self, sent: &[GroupMessage]) -> bool {
        sent.iter().all(|m| {
            !self.kept.contains(&m.pushed.message_id)
                || self.runs_of.get(&m.pushed.message_id).is_some_and(|runs| {
                    runs.iter()
                        .all(|(_, s, _)| matches!(s.as_str(), "succeeded" | "failed" | "cancelled"))
                })
        })
    }

    /// Every message's fate, with the cards the fake holds for its runs.
    fn fates(&self, fake: &FakeLark, records: &Records, sent: &[GroupMessage]) -> Vec<MessageFate> {
        let cards = fake.sent_messages();
        let speaker_of: BTreeMap<&str, &str> = sent
            .iter()
            .map(|m| (m.pushed.message_id.as_str(), m.speaker.as_str()))
            .collect();
        sent.iter()
            .map(|m| {
                let id = &m.pushed.message_id;
                let runs = self
                    .runs_of
                    .get(id)
                    .into_iter()
                    .flatten()
                    .map(|(run, status, owner)| {
                        let messages = &self.messages_of[run];
                        let run_cards = replies_to(&cards, messages);
                        let first = messages.first().map(String::as_str).unwrap_or_default();
                        RunFate {
                            run_id: run.clone(),
                            status: status.clone(),
                            owner: owner.clone(),
                            first_speaker: speaker_of
                                .get(first)
                                .copied()
                                .unwrap_or_default()
                                .to_owned(),
                            cards: run_cards.len() as u32,
                            ended_cards: run_cards.iter().filter(|c| is_final(c)).count() as u32,
                        }
                    })
                    .collect();
                MessageFate {
                    message_id: id.clone(),
                    group: m.group,
                    speaker: m.speaker.clone(),
                    stored: self.copies.get(id).copied().unwrap_or(0),
                    runs,
                    replies: replies_to(&cards, std::slice::from_ref(id)).len() as u32,
                    kept: self.kept.contains(id),
                    acked: records.acked(&m.pushed.event_id),
                }
            })
            .collect()
    }
}
