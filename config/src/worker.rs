//! `[worker]` and `[events]`: how runs execute and how long their logs live.

use serde::{Deserialize, Serialize};

/// How workers execute runs (`[worker]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkerConfig {
    /// Runs one worker process executes at once.
    pub concurrency: usize,
    /// How often a running run's heartbeat is refreshed.
    pub heartbeat_ms: u64,
    /// A running run whose heartbeat is older than this is presumed orphaned.
    pub stale_after_ms: u64,
    /// A queued run not claimed for this long is enqueued again (lost job).
    pub requeue_after_ms: u64,
    /// How often the reaper looks for orphaned and lost runs.
    pub reaper_interval_ms: u64,
    /// How often the reaper purges expired login tokens and idempotency keys
    /// older than `limits.idempotency_key_retention_secs`.
    pub purge_interval_ms: u64,
    /// Attempts before a run fails for good.
    pub max_attempts: u32,
    /// Text/thinking deltas are coalesced for this long before publishing (0 = off).
    pub coalesce_ms: u64,
    /// LLM calls per run before it stops.
    pub max_steps: u32,
    /// Longest one attempt may execute (seconds; time waiting for approval is
    /// not counted): past it the run fails with `max_duration`.
    pub max_run_secs: u64,
    /// On shutdown, running runs get this long to finish before they are released.
    pub shutdown_grace_ms: u64,
    /// Background jobs (ingestion, extraction, deliveries) one worker process
    /// runs at once, beside its runs.
    pub job_concurrency: usize,
    /// A background job's lease: renewed every third of it while the job runs;
    /// a worker that dies leaves it to another once it runs out.
    pub job_lease_ms: u64,
    /// How often an idle worker looks for due background jobs (a job enqueued
    /// in the same process starts at once).
    pub job_poll_ms: u64,
    /// How long a background job waits for a service that is down (an
    /// embedding provider) before it tries again; such waits spend no attempt.
    pub job_wait_ms: u64,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            concurrency: 256,
            heartbeat_ms: 10_000,
            stale_after_ms: 30_000,
            requeue_after_ms: 15_000,
            reaper_interval_ms: 5_000,
            purge_interval_ms: 60_000,
            max_attempts: 3,
            coalesce_ms: 25,
            max_steps: 25,
            max_run_secs: 3600,
            shutdown_grace_ms: 10_000,
            job_concurrency: 4,
            job_lease_ms: 30_000,
            job_poll_ms: 1_000,
            job_wait_ms: 30_000,
        }
    }
}

/// Run event log (`[events]`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct EventsConfig {
    /// How long a run's event log is kept after the run ends.
    pub retention_secs: u64,
    /// Upper bound of events kept per run.
    pub max_len: u64,
    /// Bytes of events one run may publish (per attempt); past it the run fails
    /// with `event_log_full`, keeping the text so far. Bounds one reply's share of
    /// Redis or memory, whatever the model (or `@mock.tokens`) produces.
    pub max_bytes_per_run: u64,
    /// Embedded mode: bytes all event logs in memory may take together. Past it
    /// the logs of finished runs are dropped first (oldest first), then the
    /// oldest running ones; their clients read the messages instead.
    pub memory_budget_bytes: u64,
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            retention_secs: 24 * 3600,
            max_len: 100_000,
            max_bytes_per_run: 8 << 20,
            memory_budget_bytes: 256 << 20,
        }
    }
}

/// Long conversations (`[context]`): when the history would pass
/// `threshold_percent` of the model's window, older turns are summarised (once;
/// the summary is stored and reused) and the most recent ones stay verbatim.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextConfig {
    pub threshold_percent: u32,
    /// How much of the window the verbatim recent turns may take after a summary.
    pub recent_percent: u32,
    /// The model that writes summaries (default: the run's own model).
    pub summariser_model: Option<String>,
    /// Tool outputs of earlier runs shrink to this many characters in the
    /// model's view (the stored messages keep them whole).
    pub old_tool_output_chars: usize,
    /// The most messages one run reads after the summary.
    pub max_messages: usize,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            threshold_percent: 75,
            recent_percent: 35,
            summariser_model: None,
            old_tool_output_chars: 600,
            max_messages: 1000,
        }
    }
}
