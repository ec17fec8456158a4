//! Plan mode from Lark (docs/protocol.md, "Plans"; docs/lark.md, "Plans in
//! Lark"): `/plan TASK` sends TASK in plan mode; when the agent proposes its
//! plan, a plan card shows it with Approve and Reject while the reply card
//! waits; a plain reply in the chat asks for changes (a revise: the agent
//! plans again, a new card follows), a click decides, and the run finishes in
//! the same reply card — one run throughout. Only the person whose message
//! asked (or a Weft admin) decides.

use serde_json::json;
use sqlx::Row;
use weft_lark::fake::SentMessage;

use super::approvals::{buttons, click_as_seen, current, text_of};
use super::durability::database;
use super::questions::{count, told};
use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(
    a_reply_revises_the_plan_and_a_click_approves_the_next,
    only_the_owner_decides_a_plan_in_a_group,
    an_expired_plan_card_says_so_and_a_late_reply_is_a_message,
);

const PLAN: &str = "/plan @mock.reply 1. Read the code. 2. Fix the bug.";

fn is_plan(m: &SentMessage) -> bool {
    !element(m, "plan_text").is_empty()
}

/// The `n`-th plan card (from 0) in reply to `to`, once it is there.
async fn plan_card(w: &LarkWorld, to: &str, n: usize) -> SentMessage {
    w.until(&format!("plan card {n}"), |_| {
        w.replies(to).into_iter().filter(is_plan).nth(n)
    })
    .await
}

/// The reply card to `to` once it shows the run waiting for a decision.
async fn waiting_card(w: &LarkWorld, to: &str) -> SentMessage {
    w.until("the reply card waiting for a decision", |_| {
        w.replies(to)
            .into_iter()
            .find(|m| !is_plan(m) && template(m) == "orange")
    })
    .await
}

/// The plan card `message_id` once it shows how the plan ended.
async fn ended_card(w: &LarkWorld, message_id: &str) -> SentMessage {
    w.until("the plan card rewritten", |_| {
        let card = current(w, message_id);
        (template(&card) != "orange").then_some(card)
    })
    .await
}

/// Every plan of the world's runs, in the order proposed: status, comment,
/// who decided.
async fn plans(w: &LarkWorld) -> Vec<(String, Option<String>, Option<String>)> {
    let db = database(&w.env).await;
    sqlx::query("select status, comment, decided_by from plans order by created_at, step")
        .fetch_all(&db)
        .await
        .expect("plans")
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

fn decided(
    status: &str,
    comment: Option<&str>,
    by: Option<&str>,
) -> (String, Option<String>, Option<String>) {
    (
        status.to_owned(),
        comment.map(str::to_owned),
        by.map(str::to_owned),
    )
}

async fn a_reply_revises_the_plan_and_a_click_approves_the_next(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    // `/plan` alone says how.
    let usage = w.dm("ou_alice", "/plan");
    let how = told(&w, &usage).await;
    assert!(how.starts_with("`/plan TASK`: I research TASK"), "{how}");

    let msg = w.dm("ou_alice", PLAN);
    let first = plan_card(&w, &msg, 0).await;
    assert_eq!(
        element(&first, "plan_text"),
        "1. Read the code. 2. Fix the bug."
    );
    assert_eq!(buttons(&first.content), ["Approve", "Reject"]);
    let hint = element(&first, "plan_answer");
    assert!(
        hint.contains("To ask for changes, reply in this chat."),
        "{hint}"
    );
    let waiting = waiting_card(&w, &msg).await;
    assert!(
        body(&waiting).ends_with("_⏸ waiting for your decision on the plan_"),
        "{}",
        body(&waiting)
    );

    // A plain reply asks for changes: the agent plans again.
    let reply = w.dm("ou_alice", "add a test first");
    let revised = ended_card(&w, &first.message_id).await;
    assert_eq!(template(&revised), "grey", "superseded");
    assert_eq!(
        element(&revised, "plan_answer"),
        "✏️ Alice asked for changes: add a test first"
    );
    assert!(buttons(&revised.content).is_empty());
    let second = plan_card(&w, &msg, 1).await;
    assert_ne!(second.message_id, first.message_id);
    let again = element(&second, "plan_text");
    assert!(
        again.starts_with(
            "tool propose_plan said: The user (Alice) asked for changes to the plan: add a test first"
        ),
        "{again}"
    );
    assert_eq!(buttons(&second.content), ["Approve", "Reject"]);
    assert_eq!(
        plans(&w).await,
        [
            decided("revised", Some("add a test first"), Some("Alice")),
            decided("proposed", None, None),
        ]
    );
    // The reply was the revise: nothing said to it, no message for the agent.
    assert!(w.replies(&reply).is_empty(), "{:?}", w.replies(&reply));

    let click = w
        .fake
        .click_button(&second.message_id, "ou_alice", "Approve")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "✅ Approved", "{answer}");
    let drawn = &answer["card"]["data"];
    assert_eq!(text_of(drawn, "plan_answer"), "✅ Approved by Alice");
    assert!(buttons(drawn).is_empty(), "no buttons once decided");

    let done = w.final_card(&msg).await;
    assert_eq!(done.message_id, waiting.message_id, "the same reply card");
    assert_eq!(template(&done), "green", "{}", w.logs());
    assert!(
        body(&done).contains("tool propose_plan said: The user (Alice) approved the plan."),
        "the decision reached the model: {}",
        body(&done)
    );
    let approved = ended_card(&w, &second.message_id).await;
    assert_eq!(template(&approved), "green");
    assert_eq!(element(&approved, "plan_answer"), "✅ Approved by Alice");
    assert_eq!(count(&w, "select count(*) from runs").await, 1, "one run");
    assert_eq!(
        count(&w, "select count(*) from messages where role = 'user'").await,
        1
    );

    // A second click (a screen that still shows the buttons) gets what stands.
    let late = click_as_seen(&w, &second, "ou_alice", "Reject");
    assert_eq!(
        w.answer(&late).await["toast"]["content"],
        "Already approved by Alice."
    );
    let stale = click_as_seen(&w, &first, "ou_alice", "Approve");
    assert_eq!(
        w.answer(&stale).await["toast"]["content"],
        "Already decided: Alice asked for changes, and a new plan follows."
    );
    w.until("the reaction to go", |f| {
        f.live_reactions().is_empty().then_some(())
    })
    .await;
}

async fn only_the_owner_decides_a_plan_in_a_group(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let msg = w.group("oc_team", "ou_alice", "/plan @mock.reply 1. Tidy the docs.");
    let card = plan_card(&w, &msg, 0).await;

    let bob = w
        .fake
        .click_button(&card.message_id, "ou_bob", "Approve")
        .unwrap();
    assert_eq!(
        w.answer(&bob).await,
        json!({"toast": {"type": "warning", "content": "Only Alice, whose message asked for this, or a Weft admin can decide."}}),
        "a refusal changes no card"
    );
    // Bob's reply is a message of his own (it waits for its turn), not
    // changes to Alice's plan.
    w.group("oc_team", "ou_bob", "skip the docs");
    let db = database(&w.env).await;
    eventually(WAIT, "Bob's message in line", async || {
        let row = sqlx::query("select count(*) from messages where role = 'user'")
            .fetch_one(&db)
            .await
            .map_err(|e| e.to_string())?;
        match row.get::<i64, _>(0) {
            2 => Ok(()),
            n => Err(format!("{n} user messages")),
        }
    })
    .await;
    assert_eq!(plans(&w).await, [decided("proposed", None, None)]);
    assert_eq!(
        buttons(&current(&w, &card.message_id).content),
        ["Approve", "Reject"]
    );

    // Alice's own reply is; then she rejects the new plan, which ends the
    // reply with it, nothing carried out.
    w.group("oc_team", "ou_alice", "the README only");
    let revised = ended_card(&w, &card.message_id).await;
    assert_eq!(
        element(&revised, "plan_answer"),
        "✏️ Alice asked for changes: the README only"
    );
    let second = plan_card(&w, &msg, 1).await;
    let click = w
        .fake
        .click_button(&second.message_id, "ou_alice", "Reject")
        .unwrap();
    let answer = w.answer(&click).await;
    assert_eq!(answer["toast"]["content"], "❌ Rejected", "{answer}");
    assert_eq!(
        text_of(&answer["card"]["data"], "plan_answer"),
        "❌ Rejected by Alice"
    );
    let done = w.final_card(&msg).await;
    assert_eq!(template(&done), "green", "{}", w.logs());
    assert!(
        body(&done).ends_with(&element(&second, "plan_text")),
        "the rejected plan is the reply: {}",
        body(&done)
    );
    assert_eq!(
        plans(&w).await,
        [
            decided("revised", Some("the README only"), Some("Alice")),
            decided("rejected", None, Some("Alice")),
        ]
    );
}

async fn an_expired_plan_card_says_so_and_a_late_reply_is_a_message(b: Backend) {
    let mut w = LarkWorld::start_with(
        b,
        1,
        fake_config(),
        &[("WEFT_TOOLS__APPROVAL_TTL_SECS", "1")],
    )
    .await;
    let msg = w.dm("ou_alice", PLAN);
    let card = plan_card(&w, &msg, 0).await;
    let expired = ended_card(&w, &card.message_id).await;
    assert_eq!(template(&expired), "grey");
    assert!(
        element(&expired, "plan_answer").starts_with("⌛ Nobody decided in time"),
        "{}",
        element(&expired, "plan_answer")
    );
    assert!(buttons(&expired.content).is_empty());
    let done = w.final_card(&msg).await;
    assert_eq!(body(&done), "1. Read the code. 2. Fix the bug.");
    // Too late to revise: an ordinary message, with a run of its own.
    let late = w.dm("ou_alice", "add a test first");
    assert_eq!(template(&w.final_card(&late).await), "green");
    assert_eq!(count(&w, "select count(*) from runs").await, 2);
    assert_eq!(plans(&w).await, [decided("expired", None, None)]);
}
