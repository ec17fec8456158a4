//! Whose trace a request joins: a `traceparent` from a peer that is not in
//! `trusted_proxies` is ignored (the request starts a trace of its own), so a
//! client cannot choose trace ids or graft its requests into another's trace.

use std::time::Duration;

use super::receiver::Receiver;
use super::{CLIENT_SPAN, CLIENT_TRACE, one, traced_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_clients_traceparent_starts_a_new_trace() {
    let otlp = Receiver::start().await;
    // Trusted: some other address; the test client (127.0.0.1) is not it.
    let app = traced_app(
        &otlp,
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("WEFT_TRUSTED_PROXIES", "[\"10.9.8.7\"]"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let resp = app
        .http
        .get(app.url("/v1/sessions"))
        .bearer_auth(&alice)
        .header("traceparent", format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"))
        .header("tracestate", "vendor=chosen-by-the-client")
        .header("x-request-id", "untrusted-trace-1")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let spans = otlp
        .wait_for(
            Duration::from_secs(30),
            |spans| {
                spans
                    .iter()
                    .any(|s| s.attr("request_id") == Some("untrusted-trace-1"))
            },
            || app.gateway.logs(),
        )
        .await;
    let request = one(&spans, "request", |s| {
        s.attr("request_id") == Some("untrusted-trace-1")
    });
    assert_eq!(request.name, "GET /v1/sessions");
    assert!(
        request.parent.is_empty(),
        "the client's span is not the parent: {request:#?}"
    );
    assert_ne!(request.trace_id, CLIENT_TRACE, "a trace of its own");
    assert!(
        spans.iter().all(|s| s.trace_id != CLIENT_TRACE),
        "nothing joined the client's trace: {spans:#?}"
    );
}
