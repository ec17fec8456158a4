//! Texts with values in them: durations, counts, who decided, the reply
//! footer. Each takes the [`Lang`] first.

use std::time::Duration;

use super::Lang;

/// Where a plan stands (what a plan card or toast reports).
pub use weft_wire::states::PlanStatus;
/// How an approval was answered (what a card or toast reports).
pub use weft_wire::states::Verdict;

/// `12 ms`, `3.2 s` (`12 毫秒`, `3.2 秒`).
pub fn duration(lang: Lang, ms: u64) -> String {
    match (ms < 1000, lang) {
        (true, Lang::En) => format!("{ms} ms"),
        (true, Lang::Zh) => format!("{ms} 毫秒"),
        (false, Lang::En) => format!("{:.1} s", ms as f64 / 1000.0),
        (false, Lang::Zh) => format!("{:.1} 秒", ms as f64 / 1000.0),
    }
}

/// `30 min`, `2 h`, `45 s`: how long an approval waits.
pub fn span(lang: Lang, d: Duration) -> String {
    let secs = d.as_secs();
    let (n, en, zh) = if secs >= 3600 && secs.is_multiple_of(3600) {
        (secs / 3600, "h", "小时")
    } else if secs >= 60 {
        (secs.div_ceil(60), "min", "分钟")
    } else {
        (secs, "s", "秒")
    };
    format!("{n} {}", lang.pick(en, zh))
}

/// `⏳ still working… 3 min` (`⏳ 仍在处理… 3 分钟`): a reply that has said
/// nothing for minutes, `elapsed_ms` into it (whole minutes, then hours).
pub fn still_working(lang: Lang, elapsed_ms: u64) -> String {
    let spent = weft_wire::time::whole_minutes(
        elapsed_ms,
        lang.pick("min", "分钟"),
        lang.pick("h", "小时"),
    );
    match lang {
        Lang::En => format!("⏳ still working… {spent}"),
        Lang::Zh => format!("⏳ 仍在处理… {spent}"),
    }
}

/// The question of a reply asked outside Lark, quoted over the answer:
/// `💬 From the web UI: "…"`.
pub fn asked_elsewhere(lang: Lang, question: &str) -> String {
    match lang {
        Lang::En => format!("💬 Asked in the web UI or terminal: “{question}”"),
        Lang::Zh => format!("💬 来自网页或终端的提问：“{question}”"),
    }
}

/// A token count, compact: `850`, `1.2K`, `3.4M`.
pub fn count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}K", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// The reasoning panel's title: `💭 Thinking… 4.3 s · 1.2K tokens` while the
/// model thinks, `💭 4.3 s · 1.2K tokens` once the answer started.
pub fn reasoning_title(lang: Lang, thinking: bool, ms: u64, tokens: u64) -> String {
    let took = format!("{} · {} tokens", duration(lang, ms), count(tokens));
    if thinking {
        format!("💭 {} {took}", lang.text(super::Text::Thinking))
    } else {
        format!("💭 {took}")
    }
}

/// `☑ Todo 2/5 ▰▰▰▰▱▱▱▱▱▱`: how much of the todo list is done, as a bar of ten.
pub fn todo_title(lang: Lang, done: usize, total: usize) -> String {
    let filled = (done * 10).checked_div(total).unwrap_or(0).min(10);
    let bar = format!("{}{}", "▰".repeat(filled), "▱".repeat(10 - filled));
    match lang {
        Lang::En => format!("☑ Todo {done}/{total} {bar}"),
        Lang::Zh => format!("☑ 待办 {done}/{total} {bar}"),
    }
}

/// One task the agent handed to another agent (`delegate`): `↳ researcher ·
/// working… — find the numbers`.
pub fn delegation(
    lang: Lang,
    agent: &str,
    task: &str,
    status: weft_wire::states::DelegationStatus,
) -> String {
    use weft_wire::states::DelegationStatus as S;
    let state = match (lang, status) {
        (Lang::En, S::Running) => "working…",
        (Lang::En, S::Succeeded) => "✓ answered",
        (Lang::En, S::Failed) => "✗ failed",
        (Lang::En, S::Cancelled) => "⏹ cancelled",
        (Lang::Zh, S::Running) => "处理中…",
        (Lang::Zh, S::Succeeded) => "✓ 已答复",
        (Lang::Zh, S::Failed) => "✗ 失败",
        (Lang::Zh, S::Cancelled) => "⏹ 已取消",
    };
    format!("↳ **{agent}** · {state} — {task}")
}

/// `Weft (continued 2/3)`.
pub fn continued(lang: Lang, title: &str, page: usize, pages: usize) -> String {
    match lang {
        Lang::En => format!("{title} (continued {page}/{pages})"),
        Lang::Zh => format!("{title}（续 {page}/{pages}）"),
    }
}

/// The line that stands for tool calls too many to show one by one.
pub fn earlier_calls(lang: Lang, n: usize) -> String {
    match lang {
        Lang::En => format!("… and {n} earlier calls"),
        Lang::Zh => format!("… 之前还有 {n} 次调用"),
    }
}

/// Who answered an approval, on its tool line: `approved by alice`.
pub fn decided_by(lang: Lang, verdict: Verdict, by: Option<&str>) -> String {
    let (en, zh) = match verdict {
        Verdict::Approved => ("approved", "已批准"),
        Verdict::Denied => ("denied", "已拒绝"),
        Verdict::Expired => return lang.text(super::Text::Expired).to_owned(),
    };
    match (by, lang) {
        (Some(by), Lang::En) => format!("{en} by {by}"),
        (Some(by), Lang::Zh) => format!("{by} {zh}"),
        (None, _) => lang.pick(en, zh).to_owned(),
    }
}

/// The reply's numbers, for its footer.
#[derive(Debug, Clone, PartialEq)]
pub struct Footer {
    pub duration_ms: u64,
    /// Input tokens billed at the full rate (not read from a cache).
    pub billed_input: u64,
    /// Input tokens read from the provider's cache.
    pub cached_input: u64,
    pub output: u64,
    /// Output tokens per second after the first token.
    pub tokens_per_s: f64,
    /// How full the model's context window was, when the window is known.
    pub context_percent: Option<u64>,
    pub model: String,
}

/// `3.2 s · 1.2K (+4.0K cached) → 345 tokens · 14.1 tok/s · 3% context · model`.
pub fn footer(lang: Lang, f: &Footer) -> String {
    let mut input = count(f.billed_input);
    if f.cached_input > 0 {
        let cached = count(f.cached_input);
        input.push_str(&match lang {
            Lang::En => format!(" (+{cached} cached)"),
            Lang::Zh => format!("（+{cached} 缓存）"),
        });
    }
    let mut parts = vec![
        duration(lang, f.duration_ms),
        format!("{input} → {} tokens", count(f.output)),
        format!("{:.1} tok/s", f.tokens_per_s),
    ];
    if let Some(pct) = f.context_percent {
        parts.push(match lang {
            Lang::En => format!("{pct}% context"),
            Lang::Zh => format!("上下文 {pct}%"),
        });
    }
    parts.push(f.model.clone());
    parts.join(" · ")
}

// --- The approval card ---

/// The title of a card asking for `tool`.
pub fn approve_title(lang: Lang, tool: &str) -> String {
    match lang {
        Lang::En => format!("Approve {tool}?"),
        Lang::Zh => format!("允许运行 {tool}？"),
    }
}

/// The title of a card once answered, or `None` (expired, closed): not decided.
pub fn answered_title(lang: Lang, tool: &str, verdict: Option<Verdict>) -> String {
    match (verdict, lang) {
        (Some(Verdict::Approved), Lang::En) => format!("{tool} approved"),
        (Some(Verdict::Approved), Lang::Zh) => format!("已批准 {tool}"),
        (Some(Verdict::Denied), Lang::En) => format!("{tool} denied"),
        (Some(Verdict::Denied), Lang::Zh) => format!("已拒绝 {tool}"),
        (_, Lang::En) => format!("{tool}: not decided"),
        (_, Lang::Zh) => format!("{tool}：未决定"),
    }
}

/// `**`tool`** wants to run (no arguments).`
pub fn wants_to_run(lang: Lang, tool: &str) -> String {
    match lang {
        Lang::En => format!("**`{tool}`** wants to run (no arguments)."),
        Lang::Zh => format!("**`{tool}`** 请求运行（无参数）。"),
    }
}

/// `**`tool`** wants to run with:` (the arguments follow).
pub fn wants_to_run_with(lang: Lang, tool: &str) -> String {
    match lang {
        Lang::En => format!("**`{tool}`** wants to run with:"),
        Lang::Zh => format!("**`{tool}`** 请求以如下参数运行："),
    }
}

/// What the buttons of an open approval do, and when it expires.
pub fn approval_open(lang: Lang, tool: &str, expires_in: Duration) -> String {
    let within = span(lang, expires_in);
    match lang {
        Lang::En => format!(
            "**Approve** lets it run once, **Deny** refuses, **Always allow** also stops asking about `{tool}` in this conversation. Unanswered within {within}, it counts as denied."
        ),
        Lang::Zh => format!(
            "**批准**：允许运行这一次；**拒绝**：不运行；**总是允许**：本对话中不再询问 `{tool}`。{within}内无人回应则视为拒绝。"
        ),
    }
}

/// `✅ approved by alice` (and, for always, that it stops asking).
pub fn approval_approved(lang: Lang, by: &str, always: bool) -> String {
    match (lang, always) {
        (Lang::En, false) => format!("✅ approved by {by}"),
        (Lang::En, true) => {
            format!("✅ approved by {by} · always allowed in this conversation")
        }
        (Lang::Zh, false) => format!("✅ {by} 已批准"),
        (Lang::Zh, true) => format!("✅ {by} 已批准 · 本对话中不再询问"),
    }
}

/// `❌ denied by alice`.
pub fn approval_denied(lang: Lang, by: &str) -> String {
    match lang {
        Lang::En => format!("❌ denied by {by}"),
        Lang::Zh => format!("❌ {by} 已拒绝"),
    }
}

// --- The question card ---

/// How a question can be answered, as its card's hint says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answering {
    /// One of the options: a button, or its number in the chat; `text`: or a
    /// typed answer.
    Pick { text: bool },
    /// Several options: their numbers in the chat; `text`: or a typed answer.
    PickSeveral { text: bool },
    /// A typed answer (no options).
    Type,
}

/// How to answer an open question of `options` options, and when it expires.
pub fn question_hint(lang: Lang, how: Answering, options: usize, expires_in: Duration) -> String {
    let within = span(lang, expires_in);
    let how = match (lang, how) {
        (Lang::En, Answering::Pick { text: false }) => {
            format!("Click an option, or reply in the chat with its number (1–{options}).")
        }
        (Lang::En, Answering::Pick { text: true }) => format!(
            "Click an option, or reply in the chat with its number (1–{options}) or your own answer."
        ),
        (Lang::En, Answering::PickSeveral { text: false }) => {
            "Reply in the chat with the numbers of your choices, e.g. `1,3`.".to_owned()
        }
        (Lang::En, Answering::PickSeveral { text: true }) => {
            "Reply in the chat with the numbers of your choices, e.g. `1,3`, or your own answer."
                .to_owned()
        }
        (Lang::En, Answering::Type) => "Reply in the chat with your answer.".to_owned(),
        (Lang::Zh, Answering::Pick { text: false }) => {
            format!("点击一个选项，或在对话中回复它的编号（1–{options}）。")
        }
        (Lang::Zh, Answering::Pick { text: true }) => {
            format!("点击一个选项，或在对话中回复它的编号（1–{options}）或你自己的回答。")
        }
        (Lang::Zh, Answering::PickSeveral { text: false }) => {
            "在对话中回复所选选项的编号，例如 `1,3`。".to_owned()
        }
        (Lang::Zh, Answering::PickSeveral { text: true }) => {
            "在对话中回复所选选项的编号（例如 `1,3`）或你自己的回答。".to_owned()
        }
        (Lang::Zh, Answering::Type) => "在对话中回复你的回答。".to_owned(),
    };
    match lang {
        Lang::En => {
            format!("{how} Unanswered within {within}, the reply goes on without an answer.")
        }
        Lang::Zh => format!("{how}{within}内无人回答，回复将在没有回答的情况下继续。"),
    }
}

/// An answer as one line: the chosen options (or the typed answer), joined.
pub fn answer_text(lang: Lang, answer: &[String]) -> String {
    answer.join(lang.pick(", ", "、"))
}

/// `✅ Answered by alice: blue`.
pub fn question_answered(lang: Lang, by: &str, answer: &[String]) -> String {
    let answer = answer_text(lang, answer);
    match lang {
        Lang::En => format!("✅ Answered by {by}: {answer}"),
        Lang::Zh => format!("✅ {by} 的回答：{answer}"),
    }
}

/// A click on (or a reply to) a question already answered: what stands.
pub fn already_answered(lang: Lang, by: Option<&str>, answer: &[String]) -> String {
    let answer = answer_text(lang, answer);
    match (lang, by) {
        (Lang::En, Some(by)) => format!("Already answered by {by}: {answer}."),
        (Lang::En, None) => format!("Already answered: {answer}."),
        (Lang::Zh, Some(by)) => format!("已经回答过了：{by} 的回答是 {answer}。"),
        (Lang::Zh, None) => format!("已经回答过了：{answer}。"),
    }
}

/// A click by someone else than `owner`, whose message led to the question.
pub fn only_owner_answers(lang: Lang, owner: &str) -> String {
    match lang {
        Lang::En => {
            format!("Only {owner}, whose message led to this question, or a Weft admin can answer.")
        }
        Lang::Zh => format!("只有引出这个问题的 {owner} 或 Weft 管理员可以回答。"),
    }
}

/// A reply in the chat that does not answer the open question: why, and how
/// to answer it (`options`: how many it offers).
pub fn not_an_answer(lang: Lang, why: &str, options: usize) -> String {
    match (lang, options) {
        (Lang::En, 0) => {
            format!("🤔 That does not answer the question: {why}. The question is still open.")
        }
        (Lang::En, n) => format!(
            "🤔 That does not answer the question: {why}. Reply with an option's number (1–{n}) or its text; the question is still open."
        ),
        (Lang::Zh, 0) => format!("🤔 这不是对问题的有效回答：{why}。问题仍在等待回答。"),
        (Lang::Zh, n) => format!(
            "🤔 这不是对问题的有效回答：{why}。请回复选项的编号（1–{n}）或选项文字；问题仍在等待回答。"
        ),
    }
}

/// Why a reply is not an answer: a number past the options.
pub fn no_such_option(lang: Lang, n: u64) -> String {
    match lang {
        Lang::En => format!("there is no option {n}"),
        Lang::Zh => format!("没有选项 {n}"),
    }
}

/// Why a reply is not an answer: several options for a one-answer question.
pub fn one_answer_only(lang: Lang) -> &'static str {
    lang.pick("this question takes one answer", "这个问题只能选一个")
}

/// Why a reply is not an answer: not one of the options (and no typed answer
/// is taken).
pub fn not_an_option(lang: Lang, text: &str) -> String {
    match lang {
        Lang::En => format!("“{text}” is not one of the options"),
        Lang::Zh => format!("“{text}”不是可选的选项"),
    }
}

// --- The plan card (plan mode) ---

/// What the buttons of an open plan do, how to ask for changes, and when it
/// expires.
pub fn plan_hint(lang: Lang, expires_in: Duration) -> String {
    let within = span(lang, expires_in);
    match lang {
        Lang::En => format!(
            "**Approve** carries the plan out, with every tool; **Reject** ends the reply with nothing done. To ask for changes, reply in this chat. Undecided within {within}, the plan expires and the reply ends."
        ),
        Lang::Zh => format!(
            "**批准**：按计划执行（可使用全部工具）；**否决**：结束回复，不做任何改动。要修改计划，在本对话中回复即可。{within}内无人决定，计划过期，回复结束。"
        ),
    }
}

/// `what` (said by `by`), with the comment that came with it, if any.
fn with_comment(lang: Lang, what: String, comment: Option<&str>) -> String {
    match comment {
        Some(c) => format!("{what}{}{c}", lang.pick(": ", "：")),
        None => what,
    }
}

/// `✅ Approved by alice` (and what they added).
pub fn plan_approved(lang: Lang, by: &str, comment: Option<&str>) -> String {
    let what = match lang {
        Lang::En => format!("✅ Approved by {by}"),
        Lang::Zh => format!("✅ {by} 已批准"),
    };
    with_comment(lang, what, comment)
}

/// `❌ Rejected by alice` (and why, when they said).
pub fn plan_rejected(lang: Lang, by: &str, comment: Option<&str>) -> String {
    let what = match lang {
        Lang::En => format!("❌ Rejected by {by}"),
        Lang::Zh => format!("❌ {by} 已否决"),
    };
    with_comment(lang, what, comment)
}

/// `✏️ alice asked for changes: …` (a new plan follows).
pub fn plan_revised(lang: Lang, by: &str, comment: &str) -> String {
    match lang {
        Lang::En => format!("✏️ {by} asked for changes: {comment}"),
        Lang::Zh => format!("✏️ {by} 要求修改：{comment}"),
    }
}

/// What stands, for a click on (or a reply to) a plan that takes no decision
/// any more: who decided what, that it expired, or that its reply ended.
pub fn plan_already(lang: Lang, status: PlanStatus, by: Option<&str>) -> String {
    use super::Text;
    let (en, zh) = match status {
        PlanStatus::Approved => ("approved", "已批准"),
        PlanStatus::Rejected => ("rejected", "已否决"),
        PlanStatus::Revised => ("revised", "已要求修改"),
        PlanStatus::Expired => return lang.text(Text::ClickPlanExpired).to_owned(),
        PlanStatus::Proposed => return lang.text(Text::ClickRunEnded).to_owned(),
    };
    let follows = status == PlanStatus::Revised;
    match (lang, by) {
        (Lang::En, Some(by)) if follows => {
            format!("Already decided: {by} asked for changes, and a new plan follows.")
        }
        (Lang::En, None) if follows => {
            "Already decided: changes were asked for, and a new plan follows.".to_owned()
        }
        (Lang::En, Some(by)) => format!("Already {en} by {by}."),
        (Lang::En, None) => format!("Already {en}."),
        (Lang::Zh, Some(by)) if follows => format!("已经决定了：{by} 要求修改，新的计划随后发出。"),
        (Lang::Zh, None) if follows => "已经决定了：已要求修改，新的计划随后发出。".to_owned(),
        (Lang::Zh, Some(by)) => format!("已经决定了：{by} {zh}。"),
        (Lang::Zh, None) => format!("已经决定了：{zh}。"),
    }
}

/// A reply in the chat that could not be taken as changes to the open plan:
/// why (the plan stays open).
pub fn not_a_revision(lang: Lang, why: &str) -> String {
    match lang {
        Lang::En => {
            format!("🤔 That was not taken as changes to the plan: {why}. The plan is still open.")
        }
        Lang::Zh => format!("🤔 这条回复没有作为修改意见：{why}。计划仍在等待决定。"),
    }
}

// --- Gateway notices and toasts ---

/// A message of a kind the bot does not read (`audio`, `sticker`, …).
pub fn unsupported(lang: Lang, kind: &str) -> String {
    match lang {
        Lang::En => format!("I can read text, images and files, not {kind} messages."),
        Lang::Zh => format!("我能读文字、图片和文件，暂不支持 {kind} 消息。"),
    }
}

/// `try again in 12 s`, after a rate-limit refusal.
pub fn try_again_in(lang: Lang, secs: u64) -> String {
    match lang {
        Lang::En => format!("try again in {secs} s"),
        Lang::Zh => format!("请 {secs} 秒后再试"),
    }
}

/// The toast of an approval decided "always".
pub fn approved_always(lang: Lang, tool: &str) -> String {
    match lang {
        Lang::En => format!("✅ Approved; {tool} no longer asks in this conversation"),
        Lang::Zh => format!("✅ 已批准；本对话中 {tool} 不再询问"),
    }
}

/// A click by someone else than `owner`, whose message asked for the approval.
pub fn only_owner_decides(lang: Lang, owner: &str) -> String {
    match lang {
        Lang::En => {
            format!("Only {owner}, whose message asked for this, or a Weft admin can decide.")
        }
        Lang::Zh => format!("只有发起这条请求的 {owner} 或 Weft 管理员可以决定。"),
    }
}

/// A click on an approval already decided: what stands.
pub fn already(lang: Lang, verdict: Verdict, by: Option<&str>) -> String {
    if verdict == Verdict::Expired {
        return lang.text(super::Text::AlreadyExpired).to_owned();
    }
    match lang {
        Lang::En => format!("Already {}.", decided_by(lang, verdict, by)),
        Lang::Zh => format!("已经是：{}。", decided_by(lang, verdict, by)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well_in_both_languages() {
        assert_eq!(duration(Lang::En, 12), "12 ms");
        assert_eq!(duration(Lang::Zh, 4300), "4.3 秒");
        assert_eq!(count(850), "850");
        assert_eq!(count(1234), "1.2K");
        assert_eq!(count(3_400_000), "3.4M");
        assert_eq!(span(Lang::En, Duration::from_secs(1800)), "30 min");
        assert_eq!(span(Lang::Zh, Duration::from_secs(7200)), "2 小时");
        assert_eq!(
            reasoning_title(Lang::En, true, 4300, 1200),
            "💭 Thinking… 4.3 s · 1.2K tokens"
        );
        assert_eq!(
            reasoning_title(Lang::Zh, false, 4300, 1200),
            "💭 4.3 秒 · 1.2K tokens"
        );
    }

    #[test]
    fn the_footer_says_what_was_billed() {
        let mut f = Footer {
            duration_ms: 3200,
            billed_input: 1200,
            cached_input: 0,
            output: 345,
            tokens_per_s: 14.06,
            context_percent: Some(3),
            model: "mock".into(),
        };
        assert_eq!(
            footer(Lang::En, &f),
            "3.2 s · 1.2K → 345 tokens · 14.1 tok/s · 3% context · mock"
        );
        f.cached_input = 4000;
        f.context_percent = None;
        assert_eq!(
            footer(Lang::Zh, &f),
            "3.2 秒 · 1.2K（+4.0K 缓存） → 345 tokens · 14.1 tok/s · mock"
        );
    }

    #[test]
    fn who_decided_reads_naturally() {
        let by = Some("alice");
        assert_eq!(
            decided_by(Lang::En, Verdict::Approved, by),
            "approved by alice"
        );
        assert_eq!(decided_by(Lang::Zh, Verdict::Denied, by), "alice 已拒绝");
        assert_eq!(decided_by(Lang::Zh, Verdict::Expired, None), "已过期");
        assert_eq!(
            already(Lang::En, Verdict::Approved, Some("lark:ou_a")),
            "Already approved by lark:ou_a."
        );
        assert_eq!("denied".parse::<Verdict>(), Ok(Verdict::Denied));
        assert_eq!("maybe".parse::<Verdict>(), Err(()));
    }

    #[test]
    fn what_stands_on_a_plan_reads_naturally() {
        let by = Some("Alice");
        assert_eq!(
            plan_already(Lang::En, PlanStatus::Approved, by),
            "Already approved by Alice."
        );
        assert_eq!(
            plan_already(Lang::Zh, PlanStatus::Rejected, by),
            "已经决定了：Alice 已否决。"
        );
        assert_eq!(
            plan_already(Lang::En, PlanStatus::Revised, by),
            "Already decided: Alice asked for changes, and a new plan follows."
        );
        assert_eq!(
            plan_already(Lang::En, PlanStatus::Approved, None),
            "Already approved."
        );
        assert!(plan_already(Lang::En, PlanStatus::Expired, None).starts_with("⌛ Too late"));
        assert_eq!(
            plan_already(Lang::Zh, PlanStatus::Proposed, None),
            "回复已经结束，无需再决定。",
            "still proposed, its run ended"
        );
        assert_eq!(
            plan_approved(Lang::En, "Alice", Some("go")),
            "✅ Approved by Alice: go"
        );
    }
}
