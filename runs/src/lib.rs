//! weft-runs: the run service. Sending a message, cancelling a run, deciding an
//! approval and ending runs that no worker holds happen here and nowhere else,
//! whichever front door asked: the HTTP API, the Lark bot, and (for scheduled
//! runs) workers. Each front door checks who may do what in its own terms,
//! then calls [`Runs`], and turns a [`Refusal`] into its own answer.
//!
//! Rule: only the gateway knows HTTP status codes. This crate speaks in domain
//! outcomes (`Refusal::RunActive`, `Refusal::RateLimited { retry_after_secs }`,
//! the store's `CancelOutcome` and `DecideOutcome`); the gateway maps them to
//! its error envelope in one place (`gateway/src/error.rs`), the Lark bot to
//! cards and toasts.
//!
//! Why a crate and not a gateway module: before it, the send path lived in the
//! gateway and handed `ApiError`s to the Lark bot, and "cancel", "decide" and
//! "announce the end of a run nobody will end" were written two or three times
//! (HTTP, Lark cards, Lark commands). A scheduler in a worker could not reach the
//! send path at all. The service owns only handles (store, bus, queue, config),
//! so any process can build one.

mod control;
mod refusal;
mod schedules;
mod send;

use weft_config::LiveConfig;
use weft_shared::bus::SharedBus;
use weft_shared::ids::RunId;
use weft_shared::job::RunJob;
use weft_shared::queue::SharedQueue;
use weft_store::Store;

pub use control::terminal_event;
pub use refusal::Refusal;
pub use send::{Sent, Submitted};

/// The run service: cheap to clone (handles only).
#[derive(Clone)]
pub struct Runs {
    store: Store,
    bus: SharedBus,
    queue: SharedQueue,
    live: LiveConfig,
}

impl Runs {
    pub fn new(store: Store, bus: SharedBus, queue: SharedQueue, live: LiveConfig) -> Runs {
        Runs {
            store,
            bus,
            queue,
            live,
        }
    }

    /// Enqueue a new run's job. A failure is not fatal: the run is queued in the
    /// database and the reaper enqueues it again.
    pub async fn enqueue(&self, run_id: RunId) {
        metrics::counter!("weft_runs_created_total").increment(1);
        self.push(run_id).await;
    }

    /// Enqueue an existing run again (a decided approval): no new run is counted.
    pub async fn requeue(&self, run_id: RunId) {
        self.push(run_id).await;
    }

    /// The job carries the current request's trace context: the worker continues
    /// the run's trace (stored with the run) and links the request that moved it.
    async fn push(&self, run_id: RunId) {
        let job = RunJob {
            traceparent: weft_shared::telemetry::current_traceparent(),
            ..RunJob::new(run_id.clone())
        };
        if let Err(e) = self.queue.enqueue(job).await {
            tracing::warn!(run.id = %run_id, error = %e, "enqueue failed; the reaper will enqueue the run");
        }
    }
}
