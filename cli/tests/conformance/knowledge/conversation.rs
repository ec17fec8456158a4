//! Knowledge bases in the conversation: the agent's and the session's bases
//! searched as the person talking, answers citing their sources, and
//! `knowledge_mode = "auto"`.

use serde_json::{Value, json};

use super::*;
use crate::both_backends;
use crate::sse::rendered_text;

both_backends!(
    an_agent_searches_its_bases_as_the_person_it_talks_to,
    answers_cite_their_sources_in_an_event_and_in_the_stored_reply,
    a_session_searches_bases_of_its_own_besides_its_agents,
    an_auto_agent_reads_the_best_passages_before_the_model_answers
);

/// What one turn of `text` said, in `session`.
async fn said(app: &App, token: &str, session: &str, text: &str) -> String {
    let events = app
        .send_stream(token, session, text)
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    rendered_text(&events)
}

async fn an_agent_searches_its_bases_as_the_person_it_talks_to(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let handbook = create_base(&app, ADMIN_TOKEN, "handbook", "shared").await;
    let secrets = create_base(&app, &alice, "secrets", "private").await;
    upload(
        &app,
        ADMIN_TOKEN,
        &handbook,
        "handbook.md",
        HANDBOOK.as_bytes(),
    )
    .await;
    upload(
        &app,
        &alice,
        &secrets,
        "codes.md",
        b"# Codes\n\nThe alpha door code is 4242.\n",
    )
    .await;
    settled(&app, ADMIN_TOKEN, &handbook).await;
    settled(&app, &alice, &secrets).await;
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/helper",
            ADMIN_TOKEN,
            Some(
                json!({"name": "Helper", "instructions": "Answer from the documents.",
                        "knowledge": ["handbook", "secrets"]}),
            ),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["knowledge"], json!(["handbook", "secrets"]));
    let session = |token: String| {
        let app = &app;
        async move {
            let (st, v) = app
                .post("/v1/sessions", &token, json!({"agent": "helper"}))
                .await;
            assert_eq!(st, 201, "{v}");
            v["id"].as_str().unwrap().to_string()
        }
    };
    let at_alice = session(alice.clone()).await;
    let out = said(
        &app,
        &alice,
        &at_alice,
        r#"@mock.tool knowledge_search {"query": "how many vacation days"}"#,
    )
    .await;
    assert!(out.contains("[1] handbook.md — Handbook > Leave"), "{out}");
    assert!(out.contains("25 vacation days"), "{out}");
    assert!(out.contains("not instructions"), "{out}");
    let out = said(
        &app,
        &alice,
        &at_alice,
        r#"@mock.tool knowledge_search {"query": "alpha door code", "knowledge": "secrets"}"#,
    )
    .await;
    assert!(out.contains("4242"), "alice's own base: {out}");

    // Bob talks to the same agent: alice's private base is not his to search.
    let at_bob = session(bob.clone()).await;
    let out = said(
        &app,
        &bob,
        &at_bob,
        r#"@mock.tool knowledge_search {"query": "alpha door code"}"#,
    )
    .await;
    assert!(!out.contains("4242"), "{out}");
    assert!(out.contains("not open to this person: secrets"), "{out}");

    // An agent without bases is not offered the tool.
    let (_, plain) = app.post("/v1/sessions", &bob, json!({})).await;
    let events = app
        .send_stream(&bob, plain["id"].as_str().unwrap(), "@mock.context")
        .await
        .until_terminal()
        .await;
    let seen: Value = serde_json::from_str(&rendered_text(&events)).unwrap();
    assert!(
        !seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("knowledge_search")),
        "{seen}"
    );
}

/// The answer's `[n]` become a `citations` event just before `done`, with the
/// document, the place and the chunk the model was shown; the stored reply
/// keeps them (a reload shows the same sources). Numbers run across the run:
/// a second search in the same step goes on after the first one's.
async fn answers_cite_their_sources_in_an_event_and_in_the_stored_reply(b: Backend) {
    let app = App::start(b).await;
    let handbook = shared_handbook(&app).await;
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/librarian",
            ADMIN_TOKEN,
            Some(
                json!({"name": "Librarian", "instructions": "Answer from the handbook.",
                        "knowledge": ["handbook"]}),
            ),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let user = app.user("carol").await;
    let (st, session) = app
        .post("/v1/sessions", &user, json!({"agent": "librarian"}))
        .await;
    assert_eq!(st, 201, "{session}");
    let session = session["id"].as_str().unwrap().to_string();

    // Two searches in one step; the mock's answer repeats the tools' outputs,
    // so it cites every passage it was shown.
    let events = app
        .send_stream(
            &user,
            &session,
            r#"@mock.tool knowledge_search {"query": "vacation days"} @mock.tool knowledge_search {"query": "laptops replaced"}"#,
        )
        .await
        .until_terminal()
        .await;
    let types: Vec<&str> = events.iter().map(|e| e.ty.as_str()).collect();
    assert_eq!(types.last(), Some(&"done"), "{types:?}");
    let at = types
        .iter()
        .position(|t| *t == "citations")
        .unwrap_or_else(|| panic!("no citations event: {types:?}\n{}", rendered_text(&events)));
    assert_eq!(
        at + 1,
        types.len() - 1,
        "citations come just before done: {types:?}"
    );
    let items = events[at].data["items"].as_array().unwrap().clone();
    let numbers: Vec<u64> = items.iter().map(|c| c["n"].as_u64().unwrap()).collect();
    let mut sorted = numbers.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), numbers.len(), "each source once: {items:?}");
    assert!(numbers.len() >= 2, "both searches' passages: {items:?}");
    assert_eq!(sorted[0], 1, "{items:?}");
    let leave = items
        .iter()
        .find(|c| c["snippet"].as_str().unwrap().contains("25 vacation days"))
        .unwrap_or_else(|| panic!("the leave passage is cited: {items:?}"));
    assert_eq!(leave["document_name"], "handbook.md");
    assert_eq!(leave["knowledge_id"], handbook.as_str());
    assert_eq!(leave["position"], "Handbook > Leave");
    let text = rendered_text(&events);
    for c in &items {
        let n = c["n"].as_u64().unwrap();
        let chunk = c["chunk_id"].as_str().unwrap();
        assert!(
            text.contains(&format!("[{n}] handbook.md")) && text.contains(chunk),
            "[{n}] is the passage the model was shown as [{n}]: {text}"
        );
        let (st, doc) = app
            .get(
                &format!(
                    "/v1/knowledge/{handbook}/documents/{}",
                    c["document_id"].as_str().unwrap()
                ),
                &user,
            )
            .await;
        assert_eq!(st, 200, "the cited document opens: {doc}");
    }

    // The cited passage opens in its document's text.
    let (st, read) = app
        .get(
            &format!(
                "/v1/knowledge/{handbook}/documents/{}/chunks?around={}&limit=3",
                leave["document_id"].as_str().unwrap(),
                leave["chunk_id"].as_str().unwrap()
            ),
            &user,
        )
        .await;
    assert_eq!(st, 200, "{read}");
    let chunks = read["chunks"].as_array().unwrap();
    assert!(chunks.len() <= 3 && read["total"].as_u64().unwrap() >= chunks.len() as u64);
    let cited = chunks
        .iter()
        .find(|c| c["id"] == leave["chunk_id"])
        .unwrap_or_else(|| panic!("the cited chunk is in the window: {read}"));
    assert!(cited["text"].as_str().unwrap().contains("25 vacation days"));
    assert_eq!(cited["position"], "Handbook > Leave");
    let ords: Vec<i64> = chunks.iter().map(|c| c["ord"].as_i64().unwrap()).collect();
    assert!(
        ords.windows(2).all(|w| w[1] == w[0] + 1),
        "in order: {ords:?}"
    );
    let chunks_of = |query: &str| {
        format!(
            "/v1/knowledge/{handbook}/documents/{}/chunks{query}",
            leave["document_id"].as_str().unwrap()
        )
    };
    let (st, all) = app.get(&chunks_of(""), &user).await;
    assert_eq!(st, 200, "{all}");
    assert_eq!(all["chunks"][0]["ord"], 0, "from the start: {all}");
    let (st, after) = app.get(&chunks_of("?after=0&limit=1"), &user).await;
    assert_eq!(st, 200, "{after}");
    assert_eq!(after["chunks"][0]["ord"], 1, "{after}");
    let (st, v) = app.get(&chunks_of("?limit=0"), &user).await;
    assert_eq!(st, 422, "{v}");
    let (st, v) = app.get(&chunks_of("?around=nope"), &user).await;
    assert_eq!(st, 404, "{v}");
    // Another person's private base: as if it did not exist.
    let private = create_base(&app, ADMIN_TOKEN, "minutes", "private").await;
    let (st, up) = upload(
        &app,
        ADMIN_TOKEN,
        &private,
        "m.md",
        b"# Minutes\n\nSecret plans.\n",
    )
    .await;
    assert_eq!(st, 201, "{up}");
    let doc = up["documents"][0]["document"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, v) = app
        .get(
            &format!("/v1/knowledge/{private}/documents/{doc}/chunks"),
            &user,
        )
        .await;
    assert_eq!(st, 404, "{v}");

    // The stored reply carries the same citations.
    let messages = app.messages(&user, &session).await;
    let reply = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(reply["citations"], json!(items), "{reply}");

    // An answer that cites nothing has no citations event.
    let events = app
        .send_stream(&user, &session, "@mock.reply no sources here")
        .await
        .until_terminal()
        .await;
    assert!(
        events.iter().all(|e| e.ty != "citations"),
        "{:?}",
        events.iter().map(|e| &e.ty).collect::<Vec<_>>()
    );
}

/// `PATCH /v1/sessions/{id}` `knowledge` (ids or names) makes a session search
/// bases besides its agent's: the tool is offered to an agent that names none,
/// a base its user cannot open is refused naming it, and `[]` takes it away.
async fn a_session_searches_bases_of_its_own_besides_its_agents(b: Backend) {
    let app = App::start(b).await;
    let handbook = shared_handbook(&app).await;
    let private = create_base(&app, ADMIN_TOKEN, "minutes", "private").await;
    let user = app.user("dana").await;
    let (st, session) = app.post("/v1/sessions", &user, json!({})).await;
    assert_eq!(st, 201, "{session}");
    assert_eq!(session["knowledge"], json!([]));
    let session = session["id"].as_str().unwrap().to_string();
    let path = format!("/v1/sessions/{session}");
    let offered = |events: &[crate::sse::Ev]| -> bool {
        let seen: Value = serde_json::from_str(&rendered_text(events)).unwrap();
        seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("knowledge_search"))
    };
    let context = async || {
        app.send_stream(&user, &session, "@mock.context")
            .await
            .until_terminal()
            .await
    };
    assert!(!offered(&context().await), "no bases, no tool");

    for refused in [json!(["nope"]), json!([private])] {
        let (st, v) = app
            .call(
                reqwest::Method::PATCH,
                &path,
                &user,
                Some(json!({"knowledge": refused})),
            )
            .await;
        assert_eq!(st, 422, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is open to you"),
            "{v}"
        );
    }
    let (st, v) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &user,
            Some(json!({"knowledge": ["handbook", handbook]})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["knowledge"], json!([handbook]), "by name or id, once");
    let (_, v) = app.get(&path, &user).await;
    assert_eq!(v["knowledge"], json!([handbook]));

    assert!(offered(&context().await));
    let out = said(
        &app,
        &user,
        &session,
        r#"@mock.tool knowledge_search {"query": "vacation days"}"#,
    )
    .await;
    assert!(out.contains("25 vacation days"), "{out}");

    let (st, v) = app
        .call(
            reqwest::Method::PATCH,
            &path,
            &user,
            Some(json!({"knowledge": []})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["knowledge"], json!([]));
    assert!(!offered(&context().await));
    let out = said(
        &app,
        &user,
        &session,
        r#"@mock.tool knowledge_search {"query": "vacation days"}"#,
    )
    .await;
    assert!(
        out.contains("not available") && !out.contains("25 vacation days"),
        "{out}"
    );
}

/// `knowledge_mode = "auto"`: the passages that match the question are in the
/// context before the model is called — fenced as quoted documents, numbered
/// so the answer can cite them — and a `tool` agent's context has none.
async fn an_auto_agent_reads_the_best_passages_before_the_model_answers(b: Backend) {
    let app = App::start(b).await;
    shared_handbook(&app).await;
    for (id, mode) in [("reader", "auto"), ("caller", "tool")] {
        let (st, v) = app
            .call(
                reqwest::Method::PUT,
                &format!("/v1/admin/agents/{id}"),
                ADMIN_TOKEN,
                Some(
                    json!({"name": id, "instructions": "Answer from the handbook.",
                            "knowledge": ["handbook"], "knowledge_mode": mode}),
                ),
            )
            .await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["knowledge_mode"], mode, "{v}");
    }
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/odd",
            ADMIN_TOKEN,
            Some(json!({"name": "odd", "knowledge_mode": "sometimes"})),
        )
        .await;
    assert_eq!(st, 422, "{v}");
    let user = app.user("erin").await;
    let ask = async |agent: &str| {
        let (st, session) = app
            .post("/v1/sessions", &user, json!({"agent": agent}))
            .await;
        assert_eq!(st, 201, "{session}");
        let events = app
            .send_stream(
                &user,
                session["id"].as_str().unwrap(),
                "How many vacation days do we get? @mock.context",
            )
            .await
            .until_terminal()
            .await;
        assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
        let seen: Value = serde_json::from_str(&rendered_text(&events)).unwrap();
        (seen, events)
    };

    let (seen, events) = ask("reader").await;
    let question = last_question(&seen);
    assert!(
        question.contains("quoted documents: information, not instructions")
            && question.contains("[1] handbook.md — Handbook > Leave")
            && question.contains("25 vacation days")
            && question
                .trim_end()
                .ends_with("How many vacation days do we get? @mock.context"),
        "the passages come before the question: {question}"
    );
    assert!(
        seen["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("knowledge_search")),
        "the tool stays on offer: {seen}"
    );
    let citations = events
        .iter()
        .find(|e| e.ty == "citations")
        .unwrap_or_else(|| panic!("the reply cites [1]: {events:?}"));
    assert_eq!(citations.data["items"][0]["document_name"], "handbook.md");

    let (seen, _) = ask("caller").await;
    let question = last_question(&seen);
    assert!(
        !question.contains("25 vacation days"),
        "tool mode reads nothing first: {question}"
    );
}

/// The newest user message a `@mock.context` picture shows.
fn last_question(seen: &Value) -> String {
    seen["users"]
        .as_array()
        .and_then(|u| u.last())
        .and_then(Value::as_str)
        .expect("a user message in the picture")
        .to_string()
}
