//! The queue payload. Deliberately tiny: the database holds the run; the job only
//! says "look at this run". Duplicate deliveries are harmless because the worker
//! claims the run by compare-and-set before doing anything.

use serde::{Deserialize, Serialize};

use crate::ids::RunId;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunJob {
    pub run_id: RunId,
    /// W3C trace context of the request that created the run, when tracing is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Unix ms when the job was enqueued (queue-wait metric).
    #[serde(default)]
    pub enqueued_at: i64,
}

impl RunJob {
    /// A job for `run_id`, stamped now (no trace context).
    pub fn new(run_id: RunId) -> RunJob {
        RunJob {
            run_id,
            traceparent: None,
            enqueued_at: crate::time::now_ms(),
        }
    }
}

/// A kind of background job (not a run): its name in the `jobs` table, its
/// payload (this type, as JSON) and what makes two requests for it the same
/// work. The store enqueues it (often in the transaction that makes the row it
/// works on); a worker's `jobs` module runs it. See `store::jobs`.
pub trait JobKind: Serialize + serde::de::DeserializeOwned + Send + Sync + 'static {
    /// The `jobs.kind` value: stable, since stored rows name it.
    const KIND: &'static str;
    /// Claims before it fails for good.
    const MAX_ATTEMPTS: u32 = 5;
    /// The dedupe key: a second request with the same key is the same job.
    fn key(&self) -> String;
}

/// Read, chunk and index a knowledge base's document (`knowledge.ingest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngestDocument {
    pub document_id: String,
}

impl JobKind for IngestDocument {
    const KIND: &'static str = "knowledge.ingest";
    const MAX_ATTEMPTS: u32 = 5;
    fn key(&self) -> String {
        self.document_id.clone()
    }
}

/// Learn from a person's finished turns in one session (`memory.extract`):
/// one job per (session, person), armed again by each turn that ends while it
/// is not queued (`store::memories`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractMemories {
    pub session_id: String,
    pub user_id: String,
    /// The session's model when the turn ended (`[memory] model` overrides it).
    pub model: String,
}

impl JobKind for ExtractMemories {
    const KIND: &'static str = "memory.extract";
    /// Each attempt is a model call: three, not five (the peers' users
    /// complain of extraction costs most).
    const MAX_ATTEMPTS: u32 = 3;
    fn key(&self) -> String {
        format!("{}/{}", self.session_id, self.user_id)
    }
}

/// Deliver one notification to one channel (`notify.deliver`): a row of
/// `deliveries`, made with the notification in the transaction that ends (or
/// suspends) a scheduled run. See `worker::jobs::deliver`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliverNotification {
    pub delivery_id: String,
}

impl JobKind for DeliverNotification {
    const KIND: &'static str = "notify.deliver";
    /// Tries over about 8.5 minutes (2 s doubling): a receiver that is down
    /// for a deploy gets it; one that stays down is marked failed, visibly.
    const MAX_ATTEMPTS: u32 = 9;
    fn key(&self) -> String {
        self.delivery_id.clone()
    }
}
