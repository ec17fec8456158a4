//! One `init` for logs and traces.
//!
//! * Logs: human-readable by default, one flat JSON object per line with
//!   `WEFT_LOG_FORMAT=json` (every field at the top level, see `json.rs`),
//!   filtered by `RUST_LOG` (default `info`). Spans carry ids as fields (`run.id`,
//!   `request_id`, `trace_id`); nothing logs tokens, prompts or message bodies.
//! * Traces: exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//!   `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, with the standard `OTEL_*`
//!   variables honoured by the SDK (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//!   `OTEL_TRACES_SAMPLER`, `OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_HEADERS`, …). Unset,
//!   nothing is exported and no OpenTelemetry layer is installed. The W3C context
//!   travels with a run ([`join_trace`]), so one chat turn is one trace across the
//!   gateway and the worker.
//!
//! Traces take Weft's own spans (targets `weft*`) at `info` and above whatever
//! `RUST_LOG` says: turning logs down must not cut traces, and the exporter's own
//! HTTP/2 and gRPC spans must never be traced (they would feed themselves).

mod context;
mod json;
mod otel;

use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::fmt::format::JsonFields;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

pub use context::{RequestId, current_traceparent, join_trace, link_trace};

/// The role of this process: its default `service.name` (and `weft.role`), so
/// traces tell the gateway from the worker even when both run one binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Process {
    /// `weft up`: gateway and worker in one process.
    Up,
    /// `weft serve`.
    Gateway,
    /// `weft worker`.
    Worker,
    /// A short command (`migrate`, `admin`): logs only, never exports traces.
    Command,
}

impl Process {
    fn role(self) -> &'static str {
        match self {
            Process::Up => "up",
            Process::Gateway => "gateway",
            Process::Worker => "worker",
            Process::Command => "command",
        }
    }

    fn service_name(self) -> &'static str {
        match self {
            Process::Up => "weft",
            Process::Gateway => "weft-gateway",
            Process::Worker => "weft-worker",
            Process::Command => "weft-command",
        }
    }
}

/// What `init` started. [`Telemetry::shutdown`] exports the spans still
/// buffered; call it after the process has drained, while the runtime still runs.
#[must_use = "spans buffered at exit are lost unless `shutdown` is called"]
pub struct Telemetry {
    tracer: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Telemetry {
    /// Flush and stop the exporter (blocks until the last batch is sent or its
    /// timeout passes). Logs cannot be stopped: they go on until exit.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(provider) = self.tracer.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("weft: flushing traces failed: {e}");
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Start logging (`format`: `text` or `json`) and, when configured, trace export.
/// A second call (tests, embedding programs) keeps the first subscriber and
/// exports nothing of its own.
pub fn init(format: &str, process: Process) -> anyhow::Result<Telemetry> {
    let logs_filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        EnvFilter::new("info,sqlx=warn,apalis=warn,apalis_core=warn,opentelemetry=warn")
    });
    let logs = if format == "json" {
        fmt::layer()
            .with_writer(std::io::stderr)
            .fmt_fields(JsonFields::new())
            .event_format(json::FlatJson)
            .with_filter(logs_filter)
            .boxed()
    } else {
        fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(logs_filter)
            .boxed()
    };
    let (tracer, protocol) = match process {
        Process::Command => (None, None),
        _ => match otel::provider(process)? {
            Some((provider, protocol)) => (Some(provider), Some(protocol)),
            None => (None, None),
        },
    };
    let traces = tracer.as_ref().map(|provider| {
        use opentelemetry::trace::TracerProvider as _;
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("weft"))
            // A task's spans hop between threads: the first one's name is noise.
            .with_threads(false)
            .with_filter(Targets::new().with_target("weft", tracing::Level::INFO))
    });
    let installed = tracing_subscriber::registry()
        .with(logs)
        .with(traces)
        .try_init()
        .is_ok();
    let mut telemetry = Telemetry { tracer };
    if !installed {
        telemetry.stop();
    } else if let Some(protocol) = protocol {
        tracing::info!(protocol, "exporting traces over OTLP");
    }
    Ok(telemetry)
}
