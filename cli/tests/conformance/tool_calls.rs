//! How a step's tool calls are disposed of (docs/agent.md, "Tool guards",
//! issue 20): the strictest of the agent's, the global and an MCP server's
//! policy wins; at most `tools.max_calls_per_step` calls of a step run and the
//! rest are answered "skipped"; a call id repeated in one step (here from a
//! fake OpenAI-compatible server, on the real wire) never lets a refused call
//! ride on another call's approval.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::approvals::tool_message;
use crate::harness::*;

crate::both_backends!(
    a_global_deny_beats_an_agents_auto,
    an_mcp_servers_policy_joins_the_strictest_rule,
    tool_calls_per_step_are_capped,
    a_repeated_call_id_never_runs_a_refused_call,
);

async fn a_global_deny_beats_an_agents_auto(b: Backend) {
    let app = App::start_with(b, &[("WEFT_TOOLS__POLICIES__CURRENT_TIME", "deny")]).await;
    let alice = app.user("alice").await;
    let (st, v) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/loose",
            ADMIN_TOKEN,
            Some(json!({"name": "Loose", "tool_policies": {"current_time": "auto"}})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let (_, s) = app
        .post("/v1/sessions", &alice, json!({"agent": "loose"}))
        .await;
    let s = s["id"].as_str().unwrap();
    let events = app
        .send_stream(&alice, s, "@mock.tool current_time {}")
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    let end = &tool_message(&events, "tool_end")[0];
    assert_eq!(end["ok"], false, "{end}");
    assert!(
        end["output"]
            .as_str()
            .unwrap()
            .starts_with("error: current_time is not allowed here"),
        "{end}"
    );

    // And an agent's `confirm` tightens a global `auto`.
    let (st, _) = app
        .call(
            reqwest::Method::PUT,
            "/v1/admin/agents/careful",
            ADMIN_TOKEN,
            Some(json!({"name": "Careful", "tool_policies": {"read_output": "confirm"}})),
        )
        .await;
    assert_eq!(st, 200);
    let (_, s) = app
        .post("/v1/sessions", &alice, json!({"agent": "careful"}))
        .await;
    let mut sse = app
        .send_stream(
            &alice,
            s["id"].as_str().unwrap(),
            r#"@mock.tool read_output {"id": "x"}"#,
        )
        .await;
    let first = sse
        .until(|e| e.ty == "approval_required" || e.ty == "done")
        .await;
    assert_eq!(first.last().unwrap().ty, "approval_required", "{first:?}");
}

async fn an_mcp_servers_policy_joins_the_strictest_rule(b: Backend) {
    // The server keeps its default `confirm`; a global `auto` for the whole
    // server does not loosen it (before issue 20 it did).
    let (_dir, config) = crate::mcp::mcp_config("\n[tools.policies]\n\"mcp:demo\" = \"auto\"\n");
    let app = App::start_with(b, &[("WEFT_CONFIG", config.as_str())]).await;
    let alice = app.user("alice").await;
    crate::mcp::first_server_ready(&app).await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, r#"@mock.tool demo__add {"a": 2, "b": 3}"#)
        .await;
    let events = sse
        .until(|e| e.ty == "approval_required" || e.ty == "done")
        .await;
    assert_eq!(
        events.last().unwrap().ty,
        "approval_required",
        "the server's confirm stands: {events:?}"
    );
}

async fn tool_calls_per_step_are_capped(b: Backend) {
    let app = App::start(b).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let text = vec!["@mock.tool current_time {}"; 40].join(" ");
    let events = app
        .send_stream(&alice, &s, &text)
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{:?}", events.last());
    assert_eq!(tool_message(&events, "tool_start").len(), 40);
    let ends = tool_message(&events, "tool_end");
    assert_eq!(ends.len(), 40);
    let ran = ends.iter().filter(|e| e["ok"] == true).count();
    assert_eq!(ran, 16, "at most 16 run");
    let skipped: Vec<&Value> = ends.iter().filter(|e| e["ok"] == false).collect();
    assert_eq!(skipped.len(), 24);
    for e in skipped {
        assert_eq!(
            e["output"],
            "error: too many tool calls in one step: at most 16 run, this one was skipped",
            "{e}"
        );
    }
    // The model read every answer: the conversation stayed whole.
    assert_eq!(
        rendered_text(&events)
            .matches("tool current_time said:")
            .count(),
        40
    );
}

/// An OpenAI-compatible server that answers a conversation ending in a user
/// message with `calls` (streamed, in order, each its own `index`) and one
/// ending in tool results with the text "checked". Returns its `/v1` URL and the
/// request bodies it received.
async fn fake_openai(calls: Vec<Value>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let record = seen.clone();
    let handler = move |axum::Json(body): axum::Json<Value>| {
        let calls = calls.clone();
        let record = record.clone();
        async move {
            let after_tools = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .is_some_and(|m| m["role"] == "tool");
            record.lock().unwrap().push(body);
            let chunk = |delta: Value, finish: Value| {
                let c = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1,
                    "model": "fake", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {c}\n\n")
            };
            let mut out = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
            if after_tools {
                out += &chunk(json!({"content": "checked"}), Value::Null);
                out += &chunk(json!({}), json!("stop"));
            } else {
                for (i, c) in calls.iter().enumerate() {
                    let mut c = c.clone();
                    c["index"] = json!(i);
                    out += &chunk(json!({"tool_calls": [c]}), Value::Null);
                }
                out += &chunk(json!({}), json!("tool_calls"));
            }
            out += "data: [DONE]\n\n";
            (
                [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                out,
            )
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(axum::routing::post(handler));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/v1"), seen)
}

fn wire_call(id: &str, name: &str, args: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
}

async fn a_repeated_call_id_never_runs_a_refused_call(b: Backend) {
    // One step: a `confirm` call and a `deny` call under the same id. Before
    // issue 20 approving the first let the second run as well.
    let (url, seen) = fake_openai(vec![
        wire_call("call_same", "read_output", r#"{"id": "x"}"#),
        wire_call("call_same", "current_time", "{}"),
    ])
    .await;
    let env = Env::new(
        b,
        &[
            ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "deny"),
            ("WEFT_TOOLS__POLICIES__READ_OUTPUT", "confirm"),
            ("FAKE_OPENAI_KEY", "sk-fake"),
        ],
    )
    .await;
    let config = env.dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "[[models]]\nid = \"fake\"\nprovider = \"openai\"\nbase_url = \"{url}\"\napi_key_env = \"FAKE_OPENAI_KEY\"\n"
        ),
    )
    .unwrap();
    let mut env = env;
    env.extra
        .push(("WEFT_CONFIG".into(), config.display().to_string()));
    let app = App::start_in(env, true);
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = app.send_stream(&alice, &s, "check twice").await;
    let mut events = sse
        .until(|e| e.ty == "approval_required" || e.ty == "done" || e.ty == "error")
        .await;
    for required in tool_message(&events, "approval_required") {
        let (st, v) = app
            .post(
                &format!(
                    "/v1/approvals/{}",
                    required["approval_id"].as_str().unwrap()
                ),
                &alice,
                json!({"decision": "approve"}),
            )
            .await;
        assert_eq!(st, 200, "{v}");
    }
    if events.last().unwrap().ty == "approval_required" {
        events.extend(sse.until_terminal().await);
    }
    assert_eq!(events.last().unwrap().ty, "done", "{:?}", events.last());
    let ends = tool_message(&events, "tool_end");
    assert_eq!(ends.len(), 2, "{ends:?}");
    for end in &ends {
        if end["name"] == "current_time" {
            assert_eq!(end["ok"], false, "the denied call ran: {end}");
        }
    }
    let ids: std::collections::HashSet<&str> = ends
        .iter()
        .map(|e| e["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "each call its own id: {ends:?}");
    // What went back to the provider is a valid conversation: unique ids, one
    // result per call.
    let requests = seen.lock().unwrap().clone();
    let last = requests.last().unwrap();
    let messages = last["messages"].as_array().unwrap();
    let asked: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_calls"].as_array())
        .flatten()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let answered: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(asked.len(), 2, "{last}");
    assert_ne!(asked[0], asked[1], "{last}");
    assert_eq!(asked, answered, "{last}");
}
