//! Questions from Lark (docs/protocol.md, "Questions"): when the agent asks
//! (`ask_user`), a question card shows the question and its options while the
//! reply card waits; a click on an option, or a plain reply in the chat
//! (`2`, `1,3`, an option's text), answers it, and the run that waited
//! finishes in the same reply card — the reply does not start another run. A
//! reply that is no answer is told why, and the question stays open.

use sqlx::Row;
use weft_lark::fake::SentMessage;

use super::approvals::{buttons, click_as_seen, current, text_of};
use super::durability::database;
use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    a_click_answers_and_the_same_run_finishes,
    a_reply_in_the_chat_answers_the_waiting_run,
    a_reply_that_is_no_answer_is_told_why_and_the_question_stays_open,
    several_options_are_chosen_by_number_in_a_chinese_chat,
    an_expired_question_card_says_so,
);

const ASK_COLOUR: &str =
    r#"colour? @mock.tool ask_user {"question":"Which colour?","options":["red","blue"]}"#;

fn is_question(m: &SentMessage) -> bool {
    !element(m, "question_text").is_empty()
}

/// The question card in reply to `to`, once it is there.
async fn question_card(w: &LarkWorld, to: &str) -> SentMessage {
    w.until("the question card", |_| {
        w.replies(to).into_iter().find(is_question)
    })
    .await
}

/// The reply card to `to` once it shows the run waiting for an answer.
async fn waiting_card(w: &LarkWorld, to: &str) -> SentMessage {
    w.until("the reply card waiting for an answer", |_| {
        w.replies(to)
            .into_iter()
            .find(|m| !is_question(m) && template(m) == "orange")
    })
    .await
}

/// The question card `message_id` once it shows how the question ended.
async fn ended_card(w: &LarkWorld, message_id: &str) -> SentMessage {
    w.until("the question card rewritten", |_| {
        let card = current(w, message_id);
        (template(&card) != "orange").then_some(card)
    })
    .await
}

/// What the bot said in reply to `to`.
pub(super) async fn told(w: &LarkWorld, to: &str) -> String {
    let said = w
        .until("the answer to the reply", |_| {
            w.replies(to).into_iter().next()
        })
        .await;
    notice(&said)
}

/// One number from the world's database.
pub(super) async fn count(w: &LarkWorld, sql: &'static str) -> i64 {
    let db = database(&w.env).await;
    let row = sqlx::query(sql).fetch_one(&db).await.expect(sql);
    row.get(0)
}

async fn a_click_answers_and_the_same_run_finishes(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", ASK_COLOUR);
    let ask = question_card(&w, &msg).await;
    assert_eq!(buttons(&ask.content), ["red", "blue"]);
    assert_eq!(
        element(&ask, "question_text"),
        "Which colour?\n\n1. red\n2. blue"
    );
    let waiting = waiting_card(&w, &msg).await;
    assert_eq!(body(&waiting), "_⏸ waiting for your answer_");

    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "blue")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "✅ Answered", "{answer}");
    let answered = &answer["card"]["data"];
    assert_eq!(
        text_of(answered, "question_answer"),
        "✅ Answered by Alice: blue"
    );
    assert!(buttons(answered).is_empty(), "no buttons once answered");

    let done = w.final_card(&msg).await;
    assert_eq!(done.message_id, waiting.message_id, "the same reply card");
    assert_eq!(template(&done), "green", "{}", w.logs());
    assert_eq!(
        body(&done),
        "tool ask_user said: The user (Alice) answered: blue",
        "the answer reached the model"
    );
    assert_eq!(
        w.replies(&msg).len(),
        2,
        "one reply card and one question card"
    );
    assert_eq!(count(&w, "select count(*) from runs").await, 1);
    let rewritten = current(&w, &ask.message_id);
    assert_eq!(
        element(&rewritten, "question_answer"),
        "✅ Answered by Alice: blue"
    );

    // A second click (a screen that still shows the buttons) gets what stands.
    let again = click_as_seen(&w, &ask, "ou_alice", "red");
    let answer = w.answer(&again).await;
    assert_eq!(
        answer["toast"]["content"], "Already answered by Alice: blue.",
        "{answer}"
    );
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn a_reply_in_the_chat_answers_the_waiting_run(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm("ou_alice", ASK_COLOUR);
    let ask = question_card(&w, &msg).await;
    let waiting = waiting_card(&w, &msg).await;

    let reply = w.dm("ou_alice", "2");
    let done = w.final_card(&msg).await;
    assert_eq!(done.message_id, waiting.message_id, "the same reply card");
    assert_eq!(
        body(&done),
        "tool ask_user said: The user (Alice) answered: blue",
        "{}",
        w.logs()
    );
    let answered = ended_card(&w, &ask.message_id).await;
    assert_eq!(template(&answered), "green");
    assert_eq!(
        element(&answered, "question_answer"),
        "✅ Answered by Alice: blue"
    );
    assert!(buttons(&answered.content).is_empty());
    // The reply was the answer: no run of its own, no message for the agent,
    // nothing said to it.
    assert_eq!(count(&w, "select count(*) from runs").await, 1);
    assert_eq!(
        count(&w, "select count(*) from messages where role = 'user'").await,
        1
    );
    assert!(w.replies(&reply).is_empty(), "{:?}", w.replies(&reply));
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn a_reply_that_is_no_answer_is_told_why_and_the_question_stays_open(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm(
        "ou_alice",
        r#"@mock.tool ask_user {"question":"Which colour?","options":["red","blue"],"allow_text":false}"#,
    );
    let ask = question_card(&w, &msg).await;
    let hint = element(&ask, "question_answer");
    assert!(
        hint.starts_with("Click an option, or reply in the chat with its number (1–2). "),
        "{hint}"
    );
    waiting_card(&w, &msg).await;

    let purple = w.dm("ou_alice", "purple");
    assert_eq!(
        told(&w, &purple).await,
        "🤔 That does not answer the question: “purple” is not one of the options. \
         Reply with an option's number (1–2) or its text; the question is still open."
    );
    let three = w.dm("ou_alice", "3");
    assert!(
        told(&w, &three)
            .await
            .starts_with("🤔 That does not answer the question: there is no option 3."),
    );
    // Still open, and nothing reached the agent.
    assert_eq!(
        buttons(&current(&w, &ask.message_id).content),
        ["red", "blue"]
    );
    assert_eq!(
        count(
            &w,
            "select count(*) from questions where status = 'pending'"
        )
        .await,
        1
    );
    assert_eq!(count(&w, "select count(*) from runs").await, 1);
    assert_eq!(
        count(&w, "select count(*) from messages where role = 'user'").await,
        1
    );

    // Stopped while waiting, the question's card closes.
    let stop = w.dm("ou_alice", "stop");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "grey", "{}", w.logs());
    w.until("the stop answer", |_| w.replies(&stop).into_iter().next())
        .await;
    let closed = ended_card(&w, &ask.message_id).await;
    assert_eq!(
        element(&closed, "question_answer"),
        "🛑 the reply ended before anyone answered"
    );
    assert!(buttons(&closed.content).is_empty());
}

async fn several_options_are_chosen_by_number_in_a_chinese_chat(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.dm(
        "ou_li",
        r#"选颜色 @mock.tool ask_user {"question":"哪些颜色？","options":["红","蓝","绿"],"multiple":true}"#,
    );
    let ask = question_card(&w, &msg).await;
    assert_eq!(ask.content["header"]["title"]["content"], "❓ 请回答");
    assert!(
        buttons(&ask.content).is_empty(),
        "no buttons for several choices"
    );
    let hint = element(&ask, "question_answer");
    assert!(hint.contains("例如 `1,3`"), "{hint}");

    w.dm("ou_li", "1，3");
    let done = w.final_card(&msg).await;
    assert_eq!(
        body(&done),
        r#"tool ask_user said: The user (李雷) chose: "红", "绿""#,
        "{}",
        w.logs()
    );
    let answered = ended_card(&w, &ask.message_id).await;
    assert_eq!(
        element(&answered, "question_answer"),
        "✅ 李雷 的回答：红、绿"
    );
    assert_eq!(count(&w, "select count(*) from runs").await, 1);
}

async fn an_expired_question_card_says_so(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[("WEFT_TOOLS__APPROVAL_TTL_SECS", "1")],
    )
    .await;
    let msg = w.dm("ou_alice", ASK_COLOUR);
    let ask = question_card(&w, &msg).await;
    let expired = ended_card(&w, &ask.message_id).await;
    assert_eq!(template(&expired), "grey");
    assert_eq!(
        element(&expired, "question_answer"),
        "⌛ Nobody answered in time; the reply went on without an answer."
    );
    assert!(buttons(&expired.content).is_empty());
    let done = w.final_card(&msg).await;
    assert!(
        body(&done).starts_with("tool ask_user said: No answer: nobody answered"),
        "{}",
        body(&done)
    );
    // A late reply is an ordinary message again: it gets a run of its own.
    let late = w.dm("ou_alice", "2");
    assert_eq!(template(&w.final_card(&late).await), "green");
    assert_eq!(count(&w, "select count(*) from runs").await, 2);
}
