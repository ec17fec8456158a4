//! The todo card from Lark (issue 28, docs/lark.md): a reply that changes the
//! conversation's todo list gets one turquoise card of its own, its progress in
//! the header, rewritten in place as the list changes; the reply card carries
//! no copy of the list; the next reply that changes it gets its own card.

use super::world::*;
use crate::both_backends;
use crate::harness::*;

both_backends!(a_reply_that_keeps_a_todo_list_has_one_card_for_it);

async fn a_reply_that_keeps_a_todo_list_has_one_card_for_it(b: Backend) {
    let mut w = LarkWorld::start(b).await;
    let alice = w.linked_account("alice", "ou_alice").await;
    // Two calls in one step: the list changes twice while the reply goes on.
    // They run at once and their `todo` events may arrive in either order;
    // the card keeps the list of the higher version (docs/protocol.md, "Todos").
    let said = w.dm(
        "ou_alice",
        r#"plan it @mock.tool todo_update {"items": [{"text": "read the brief"}, {"text": "draft"}]} @mock.tool todo_update {"items": [{"text": "send"}]}"#,
    );
    let reply = w.final_card(&said).await;
    assert!(
        find(&reply.content, "todos").is_none() && !reply.content.to_string().contains("☑ Todo"),
        "the reply card has no copy of the list: {}",
        reply.content
    );
    let todo_cards = |w: &LarkWorld| {
        w.replies(&said)
            .into_iter()
            .filter(|m| template(m) == "turquoise")
            .collect::<Vec<_>>()
    };
    let card = w
        .until("the todo card with all three items", |_| {
            todo_cards(&w).into_iter().find(|m| {
                let shown = m.content.to_string();
                ["☐ read the brief", "☐ draft", "☐ send"]
                    .iter()
                    .all(|item| shown.contains(item))
            })
        })
        .await;
    let title = card.content["header"]["title"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(title, "☑ Todo 0/3 ▱▱▱▱▱▱▱▱▱▱");
    let items = card.content.to_string();
    assert!(
        items.contains("☐ read the brief") && items.contains("☐ draft"),
        "{items}"
    );
    assert_eq!(todo_cards(&w).len(), 1, "one card, rewritten in place");

    // The next reply ticks the list over: a card of its own, with its progress.
    // (The two calls ran at once: the ids are read, not assumed.)
    let sessions = w.get_json("/v1/sessions", &alice).await;
    let session = sessions["sessions"][0]["id"].as_str().unwrap().to_owned();
    let list = w
        .get_json(&format!("/v1/sessions/{session}/todos"), &alice)
        .await;
    let id_of = |text: &str| {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["text"] == text)
            .unwrap_or_else(|| panic!("{text} in {list}"))["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let patch = serde_json::json!({"items": [
        {"id": id_of("read the brief"), "status": "done"},
        {"id": id_of("draft"), "status": "in_progress"},
    ]});
    let next = w.dm("ou_alice", &format!("done @mock.tool todo_update {patch}"));
    w.final_card(&next).await;
    let ticked = w
        .until("the second reply's todo card", |_| {
            w.replies(&next)
                .into_iter()
                .find(|m| template(m) == "turquoise")
        })
        .await;
    assert_eq!(
        ticked.content["header"]["title"]["content"],
        "☑ Todo 1/3 ▰▰▰▱▱▱▱▱▱▱"
    );
    let items = ticked.content.to_string();
    assert!(
        items.contains("☑ ~~read the brief~~") && items.contains("▶ **draft**"),
        "{items}"
    );
    assert_eq!(
        todo_cards(&w).len(),
        1,
        "the first reply's card is left as it was"
    );
}
