//! A message that is a command (`/new`, `/stop`, `/model`, …; see
//! [`super::super::commands`]): what each does to the chat's session, and the
//! small card that answers it. The turn commands and `/memory` have their own
//! modules ([`super::turn_commands`], [`super::memory_commands`]).

use weft_lark::card::CardState;
use weft_lark::text::Text;
use weft_shared::ids::RunId;
use weft_store::{AuthUser, SessionRecord, StoreError};

use super::super::Bot;
use super::super::commands::{self, Command, KbCommand, Lang};
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
            // `/plan TASK` is a message for the agent (`handle` sends it in
            // plan mode); only `/plan` alone comes here.
            Command::Plan(_) => (
                "Weft",
                CardState::Done,
                lang.text(Text::PlanUsage).to_owned(),
            ),
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
                let agent = self.state.resolve_agent(user, None)?;
                store
                    .lark_new_session(&incoming.chat, &user.id, &model, &agent)
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
            // The card keeps the older words ("Mode", `/mode`) people know; `/agent` works too.
            Command::Agent(choice) => {
                let text = match choice {
                    Some(id) => match self.state.resolve_agent(user, Some(&id)) {
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
                        &session.agent,
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
            Command::Kb(kb) => {
                let text = self.kb_command(user, &session, kb, lang).await?;
                ("Weft", CardState::Done, text)
            }
            Command::Memory(memory) => {
                let text = self.memory_command(incoming, user, memory, lang).await?;
                ("Weft", CardState::Done, text)
            }
            Command::Schedules(command) => {
                let text = self.schedule_command(incoming, user, command, lang).await?;
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

    /// `/kb`: list the bases open to the speaker and which this conversation
    /// searches; `/kb use NAME` adds one (as the speaker sees that name);
    /// `/kb off` leaves the agent's own.
    async fn kb_command(
        &self,
        user: &AuthUser,
        session: &SessionRecord,
        kb: KbCommand,
        lang: Lang,
    ) -> anyhow::Result<String> {
        let store = &self.state.store;
        let owner = &session.user_id;
        Ok(match kb {
            KbCommand::List => {
                let agent = store.agent_or_default(&session.agent).await?;
                let bases = store.knowledge_bases(user).await?;
                let lines: Vec<String> = bases
                    .iter()
                    .map(|b| {
                        let used = if session.knowledge.contains(&b.id) {
                            lang.pick(" ← in use", " ← 使用中")
                        } else if agent.knowledge.contains(&b.name) {
                            lang.pick(" ← the agent's", " ← 智能体自带")
                        } else {
                            ""
                        };
                        let about = if b.description.is_empty() {
                            String::new()
                        } else {
                            format!(" — {}", b.description.replace('\n', " "))
                        };
                        format!("• `{}`{about}{used}", b.name)
                    })
                    .collect();
                if lines.is_empty() {
                    lang.pick(
                        "No knowledge base is open to you yet. Make one on the web page (Knowledge) or with `weft knowledge create`.",
                        "目前没有你可以使用的知识库。可在网页（知识库）或用 `weft knowledge create` 创建。",
                    )
                    .to_owned()
                } else {
                    format!(
                        "{}\n{}\n\n`/kb use NAME` · `/kb off`",
                        lang.pick("**Knowledge bases**", "**知识库**"),
                        lines.join("\n")
                    )
                }
            }
            KbCommand::Use(name) => match store.knowledge_base_named(user, &name).await {
                Ok(base) => {
                    let mut ids = session.knowledge.clone();
                    ids.push(base.id);
                    store
                        .set_session_knowledge(owner, &session.id, &ids)
                        .await?;
                    format!(
                        "📚 {} `{}`",
                        lang.pick("This conversation now also searches", "本对话现在也会检索"),
                        base.name
                    )
                }
                Err(StoreError::NotFound) => format!(
                    "{} `{name}`{}",
                    lang.pick("No knowledge base named", "没有你可以使用的知识库"),
                    lang.pick(" is open to you; `/kb` lists them.", "；`/kb` 可查看列表。")
                ),
                Err(e) => return Err(e.into()),
            },
            KbCommand::Off => {
                store.set_session_knowledge(owner, &session.id, &[]).await?;
                lang.pick(
                    "📚 This conversation searches only its agent's knowledge bases now.",
                    "📚 本对话现在只检索智能体自带的知识库。",
                )
                .to_owned()
            }
        })
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
