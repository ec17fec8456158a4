//! Memory (issue 26) over the API and in the conversation, on both backends:
//! each person's memories are theirs alone (another's id is 404, their lists
//! and prompts never show it); secrets and over-long texts are refused; a fact
//! the model remembers with the `remember` tool is in the person's next
//! session's prompt, with a `memory_used` event and the run's record of it;
//! forgetting takes effect on the next turn; memory off recalls and offers
//! nothing.

use std::time::Duration;

use serde_json::{Value, json};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    memories_are_each_persons_own_and_checked,
    a_remembered_fact_is_in_the_next_sessions_prompt,
    finished_turns_are_learned_from_once_in_the_background,
    an_agent_with_memory_off_recalls_and_learns_nothing
);

/// Extraction right after each turn (the default waits 30 s to read a
/// conversation's quick turns together).
const EXTRACT_AT_ONCE: (&str, &str) = ("WEFT_MEMORY__EXTRACT_AFTER_SECS", "0");

/// What the scripted extraction model answers: the person's message carries
/// it (`@mock.reply`), and the extraction's input ends with that message.
const LEARN: &str = r#"I'm on the payments team and I prefer answers in Chinese @mock.reply {"add": [{"kind": "fact", "text": "prefers answers in Chinese"}, {"kind": "fact", "text": "my password is hunter2hunter2"}], "profile": "- works on the payments team\n- wants answers in Chinese"}"#;

/// One turn, to its end.
async fn turn(app: &App, token: &str, session: &str, text: &str) {
    let events = app
        .send_stream(token, session, text)
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
}

/// Waits until no extraction is queued or running.
async fn extractions_end(app: &App) {
    eventually(Duration::from_secs(30), "the extractions end", async || {
        let n = app
            .count_rows(
                "select count(*) from jobs where kind = 'memory.extract' and state in ('queued', 'running')",
            )
            .await;
        (n == 0).then_some(()).ok_or(n)
    })
    .await;
}

async fn texts(app: &App, token: &str) -> Vec<String> {
    app.get("/v1/me/memories", token).await.1["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

async fn finished_turns_are_learned_from_once_in_the_background(b: Backend) {
    let app = App::start_with(b, &[EXTRACT_AT_ONCE]).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let first = app.session(&alice).await;
    turn(&app, &alice, &first, LEARN).await;

    // The fact and the profile are kept, the secret is not; the reply never
    // waited for any of it (the run ended first).
    let list = eventually(
        Duration::from_secs(30),
        "the extraction keeps what it learned",
        async || {
            let (_, list) = app.get("/v1/me/memories", &alice).await;
            if list["memories"].as_array().unwrap().len() == 2 {
                Ok(list)
            } else {
                Err(list)
            }
        },
    )
    .await;
    let memories = list["memories"].as_array().unwrap();
    let profile = &memories[0];
    assert_eq!(
        (profile["profile"].clone(), profile["pinned"].clone()),
        (json!(true), json!(true)),
        "{list}"
    );
    assert!(profile["text"].as_str().unwrap().contains("payments team"));
    assert_eq!(memories[1]["text"], "prefers answers in Chinese");
    assert_eq!(memories[1]["source"]["session_id"], first.as_str());
    assert_eq!(
        app.count_rows("select count(*) from runs where memory_pending = 1")
            .await,
        0
    );

    // The next session's prompt has them, the preview shows them, Bob's not.
    let second = app.session(&alice).await;
    let (seen, events) = context(&app, &alice, &second, "which answers in Chinese?").await;
    let system = seen["system"][0].as_str().unwrap();
    assert!(system.contains("wants answers in Chinese"), "{system}");
    assert!(
        system.contains("- (fact) prefers answers in Chinese"),
        "{system}"
    );
    assert_eq!(recalled(&events).len(), 2);
    let (s, preview) = app
        .get(
            &format!("/v1/sessions/{second}/system-prompt?message=answers%20in%20Chinese"),
            &alice,
        )
        .await;
    assert_eq!(s, 200, "{preview}");
    assert_eq!(
        preview["memories"].as_array().unwrap().len(),
        2,
        "{preview}"
    );
    assert!(
        preview["system_prompt"]
            .as_str()
            .unwrap()
            .contains("prefers answers in Chinese")
    );
    let bobs = app.session(&bob).await;
    let (seen, _) = context(&app, &bob, &bobs, "which answers in Chinese?").await;
    assert!(!seen["system"][0].as_str().unwrap().contains("Chinese"));
    assert!(texts(&app, &bob).await.is_empty());

    // Learned once: that turn is not read again, and a turn that teaches
    // nothing (the mock's echo is not the JSON asked for) adds nothing.
    turn(&app, &alice, &second, "hello again").await;
    eventually(
        Duration::from_secs(30),
        "the quiet turn is read",
        async || {
            let n = app
                .count_rows("select count(*) from runs where memory_pending = 1")
                .await;
            (n == 0).then_some(()).ok_or(n)
        },
    )
    .await;
    extractions_end(&app).await;
    assert_eq!(texts(&app, &alice).await.len(), 2);
    assert_eq!(
        app.count_rows("select count(*) from jobs where kind = 'memory.extract'")
            .await,
        3,
        "one job per session and person (Alice's two, Bob's one), armed again per turn"
    );

    // The person's switch off: turns are not even marked.
    let (s, _) = app
        .call(
            reqwest::Method::PATCH,
            "/v1/me/memory",
            &alice,
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(s, 200);
    turn(&app, &alice, &second, &LEARN.replace("Chinese", "French")).await;
    assert_eq!(
        app.count_rows("select count(*) from runs where memory_pending = 1")
            .await,
        0
    );
    extractions_end(&app).await;
    assert!(
        !texts(&app, &alice)
            .await
            .iter()
            .any(|t| t.contains("French"))
    );
}

async fn an_agent_with_memory_off_recalls_and_learns_nothing(b: Backend) {
    let app = App::start_with(b, &[EXTRACT_AT_ONCE]).await;
    let alice = app.user("alice").await;
    let (s, agent) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/forgetful",
            ADMIN_TOKEN,
            Some(json!({"name": "Forgetful", "instructions": "You help.", "memory": false})),
        )
        .await;
    assert_eq!((s, agent["memory"].clone()), (200, json!(false)), "{agent}");
    let (s, _) = app
        .post(
            "/v1/me/memories",
            &alice,
            json!({"text": "prefers answers in Chinese", "pinned": true}),
        )
        .await;
    assert_eq!(s, 201);
    let (s, session) = app
        .post("/v1/sessions", &alice, json!({"agent": "forgetful"}))
        .await;
    assert_eq!(s, 201, "{session}");
    let session = session["id"].as_str().unwrap().to_string();
    let (seen, events) = context(&app, &alice, &session, "answers in Chinese?").await;
    assert!(!seen["system"][0].as_str().unwrap().contains("Chinese"));
    assert!(
        !seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "remember" || t == "memory_search")
    );
    assert!(recalled(&events).is_empty());
    let (_, preview) = app
        .get(&format!("/v1/sessions/{session}/system-prompt"), &alice)
        .await;
    assert_eq!(preview["memories"], json!([]), "{preview}");
    turn(&app, &alice, &session, LEARN).await;
    assert_eq!(
        app.count_rows("select count(*) from runs where memory_pending = 1")
            .await,
        0
    );
    assert_eq!(
        app.count_rows("select count(*) from jobs where kind = 'memory.extract'")
            .await,
        0
    );
    assert_eq!(texts(&app, &alice).await, ["prefers answers in Chinese"]);
}

/// What the mock model was sent (`@mock.context`), and the run's events.
async fn context(app: &App, token: &str, session: &str, text: &str) -> (Value, Vec<Ev>) {
    let events = app
        .send_stream(token, session, &format!("{text} @mock.context"))
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    let picture = serde_json::from_str(&rendered_text(&events)).expect("the mock's JSON picture");
    (picture, events)
}

fn recalled(events: &[Ev]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.ty == "memory_used")
        .flat_map(|e| e.data["memories"].as_array().unwrap().clone())
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

async fn memories_are_each_persons_own_and_checked(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let add = async |token: &str, body: Value| app.post("/v1/me/memories", token, body).await;

    let (s, tea) = add(&alice, json!({"text": "prefers green tea", "pinned": true})).await;
    assert_eq!(s, 201, "{tea}");
    assert_eq!(
        (tea["kind"].clone(), tea["source"]["type"].clone()),
        (json!("fact"), json!("manual"))
    );
    let (s, _) = add(
        &alice,
        json!({"text": "shipped the refunds service", "kind": "episode"}),
    )
    .await;
    assert_eq!(s, 201);
    let id = tea["id"].as_str().unwrap();

    // Refused: a secret, too long, empty, an unknown kind.
    for (body, status) in [
        (json!({"text": "my password is hunter22"}), 422),
        (json!({"text": "x".repeat(2001)}), 422),
        (json!({"text": "  "}), 422),
        (json!({"text": "ok", "kind": "rumour"}), 422),
    ] {
        let (s, v) = add(&alice, body.clone()).await;
        assert_eq!(s, status, "{body}: {v}");
    }

    // Bob sees none of it and can touch none of it.
    let (_, list) = app.get("/v1/me/memories", &bob).await;
    assert_eq!(list["memories"], json!([]));
    assert_eq!(list["enabled"], true);
    let path = format!("/v1/me/memories/{id}");
    let (s, _) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &bob,
            Some(json!({"text": "coffee"})),
        )
        .await;
    assert_eq!(s, 404);
    let (s, _) = app.call(reqwest::Method::DELETE, &path, &bob, None).await;
    assert_eq!(s, 404);

    // Alice's: pinned first; by kind; ranked by a query; changed; exported.
    let (_, list) = app.get("/v1/me/memories", &alice).await;
    let texts: Vec<&str> = list["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["prefers green tea", "shipped the refunds service"]);
    let (_, episodes) = app.get("/v1/me/memories?kind=episode", &alice).await;
    assert_eq!(episodes["memories"].as_array().unwrap().len(), 1);
    let (_, found) = app.get("/v1/me/memories?q=refunds", &alice).await;
    assert_eq!(found["memories"][0]["text"], "shipped the refunds service");
    assert_eq!(found["memories"].as_array().unwrap().len(), 1);
    let (s, changed) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &alice,
            Some(json!({"text": "prefers oolong tea", "pinned": false})),
        )
        .await;
    assert_eq!(s, 200, "{changed}");
    assert_eq!(
        (changed["text"].clone(), changed["pinned"].clone()),
        (json!("prefers oolong tea"), json!(false))
    );
    let resp = app
        .http
        .get(app.url("/v1/me/memories/export"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("attachment")
    );
    let exported: Value = resp.json().await.unwrap();
    assert_eq!(exported["memories"].as_array().unwrap().len(), 2);

    let (s, gone) = app
        .call(reqwest::Method::DELETE, "/v1/me/memories", &alice, None)
        .await;
    assert_eq!((s, gone["deleted"].clone()), (200, json!(2)));
    let (_, list) = app.get("/v1/me/memories", &alice).await;
    assert_eq!(list["memories"], json!([]));
}

async fn a_remembered_fact_is_in_the_next_sessions_prompt(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;

    // The model remembers, with the tool, for the person it talks to.
    let first = app.session(&alice).await;
    let events = app
        .send_stream(
            &alice,
            &first,
            r#"I'm on the payments team @mock.tool remember {"text": "works on the payments team"}"#,
        )
        .await
        .until_terminal()
        .await;
    let said = rendered_text(&events);
    assert!(said.contains("Remembered (fact, id mem_"), "{said}");
    let (_, list) = app.get("/v1/me/memories", &alice).await;
    let memory = &list["memories"][0];
    assert_eq!(memory["text"], "works on the payments team");
    assert_eq!(
        memory["source"],
        json!({"type": "conversation", "session_id": first})
    );
    // A secret is refused by the tool too.
    let events = app
        .send_stream(
            &alice,
            &first,
            r#"@mock.tool remember {"text": "my api key: sk-proj-abcdefghijklmnopqrstu"}"#,
        )
        .await
        .until_terminal()
        .await;
    assert!(
        rendered_text(&events).contains("looks like a secret"),
        "{events:?}"
    );
    assert_eq!(
        app.get("/v1/me/memories", &alice).await.1["memories"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // The next session: the related memory is in the prompt, and the run says so.
    let second = app.session(&alice).await;
    let (seen, events) = context(&app, &alice, &second, "who reviews payments refunds?").await;
    let system = seen["system"][0].as_str().unwrap();
    assert!(
        system.contains("- (fact) works on the payments team"),
        "{system}"
    );
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "remember")
    );
    assert_eq!(recalled(&events), ["works on the payments team"]);
    let run = events[0].data["run_id"].as_str().unwrap();
    let memory_id = memory["id"].as_str().unwrap();
    let (_, after) = app.get("/v1/me/memories", &alice).await;
    assert!(
        after["memories"][0]["last_used_at"].as_i64().is_some(),
        "{after}"
    );
    let _ = run;

    // Bob, asking the same in his own session, gets none of Alice's.
    let bobs = app.session(&bob).await;
    let (seen, events) = context(&app, &bob, &bobs, "who reviews payments refunds?").await;
    assert!(
        !seen["system"][0]
            .as_str()
            .unwrap()
            .contains("payments team")
    );
    assert!(recalled(&events).is_empty());

    // Forgotten: gone from the next turn.
    let (s, _) = app
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/me/memories/{memory_id}"),
            &alice,
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (seen, events) = context(&app, &alice, &second, "who reviews payments refunds?").await;
    assert!(
        !seen["system"][0]
            .as_str()
            .unwrap()
            .contains("payments team")
    );
    assert!(recalled(&events).is_empty());

    // Memory off: nothing recalled, no memory tools, the tool refuses.
    let (s, _) = app
        .post(
            "/v1/me/memories",
            &alice,
            json!({"text": "likes payments dashboards", "pinned": true}),
        )
        .await;
    assert_eq!(s, 201);
    let (s, _) = app
        .call(
            reqwest::Method::PATCH,
            "/v1/me/memory",
            &alice,
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(s, 200);
    let (seen, events) = context(&app, &alice, &second, "payments?").await;
    assert!(!seen["system"][0].as_str().unwrap().contains("dashboards"));
    assert!(
        !seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "remember")
    );
    assert!(recalled(&events).is_empty());
    let (_, list) = app.get("/v1/me/memories", &alice).await;
    assert_eq!(list["enabled"], false);
}
