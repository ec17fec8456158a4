//! Runs the fake Lark server by hand: `weft-lark-fake --listen 127.0.0.1:9999`.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use weft_lark::fake::{FakeConfig, FakeLark};

#[derive(Parser)]
#[command(
    about = "A fake Lark (Feishu) server speaking the real long-connection and REST protocols"
)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9999")]
    listen: String,
    #[arg(long, default_value = "cli_fake_app")]
    app_id: String,
    #[arg(long, default_value = "fake_secret")]
    app_secret: String,
    /// Seconds without an ack before an event is redelivered.
    #[arg(long, default_value_t = 3)]
    ack_timeout_s: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("while binding {}", args.listen))?;
    let config = FakeConfig {
        app_id: args.app_id,
        app_secret: args.app_secret,
        ack_timeout: Duration::from_secs(args.ack_timeout_s),
        ..FakeConfig::default()
    };
    tracing::info!(addr = %listener.local_addr()?, "fake lark listening");
    let fake = FakeLark::new(config);
    fake.serve(listener, shutdown_signal())
        .await
        .context("while serving")
}

/// Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}
