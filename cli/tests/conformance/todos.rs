//! The agent's todo list (docs/protocol.md, "Todos"): `todo_update` changes the
//! session's list with patch semantics and publishes the whole list as a `todo`
//! event; the list is the session's, so it outlives a compaction, and undoing a
//! turn brings back the list from before it (redo, the turn's again).

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(a_todo_list_is_patched_outlives_compaction_and_follows_undo);

async fn todos(app: &App, token: &str, s: &str) -> Vec<(String, String, String)> {
    let (st, list) = app.get(&format!("/v1/sessions/{s}/todos"), token).await;
    assert_eq!(st, 200, "{list}");
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let f = |k: &str| i[k].as_str().unwrap().to_string();
            (f("id"), f("text"), f("status"))
        })
        .collect()
}

fn item(id: &str, text: &str, status: &str) -> (String, String, String) {
    (id.into(), text.into(), status.into())
}

/// Sends `todo_update {items}` as the model's call; the run's `todo` events and its tool's result.
async fn update(app: &App, token: &str, s: &str, items: Value) -> (Vec<Value>, Value) {
    let text = format!("@mock.tool todo_update {}", json!({ "items": items }));
    let events = app
        .send_stream(token, s, &text)
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    let todo = events
        .iter()
        .filter(|e| e.ty == "todo")
        .map(|e| e.data.clone())
        .collect();
    let end = events
        .iter()
        .find(|e| e.ty == "tool_end")
        .expect("the tool ran");
    (todo, end.data.clone())
}

async fn act(app: &App, token: &str, s: &str, what: &str) -> u16 {
    let path = format!("/v1/sessions/{s}/{what}");
    app.call(reqwest::Method::POST, &path, token, Some(json!({})))
        .await
        .0
}

async fn a_todo_list_is_patched_outlives_compaction_and_follows_undo(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    assert!(todos(&app, &alice, &s).await.is_empty(), "no list yet");

    // Two items added: one event with the whole list; the model reads it back.
    let (events, end) = update(
        &app,
        &alice,
        &s,
        json!([{"text": "read"}, {"text": "write"}]),
    )
    .await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0]["items"],
        json!([{"id": "1", "text": "read", "status": "pending"}, {"id": "2", "text": "write", "status": "pending"}])
    );
    assert_eq!(end["ok"], true, "{end}");
    assert!(
        end["output"].as_str().unwrap().contains("[ ] 2. write"),
        "{end}"
    );
    let first = [item("1", "read", "pending"), item("2", "write", "pending")];
    assert_eq!(todos(&app, &alice, &s).await, first);

    // A patch by id in the next turn: item 1 done, item 2 started.
    let patch = json!([{"id": "1", "status": "done"}, {"id": "2", "status": "in_progress"}]);
    let (events, _) = update(&app, &alice, &s, patch).await;
    let second = [item("1", "read", "done"), item("2", "write", "in_progress")];
    assert_eq!(events[0]["items"][0]["status"], "done");
    assert_eq!(todos(&app, &alice, &s).await, second);

    // A bad patch is the model's to fix: an error result, no event, nothing changed.
    let (events, end) = update(&app, &alice, &s, json!([{"id": "9", "status": "done"}])).await;
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(end["ok"], false);
    assert!(
        end["output"].as_str().unwrap().contains("no item \"9\""),
        "{end}"
    );
    assert_eq!(todos(&app, &alice, &s).await, second);

    // A compaction summarises messages; the list is not one of them.
    assert_eq!(act(&app, &alice, &s, "compact").await, 202);
    let run = app.send(&alice, &s, "and now? @mock.context").await;
    let done = app
        .wait_run(&alice, &run, std::time::Duration::from_secs(30))
        .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(todos(&app, &alice, &s).await, second);
    // The next run starts knowing the list: it is shown before the question.
    let messages = app.messages(&alice, &s).await;
    let seen: Value =
        serde_json::from_str(messages.last().unwrap()["content"].as_str().unwrap().trim()).unwrap();
    let question = seen["users"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap();
    assert!(
        question.contains("as it stands]") && question.contains("[~] 2. write"),
        "{question}"
    );
    assert!(question.ends_with("and now? @mock.context"), "{question}");

    // Undo the last two turns: the list from before the patch is back; redo, the patch again.
    assert_eq!(act(&app, &alice, &s, "undo").await, 200);
    assert_eq!(act(&app, &alice, &s, "undo").await, 200);
    assert_eq!(act(&app, &alice, &s, "undo").await, 200);
    assert_eq!(
        todos(&app, &alice, &s).await,
        first,
        "the patch's turn is undone"
    );
    assert_eq!(act(&app, &alice, &s, "redo").await, 200);
    assert_eq!(todos(&app, &alice, &s).await, second);

    // Someone else's session has no list to them.
    let (st, _) = app.get(&format!("/v1/sessions/{s}/todos"), &bob).await;
    assert_eq!(st, 404);
}
