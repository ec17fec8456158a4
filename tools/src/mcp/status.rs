//! What the hub knows about each server, shared by its supervisor (which
//! writes) and its tools and the status API (which read).

use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::{Peer, RoleClient};
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, watch};
use weft_config::{McpServerConfig, ToolPolicy};
use weft_llm::ToolSpec;

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpTransportKind {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio,
    /// A streamable-HTTP endpoint.
    Http,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Connecting (first start or a retry); its tools are not offered yet.
    Starting,
    /// Connected; its tools are offered.
    Ready,
    /// Failed to start or died; retried with backoff. `last_error` says why.
    Error,
    /// Shut down with the process; nothing is offered any more.
    Stopped,
}

/// One server as an admin sees it (`GET /v1/admin/mcp`-style output).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerStatus {
    pub name: String,
    pub transport: McpTransportKind,
    pub state: McpServerState,
    /// Names of the tools offered to the agent (`<server>__<tool>`), sorted.
    pub tools: Vec<String>,
    /// Why the server last failed; kept after it recovers, for the record.
    pub last_error: Option<String>,
    /// When `state` last changed (RFC 3339, UTC).
    pub since: String,
    pub policy: ToolPolicy,
}

/// A tool as listed by its server, under the name the agent sees.
#[derive(Debug, Clone)]
pub(crate) struct ToolEntry {
    pub spec: ToolSpec,
    /// The server's own name for it.
    pub remote: String,
    /// The server says it only reads (`annotations.readOnlyHint`): offered in
    /// plan mode. A hint, from a server the administrator chose to trust.
    pub read_only: bool,
}

/// A live connection's handle, with a number that changes on every reconnect
/// so that a failure seen by an old call cannot take down a new connection.
#[derive(Clone)]
pub(crate) struct Link {
    pub peer: Peer<RoleClient>,
    pub generation: u64,
}

struct Inner {
    state: McpServerState,
    tools: Vec<ToolEntry>,
    last_error: Option<String>,
    since_ms: i64,
    link: Option<Link>,
    /// Set once the first connection attempt has ended either way.
    settled: bool,
}

/// Shared record of one server.
pub(crate) struct Slot {
    pub config: McpServerConfig,
    pub transport: McpTransportKind,
    inner: Mutex<Inner>,
    /// Poked by a tool call that found the connection broken.
    pub broken: Notify,
    broken_generation: Mutex<Option<(u64, String)>>,
    /// Bumped on every change, for [`super::McpHub::settled`].
    changes: watch::Sender<u64>,
}

impl Slot {
    pub fn new(config: McpServerConfig, changes: watch::Sender<u64>) -> Arc<Slot> {
        let transport = if config.http_url().is_some() {
            McpTransportKind::Http
        } else {
            McpTransportKind::Stdio
        };
        Arc::new(Slot {
            config,
            transport,
            inner: Mutex::new(Inner {
                state: McpServerState::Starting,
                tools: Vec::new(),
                last_error: None,
                since_ms: weft_wire::time::now_ms(),
                link: None,
                settled: false,
            }),
            broken: Notify::new(),
            broken_generation: Mutex::new(None),
            changes,
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Inner)) {
        {
            let mut inner = self.lock();
            let before = inner.state;
            f(&mut inner);
            if inner.state != before {
                inner.since_ms = weft_wire::time::now_ms();
            }
        }
        self.changes.send_modify(|n| *n += 1);
    }

    pub fn set_starting(&self) {
        self.update(|i| {
            i.state = McpServerState::Starting;
            i.link = None;
            i.tools.clear();
        });
    }

    pub fn set_ready(&self, link: Link, tools: Vec<ToolEntry>) {
        self.update(|i| {
            i.state = McpServerState::Ready;
            i.link = Some(link);
            i.tools = tools;
            i.settled = true;
        });
    }

    pub fn set_tools(&self, tools: Vec<ToolEntry>) {
        self.update(|i| i.tools = tools);
    }

    pub fn set_error(&self, error: String) {
        self.update(|i| {
            i.state = McpServerState::Error;
            i.link = None;
            i.tools.clear();
            i.last_error = Some(error);
            i.settled = true;
        });
    }

    pub fn set_stopped(&self) {
        self.update(|i| {
            i.state = McpServerState::Stopped;
            i.link = None;
            i.tools.clear();
            i.settled = true;
        });
    }

    pub fn settled(&self) -> bool {
        self.lock().settled
    }

    /// The connection, when the server is ready.
    pub fn link(&self) -> Result<Link, String> {
        let inner = self.lock();
        match &inner.link {
            Some(link) => Ok(link.clone()),
            None => {
                if inner.state == McpServerState::Stopped {
                    return Err(format!("MCP server {:?} has been shut down", self.name()));
                }
                let state = match inner.state {
                    McpServerState::Starting => "starting",
                    _ => "down",
                };
                let why = inner
                    .last_error
                    .as_deref()
                    .map(|e| format!(" (last error: {e})"))
                    .unwrap_or_default();
                Err(format!(
                    "MCP server {:?} is {state}{why}; it is retried automatically, try again later",
                    self.name()
                ))
            }
        }
    }

    pub fn tools(&self) -> Vec<ToolEntry> {
        self.lock().tools.clone()
    }

    /// A call saw connection `generation` fail; the supervisor reconnects if
    /// that is still the current one.
    pub fn report_broken(&self, generation: u64, error: String) {
        *self
            .broken_generation
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some((generation, error));
        self.broken.notify_one();
    }

    /// The failure reported for `generation`, if any (and forget it).
    pub fn take_broken(&self, generation: u64) -> Option<String> {
        let mut slot = self
            .broken_generation
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match slot.take() {
            Some((g, e)) if g == generation => Some(e),
            _ => None,
        }
    }

    pub fn status(&self) -> McpServerStatus {
        let inner = self.lock();
        let mut tools: Vec<String> = inner.tools.iter().map(|t| t.spec.name.clone()).collect();
        tools.sort();
        McpServerStatus {
            name: self.config.name.clone(),
            transport: self.transport,
            state: inner.state,
            tools,
            last_error: inner.last_error.clone(),
            since: weft_wire::time::rfc3339(inner.since_ms),
            policy: self.config.policy,
        }
    }
}
