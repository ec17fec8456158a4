//! `/memory` from a chat (docs/memory.md): the speaker's own memories — the
//! list, `/memory forget N`, `/memory off`, `/memory on` — in a DM only. In a
//! group the bot points to the DM and says nothing else: a memory is one
//! person's, and a group's answers are everyone's to read.
//!
//! The speaker is the Lark user the bot maps the sender to (their linked Weft
//! account, or the one made for their open_id), never the group's session
//! owner. The list is numbered oldest first and `forget N` reads it again:
//! the bot keeps nothing between messages (the next one may reach another
//! gateway), and in this order a memory kept meanwhile (a run's `remember`)
//! joins the end instead of shifting the numbers the person just read.

use weft_store::{AuthUser, Memory, StoreError};

use super::super::Bot;
use super::super::commands::{Lang, MemoryCommand};
use super::super::inbound::{ChatType, Incoming};

/// The most memories one answer lists (a card has a size limit).
const LISTED: usize = 50;
/// The characters of a memory's text a list shows.
const SHOWN_CHARS: usize = 120;

impl Bot {
    /// Does `command` for the speaker and says how it went.
    pub(super) async fn memory_command(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        command: MemoryCommand,
        lang: Lang,
    ) -> anyhow::Result<String> {
        if incoming.chat_type != ChatType::P2p {
            return Ok(lang
                .pick(
                    "🔒 What I remember about you is yours alone: ask me in a DM (send `/memory` there).",
                    "🔒 我记住的关于你的内容只属于你：请私聊我（在私聊中发送 `/memory`）。",
                )
                .to_owned());
        }
        let store = &self.state.store;
        Ok(match command {
            MemoryCommand::List => self.memory_list(user, lang).await?,
            MemoryCommand::Forget(None) => lang
                .pick(
                    "Which one? `/memory` lists them, then `/memory forget N`.",
                    "要删除哪一条？先用 `/memory` 查看，再 `/memory forget N`。",
                )
                .to_owned(),
            MemoryCommand::Forget(Some(n)) => {
                let memories = oldest_first(store.memories(&user.id, None).await?);
                match memories.get(n - 1) {
                    Some(m) => match store.delete_memory(&user.id, &m.id).await {
                        // Gone meanwhile (another device): forgotten all the same.
                        Ok(()) | Err(StoreError::NotFound) => match lang {
                            Lang::En => format!("🗑 Forgot {n}: {}", shown(&m.text)),
                            Lang::Zh => format!("🗑 已删除第 {n} 条：{}", shown(&m.text)),
                        },
                        Err(e) => return Err(e.into()),
                    },
                    None => match lang {
                        Lang::En => format!("There is no memory {n}; `/memory` lists them."),
                        Lang::Zh => format!("没有第 {n} 条记忆；`/memory` 可查看列表。"),
                    },
                }
            }
            MemoryCommand::Off => {
                store.set_memory_enabled(&user.id, false).await?;
                lang.pick(
                    "🧠 Memory off: I will not remember or recall anything about you. What I kept stays until you forget it; `/memory on` turns it back on.",
                    "🧠 记忆已关闭：我不会再记住或想起关于你的内容。已记住的内容会保留，直到你删除；`/memory on` 可重新开启。",
                )
                .to_owned()
            }
            MemoryCommand::On => {
                store.set_memory_enabled(&user.id, true).await?;
                lang.pick(
                    "🧠 Memory on: I may remember what you tell me and recall it in later conversations.",
                    "🧠 记忆已开启：我会记住你告诉我的内容，并在之后的对话中用到。",
                )
                .to_owned()
            }
        })
    }

    /// The speaker's memories, numbered, with whether memory is on.
    async fn memory_list(&self, user: &AuthUser, lang: Lang) -> anyhow::Result<String> {
        let store = &self.state.store;
        let memories = oldest_first(store.memories(&user.id, None).await?);
        let state = if !self.state.config().memory.enabled {
            lang.pick(
                "Memory is turned off on this server: nothing is remembered or recalled.",
                "本服务器已关闭记忆功能：不会记住或想起任何内容。",
            )
        } else if !store.memory_enabled(&user.id).await? {
            lang.pick(
                "Your memory is off: I remember nothing new and recall nothing. `/memory on` turns it on.",
                "你的记忆已关闭：我不会记住新内容，也不会想起已有的。`/memory on` 可开启。",
            )
        } else if memories.is_empty() {
            lang.pick(
                "`/memory off` turns memory off.",
                "`/memory off` 可关闭记忆。",
            )
        } else {
            lang.pick(
                "`/memory forget N` forgets one · `/memory off` turns memory off",
                "`/memory forget N` 删除一条 · `/memory off` 关闭记忆",
            )
        };
        if memories.is_empty() {
            let none = lang.pick(
                "I remember nothing about you yet.",
                "我还没有记住关于你的任何内容。",
            );
            return Ok(format!("{none}\n\n{state}"));
        }
        let mut lines: Vec<String> = memories
            .iter()
            .take(LISTED)
            .enumerate()
            .map(|(i, m)| {
                let pin = if m.pinned { "📌 " } else { "" };
                format!("{}. {pin}({}) {}", i + 1, m.kind.as_str(), shown(&m.text))
            })
            .collect();
        if memories.len() > LISTED {
            let more = memories.len() - LISTED;
            lines.push(match lang {
                Lang::En => format!("… and {more} more, not listed here"),
                Lang::Zh => format!("…… 另有 {more} 条未列出"),
            });
        }
        Ok(format!(
            "{}\n{}\n\n{state}",
            lang.pick("**What I remember about you**", "**我记住的关于你的内容**"),
            lines.join("\n")
        ))
    }
}

/// The order `/memory` numbers in: oldest first.
fn oldest_first(mut memories: Vec<Memory>) -> Vec<Memory> {
    memories.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    memories
}

/// A memory's text on one line, cut to [`SHOWN_CHARS`].
fn shown(text: &str) -> String {
    let line = text.replace(['\n', '\r'], " ");
    match line.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shown_text_is_one_line_and_cut() {
        assert_eq!(super::shown("tea\nplease"), "tea please");
        let long = "记".repeat(130);
        assert_eq!(
            super::shown(&long),
            format!("{}…", "记".repeat(super::SHOWN_CHARS))
        );
    }
}
