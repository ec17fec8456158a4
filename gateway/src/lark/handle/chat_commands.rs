//! A message that is a command (`/new`, `/stop`, `/model`, …; see
//! [`super::super::commands`]): what each does to the chat's session, and the
//! small card that answers it. The turn commands have their own module
//! ([`super::turn_commands`]).

use weft_lark::card::CardState;
use weft_shared::ids::RunId;
use weft_shared::store::{AuthUser, SessionRecord};

use super::super::Bot;
use super::super::commands::{self, Command, Lang};
use super::super::inbound::Incoming;

impl Bot {
    pub(super) async fn command(
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
                    Some(id) => match self.state.resolve_model(user, Some(&id)) {
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
                    Some(id) => match self.state.resolve_mode(user, Some(&id)) {
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
            Command::Turn(turn) => {
                let text = self
                    .turn_command(incoming, user, &session, turn, lang)
                    .await?;
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
}
