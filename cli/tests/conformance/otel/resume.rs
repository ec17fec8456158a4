//! Traces across a run's stretches: resumed after an approval (the same trace,
//! a link to the decision), and the spans a stopping worker still buffers.

use std::time::Duration;

use serde_json::{Value, json};

use super::receiver::{Got, Receiver};
use super::{CLIENT_SPAN, CLIENT_TRACE, exporting, one, traced_app};
use crate::harness::*;

/// A run that waited for an approval resumes in the trace of the request that
/// created it, linked to the trace of the decision that resumed it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_resumed_after_an_approval_continues_its_trace() {
    const DECISION_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    let otlp = Receiver::start().await;
    let app = traced_app(
        &otlp,
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let session = app.session(&alice).await;
    let traced = |req: reqwest::RequestBuilder, trace: &str| {
        req.bearer_auth(&alice)
            .header("traceparent", format!("00-{trace}-{CLIENT_SPAN}-01"))
    };
    let resp = traced(
        app.http
            .post(app.url(&format!("/v1/sessions/{session}/messages"))),
        CLIENT_TRACE,
    )
    .json(&json!({"text": "time? @mock.tool current_time {}"}))
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 202);
    let run_id = resp.json::<Value>().await.unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let approval = eventually(
        Duration::from_secs(20),
        "an approval to decide",
        async || {
            let (_, list) = app
                .get(&format!("/v1/sessions/{session}/approvals"), &alice)
                .await;
            match list["approvals"][0]["id"].as_str() {
                Some(id) => Ok(id.to_string()),
                None => Err(list),
            }
        },
    )
    .await;
    let resp = traced(
        app.http.post(app.url(&format!("/v1/approvals/{approval}"))),
        DECISION_TRACE,
    )
    .json(&json!({"decision": "approve"}))
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let done = app.wait_run(&alice, &run_id, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "succeeded");

    let logs = || format!("{}\n{}", app.gateway.logs(), app.workers[0].logs());
    let spans = otlp
        .wait_for(
            Duration::from_secs(30),
            |spans| {
                let runs = spans
                    .iter()
                    .filter(|s| s.trace_id == CLIENT_TRACE && s.name == "run")
                    .count();
                let tools = spans
                    .iter()
                    .filter(|s| s.trace_id == CLIENT_TRACE && s.name.starts_with("execute_tool "))
                    .count();
                runs == 2 && tools == 1
            },
            logs,
        )
        .await;
    let request = one(&spans, "request", |s| {
        s.trace_id == CLIENT_TRACE && s.name.starts_with("POST ")
    });
    let runs: Vec<&Got> = spans
        .iter()
        .filter(|s| s.trace_id == CLIENT_TRACE && s.name == "run")
        .collect();
    for run in &runs {
        assert_eq!(run.parent, request.span_id, "each stretch ← the request");
        assert_eq!(run.attr("run.id"), Some(run_id.as_str()));
    }
    let resumed = one(&spans, "resumed run", |s| {
        s.trace_id == CLIENT_TRACE && s.name == "run" && !s.links.is_empty()
    });
    assert_eq!(resumed.links, vec![DECISION_TRACE.to_string()]);
    let decision = one(&spans, "decision", |s| s.trace_id == DECISION_TRACE);
    assert_eq!(decision.name, "POST /v1/approvals/{id}");
    // The approved call ran in the resumed stretch.
    let tool = one(&spans, "tool", |s| {
        s.trace_id == CLIENT_TRACE && s.name.starts_with("execute_tool ")
    });
    let step = one(&spans, "its step", |s| s.span_id == tool.parent);
    assert_eq!(step.parent, resumed.span_id);
}

/// Spans still buffered when a worker is told to stop are exported before it
/// exits (the batch delay here is far longer than the test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_flushes_its_spans() {
    let otlp = Receiver::start().await;
    let env = Env::new(Backend::Distributed, &[]).await;
    let gateway = Proc::spawn(
        env.command(&["serve", "--listen", "127.0.0.1:0"]),
        "listening on http://",
    );
    let mut worker = exporting(env.command(&["worker"]), &otlp, "http/protobuf");
    worker.env("OTEL_BSP_SCHEDULE_DELAY", "600000");
    let worker = Proc::spawn(worker, "worker started");
    let base = format!("http://{}", gateway.addr.clone().unwrap());
    let mut app = App {
        env,
        gateway,
        workers: vec![worker],
        base,
        http: reqwest::Client::new(),
    };
    let alice = app.user("alice").await;
    let session = app.session(&alice).await;
    let (status, result) = app
        .post(
            &format!("/v1/sessions/{session}/messages"),
            &alice,
            json!({"text": "hello", "wait": true}),
        )
        .await;
    assert_eq!(
        (status, result["status"].as_str()),
        (200, Some("succeeded"))
    );
    let run_id = result["run_id"].as_str().unwrap().to_string();
    assert!(
        otlp.spans().is_empty(),
        "nothing is exported before the batch is due"
    );

    app.workers[0].terminate();
    assert_eq!(
        app.workers[0].exit_code(Duration::from_secs(30)).await,
        Some(0)
    );
    let spans = otlp.spans();
    let run = one(&spans, "run", |s| s.name == "run");
    assert_eq!(run.attr("run.id"), Some(run_id.as_str()));
    assert_eq!(run.service, "weft-worker");
}
