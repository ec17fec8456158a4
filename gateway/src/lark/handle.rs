//! Acting on a message for the bot: a command, a stop word, the answer to the
//! agent's open question ([`super::questions`]), changes asked for to its open
//! plan ([`super::plans`]), or a message for the agent — with the files and
//! images it carries fetched from Lark first ([`files`]) and sent as its
//! attachments (`/plan TASK` sends TASK so, in plan mode). Replies made here
//! (command answers, notices, refusals) are small cards sent at most once per
//! inbound message (their Lark `uuid` derives from its id); the streaming
//! reply card of a run is the worker's.

mod chat_commands;
mod files;
mod memory_commands;
mod quote;
mod schedule_commands;
mod turn_commands;

use std::future::Future;
use weft_lark::card::{CardState, notice_card};
use weft_lark::rest::{ErrorClass, LarkError, MessageContent, ReplyMode};
use weft_lark::text::Text;
use weft_shared::api::{Multitask, SendMessageRequest};
use weft_shared::ids::RunId;
use weft_shared::retry::{Backoff, retry};
use weft_store::{AuthUser, CancelOutcome, ReactionRecord, SessionRecord, retrying};

use super::Bot;
use super::commands::{self, Command, Lang};
use super::inbound::{Body, ChatType, Incoming, LarkFile};
use super::questions::{self, ChatAnswer};
use crate::error::ApiError;
use crate::sessions::{Origin, Shared, Submitted, submit};

/// Who sends a message for the agent: the run is theirs (limits,
/// instructions, files, approvals); in a group, also who owns the shared
/// session and the name the others and the model see.
struct Speaker {
    user: AuthUser,
    shared: Option<Shared>,
}

/// A message for the agent, as the chat gave it.
struct ForAgent {
    text: String,
    files: Vec<LarkFile>,
    send_as: SendAs,
}

/// How a message for the agent is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SendAs {
    /// An ordinary turn.
    Message,
    /// Plan mode (`/plan TASK`): the agent researches with tools that only
    /// read and proposes a plan to decide before anything is done.
    Plan,
}

/// The reaction shown while a reply is on its way (the "thinking face").
pub const THINKING_EMOJI: &str = "THINKING";

impl Bot {
    pub(super) async fn handle(&self, incoming: Incoming) -> anyhow::Result<()> {
        let quoted = self.quoted(&incoming).await;
        if incoming.needs_reply_to_bot && !quoted.as_ref().is_some_and(|q| q.from_bot) {
            metrics::counter!("weft_lark_events_total", "outcome" => "ignored").increment(1);
            tracing::debug!(lark.message_id = %incoming.message_id, "a group reply to someone else's message, without a mention: not for the bot");
            return Ok(());
        }
        let store = &self.state.store;
        let user = retrying("lark user", || store.lark_user(&incoming.sender_open_id)).await?;
        // A conversation starts with the sender's default agent and model; an
        // operator may have opened none to them.
        let (model, agent) = match (
            self.state.resolve_model(&user, None),
            self.state.resolve_agent(&user, None),
        ) {
            (Ok(model), Ok(agent)) => (model, agent),
            (Err(e), _) | (_, Err(e)) => {
                return self.refused(&incoming, e, self.tenant).await;
            }
        };
        let session = retrying("lark session", || {
            store.lark_session(&incoming.chat, &user.id, &model, &agent)
        })
        .await?;
        let (mut text, mut files) = match &incoming.body {
            Body::Message { text, files } => (text.clone(), files.clone()),
            Body::Unsupported(kind) => {
                let note = format!(
                    "I can read text, images and files, not {kind} messages. · 我能读文字、图片和文件，暂不支持这类消息。"
                );
                return self
                    .notice(&incoming, "Weft", CardState::Cancelled, &note)
                    .await;
            }
        };
        let lang = Lang::of(&text, self.tenant);
        let mut send_as = SendAs::Message;
        match commands::parse(&text) {
            // A message for the agent, in plan mode (with its files, if any).
            Some(Command::Plan(Some(task))) => {
                text = task;
                send_as = SendAs::Plan;
            }
            // With files it is a message for the agent, whatever its text says.
            Some(command) if files.is_empty() => {
                return self.command(&incoming, &user, session, command, lang).await;
            }
            None if files.is_empty() => {
                let taken = self
                    .to_the_waiting_run(&incoming, &user, &session, &text, lang)
                    .await?;
                if taken == ChatAnswer::Taken {
                    return Ok(());
                }
            }
            _ => {}
        }
        // What it replies to comes with it: the quote's words and its files.
        let text = match &quoted {
            Some(q) => {
                files.extend(q.files.iter().cloned());
                q.around(&text)
            }
            None => text,
        };
        let speaker = Speaker {
            shared: match incoming.chat_type {
                ChatType::Group => Some(Shared {
                    owner: session.user_id.clone(),
                    speaker_name: self.names.of(&self.sender, &incoming.sender_open_id).await,
                }),
                ChatType::P2p => None,
            },
            user,
        };
        let message = ForAgent {
            text,
            files,
            send_as,
        };
        self.ask_agent(&incoming, &session, &speaker, message, lang)
            .await
    }

    /// What a plain text means to the session's active run before it is a
    /// message for the agent: a stop word ends the run; a reply to the
    /// agent's open question is its answer ([`questions`]), and one to its
    /// open plan asks for changes ([`super::plans`]); an option named in full
    /// wins over a stop word (`取消` may well be one). A message that answered
    /// (or decided) before it was handled again — a crash in between — is
    /// done. `NotAnAnswer`: none of these, an ordinary message.
    async fn to_the_waiting_run(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        session: &SessionRecord,
        text: &str,
        lang: Lang,
    ) -> anyhow::Result<ChatAnswer> {
        let (answered, decided) = tokio::try_join!(
            self.answered_before(incoming),
            self.decided_before(incoming)
        )?;
        if answered || decided {
            return Ok(ChatAnswer::Taken);
        }
        let question = self.open_question(session, user).await?;
        let names_option = question
            .as_ref()
            .is_some_and(|q| questions::names_option(q, text));
        if !names_option
            && commands::is_stop_word(text)
            && let Some(active) = session.active_run_id.as_deref().and_then(RunId::parse)
        {
            self.cancel(session, &active).await?;
            let stopped = lang.pick("🛑 stopped", "🛑 已停止");
            self.notice(incoming, stopped, CardState::Cancelled, stopped)
                .await?;
            return Ok(ChatAnswer::Taken);
        }
        if let Some(question) = question
            && self.answer_in_chat(incoming, user, &question, text).await? == ChatAnswer::Taken
        {
            return Ok(ChatAnswer::Taken);
        }
        match self.open_plan(session, user).await? {
            Some(plan) => self.revise_in_chat(incoming, user, &plan, text).await,
            None => Ok(ChatAnswer::NotAnAnswer),
        }
    }

    /// The ordinary send path, after the message's files are fetched; the
    /// THINKING reaction goes up while both run. A refused file (its type, a
    /// limit, Lark's answer) is a refused send: an answer in the chat, no run.
    async fn ask_agent(
        &self,
        incoming: &Incoming,
        session: &SessionRecord,
        speaker: &Speaker,
        message: ForAgent,
        lang: Lang,
    ) -> anyhow::Result<()> {
        let ForAgent {
            text,
            files,
            send_as,
        } = message;
        let reaction = {
            let (sender, message) = (self.sender.clone(), incoming.message_id.clone());
            tokio::spawn(async move {
                lark_retrying(|| sender.add_reaction(&message, THINKING_EMOJI)).await
            })
        };
        let sent = match self
            .fetch_files(&speaker.user.id, &incoming.message_id, &files)
            .await
        {
            Ok(files::Fetched { uploads, room }) => {
                let sent = self
                    .submit_retrying(incoming, speaker, session, text, uploads, send_as)
                    .await;
                // Stored (or refused) by now: the memory is free again.
                drop(room);
                sent
            }
            Err(e) => Err(e),
        };
        let reaction = match reaction.await {
            Ok(Ok(r)) => Some(r.reaction_id),
            Ok(Err(e)) => {
                tracing::warn!(lark.message_id = %incoming.message_id, error = %e, "adding the THINKING reaction failed");
                None
            }
            Err(_) => None,
        };
        let message_id = match sent {
            Ok(Submitted::Run { message_id, .. } | Submitted::Queued { message_id, .. }) => {
                message_id
            }
            Err(e) => {
                if let Some(reaction) = reaction {
                    self.remove_reaction(&incoming.message_id, &reaction).await;
                }
                return self.refused(incoming, e, lang).await;
            }
        };
        if let Some(reaction) = reaction {
            match self
                .state
                .store
                .record_lark_reaction(&message_id, &reaction)
                .await
            {
                Ok(ReactionRecord::Kept) => {}
                Ok(ReactionRecord::ReplyEnded) => {
                    self.remove_reaction(&incoming.message_id, &reaction).await
                }
                Err(e) => {
                    tracing::warn!(error = %e, "recording the THINKING reaction failed; removing it");
                    self.remove_reaction(&incoming.message_id, &reaction).await;
                }
            }
        }
        Ok(())
    }

    /// [`submit`] with the Lark id as the idempotency key, retried after a
    /// database error: the event was acked, so nobody else retries it, and the key
    /// makes a retry unable to send twice.
    async fn submit_retrying(
        &self,
        incoming: &Incoming,
        speaker: &Speaker,
        session: &SessionRecord,
        text: String,
        files: Vec<crate::uploads::Upload>,
        send_as: SendAs,
    ) -> Result<Submitted, ApiError> {
        let request = SendMessageRequest {
            text,
            multitask: Multitask::Enqueue,
            plan: send_as == SendAs::Plan,
            ..SendMessageRequest::default()
        };
        let origin = Origin {
            idempotency_key: Some(format!("lark:{}", incoming.message_id)),
            shared: speaker.shared.clone(),
            lark_message_id: Some(incoming.message_id.clone()),
            files,
        };
        let send = || {
            submit(
                &self.state,
                &speaker.user,
                &session.id,
                request.clone(),
                origin.clone(),
            )
        };
        retry(
            Backoff::DATABASE,
            "sending a lark message",
            |e| matches!(e, ApiError::Internal(_)),
            send,
        )
        .await
    }

    /// A message its chat's line had no room for (`lark.queued_messages_per_chat`):
    /// say that it was not read.
    pub(super) async fn tell_busy(&self, incoming: &Incoming) {
        let text = "⏳ I am still working through the earlier messages of this chat, so I did not read this one. Please send it again once I have answered. · 我还在处理这个对话里之前的消息，这条没有读到，请等我回复后再发一次。";
        if let Err(e) = self
            .notice(incoming, "Weft", CardState::AwaitingApproval, text)
            .await
        {
            tracing::warn!(lark.message_id = %incoming.message_id, error = %format!("{e:#}"), "telling a lark chat the bot is busy failed");
        }
    }

    /// A send the limits (or validation) refused: say so kindly, in a card.
    async fn refused(
        &self,
        incoming: &Incoming,
        error: ApiError,
        lang: Lang,
    ) -> anyhow::Result<()> {
        let text = match &error {
            ApiError::RateLimited {
                message,
                retry_after_secs,
            } => format!(
                "{}\n\n{message} · {} {retry_after_secs} s",
                lang.pick(
                    "⏳ You are sending faster than I can answer.",
                    "⏳ 消息太多，我回答不过来了。"
                ),
                lang.pick("try again in", "请稍后再试："),
            ),
            // Kept typed: `held` retries a database error.
            ApiError::Internal(_) => return Err(anyhow::Error::new(error).context("send failed")),
            // Only a plan is refused for a running reply: it starts a run of
            // its own and never waits behind one (other sends queue).
            ApiError::RunActive(_) => lang.text(Text::PlanRunActive).to_owned(),
            other => other.to_string(),
        };
        self.notice(incoming, "Weft", CardState::AwaitingApproval, &text)
            .await
    }

    /// A user's name as the group sees it: their Lark display name when they
    /// have a Lark identity, else their username.
    pub(super) async fn display_name(&self, user: &AuthUser) -> String {
        match self.state.store.lark_open_id(&user.id).await {
            Ok(Some(open_id)) => self.names.of(&self.sender, &open_id).await,
            _ => user.username.clone(),
        }
    }

    /// Cancels the session's active run (stop word, `/stop`, `/flush`); messages
    /// queued behind it become the next run.
    async fn cancel(&self, session: &SessionRecord, run: &RunId) -> anyhow::Result<()> {
        let outcome = self
            .state
            .runs
            .cancel(&session.user_id, run, "lark")
            .await?;
        if let CancelOutcome::Cancelled { run, .. } = outcome
            && run.was_queued
        {
            // No worker will end this reply, so its reactions are ours to remove.
            self.end_reactions(&run.id).await;
        }
        Ok(())
    }

    async fn end_reactions(&self, run: &RunId) {
        match self.state.store.take_lark_reactions(run).await {
            Ok(reactions) => {
                for (message, reaction) in reactions {
                    self.remove_reaction(&message, &reaction).await;
                }
            }
            Err(e) => tracing::warn!(run.id = %run, error = %e, "reading lark reactions failed"),
        }
    }

    async fn remove_reaction(&self, message: &str, reaction: &str) {
        if let Err(e) = lark_retrying(|| self.sender.remove_reaction(message, reaction)).await {
            tracing::warn!(lark.message_id = %message, error = %e, "removing a reaction failed");
        }
    }

    /// A small card in reply to `incoming`, sent at most once for it.
    pub(super) async fn notice(
        &self,
        incoming: &Incoming,
        title: &str,
        state: CardState,
        text: &str,
    ) -> anyhow::Result<()> {
        let card = MessageContent::Interactive(notice_card(title, state, text));
        let mode = if incoming.chat.thread_id.is_empty() {
            ReplyMode::Inline
        } else {
            ReplyMode::InThread
        };
        let uuid = truncate_uuid(&format!("weft-n-{}", incoming.message_id));
        lark_retrying(|| {
            self.sender.reply_message_once(
                &incoming.chat.chat_id,
                &incoming.message_id,
                &card,
                mode,
                &uuid,
            )
        })
        .await?;
        Ok(())
    }
}

/// Calls Lark, retrying rate limits and outages on [`Backoff::LARK`] (0.5 s,
/// 1.5 s, 4.5 s) and logging each; other errors return at once.
async fn lark_retrying<T, F, Fut>(call: F) -> Result<T, LarkError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LarkError>>,
{
    retry(
        Backoff::LARK,
        "lark call",
        |e: &LarkError| e.class() == ErrorClass::Retryable,
        call,
    )
    .await
}

/// Lark's `uuid` is at most 50 characters.
pub(crate) fn truncate_uuid(uuid: &str) -> String {
    uuid.chars().take(50).collect()
}
