//! Plan mode (docs/protocol.md, "Plans"; issue 28 on issue 24's waits): a run
//! sent with `plan: true` is offered only read-only tools and the server
//! refuses any other call; its planning ends with a plan proposed, which
//! suspends the run as `waiting_input` without a worker. The first decision
//! stands: approve (the run goes on with every tool), revise (a new plan) or
//! reject (the run ends with the plan as its reply, nothing carried out).

use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::tool_message;
use crate::harness::*;

crate::both_backends!(
    plan_mode_refuses_every_write_call_and_approving_the_plan_opens_the_tools,
    a_revised_plan_is_proposed_again_and_a_rejected_one_ends_the_run,
    an_mcp_tool_plans_by_its_read_only_hint_unless_the_admin_says_otherwise,
    an_undecided_plan_expires_and_the_run_ends_with_it,
);

/// Send `text` in plan mode, streaming.
async fn send_plan(app: &App, token: &str, session: &str, text: &str) -> Sse {
    let resp = reqwest::Client::new()
        .post(app.url(&format!("/v1/sessions/{session}/messages")))
        .bearer_auth(token)
        .json(&json!({"text": text, "stream": true, "plan": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "plan send");
    Sse::new(resp)
}

async fn decide(app: &App, token: &str, plan: &str, body: Value) -> (u16, Value) {
    app.post(&format!("/v1/plans/{plan}"), token, body).await
}

async fn waits_for_input(app: &App, token: &str, run: &str) {
    eventually(
        Duration::from_secs(10),
        "the run waits for input",
        async || {
            let (_, v) = app.get(&format!("/v1/runs/{run}"), token).await;
            if v["status"] == "waiting_input" {
                Ok(())
            } else {
                Err(v["status"].clone())
            }
        },
    )
    .await;
}

/// The request the model was sent, as `@mock.context` pictured it in a
/// step's text.
fn picture(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

async fn plan_mode_refuses_every_write_call_and_approving_the_plan_opens_the_tools(b: Backend) {
    let app = App::start_with(b, &[("WEFT_TOOLS__MAX_CALLS_PER_STEP", "128")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;

    // 100 calls of a tool that writes (memories), one that reads: the reads
    // run, none of the writes does, and the planning ends with a plan.
    let mut script: String = (0..100)
        .map(|i| format!(r#"@mock.tool remember {{"text": "fact number {i}"}} "#))
        .collect();
    script.push_str("@mock.tool current_time {}");
    let mut sse = send_plan(&app, &alice, &s, &script).await;
    let before = sse.until(|e| e.ty == "plan_proposed").await;
    let ends = tool_message(&before, "tool_end");
    assert_eq!(ends.len(), 101, "every call was answered");
    let refused: Vec<_> = ends.iter().filter(|e| e["name"] == "remember").collect();
    assert_eq!(refused.len(), 100);
    for e in &refused {
        assert_eq!(e["ok"], false, "{e}");
        assert!(e["output"].as_str().unwrap().contains("plan mode"), "{e}");
    }
    let read = ends.iter().find(|e| e["name"] == "current_time").unwrap();
    assert_eq!(read["ok"], true, "a read-only tool runs while planning");
    let (_, memories) = app.get("/v1/me/memories", &alice).await;
    assert_eq!(memories["memories"], json!([]), "0 executed");

    let proposed = before.last().unwrap().data.clone();
    let plan = proposed["plan_id"].as_str().unwrap().to_string();
    let run = proposed["run_id"].as_str().unwrap().to_string();
    assert!(
        proposed["markdown"]
            .as_str()
            .unwrap()
            .starts_with("tool remember said: error: plan mode"),
        "the step's text is the plan: {proposed}"
    );
    waits_for_input(&app, &alice, &run).await;
    let (st, open) = app.get(&format!("/v1/sessions/{s}/plans"), &alice).await;
    assert_eq!(st, 200, "{open}");
    assert_eq!(open["plans"][0]["id"], plan.as_str());
    assert_eq!(open["plans"][0]["status"], "proposed");

    // Not bob's; a decision the API does not know is a 422.
    let bob = app.user("bob").await;
    assert_eq!(
        decide(&app, &bob, &plan, json!({"decision": "approve"}))
            .await
            .0,
        404
    );
    assert_eq!(app.get(&format!("/v1/plans/{plan}"), &bob).await.0, 404);
    assert_eq!(
        decide(&app, &alice, &plan, json!({"decision": "maybe"}))
            .await
            .0,
        422
    );

    let (st, v) = decide(&app, &alice, &plan, json!({"decision": "approve"})).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["decided_by"].as_str()),
        (Some("approved"), Some("alice"))
    );
    // The first decision stands, and the refusal names it.
    let (st, v) = decide(&app, &alice, &plan, json!({"decision": "reject"})).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("already_decided")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approved by alice"),
        "{v}"
    );
    let after = sse.until_terminal().await;
    let events: Vec<Ev> = before.into_iter().chain(after).collect();
    assert_contiguous(&events);
    assert!(
        events.iter().all(|e| e.data["run_id"] == run.as_str()),
        "one run throughout"
    );
    let decided = tool_message(&events, "plan_decided");
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0]["status"], "approved");
    assert_eq!(events.last().unwrap().ty, "done");
    assert!(
        rendered_text(&events).contains("approved the plan"),
        "the model hears the decision as the call's result"
    );
    assert_eq!(app.count_rows("select count(*) from memories").await, 0);

    // What the model is offered: while planning, the read-only tools and
    // propose_plan, with plan mode in its prompt; once approved, every tool.
    let mut sse = send_plan(&app, &alice, &s, "@mock.context").await;
    let before = sse.until(|e| e.ty == "plan_proposed").await;
    let planning = picture(before.last().unwrap().data["markdown"].as_str().unwrap());
    let tools: Vec<&str> = planning["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"propose_plan"), "{tools:?}");
    assert!(tools.contains(&"current_time"), "{tools:?}");
    assert!(!tools.contains(&"remember"), "{tools:?}");
    assert!(
        planning["system"][0]
            .as_str()
            .unwrap()
            .contains("## Plan mode"),
        "{planning}"
    );
    let plan = before.last().unwrap().data["plan_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, _) = decide(&app, &alice, &plan, json!({"decision": "approve"})).await;
    assert_eq!(st, 200);
    let after = sse.until_terminal().await;
    let last_step = after
        .iter()
        .filter(|e| e.ty == "text")
        .map(|e| e.data["step"].as_u64().unwrap())
        .max()
        .unwrap();
    let text: String = after
        .iter()
        .filter(|e| e.ty == "text" && e.data["step"] == last_step)
        .map(|e| e.data["delta"].as_str().unwrap())
        .collect();
    let carrying_out = picture(&text);
    let tools = carrying_out["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("remember")), "{carrying_out}");
    assert_eq!(after.last().unwrap().ty, "done");
}

async fn a_revised_plan_is_proposed_again_and_a_rejected_one_ends_the_run(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = send_plan(
        &app,
        &alice,
        &s,
        "@mock.reply 1. Read the code. 2. Fix the bug.",
    )
    .await;
    let before = sse.until(|e| e.ty == "plan_proposed").await;
    let first = before.last().unwrap().data.clone();
    assert_eq!(first["markdown"], "1. Read the code. 2. Fix the bug.");
    let run = first["run_id"].as_str().unwrap().to_string();
    let p1 = first["plan_id"].as_str().unwrap().to_string();
    waits_for_input(&app, &alice, &run).await;

    // A plan starts a run of its own: it does not wait behind this one.
    let (st, v) = app
        .post(
            &format!("/v1/sessions/{s}/messages"),
            &alice,
            json!({"text": "and another", "plan": true}),
        )
        .await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("run_active")),
        "{v}"
    );

    // A revise must say what to change.
    let (st, v) = decide(&app, &alice, &p1, json!({"decision": "revise"})).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (422, Some("validation_failed")),
        "{v}"
    );
    let (st, v) = decide(
        &app,
        &alice,
        &p1,
        json!({"decision": "revise", "comment": "add a test first"}),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["comment"], "add a test first");

    let again = sse.until(|e| e.ty == "plan_proposed").await;
    let decided = tool_message(&again, "plan_decided");
    assert_eq!(
        (
            decided[0]["status"].as_str(),
            decided[0]["comment"].as_str()
        ),
        (Some("revised"), Some("add a test first"))
    );
    let second = again.last().unwrap().data.clone();
    let p2 = second["plan_id"].as_str().unwrap().to_string();
    assert_ne!(p1, p2);
    assert!(
        second["markdown"]
            .as_str()
            .unwrap()
            .contains("asked for changes to the plan: add a test first"),
        "{second}"
    );
    waits_for_input(&app, &alice, &run).await;
    let (_, all) = app.get(&format!("/v1/runs/{run}/plans"), &alice).await;
    let statuses: Vec<&str> = all["plans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["revised", "proposed"]);

    let (st, v) = decide(&app, &alice, &p2, json!({"decision": "reject"})).await;
    assert_eq!((st, v["status"].as_str()), (200, Some("rejected")), "{v}");
    let after = sse.until_terminal().await;
    let decided = tool_message(&after, "plan_decided");
    assert_eq!(decided[0]["status"], "rejected");
    assert_eq!(after.last().unwrap().ty, "done");
    assert!(
        tool_message(&after, "tool_start").is_empty(),
        "nothing of a rejected plan runs"
    );
    let done = app.wait_run(&alice, &run, Duration::from_secs(10)).await;
    assert_eq!(done["status"], "succeeded");
    // The rejected plan is the reply.
    let messages = app.messages(&alice, &s).await;
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert_eq!(last["plan"], true, "the history marks a plan-mode reply");
    let other = app.session(&alice).await;
    let plain = app.send(&alice, &other, "hi").await;
    app.wait_run(&alice, &plain, Duration::from_secs(10)).await;
    assert!(
        app.messages(&alice, &other)
            .await
            .iter()
            .all(|m| m.get("plan").is_none()),
        "and only those"
    );
    assert_eq!(
        last["content"].as_str().unwrap().trim(),
        second["markdown"].as_str().unwrap()
    );
    let (st, v) = decide(&app, &alice, &p2, json!({"decision": "approve"})).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("already_decided")),
        "{v}"
    );
}

async fn an_mcp_tool_plans_by_its_read_only_hint_unless_the_admin_says_otherwise(b: Backend) {
    // `add` and `echo` say they only read; the admin overrides `echo`.
    let (_dir, config) =
        crate::mcp::mcp_config("policy = \"auto\"\n[tools.read_only]\ndemo__echo = false\n");
    let app = App::start_with(b, &[("WEFT_CONFIG", config.as_str())]).await;
    crate::mcp::first_server_ready(&app).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = send_plan(
        &app,
        &alice,
        &s,
        r#"@mock.tool demo__add {"a": 2, "b": 3} @mock.tool demo__echo {"text": "hi"} @mock.tool demo__env_var {"name": "HOME"}"#,
    )
    .await;
    let events = sse.until(|e| e.ty == "plan_proposed").await;
    let ends = tool_message(&events, "tool_end");
    let ok = |name: &str| {
        ends.iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {ends:?}"))["ok"]
            .as_bool()
            .unwrap()
    };
    assert!(ok("demo__add"), "read-only by its hint: runs");
    assert!(!ok("demo__echo"), "the admin's override wins over the hint");
    assert!(!ok("demo__env_var"), "no hint: may write, refused");
    let plan = events.last().unwrap().data["markdown"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(plan.starts_with("tool demo__add said: 5;"), "{plan}");
}

async fn an_undecided_plan_expires_and_the_run_ends_with_it(b: Backend) {
    let app = App::start_with(b, &[("WEFT_TOOLS__APPROVAL_TTL_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = send_plan(&app, &alice, &s, "@mock.reply 1. Wait. 2. See.").await;
    let events = sse.until_terminal().await;
    let proposed = tool_message(&events, "plan_proposed");
    let decided = tool_message(&events, "plan_decided");
    assert_eq!(
        (proposed.len(), decided.len(), decided[0]["status"].as_str()),
        (1, 1, Some("expired"))
    );
    assert_eq!(events.last().unwrap().ty, "done");
    assert!(
        tool_message(&events, "tool_start").is_empty(),
        "nothing carried out"
    );
    let messages = app.messages(&alice, &s).await;
    assert_eq!(
        messages.last().unwrap()["content"].as_str().unwrap().trim(),
        "1. Wait. 2. See."
    );
    let plan = proposed[0]["plan_id"].as_str().unwrap();
    let (st, v) = decide(&app, &alice, plan, json!({"decision": "approve"})).await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("expired")),
        "{v}"
    );
}
