//! Delegation (docs/protocol.md, "Delegation"; issue 28 on issue 24's waits):
//! `delegate {agent, task}` hands a task to another agent as a run of its own
//! in a child session; the parent waits as `waiting_agents` without a worker,
//! announces each child (`agent_start`, with the run to attach to) and its end
//! (`agent_end`), and the child's answer is the call's result. Several in one
//! step run side by side; only the agents an agent lists, and only so deep;
//! cancelling the parent cancels its children; a child whose worker is killed
//! completes on another and the parent goes on.
//!
//! The mock model reads directives from the last user message, and the child's
//! user message is the task: a task's directives are written `\u0040mock.` in
//! the parent's JSON so that the parent's own directive runs on past them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(
    two_tasks_run_side_by_side_and_their_answers_are_the_results,
    only_listed_agents_and_only_so_deep,
    cancelling_the_parent_cancels_what_it_delegated,
    a_child_whose_worker_dies_completes_and_the_parent_goes_on,
);

const AGENTS: &str = r#"
[[agents]]
id = "lead"
name = "Lead"
instructions = "You lead."
default = true
delegates = ["researcher", "ghost"]

[[agents]]
id = "researcher"
name = "Researcher"
instructions = "You research."
delegates = ["lead"]
"#;

/// An app whose agents can delegate (`extra`: more settings).
async fn app_with_agents(b: Backend, extra: &[(&str, &str)]) -> (App, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("weft.toml");
    std::fs::write(&path, AGENTS).unwrap();
    let config = path.display().to_string();
    let mut env: Vec<(&str, &str)> = vec![("WEFT_CONFIG", config.as_str())];
    env.extend_from_slice(extra);
    let app = App::start_with(b, &env).await;
    (app, dir)
}

/// A `@mock.tool delegate` directive handing `task` to `agent` (the task's
/// own directives escaped, see the module docs).
fn delegate(agent: &str, task: &str) -> String {
    let args = json!({"agent": agent, "task": task}).to_string();
    format!(
        "@mock.tool delegate {}",
        args.replace("@mock.", "\\u0040mock.")
    )
}

async fn run_status(app: &App, token: &str, run: &str) -> Value {
    app.get(&format!("/v1/runs/{run}"), token).await.1["status"].clone()
}

async fn until_status(app: &App, token: &str, run: &str, want: &str) {
    eventually(
        Duration::from_secs(20),
        &format!("run {run} is {want}"),
        async || {
            let now = run_status(app, token, run).await;
            if now == want { Ok(()) } else { Err(now) }
        },
    )
    .await;
}

/// The outputs of the stream's `tool_end`s, in order.
fn outputs(events: &[Ev]) -> Vec<String> {
    of_type(events, "tool_end")
        .iter()
        .map(|e| e["output"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn of_type<'a>(events: &'a [Ev], ty: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e.ty == ty)
        .map(|e| &e.data)
        .collect()
}

async fn two_tasks_run_side_by_side_and_their_answers_are_the_results(b: Backend) {
    let (app, _dir) = app_with_agents(b, &[("WEFT_WORKER__CONCURRENCY", "4")]).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    let text = format!(
        "Split it. {} {}",
        delegate("researcher", "@mock.delay 1500 10 @mock.reply A is one."),
        delegate("researcher", "@mock.delay 1500 10 @mock.reply B is two."),
    );
    let mut sse = app.send_stream(&alice, &s, &text).await;
    let mut head = sse.until(|e| e.ty == "agent_start").await;
    head.extend(sse.until(|e| e.ty == "agent_start").await);
    let run = head[0].data["run_id"].as_str().unwrap().to_string();
    let starts: Vec<Value> = of_type(&head, "agent_start").into_iter().cloned().collect();
    assert_eq!(starts.len(), 2, "{starts:?}");
    for st in &starts {
        assert_eq!(st["agent"], "researcher");
        assert_eq!(st["step"], 1);
    }
    assert_eq!(
        starts[0]["task"], "@mock.delay 1500 10 @mock.reply A is one.",
        "the task is as the model wrote it"
    );
    let child_runs: Vec<String> = starts
        .iter()
        .map(|s| s["child_run_id"].as_str().unwrap().to_string())
        .collect();
    let child_sessions: Vec<String> = starts
        .iter()
        .map(|s| s["child_session_id"].as_str().unwrap().to_string())
        .collect();
    assert_ne!(child_runs[0], run);
    assert_ne!(child_runs[0], child_runs[1]);

    // The parent holds no worker; both children run at once.
    until_status(&app, &alice, &run, "waiting_agents").await;
    eventually(
        Duration::from_secs(20),
        "both children run at the same time",
        async || {
            let a = run_status(&app, &alice, &child_runs[0]).await;
            let b = run_status(&app, &alice, &child_runs[1]).await;
            if a == "running" && b == "running" {
                Ok(())
            } else {
                Err((a, b))
            }
        },
    )
    .await;
    // A child is alice's to see (and to attach to), not bob's; its session is
    // not among her conversations.
    assert_eq!(
        app.get(&format!("/v1/runs/{}", child_runs[0]), &bob)
            .await
            .0,
        404
    );
    let (_, list) = app.get("/v1/sessions", &alice).await;
    let listed: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, [s.as_str()], "child sessions are not listed");

    let rest = sse.until_terminal().await;
    assert_eq!(rest.last().unwrap().ty, "done", "{rest:?}");
    let ends = of_type(&rest, "agent_end");
    assert_eq!(ends.len(), 2, "{rest:?}");
    assert!(ends.iter().all(|e| e["status"] == "succeeded"), "{ends:?}");
    assert_eq!(outputs(&rest), ["A is one.", "B is two."], "{rest:?}");
    let done = app.wait_run(&alice, &run, Duration::from_secs(5)).await;
    assert_eq!(done["status"], "succeeded");

    // The child's session holds the task and the answer, and its run can be
    // attached to afterwards.
    let kept = app.messages(&alice, &child_sessions[1]).await;
    let said: Vec<(&str, &str)> = kept
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("user", "@mock.delay 1500 10 @mock.reply B is two."),
            ("assistant", "B is two.")
        ]
    );
    let replay = app
        .attach(&alice, &child_runs[0], None)
        .await
        .until_terminal()
        .await;
    assert_eq!(plain(&rendered_text(&replay)), "A is one.");
    // The run's delegations, as a reloaded reply reads them; not bob's.
    let (st, listed) = app
        .get(&format!("/v1/runs/{run}/delegations"), &alice)
        .await;
    assert_eq!(st, 200, "{listed}");
    let listed: Vec<(&str, &str, &str)> = listed["delegations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["agent"].as_str().unwrap(),
                d["child_run_id"].as_str().unwrap(),
                d["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("researcher", child_runs[0].as_str(), "succeeded"),
            ("researcher", child_runs[1].as_str(), "succeeded")
        ]
    );
    assert_eq!(
        app.get(&format!("/v1/runs/{run}/delegations"), &bob)
            .await
            .0,
        404
    );
    // The person's turn is learned from; the children's, whose messages are
    // the parent agent's tasks, are not.
    assert_eq!(
        app.count_rows("select count(*) from runs where memory_pending = 1 and depth = 0")
            .await,
        1
    );
    assert_eq!(
        app.count_rows("select count(*) from runs where memory_pending = 1 and depth > 0")
            .await,
        0
    );
    // The parent's history keeps the calls and their results.
    let history = app.messages(&alice, &s).await;
    let results: Vec<&str> = history
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["A is one.", "B is two."]);
}

async fn only_listed_agents_and_only_so_deep(b: Backend) {
    let (app, _dir) = app_with_agents(b, &[("WEFT_TOOLS__DELEGATE_MAX_DEPTH", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    // Not listed, listed but missing, and a child (at the deepest level) that
    // tries to delegate further.
    let text = format!(
        "{} {} {}",
        delegate("writer", "write"),
        delegate("ghost", "haunt"),
        delegate(
            "researcher",
            "@mock.tool delegate {\"agent\": \"lead\", \"task\": \"loop\"}"
        ),
    );
    let events = app
        .send_stream(&alice, &s, &text)
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    let outs = outputs(&events);
    assert_eq!(outs.len(), 3, "{events:?}");
    assert!(
        outs[0].contains("may not delegate to \"writer\"") && outs[0].contains("researcher, ghost"),
        "{}",
        outs[0]
    );
    assert!(
        outs[1].contains("there is no agent \"ghost\""),
        "{}",
        outs[1]
    );
    // The child was not offered the tool, and its call was refused: its answer
    // (the parent's result) says so.
    assert!(
        outs[2].contains("tool delegate said: error: delegation goes 1 levels deep"),
        "{}",
        outs[2]
    );
    assert_eq!(of_type(&events, "agent_start").len(), 1);
    // A child's children: none were made.
    assert_eq!(
        app.count_rows("select count(*) from runs where depth > 1")
            .await,
        0
    );
    assert_eq!(
        app.count_rows("select count(*) from runs where depth = 1")
            .await,
        1
    );
}

async fn cancelling_the_parent_cancels_what_it_delegated(b: Backend) {
    let (app, _dir) = app_with_agents(b, &[]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let text = delegate("researcher", "@mock.delay 60000 10 @mock.reply never");
    let mut sse = app.send_stream(&alice, &s, &text).await;
    let head = sse.until(|e| e.ty == "agent_start").await;
    let start = head.last().unwrap();
    let parent = start.data["run_id"].as_str().unwrap().to_string();
    let child = start.data["child_run_id"].as_str().unwrap().to_string();
    until_status(&app, &alice, &parent, "waiting_agents").await;
    until_status(&app, &alice, &child, "running").await;

    let (st, v) = app
        .post(&format!("/v1/runs/{parent}/cancel"), &alice, json!({}))
        .await;
    assert_eq!((st, v["status"].as_str()), (202, Some("cancelled")), "{v}");
    let rest = sse.until_terminal().await;
    assert_eq!(rest.last().unwrap().ty, "cancelled", "{rest:?}");
    until_status(&app, &alice, &child, "cancelled").await;
    let child_end = app
        .attach(&alice, &child, None)
        .await
        .until_terminal()
        .await;
    let end = child_end.last().unwrap();
    assert_eq!(
        (end.ty.as_str(), end.data["by"].as_str()),
        ("cancelled", Some("parent"))
    );
    // The session is free for the next message.
    let next = app.send(&alice, &s, "@mock.reply next").await;
    let done = app.wait_run(&alice, &next, Duration::from_secs(20)).await;
    assert_eq!(done["status"], "succeeded");
}

async fn a_child_whose_worker_dies_completes_and_the_parent_goes_on(b: Backend) {
    let (mut app, _dir) = app_with_agents(b, &[]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let text = delegate(
        "researcher",
        "@mock.delay 3000 10 @mock.reply late but whole",
    );
    let mut sse = app.send_stream(&alice, &s, &text).await;
    let head = sse.until(|e| e.ty == "agent_start").await;
    let start = head.last().unwrap();
    let parent = start.data["run_id"].as_str().unwrap().to_string();
    let child = start.data["child_run_id"].as_str().unwrap().to_string();
    until_status(&app, &alice, &parent, "waiting_agents").await;
    until_status(&app, &alice, &child, "running").await;

    let rest = match b {
        Backend::Distributed => {
            // The only worker holds the child (the parent holds none).
            app.workers[0].kill();
            app.workers.push(App::spawn_worker(&app.env));
            sse.until_terminal().await
        }
        Backend::Embedded => {
            drop(sse);
            app.restart_gateway();
            app.attach(&alice, &parent, None)
                .await
                .until_terminal()
                .await
        }
    };
    assert_eq!(rest.last().unwrap().ty, "done", "{rest:?}");
    let outs = outputs(&rest);
    assert_eq!(outs, ["late but whole"], "{rest:?}");
    let (_, rec) = app.get(&format!("/v1/runs/{child}"), &alice).await;
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(
        rec["attempt"], 2,
        "the child ran again on another worker: {rec}"
    );
    let (_, rec) = app.get(&format!("/v1/runs/{parent}"), &alice).await;
    assert_eq!(rec["status"], "succeeded");
    // One delegation, one child, one answer.
    assert_eq!(app.count_rows("select count(*) from delegations").await, 1);
    assert_eq!(app.count_rows("select count(*) from runs").await, 2);
}
