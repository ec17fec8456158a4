//! The fixed texts: one line per text, English then Chinese, so neither can be
//! left out.

use super::Lang;

macro_rules! texts {
    ($( $(#[$doc:meta])* $name:ident => $en:literal, $zh:literal; )*) => {
        /// A fixed text of the bot (see the module docs of [`crate::text`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Text {
            $( $(#[$doc])* $name, )*
        }

        impl Text {
            /// Every text, for checks over the whole catalog.
            pub const ALL: &'static [Text] = &[$(Text::$name),*];

            pub fn get(self, lang: Lang) -> &'static str {
                match (self, lang) {
                    $(
                        (Text::$name, Lang::En) => $en,
                        (Text::$name, Lang::Zh) => $zh,
                    )*
                }
            }
        }
    };
}

texts! {
    // --- The reply card (worker) ---
    /// The reply waits for a person's decision (card paragraph and tool line).
    WaitingForApproval => "waiting for approval", "等待审批";
    /// The reply was stopped (card paragraph, and the notice to a stop word).
    Stopped => "🛑 stopped", "🛑 已停止";
    /// A failure without a message of its own.
    ReplyFailed => "the reply failed", "回复失败";
    /// The chat-list preview of a card still streaming.
    Generating => "[Generating...]", "[生成中...]";
    /// The reasoning panel's title while the model thinks.
    Thinking => "Thinking…", "思考中…";
    /// Above a tool call's pretty-printed arguments.
    Arguments => "Arguments", "参数";
    /// Above a tool call's result preview.
    Result => "Result", "结果";
    /// Above the documents an answer cites (`[1] handbook.pdf — page 7`).
    Sources => "Sources", "来源";
    /// A tool call without arguments.
    NoArguments => "no arguments", "无参数";
    /// A tool call still running.
    Running => "running…", "运行中…";
    /// An approval nobody answered in time (tool line).
    Expired => "expired", "已过期";
    /// The reply waits for the person to answer a question (card paragraph).
    WaitingForAnswer => "waiting for your answer", "等待你的回答";
    /// The reply waits for the person to decide its plan (card paragraph).
    WaitingForDecision => "waiting for your decision on the plan", "等待你对计划的决定";

    /// The app may not read a group's messages, though `[lark] group_context_messages` asks for them (title and text).
    BackgroundDeniedTitle => "Group background unavailable", "无法读取群消息";
    BackgroundDenied => "⚠️ I am set to read this group's recent messages as background, but the app lacks the permission to read group messages (`im:message.group_msg`), so I answer without them. An admin can grant it in the developer console, or set `[lark] group_context_messages = 0`.", "⚠️ 我被设置为读取本群最近的消息作为背景，但应用没有读取群消息的权限（`im:message.group_msg`），所以只能不带背景回答。管理员可以在开发者后台开通该权限，或设置 `[lark] group_context_messages = 0`。";

    // --- The approval card ---
    ApproveButton => "Approve", "批准";
    DenyButton => "Deny", "拒绝";
    AlwaysButton => "Always allow", "总是允许";
    /// The card of an approval nobody answered in time.
    ApprovalExpired => "⌛ expired: nobody answered in time", "⌛ 已过期：无人及时回应";
    /// The card of an approval whose reply ended first (stopped, failed).
    ApprovalClosed => "🛑 the reply ended before anyone answered", "🛑 回复已结束，无人回应";

    // --- The question card ---
    QuestionTitle => "❓ A question for you", "❓ 请回答";
    AnsweredTitle => "Question answered", "问题已回答";
    UnansweredTitle => "Question not answered", "问题未回答";
    /// The card of a question nobody answered in time.
    QuestionExpired => "⌛ Nobody answered in time; the reply went on without an answer.", "⌛ 无人及时回答，回复在没有回答的情况下继续了。";

    // --- The plan card (plan mode) ---
    PlanTitle => "📋 A plan for your approval", "📋 请审批计划";
    PlanApprovedTitle => "Plan approved", "计划已批准";
    PlanRejectedTitle => "Plan rejected", "计划已否决";
    PlanRevisedTitle => "Plan: changes asked for", "计划：已要求修改";
    PlanUndecidedTitle => "Plan not decided", "计划未决定";
    RejectButton => "Reject", "否决";
    /// Below a plan too long for its card.
    PlanCut => "_… cut here: the whole plan is in the reply above and on the web page._", "_…… 此处截断：完整计划见上方回复或网页。_";
    /// The card of a plan nobody decided in time.
    PlanExpired => "⌛ Nobody decided in time; the reply ended with the plan, and nothing of it was carried out.", "⌛ 无人及时决定，回复已结束，计划中的内容均未执行。";

    // --- Clicks on approval buttons (gateway toasts) ---
    /// The decision takes longer than the click's answer may.
    ClickLate => "⏳ Got it; this takes a moment. The reply card shows the outcome.", "⏳ 收到，需要一点时间，结果会显示在回复卡片上。";
    /// A button this version does not know.
    ClickUnknown => "This button is not handled by this Weft version.", "这个版本的 Weft 不处理这个按钮。";
    /// The callback named no user.
    ClickNoUser => "Lark did not say who clicked.", "飞书没有告知是谁点击的。";
    ClickApproved => "✅ Approved", "✅ 已批准";
    ClickDenied => "❌ Denied", "❌ 已拒绝";
    ClickExpired => "⌛ Too late: this approval expired and counts as denied.", "⌛ 太晚了：此审批已过期，视为拒绝。";
    ClickRunEnded => "The reply already ended; there is nothing to decide.", "回复已经结束，无需再决定。";
    ClickGone => "This approval no longer exists.", "此审批已不存在。";
    /// Someone else clicked, and the owner is unknown.
    ClickNotYours => "Only the person who asked, or a Weft admin, can decide.", "只有提问的人或 Weft 管理员可以决定。";
    ClickTryAgain => "Could not record your decision; please try again.", "未能记录你的决定，请重试。";
    /// Every click slot was taken; nothing was decided.
    ClickBusy => "⏳ Busy right now; nothing was decided. Please click again in a moment.", "⏳ 现在有点忙，没有做出决定，请稍后再点一次。";
    /// A question answered by a click.
    ClickAnswered => "✅ Answered", "✅ 已回答";
    ClickQuestionExpired => "⌛ Too late: this question expired, and the reply went on without an answer.", "⌛ 太晚了：此问题已过期，回复在没有回答的情况下继续了。";
    ClickQuestionRunEnded => "The reply already ended; there is nothing to answer.", "回复已经结束，无需再回答。";
    ClickQuestionGone => "This question no longer exists.", "此问题已不存在。";
    /// Someone else answered, and the owner is unknown.
    ClickNotYoursToAnswer => "Only the person this question is for, or a Weft admin, can answer.", "只有被提问的人或 Weft 管理员可以回答。";
    /// A plan rejected by a click.
    ClickRejected => "❌ Rejected", "❌ 已否决";
    ClickPlanExpired => "⌛ Too late: this plan expired undecided, and the reply ended without carrying it out.", "⌛ 太晚了：此计划已过期，回复已结束，计划未执行。";
    ClickPlanGone => "This plan no longer exists.", "此计划已不存在。";
    /// What stands: an expired approval.
    AlreadyExpired => "⌛ Already expired (counts as denied).", "⌛ 已经过期（视为拒绝）。";

    // --- Notices (gateway) ---
    /// A message the chat's line had no room for.
    Busy => "⏳ I am still working through the earlier messages of this chat, so I did not read this one. Please send it again once I have answered.", "⏳ 我还在处理这个对话里之前的消息，这条没有读到，请等我回复后再发一次。";
    /// A send over the user's rate limit.
    SendingTooFast => "⏳ You are sending faster than I can answer.", "⏳ 消息太多，我回答不过来了。";
    UnknownCommand => "Unknown command", "未知命令";
    NewConversation => "🆕 New conversation.", "🆕 已开始新对话。";
    /// `/flush` stopped the reply.
    StoppedFlushing => "🛑 stopped; answering everything you sent since.", "🛑 已停止；接下来一起回答之后发来的消息。";
    NothingRunning => "Nothing is running.", "当前没有进行中的回复。";
    ModelLabel => "Model:", "模型：";
    ModelsHeading => "Models", "模型";
    ModeLabel => "Mode:", "模式：";
    ModesHeading => "Modes", "模式";
    UndoDone => "↩️ The last question and answer are out of the conversation.", "↩️ 上一轮问答已从对话中撤下。";
    UndoRunActive => "A reply is still running: /stop it first.", "还有回复在进行中，请先 /stop。";
    UndoNothing => "Nothing to undo.", "没有可撤销的内容。";
    CompactQueued => "🗜 The older turns will be summarised before the next reply.", "🗜 下一次回复前会先总结较早的对话。";
    ConversationsHeading => "**Conversations**", "**对话**";
    Untitled => "(untitled)", "（未命名）";
    ResumedLabel => "Resumed:", "已回到：";
    ResumeWhich => "Which one? See `/sessions`, then `/resume N`.", "请先用 `/sessions` 查看，再 `/resume N`。";
    /// `/plan` without a task.
    PlanUsage => "`/plan TASK`: I research TASK with tools that only read and propose a plan; nothing is changed before you approve it. Reply in the chat to ask for changes.", "`/plan 任务`：我先只用只读工具调研任务，再提出计划；你批准之前不做任何改动。在对话中回复即可要求修改。";
    /// `/plan TASK` while a reply is running.
    PlanRunActive => "A reply is still running: wait for it or /stop it, then send /plan again.", "还有回复在进行中：请等它结束或 /stop，然后再发送 /plan。";
    /// `/help`.
    Help => "**Commands**\n\
        `/new` start a new conversation\n\
        `/stop` stop the current reply (also: stop, 停, 取消 …)\n\
        `/flush` stop it and answer everything you sent meanwhile at once\n\
        `/model [id]` show or switch the model\n\
        `/agent [id]` show or switch the agent (`/mode` works too)\n\
        `/undo` take the last question and answer out of the conversation\n\
        `/compact` summarise the older turns before the next reply\n\
        `/plan TASK` plan first: approve, reject or reply with changes before anything is done\n\
        `/sessions` this chat's conversations\n\
        `/resume N` go back to conversation N of `/sessions`\n\
        `/help` this list",
        "**命令**\n\
        `/new` 开始新对话\n\
        `/stop` 停止当前回复（也可以发：停、取消、stop …）\n\
        `/flush` 停止当前回复，并把期间发来的消息一起回答\n\
        `/model [id]` 查看或切换模型\n\
        `/agent [id]` 查看或切换智能体（也可用 `/mode`）\n\
        `/undo` 把上一轮问答从对话中撤下\n\
        `/compact` 在下一次回复前先总结较早的对话\n\
        `/plan 任务` 先出计划：批准、否决或回复修改意见后才动手\n\
        `/sessions` 本聊天的对话列表\n\
        `/resume N` 回到 `/sessions` 中的第 N 个对话\n\
        `/help` 显示本帮助";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has_ideograph(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    #[test]
    fn every_text_is_written_in_both_languages() {
        for text in Text::ALL {
            let (en, zh) = (text.get(Lang::En), text.get(Lang::Zh));
            assert!(!en.is_empty() && !zh.is_empty(), "{text:?}");
            assert!(has_ideograph(zh), "{text:?} in Chinese: {zh}");
            // The English help names the Chinese stop words, as they are.
            if *text != Text::Help {
                assert!(!has_ideograph(en), "{text:?} in English: {en}");
                assert_eq!(Lang::detect(en), Some(Lang::En), "{text:?}: {en}");
            }
        }
    }
}
