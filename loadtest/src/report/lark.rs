//! The `lark` scenario's results, as the report holds them: the probes' and the
//! burst's numbers ([`LarkPhase`]), the whole run's ([`LarkResult`]), the groups
//! phase's ([`LarkGroups`], with each message's [`MessageFate`]) and the lines
//! each adds to the table. They are computed in `scenario::lark` (`measure` and
//! `groups`); they live here so the report does not depend on the scenario that
//! fills it in.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// One phase's messages, from push to final card.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LarkPhase {
    pub messages: u64,
    /// Push → the fake reads a valid ack (first delivery).
    pub ack_ms: Summary,
    /// Push → the THINKING reaction call reaches the fake (the gateway's share:
    /// dedupe, user, session, then the call).
    pub reaction_ms: Summary,
    /// Push → the reply card first shows (send, queue, a worker's claim and its
    /// first calls; the card comes with its first content, or "…" when a reply
    /// shows nothing for a second).
    #[serde(default)]
    pub card_ms: Summary,
    /// Push → the first card content showing reply text reaches the fake.
    pub first_text_ms: Summary,
    /// The same, minus the TTFT the mock model was scripted to wait.
    pub first_text_overhead_ms: Summary,
    /// Push → the card's final content (green, the whole reply) reaches the fake.
    pub final_ms: Summary,
    /// First push → last final content, seconds.
    pub span_s: f64,
    /// Exactly one card, ending with the whole reply.
    pub complete: u64,
    /// No card, or a card that never showed an ended reply.
    pub lost: u64,
    /// More than one card for one message.
    pub duplicated: u64,
    /// One card that ended, but not with the scripted reply.
    pub wrong: u64,
    /// Messages whose first delivery was not acked (the fake redelivered them).
    pub redelivered: u64,
    /// Lark calls made for each message, on average: its reaction, its reply
    /// cards (sends, patches, CardKit calls) and the reaction's removal.
    #[serde(default)]
    pub calls_per_reply: f64,
}

/// The whole run (the `lark` section of [`super::Report`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LarkResult {
    pub probes: LarkPhase,
    pub burst: LarkPhase,
    /// REST calls answered 429 / 99991400 (the bot outran Lark's limits).
    pub rate_limited_calls: u64,
    /// The most app-wide calls the fake saw in any one-second window (Lark: 50).
    pub peak_calls_per_s: u64,
    /// Authorised REST calls by kind.
    pub calls: BTreeMap<String, u64>,
    /// Authorised REST calls (the token's aside) per message of both phases.
    #[serde(default)]
    pub calls_per_reply: f64,
    /// THINKING reactions still on messages at the end (each should go when its
    /// reply ends).
    pub reactions_left: u64,
    /// `lark.calls_per_second` of each Weft process (0: not started here, unknown).
    pub calls_per_second_per_process: u32,
    /// Group chats with several speakers (issue 21).
    #[serde(default)]
    pub groups: Option<LarkGroups>,
}

impl LarkResult {
    /// The people-facing lines of [`super::Report::table`].
    pub fn write_table(&self, t: &mut String) {
        let _ = writeln!(
            t,
            "{:<30}{:>9}{:>9}{:>9}{:>9}{:>10}",
            "ms after the push", "p50", "p90", "p99", "max", "n"
        );
        for (name, phase) in [("probes", &self.probes), ("burst", &self.burst)] {
            for (what, s) in [
                ("ack", &phase.ack_ms),
                ("THINKING reaction", &phase.reaction_ms),
                ("card created", &phase.card_ms),
                ("first card text", &phase.first_text_ms),
                ("first text − mock TTFT", &phase.first_text_overhead_ms),
                ("final card", &phase.final_ms),
            ] {
                let _ = writeln!(
                    t,
                    "{:<30}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>10}",
                    format!("{name}: {what}"),
                    s.p50,
                    s.p90,
                    s.p99,
                    s.max,
                    s.count
                );
            }
            let _ = writeln!(
                t,
                "{name}: {} messages, {} complete, lost {}, duplicated {}, wrong {}, redelivered {}, last card {:.1} s after the first push, {:.2} Lark calls per reply",
                phase.messages,
                phase.complete,
                phase.lost,
                phase.duplicated,
                phase.wrong,
                phase.redelivered,
                phase.span_s,
                phase.calls_per_reply
            );
        }
        if let Some(g) = &self.groups {
            g.write_table(t);
        }
        let calls: Vec<String> = self.calls.iter().map(|(k, v)| format!("{k}={v}")).collect();
        // 0: a weft started by hand, whose setting the load tester does not know.
        let share = match self.calls_per_second_per_process {
            0 => String::new(),
            n => format!(", {n}/s per process"),
        };
        let _ = writeln!(
            t,
            "lark calls: {:.2} per reply  rate-limited {}  peak {}/s (limit 50{share})  reactions left {}\n  {}",
            self.calls_per_reply,
            self.rate_limited_calls,
            self.peak_calls_per_s,
            self.reactions_left,
            calls.join("  ")
        );
    }
}

/// The groups phase's numbers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LarkGroups {
    pub groups: u64,
    pub speakers: u64,
    pub messages: u64,
    /// Push → valid ack of the first delivery.
    pub ack_ms: Summary,
    /// Messages whose first delivery was not acked in time.
    pub redelivered: u64,
    /// Messages acked on no delivery at all.
    pub unacked: u64,
    /// Checked against the database (false: a Weft started by hand).
    pub checked: bool,
    pub runs: u64,
    pub failed_runs: u64,
    /// Not answered (once) when the wait ended: see `pending`.
    pub lost: u64,
    /// Of those, still stored and waiting in the inbox at the end (slow, not
    /// gone: answered after the report).
    pub pending: u64,
    /// Acked without being kept: their chat's line on that gateway was full
    /// (`lark.queued_messages_per_chat`); the chat was told once.
    pub refused: u64,
    pub duplicated: u64,
    /// Runs not owned by the speaker of their first message.
    #[serde(default)]
    pub misowned_runs: u64,
    /// First push → everything settled (or the timeout), seconds.
    pub span_s: f64,
    #[serde(skip)]
    pub fates: Vec<MessageFate>,
}

impl LarkGroups {
    /// The groups phase's lines of the report table.
    pub fn write_table(&self, t: &mut String) {
        let a = &self.ack_ms;
        let _ = writeln!(
            t,
            "{:<30}{:>9.2}{:>9.2}{:>9.2}{:>9.2}{:>10}",
            "groups: ack", a.p50, a.p90, a.p99, a.max, a.count
        );
        let verdict = if self.checked {
            format!(
                "{} runs ({} not succeeded, {} not their speaker's), lost {} ({} still pending in the inbox), duplicated {}, refused as busy {}",
                self.runs,
                self.failed_runs,
                self.misowned_runs,
                self.lost,
                self.pending,
                self.duplicated,
                self.refused
            )
        } else {
            "not checked (no database: a weft started by hand)".to_owned()
        };
        let _ = writeln!(
            t,
            "groups: {} messages in {} groups × {} speakers: {verdict}; redelivered {}, never acked {}, settled {:.1} s after the last push",
            self.messages, self.groups, self.speakers, self.redelivered, self.unacked, self.span_s
        );
    }
}

/// What became of one message, from the database and the fake.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessageFate {
    pub message_id: String,
    pub group: usize,
    pub speaker: String,
    /// User messages stored for it.
    pub stored: u32,
    pub runs: Vec<RunFate>,
    /// Cards and notices in reply to this very message.
    pub replies: u32,
    /// In the inbox (stored before its ack). Not there but acked: refused on
    /// purpose, its chat's line being full (`lark.queued_messages_per_chat`).
    pub kept: bool,
    pub acked: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunFate {
    pub run_id: String,
    pub status: String,
    /// The run owner's username (`lark:<open_id>` for a Lark sender).
    pub owner: String,
    /// Who sent the run's first message (its Lark `open_id`): whose the run is.
    pub first_speaker: String,
    /// Cards in reply to any of the run's messages, and how many show an end.
    pub cards: u32,
    pub ended_cards: u32,
}

impl RunFate {
    pub fn misowned(&self) -> bool {
        self.owner != format!("lark:{}", self.first_speaker)
    }
}

impl MessageFate {
    /// Refused on purpose: acked without being kept, as its chat's line was
    /// full (told so once, in the chat).
    pub fn refused(&self) -> bool {
        !self.kept && self.acked
    }

    /// Not answered: never stored, in no run, or a run that did not succeed
    /// with an ended card (a refused message is not lost: the chat was told).
    pub fn lost(&self) -> bool {
        !self.refused() && self.lost_unless_refused()
    }

    fn lost_unless_refused(&self) -> bool {
        self.stored == 0
            || self.runs.is_empty()
            || self
                .runs
                .iter()
                .any(|r| r.status != "succeeded" || r.cards == 0 || r.ended_cards < r.cards)
    }

    /// Answered twice: stored twice, in two runs, a run with two cards, or two
    /// replies to the message itself.
    pub fn duplicated(&self) -> bool {
        self.stored > 1
            || self.runs.len() > 1
            || self.runs.iter().any(|r| r.cards > 1)
            || self.replies > 1
    }

    /// In a run that is not its first message's speaker's.
    pub fn misowned(&self) -> bool {
        self.runs.iter().any(RunFate::misowned)
    }

    pub(crate) fn settled(&self) -> bool {
        self.refused() || self.answered()
    }

    fn answered(&self) -> bool {
        self.stored > 0
            && !self.runs.is_empty()
            && self.runs.iter().all(|r| {
                matches!(r.status.as_str(), "succeeded" | "failed" | "cancelled")
                    && r.cards > 0
                    && r.ended_cards == r.cards
            })
    }
}
