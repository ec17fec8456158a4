//! One task per server: connect, serve until the connection ends, record why,
//! wait (exponential backoff, capped) and connect again — until shutdown,
//! when the connection is closed and a child process stopped before the task
//! ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::RoleClient;
use rmcp::model::Tool as RemoteTool;
use rmcp::service::RunningService;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use weft_config::McpSandbox;

use super::connect::{Client, Connection, StderrTail, connect, tool_entries, with_stderr};
use super::status::{Link, Slot};

/// Retry delays: the first, the cap, and how long a connection must have
/// lived for the next failure to start again from the first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    pub initial: Duration,
    pub max: Duration,
    pub healthy_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            healthy_after: Duration::from_secs(60),
        }
    }
}

/// A server that does not finish the handshake (or list its tools) in this
/// time counts as failed.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Every connection gets a new number, hub-wide.
static GENERATION: AtomicU64 = AtomicU64::new(1);

pub(crate) async fn supervise(slot: Arc<Slot>, backoff: Backoff, shutdown: CancellationToken) {
    run(&slot, backoff, &shutdown).await;
    slot.set_stopped();
    tracing::debug!(mcp.server = %slot.name(), "MCP server stopped");
}

async fn run(slot: &Slot, backoff: Backoff, shutdown: &CancellationToken) {
    if let Err(error) = slot.config.validate() {
        // Retrying cannot fix a config; it stays in `error` until shutdown.
        tracing::error!(mcp.server = %slot.name(), error = %error, "MCP server not started");
        slot.set_error(error);
        shutdown.cancelled().await;
        return;
    }
    if slot.config.effective_sandbox() == Some(McpSandbox::None) {
        tracing::warn!(
            mcp.server = %slot.name(),
            "MCP server runs without a sandbox (sandbox = \"none\"): it can read and change \
             whatever Weft's OS user can, including Weft's config, data and secrets"
        );
    }
    let mut delay = backoff.initial;
    loop {
        slot.set_starting();
        let attempt = tokio::time::timeout(CONNECT_TIMEOUT, connect(&slot.config));
        let connected = tokio::select! {
            r = attempt => r.unwrap_or_else(|_| Err(format!(
                "no answer to the MCP handshake within {} s", CONNECT_TIMEOUT.as_secs()
            ))),
            () = shutdown.cancelled() => return,
        };
        let up_since = Instant::now();
        let error = match connected {
            Ok(conn) => match serve(slot, conn, shutdown).await {
                Some(error) => error,
                None => return,
            },
            Err(error) => error,
        };
        tracing::warn!(mcp.server = %slot.name(), error = %error, retry_in_ms = delay.as_millis() as u64, "MCP server unavailable");
        slot.set_error(error);
        if up_since.elapsed() >= backoff.healthy_after {
            delay = backoff.initial;
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shutdown.cancelled() => return,
        }
        delay = (delay * 2).min(backoff.max);
    }
}

/// Offer the server's tools until the connection fails (`Some(why)`) or
/// shutdown (`None`, after closing it).
async fn serve(slot: &Slot, conn: Connection, shutdown: &CancellationToken) -> Option<String> {
    let Connection {
        service,
        tools_changed,
        stderr,
        process_group,
    } = conn;
    let why = serve_connection(slot, service, tools_changed, stderr, shutdown).await;
    if let Some(group) = process_group {
        group.kill();
    }
    why
}

async fn serve_connection(
    slot: &Slot,
    service: RunningService<RoleClient, Client>,
    tools_changed: Arc<Notify>,
    stderr: Option<StderrTail>,
    shutdown: &CancellationToken,
) -> Option<String> {
    let peer = service.peer().clone();
    let stop = service.cancellation_token();
    let mut ended = std::pin::pin!(service.waiting());
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed);

    let listed = tokio::select! {
        r = list_tools(&peer) => r,
        _ = &mut ended => return Some(finish_error("the server closed the connection while listing tools".into(), stderr).await),
        () = shutdown.cancelled() => {
            stop.cancel();
            let _ = ended.await;
            return None;
        }
    };
    let tools = match listed {
        Ok(tools) => tool_entries(&slot.config, tools),
        Err(e) => {
            stop.cancel();
            let _ = ended.await;
            return Some(finish_error(format!("could not list tools: {e}"), stderr).await);
        }
    };
    tracing::info!(mcp.server = %slot.name(), tools = tools.len(), "MCP server ready");
    slot.set_ready(
        Link {
            peer: peer.clone(),
            generation,
        },
        tools,
    );

    loop {
        tokio::select! {
            _ = &mut ended => {
                return Some(finish_error("the server closed the connection".into(), stderr).await);
            }
            () = slot.broken.notified() => {
                if let Some(error) = slot.take_broken(generation) {
                    stop.cancel();
                    let _ = ended.await;
                    return Some(finish_error(error, stderr).await);
                }
            }
            () = tools_changed.notified() => match list_tools(&peer).await {
                Ok(tools) => slot.set_tools(tool_entries(&slot.config, tools)),
                Err(e) => tracing::warn!(mcp.server = %slot.name(), error = %e, "could not re-list MCP tools"),
            },
            () = shutdown.cancelled() => {
                stop.cancel();
                let _ = ended.await;
                return None;
            }
        }
    }
}

async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, String> {
    match tokio::time::timeout(CONNECT_TIMEOUT, peer.list_all_tools()).await {
        Ok(listed) => listed.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "no answer to tools/list within {} s",
            CONNECT_TIMEOUT.as_secs()
        )),
    }
}

async fn finish_error(error: String, stderr: Option<StderrTail>) -> String {
    match stderr {
        Some(tail) => with_stderr(error, &tail.after_exit().await),
        None => error,
    }
}
