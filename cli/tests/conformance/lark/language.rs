//! The chat's language (docs/lark.md, "Language"): cards, approval cards and the
//! bot's words are Chinese for a chat that writes Chinese and English for one that
//! writes English; a message that shows neither gets the tenant's language
//! (`[lark] language`).

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    a_chinese_chat_gets_chinese_cards,
    the_tenant_language_answers_words_without_a_language,
);

const CONFIRM_TIME: (&str, &str) = ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm");

fn buttons(m: &weft_lark::fake::SentMessage) -> Vec<String> {
    m.content["body"]["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["columns"].as_array().cloned().unwrap_or_default())
        .flat_map(|c| c["elements"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| b["text"]["content"].as_str().map(str::to_owned))
        .collect()
}

async fn a_chinese_chat_gets_chinese_cards(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[CONFIRM_TIME]).await;
    let msg = w.dm("ou_li", "现在几点？ @mock.tool current_time {}");
    let ask = w
        .until("the approval card", |_| {
            w.replies(&msg)
                .into_iter()
                .find(|m| !element(m, "approval_call").is_empty())
        })
        .await;
    assert_eq!(
        ask.content["header"]["title"]["content"],
        "允许运行 current_time？"
    );
    assert_eq!(buttons(&ask), ["批准", "拒绝", "总是允许"]);
    let waiting = w
        .until("the reply card waiting", |_| {
            w.replies(&msg)
                .into_iter()
                .find(|m| template(m) == "orange" && element(m, "approval_call").is_empty())
        })
        .await;
    assert_eq!(tools(&waiting), "⏸ current_time · 等待审批");
    assert!(
        body(&waiting).ends_with("_⏸ 等待审批_"),
        "{}",
        body(&waiting)
    );

    // Someone else's click is refused in Chinese; the asker's is answered in Chinese.
    let other = w
        .fake
        .click_button(&ask.message_id, "ou_wang", "批准")
        .unwrap();
    let refused = w.answer(&other).await;
    assert_eq!(
        refused["toast"]["content"], "只有发起这条请求的 李雷 或 Weft 管理员可以决定。",
        "{refused}"
    );
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_li", "批准")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "✅ 已批准", "{answer}");
    assert!(
        answer["card"]["data"].to_string().contains("李雷 已批准"),
        "{answer}"
    );
    let done = w.final_card(&msg).await;
    assert_eq!(template(&done), "green");
    assert_eq!(
        tools(&done).split(" · ").take(2).collect::<Vec<_>>(),
        ["✅ current_time", "李雷 已批准"]
    );
    let footer = element(&done, "footer");
    assert!(
        footer.contains("秒 · ") && footer.contains("上下文 "),
        "{footer}"
    );
    // The click's answer redrew the card; the worker says it in Chinese.
    w.until("the approval card in Chinese", |f| {
        f.sent_messages()
            .into_iter()
            .find(|m| m.message_id == ask.message_id)
            .filter(|m| element(m, "approval_answer") == "✅ 李雷 已批准")
    })
    .await;

    // Stopped, in Chinese.
    let long = w.dm("ou_li", "慢慢数 @mock.tokens 400 @mock.delay 0 50");
    w.until("the long reply's card", |_| {
        w.replies(&long).into_iter().next()
    })
    .await;
    let stop = w.dm("ou_li", "停");
    let stopped = w.final_card(&long).await;
    assert_eq!(template(&stopped), "grey");
    assert!(
        body(&stopped).ends_with("_🛑 已停止_"),
        "{}",
        body(&stopped)
    );
    let notice_card = w
        .until("the stop notice", |_| w.replies(&stop).into_iter().next())
        .await;
    assert_eq!(notice(&notice_card), "🛑 已停止");
}

async fn the_tenant_language_answers_words_without_a_language(b: Backend) {
    let mut w = LarkWorld::start_with(b, 1, fake_config(), &[("WEFT_LARK__LANGUAGE", "zh")]).await;
    // No letters of any language: the tenant's (Chinese).
    let digits = w.dm("ou_ann", "1 + 1 = ?");
    let card = w.final_card(&digits).await;
    assert_eq!(body(&card), "You said: 1 + 1 = ?");
    let footer = element(&card, "footer");
    assert!(
        footer.contains("秒 · ") && footer.contains("上下文 "),
        "{footer}"
    );
    // English words: English, whatever the tenant's language.
    let english = w.dm("ou_ann", "hello there");
    let card = w.final_card(&english).await;
    let footer = element(&card, "footer");
    assert!(
        footer.contains("s · ") && footer.contains("% context"),
        "{footer}"
    );
}
