//! Approvals from Lark (docs/protocol.md, "Approvals"; docs/lark.md, "Approvals in
//! Lark"): a `confirm` tool call shows up as an approval card with buttons while
//! the reply card waits; a click is a `card.action.trigger` that the bot answers in
//! its ack with the approval card redrawn (who decided, no buttons), and the run
//! then finishes in the same reply card. Only the person whose message asked (or a
//! Weft admin) decides.

use serde_json::{Value, json};
use weft_lark::fake::{PushOptions, SentMessage, card_action_event};

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    approve_in_lark_and_the_reply_finishes_in_the_same_card,
    deny_in_lark_and_the_model_hears_it,
    only_the_requester_decides_in_a_group,
    stopping_a_waiting_reply_ends_its_card,
    an_approval_decided_on_the_web_rewrites_its_card,
    an_expired_approval_card_says_so,
);

const CONFIRM_TIME: (&str, &str) = ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm");

async fn start(b: Backend) -> LarkWorld {
    LarkWorld::start_with(b, 1, fake_config(), &[CONFIRM_TIME]).await
}

/// Labels of the buttons anywhere on a card.
pub(super) fn buttons(card: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if map.get("tag").and_then(Value::as_str) == Some("button") {
                    out.push(v["text"]["content"].as_str().unwrap_or_default().to_owned());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(card, &mut out);
    out
}

/// A card element's markdown, by id, in a raw card document.
pub(super) fn text_of(card: &Value, id: &str) -> String {
    card["body"]["elements"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["element_id"] == id)
        .filter_map(|e| e["content"].as_str())
        .collect()
}

fn is_approval(m: &SentMessage) -> bool {
    !element(m, "approval_call").is_empty()
}

/// The approval card in reply to `to`, once it is there with its buttons.
async fn approval_card(w: &LarkWorld, to: &str) -> SentMessage {
    w.until("the approval card with buttons", |_| {
        w.replies(to)
            .into_iter()
            .find(|m| is_approval(m) && !buttons(&m.content).is_empty())
    })
    .await
}

/// The reply card to `to` once it shows the run waiting for approval.
async fn waiting_card(w: &LarkWorld, to: &str) -> SentMessage {
    w.until("the reply card waiting for approval", |_| {
        w.replies(to)
            .into_iter()
            .find(|m| !is_approval(m) && template(m) == "orange")
    })
    .await
}

/// The card as the fake holds it now.
pub(super) fn current(w: &LarkWorld, message_id: &str) -> SentMessage {
    w.fake
        .sent_messages()
        .into_iter()
        .find(|m| m.message_id == message_id)
        .expect("the card exists")
}

/// A click on a button as it was on `card` (a stale screen, or a second click
/// before Lark redrew the card).
pub(super) fn click_as_seen(w: &LarkWorld, card: &SentMessage, who: &str, label: &str) -> String {
    let value = card.content["body"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["columns"].as_array().cloned().unwrap_or_default())
        .flat_map(|c| c["elements"].as_array().cloned().unwrap_or_default())
        .find(|b| b["text"]["content"] == label)
        .map(|b| b["behaviors"][0]["value"].clone())
        .expect("the button was on the card");
    let event = format!("ev_stale_{who}_{label}_{}", card.message_id);
    w.fake.push_event(
        card_action_event(&event, who, &card.message_id, &card.chat_id, value),
        PushOptions::default(),
    )
}

async fn approve_in_lark_and_the_reply_finishes_in_the_same_card(b: Backend) {
    let mut w = start(b).await;
    let msg = w.dm("ou_alice", "what time is it? @mock.tool current_time {}");
    let ask = approval_card(&w, &msg).await;
    assert_eq!(buttons(&ask.content), ["Approve", "Deny", "Always allow"]);
    assert!(element(&ask, "approval_call").contains("current_time"));
    let waiting = waiting_card(&w, &msg).await;
    assert_eq!(tools(&waiting), "⏸ current_time · waiting for approval");

    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "Approve")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["type"], "success", "{answer}");
    assert_eq!(answer["card"]["type"], "raw");
    let answered = &answer["card"]["data"];
    assert_eq!(text_of(answered, "approval_answer"), "✅ approved by Alice");
    assert!(buttons(answered).is_empty(), "no buttons once decided");
    assert_eq!(&current(&w, &ask.message_id).content, answered);

    let done = w.final_card(&msg).await;
    assert_eq!(done.message_id, waiting.message_id, "the same reply card");
    assert_eq!(template(&done), "green", "{}", w.logs());
    assert!(
        body(&done).starts_with("tool current_time said: "),
        "{}",
        body(&done)
    );
    let tools = tools(&done);
    assert!(
        tools.starts_with("✅ current_time · approved by Alice · "),
        "{tools}"
    );
    assert_eq!(
        w.replies(&msg).len(),
        2,
        "one reply card and one approval card"
    );

    // A second click (a screen that still shows the buttons) gets the decision.
    let again = click_as_seen(&w, &ask, "ou_alice", "Deny");
    let answer = w.answer(&again).await;
    assert_eq!(
        answer["toast"]["content"], "Already approved by Alice.",
        "{answer}"
    );
    assert_eq!(
        text_of(&answer["card"]["data"], "approval_answer"),
        "✅ approved by Alice"
    );
    assert_eq!(
        template(&w.final_card(&msg).await),
        "green",
        "still approved"
    );
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn deny_in_lark_and_the_model_hears_it(b: Backend) {
    let mut w = start(b).await;
    let msg = w.dm("ou_alice", "@mock.tool current_time {}");
    let ask = approval_card(&w, &msg).await;
    assert_eq!(
        element(&ask, "approval_call"),
        "**`current_time`** wants to run (no arguments)."
    );
    let click = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "Deny")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "❌ Denied", "{answer}");
    let answered = &answer["card"]["data"];
    assert_eq!(answered["header"]["template"], "red");
    assert_eq!(text_of(answered, "approval_answer"), "❌ denied by Alice");
    let done = w.final_card(&msg).await;
    assert!(
        body(&done).contains("denied this call of current_time"),
        "the model was told: {}",
        body(&done)
    );
    assert_eq!(tools(&done), "❌ current_time · denied by Alice");
    assert_eq!(w.replies(&msg).len(), 2);
}

async fn only_the_requester_decides_in_a_group(b: Backend) {
    let mut w = start(b).await;
    let ask_in_group = |w: &mut LarkWorld, text: &str| {
        let (event, message) = w.ids();
        w.fake.push_event(
            message_event(
                &event,
                &message,
                "oc_team",
                "group",
                "",
                "ou_alice",
                &format!("@_user_1 {text}"),
                bot_mention(),
            ),
            PushOptions::default(),
        );
        message
    };
    let msg = ask_in_group(&mut w, "time please @mock.tool current_time {}");
    let ask = approval_card(&w, &msg).await;

    let bob = w
        .fake
        .click_button(&ask.message_id, "ou_bob", "Approve")
        .unwrap();
    let answer = w.answer(&bob).await;
    assert_eq!(
        answer,
        json!({"toast": {"type": "warning", "content": "Only Alice, whose message asked for this, or a Weft admin can decide."}}),
        "a refusal changes no card"
    );
    assert_eq!(
        buttons(&current(&w, &ask.message_id).content),
        ["Approve", "Deny", "Always allow"]
    );
    assert_eq!(
        template(&waiting_card(&w, &msg).await),
        "orange",
        "still waiting"
    );

    let alice = w
        .fake
        .click_button(&ask.message_id, "ou_alice", "Always allow")
        .unwrap();
    let answer = w.answer(&alice).await;
    assert_eq!(
        answer["toast"]["content"],
        "✅ Approved; current_time no longer asks in this conversation"
    );
    assert_eq!(
        text_of(&answer["card"]["data"], "approval_answer"),
        "✅ approved by Alice · always allowed in this conversation"
    );
    assert_eq!(template(&w.final_card(&msg).await), "green");

    // Bob's stale screen: the decision stands, whoever clicks.
    let late = click_as_seen(&w, &ask, "ou_bob", "Deny");
    assert_eq!(
        w.answer(&late).await["toast"]["content"],
        "Already approved by Alice."
    );
    // Always: the next call in this conversation runs without asking.
    let next = ask_in_group(&mut w, "and now? @mock.tool current_time {}");
    let done = w.final_card(&next).await;
    assert!(body(&done).starts_with("tool current_time said: "));
    assert!(
        w.replies(&next).iter().all(|m| !is_approval(m)),
        "no approval card the second time"
    );
}

async fn stopping_a_waiting_reply_ends_its_card(b: Backend) {
    let mut w = start(b).await;
    let msg = w.dm("ou_alice", "@mock.tool current_time {}");
    let ask = approval_card(&w, &msg).await;
    waiting_card(&w, &msg).await;
    // No worker holds the run now; the card still ends when it is stopped.
    let stop = w.dm("ou_alice", "stop");
    let card = w.final_card(&msg).await;
    assert_eq!(template(&card), "grey", "{}", w.logs());
    assert!(body(&card).ends_with("_🛑 stopped_"), "{}", body(&card));
    w.until("the stop answer", |_| w.replies(&stop).into_iter().next())
        .await;
    // The approval card loses its buttons too.
    let closed = answered_card(&w, &ask.message_id).await;
    assert_eq!(
        element(&closed, "approval_answer"),
        "🛑 the reply ended before anyone answered"
    );
    // A screen that still shows the buttons.
    let click = click_as_seen(&w, &ask, "ou_alice", "Approve");
    let answer = w.answer(&click).await;
    assert_eq!(
        answer["toast"]["content"],
        "The reply already ended; there is nothing to decide."
    );
    assert_eq!(
        text_of(&answer["card"]["data"], "approval_answer"),
        "🛑 the reply ended before anyone answered"
    );
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

/// The approval id a card's buttons carry.
fn approval_id(card: &SentMessage) -> String {
    card.content["body"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["columns"].as_array().cloned().unwrap_or_default())
        .flat_map(|c| c["elements"].as_array().cloned().unwrap_or_default())
        .find_map(|b| {
            b["behaviors"][0]["value"]["approval_id"]
                .as_str()
                .map(str::to_owned)
        })
        .expect("an approval button")
}

/// The approval card `message_id` once it has no buttons.
async fn answered_card(w: &LarkWorld, message_id: &str) -> SentMessage {
    w.until("the approval card rewritten without buttons", |_| {
        let card = current(w, message_id);
        buttons(&card.content).is_empty().then_some(card)
    })
    .await
}

async fn an_approval_decided_on_the_web_rewrites_its_card(b: Backend) {
    let mut w = start(b).await;
    let msg = w.dm("ou_alice", "@mock.tool current_time {}");
    let ask = approval_card(&w, &msg).await;
    let id = approval_id(&ask);
    // Decided where Lark does not see it: the API (as the web and REPL do).
    let (status, answer) = w
        .admin(
            reqwest::Method::POST,
            &format!("/v1/approvals/{id}"),
            Some(json!({"decision": "approve"})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let answered = answered_card(&w, &ask.message_id).await;
    assert_eq!(template(&answered), "green");
    assert_eq!(
        element(&answered, "approval_answer"),
        "✅ approved by admin"
    );
    let done = w.final_card(&msg).await;
    assert!(
        body(&done).starts_with("tool current_time said: "),
        "{}",
        body(&done)
    );
    assert_eq!(tools(&done).split(" · ").nth(1), Some("approved by admin"));
}

async fn an_expired_approval_card_says_so(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[CONFIRM_TIME, ("WEFT_TOOLS__APPROVAL_TTL_SECS", "1")],
    )
    .await;
    let msg = w.dm("ou_alice", "@mock.tool current_time {}");
    let ask = approval_card(&w, &msg).await;
    let expired = answered_card(&w, &ask.message_id).await;
    assert_eq!(template(&expired), "grey");
    assert_eq!(
        element(&expired, "approval_answer"),
        "⌛ expired: nobody answered in time"
    );
    let done = w.final_card(&msg).await;
    assert_eq!(tools(&done), "❌ current_time · expired");
}
