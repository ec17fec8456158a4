//! `/schedules` from a chat (docs/schedules.md): the speaker's own schedules —
//! the list, `/schedules pause|resume|run|rm N` — in a DM only, like
//! `/memory`: a schedule's prompt is its owner's to read. Making one needs no
//! command: asked in chat ("every weekday at 9:00 … here"), the agent calls
//! `schedule_create` and the person confirms it on the approval card.
//!
//! Numbered oldest first and read again for each command (the bot keeps
//! nothing between messages; a schedule made meanwhile joins the end).

use weft_shared::api::FireOutcome;
use weft_store::{AuthUser, ScheduleRecord, ScheduleUpdate};

use super::super::Bot;
use super::super::commands::{Lang, ScheduleCommand};
use super::super::inbound::{ChatType, Incoming};

/// The most schedules one answer lists.
const LISTED: usize = 30;

impl Bot {
    pub(super) async fn schedule_command(
        &self,
        incoming: &Incoming,
        user: &AuthUser,
        command: ScheduleCommand,
        lang: Lang,
    ) -> anyhow::Result<String> {
        if incoming.chat_type != ChatType::P2p {
            return Ok(lang
                .pick(
                    "🔒 Your schedules are yours alone: ask me in a DM (send `/schedules` there).",
                    "🔒 定时任务只属于你本人：请私聊我（在私聊中发送 `/schedules`）。",
                )
                .to_owned());
        }
        let store = &self.state.store;
        let schedules = store.list_schedules(&user.id).await?;
        let pick = |n: usize| schedules.get(n - 1);
        let missing = |n: usize| match lang {
            Lang::En => format!("There is no schedule {n}; `/schedules` lists them."),
            Lang::Zh => format!("没有第 {n} 个定时任务；`/schedules` 可查看列表。"),
        };
        let change = |enabled: bool| ScheduleUpdate {
            enabled: Some(enabled),
            ..Default::default()
        };
        Ok(match command {
            ScheduleCommand::List => list(&schedules, lang),
            ScheduleCommand::Missing => lang
                .pick(
                    "Which one? `/schedules` lists them, then `/schedules pause N` (or resume, run, rm).",
                    "哪一个？先用 `/schedules` 查看，再 `/schedules pause N`（或 resume、run、rm）。",
                )
                .to_owned(),
            ScheduleCommand::Pause(n) | ScheduleCommand::Resume(n) => match pick(n) {
                None => missing(n),
                Some(s) => {
                    let on = matches!(command, ScheduleCommand::Resume(_));
                    let s = store.update_schedule(&user.id, &s.id, &change(on)).await?;
                    match (on, lang) {
                        (false, Lang::En) => format!("⏸ Paused {n}: {}", s.name),
                        (false, Lang::Zh) => format!("⏸ 已暂停第 {n} 个：{}", s.name),
                        (true, _) => format!(
                            "▶ {} {n}: {} · {}",
                            lang.pick("Resumed", "已恢复第"),
                            s.name,
                            next_words(&s, lang)
                        ),
                    }
                }
            },
            ScheduleCommand::Run(n) => match pick(n) {
                None => missing(n),
                Some(s) => {
                    let fired = self.state.runs.fire_now(&user.id, &s.id).await?;
                    match (fired.outcome, lang) {
                        (FireOutcome::Started | FireOutcome::Queued, Lang::En) => {
                            format!("▶ Running {n} now: {}", s.name)
                        }
                        (FireOutcome::Started | FireOutcome::Queued, Lang::Zh) => {
                            format!("▶ 正在运行第 {n} 个：{}", s.name)
                        }
                        (outcome, _) => format!(
                            "{} ({})",
                            lang.pick("Not run now", "未运行"),
                            outcome.as_str()
                        ),
                    }
                }
            },
            ScheduleCommand::Remove(n) => match pick(n) {
                None => missing(n),
                Some(s) => {
                    store.delete_schedule(&user.id, &s.id).await?;
                    match lang {
                        Lang::En => format!("🗑 Deleted {n}: {}", s.name),
                        Lang::Zh => format!("🗑 已删除第 {n} 个：{}", s.name),
                    }
                }
            },
        })
    }
}

fn list(schedules: &[ScheduleRecord], lang: Lang) -> String {
    if schedules.is_empty() {
        return lang
            .pick(
                "You have no schedules. Ask me for one, e.g. \"every weekday at 9:00 Shanghai time, summarise yesterday's open issues here\".",
                "你还没有定时任务。直接告诉我即可，例如：“每个工作日上海时间 9 点，在这里总结昨天未关闭的问题”。",
            )
            .to_owned();
    }
    let mut lines: Vec<String> = schedules
        .iter()
        .take(LISTED)
        .enumerate()
        .map(|(i, s)| {
            let when = s.timing().map(|t| t.describe()).unwrap_or_default();
            let last = s
                .last_fire
                .as_ref()
                .map(|f| {
                    let status = f
                        .run_status
                        .map(|r| r.as_str())
                        .unwrap_or(f.outcome.as_str());
                    format!(" · {} {status}", lang.pick("last:", "上次："))
                })
                .unwrap_or_default();
            format!(
                "{}. **{}** — {when} · {}{last}",
                i + 1,
                s.name,
                next_words(s, lang)
            )
        })
        .collect();
    if schedules.len() > LISTED {
        lines.push(format!("… +{}", schedules.len() - LISTED));
    }
    format!(
        "{}\n{}\n\n{}",
        lang.pick("**Your schedules**", "**你的定时任务**"),
        lines.join("\n"),
        lang.pick(
            "`/schedules pause|resume|run|rm N`",
            "`/schedules pause|resume|run|rm N`"
        )
    )
}

/// "next 2026-12-07 09:00 (+08:00)", "paused", or "done".
fn next_words(s: &ScheduleRecord, lang: Lang) -> String {
    match (s.enabled, s.next_fire_at, s.timing()) {
        (false, _, _) => lang.pick("paused", "已暂停").to_owned(),
        (true, Some(next), Ok(t)) => {
            let local = t.local(next);
            let shown = match (local.get(..16), local.get(19..)) {
                (Some(day_time), Some(offset)) => {
                    format!("{} ({offset})", day_time.replace('T', " "))
                }
                _ => local,
            };
            format!("{} {shown}", lang.pick("next", "下次"))
        }
        _ => lang.pick("will not run again", "不会再运行").to_owned(),
    }
}
