//! weft-worker: consumes run jobs, claims runs, executes the agent loop, publishes
//! events, checkpoints steps, and reaps runs whose worker died.
//!
//! Shape: a [`JobHandler`] takes each job, waits for a free slot (the concurrency
//! limit is a semaphore — a busy worker pushes back on the queue), claims the run
//! by compare-and-set and spawns its execution. Every running run has a lease
//! heartbeat and a [`RunStop`] that cancel requests, lost leases and shutdown
//! trigger. The reaper, in every worker, is idempotent: it only enqueues, and the
//! claim decides.

mod agent;
mod context;
mod emitter;
pub mod failure;
mod intake;
pub mod jobs;
mod lark;
pub mod providers;
mod reaper;
mod scheduler;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use weft_config::{Config, LiveConfig};
use weft_shared::bus::SharedBus;
use weft_shared::ids::RunId;
use weft_shared::queue::{JobHandler, SharedQueue};
use weft_shared::time::now_ms;
use weft_store::Store;

use crate::providers::Providers;
use weft_tools::ToolRegistry;

/// What a worker needs; shared with the gateway in embedded mode.
#[derive(Clone)]
pub struct WorkerDeps {
    pub store: Store,
    pub bus: SharedBus,
    pub queue: SharedQueue,
    /// The config, reloaded live: an attempt keeps the one it started with.
    pub live: LiveConfig,
    /// Attachment bytes (images for the model, documents' text).
    pub blobs: weft_shared::blobs::Blobs,
    /// Where fetched pages and PDFs are read (`weft extract` children).
    pub extractor: weft_files::Extractor,
    /// Knowledge search and the embedding model (shared with the gateway in
    /// one process).
    pub retriever: weft_knowledge::Retriever,
    /// The Lark REST side, when `[lark]` is configured: runs of Lark conversations
    /// stream their replies into cards.
    pub lark: Option<weft_lark::sender::RateAwareSender>,
}

impl WorkerDeps {
    /// The config now.
    pub fn config(&self) -> Arc<Config> {
        self.live.get()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A user (or an interrupting message) cancelled the run.
    Cancel,
    /// Another worker took the run over; write nothing more.
    Lost,
    /// This process is shutting down past its grace period.
    Shutdown,
    /// The attempt ran past `worker.max_run_secs`.
    TimeLimit,
}

/// The stop switch of one running run.
pub struct RunStop {
    pub token: CancellationToken,
    reason: Mutex<Option<StopReason>>,
}

impl RunStop {
    fn new() -> RunStop {
        RunStop {
            token: CancellationToken::new(),
            reason: Mutex::new(None),
        }
    }

    pub fn stop(&self, reason: StopReason) {
        self.reason.lock().expect("stop lock").get_or_insert(reason);
        self.token.cancel();
    }

    pub fn reason(&self) -> StopReason {
        self.reason
            .lock()
            .expect("stop lock")
            .unwrap_or(StopReason::Cancel)
    }
}

pub(crate) struct Inner {
    pub(crate) deps: WorkerDeps,
    /// The run service: a run put back on the queue (reaped, released, resumed)
    /// and a follow-up goes through it, as the gateway's sends do.
    pub(crate) runs: weft_runs::Runs,
    /// Unique per process: the lease owner written into claimed runs.
    pub(crate) id: String,
    /// The model clients of the config now (rebuilt on reload).
    providers: std::sync::RwLock<Arc<Providers>>,
    /// Built-in tools (MCP tools join them per run, see [`Inner::tools`]),
    /// rebuilt on reload (the web tools' settings).
    tools: std::sync::RwLock<ToolRegistry>,
    /// The configured MCP servers (reconfigured on reload).
    mcp: Arc<weft_tools::mcp::McpHub>,
    lark: Option<lark::LarkEgress>,
    slots: Arc<Semaphore>,
    /// Room for images held for models (`attachments.worker_image_memory_bytes`).
    pub(crate) image_room: weft_shared::memory_room::MemoryRoom,
    running: Mutex<HashMap<RunId, Arc<RunStop>>>,
    tasks: TaskTracker,
    /// Copies of the histories of sessions this worker served (see
    /// [`context::history`]).
    pub(crate) histories: context::history::Histories,
    /// Agents, instructions and skills of the prompt (see [`context::prompt`]).
    pub(crate) prompt_inputs: context::prompt::PromptInputs,
    /// Each person's memories, as last read (see `agent::memory`).
    pub(crate) memories: agent::MemoryCopies,
    /// The failure points a crash test armed ([`failure`]); `None` in
    /// production, where each point costs one check of this.
    failures: Option<failure::FailurePoints>,
}

impl Inner {
    /// Where a crash test armed `point`, the attempt stops here for good
    /// ([`failure`]); otherwise (always, in production) it goes straight on.
    pub(crate) async fn failure_point(&self, point: failure::FailurePoint) {
        if let Some(failures) = &self.failures {
            failures.reach(point).await;
        }
    }

    /// The tools available now: built-in ones and those of the MCP servers that
    /// are up (a server that is down simply offers none until it is back).
    pub(crate) fn tools(&self) -> ToolRegistry {
        let mut tools = self.tools.read().expect("tools lock").clone();
        for tool in self.mcp.tools() {
            tools.add(tool);
        }
        tools
    }

    /// The model clients now; an attempt keeps the ones it started with.
    pub(crate) fn providers(&self) -> Arc<Providers> {
        self.providers.read().expect("providers lock").clone()
    }

    fn stale_before(&self) -> i64 {
        now_ms() - self.deps.config().worker.stale_after_ms as i64
    }

    /// Starts the Lark card of `run` when it belongs to a Lark conversation
    /// (before the attempt publishes anything); the handle tells the card how
    /// the attempt left the run. An error: the run's chat could not be read
    /// (see [`lark::LarkEgress::start`]).
    async fn follow_in_lark(
        &self,
        run: &RunId,
    ) -> Result<Option<lark::CardFollower>, weft_store::StoreError> {
        match &self.lark {
            Some(lark) => lark.start(&self.tasks, run).await,
            None => Ok(None),
        }
    }

    /// The background of `run`'s Lark group, when `[lark]
    /// group_context_messages` asks for one (see `lark::background`).
    pub(crate) async fn group_background(&self, run: &RunId) -> Option<String> {
        let count = self.deps.config().lark.group_context_messages;
        if count == 0 {
            return None;
        }
        self.lark.as_ref()?.background(run, count).await
    }
}

/// Refresh the lease every `heartbeat_ms`; a refused refresh stops the run.
pub(crate) async fn heartbeat(
    inner: Arc<Inner>,
    run: RunId,
    stop: Arc<RunStop>,
    seq: tokio::sync::oneshot::Receiver<Arc<AtomicU64>>,
) {
    let every = Duration::from_millis(inner.deps.config().worker.heartbeat_ms);
    let Ok(seq) = seq.await else { return };
    loop {
        tokio::time::sleep(every).await;
        let high_water = seq.load(Ordering::Relaxed);
        match inner
            .deps
            .store
            .heartbeat(&run, &inner.id, high_water)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                // Cancelled, or deleted with its session or user (its end then
                // finds the row gone and says `cancelled`): stop as for a cancel.
                let cancelled = match inner.deps.store.get_run_unscoped(&run).await {
                    Ok(r) => r.status == weft_store::RunStatus::Cancelled,
                    Err(weft_store::StoreError::NotFound) => true,
                    Err(_) => false,
                };
                stop.stop(if cancelled {
                    StopReason::Cancel
                } else {
                    StopReason::Lost
                });
                return;
            }
            Err(e) => tracing::warn!(run.id = %run, error = %e, "heartbeat failed"),
        }
    }
}

/// Cancel requests from the bus reach the run they name, if it runs here.
async fn listen_for_cancels(inner: Arc<Inner>, shutdown: CancellationToken) {
    let mut rx = inner.deps.bus.cancel_requests();
    loop {
        let run = tokio::select! {
            _ = shutdown.cancelled() => return,
            r = rx.recv() => r,
        };
        match run {
            Ok(run) => {
                if let Some(stop) = inner.running.lock().expect("running lock").get(&run) {
                    stop.stop(StopReason::Cancel);
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The built-in tools and the web tools of `cfg`.
fn builtin_tools(cfg: &Config, deps: &WorkerDeps) -> ToolRegistry {
    let mut tools = ToolRegistry::builtin();
    for tool in weft_tools::web_tools(&cfg.tools, &deps.extractor) {
        tools.add(tool);
    }
    tools.add(Arc::new(agent::UseSkill {
        store: deps.store.clone(),
        dir: cfg.skills_dir(),
    }));
    tools.add(Arc::new(agent::KnowledgeSearch {
        store: deps.store.clone(),
        live: deps.live.clone(),
        retriever: deps.retriever.clone(),
    }));
    tools.add(Arc::new(agent::Remember {
        store: deps.store.clone(),
        live: deps.live.clone(),
    }));
    tools.add(Arc::new(agent::Forget {
        store: deps.store.clone(),
    }));
    tools.add(Arc::new(agent::MemorySearch {
        store: deps.store.clone(),
        live: deps.live.clone(),
    }));
    tools.add(Arc::new(agent::TodoUpdateTool {
        store: deps.store.clone(),
    }));
    tools.add(Arc::new(agent::ScheduleCreate {
        store: deps.store.clone(),
        live: deps.live.clone(),
    }));
    tools.add(Arc::new(agent::ScheduleList {
        store: deps.store.clone(),
    }));
    tools.add(Arc::new(agent::ReadOutput {
        store: deps.store.clone(),
        blobs: deps.blobs.clone(),
        page: cfg.tools.output_cap_bytes,
    }));
    tools
}

/// A reloaded config reaches what the worker built from it: model clients,
/// tools, and the MCP servers whose settings changed (the others keep
/// running). Attempts in flight keep what they started with.
async fn follow_config(inner: Arc<Inner>, stop: CancellationToken) {
    let mut changes = inner.deps.live.subscribe();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            changed = changes.changed() => if changed.is_err() { return },
        }
        let current = changes.borrow_and_update().clone();
        match Providers::from_config(&current.models) {
            Ok(p) => *inner.providers.write().expect("providers lock") = Arc::new(p),
            Err(e) => {
                tracing::error!(error = %e, "the reloaded models could not be set up; keeping the previous ones")
            }
        }
        *inner.tools.write().expect("tools lock") = builtin_tools(&current.config, &inner.deps);
        for (server, what) in inner.mcp.reconfigure(current.config.mcp_servers.clone()) {
            if what != weft_tools::mcp::Reconfigured::Kept {
                tracing::info!(mcp.server = %server, change = ?what, "mcp server reconfigured");
            }
        }
    }
}

/// Every 5 s (and once the servers settled), this worker's view of its MCP
/// servers goes to the database, where `GET /v1/mcp` on any gateway reads it
/// (a worker that never had a server reports nothing).
async fn report_mcp(inner: Arc<Inner>, hub: Arc<weft_tools::mcp::McpHub>, stop: CancellationToken) {
    let mut settled = false;
    let mut reported = false;
    loop {
        let servers: Vec<serde_json::Value> = hub
            .status()
            .into_iter()
            .filter_map(|s| serde_json::to_value(s).ok())
            .collect();
        if reported || !servers.is_empty() {
            reported = true;
            let json = serde_json::Value::Array(servers).to_string();
            if let Err(e) = inner.deps.store.put_mcp_status(&inner.id, &json).await {
                tracing::warn!(error = %e, "reporting MCP status failed");
            }
        }
        // The first report after start-up waits only until the servers settled.
        let wait = async {
            if settled {
                tokio::time::sleep(Duration::from_secs(5)).await;
            } else {
                let _ = tokio::time::timeout(Duration::from_secs(5), hub.settled()).await;
            }
        };
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = wait => settled = true,
        }
    }
}

/// The background jobs this worker runs: one `register` per kind, each kind in
/// a file of its own under `jobs/` (see [`jobs`]).
fn job_runner(inner: &Arc<Inner>) -> jobs::JobRunner {
    let deps = &inner.deps;
    let mut runner = jobs::JobRunner::new(
        deps.store.clone(),
        inner.id.clone(),
        jobs::JobSettings::from_config(&deps.config().worker),
    );
    runner.register(jobs::Ingest {
        blobs: deps.blobs.clone(),
        extractor: deps.extractor.clone(),
        live: deps.live.clone(),
        retriever: deps.retriever.clone(),
        bus: deps.bus.clone(),
    });
    runner.register_with(
        jobs::Extract {
            inner: inner.clone(),
        },
        jobs::extract::AT_ONCE,
    );
    runner.register_with(
        jobs::Deliver::new(deps.live.clone(), deps.lark.clone()),
        jobs::deliver::AT_ONCE,
    );
    runner
}

/// The longest a starting worker waits for its MCP servers' first try before
/// it takes runs.
const MCP_SETTLE_AT_START: Duration = Duration::from_secs(20);

/// Run a worker until `shutdown`: consume jobs, reap, and on shutdown give running
/// runs `shutdown_grace_ms` to finish before releasing them to other workers.
/// `orphan_all_at_start`: in embedded mode this is the only worker, so every
/// `running` run found at start-up belongs to a dead process.
pub async fn run(
    deps: WorkerDeps,
    shutdown: CancellationToken,
    orphan_all_at_start: bool,
) -> anyhow::Result<()> {
    work(deps, shutdown, orphan_all_at_start, None).await
}

/// [`run`], with the failure points a crash test armed: the first attempt to
/// reach one stops there for good, as if its process were killed ([`failure`]).
pub async fn run_with_failures(
    deps: WorkerDeps,
    shutdown: CancellationToken,
    orphan_all_at_start: bool,
    failures: failure::FailurePoints,
) -> anyhow::Result<()> {
    work(deps, shutdown, orphan_all_at_start, Some(failures)).await
}

async fn work(
    deps: WorkerDeps,
    shutdown: CancellationToken,
    orphan_all_at_start: bool,
    failures: Option<failure::FailurePoints>,
) -> anyhow::Result<()> {
    let cfg = deps.config().clone();
    lark::check_settings(&deps.store, deps.lark.is_some()).await?;
    let providers = Providers::from_config(&cfg.effective_models())?;
    let inner = Arc::new(Inner {
        id: format!("w-{}", uuid::Uuid::now_v7()),
        providers: std::sync::RwLock::new(Arc::new(providers)),
        tools: std::sync::RwLock::new(builtin_tools(&cfg, &deps)),
        lark: deps.lark.clone().map(|sender| {
            lark::LarkEgress::new(
                sender,
                deps.store.clone(),
                deps.bus.clone(),
                shutdown.child_token(),
                lark::tenant_lang(&cfg.lark),
            )
        }),
        mcp: weft_tools::mcp::McpHub::start(cfg.mcp_servers.clone(), shutdown.child_token()),
        histories: context::history::Histories::default(),
        prompt_inputs: context::prompt::PromptInputs::default(),
        memories: agent::MemoryCopies::default(),
        failures,
        slots: Arc::new(Semaphore::new(cfg.worker.concurrency)),
        image_room: weft_shared::memory_room::MemoryRoom::new(
            cfg.attachments.worker_image_memory_bytes,
        ),
        running: Mutex::default(),
        tasks: TaskTracker::new(),
        runs: weft_runs::Runs::new(
            deps.store.clone(),
            deps.bus.clone(),
            deps.queue.clone(),
            deps.live.clone(),
        ),
        deps,
    });
    if orphan_all_at_start {
        reaper::requeue_orphans(&inner).await;
    }
    tracing::info!(worker.id = %inner.id, concurrency = cfg.worker.concurrency, "worker started");
    let consume_stop = shutdown.child_token();
    let cancels = tokio::spawn(listen_for_cancels(inner.clone(), consume_stop.clone()));
    let reaper = tokio::spawn(reaper::run(
        inner.clone(),
        consume_stop.clone(),
        orphan_all_at_start,
    ));
    let mcp_report = tokio::spawn(report_mcp(
        inner.clone(),
        inner.mcp.clone(),
        consume_stop.clone(),
    ));
    let reloads = tokio::spawn(follow_config(inner.clone(), consume_stop.clone()));
    let scheduler = tokio::spawn(scheduler::run(inner.clone(), consume_stop.clone()));
    // Runs wait for the MCP servers' first try: a run taken over from a dead
    // worker redoes its call at once, and was told "no tool named …" while
    // the servers were still starting.
    let mcp_settled = tokio::select! {
        _ = shutdown.cancelled() => true,
        settled = tokio::time::timeout(MCP_SETTLE_AT_START, inner.mcp.settled()) => settled.is_ok(),
    };
    if !mcp_settled {
        tracing::warn!(
            waited_secs = MCP_SETTLE_AT_START.as_secs(),
            "MCP servers still starting; taking runs anyway (their tools come once ready)"
        );
    }
    let background = tokio::spawn(job_runner(&inner).run(consume_stop.clone()));
    let handler: Arc<dyn JobHandler> = Arc::new(intake::Handler(inner.clone()));
    inner
        .deps
        .queue
        .consume(handler, consume_stop.clone())
        .await?;

    // Shutdown: no new claims; let running runs finish, then release the rest.
    inner.tasks.close();
    let grace = Duration::from_millis(cfg.worker.shutdown_grace_ms);
    if tokio::time::timeout(grace, inner.tasks.wait())
        .await
        .is_err()
    {
        let stops: Vec<_> = inner
            .running
            .lock()
            .expect("running lock")
            .values()
            .cloned()
            .collect();
        tracing::info!(
            runs = stops.len(),
            "shutdown grace over; releasing running runs"
        );
        for stop in stops {
            stop.stop(StopReason::Shutdown);
        }
        let _ = tokio::time::timeout(Duration::from_secs(5), inner.tasks.wait()).await;
    }
    // Background jobs in flight were released when consuming stopped.
    let _ = tokio::time::timeout(Duration::from_secs(5), background).await;
    cancels.abort();
    reaper.abort();
    mcp_report.abort();
    reloads.abort();
    scheduler.abort();
    Ok(())
}
