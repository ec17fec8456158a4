//! `/undo`, `/redo`, `/retry` and `/edit TEXT` from the chat: the REPL's turn
//! commands, through the same store calls as `POST /v1/sessions/{id}/undo` and
//! friends. In a group they act on the shared session, with one rule: taking
//! back or rewriting a turn (`/undo`, `/edit`) is for whoever asked it, or a
//! Weft admin; `/redo` and `/retry` are for anyone. A retried or edited turn
//! stays its asker's run (their limits, their instructions).

use weft_shared::ids::UserId;
use weft_store::{AuthUser, Role, SessionRecord, TurnOutcome};

use super::super::Bot;
use super::super::commands::{Lang, TurnCommand};
use super::super::inbound::{ChatType, Incoming};

impl Bot {
    /// Does `command` and says how it went.
    pub(super) async fn turn_command(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        session: &SessionRecord,
        command: TurnCommand,
        lang: Lang,
    ) -> anyhow::Result<String> {
        let store = &self.state.store;
        let (owner, id) = (&session.user_id, &session.id);
        let limits = weft_store::RunLimits::from(&self.state.config().limits);
        let own = only_own_turns(incoming, user);
        let outcome = match &command {
            TurnCommand::Undo => store.undo_turn(owner, id, own).await?,
            TurnCommand::Redo => store.redo_turn(owner, id).await?,
            TurnCommand::Retry => {
                store
                    .regenerate_turn(owner, id, None, None, &limits)
                    .await?
            }
            TurnCommand::Edit(None) => {
                return Ok(lang
                    .pick(
                        "Write the new question after it: `/edit TEXT`.",
                        "请在命令后写上新的问题：`/edit 内容`。",
                    )
                    .to_owned());
            }
            TurnCommand::Edit(Some(text)) => {
                store
                    .regenerate_turn(owner, id, Some(text), own, &limits)
                    .await?
            }
        };
        Ok(match outcome {
            TurnOutcome::NotYours { asked_by } => self.not_yours(&asked_by, lang).await,
            TurnOutcome::Done { .. } => match command {
                TurnCommand::Undo => lang.pick(
                    "↩️ The last question and answer are out of the conversation.",
                    "↩️ 上一轮问答已从对话中撤下。",
                ),
                _ => lang.pick(
                    "↪️ The turn undone last is back in the conversation.",
                    "↪️ 刚撤下的一轮问答已恢复。",
                ),
            }
            .to_owned(),
            TurnOutcome::Started { run } => {
                self.state.runs.enqueue(run).await;
                lang.pick(
                    "🔁 Answering the last question again.",
                    "🔁 正在重新回答上一个问题。",
                )
                .to_owned()
            }
            TurnOutcome::RunActive { .. } => lang
                .pick(
                    "A reply is still running: /stop it first.",
                    "还有回复在进行中，请先 /stop。",
                )
                .to_owned(),
            TurnOutcome::Nothing => match command {
                TurnCommand::Undo => lang.pick("Nothing to undo.", "没有可撤销的内容。"),
                TurnCommand::Redo => lang.pick("Nothing to redo.", "没有可恢复的内容。"),
                _ => lang.pick(
                    "There is no question to answer again.",
                    "还没有可以重新回答的问题。",
                ),
            }
            .to_owned(),
            TurnOutcome::TooManyActive | TurnOutcome::RateLimited { .. } => lang
                .pick(
                    "⏳ You are at your run limit; try again in a minute.",
                    "⏳ 已达到运行次数上限，请稍后再试。",
                )
                .to_owned(),
        })
    }

    /// "Only Alice, who asked the last question, or a Weft admin can …".
    pub(super) async fn not_yours(&self, asked_by: &UserId, lang: Lang) -> String {
        let name = match self.state.store.get_user(asked_by).await {
            Ok(u) => self.display_name(&u).await,
            Err(_) => lang.pick("whoever asked it", "提问的人").to_owned(),
        };
        match lang {
            Lang::En => format!(
                "Only {name}, who asked the last question, or a Weft admin can change that turn."
            ),
            Lang::Zh => format!("只有提出上一个问题的 {name} 或 Weft 管理员可以更改这一轮。"),
        }
    }
}

/// In a group, a turn may be taken back only by whoever asked it — unless the
/// user is a Weft admin (`None`: anyone may).
fn only_own_turns<'a>(incoming: &Incoming, user: &'a AuthUser) -> Option<&'a UserId> {
    (incoming.chat_type == ChatType::Group && user.role != Role::Admin).then_some(&user.id)
}
