//! Tools with approvals (docs/protocol.md, "Approvals"): a `confirm` call suspends
//! the run without holding a worker, the owner's decision resumes it on any worker,
//! decisions survive restarts, unanswered approvals expire as denials.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

crate::both_backends!(
    approval_suspends_without_a_worker_and_the_owner_decides,
    several_calls_are_decided_separately_and_always_sticks,
    a_decision_survives_restarting_every_process,
    unanswered_approvals_expire_as_denials,
);

const CONFIRM_TIME: (&str, &str) = ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm");

pub fn tool_message(events: &[Ev], ty: &str) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.ty == ty)
        .map(|e| e.data.clone())
        .collect()
}

async fn run_status(app: &App, token: &str, run: &str) -> String {
    let (s, v) = app.get(&format!("/v1/runs/{run}"), token).await;
    assert_eq!(s, 200, "{v}");
    v["status"].as_str().unwrap().to_string()
}

/// Waits until `run` has `status` (a run suspends a moment after its event).
async fn wait_status(app: &App, token: &str, run: &str, status: &str) {
    eventually(
        Duration::from_secs(10),
        &format!("run {run} {status}"),
        async || {
            let now = run_status(app, token, run).await;
            if now == status { Ok(()) } else { Err(now) }
        },
    )
    .await
}

/// Decides approval `approval` as `token` (`approve`, `deny`, `always`).
pub(crate) async fn decide(app: &App, token: &str, approval: &str, decision: &str) -> (u16, Value) {
    app.post(
        &format!("/v1/approvals/{approval}"),
        token,
        json!({ "decision": decision }),
    )
    .await
}

async fn approval_suspends_without_a_worker_and_the_owner_decides(b: Backend) {
    // One slot: while the run waits, another user's run must still get through.
    let app = App::start_with(b, &[CONFIRM_TIME, ("WEFT_WORKER__CONCURRENCY", "1")]).await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, "time? @mock.tool current_time {}")
        .await;
    let before = sse.until(|e| e.ty == "approval_required").await;
    let required = before.last().unwrap().data.clone();
    assert_eq!(required["name"], "current_time");
    assert!(required["expires_at"].as_i64().unwrap() > required["ts"].as_i64().unwrap());
    let approval = required["approval_id"].as_str().unwrap().to_string();
    let run = required["run_id"].as_str().unwrap().to_string();
    // The tool has not run.
    assert!(tool_message(&before, "tool_start").is_empty());

    wait_status(&app, &alice, &run, "waiting_approval").await;
    let (st, list) = app
        .get(&format!("/v1/sessions/{s}/approvals"), &alice)
        .await;
    assert_eq!(st, 200);
    assert_eq!(list["approvals"][0]["id"], approval.as_str());
    assert_eq!(list["approvals"][0]["status"], "pending");

    // The only worker slot is free: bob's run completes meanwhile.
    let bs = app.session(&bob).await;
    let brun = app.send(&bob, &bs, "@mock.reply hi bob").await;
    let done = app.wait_run(&bob, &brun, Duration::from_secs(20)).await;
    assert_eq!(done["status"], "succeeded");

    // Not bob's to decide, nor to list; unknown ids do not exist; bad input is 422.
    assert_eq!(decide(&app, &bob, &approval, "approve").await.0, 404);
    assert_eq!(
        app.get(&format!("/v1/sessions/{s}/approvals"), &bob)
            .await
            .0,
        404
    );
    assert_eq!(decide(&app, &alice, "ap_nope", "approve").await.0, 404);
    assert_eq!(decide(&app, &alice, &approval, "maybe").await.0, 422);

    let (st, v) = decide(&app, &alice, &approval, "approve").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["status"].as_str(), v["decided_by"].as_str()),
        (Some("approved"), Some("alice"))
    );
    let (st, v) = decide(&app, &alice, &approval, "deny").await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("already_decided")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approved by alice")
    );

    let after = sse.until_terminal().await;
    let events: Vec<Ev> = before.into_iter().chain(after).collect();
    assert_contiguous(&events);
    let decided = tool_message(&events, "approval_decided");
    assert_eq!(decided.len(), 1);
    assert_eq!(
        (decided[0]["decision"].as_str(), decided[0]["by"].as_str()),
        (Some("approved"), Some("alice"))
    );
    let end = tool_message(&events, "tool_end");
    assert_eq!(end.len(), 1);
    assert_eq!(end[0]["ok"], true);
    assert!(end[0]["duration_ms"].is_u64());
    assert_eq!(events.last().unwrap().ty, "done");
    let output = end[0]["output"].as_str().unwrap();
    assert_eq!(
        rendered_text(&events),
        format!("tool current_time said: {output}")
    );
    let (st, list) = app
        .get(&format!("/v1/sessions/{s}/approvals"), &alice)
        .await;
    assert_eq!((st, list["approvals"].as_array().unwrap().len()), (200, 0));
    let roles: Vec<_> = app
        .messages(&alice, &s)
        .await
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
}

async fn several_calls_are_decided_separately_and_always_sticks(b: Backend) {
    let app = App::start_with(b, &[CONFIRM_TIME]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(
            &alice,
            &s,
            "@mock.tool current_time {} @mock.tool current_time {}",
        )
        .await;
    let mut events = sse
        .until({
            let mut n = 0;
            move |e| {
                n += usize::from(e.ty == "approval_required");
                n == 2
            }
        })
        .await;
    let ids: Vec<String> = tool_message(&events, "approval_required")
        .iter()
        .map(|a| a["approval_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2);
    // The first decision is announced while the second still waits.
    assert_eq!(decide(&app, &alice, &ids[0], "deny").await.0, 200);
    events.extend(sse.until(|e| e.ty == "approval_decided").await);
    let run = events[0].data["run_id"].as_str().unwrap().to_string();
    wait_status(&app, &alice, &run, "waiting_approval").await;
    assert_eq!(decide(&app, &alice, &ids[1], "always").await.0, 200);
    events.extend(sse.until_terminal().await);
    assert_contiguous(&events);
    let decided: Vec<_> = tool_message(&events, "approval_decided")
        .iter()
        .map(|d| {
            (
                d["approval_id"].as_str().unwrap().to_string(),
                d["decision"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        decided,
        [
            (ids[0].clone(), "denied".into()),
            (ids[1].clone(), "approved".into())
        ]
    );
    let ends = tool_message(&events, "tool_end");
    let oks: Vec<_> = ends.iter().map(|e| e["ok"].as_bool().unwrap()).collect();
    assert_eq!(oks, [false, true], "{ends:?}");
    assert!(
        ends[0]["output"].as_str().unwrap().contains("denied"),
        "{ends:?}"
    );
    let text = rendered_text(&events);
    assert!(
        text.starts_with("tool current_time said: error: the user (alice) denied"),
        "{text}"
    );

    // `always`: the next call of that tool in this session runs without asking.
    let events = app
        .send_stream(&alice, &s, "again @mock.tool current_time {}")
        .await
        .until_terminal()
        .await;
    assert!(tool_message(&events, "approval_required").is_empty());
    assert_eq!(tool_message(&events, "tool_end")[0]["ok"], true);
    // …and only in this session.
    let other = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &other, "@mock.tool current_time {}")
        .await;
    let waiting = sse.until(|e| e.ty == "approval_required").await;
    assert_eq!(waiting.last().unwrap().ty, "approval_required");
}

async fn a_decision_survives_restarting_every_process(b: Backend) {
    let mut app = App::start_with(b, &[CONFIRM_TIME]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, "@mock.tool current_time {}")
        .await;
    let events = sse.until(|e| e.ty == "approval_required").await;
    let approval = events.last().unwrap().data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let run = events[0].data["run_id"].as_str().unwrap().to_string();
    wait_status(&app, &alice, &run, "waiting_approval").await;
    drop(sse);
    // Every process goes (SIGKILL) and comes back.
    for w in &mut app.workers {
        w.kill();
    }
    app.restart_gateway();
    if b == Backend::Distributed {
        app.workers = vec![App::spawn_worker(&app.env)];
    }
    let (st, v) = decide(&app, &alice, &approval, "approve").await;
    assert_eq!(st, 200, "{v}");
    let done = app.wait_run(&alice, &run, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let all = app.attach(&alice, &run, None).await.until_terminal().await;
    if b == Backend::Distributed {
        assert_contiguous(&all); // Redis kept the log; embedded mode's died with it
    }
    assert!(
        rendered_text(&all).starts_with("tool current_time said: 20"),
        "{}",
        rendered_text(&all)
    );
}

async fn unanswered_approvals_expire_as_denials(b: Backend) {
    let app = App::start_with(b, &[CONFIRM_TIME, ("WEFT_TOOLS__APPROVAL_TTL_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, "@mock.tool current_time {}")
        .await;
    let mut events = sse.until(|e| e.ty == "approval_required").await;
    let approval = events.last().unwrap().data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    events.extend(sse.until_terminal().await);
    assert_contiguous(&events);
    let decided = tool_message(&events, "approval_decided");
    assert_eq!(
        (decided[0]["decision"].as_str(), decided[0]["by"].as_str()),
        (Some("expired"), None)
    );
    assert!(rendered_text(&events).contains("nobody approved this call of current_time in time"));
    assert_eq!(events.last().unwrap().ty, "done");
    let (st, v) = decide(&app, &alice, &approval, "approve").await;
    assert_eq!(
        (st, v["error"]["code"].as_str()),
        (409, Some("expired")),
        "{v}"
    );
}
