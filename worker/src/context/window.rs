//! Fitting a long conversation into the model's window (docs/agent.md,
//! "Long conversations").
//!
//! The model's view is: the system prompt (plus the stored summary of older
//! turns, if any) and the shown messages after that summary. When it would pass
//! `context.threshold_percent` of the window — or the owner asked for
//! `/compact` — the older turns are summarised by the summariser model, the
//! summary is stored (so later runs reuse it instead of recomputing), and the
//! recent turns (at most `context.recent_percent` of the window, never less than
//! the turn being answered) stay verbatim. Tool outputs of earlier runs shrink to
//! their head. A summariser failure never fails the run: the oldest turns are
//! dropped instead. The stored messages and the event log are never rewritten.

use std::sync::Arc;
use std::time::Duration;

use weft_llm::ChatMessage;
use weft_llm::tokens::{EARLIER_SUMMARY, SUMMARY_INSTRUCTIONS, estimate, estimate_all};
use weft_shared::time::now_ms;
use weft_store::{ClaimedRun, Message, Summary};

use super::files::Files;
use super::to_chat_messages;
use crate::Inner;
use crate::providers::ModelEntry;

/// How full the model's window is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ContextUse {
    pub tokens: u64,
    pub window: u64,
}

/// A run's context, ready for its first step.
pub struct Built {
    pub messages: Vec<ChatMessage>,
    pub used: ContextUse,
    /// The worker's image room taken by the images in `messages`; hold it while
    /// they are.
    pub images_held: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Someone other than the run's person wrote one of its messages (see
    /// [`others_spoke`]).
    pub others_spoke: bool,
}

/// The longest a summariser call may take.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(120);

/// The context for this run, summarising older turns when needed.
pub async fn build(
    inner: &Inner,
    config: &weft_config::Config,
    run: &ClaimedRun,
    model: &ModelEntry,
    system: &str,
) -> weft_store::Result<Built> {
    let store = &inner.deps.store;
    let cfg = &config.context;
    let window = u64::from(model.config.window());
    let budget = window * u64::from(cfg.threshold_percent) / 100;
    // The session's state and only what this worker's copy lacks, in one read
    // (`history`): a run's reads do not grow with the session's length.
    // Deleted meanwhile: nothing of it goes to the model (the run's end finds
    // it gone and writes nothing).
    let (state, all) = inner
        .histories
        .read(store, &run.session_id, cfg.max_messages)
        .await?
        .unwrap_or_default();
    let compact = state.compact_requested && store.take_compact_request(&run.session_id).await?;
    let mut summary = state.summary.clone();
    // The view starts at `all[start]`: older turns summarised or dropped below.
    let mut start = 0;
    let shrink = cfg.old_tool_output_chars;
    let (files, images_held) = super::files::load(
        &inner.deps.blobs,
        &all,
        &model.config,
        &config.attachments,
        &inner.image_room,
    )
    .await;
    let view = |summary: &Option<Summary>, msgs: &[Arc<Message>]| {
        let mut out = to_chat_messages(with_summary(system, summary.as_ref()), msgs, &files);
        shrink_old_outputs(&mut out[1..], msgs, run, shrink);
        out
    };
    let mut messages = view(&summary, &all);
    let mut tokens = estimate_all(&messages);
    if compact || tokens > budget {
        let msgs = &all[start..];
        let recent = window * u64::from(cfg.recent_percent) / 100;
        let cut = cut_point(msgs, run, recent, compact, &files);
        if cut > 0 {
            match summarise(inner, run, model, summary.as_ref(), &msgs[..cut], window).await {
                Ok((text, by)) => {
                    let s = Summary {
                        upto_ord: msgs[cut - 1].ord.clone(),
                        text,
                        messages: summary.as_ref().map_or(0, |s| s.messages) + cut as u64,
                        model: by,
                        created_at: now_ms(),
                    };
                    if let Err(e) = store.put_summary(&run.session_id, &s).await {
                        tracing::warn!(error = %e, "storing the summary failed; it is used for this run only");
                    }
                    metrics::counter!("weft_context_summaries_total").increment(1);
                    summary = Some(s);
                    start += cut;
                    messages = view(&summary, &all[start..]);
                    tokens = estimate_all(&messages);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "summarising failed; the oldest turns are left out instead");
                    metrics::counter!("weft_context_summary_failures_total").increment(1);
                }
            }
        }
    }
    // Still too long (no summariser, or one huge turn): drop the oldest turns,
    // never the one being answered.
    while tokens > budget {
        let msgs = &all[start..];
        let next = cut_point(msgs, run, 0, true, &files);
        let first_turn_end = turn_starts(msgs, run)
            .into_iter()
            .find(|&i| i > 0)
            .unwrap_or(next);
        if first_turn_end == 0 || first_turn_end > next {
            break;
        }
        start += first_turn_end;
        messages = view(&summary, &all[start..]);
        tokens = estimate_all(&messages);
    }
    Ok(Built {
        messages,
        used: ContextUse { tokens, window },
        images_held,
        others_spoke: others_spoke(&all, run),
    })
}

/// Whether someone other than the run's person wrote one of its messages: in
/// a shared chat (a Lark group) the messages that waited behind a run become
/// one run, attributed to the first who waited — so no one's memory may be
/// recalled or written in it.
fn others_spoke(all: &[Arc<Message>], run: &ClaimedRun) -> bool {
    all.iter()
        .filter(|m| m.role == "user" && m.run_id.as_ref() == Some(&run.id))
        .any(|m| m.author_id.as_ref().is_some_and(|a| *a != run.user_id))
}

fn with_summary(system: &str, summary: Option<&Summary>) -> String {
    match summary {
        Some(s) => format!(
            "{system}\n\n# Earlier in this conversation (a summary of {} messages)\n{}",
            s.messages, s.text
        ),
        None => system.to_string(),
    }
}

/// Tool outputs of earlier runs cut to their head (the model saw them then);
/// `view` is the model's view of `msgs`, one for one.
fn shrink_old_outputs(
    view: &mut [ChatMessage],
    msgs: &[Arc<Message>],
    run: &ClaimedRun,
    keep: usize,
) {
    for (out, m) in view.iter_mut().zip(msgs) {
        if let ChatMessage::Tool { content, .. } = out
            && m.run_id.as_ref() != Some(&run.id)
            && content.chars().count() > keep
        {
            *content = shorten(content, keep);
        }
    }
}

/// An earlier run's tool output cut to its head; a pointer to the whole stored
/// output (`read_output`) survives the cut.
fn shorten(content: &str, keep: usize) -> String {
    let head: String = content.chars().take(keep).collect();
    let pointer = content
        .rfind("\n[output truncated:")
        .map(|i| content[i..].trim())
        .filter(|p| p.contains("read_output"));
    match pointer {
        Some(p) => format!("{head}\n[output shortened in this later turn]\n{p}"),
        None => format!("{head}\n[output shortened in this later turn]"),
    }
}

/// Where each turn starts: a user message of a run other than the one before it.
fn turn_starts(msgs: &[Arc<Message>], run: &ClaimedRun) -> Vec<usize> {
    let _ = run;
    (0..msgs.len())
        .filter(|&i| msgs[i].role == "user" && (i == 0 || msgs[i - 1].run_id != msgs[i].run_id))
        .collect()
}

/// The first message to keep verbatim: a turn boundary, with the recent turns
/// under `recent` tokens (all earlier turns with `all_but_last`), never after
/// the start of the run being answered.
fn cut_point(
    msgs: &[Arc<Message>],
    run: &ClaimedRun,
    recent: u64,
    all_but_last: bool,
    files: &Files,
) -> usize {
    let current = msgs
        .iter()
        .position(|m| m.run_id.as_ref() == Some(&run.id))
        .unwrap_or(msgs.len());
    let starts: Vec<usize> = turn_starts(msgs, run)
        .into_iter()
        .filter(|&i| i <= current)
        .collect();
    let Some(&last) = starts.last() else {
        return 0;
    };
    if all_but_last {
        return last;
    }
    let mut cut = last;
    for &start in starts.iter().rev() {
        let tokens = estimate_all(&to_chat_messages(String::new(), &msgs[start..], files));
        if tokens > recent {
            break;
        }
        cut = start;
    }
    cut
}

/// One summariser call over the earlier summary and `older`.
async fn summarise(
    inner: &Inner,
    run: &ClaimedRun,
    model: &ModelEntry,
    earlier: Option<&Summary>,
    older: &[Arc<Message>],
    window: u64,
) -> anyhow::Result<(String, String)> {
    let config = inner.deps.config();
    let by = config
        .context
        .summariser_model
        .as_deref()
        .unwrap_or(&run.model);
    let providers = inner.providers();
    let entry = providers.get(by).unwrap_or(model);
    let lines: Vec<String> = older
        .iter()
        .map(|m| match m.role.as_str() {
            "user" if m.attachments.is_empty() => format!("user: {}", m.content),
            "user" => format!(
                "user: {} [attached: {}]",
                m.content,
                m.attachments
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "tool" => format!(
                "tool {}: {}",
                m.name.as_deref().unwrap_or(""),
                m.content.chars().take(2000).collect::<String>()
            ),
            _ => format!("assistant: {}", m.content),
        })
        .collect();
    // A summary may take a seventh of the session's window, so that after it
    // the conversation has room to grow before the next one — and no more than
    // an eighth of the summariser's own.
    let own = u64::from(entry.config.window());
    let max_tokens = (window / 7).clamp(64, 4096).min(own / 8).max(1) as u32;
    let transcript = fit_transcript(lines, earlier.map(|s| s.text.as_str()), own);
    let (text, _) = entry
        .side_call(
            SUMMARY_INSTRUCTIONS,
            transcript,
            max_tokens,
            SUMMARY_TIMEOUT,
        )
        .await?;
    anyhow::ensure!(!text.trim().is_empty(), "the summariser answered nothing");
    Ok((text.trim().to_string(), entry.config.id.clone()))
}

/// What the summariser is sent: the earlier summary, then as many of the
/// newest `lines` as fit, with the instructions, in three quarters of the
/// summariser's own window (`own`, not the session model's: a small cheap
/// summariser under a large model was sent more than it could read, and
/// refused it); the oldest go first, the newest always stays.
fn fit_transcript(mut lines: Vec<String>, earlier: Option<&str>, own: u64) -> String {
    let earlier = earlier.map(|text| format!("{EARLIER_SUMMARY}{text}"));
    let room = (own.saturating_mul(3) / 4)
        .saturating_sub(estimate(SUMMARY_INSTRUCTIONS))
        .saturating_sub(earlier.as_deref().map_or(0, |l| estimate(l) + 1));
    let mut size: u64 = lines.iter().map(|l| estimate(l) + 1).sum();
    let mut drop = 0;
    while lines.len() - drop > 1 && size > room {
        size -= estimate(&lines[drop]) + 1;
        drop += 1;
    }
    lines.drain(..drop);
    if let Some(earlier) = earlier {
        lines.insert(0, earlier);
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::{fit_transcript, shorten};
    use weft_llm::tokens::{EARLIER_SUMMARY, SUMMARY_INSTRUCTIONS, estimate};

    #[test]
    fn the_transcript_fits_the_summarisers_own_window() {
        // 100 lines of about 13 tokens each: 1,400 tokens in all.
        let lines: Vec<String> = (0..100)
            .map(|i| format!("user: line {i:03} with some words to fill it up"))
            .collect();
        let sent = fit_transcript(lines.clone(), Some("facts so far"), 400);
        let prompt = estimate(&sent) + estimate(SUMMARY_INSTRUCTIONS);
        assert!((200..=300).contains(&prompt), "{prompt} tokens");
        assert!(sent.starts_with(&format!("{EARLIER_SUMMARY}facts so far\n")));
        assert!(sent.ends_with("line 099 with some words to fill it up"));
        assert!(!sent.contains("line 000"), "the oldest went first");
        // A large window takes everything; a tiny one still the newest line.
        assert_eq!(
            fit_transcript(lines.clone(), None, 100_000),
            lines.join("\n")
        );
        assert_eq!(
            fit_transcript(lines, None, 4),
            "user: line 099 with some words to fill it up"
        );
    }

    #[test]
    fn old_outputs_keep_their_head_and_their_pointer() {
        let long = format!(
            "{}\n\n[output truncated: showing 10 of 99 bytes. The rest is stored: call read_output with {{\"id\": \"out_1\", \"offset\": 10}} to read on.]",
            "x".repeat(50)
        );
        let short = shorten(&long, 5);
        assert!(short.starts_with("xxxxx\n[output shortened"), "{short}");
        assert!(
            short.ends_with("to read on.]") && short.contains("out_1"),
            "{short}"
        );
        assert_eq!(
            shorten(&"y".repeat(20), 3),
            "yyy\n[output shortened in this later turn]"
        );
    }
}
