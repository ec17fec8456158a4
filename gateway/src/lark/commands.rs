//! Slash commands and stop words: parsing and the texts the bot answers with.
//! Pure, so the exact-match rules ("停" stops, "停下来一下" does not) are unit tests.

pub use weft_lark::text::Lang;

const STOP_WORDS: [&str; 7] = ["停", "停下", "不用了", "取消", "stop", "中止", "停止"];

/// Whether `text` is exactly a stop word (trimmed; Latin case-insensitive).
pub fn is_stop_word(text: &str) -> bool {
    let t = text.trim();
    STOP_WORDS.iter().any(|w| w.eq_ignore_ascii_case(t))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    New,
    Stop,
    Flush,
    Model(Option<String>),
    /// `/agent [id]` (`/mode` is its older name).
    Agent(Option<String>),
    /// `/undo`, `/redo`, `/retry`, `/edit TEXT`: see `handle::turn_commands`.
    Turn(TurnCommand),
    /// Summarise older turns before the next reply.
    Compact,
    Sessions,
    /// `/resume N`: the N-th conversation of `/sessions` (1 = newest).
    Resume(Option<usize>),
    /// `/kb`: the knowledge bases this chat's conversation searches.
    Kb(KbCommand),
    /// `/memory`: what the assistant remembers about the speaker (a DM only).
    Memory(MemoryCommand),
    /// `/schedules`: the speaker's schedules (a DM only).
    Schedules(ScheduleCommand),
    /// `/plan TASK`: send TASK in plan mode (everything after `/plan`, lines
    /// and all; none: say how).
    Plan(Option<String>),
    Help,
    Unknown(String),
}

/// The commands that change a turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnCommand {
    /// Take the last turn out of the conversation.
    Undo,
    /// Bring back the turn undone last.
    Redo,
    /// Answer the last question again.
    Retry,
    /// Replace the last question's text (everything after `/edit`) and answer it again.
    Edit(Option<String>),
}

/// `/kb` (list), `/kb use NAME` (or `/kb NAME`), `/kb off`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KbCommand {
    List,
    /// Search this base too in this conversation.
    Use(String),
    /// Search only the agent's bases again.
    Off,
}

/// `/memory` (list), `/memory forget N`, `/memory off`, `/memory on`: the
/// speaker's own memories, numbered as `/memory` lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryCommand {
    List,
    /// Forget the N-th memory of the list (none: the number is missing).
    Forget(Option<usize>),
    Off,
    On,
}

/// `/schedules` (list), `/schedules pause|resume|run|rm N`: the speaker's
/// schedules, numbered as the list shows them. A verb without a number (or
/// with one that is not) is `Missing`: the bot says how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleCommand {
    List,
    Pause(usize),
    Resume(usize),
    Run(usize),
    Remove(usize),
    Missing,
}

/// A command, when `text` starts with `/`.
pub fn parse(text: &str) -> Option<Command> {
    let rest = text.trim().strip_prefix('/')?;
    let mut parts = rest.split_whitespace();
    let name = parts.next().unwrap_or_default().to_lowercase();
    let arg = parts.next().map(str::to_owned);
    let second = parts.next();
    // `/edit` and `/plan` take the whole rest of the message, lines and all.
    let rest = rest
        .trim_start()
        .get(name.len()..)
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    Some(match name.as_str() {
        "new" => Command::New,
        "stop" => Command::Stop,
        "flush" => Command::Flush,
        "model" => Command::Model(arg),
        "mode" | "agent" => Command::Agent(arg),
        "undo" => Command::Turn(TurnCommand::Undo),
        "redo" => Command::Turn(TurnCommand::Redo),
        "retry" | "regenerate" => Command::Turn(TurnCommand::Retry),
        "edit" => Command::Turn(TurnCommand::Edit(rest)),
        "compact" => Command::Compact,
        "plan" => Command::Plan(rest),
        "sessions" => Command::Sessions,
        "resume" => Command::Resume(arg.and_then(|a| a.parse().ok()).filter(|n| *n > 0)),
        // Base names may hold spaces: the name is the rest of the line.
        "kb" | "knowledge" => Command::Kb(match (arg.as_deref(), rest.as_deref()) {
            (None, _) | (_, None) => KbCommand::List,
            (Some("off" | "clear" | "none"), _) => KbCommand::Off,
            (Some("use"), Some(rest)) => match rest.strip_prefix("use").map(str::trim) {
                Some(name) if !name.is_empty() => KbCommand::Use(name.to_owned()),
                _ => KbCommand::List,
            },
            (Some(_), Some(rest)) => KbCommand::Use(rest.to_owned()),
        }),
        "memory" | "memories" => Command::Memory(match arg.as_deref().map(str::to_lowercase) {
            Some(a) if a == "forget" || a == "delete" => {
                MemoryCommand::Forget(second.and_then(|n| n.parse().ok()).filter(|n| *n > 0))
            }
            Some(a) if a == "off" => MemoryCommand::Off,
            Some(a) if a == "on" => MemoryCommand::On,
            _ => MemoryCommand::List,
        }),
        "schedules" | "schedule" => Command::Schedules({
            let n = second.and_then(|n| n.parse().ok()).filter(|n| *n > 0);
            match (arg.as_deref().map(str::to_lowercase).as_deref(), n) {
                (None, _) => ScheduleCommand::List,
                (Some("pause"), Some(n)) => ScheduleCommand::Pause(n),
                (Some("resume"), Some(n)) => ScheduleCommand::Resume(n),
                (Some("run"), Some(n)) => ScheduleCommand::Run(n),
                (Some("rm" | "remove" | "delete"), Some(n)) => ScheduleCommand::Remove(n),
                (Some("pause" | "resume" | "run" | "rm" | "remove" | "delete"), None) => {
                    ScheduleCommand::Missing
                }
                _ => ScheduleCommand::List,
            }
        }),
        "help" | "h" | "?" => Command::Help,
        _ => Command::Unknown(format!("/{name}")),
    })
}

pub fn help(lang: Lang) -> &'static str {
    lang.pick(
        "**Commands**\n\
         `/new` start a new conversation\n\
         `/stop` stop the current reply (also: stop, 停, 取消 …)\n\
         `/flush` stop it and answer everything you sent meanwhile at once\n\
         `/model [id]` show or switch the model\n\
         `/agent [id]` show or switch the agent (`/mode` works too)\n\
         `/undo` take the last question and answer out of the conversation (in a group: your own turn)\n\
         `/redo` bring back the turn undone last\n\
         `/retry` answer the last question again\n\
         `/edit TEXT` replace the last question with TEXT and answer again (in a group: your own)\n\
         `/compact` summarise the older turns before the next reply\n\
         `/plan TASK` plan first: I research TASK and propose a plan; approve or reject it, or reply with changes, before anything is done\n\
         `/sessions` this chat's conversations\n\
         `/resume N` go back to conversation N of `/sessions`\n\
         `/kb` the knowledge bases I search here; `/kb use NAME` add one, `/kb off` only the agent's\n\
         `/memory` what I remember about you (in a DM); `/memory forget N` forget one, `/memory off` / `/memory on` your memory\n\
         `/schedules` your schedules (in a DM); `/schedules pause|resume|run|rm N`. To make one, just ask: \"every weekday at 9:00 summarise … here\"\n\
         `/help` this list\n\n\
         In a group everyone speaks as themselves in one shared conversation; \
         reply to one of my messages to talk to me without an @mention. \
         `/stop` stops the current reply for anyone; approvals are decided by whoever asked.",
        "**命令**\n\
         `/new` 开始新对话\n\
         `/stop` 停止当前回复（也可以发：停、取消、stop …）\n\
         `/flush` 停止当前回复，并把期间发来的消息一起回答\n\
         `/model [id]` 查看或切换模型\n\
         `/agent [id]` 查看或切换智能体（也可用 `/mode`）\n\
         `/undo` 把上一轮问答从对话中撤下（群聊中只能撤自己的）\n\
         `/redo` 恢复刚撤下的一轮\n\
         `/retry` 重新回答上一个问题\n\
         `/edit 内容` 把上一个问题改成新内容并重新回答（群聊中只能改自己的）\n\
         `/compact` 在下一次回复前先总结较早的对话\n\
         `/plan 任务` 先出计划：我调研任务并提出计划，你批准、否决或回复修改意见之后才动手\n\
         `/sessions` 本聊天的对话列表\n\
         `/resume N` 回到 `/sessions` 中的第 N 个对话\n\
         `/kb` 本对话检索的知识库；`/kb use 名称` 添加一个，`/kb off` 只用智能体自己的\n\
         `/memory` 我记住的关于你的内容（仅限私聊）；`/memory forget N` 删除一条，`/memory off` / `/memory on` 关闭或开启记忆\n\
         `/schedules` 你的定时任务（仅限私聊）；`/schedules pause|resume|run|rm N`。新建只需直接说：“每个工作日 9 点在这里总结……”\n\
         `/help` 显示本帮助\n\n\
         群聊中每个人以自己的身份参与同一个对话；回复我的消息即可与我对话，无需 @。\
         任何人都可以用 `/stop` 停止当前回复；审批由提出请求的人决定。",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_match_exactly() {
        for w in [
            "停",
            " 停下 ",
            "不用了",
            "取消",
            "stop",
            "STOP",
            "Stop",
            "中止",
            "停止",
        ] {
            assert!(is_stop_word(w), "{w}");
        }
        for w in [
            "停下来一下",
            "取消我的会议",
            "stop it",
            "please stop",
            "",
            "/stop",
        ] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn commands_parse() {
        assert_eq!(parse("/new"), Some(Command::New));
        assert_eq!(
            parse("/agent chat"),
            Some(Command::Agent(Some("chat".into())))
        );
        assert_eq!(parse("/undo"), Some(Command::Turn(TurnCommand::Undo)));
        assert_eq!(parse("/retry"), Some(Command::Turn(TurnCommand::Retry)));
        assert_eq!(
            parse("/edit what about  Tuesday?\nand Wed"),
            Some(Command::Turn(TurnCommand::Edit(Some(
                "what about  Tuesday?\nand Wed".into()
            ))))
        );
        assert_eq!(parse("/edit"), Some(Command::Turn(TurnCommand::Edit(None))));
        assert_eq!(parse("/compact"), Some(Command::Compact));
        assert_eq!(
            parse("/plan fix the login bug\nand add a test"),
            Some(Command::Plan(Some(
                "fix the login bug\nand add a test".into()
            )))
        );
        assert_eq!(parse("/PLAN  "), Some(Command::Plan(None)));
        assert_eq!(
            parse(" /Model gpt "),
            Some(Command::Model(Some("gpt".into())))
        );
        assert_eq!(parse("/model"), Some(Command::Model(None)));
        assert_eq!(parse("/resume 2"), Some(Command::Resume(Some(2))));
        assert_eq!(parse("/resume zero"), Some(Command::Resume(None)));
        assert_eq!(parse("/resume 0"), Some(Command::Resume(None)));
        assert_eq!(parse("/kb"), Some(Command::Kb(KbCommand::List)));
        assert_eq!(
            parse("/kb use handbook"),
            Some(Command::Kb(KbCommand::Use("handbook".into())))
        );
        assert_eq!(
            parse("/KB handbook"),
            Some(Command::Kb(KbCommand::Use("handbook".into())))
        );
        assert_eq!(parse("/kb off"), Some(Command::Kb(KbCommand::Off)));
        assert_eq!(
            parse("/kb use Team handbook v2"),
            Some(Command::Kb(KbCommand::Use("Team handbook v2".into())))
        );
        assert_eq!(parse("/kb use"), Some(Command::Kb(KbCommand::List)));
        assert_eq!(parse("/memory"), Some(Command::Memory(MemoryCommand::List)));
        assert_eq!(
            parse("/Memory forget 2"),
            Some(Command::Memory(MemoryCommand::Forget(Some(2))))
        );
        for bad in ["/memory forget", "/memory forget two", "/memory forget 0"] {
            assert_eq!(
                parse(bad),
                Some(Command::Memory(MemoryCommand::Forget(None))),
                "{bad}"
            );
        }
        assert_eq!(
            parse("/memory OFF"),
            Some(Command::Memory(MemoryCommand::Off))
        );
        assert_eq!(
            parse("/memory on"),
            Some(Command::Memory(MemoryCommand::On))
        );
        assert_eq!(
            parse("/memory what"),
            Some(Command::Memory(MemoryCommand::List))
        );
        assert_eq!(
            parse("/schedules"),
            Some(Command::Schedules(ScheduleCommand::List))
        );
        assert_eq!(
            parse("/schedules pause 2"),
            Some(Command::Schedules(ScheduleCommand::Pause(2)))
        );
        assert_eq!(
            parse("/Schedule RM 1"),
            Some(Command::Schedules(ScheduleCommand::Remove(1)))
        );
        for bad in ["/schedules run", "/schedules resume x", "/schedules rm 0"] {
            assert_eq!(
                parse(bad),
                Some(Command::Schedules(ScheduleCommand::Missing)),
                "{bad}"
            );
        }
        assert_eq!(
            parse("/frobnicate"),
            Some(Command::Unknown("/frobnicate".into()))
        );
        assert_eq!(parse("hello /new"), None);
    }

    #[test]
    fn language_follows_the_text() {
        assert_eq!(Lang::of("停", Lang::En), Lang::Zh);
        assert_eq!(Lang::of("stop", Lang::Zh), Lang::En);
        assert_eq!(Lang::of("👍", Lang::Zh), Lang::Zh);
    }
}
