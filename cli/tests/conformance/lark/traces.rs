//! A Lark message is one trace across the gateway and the worker: the ingress's
//! `lark.message` span, the run it started (`run`, with its steps), and the
//! reply card's Lark calls (`lark.card` → `lark.api`) under the run.

use std::time::Duration;

use super::world::{LarkWorld, body, fake_config};
use crate::harness::*;
use crate::otel::receiver::{Got, Receiver};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lark_message_is_one_trace_with_its_card_calls() {
    let otlp = Receiver::start().await;
    let endpoint = otlp.endpoint();
    let mut w = LarkWorld::start_with(
        Backend::Distributed,
        1,
        fake_config(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .await;
    let hello = w.dm("ou_alice", "hello");
    assert_eq!(body(&w.final_card(&hello).await), "You said: hello");

    let spans = otlp
        .wait_for(
            Duration::from_secs(30),
            |spans| {
                let Some(message) = spans.iter().find(|s| s.name == "lark.message") else {
                    return false;
                };
                let of = |name: &str| {
                    spans
                        .iter()
                        .filter(|s| s.trace_id == message.trace_id && s.name == name)
                        .count()
                };
                of("run") == 1 && of("lark.card") == 1 && of("lark.api") >= 1
            },
            || {
                format!(
                    "--- gateway ---\n{}\n--- worker ---\n{}",
                    w.gateways[0].logs(),
                    w.workers[0].logs()
                )
            },
        )
        .await;
    let message = spans.iter().find(|s| s.name == "lark.message").unwrap();
    assert_eq!(message.role, "gateway", "{message:?}");
    assert_eq!(message.parent, "", "a Lark message starts its trace");
    let in_trace: Vec<&Got> = spans
        .iter()
        .filter(|s| s.trace_id == message.trace_id)
        .collect();
    let named = |name: &str| *in_trace.iter().find(|s| s.name == name).unwrap();
    let run = named("run");
    assert_eq!(run.role, "worker");
    assert_eq!(
        run.parent, message.span_id,
        "the run continues the message's trace"
    );
    let card = named("lark.card");
    assert_eq!(card.parent, run.span_id, "the card follows its run");
    let calls: Vec<&&Got> = in_trace.iter().filter(|s| s.name == "lark.api").collect();
    assert!(calls.iter().all(|c| c.parent == card.span_id), "{calls:#?}");
    assert!(
        calls
            .iter()
            .any(|c| c.attrs.get("lark.call").map(String::as_str) == Some("reply_message")),
        "the reply card was sent: {calls:#?}"
    );
}
