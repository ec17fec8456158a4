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
