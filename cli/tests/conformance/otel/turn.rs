//! One chat turn, distributed: one trace from both processes with the right
//! parents; request ids; `trace_id` in JSON logs; the Redis queue depth; every
//! exposed series documented.

use std::time::Duration;

use serde_json::{Value, json};

use super::metrics::{exposed_series, metrics_doc};
use super::receiver::{Got, Receiver};
use super::{CLIENT_SPAN, CLIENT_TRACE, json_lines, one, traced_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_turn_is_one_trace_across_the_gateway_and_the_worker() {
    let otlp = Receiver::start().await;
    let app = traced_app(
        &otlp,
        &[
            ("WEFT_LOG_FORMAT", "json"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let session = app.session(&alice).await;

    // The client is traced itself and names its request.
    let resp = app
        .http
        .post(app.url(&format!("/v1/sessions/{session}/messages")))
        .bearer_auth(&alice)
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .header("x-request-id", "turn-1")
        .json(&json!({"text": "time? @mock.tool current_time {}", "wait": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["x-request-id"],
        "turn-1",
        "a sane id is echoed"
    );
    let result: Value = resp.json().await.unwrap();
    assert_eq!(result["status"], "succeeded", "{result}");
    let run_id = result["run_id"].as_str().unwrap().to_string();

    let logs = || {
        format!(
            "--- gateway ---\n{}\n--- worker ---\n{}",
            app.gateway.logs(),
            app.workers[0].logs()
        )
    };
    let spans = otlp
        .wait_for(
            Duration::from_secs(30),
            |spans| {
                let of_turn = |name: &str| {
                    spans
                        .iter()
                        .filter(|s| s.trace_id == CLIENT_TRACE && s.name.starts_with(name))
                        .count()
                };
                of_turn("POST ") == 1
                    && of_turn("run") == 1
                    && of_turn("step") == 2
                    && of_turn("chat ") == 2
                    && of_turn("execute_tool ") == 1
            },
            logs,
        )
        .await;
    let turn: Vec<Got> = spans
        .iter()
        .filter(|s| s.trace_id == CLIENT_TRACE)
        .cloned()
        .collect();

    // The request: the gateway's, under the client's span, over gRPC.
    let request = one(&turn, "request", |s| s.name.starts_with("POST "));
    assert_eq!(request.name, "POST /v1/sessions/{id}/messages");
    assert_eq!(
        (request.service.as_str(), request.role.as_str(), request.via),
        ("weft-gateway", "gateway", "grpc")
    );
    assert_eq!(request.parent, CLIENT_SPAN);
    assert_eq!(request.attr("request_id"), Some("turn-1"));
    assert_eq!(request.attr("http.response.status_code"), Some("200"));

    // The run: the worker's, a child of the request, over HTTP/protobuf.
    let run = one(&turn, "run", |s| s.name == "run");
    assert_eq!(
        (run.service.as_str(), run.role.as_str(), run.via),
        ("weft-worker", "worker", "http/protobuf")
    );
    assert_eq!(run.parent, request.span_id, "run ← request");
    assert_eq!(run.attr("run.id"), Some(run_id.as_str()));
    assert_eq!(run.attr("attempt"), Some("1"));

    // Two steps: the tool call's and the answer's, each with its LLM call.
    for n in ["1", "2"] {
        let step = one(&turn, "step", |s| {
            s.name == "step" && s.attr("step") == Some(n)
        });
        assert_eq!(step.parent, run.span_id, "step {n} ← run");
        let llm = one(&turn, "llm", |s| {
            s.name.starts_with("chat ") && s.parent == step.span_id
        });
        assert_eq!(llm.name, "chat mock");
        assert_eq!(llm.attr("gen_ai.request.model"), Some("mock"));
        for counted in [
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "ttft_ms",
        ] {
            let v = llm
                .attr(counted)
                .unwrap_or_else(|| panic!("{counted} on {llm:#?}"));
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("{counted} is a count: {v}"));
        }
        assert_ne!(llm.attr("gen_ai.usage.output_tokens"), Some("0"));
        if n == "1" {
            let tool = one(&turn, "tool", |s| s.name.starts_with("execute_tool "));
            assert_eq!(tool.parent, step.span_id, "tool ← step 1");
            assert_eq!(tool.attr("gen_ai.tool.name"), Some("current_time"));
            assert_eq!(tool.attr("ok"), Some("true"));
            assert!(tool.attr("duration_ms").is_some(), "{tool:#?}");
        }
    }
    // Every span of the turn is one of these: nothing else joined the trace.
    assert_eq!(turn.len(), 1 + 1 + 2 + 2 + 1, "{turn:#?}");

    // Logs carry the ids as top-level fields.
    let gw = json_lines(&app.gateway);
    assert!(
        gw.iter().any(|l| l["request_id"] == "turn-1"
            && l["trace_id"] == CLIENT_TRACE
            && l["status"] == 200),
        "no gateway line with the request and trace ids:\n{}",
        app.gateway.logs()
    );
    let wk = json_lines(&app.workers[0]);
    assert!(
        wk.iter()
            .any(|l| l["run.id"] == run_id.as_str() && l["trace_id"] == CLIENT_TRACE),
        "no worker line with the run and trace ids:\n{}",
        app.workers[0].logs()
    );

    // Without a client trace (and with an id not worth echoing): a new trace,
    // a fresh request id, the same id on the request's span.
    let resp = app
        .http
        .get(app.url("/v1/sessions"))
        .bearer_auth(&alice)
        .header("x-request-id", "not an id")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let fresh = resp.headers()["x-request-id"].to_str().unwrap().to_string();
    assert!(
        fresh.len() == 32 && fresh.bytes().all(|b| b.is_ascii_hexdigit()),
        "a fresh id replaces the malformed one: {fresh}"
    );
    let spans = otlp
        .wait_for(
            Duration::from_secs(30),
            |spans| {
                spans
                    .iter()
                    .any(|s| s.attr("request_id") == Some(fresh.as_str()))
            },
            logs,
        )
        .await;
    let listed = one(&spans, "list", |s| {
        s.attr("request_id") == Some(fresh.as_str())
    });
    assert_eq!(listed.name, "GET /v1/sessions");
    assert!(listed.parent.is_empty(), "a root span: {listed:#?}");
    assert_ne!(listed.trace_id, CLIENT_TRACE);

    // The Redis queue depth is exported, and every series either process
    // exposes is documented.
    let worker_metrics = app
        .http
        .get(app.workers[0].metrics_url())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        worker_metrics
            .lines()
            .any(|l| l.starts_with("weft_queue_redis_depth ")),
        "{worker_metrics}"
    );
    let gateway_metrics = app
        .http
        .get(app.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let documented = metrics_doc();
    for text in [&worker_metrics, &gateway_metrics] {
        for name in exposed_series(text) {
            assert!(
                documented.contains(&format!("`{name}`")),
                "{name} is exposed but not in docs/metrics.md"
            );
        }
    }
}
