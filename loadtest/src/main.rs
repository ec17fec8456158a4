//! `weft-loadtest`: command-line entry. Subcommands stay thin wrappers over the library.

use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use weft_loadtest::mock_llm::{self, MockLlmConfig};

#[derive(Parser)]
#[command(
    name = "weft-loadtest",
    version,
    about = "Load tester and mock LLM server for Weft"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the mock LLM server (OpenAI Chat Completions wire, `@mock.*` directives).
    MockLlm {
        #[arg(long, env = "WEFT_MOCK_LLM_LISTEN", default_value = "127.0.0.1:8089")]
        listen: String,
        /// Default time to first token, when a message has no `@mock.delay`.
        #[arg(long, default_value_t = 0)]
        ttft_ms: u64,
        /// Default inter-token latency.
        #[arg(long, default_value_t = 0)]
        itl_ms: u64,
        /// Uniform jitter (±) applied to each default delay.
        #[arg(long, default_value_t = 0)]
        jitter_ms: u64,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match Cli::parse().command {
        Command::MockLlm {
            listen,
            ttft_ms,
            itl_ms,
            jitter_ms,
        } => {
            let config = MockLlmConfig {
                ttft: Duration::from_millis(ttft_ms),
                itl: Duration::from_millis(itl_ms),
                jitter: Duration::from_millis(jitter_ms),
            };
            let listener = tokio::net::TcpListener::bind(&listen)
                .await
                .with_context(|| format!("binding {listen}"))?;
            tracing::info!(addr = %listener.local_addr()?, "mock LLM server listening");
            mock_llm::serve_with(listener, config, shutdown_signal())
                .await
                .context("serving")?;
        }
    }
    Ok(())
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
