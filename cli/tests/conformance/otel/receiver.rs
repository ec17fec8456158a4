//! A small OTLP trace receiver on 127.0.0.1, speaking both transports Weft
//! exports with: gRPC (`TraceService/Export`, tonic with the `opentelemetry-proto`
//! types) and HTTP/protobuf (`POST /v1/traces`), on one port (HTTP/2 prior
//! knowledge for gRPC, HTTP/1.1 for the other). It keeps every span with the
//! resource it came from.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

use crate::harness::{POLL, eventually_with};

/// One received span, flattened for assertions.
#[derive(Debug, Clone)]
pub struct Got {
    /// `service.name` of the exporting process.
    pub service: String,
    /// `weft.role` of the exporting process.
    pub role: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent: String,
    pub attrs: HashMap<String, String>,
    /// `trace_id` of each link.
    pub links: Vec<String>,
    /// Which transport brought it: `grpc` or `http/protobuf`.
    pub via: &'static str,
}

impl Got {
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }
}

#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<Got>>>);

impl Spans {
    fn take(&self, req: ExportTraceServiceRequest, via: &'static str) {
        let mut all = self.0.lock().unwrap();
        for rs in req.resource_spans {
            let resource = rs
                .resource
                .map(|r| flatten(&r.attributes))
                .unwrap_or_default();
            let service = resource.get("service.name").cloned().unwrap_or_default();
            let role = resource.get("weft.role").cloned().unwrap_or_default();
            for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                all.push(Got {
                    service: service.clone(),
                    role: role.clone(),
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    attrs: flatten(&span.attributes),
                    links: span.links.iter().map(|l| hex(&l.trace_id)).collect(),
                    via,
                });
            }
        }
    }
}

#[tonic::async_trait]
impl TraceService for Spans {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.take(request.into_inner(), "grpc");
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

pub struct Receiver {
    pub addr: SocketAddr,
    spans: Spans,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let spans = Spans::default();
        let http = spans.clone();
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                axum::routing::post(move |body: Bytes| async move {
                    match ExportTraceServiceRequest::decode(body) {
                        Ok(req) => {
                            http.take(req, "http/protobuf");
                            (
                                [(header::CONTENT_TYPE, "application/x-protobuf")],
                                ExportTraceServiceResponse::default().encode_to_vec(),
                            )
                                .into_response()
                        }
                        Err(_) => StatusCode::BAD_REQUEST.into_response(),
                    }
                }),
            )
            .route_service(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                TraceServiceServer::new(spans.clone()),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { addr, spans, task }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn spans(&self) -> Vec<Got> {
        self.spans.0.lock().unwrap().clone()
    }

    /// The spans once `done` says they are all there; panics with what did
    /// arrive (and `context`, e.g. the processes' logs) after `within`.
    pub async fn wait_for(
        &self,
        within: Duration,
        done: impl Fn(&[Got]) -> bool,
        context: impl Fn() -> String,
    ) -> Vec<Got> {
        eventually_with(
            within,
            POLL,
            "the awaited spans",
            || format!("received:\n{:#?}\n{}", self.spans(), context()),
            async || {
                let spans = self.spans();
                if done(&spans) {
                    Ok(spans)
                } else {
                    Err(format!("{} spans, not yet all of them", spans.len()))
                }
            },
        )
        .await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Attributes as strings (numbers and booleans rendered), for assertions.
fn flatten(attrs: &[KeyValue]) -> HashMap<String, String> {
    attrs
        .iter()
        .map(|kv| (kv.key.clone(), render(kv.value.as_ref())))
        .collect()
}

fn render(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}
