//! The OTLP trace exporter and its tracer provider, configured from the standard
//! `OTEL_*` environment. Both OTLP transports are built in: `http/protobuf` (the
//! specification's default, port 4318) and `grpc` (port 4317), chosen with
//! `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` or `OTEL_EXPORTER_OTLP_PROTOCOL`.
//!
//! Spans are batched (`OTEL_BSP_*`) and exported from the SDK's own thread, so
//! a slow or absent collector never slows a request or a run; the gRPC exporter
//! is built here, inside the Tokio runtime its connection lives on.

use anyhow::Context;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::resource::{
    EnvResourceDetector, ResourceDetector, TelemetryResourceDetector,
};
use opentelemetry_sdk::trace::SdkTracerProvider;

use super::Process;

/// The tracer provider and the transport's name, or `None` when no OTLP
/// endpoint is configured (or `OTEL_SDK_DISABLED=true`, or
/// `OTEL_TRACES_EXPORTER=none`).
pub(super) fn provider(
    process: Process,
) -> anyhow::Result<Option<(SdkTracerProvider, &'static str)>> {
    if !configured(|name| std::env::var(name).ok()) {
        return Ok(None);
    }
    let protocol = protocol(|name| std::env::var(name).ok())?;
    let name = match protocol {
        Protocol::Grpc => "grpc",
        _ => "http/protobuf",
    };
    let exporter = match protocol {
        Protocol::Grpc => SpanExporter::builder().with_tonic().build(),
        _ => SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .build(),
    }
    .context("building the OTLP trace exporter")?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(process))
        .build();
    Ok(Some((provider, name)))
}

/// Whether traces are to be exported at all.
fn configured(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let no_exporter =
        var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !disabled
        && !no_exporter
}

/// The transport: the traces variable, then the general one, then `http/protobuf`.
fn protocol(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<Protocol> {
    let chosen = [
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]
    .into_iter()
    .find_map(|name| {
        var(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name, v))
    });
    match chosen {
        None => Ok(Protocol::HttpBinary),
        Some((_, v)) if v.trim() == "http/protobuf" => Ok(Protocol::HttpBinary),
        Some((_, v)) if v.trim() == "grpc" => Ok(Protocol::Grpc),
        Some((name, v)) => {
            anyhow::bail!("{name}={v:?} is not supported: use \"grpc\" or \"http/protobuf\"")
        }
    }
}

/// `service.name` by role unless the environment names it (`OTEL_SERVICE_NAME`
/// or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`), plus `service.version` and
/// `weft.role`, which tell the processes apart even under one service name.
fn resource(process: Process) -> Resource {
    let detected: [Box<dyn ResourceDetector>; 2] = [
        Box::new(TelemetryResourceDetector),
        Box::new(EnvResourceDetector::new()),
    ];
    let mut builder = Resource::builder_empty()
        .with_attributes([
            KeyValue::new("service.name", process.service_name()),
            KeyValue::new("service.version", crate::VERSION),
            KeyValue::new("weft.role", process.role()),
        ])
        .with_detectors(&detected);
    if let Ok(name) = std::env::var("OTEL_SERVICE_NAME")
        && !name.trim().is_empty()
    {
        builder = builder.with_service_name(name);
    }
    builder.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn exports_only_when_an_endpoint_is_set() {
        assert!(!configured(env(&[])));
        assert!(!configured(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])));
        assert!(configured(env(&[(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://127.0.0.1:4318"
        )])));
        assert!(configured(env(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces"
        )])));
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(!configured(env(&[on, ("OTEL_SDK_DISABLED", "TRUE")])));
        assert!(!configured(env(&[on, ("OTEL_TRACES_EXPORTER", "none")])));
    }

    #[test]
    fn protocol_defaults_to_http_protobuf_and_refuses_the_unsupported() {
        assert_eq!(protocol(env(&[])).unwrap(), Protocol::HttpBinary);
        assert_eq!(
            protocol(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")])).unwrap(),
            Protocol::Grpc
        );
        // The traces variable wins over the general one.
        assert_eq!(
            protocol(env(&[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf"),
            ]))
            .unwrap(),
            Protocol::HttpBinary
        );
        let err = protocol(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")])).unwrap_err();
        assert!(err.to_string().contains("http/json"), "{err}");
    }
}
