//! `memory.extract`: what a person's finished turns teach the assistant about
//! them, kept as memories (docs/memory.md, "Learning from conversations").
//!
//! **When.** A turn that succeeds with memory on (the instance's switch, the
//! person's, the agent's, and `memory.extract`) is marked in the update that
//! ends it, and arms this job for its session and person
//! `memory.extract_after_secs` (30 s) later — armed, not pushed back: the
//! turns that end within that wait are read together, in one model call, so
//! a conversation of twenty quick turns costs one or two extractions, not
//! twenty (the peers' users' worst complaint is extraction bills). It never
//! delays a reply: the run ended before the job exists.
//!
//! **What it reads.** The person's marked turns in the session (their own
//! words only — in a Lark group a turn may carry others' too — and the
//! replies), newest first up to `memory.extract_max_tokens`, then the
//! profile and the memories most related to them (BM25, at most
//! [`RELATED`]). Older marked turns past the cap are not read, ever.
//!
//! **What it keeps.** The model answers one JSON object: memories to add
//! (`fact` | `episode` | `procedure`), to rewrite (merged or superseded), to
//! forget, and the profile's new text. Each text is checked like any other
//! memory (length, secrets) and dropped when refused; rewrites and forgets
//! reach only this person's unpinned memories; adds stop at
//! `memory.max_per_user`. All of it, and the turns' marks, are written in one
//! transaction ([`Store::keep_learned`]): a worker killed midway leaves the
//! turns marked and nothing stored, and the job's next attempt does it again
//! — never twice.
//!
//! **Failures.** A provider error is retried (three attempts in all) or waits
//! out an outage; a job that gives up clears the marks, so a broken model is
//! not asked about the same turns on every later turn. An answer that is not
//! the JSON asked for is logged and counts as nothing learned (a retry of the
//! same input mostly answers the same prose, and costs as much). Nothing of
//! it ever reaches the chat.
//!
//! **One job, again and again.** A turn that ends while the job runs finds it
//! running and leaves it alone; the job looks for such turns at its end and
//! queues itself again, after the same wait ([`JobContext::run_again_after`]).
//! A turn that ends in the instant between that look and the job's end waits
//! for the session's next turn. A worker runs [`AT_ONCE`] extractions at once.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use weft_llm::{LlmError, Usage};
use weft_shared::api::MemoryKind;
use weft_shared::ids::{SessionId, UserId};
use weft_shared::job::ExtractMemories;
use weft_shared::remember;
use weft_store::{Learned, Memory, PendingTurn, Store, StoreError};

use super::{BackgroundJob, JobContext, JobError};
use crate::Inner;

/// The most related memories shown to the model besides the profile.
const RELATED: usize = 40;
/// The most turns one extraction reads (the token cap usually comes first).
const MAX_TURNS: usize = 50;
/// Extractions one worker runs at once. Each mostly waits on the model (a
/// second or more): with the four slots of `worker.job_concurrency`, 50
/// people chatting at once waited 14 s on average for theirs (BENCHMARKS.md).
pub const AT_ONCE: usize = 16;
/// The longest one extraction call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// The most tokens the model may answer.
const MAX_ANSWER_TOKENS: u32 = 1500;

const INSTRUCTIONS: &str = "You keep the long-term memory of an assistant about ONE person, from their conversations with it. \
You are given the person's current profile, some memories already kept about them, and their newest conversation turns. \
Answer with one JSON object and nothing else:\n\
{\"add\": [{\"kind\": \"fact\" | \"episode\" | \"procedure\", \"text\": \"...\"}], \"update\": [{\"id\": \"mem_...\", \"text\": \"...\"}], \"forget\": [\"mem_...\"], \"profile\": \"...\" or null}\n\
Rules:\n\
- Keep only what will still matter in later conversations: facts about the person (role, team, projects, preferences, the language they want), episodes (notable events and decisions, with their date), procedures (how they want things done).\n\
- Only what the person said or confirmed; never what the assistant merely suggested. Never keep secrets: passwords, API keys, tokens, private keys.\n\
- Do not add what a kept memory already says. When one changed, rewrite it (update); when the person said one is wrong or no longer true, forget it. Merge near-duplicates: rewrite one, forget the others.\n\
- Each text is one short self-contained sentence about the person, in the language they used.\n\
- profile: a short Markdown list of who the person is (role, team, projects, preferences, communication style), rewritten from the current profile and the new turns; null when nothing in it changes.\n\
- When there is nothing worth keeping, answer {\"add\": [], \"update\": [], \"forget\": [], \"profile\": null}.";

pub struct Extract {
    pub(crate) inner: Arc<Inner>,
}

/// The model's answer, as asked for in [`INSTRUCTIONS`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Answer {
    add: Vec<Added>,
    update: Vec<Rewritten>,
    forget: Vec<String>,
    profile: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Added {
    #[serde(default = "fact")]
    kind: MemoryKind,
    text: String,
}

fn fact() -> MemoryKind {
    MemoryKind::Fact
}

#[derive(Debug, Deserialize)]
struct Rewritten {
    id: String,
    text: String,
}

fn retry(what: &str) -> impl Fn(StoreError) -> JobError + '_ {
    move |e| JobError::Retry(format!("{what}: {e}"))
}

impl BackgroundJob for Extract {
    type Payload = ExtractMemories;

    async fn run(&self, cx: JobContext, job: ExtractMemories) -> Result<(), JobError> {
        let store = &cx.store;
        let (session, user) = (
            SessionId(job.session_id.clone()),
            UserId(job.user_id.clone()),
        );
        let cfg = self.inner.deps.config();
        let person_on = match store.memory_enabled(&user).await {
            Ok(on) => on,
            // Deleted with the person: nothing to learn, nowhere to keep it.
            Err(StoreError::NotFound) => return Ok(()),
            Err(e) => return Err(retry("reading the person's switch")(e)),
        };
        if !(cfg.memory.enabled && cfg.memory.extract && person_on) {
            return store
                .clear_memory_pending(&session, &user)
                .await
                .map_err(retry("clearing the turns"));
        }
        let turns = store
            .pending_memory_turns(&session, &user, MAX_TURNS)
            .await
            .map_err(retry("reading the turns"))?;
        if turns.is_empty() {
            return Ok(());
        }
        let memories = store
            .memories(&user, None)
            .await
            .map_err(retry("reading the memories"))?;
        let (read, transcript) = transcript(&turns, cfg.memory.extract_max_tokens);
        let model = cfg.memory.model.as_deref().unwrap_or(&job.model);
        let (answer, usage) = self
            .ask(model, &job.model, &prompt(&memories, &transcript))
            .await?;
        metrics::counter!("weft_memory_extract_tokens_total", "direction" => "input")
            .increment(usage.input);
        metrics::counter!("weft_memory_extract_tokens_total", "direction" => "output")
            .increment(usage.output);
        let (learned, outcome) = match parse(&answer) {
            Some(answer) => (checked(answer, &memories), "done"),
            None => {
                tracing::warn!(session.id = %session, answer = %answer.chars().take(200).collect::<String>(), "the memory model did not answer the JSON asked for; nothing learned from these turns");
                (Learned::default(), "unreadable")
            }
        };
        let kept = store
            .keep_learned(&user, &session, &learned, read, cfg.memory.max_per_user)
            .await
            .map_err(retry("keeping what was learned"))?;
        metrics::counter!("weft_memory_extractions_total", "outcome" => outcome).increment(1);
        metrics::counter!("weft_memories_learned_total").increment(kept.added as u64);
        tracing::info!(session.id = %session, turns = read.len(), added = kept.added, updated = kept.updated, forgotten = kept.forgotten, profile = kept.profile, tokens.input = usage.input, tokens.output = usage.output, "memory extracted");
        // Turns that ended while this ran (the finish left a running job
        // alone): their own extraction, after the same wait.
        let more = store
            .pending_memory_turns(&session, &user, 1)
            .await
            .map_err(retry("reading the turns"))?;
        if !more.is_empty() {
            cx.run_again_after(Duration::from_secs(cfg.memory.extract_after_secs));
        }
        Ok(())
    }

    async fn gave_up(&self, store: &Store, job: ExtractMemories, error: &str) {
        tracing::warn!(session.id = %job.session_id, error = %error, "memory extraction gave up; these turns are not learned from");
        metrics::counter!("weft_memory_extractions_total", "outcome" => "failed").increment(1);
        let (session, user) = (SessionId(job.session_id), UserId(job.user_id));
        if let Err(e) = store.clear_memory_pending(&session, &user).await {
            tracing::warn!(error = %e, "clearing the turns of a failed extraction failed");
        }
    }
}

impl Extract {
    /// One call of `model` (else `fallback`, the session's, when a reload
    /// removed it); the answer's text and usage.
    async fn ask(
        &self,
        model: &str,
        fallback: &str,
        input: &str,
    ) -> Result<(String, Usage), JobError> {
        let providers = self.inner.providers();
        let Some(entry) = providers
            .get(model)
            .or_else(|| providers.get(fallback))
            .or_else(|| providers.default_id().and_then(|id| providers.get(id)))
        else {
            return Err(JobError::Fail("no model is configured".into()));
        };
        match entry
            .side_call(
                INSTRUCTIONS,
                input.to_owned(),
                MAX_ANSWER_TOKENS,
                CALL_TIMEOUT,
            )
            .await
        {
            Ok(answer) => Ok(answer),
            Err(e @ LlmError::Transient { .. }) => Err(JobError::Retry(e.to_string())),
            Err(e) => Err(JobError::Fail(e.to_string())),
        }
    }
}

/// The newest turns that fit in `max_tokens` (at least one), oldest first,
/// as lines for the model; and which turns they are.
fn transcript(turns: &[PendingTurn], max_tokens: u64) -> (&[PendingTurn], String) {
    let mut used = 0u64;
    let mut start = turns.len();
    let mut blocks: Vec<String> = Vec::new();
    for (i, turn) in turns.iter().enumerate().rev() {
        let mut block = String::new();
        for (_, said) in &turn.said {
            block.push_str(&format!("person: {said}\n"));
        }
        block.push_str(&format!("assistant: {}\n", turn.reply));
        let cost = weft_llm::tokens::estimate(&block);
        if used + cost > max_tokens && start < turns.len() {
            break;
        }
        used += cost;
        start = i;
        blocks.push(block);
    }
    blocks.reverse();
    let mut text = blocks.concat();
    if used > max_tokens {
        // One turn alone is over the cap: its end goes.
        let keep = text.len() * max_tokens as usize / used as usize;
        let cut = (0..=keep)
            .rev()
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        text.truncate(cut);
    }
    (&turns[start..], text)
}

/// The model's input: the profile, the related memories, then the turns.
fn prompt(memories: &[Memory], transcript: &str) -> String {
    let profile = memories.iter().find(|m| m.profile);
    let others: Vec<&Memory> = memories.iter().filter(|m| !m.profile).collect();
    let related = weft_knowledge::recall::related(&others, |m| &m.text, transcript, RELATED);
    let mut out = String::from("Current profile:\n");
    out.push_str(profile.map_or("(none yet)", |p| p.text.as_str()));
    out.push_str("\n\nMemories already kept (id, kind, text):\n");
    if related.is_empty() {
        out.push_str("(none related)\n");
    }
    for m in related {
        out.push_str(&format!(
            "- {} ({}{}): {}\n",
            m.id,
            m.kind.as_str(),
            if m.pinned { ", pinned" } else { "" },
            m.text.replace('\n', " ")
        ));
    }
    out.push_str("\nNewest conversation turns (oldest first):\n");
    out.push_str(transcript);
    out
}

/// The JSON object in `answer` (a model may wrap it in a code fence or a
/// sentence).
fn parse(answer: &str) -> Option<Answer> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    serde_json::from_str(answer.get(start..=end)?).ok()
}

/// What of `answer` may be kept: texts a memory may hold, rewrites and
/// forgets of memories the model was shown (by id, this person's).
fn checked(answer: Answer, memories: &[Memory]) -> Learned {
    let ok = |text: &str| match remember::check(text) {
        Ok(text) => Some(text.to_owned()),
        Err(e) => {
            tracing::info!(reason = %e, "the memory model proposed a memory that is refused");
            None
        }
    };
    let known = |id: &str| memories.iter().any(|m| m.id == id);
    Learned {
        add: answer
            .add
            .into_iter()
            .filter_map(|a| Some((a.kind, ok(&a.text)?)))
            .filter(|(_, text)| !memories.iter().any(|m| m.text.trim() == text.as_str()))
            .collect(),
        update: answer
            .update
            .into_iter()
            .filter(|u| known(&u.id))
            .filter_map(|u| Some((u.id, ok(&u.text)?)))
            .collect(),
        forget: answer.forget.into_iter().filter(|id| known(id)).collect(),
        profile: answer
            .profile
            .filter(|p| !p.trim().is_empty())
            .and_then(|p| ok(&p))
            .filter(|p| {
                memories
                    .iter()
                    .find(|m| m.profile)
                    .is_none_or(|m| m.text.trim() != p)
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_shared::ids::RunId;

    fn turn(said: &str, reply: &str) -> PendingTurn {
        PendingTurn {
            run_id: RunId(format!("run_{said}")),
            finished_at: 0,
            said: vec![("msg".into(), said.into())],
            reply: reply.into(),
        }
    }

    fn memory(id: &str, text: &str) -> Memory {
        Memory {
            id: id.into(),
            user_id: UserId("u".into()),
            kind: MemoryKind::Fact,
            text: text.into(),
            pinned: false,
            profile: false,
            source_session_id: None,
            source_message_id: None,
            created_at: 0,
            updated_at: 0,
            last_used_at: None,
        }
    }

    #[test]
    fn the_newest_turns_within_the_cap_are_read_oldest_first() {
        let turns = [
            turn(&"old ".repeat(200), "ok"),
            turn("I am on the payments team", "noted"),
            turn("I prefer answers in Chinese", "好的"),
        ];
        let (read, text) = transcript(&turns, 60);
        assert_eq!(read.len(), 2, "{text}");
        assert!(
            text.starts_with("person: I am on the payments team\nassistant: noted\n"),
            "{text}"
        );
        assert!(
            text.ends_with("person: I prefer answers in Chinese\nassistant: 好的\n"),
            "{text}"
        );
        // One turn over the cap alone is read, cut.
        let (read, text) = transcript(&turns[..1], 100);
        assert_eq!(read.len(), 1);
        assert!(weft_llm::tokens::estimate(&text) <= 110, "{text}");
    }

    #[test]
    fn answers_in_fences_or_prose_are_read_and_others_learn_nothing() {
        let fenced = "Here:\n```json\n{\"add\": [{\"kind\": \"procedure\", \"text\": \"wants diffs, not whole files\"}], \"profile\": null}\n```";
        let a = parse(fenced).expect("fenced JSON");
        assert_eq!(a.add.len(), 1);
        assert_eq!(a.add[0].kind, MemoryKind::Procedure);
        assert!(parse("You said: person: hello").is_none());
        assert!(parse("{not json}").is_none());
    }

    #[test]
    fn secrets_unknown_ids_and_repeats_are_dropped() {
        let kept = [memory("mem_1", "works on the payments team")];
        let answer: Answer = serde_json::from_str(
            r#"{"add": [
                    {"kind": "fact", "text": "my password is hunter2hunter2"},
                    {"kind": "fact", "text": "works on the payments team"},
                    {"text": "prefers answers in Chinese"}
                ],
                "update": [{"id": "mem_1", "text": "leads the payments team"}, {"id": "mem_someone_else", "text": "x"}],
                "forget": ["mem_9"],
                "profile": "- payments lead"}"#,
        )
        .unwrap();
        let learned = checked(answer, &kept);
        assert_eq!(
            learned.add,
            [(MemoryKind::Fact, "prefers answers in Chinese".to_string())]
        );
        assert_eq!(
            learned.update,
            [("mem_1".to_string(), "leads the payments team".to_string())]
        );
        assert!(learned.forget.is_empty());
        assert_eq!(learned.profile.as_deref(), Some("- payments lead"));
    }
}
