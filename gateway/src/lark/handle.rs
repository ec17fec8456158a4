//! Acting on a message for the bot: a command, a stop word, or a message for the
//! agent — with the files and images it carries fetched from Lark first
//! ([`files`]) and sent as its attachments. Replies made here (command answers,
//! notices, refusals) are small cards sent at most once per inbound message
//! (their Lark `uuid` derives from its id); the streaming reply card of a run is
//! the worker's.

mod files;

use std::future::Future;
use std::time::Duration;
use weft_lark::card::{CardState, notice_card};

use weft_lark::rest::{ErrorClass, LarkError, MessageContent, ReplyMode};
use weft_shared::api::{Multitask, SendMessageRequest};
use weft_shared::ids::RunId;
use weft_shared::store::{AuthUser, CancelOutcome, ReactionRecord, SessionRecord, retrying};

use super::Bot;
use super::commands::{self, Command, Lang};
use super::inbound::{Body, Incoming, LarkFile};
use crate::error::ApiError;
use crate::runs::{announce_cancel, enqueue};
use crate::sessions::{Origin, Submitted, submit};

/// The reaction shown while a reply is on its way (the "thinking face").
pub const THINKING_EMOJI: &str = "THINKING";

impl Bot {
    pub(super) async fn handle(&self, incoming: Incoming) -> anyhow::Result<()> {
        let store = &self.state.store;
        let user = retrying("lark user", || store.lark_user(&incoming.sender_open_id)).await?;
        // A conversation starts with the sender's default agent and model; an
        // operator may have opened none to them.
        let (model, mode) = match (
            self.state.resolve_model(&user, None),
            self.state.resolve_mode(&user, None),
        ) {
            (Ok(model), Ok(mode)) => (model, mode),
            (Err(e), _) | (_, Err(e)) => {
                return self.refused(&incoming, e, Lang::of("")).await;
            }
        };
        let session = retrying("lark session", || {
            store.lark_session(&incoming.chat, &user.id, &model, &mode)
        })
        .await?;
        let (text, files) = match &incoming.body {
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
        let lang = Lang::of(&text);
        // With files it is a message for the agent, whatever its text says.
        if files.is_empty() {
            if let Some(command) = commands::parse(&text) {
                return self.command(&incoming, &user, session, command, lang).await;
            }
            if commands::is_stop_word(&text)
                && let Some(active) = session.active_run_id.as_deref().and_then(RunId::parse)
            {
                self.cancel(&session, &active).await?;
                let stopped = lang.pick("🛑 stopped", "🛑 已停止");
                return self
                    .notice(&incoming, stopped, CardState::Cancelled, stopped)
                    .await;
            }
        }
        self.ask_agent(&incoming, &session, text, &files, lang)
            .await
    }

    /// The ordinary send path, after the message's files are fetched; the
    /// THINKING reaction goes up while both run. A refused file (its type, a
    /// limit, Lark's answer) is a refused send: an answer in the chat, no run.
    async fn ask_agent(
        &self,
        incoming: &Incoming,
        session: &SessionRecord,
        text: String,
        files: &[LarkFile],
        lang: Lang,
    ) -> anyhow::Result<()> {
        let reaction = {
            let (sender, message) = (self.sender.clone(), incoming.message_id.clone());
            tokio::spawn(async move {
                lark_retrying(|| sender.add_reaction(&message, THINKING_EMOJI)).await
            })
        };
        let sent = match self
            .fetch_files(&session.user_id, &incoming.message_id, files)
            .await
        {
            Ok(files::Fetched { uploads, room }) => {
                let sent = match self.owner(session).await {
                    Ok(owner) => {
                        self.submit_retrying(incoming, &owner, session, text, uploads)
                            .await
                    }
                    Err(e) => Err(ApiError::internal(e)),
                };
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
        owner: &AuthUser,
        session: &SessionRecord,
        text: String,
        files: Vec<crate::uploads::Upload>,
    ) -> Result<Submitted, ApiError> {
        let request = SendMessageRequest {
            text,
            multitask: Multitask::Enqueue,
            ..SendMessageRequest::default()
        };
        let origin = Origin {
            idempotency_key: Some(format!("lark:{}", incoming.message_id)),
            lark_message_id: Some(incoming.message_id.clone()),
            files,
        };
        let send = || {
            submit(
                &self.state,
                owner,
                &session.id,
                request.clone(),
                origin.clone(),
            )
        };
        let mut sent = send().await;
        for delay_ms in [250, 500, 1000] {
            if !matches!(sent, Err(ApiError::Internal(_))) {
                break;
            }
            tracing::warn!(lark.message_id = %incoming.message_id, "sending a lark message failed; retrying");
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            sent = send().await;
        }
        sent
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
            other => other.to_string(),
        };
        self.notice(incoming, "Weft", CardState::AwaitingApproval, &text)
            .await
    }

    async fn command(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        session: SessionRecord,
        command: Command,
        lang: Lang,
    ) -> anyhow::Result<()> {
        let store = &self.state.store;
        let owner = &session.user_id;
        let (title, state, text) = match command {
            Command::Help => ("Weft", CardState::Done, commands::help(lang).to_owned()),
            Command::Unknown(name) => (
                "Weft",
                CardState::AwaitingApproval,
                format!(
                    "{} `{name}`\n\n{}",
                    lang.pick("Unknown command", "未知命令"),
                    commands::help(lang)
                ),
            ),
            Command::New => {
                let model = self.state.resolve_model(user, None)?;
                let mode = self.state.resolve_mode(user, None)?;
                store
                    .lark_new_session(&incoming.chat, &user.id, &model, &mode)
                    .await?;
                (
                    "Weft",
                    CardState::Done,
                    lang.pick("🆕 New conversation.", "🆕 已开始新对话。")
                        .to_owned(),
                )
            }
            Command::Stop | Command::Flush => {
                let flush = command == Command::Flush;
                let text = match session.active_run_id.as_deref().and_then(RunId::parse) {
                    Some(run) => {
                        self.cancel(&session, &run).await?;
                        if flush {
                            lang.pick(
                                "🛑 stopped; answering everything you sent since.",
                                "🛑 已停止；接下来一起回答之后发来的消息。",
                            )
                        } else {
                            lang.pick("🛑 stopped", "🛑 已停止")
                        }
                    }
                    None => lang.pick("Nothing is running.", "当前没有进行中的回复。"),
                };
                ("Weft", CardState::Cancelled, text.to_owned())
            }
            Command::Model(choice) => {
                let text = match choice {
                    Some(id) => match self
                        .choose_for_both(user, &session, |u| self.state.resolve_model(u, Some(&id)))
                        .await?
                    {
                        Ok(id) => {
                            store
                                .update_session(owner, &session.id, None, Some(&id), None)
                                .await?;
                            format!("{} `{id}`", lang.pick("Model:", "模型："))
                        }
                        Err(e) => e.to_string(),
                    },
                    None => self.listing(
                        lang.pick("Models", "模型"),
                        self.state.models_for(user).into_iter().map(|m| m.id),
                        &session.model,
                        "/model",
                    ),
                };
                ("Weft", CardState::Done, text)
            }
            Command::Mode(choice) => {
                let text = match choice {
                    Some(id) => match self
                        .choose_for_both(user, &session, |u| self.state.resolve_mode(u, Some(&id)))
                        .await?
                    {
                        Ok(id) => {
                            store
                                .update_session(owner, &session.id, None, None, Some(&id))
                                .await?;
                            format!("{} `{id}`", lang.pick("Mode:", "模式："))
                        }
                        Err(e) => e.to_string(),
                    },
                    None => self.listing(
                        lang.pick("Modes", "模式"),
                        self.state.agent_ids_for(user).into_iter(),
                        &session.mode,
                        "/mode",
                    ),
                };
                ("Weft", CardState::Done, text)
            }
            Command::Undo => {
                let text = match store.undo_turn(owner, &session.id).await? {
                    weft_shared::store::TurnOutcome::Done { .. } => lang
                        .pick(
                            "↩️ The last question and answer are out of the conversation.",
                            "↩️ 上一轮问答已从对话中撤下。",
                        )
                        .to_owned(),
                    weft_shared::store::TurnOutcome::RunActive { .. } => lang
                        .pick(
                            "A reply is still running: /stop it first.",
                            "还有回复在进行中，请先 /stop。",
                        )
                        .to_owned(),
                    _ => lang
                        .pick("Nothing to undo.", "没有可撤销的内容。")
                        .to_owned(),
                };
                ("Weft", CardState::Done, text)
            }
            Command::Compact => {
                store.request_compact(&session.id).await?;
                (
                    "Weft",
                    CardState::Done,
                    lang.pick(
                        "🗜 The older turns will be summarised before the next reply.",
                        "🗜 下一次回复前会先总结较早的对话。",
                    )
                    .to_owned(),
                )
            }
            Command::Sessions => {
                let sessions = store.lark_chat_sessions(&incoming.chat, 10).await?;
                let lines: Vec<String> = sessions
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let title = if s.title.is_empty() {
                            "(untitled)"
                        } else {
                            &s.title
                        };
                        let here = if s.id == session.id { " ←" } else { "" };
                        format!("{}. {title}{here}", i + 1)
                    })
                    .collect();
                let text = format!(
                    "{}\n{}\n\n`/resume N`",
                    lang.pick("**Conversations**", "**对话**"),
                    lines.join("\n")
                );
                ("Weft", CardState::Done, text)
            }
            Command::Resume(n) => {
                let sessions = store.lark_chat_sessions(&incoming.chat, 10).await?;
                let text = match n.and_then(|n| sessions.get(n - 1)) {
                    Some(s) => {
                        store.lark_bind(&incoming.chat, &s.id).await?;
                        format!(
                            "{} {}",
                            lang.pick("Resumed:", "已回到："),
                            if s.title.is_empty() {
                                "(untitled)"
                            } else {
                                &s.title
                            }
                        )
                    }
                    None => lang
                        .pick(
                            "Which one? See `/sessions`, then `/resume N`.",
                            "请先用 `/sessions` 查看，再 `/resume N`。",
                        )
                        .to_owned(),
                };
                ("Weft", CardState::Done, text)
            }
        };
        self.notice(incoming, title, state, &text).await
    }

    /// The conversation's owner: its runs are theirs, so their access to the
    /// session's agent and model is what counts.
    async fn owner(&self, session: &SessionRecord) -> anyhow::Result<AuthUser> {
        let store = &self.state.store;
        Ok(retrying("lark session owner", || store.get_user(&session.user_id)).await?)
    }

    /// `choose` for the sender of a command and, when someone else owns the
    /// conversation, for its owner too (the runs are the owner's).
    async fn choose_for_both(
        &self,
        sender: &AuthUser,
        session: &SessionRecord,
        choose: impl Fn(&AuthUser) -> Result<String, ApiError>,
    ) -> anyhow::Result<Result<String, ApiError>> {
        let id = match choose(sender) {
            Ok(id) => id,
            Err(e) => return Ok(Err(e)),
        };
        if sender.id == session.user_id {
            return Ok(Ok(id));
        }
        Ok(choose(&self.owner(session).await?).map(|_| id))
    }

    fn listing(
        &self,
        heading: &str,
        ids: impl Iterator<Item = String>,
        current: &str,
        command: &str,
    ) -> String {
        let lines: Vec<String> = ids
            .map(|id| {
                if id == current {
                    format!("• `{id}` ←")
                } else {
                    format!("• `{id}`")
                }
            })
            .collect();
        format!("**{heading}**\n{}\n\n`{command} ID`", lines.join("\n"))
    }

    /// Cancels the session's active run (stop word, `/stop`, `/flush`); messages
    /// queued behind it become the next run.
    async fn cancel(&self, session: &SessionRecord, run: &RunId) -> anyhow::Result<()> {
        let CancelOutcome::Cancelled { run, followup } = self
            .state
            .store
            .cancel_run(
                &session.user_id,
                run,
                "lark",
                &self.state.config.limits.run_limits(),
            )
            .await?
        else {
            return Ok(());
        };
        announce_cancel(&self.state, &run).await;
        if run.was_queued {
            // No worker will end this reply, so its reactions are ours to remove.
            self.end_reactions(&run.id).await;
        }
        if let Some(next) = followup {
            enqueue(&self.state, next).await;
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
    async fn notice(
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

/// Calls Lark, retrying rate limits and outages a few times with backoff (0.5 s,
/// 1.5 s, 4.5 s) and logging each; other errors return at once.
async fn lark_retrying<T, F, Fut>(mut call: F) -> Result<T, LarkError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, LarkError>>,
{
    let mut attempt = 0;
    loop {
        match call().await {
            Err(e) if e.class() == ErrorClass::Retryable && attempt < 3 => {
                let delay = Duration::from_millis(500) * 3u32.pow(attempt);
                tracing::warn!(error = %e, delay_ms = delay.as_millis() as u64, "lark call failed; retrying");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// Lark's `uuid` is at most 50 characters.
pub(crate) fn truncate_uuid(uuid: &str) -> String {
    uuid.chars().take(50).collect()
}
