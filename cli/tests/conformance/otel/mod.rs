//! OpenTelemetry, distributed mode: one chat turn is one trace whose spans come
//! from the gateway and the worker processes with the right parents (the
//! client's span → request → run → step → LLM call / tool call); request ids on
//! responses; `trace_id` in JSON logs; spans buffered at shutdown are flushed;
//! and every `/metrics` series is documented in `docs/metrics.md`.
//!
//! The gateway exports over gRPC and the worker over HTTP/protobuf, to one
//! receiver that speaks both, so both transports are covered by one turn.

mod receiver;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;
use receiver::{Got, Receiver};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

fn exporting(mut cmd: Command, to: &Receiver, protocol: &str) -> Command {
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", to.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol);
    cmd
}

/// The worker's `/metrics` address, from the line it prints at start.
fn metrics_url(worker: &Proc) -> String {
    let logs = worker.logs();
    let line = logs
        .lines()
        .find(|l| l.contains("worker metrics on http://"))
        .expect("the worker prints its metrics address");
    format!("http://{}", line.split("http://").nth(1).unwrap().trim())
}

fn json_lines(proc: &Proc) -> Vec<Value> {
    proc.logs()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn one<'a>(spans: &'a [Got], what: &str, pick: impl Fn(&Got) -> bool) -> &'a Got {
    let found: Vec<&Got> = spans.iter().filter(|s| pick(s)).collect();
    assert_eq!(found.len(), 1, "one {what} span expected in {spans:#?}");
    found[0]
}

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
        .get(metrics_url(&app.workers[0]))
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
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let approval = loop {
        let (_, list) = app
            .get(&format!("/v1/sessions/{session}/approvals"), &alice)
            .await;
        if let Some(id) = list["approvals"][0]["id"].as_str() {
            break id.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no approval: {list}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
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

/// A distributed Weft whose gateway exports over gRPC and whose worker over
/// HTTP/protobuf, both to `otlp`.
async fn traced_app(otlp: &Receiver, extra: &[(&str, &str)]) -> App {
    let env = Env::new(Backend::Distributed, extra).await;
    let gateway = Proc::spawn(
        exporting(
            env.command(&["serve", "--listen", "127.0.0.1:0"]),
            otlp,
            "grpc",
        ),
        "listening on http://",
    );
    let worker = Proc::spawn(
        exporting(
            env.command(&["worker", "--metrics-listen", "127.0.0.1:0"]),
            otlp,
            "http/protobuf",
        ),
        "worker started",
    );
    let base = format!("http://{}", gateway.addr.clone().unwrap());
    App {
        env,
        gateway,
        workers: vec![worker],
        base,
        http: reqwest::Client::new(),
    }
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
    assert_eq!(app.workers[0].exit_code(Duration::from_secs(30)), Some(0));
    let spans = otlp.spans();
    let run = one(&spans, "run", |s| s.name == "run");
    assert_eq!(run.attr("run.id"), Some(run_id.as_str()));
    assert_eq!(run.service, "weft-worker");
}

/// Every series the code records is documented, and the document lists no
/// series the code does not record.
#[test]
fn every_metric_in_the_code_is_documented() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut recorded = std::collections::BTreeSet::new();
    for dir in [
        "gateway/src",
        "worker/src",
        "shared/src",
        "server/src",
        "cli/src",
        "lark/src",
        "tools/src",
        "llm/src",
    ] {
        collect_metric_names(&root.join(dir), &mut recorded);
    }
    assert!(
        recorded.contains("weft_queue_redis_depth"),
        "the scan finds the metrics: {recorded:?}"
    );
    let doc = metrics_doc();
    for name in &recorded {
        assert!(
            doc.contains(&format!("`{name}`")),
            "{name} is recorded but not in docs/metrics.md"
        );
    }
    let listed: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("weft_") && !w.contains(' '))
        .collect();
    for name in listed {
        assert!(
            recorded.contains(name),
            "docs/metrics.md lists {name}, which nothing records"
        );
    }
}

fn metrics_doc() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md");
    std::fs::read_to_string(&path).expect("docs/metrics.md")
}

/// Series names in a Prometheus text exposition (histograms by their base name).
fn exposed_series(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("weft_"))
        .map(|l| {
            let name = l.split(['{', ' ']).next().unwrap();
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| name.strip_suffix(suffix))
                .unwrap_or(name)
                .to_string()
        })
        .collect()
}

/// `"weft_…"` right after `counter!(`, `gauge!(` or `histogram!(` in `.rs` files.
fn collect_metric_names(dir: &std::path::Path, names: &mut std::collections::BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            collect_metric_names(&path, names);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for macro_name in ["counter!(", "gauge!(", "histogram!("] {
            for (at, _) in text.match_indices(macro_name) {
                let rest = text[at + macro_name.len()..].trim_start();
                if let Some(quoted) = rest.strip_prefix('"')
                    && let Some(end) = quoted.find('"')
                {
                    names.insert(quoted[..end].to_string());
                }
            }
        }
    }
}
