//! Background jobs: durable work that is not a run (a document's ingestion, a
//! memory extraction, a schedule's delivery), in one shape. The table, the
//! claim and the lease rules are `store::jobs`; this module runs them.
//!
//! A kind is a payload type ([`JobKind`], in `wire::job`, so the store can
//! enqueue it in the transaction that makes the row it works on) and a
//! [`BackgroundJob`] here that does the work, one file per kind. Registering it
//! with the [`JobRunner`] is all a new kind needs.
//!
//! The runner in each worker process claims due jobs of its kinds (at most
//! `worker.job_concurrency` of each kind at once, or the kind's own number:
//! [`JobRunner::register_with`]), renews each one's lease every third of
//! `worker.job_lease_ms`, and ends it by what the kind returned:
//!
//! - `Ok` → `succeeded`; or, when the kind asked for it
//!   ([`JobContext::run_again_after`]), queued again for later with its
//!   attempts back to none;
//! - [`JobError::Retry`] → queued again after a backoff (2 s, 4 s, 8 s …
//!   capped at 10 min) until the kind's attempts are spent, then `failed`;
//!   a panic counts as a retry;
//! - [`JobError::Fail`] → `failed` with the message, at once;
//! - [`JobError::Wait`] → queued again after `worker.job_wait_ms` (30 s) without spending an
//!   attempt: something it needs is down (an embedding provider), and an
//!   outage of any length should not fail the work.
//!
//! A job that fails for good — so, or after its last retry, or because its
//! worker died during every attempt (each runner sweeps for those every 5 s) —
//! is handed to its kind's [`BackgroundJob::gave_up`], once, to mark the row it
//! works on.
//!
//! A kind must be safe to run again from the start or from its last
//! [`JobContext::progress`]: a worker that dies mid-job leaves the lease to run
//! out, and another worker takes the job over with `attempt + 1`. A renewal
//! that is refused (the job was cancelled, or taken over after a stall) stops
//! the job at once (its future is dropped) and nothing more is written for it.
//! On shutdown, jobs in flight are released: queued again at once, without
//! spending an attempt.
//!
//! Progress is written with the lease renewal, never per item: a kind sets its
//! latest progress as often as it likes and the database sees at most one write
//! per renewal.

pub mod deliver;
pub mod extract;
mod ingest;

pub use deliver::Deliver;
pub use extract::Extract;
pub use ingest::Ingest;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use weft_config::WorkerConfig;
use weft_shared::job::JobKind;
use weft_shared::time::now_ms;
use weft_store::{ClaimedJob, JobEnd, Store};

/// How often a runner fails the jobs whose worker died on their last attempt.
const LAPSED_SWEEP: Duration = Duration::from_secs(5);

/// Why an attempt did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Worth trying again later (a provider outage, a database error).
    Retry(String),
    /// No retry can fix it (an unreadable file, a deleted target).
    Fail(String),
    /// A service it needs is down: try again later without counting this
    /// attempt (see the module doc).
    Wait(String),
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::Retry(e) | JobError::Fail(e) | JobError::Wait(e) => f.write_str(e),
        }
    }
}

/// The code of one kind of job.
pub trait BackgroundJob: Send + Sync + 'static {
    type Payload: JobKind;
    /// Does the work of `payload`. It may be stopped at any await (the job was
    /// cancelled or its lease lost), and may have run before (see the module doc).
    fn run(
        &self,
        cx: JobContext,
        payload: Self::Payload,
    ) -> impl Future<Output = Result<(), JobError>> + Send;

    /// The job failed for good: [`JobError::Fail`], a retry with no attempts
    /// left, or a worker that died during every attempt. The row the job
    /// works on says so here (a document's `failed`, say); called once.
    fn gave_up(
        &self,
        store: &Store,
        payload: Self::Payload,
        error: &str,
    ) -> impl Future<Output = ()> + Send {
        let _ = (store, payload, error);
        async {}
    }
}

/// What a running job knows about itself.
#[derive(Clone)]
pub struct JobContext {
    pub store: Store,
    pub id: String,
    pub key: String,
    /// 1 on the first claim.
    pub attempt: i64,
    /// The last attempt is `max_attempts`: a retry asked for then is a failure.
    pub max_attempts: i64,
    /// The progress the previous attempt stored, if any (to resume from).
    pub resumed_from: Option<String>,
    progress: Arc<Mutex<Option<String>>>,
    again: Arc<Mutex<Option<Duration>>>,
}

impl JobContext {
    /// Records how far the job got (JSON); stored with the next lease renewal
    /// and when the attempt ends.
    pub fn progress(&self, progress: &impl serde::Serialize) {
        if let Ok(json) = serde_json::to_string(progress) {
            *self.progress.lock().expect("progress lock") = Some(json);
        }
    }

    /// The job did its work, and more of it arrived meanwhile: once it
    /// returns `Ok`, it is queued again to run `after` from now, its
    /// attempts back to none (a recurring kind: `memory.extract`).
    pub fn run_again_after(&self, after: Duration) {
        *self.again.lock().expect("again lock") = Some(after);
    }

    fn take_progress(&self) -> Option<String> {
        self.progress.lock().expect("progress lock").take()
    }
}

type JobFuture = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;

/// A registered kind with its payload type erased.
trait Kind: Send + Sync {
    fn start(self: Arc<Self>, cx: JobContext, payload: &str) -> JobFuture;
    fn gave_up(
        self: Arc<Self>,
        store: Store,
        payload: String,
        error: String,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

impl<J: BackgroundJob> Kind for J {
    fn start(self: Arc<Self>, cx: JobContext, payload: &str) -> JobFuture {
        match serde_json::from_str::<J::Payload>(payload) {
            Ok(payload) => Box::pin(async move { self.run(cx, payload).await }),
            Err(e) => {
                let error = format!("the stored {} payload is unreadable: {e}", J::Payload::KIND);
                Box::pin(std::future::ready(Err(JobError::Fail(error))))
            }
        }
    }

    fn gave_up(
        self: Arc<Self>,
        store: Store,
        payload: String,
        error: String,
    ) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move {
            if let Ok(payload) = serde_json::from_str::<J::Payload>(&payload) {
                BackgroundJob::gave_up(&*self, &store, payload, &error).await;
            }
        })
    }
}

/// How a runner claims and holds jobs (from `[worker]`).
#[derive(Debug, Clone, Copy)]
pub struct JobSettings {
    pub concurrency: usize,
    pub lease: Duration,
    pub poll: Duration,
    /// The first retry's delay; each next one doubles, up to 10 minutes.
    pub backoff: Duration,
    /// How long a job that asked to wait ([`JobError::Wait`]) stays queued.
    pub wait: Duration,
}

impl JobSettings {
    pub fn from_config(worker: &WorkerConfig) -> JobSettings {
        JobSettings {
            concurrency: worker.job_concurrency,
            lease: Duration::from_millis(worker.job_lease_ms),
            poll: Duration::from_millis(worker.job_poll_ms),
            backoff: Duration::from_secs(2),
            wait: Duration::from_millis(worker.job_wait_ms.max(1)),
        }
    }

    /// When attempt `attempt` (1, 2, …) that asked for a retry runs again.
    fn retry_at(&self, attempt: i64) -> i64 {
        const MAX: Duration = Duration::from_secs(600);
        let doublings = attempt.clamp(1, 20) as u32 - 1;
        let delay = self.backoff.saturating_mul(1 << doublings).min(MAX);
        now_ms() + delay.as_millis() as i64
    }
}

/// Claims and runs the jobs of the kinds registered with it.
pub struct JobRunner {
    store: Store,
    owner: String,
    settings: JobSettings,
    kinds: HashMap<&'static str, Registered>,
}

/// A kind's code and its slots: how many of its jobs run at once.
struct Registered {
    kind: Arc<dyn Kind>,
    slots: Arc<Semaphore>,
}

impl JobRunner {
    /// A runner holding leases as `owner` (unique per process).
    pub fn new(store: Store, owner: impl Into<String>, settings: JobSettings) -> JobRunner {
        JobRunner {
            store,
            owner: owner.into(),
            settings,
            kinds: HashMap::new(),
        }
    }

    /// Runs jobs of `job`'s kind from now on, `worker.job_concurrency` of
    /// them at once.
    pub fn register<J: BackgroundJob>(&mut self, job: J) -> &mut Self {
        let at_once = self.settings.concurrency;
        self.register_with(job, at_once)
    }

    /// [`JobRunner::register`] with slots of its own: a kind whose jobs
    /// mostly wait (on a model) runs more at once than one that parses.
    pub fn register_with<J: BackgroundJob>(&mut self, job: J, at_once: usize) -> &mut Self {
        self.kinds.insert(
            J::Payload::KIND,
            Registered {
                kind: Arc::new(job),
                slots: Arc::new(Semaphore::new(at_once.max(1))),
            },
        );
        self
    }

    /// Claims and runs jobs until `stop`; then releases the ones in flight.
    /// Dropping this future (as a process that dies would) stops every job it
    /// runs at once, renewing and writing nothing more.
    pub async fn run(self, stop: CancellationToken) {
        let kinds: Vec<&'static str> = self.kinds.keys().copied().collect();
        if kinds.is_empty() {
            return;
        }
        tracing::info!(kinds = ?kinds, owner = %self.owner, "background jobs started");
        let this = Arc::new(self);
        // A job ending frees a slot: the loop looks for its kind's work again.
        let freed = Arc::new(Notify::new());
        let mut running = JoinSet::new();
        let mut next_sweep = tokio::time::Instant::now();
        loop {
            while running.try_join_next().is_some() {}
            if tokio::time::Instant::now() >= next_sweep {
                next_sweep = tokio::time::Instant::now() + LAPSED_SWEEP;
                this.fail_lapsed(&kinds).await;
            }
            // Only kinds with a free slot are claimed.
            let open: Vec<&'static str> = kinds
                .iter()
                .copied()
                .filter(|k| this.kinds[k].slots.available_permits() > 0)
                .collect();
            if open.is_empty() {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = freed.notified() => {}
                }
                continue;
            }
            let now = now_ms();
            let lease_until = now + this.settings.lease.as_millis() as i64;
            match this
                .store
                .claim_job(&open, &this.owner, now, lease_until)
                .await
            {
                Ok(Some(job)) => {
                    let lag = (now - job.run_after).max(0) as f64 / 1000.0;
                    metrics::histogram!("weft_jobs_lag_seconds", "kind" => job.kind.clone())
                        .record(lag);
                    // This loop alone takes slots: the one seen free is still free.
                    let Some(permit) = this
                        .kinds
                        .get(job.kind.as_str())
                        .and_then(|r| r.slots.clone().try_acquire_owned().ok())
                    else {
                        continue;
                    };
                    let (this, stop, freed) = (this.clone(), stop.clone(), freed.clone());
                    running.spawn(async move {
                        this.execute(job, stop).await;
                        drop(permit);
                        freed.notify_one();
                    });
                    continue;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "claiming a background job failed"),
            }
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = this.store.jobs_enqueued().notified() => {}
                _ = freed.notified() => {}
                _ = tokio::time::sleep(this.settings.poll) => {}
            }
        }
        // Jobs in flight saw `stop` too: each releases its job and returns.
        while running.join_next().await.is_some() {}
    }

    /// Fails the jobs whose worker died during their last attempt and tells
    /// their kinds.
    async fn fail_lapsed(&self, kinds: &[&'static str]) {
        let lapsed = match self.store.fail_lapsed_jobs(kinds, now_ms()).await {
            Ok(lapsed) => lapsed,
            Err(e) => return tracing::warn!(error = %e, "failing lapsed background jobs failed"),
        };
        for job in lapsed {
            tracing::warn!(job.kind = %job.kind, job.key = %job.key, "background job failed: its worker stopped during every attempt");
            metrics::counter!("weft_jobs_ended_total", "kind" => job.kind.clone(), "outcome" => "failed").increment(1);
            if let Some(kind) = self.kinds.get(job.kind.as_str()).map(|r| r.kind.clone()) {
                kind.gave_up(
                    self.store.clone(),
                    job.payload,
                    weft_store::LAPSED.to_owned(),
                )
                .await;
            }
        }
    }

    /// One attempt of `job`: run its kind beside the lease renewals, then end it.
    async fn execute(&self, job: ClaimedJob, stop: CancellationToken) {
        let Some(kind) = self.kinds.get(job.kind.as_str()).map(|r| r.kind.clone()) else {
            return;
        };
        let cx = JobContext {
            store: self.store.clone(),
            id: job.id.clone(),
            key: job.key.clone(),
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            resumed_from: job.progress.clone(),
            progress: Arc::default(),
            again: Arc::default(),
        };
        let span = tracing::info_span!("job", job.kind = %job.kind, job.key = %job.key, job.attempt = job.attempt);
        // Its own task, so a panic ends only this attempt; aborted when this
        // future is dropped.
        let mut work = AbortOnDrop(tokio::spawn(kind.clone().start(cx.clone(), &job.payload)));
        let every = self.settings.lease / 3;
        let mut renewals = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let result = loop {
            tokio::select! {
                done = &mut work.0 => break done,
                _ = stop.cancelled() => {
                    work.0.abort();
                    self.end(&job, &cx, JobEnd::Released).await;
                    return;
                }
                _ = renewals.tick() => {
                    let lease_until = now_ms() + self.settings.lease.as_millis() as i64;
                    let progress = cx.take_progress();
                    match self.store.renew_job(&job.id, &self.owner, job.attempt, lease_until, progress.as_deref()).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::info!(parent: &span, "background job cancelled or taken over; stopping it");
                            work.0.abort();
                            metrics::counter!("weft_jobs_ended_total", "kind" => job.kind.clone(), "outcome" => "lost").increment(1);
                            return;
                        }
                        Err(e) => tracing::warn!(parent: &span, error = %e, "renewing a background job's lease failed"),
                    }
                }
            }
        };
        let again = *cx.again.lock().expect("again lock");
        let end = match result {
            Ok(Ok(())) => match again {
                Some(after) => JobEnd::Again {
                    run_after: now_ms() + after.as_millis() as i64,
                },
                None => JobEnd::Succeeded,
            },
            Ok(Err(JobError::Fail(error))) => JobEnd::Failed { error },
            Ok(Err(JobError::Wait(error))) => JobEnd::Postponed {
                retry_at: now_ms() + self.settings.wait.as_millis() as i64,
                error,
            },
            Ok(Err(JobError::Retry(error))) => JobEnd::Retry {
                retry_at: self.settings.retry_at(job.attempt),
                error,
            },
            Err(e) => JobEnd::Retry {
                retry_at: self.settings.retry_at(job.attempt),
                error: format!("the job stopped unexpectedly: {e}"),
            },
        };
        match &end {
            JobEnd::Succeeded | JobEnd::Again { .. } => {}
            JobEnd::Failed { error } | JobEnd::Retry { error, .. } => {
                tracing::warn!(parent: &span, error = %error, retry = matches!(end, JobEnd::Retry { .. }), "background job attempt failed")
            }
            JobEnd::Postponed { error, .. } => {
                tracing::warn!(parent: &span, error = %error, "background job waits for a service")
            }
            JobEnd::Released => {}
        }
        let given_up = match &end {
            JobEnd::Failed { error } => Some(error.clone()),
            JobEnd::Retry { error, .. } if job.attempt >= job.max_attempts => Some(error.clone()),
            _ => None,
        };
        if self.end(&job, &cx, end).await
            && let Some(error) = given_up
        {
            kind.gave_up(self.store.clone(), job.payload.clone(), error)
                .await;
        }
    }

    /// Ends the attempt; true when it was still this runner's to end.
    async fn end(&self, job: &ClaimedJob, cx: &JobContext, end: JobEnd) -> bool {
        let outcome = match &end {
            JobEnd::Succeeded => "succeeded",
            JobEnd::Again { .. } => "again",
            JobEnd::Retry { .. } => "retry",
            JobEnd::Failed { .. } => "failed",
            JobEnd::Released => "released",
            JobEnd::Postponed { .. } => "postponed",
        };
        let store = &self.store;
        let ended = weft_store::retrying("ending a background job", || async {
            if let Some(progress) = cx.take_progress() {
                let lease_until = now_ms() + self.settings.lease.as_millis() as i64;
                store
                    .renew_job(
                        &job.id,
                        &self.owner,
                        job.attempt,
                        lease_until,
                        Some(&progress),
                    )
                    .await?;
            }
            store.end_job(&job.id, &self.owner, job.attempt, &end).await
        })
        .await;
        match ended {
            Ok(true) => {
                metrics::counter!("weft_jobs_ended_total", "kind" => job.kind.clone(), "outcome" => outcome).increment(1);
                true
            }
            Ok(false) => {
                metrics::counter!("weft_jobs_ended_total", "kind" => job.kind.clone(), "outcome" => "lost").increment(1);
                false
            }
            // The lease runs out and another worker takes the job over.
            Err(e) => {
                tracing::warn!(job.kind = %job.kind, job.key = %job.key, error = %e, "ending a background job failed");
                false
            }
        }
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
