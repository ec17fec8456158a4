//! The rig of the crash tests: workers as processes of their own, killed and
//! restarted on one database, below the binary.
//!
//! A [`World`] is what outlives a worker: the database (the store harness's,
//! SQLite or Postgres), the event bus and the run queue, and the run service
//! people's sends and decisions go through. A [`Worker`] is one worker process:
//! a tokio runtime of its own with its own connection pool, running
//! `weft_worker::run_with_failures`. [`Worker::kill`] shuts that runtime down
//! where it stands — the run's attempt parked at its failure point, its
//! heartbeats, its reaper and its queue consumer all dropped without another
//! poll, its lease left as it was — which is what a SIGKILL does to the
//! database; dropping one task would leave the others of its "process"
//! (the heartbeat) writing.
//!
//! The bus and the queue are the in-process ones, shared by every worker of a
//! world: they stand for Redis, which a worker's death leaves alone in the
//! distributed topology. That is the restart tested here — another worker takes
//! the run over once its lease is stale (short leases below) — and the one in
//! which a client reading the log from the start can see both attempts, so
//! "no text lost or doubled" is a claim about the log. (`weft up` restarted
//! loses its in-process log and queue with the process; that path — the
//! reaper's start-up requeue, the seq jump past a lost log — stays with the
//! binary-level tests in `cli/tests/conformance/crash.rs`.)

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use weft_config::{Config, LiveConfig};
use weft_runs::Submitted;
use weft_shared::bus::{MemoryBus, SharedBus};
use weft_shared::event::{EventKind, RunEvent};
use weft_shared::fold::RunFold;
use weft_shared::ids::RunId;
use weft_shared::queue::{MemoryQueue, SharedQueue};
use weft_store::{AuthUser, Message, RunRecord, RunStatus, SessionRecord, Store};
use weft_worker::WorkerDeps;
use weft_worker::failure::{FailurePoint, FailurePoints};

use crate::harness::{self, Db};
use crate::polling::eventually;

/// How long any one thing may take before a test gives up on it.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// What outlives a worker.
pub struct World<'db> {
    pub db: &'db Db,
    pub bus: SharedBus,
    pub queue: SharedQueue,
    pub live: LiveConfig,
    /// The run service, as the gateway uses it (on the test's own pool).
    pub runs: weft_runs::Runs,
    _data: tempfile::TempDir,
}

impl<'db> World<'db> {
    /// A world on `db` with the defaults and `tune`'s changes. Leases are
    /// short so a dead worker's run is taken over within about a second.
    pub async fn new(db: &'db Db, tune: impl FnOnce(&mut Config)) -> World<'db> {
        let data = tempfile::tempdir().unwrap();
        let mut cfg = Config {
            data_dir: Some(data.path().to_owned()),
            ..Config::default()
        };
        cfg.worker.heartbeat_ms = 100;
        cfg.worker.stale_after_ms = 1000;
        cfg.worker.requeue_after_ms = 500;
        cfg.worker.reaper_interval_ms = 100;
        cfg.worker.shutdown_grace_ms = 200;
        tune(&mut cfg);
        db.store.seed_agents(&cfg.agents).await.unwrap();
        let live = LiveConfig::fixed(cfg);
        let bus: SharedBus = Arc::new(MemoryBus::new(10_000));
        let queue: SharedQueue = Arc::new(MemoryQueue::default());
        let runs = weft_runs::Runs::new(db.store.clone(), bus.clone(), queue.clone(), live.clone());
        World {
            db,
            bus,
            queue,
            live,
            runs,
            _data: data,
        }
    }

    /// A worker that runs to the end.
    pub fn worker(&self) -> Worker {
        Worker::start(self, FailurePoints::new())
    }

    /// A worker whose first attempt to reach `point` stops there for good.
    pub fn worker_failing_at(&self, point: FailurePoint) -> Worker {
        let points = FailurePoints::new();
        points.arm(point);
        Worker::start(self, points)
    }

    pub async fn user(&self, name: &str) -> AuthUser {
        harness::user(self.db, name).await
    }

    pub async fn session(&self, owner: &AuthUser) -> SessionRecord {
        harness::session(self.db, owner).await
    }

    /// `owner` sends `text` to `session` through the run service: the run.
    pub async fn send(&self, owner: &AuthUser, session: &SessionRecord, text: &str) -> RunId {
        let msg = harness::req(&owner.id, &session.id, text).message;
        match self.runs.send(msg).await.expect("send").submitted {
            Submitted::Run { run_id, .. } => run_id,
            other => panic!("expected a run, got {other:?}"),
        }
    }

    pub fn store(&self) -> &Store {
        &self.db.store
    }

    pub async fn run(&self, run: &RunId) -> RunRecord {
        self.store().get_run_unscoped(run).await.unwrap()
    }

    /// Until `run` is in `status`.
    pub async fn until_status(&self, run: &RunId, status: RunStatus) -> RunRecord {
        eventually(DEADLINE, &format!("run {run} {status:?}"), async || {
            let r = self.run(run).await;
            if r.status == status { Ok(r) } else { Err(r) }
        })
        .await
    }

    /// The session's messages, oldest first.
    pub async fn messages(&self, owner: &AuthUser, session: &SessionRecord) -> Vec<Message> {
        let (mut page, _) = self
            .store()
            .list_messages(&owner.id, &session.id, 200, None)
            .await
            .unwrap();
        page.sort_by(|a, b| a.ord.cmp(&b.ord));
        page
    }

    /// The run's event log as a client attaching from the start reads it.
    pub async fn events(&self, run: &RunId) -> Vec<RunEvent> {
        let frames = self.bus.read(run, 0, 100_000).await.unwrap();
        frames
            .iter()
            .map(|f| f.decode().expect("a frame decodes"))
            .collect()
    }

    /// The run's log once it holds a terminal event, checked to be what a
    /// client can trust: seqs 1, 2, 3, … with none missing or repeated, and
    /// exactly one terminal event, the last.
    pub async fn ended_log(&self, run: &RunId) -> Vec<RunEvent> {
        let events = eventually(DEADLINE, "a terminal event", async || {
            let events = self.events(run).await;
            if events.iter().any(is_terminal) {
                Ok(events)
            } else {
                Err(events.len())
            }
        })
        .await;
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        let expected: Vec<u64> = (1..=events.len() as u64).collect();
        assert_eq!(seqs, expected, "the log's seqs are continuous");
        let terminal: Vec<&RunEvent> = events.iter().filter(|e| is_terminal(e)).collect();
        assert_eq!(terminal.len(), 1, "one terminal event: {terminal:?}");
        assert!(
            is_terminal(events.last().unwrap()),
            "the terminal event is the last"
        );
        events
    }
}

pub fn is_terminal(e: &RunEvent) -> bool {
    matches!(
        e.kind,
        EventKind::Done { .. } | EventKind::Error(_) | EventKind::Cancelled { .. }
    )
}

/// The events folded as every client folds them.
pub fn fold(events: &[RunEvent]) -> RunFold {
    let mut fold = RunFold::default();
    for e in events {
        fold.apply(e);
    }
    fold
}

/// The events from the `n`th `run_started` on (n from 1): one attempt's and
/// those after it.
pub fn from_attempt(events: &[RunEvent], n: usize) -> &[RunEvent] {
    let at = events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, EventKind::RunStarted { .. }))
        .nth(n - 1)
        .map(|(i, _)| i)
        .unwrap_or_else(|| panic!("no attempt {n} in {events:?}"));
    &events[at..]
}

/// `(attempt, resume_step)` of each `run_started`.
pub fn starts(events: &[RunEvent]) -> Vec<(u32, u32)> {
    events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::RunStarted {
                attempt,
                resume_step,
                ..
            } => Some((attempt, resume_step)),
            _ => None,
        })
        .collect()
}

/// Names of the tools started in `events`.
pub fn tools_started(events: &[RunEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolStart { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// The assistant's final replies (no tool calls) among `messages`.
pub fn replies(messages: &[Message]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m.role == "assistant" && m.tool_calls.is_empty())
        .map(|m| m.content.as_str())
        .collect()
}

/// One worker process (see the module doc). Dropping it kills it.
pub struct Worker {
    runtime: Option<tokio::runtime::Runtime>,
    points: FailurePoints,
}

impl Worker {
    fn start(world: &World<'_>, points: FailurePoints) -> Worker {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("crash-test-worker")
            .enable_all()
            .build()
            .unwrap();
        let cfg = world.live.get();
        let (url, bus, queue, live) = (
            world.db.url.clone(),
            world.bus.clone(),
            world.queue.clone(),
            world.live.clone(),
        );
        let blobs = weft_shared::blobs::Blobs::open(&cfg).unwrap();
        let armed = points.clone();
        runtime.spawn(async move {
            // Its own pool, made in its own runtime: killed with it.
            let store = Store::connect_with(&url, 4).await.expect("connect");
            let deps = WorkerDeps {
                retriever: weft_knowledge::Retriever::new(store.clone(), live.clone()),
                store,
                bus,
                queue,
                live,
                blobs,
                extractor: weft_files::Extractor::in_thread(weft_files::Limits::default()),
                lark: None,
            };
            let never = CancellationToken::new();
            if let Err(e) = weft_worker::run_with_failures(deps, never, false, armed).await {
                panic!("the worker failed: {e:#}");
            }
        });
        Worker {
            runtime: Some(runtime),
            points,
        }
    }

    /// Until an attempt stopped at the armed point.
    pub async fn stopped_at(&self) -> FailurePoint {
        within(
            DEADLINE,
            "the worker reaching its failure point",
            self.points.hit(),
        )
        .await
    }

    /// Kills the worker where it stands (see the module doc).
    pub fn kill(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// `fut`, or a panic naming `what` after `limit`.
pub async fn within<T>(limit: Duration, what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {limit:?}"))
}
