//! MCP servers as tool sources. An admin lists servers in `[[mcp_servers]]`;
//! the [`McpHub`] keeps one connection per server (a child process over
//! stdio, or a streamable-HTTP session) and offers each server's tools to the
//! agent as `<server>__<tool>`.
//!
//! Servers are independent: one that fails to start, or dies, is marked
//! `error` with the reason and retried with capped exponential backoff, while
//! the others keep serving. Its tools drop out of [`McpHub::tools`] until it
//! is back; a call already holding one of them gets an `Err` text for the
//! model rather than hanging. Timeouts, output caps and approval are the
//! worker's tool runner's business, as for every tool; a call stops (and the
//! server is told so) when its future is dropped.
//!
//! Shutdown is the caller's token (or dropping the hub): each supervisor
//! closes its connection and stops its server's whole process group;
//! [`McpHub::closed`] waits for that.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::{CancellationToken, DropGuard};
use tokio_util::task::TaskTracker;
use weft_shared::config::{McpServerConfig, ToolPolicy};

use crate::Tool;

mod connect;
mod sandbox;
mod status;
mod supervisor;
mod tool;

pub use status::{McpServerState, McpServerStatus, McpTransportKind};

use status::Slot;
use supervisor::{Backoff, supervise};
use tool::McpTool;

/// The configured MCP servers and their tools.
pub struct McpHub {
    slots: Vec<Arc<Slot>>,
    changes: watch::Receiver<u64>,
    tasks: TaskTracker,
    /// Dropping the hub stops its servers too.
    _stop: DropGuard,
}

impl McpHub {
    /// Start connecting to every server in the background and return at once.
    /// A config that fails [`weft_shared::config::McpServerConfig::validate`]
    /// shows up as a server in `error` (config is normally checked at start-up).
    pub fn start(configs: Vec<McpServerConfig>, shutdown: CancellationToken) -> Arc<McpHub> {
        Self::start_with(configs, Backoff::default(), shutdown)
    }

    pub(crate) fn start_with(
        configs: Vec<McpServerConfig>,
        backoff: Backoff,
        shutdown: CancellationToken,
    ) -> Arc<McpHub> {
        let stop = shutdown.child_token();
        let (tx, changes) = watch::channel(0);
        let tasks = TaskTracker::new();
        let slots: Vec<Arc<Slot>> = configs
            .into_iter()
            .map(|config| Slot::new(config, tx.clone()))
            .collect();
        for slot in &slots {
            tasks.spawn(supervise(slot.clone(), backoff, stop.clone()));
        }
        tasks.close();
        Arc::new(McpHub {
            slots,
            changes,
            tasks,
            _stop: stop.drop_guard(),
        })
    }

    /// The tools of the servers that are ready now, sorted by name.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for slot in &self.slots {
            for entry in slot.tools() {
                tools.push(Arc::new(McpTool {
                    slot: slot.clone(),
                    entry,
                }));
            }
        }
        tools.sort_by_key(|t| t.spec().name);
        tools
    }

    /// The configured policy of the server that offers tool `name`
    /// (`<server>__<tool>`), or `None` when no configured server has that
    /// prefix. The hub offers the tools of a `deny` server all the same (they
    /// show in its status); refusing the call is the tool runner's part.
    pub fn policy(&self, name: &str) -> Option<ToolPolicy> {
        let (server, _) = name.split_once("__")?;
        self.slots
            .iter()
            .find(|s| s.name() == server)
            .map(|s| s.config.policy)
    }

    /// Every server, in config order.
    pub fn status(&self) -> Vec<McpServerStatus> {
        self.slots.iter().map(|s| s.status()).collect()
    }

    /// Resolves once every server has finished its first attempt (ready or
    /// error), for start-up logs and tests; it does not wait for retries.
    pub async fn settled(&self) {
        let mut changes = self.changes.clone();
        while !self.slots.iter().all(|s| s.settled()) {
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits for a status change until `until` holds, and returns that status.
    /// Changes that follow each other quickly may be seen only as the last one.
    pub async fn wait_for_status(
        &self,
        until: impl Fn(&[McpServerStatus]) -> bool,
    ) -> Vec<McpServerStatus> {
        let mut changes = self.changes.clone();
        loop {
            let status = self.status();
            if until(&status) || changes.changed().await.is_err() {
                return status;
            }
        }
    }

    /// Resolves once shutdown has closed every connection and stopped every
    /// child process.
    pub async fn closed(&self) {
        self.tasks.wait().await;
    }
}
