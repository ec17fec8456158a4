//! What every request leaves behind: a request id (the client's sane
//! `X-Request-Id`, or a fresh one) echoed on the response; a span that carries
//! the request id, the client's address and — with tracing on — the trace id, so
//! every log line of the request has them; and one access-log line.
//!
//! The span joins an incoming W3C trace (`traceparent`, `tracestate`) only when
//! the peer is one of `trusted_proxies`. From anyone else the header is ignored
//! and the request starts a trace of its own: a client that picks the trace id
//! could otherwise graft its requests into another's trace, or make the
//! backend's traces (and its sampling) whatever it likes.
//!
//! Probes (`/health`, `/ready`, `/metrics`) are polled every few seconds by
//! every orchestrator: their span and access line are `debug`, so they neither
//! flood the logs nor become traces.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::{Next, from_fn};
use axum::response::Response;
use tower_http::trace::TraceLayer;
use tracing::Span;
use tracing::field::Empty;
use weft_shared::telemetry::{RequestId, join_trace};

use crate::client::{ClientOrigin, TrustedProxies, peer_is_trusted};

pub const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Wrap `router` (after routing, so the span names the matched route) in the
/// request id, the request span and the access log.
pub fn requests<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    trusted: Arc<TrustedProxies>,
) -> Router<S> {
    router
        .layer(from_fn(access_log))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(move |req: &Request| request_span(req, &trusted)),
        )
        .layer(from_fn(request_id))
}

fn is_probe(path: &str) -> bool {
    matches!(path, "/health" | "/ready" | "/metrics")
}

fn request_span(req: &Request, trusted: &TrustedProxies) -> Span {
    let id = req
        .extensions()
        .get::<RequestId>()
        .map_or("", RequestId::as_str);
    let method = req.method();
    let path = req.uri().path();
    if is_probe(path) {
        return tracing::debug_span!("http", http.request.method = %method, url.path = %path, request_id = %id);
    }
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let client = ClientOrigin::from_parts(req.extensions(), req.headers(), trusted);
    let span = tracing::info_span!(
        "http",
        otel.name = %format_args!("{method} {}", route.unwrap_or("/*")),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = %method,
        http.route = route,
        http.response.status_code = Empty,
        url.path = %path,
        client.addr = %client.ip,
        request_id = %id,
        trace_id = Empty,
    );
    let forwarded = peer_is_trusted(req.extensions(), trusted);
    let header = |name: &str| {
        forwarded
            .then(|| req.headers().get(name).and_then(|v| v.to_str().ok()))
            .flatten()
    };
    join_trace(&span, header("traceparent"), header("tracestate"));
    span
}

/// Outermost: decide the id before the span is made, echo it on the way out.
async fn request_id(mut req: Request, next: Next) -> Response {
    let id = RequestId::from_header(
        req.headers()
            .get(&X_REQUEST_ID)
            .and_then(|v| v.to_str().ok()),
    );
    req.extensions_mut().insert(id.clone());
    let mut res = next.run(req).await;
    if let Ok(value) = HeaderValue::from_str(id.as_str()) {
        res.headers_mut().insert(X_REQUEST_ID, value);
    }
    res
}

/// Inside the span: the status on the span, and one line per request (for a
/// stream, when its headers go out).
async fn access_log(req: Request, next: Next) -> Response {
    let probe = is_probe(req.uri().path());
    let started = Instant::now();
    let res = next.run(req).await;
    let status = res.status().as_u16();
    let duration_ms = started.elapsed().as_millis() as u64;
    let span = Span::current();
    span.record("http.response.status_code", status);
    if res.status().is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    if probe {
        tracing::debug!(status, duration_ms, "request");
    } else {
        tracing::info!(status, duration_ms, "request");
    }
    res
}
