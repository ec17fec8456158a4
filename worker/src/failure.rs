//! Named failure points in the run path: where a crash test stops a worker
//! dead, so the crash semantics of runs (docs/runs.md, "Crash semantics") are
//! tested in process, in seconds, on both databases (`worker/tests/crash/`),
//! and not only by the binary-level SIGKILLs of `cli/tests/conformance/crash.rs`.
//!
//! A worker started with [`crate::run_with_failures`] carries the test's
//! [`FailurePoints`]; [`crate::run`] carries none. Each point in the run path
//! is one check of an `Option` on the worker's `Inner` (no global state, no
//! cargo feature: the production build is the tested build, and tests running
//! in parallel in one process each arm their own worker).
//!
//! An armed point does not fail anything: the attempt that reaches it parks
//! there for good and the test is told ([`FailurePoints::hit`]). That is what a
//! SIGKILL looks like from the database: the run stays `running` under a lease
//! nobody releases, no further write comes from the attempt. The test then
//! kills the rest of the worker (its runtime, and so its heartbeats, reaper and
//! queue consumer) and starts another on the same database, which takes the run
//! over when its lease goes stale. A panic or an error would not do: the worker
//! catches those and releases the run, which is a different path.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

/// Where in the run path a test may stop a worker. Each sits at a boundary
/// between what the database has and what it does not, where a crash leaves
/// something for the next attempt to get right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePoint {
    /// In `Attempt::checkpoint`, just after a step's assistant message and
    /// tool results were committed, before the attempt goes on. The next
    /// attempt must resume at the following step: nothing of the checkpointed
    /// step runs again (no tool twice), and its text stays shown once.
    AfterCheckpoint,
    /// In `finish::finish`, after the run's last words were published and
    /// before its ending transaction (`Store::finish_run`): clients saw the
    /// whole reply, the database has none of it and the run is `running`. The
    /// next attempt redoes the last step; the reply must be stored once and
    /// the stream, folded, must say it once (`run_started {resume_step}`).
    BeforeFinish,
    /// In `ToolRunner::call`, after the tool returned (its effect happened)
    /// and before anything of the call is announced or stored (no `tool_end`,
    /// no checkpoint). The step is redone and the call made again under the
    /// same idempotency key: a tool that promises so (`todo_update`) must not
    /// take effect twice.
    InToolCall,
    /// In `wait::suspend`, just after a step's waits (approvals, questions,
    /// plans, delegations) and its pending step were stored, before any of
    /// them was announced: the run is `running` under this worker's lease and
    /// no stream has heard of the waits. The next attempt must announce them
    /// (`approval_required`, `question`, `plan_proposed`, `agent_start`),
    /// not ask again (the same ids), and leave the run waiting for them.
    BeforeAnnouncingWaits,
    /// In `wait::wait`, after a step's waits (approvals, questions, plans,
    /// delegations) and its pending step were stored and announced, before
    /// the run is handed to the database as waiting (`Store::suspend_run`):
    /// the run is still `running` under this worker's lease. The next attempt
    /// must find the same waits (not ask again), leave the run waiting, and
    /// resume it once they are answered. It announces them again (it cannot
    /// tell this crash from [`FailurePoint::BeforeAnnouncingWaits`]'s): a
    /// repeat that clients fold by id, never a loss.
    WhileSuspending,
}

/// The failure points a test armed for one worker (cheap to clone: shared).
#[derive(Clone)]
pub struct FailurePoints(Arc<Armed>);

struct Armed {
    /// The points still armed; each fires once.
    points: Mutex<Vec<FailurePoint>>,
    /// The point the worker stopped at, once it did.
    hit: watch::Sender<Option<FailurePoint>>,
}

impl Default for FailurePoints {
    fn default() -> Self {
        FailurePoints(Arc::new(Armed {
            points: Mutex::new(Vec::new()),
            hit: watch::Sender::new(None),
        }))
    }
}

impl FailurePoints {
    /// None armed yet.
    pub fn new() -> FailurePoints {
        FailurePoints::default()
    }

    /// The first attempt of this worker to reach `point` stops there for good.
    pub fn arm(&self, point: FailurePoint) {
        self.0
            .points
            .lock()
            .expect("failure points lock")
            .push(point);
    }

    /// Until an attempt stopped at an armed point: which one.
    pub async fn hit(&self) -> FailurePoint {
        let mut hit = self.0.hit.subscribe();
        let seen = hit.wait_for(Option::is_some).await.expect("sender held");
        seen.expect("waited for some")
    }

    /// At `point`: park forever when it is armed (disarming it), else go on.
    pub(crate) async fn reach(&self, point: FailurePoint) {
        let fires = {
            let mut points = self.0.points.lock().expect("failure points lock");
            match points.iter().position(|p| *p == point) {
                Some(i) => {
                    points.remove(i);
                    true
                }
                None => false,
            }
        };
        if fires {
            tracing::warn!(?point, "failure point reached: this attempt stops here");
            self.0.hit.send_replace(Some(point));
            std::future::pending::<()>().await;
        }
    }
}
