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
use weft_config::{McpServerConfig, ToolPolicy};

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
    served: std::sync::RwLock<Vec<Served>>,
    changes: watch::Receiver<u64>,
    notify: watch::Sender<u64>,
    tasks: TaskTracker,
    backoff: Backoff,
    /// The hub's own token: every server's is a child of it.
    stop: CancellationToken,
    /// Dropping the hub stops its servers too.
    _stop: DropGuard,
}

/// One server as it runs now.
struct Served {
    slot: Arc<Slot>,
    /// Stops this server alone (a reload that changed or removed it).
    stop: CancellationToken,
    /// Its settings, to tell a changed server from one left as it was.
    settings: serde_json::Value,
}

/// What [`McpHub::reconfigure`] did to a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reconfigured {
    Added,
    Restarted,
    Kept,
    Stopped,
}

impl McpHub {
    /// Start connecting to every server in the background and return at once.
    /// A config that fails [`weft_config::McpServerConfig::validate`]
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
        let (notify, changes) = watch::channel(0);
        let hub = McpHub {
            served: std::sync::RwLock::default(),
            changes,
            notify,
            tasks: TaskTracker::new(),
            backoff,
            _stop: stop.clone().drop_guard(),
            stop,
        };
        hub.reconfigure(configs);
        Arc::new(hub)
    }

    /// Serves `configs` from now on (a config reload): a server whose
    /// settings did not change keeps running, connection and all; a changed
    /// one restarts; one no longer listed stops; a new one starts. Calls in
    /// flight on a server that stops get an error for the model.
    pub fn reconfigure(&self, configs: Vec<McpServerConfig>) -> Vec<(String, Reconfigured)> {
        let mut served = self.served.write().expect("mcp hub lock");
        let mut old: Vec<Served> = std::mem::take(&mut *served);
        let mut done = Vec::new();
        for config in configs {
            let settings = serde_json::to_value(&config).unwrap_or_default();
            let name = config.name.clone();
            match old.iter().position(|s| s.slot.name() == name) {
                Some(at) if old[at].settings == settings => {
                    served.push(old.remove(at));
                    done.push((name, Reconfigured::Kept));
                    continue;
                }
                Some(at) => {
                    old.remove(at).stop.cancel();
                    done.push((name, Reconfigured::Restarted));
                }
                None => done.push((name, Reconfigured::Added)),
            }
            let slot = Slot::new(config, self.notify.clone());
            let stop = self.stop.child_token();
            self.tasks
                .spawn(supervise(slot.clone(), self.backoff, stop.clone()));
            served.push(Served {
                slot,
                stop,
                settings,
            });
        }
        for gone in old {
            gone.stop.cancel();
            done.push((gone.slot.name().to_owned(), Reconfigured::Stopped));
        }
        self.notify.send_modify(|n| *n += 1);
        done
    }

    fn slots(&self) -> Vec<Arc<Slot>> {
        let served = self.served.read().expect("mcp hub lock");
        served.iter().map(|s| s.slot.clone()).collect()
    }

    /// The tools of the servers that are ready now, sorted by name.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        for slot in &self.slots() {
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
        self.slots()
            .iter()
            .find(|s| s.name() == server)
            .map(|s| s.config.policy)
    }

    /// Every server, in config order.
    pub fn status(&self) -> Vec<McpServerStatus> {
        self.slots().iter().map(|s| s.status()).collect()
    }

    /// Resolves once every server has finished its first attempt (ready or
    /// error), for start-up logs and tests; it does not wait for retries.
    pub async fn settled(&self) {
        let mut changes = self.changes.clone();
        while !self.slots().iter().all(|s| s.settled()) {
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
        self.tasks.close();
        self.tasks.wait().await;
    }
}
