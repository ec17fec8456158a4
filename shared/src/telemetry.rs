//! One `init` for logs: human-readable by default, JSON with `WEFT_LOG_FORMAT=json`,
//! filtered by `RUST_LOG` (default `info`). Spans carry ids as fields (`run.id`);
//! nothing logs tokens, prompts or message bodies.

use tracing_subscriber::EnvFilter;

pub fn init(format: &str) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,apalis=warn,apalis_core=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // try_init: tests and embedded callers may initialise more than once.
    if format == "json" {
        let _ = builder.json().flatten_event(true).try_init();
    } else {
        let _ = builder.try_init();
    }
}
