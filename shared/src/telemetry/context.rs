//! The W3C trace context across processes, and request ids.
//!
//! A chat turn crosses processes twice: the client's request reaches a gateway
//! (an incoming `traceparent` header), and the run it creates is executed by a
//! worker, maybe after a crash, maybe after an approval hours later. The
//! gateway's request span therefore writes its `traceparent` into the run row
//! (`runs.traceparent`) and the job, and each attempt's run span in the worker
//! [`join_trace`]s it: one trace per turn, whichever process runs it and however
//! often it resumes.
//!
//! With no OpenTelemetry layer installed (no OTLP endpoint) spans carry no
//! context: every function here then does nothing and returns `None`.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The W3C `traceparent` of `span`, when it belongs to an exported trace.
fn traceparent_of(span: &Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

/// [`traceparent_of`] the current span.
pub fn current_traceparent() -> Option<String> {
    traceparent_of(&Span::current())
}

/// Make `span` — just created, not yet entered — a child of the remote span
/// `traceparent` names (none, or a malformed one: `span` starts a new trace),
/// and record the trace's id in its `trace_id` field (declare it `Empty`), so
/// every log line inside carries it.
pub fn join_trace(span: &Span, traceparent: Option<&str>, tracestate: Option<&str>) {
    if let Some(parent) = traceparent {
        let mut carrier = HashMap::from([("traceparent".to_string(), parent.to_string())]);
        if let Some(state) = tracestate {
            carrier.insert("tracestate".to_string(), state.to_string());
        }
        let cx = TraceContextPropagator::new().extract(&carrier);
        if cx.span().span_context().is_valid() {
            // Fails only without an OpenTelemetry layer: then there is no trace.
            let _ = span.set_parent(cx);
        }
    }
    let cx = span.context();
    let ids = cx.span().span_context().clone();
    if ids.is_valid() {
        span.record("trace_id", tracing::field::display(ids.trace_id()));
    }
}

/// Link `span` to the span `traceparent` names: the request that resumed a run
/// (an approval decided) is not the run's parent, but leads to it.
pub fn link_trace(span: &Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let linked = cx.span().span_context().clone();
    if linked.is_valid() {
        span.add_link(linked);
    }
}

/// An HTTP request's id: the client's `X-Request-Id` when it is sane (1 to 128
/// characters of `A-Z a-z 0-9 - _ . : /`), else a fresh one. Echoed on the
/// response and recorded on the request's span, so a user's report finds the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(String);

impl RequestId {
    pub const MAX_LEN: usize = 128;

    pub fn from_header(value: Option<&str>) -> RequestId {
        match value {
            Some(v) if Self::sane(v) => RequestId(v.to_string()),
            _ => RequestId(uuid::Uuid::new_v4().simple().to_string()),
        }
    }

    fn sane(v: &str) -> bool {
        (1..=Self::MAX_LEN).contains(&v.len())
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:/".contains(&b))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::RequestId;

    #[test]
    fn request_ids_are_echoed_only_when_sane() {
        let kept = RequestId::from_header(Some("lb-7f3a:42/retry.1_x"));
        assert_eq!(kept.as_str(), "lb-7f3a:42/retry.1_x");
        for bad in ["", "has space", "new\nline", "<script>", &"x".repeat(129)] {
            let made = RequestId::from_header(Some(bad));
            assert_ne!(made.as_str(), bad);
            assert_eq!(made.as_str().len(), 32, "a fresh id replaces {bad:?}");
        }
        let a = RequestId::from_header(None);
        let b = RequestId::from_header(None);
        assert_ne!(a, b, "fresh ids differ");
    }
}
