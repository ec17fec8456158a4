//! OpenTelemetry, distributed mode: one chat turn is one trace whose spans come
//! from the gateway and the worker processes with the right parents (the
//! client's span → request → run → step → LLM call / tool call); request ids on
//! responses; `trace_id` in JSON logs; spans buffered at shutdown are flushed;
//! and every `/metrics` series is documented in `docs/metrics.md`; a client's
//! `traceparent` is continued only from a trusted proxy.
//!
//! The gateway exports over gRPC and the worker over HTTP/protobuf, to one
//! receiver that speaks both, so both transports are covered by one turn.

mod metrics;
pub mod receiver;
mod resume;
mod trust;
mod turn;

use std::process::Command;

use serde_json::Value;

use crate::harness::*;
use receiver::{Got, Receiver};

pub const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub const CLIENT_SPAN: &str = "00f067aa0ba902b7";

pub fn exporting(mut cmd: Command, to: &Receiver, protocol: &str) -> Command {
    cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", to.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol);
    cmd
}

pub fn json_lines(proc: &Proc) -> Vec<Value> {
    proc.logs()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

pub fn one<'a>(spans: &'a [Got], what: &str, pick: impl Fn(&Got) -> bool) -> &'a Got {
    let found: Vec<&Got> = spans.iter().filter(|s| pick(s)).collect();
    assert_eq!(found.len(), 1, "one {what} span expected in {spans:#?}");
    found[0]
}

/// The test client's address as a trusted proxy: its `traceparent` is then
/// continued (it stands for a proxy or a client in front that traces).
pub const CLIENT_IS_TRUSTED: (&str, &str) = ("WEFT_TRUSTED_PROXIES", "[\"127.0.0.1\"]");

/// A distributed Weft whose gateway exports over gRPC and whose worker over
/// HTTP/protobuf, both to `otlp`; the test client is a trusted proxy unless
/// `extra` says otherwise.
pub async fn traced_app(otlp: &Receiver, extra: &[(&str, &str)]) -> App {
    let mut settings = vec![CLIENT_IS_TRUSTED];
    settings.extend_from_slice(extra);
    let env = Env::new(Backend::Distributed, &settings).await;
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
