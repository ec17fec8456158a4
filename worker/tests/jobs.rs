//! The background job runner, in process, on both databases (the store tests'
//! harness: a fresh SQLite file or Postgres database per scenario). Kinds made
//! for the test record what they did; "a worker dies" is its runner's future
//! dropped, which stops its jobs without another write, as a SIGKILL would.

#[path = "../../store/tests/store/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use weft_shared::job::JobKind;
use weft_store::{JobState, NewJob, Store};
use weft_worker::jobs::{BackgroundJob, JobContext, JobError, JobRunner, JobSettings};

use harness::Db;

crate::both_backends!(
    a_job_whose_worker_died_on_its_last_attempt_is_given_up,
    every_job_runs_once_across_runners,
    retries_back_off_until_success_and_fail_when_told,
    a_dead_workers_job_is_taken_over_and_ends_once,
    a_cancelled_job_stops_while_it_runs,
    shutdown_releases_jobs_without_spending_attempts,
    progress_reaches_the_next_attempt,
    waiting_for_a_service_spends_no_attempts,
    a_job_runs_again_when_asked_and_a_kind_keeps_to_its_slots,
);

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Work {
    name: String,
    /// Attempts that fail with a retry before one succeeds.
    #[serde(default)]
    flaky: i64,
    /// Fails for good.
    #[serde(default)]
    broken: bool,
    /// Never finishes by itself.
    #[serde(default)]
    hangs: bool,
    #[serde(default)]
    panics_once: bool,
    /// Starts that ask to wait (a service down) before one succeeds.
    #[serde(default)]
    waits: usize,
    /// Successes that ask to run again (more work arrived meanwhile).
    #[serde(default)]
    again: usize,
    /// How long a start takes.
    #[serde(default)]
    slow_ms: u64,
}

impl JobKind for Work {
    const KIND: &'static str = "test.work";
    const MAX_ATTEMPTS: u32 = 4;
    fn key(&self) -> String {
        self.name.clone()
    }
}

fn work(name: &str) -> Work {
    Work {
        name: name.into(),
        flaky: 0,
        broken: false,
        hangs: false,
        panics_once: false,
        waits: 0,
        again: 0,
        slow_ms: 0,
    }
}

/// Starts of each job (name → attempts seen) and the ones that finished.
#[derive(Clone, Default)]
struct Log {
    started: Arc<Mutex<HashMap<String, Vec<i64>>>>,
    finished: Arc<Mutex<Vec<String>>>,
    progress_seen: Arc<Mutex<Vec<Option<String>>>>,
    /// (name, error) of each job given up.
    gave_up: Arc<Mutex<Vec<(String, String)>>>,
    /// Starts running now, and the most at once.
    running: Arc<Mutex<(usize, usize)>>,
}

struct Worker(Log);

impl BackgroundJob for Worker {
    type Payload = Work;
    async fn run(&self, cx: JobContext, w: Work) -> Result<(), JobError> {
        let starts = {
            let mut started = self.0.started.lock().unwrap();
            let seen = started.entry(w.name.clone()).or_default();
            seen.push(cx.attempt);
            seen.len()
        };
        if w.slow_ms > 0 {
            {
                let mut r = self.0.running.lock().unwrap();
                r.0 += 1;
                r.1 = r.1.max(r.0);
            }
            tokio::time::sleep(Duration::from_millis(w.slow_ms)).await;
            self.0.running.lock().unwrap().0 -= 1;
        }
        if starts <= w.again {
            cx.run_again_after(Duration::from_millis(10));
            return Ok(());
        }
        if starts <= w.waits {
            return Err(JobError::Wait(format!(
                "the service is down (start {starts})"
            )));
        }
        self.0
            .progress_seen
            .lock()
            .unwrap()
            .push(cx.resumed_from.clone());
        cx.progress(&serde_json::json!({"done": cx.attempt}));
        if w.panics_once && cx.attempt == 1 {
            panic!("a bug in the kind");
        }
        if w.hangs {
            std::future::pending::<()>().await;
        }
        if w.broken {
            return Err(JobError::Fail("unsupported input".into()));
        }
        if cx.attempt <= w.flaky {
            return Err(JobError::Retry(format!("flaky attempt {}", cx.attempt)));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.0.finished.lock().unwrap().push(w.name);
        Ok(())
    }

    async fn gave_up(&self, _store: &Store, w: Work, error: &str) {
        self.0
            .gave_up
            .lock()
            .unwrap()
            .push((w.name, error.to_owned()));
    }
}

fn settings(lease_ms: u64) -> JobSettings {
    JobSettings {
        concurrency: 3,
        lease: Duration::from_millis(lease_ms),
        poll: Duration::from_millis(20),
        backoff: Duration::from_millis(10),
        wait: Duration::from_millis(10),
    }
}

/// A runner of `Work` as `owner`, running until `stop` (or until its task is
/// aborted: the worker died).
fn start(
    store: &Store,
    owner: &str,
    lease_ms: u64,
    log: &Log,
) -> (tokio::task::JoinHandle<()>, CancellationToken) {
    start_with_slots(store, owner, lease_ms, log, None)
}

/// [`start`], the kind with `slots` of its own (none: `concurrency`'s 3).
fn start_with_slots(
    store: &Store,
    owner: &str,
    lease_ms: u64,
    log: &Log,
    slots: Option<usize>,
) -> (tokio::task::JoinHandle<()>, CancellationToken) {
    let mut runner = JobRunner::new(store.clone(), owner, settings(lease_ms));
    match slots {
        Some(n) => runner.register_with(Worker(log.clone()), n),
        None => runner.register(Worker(log.clone())),
    };
    let stop = CancellationToken::new();
    (tokio::spawn(runner.run(stop.clone())), stop)
}

async fn state_of(store: &Store, name: &str) -> JobState {
    store.job(Work::KIND, name).await.unwrap().unwrap().state
}

/// Waits (up to 10 s) until `name` is in `state`.
async fn until_state(store: &Store, name: &str, state: JobState) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = state_of(store, name).await;
        if now == state {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} stayed {now:?}, expected {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn every_job_runs_once_across_runners(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (a, stop_a) = start(s, "wa", 5_000, &log);
    let (b, stop_b) = start(s, "wb", 5_000, &log);
    for i in 0..30 {
        s.enqueue(&work(&format!("doc-{i}")), 0).await.unwrap();
    }
    // Asked again: the same work, not another job.
    s.enqueue(&work("doc-0"), 0).await.unwrap();
    for i in 0..30 {
        until_state(s, &format!("doc-{i}"), JobState::Succeeded).await;
    }
    stop_a.cancel();
    stop_b.cancel();
    a.await.unwrap();
    b.await.unwrap();
    let started = log.started.lock().unwrap().clone();
    assert_eq!(started.len(), 30);
    assert!(
        started.values().all(|attempts| attempts == &vec![1]),
        "each job ran once: {started:?}"
    );
    assert_eq!(log.finished.lock().unwrap().len(), 30);
}

async fn retries_back_off_until_success_and_fail_when_told(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (runner, stop) = start(s, "w", 5_000, &log);
    s.enqueue(
        &Work {
            flaky: 2,
            ..work("flaky")
        },
        0,
    )
    .await
    .unwrap();
    s.enqueue(
        &Work {
            broken: true,
            ..work("broken")
        },
        0,
    )
    .await
    .unwrap();
    s.enqueue(
        &Work {
            flaky: 10,
            ..work("hopeless")
        },
        0,
    )
    .await
    .unwrap();
    s.enqueue(
        &Work {
            panics_once: true,
            ..work("panics")
        },
        0,
    )
    .await
    .unwrap();
    until_state(s, "flaky", JobState::Succeeded).await;
    until_state(s, "broken", JobState::Failed).await;
    until_state(s, "hopeless", JobState::Failed).await;
    until_state(s, "panics", JobState::Succeeded).await;
    stop.cancel();
    runner.await.unwrap();
    let started = log.started.lock().unwrap().clone();
    assert_eq!(started["flaky"], vec![1, 2, 3]);
    assert_eq!(started["broken"], vec![1], "a failure is not retried");
    assert_eq!(started["hopeless"], vec![1, 2, 3, 4], "MAX_ATTEMPTS is 4");
    assert_eq!(started["panics"], vec![1, 2]);
    let hopeless = s.job(Work::KIND, "hopeless").await.unwrap().unwrap();
    assert_eq!(hopeless.error.as_deref(), Some("flaky attempt 4"));
    let broken = s.job(Work::KIND, "broken").await.unwrap().unwrap();
    assert_eq!(broken.error.as_deref(), Some("unsupported input"));
    let flaky = s.job(Work::KIND, "flaky").await.unwrap().unwrap();
    assert_eq!(flaky.error, None, "success clears the last error");
    let mut gave_up = log.gave_up.lock().unwrap().clone();
    gave_up.sort();
    assert_eq!(
        gave_up,
        [
            ("broken".to_string(), "unsupported input".to_string()),
            ("hopeless".to_string(), "flaky attempt 4".to_string())
        ],
        "each job that failed for good is given up once"
    );
}

async fn a_dead_workers_job_is_taken_over_and_ends_once(db: Db) {
    let s = &db.store;
    let log = Log::default();
    // The first worker takes the job, which hangs; then the worker dies.
    let (first, _stop) = start(s, "dies", 600, &log);
    s.enqueue(
        &Work {
            hangs: true,
            ..work("stuck")
        },
        0,
    )
    .await
    .unwrap();
    until_state(s, "stuck", JobState::Running).await;
    // Its lease is renewed while it lives (every 200 ms of a 600 ms lease).
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(
        s.job(Work::KIND, "stuck").await.unwrap().unwrap().attempt,
        1,
        "a live worker keeps its job"
    );
    first.abort();
    let _ = first.await;
    // The job still hangs on its second attempt: make the next one finish.
    let survivor = Log::default();
    let (second, stop) = start(s, "survives", 600, &survivor);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while survivor.started.lock().unwrap().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nobody took the job over"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let record = s.job(Work::KIND, "stuck").await.unwrap().unwrap();
    assert_eq!(record.lease_owner.as_deref(), Some("survives"));
    assert_eq!(record.attempt, 2);
    assert_eq!(survivor.started.lock().unwrap()["stuck"], vec![2]);
    stop.cancel();
    second.await.unwrap();
    assert_eq!(
        state_of(s, "stuck").await,
        JobState::Queued,
        "released at shutdown"
    );
    assert_eq!(log.started.lock().unwrap()["stuck"], vec![1]);
}

async fn a_job_whose_worker_died_on_its_last_attempt_is_given_up(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (first, _stop) = start(s, "dies", 300, &log);
    let payload = serde_json::to_string(&Work {
        hangs: true,
        ..work("last")
    })
    .unwrap();
    s.enqueue_job(&NewJob {
        kind: Work::KIND,
        key: "last",
        payload: &payload,
        run_after: 0,
        max_attempts: 1,
    })
    .await
    .unwrap();
    until_state(s, "last", JobState::Running).await;
    first.abort();
    let _ = first.await;
    // Another runner's sweep (at its start, then every 5 s) finds the lease
    // lapsed with no attempt left.
    let survivor = Log::default();
    let (second, stop) = start(s, "survives", 300, &survivor);
    until_state(s, "last", JobState::Failed).await;
    stop.cancel();
    second.await.unwrap();
    assert!(survivor.started.lock().unwrap().is_empty(), "not run again");
    assert_eq!(
        survivor.gave_up.lock().unwrap().clone(),
        [("last".to_string(), weft_store::LAPSED.to_string())]
    );
}

async fn a_cancelled_job_stops_while_it_runs(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (runner, stop) = start(s, "w", 300, &log);
    s.enqueue(
        &Work {
            hangs: true,
            ..work("endless")
        },
        0,
    )
    .await
    .unwrap();
    until_state(s, "endless", JobState::Running).await;
    assert!(s.cancel_job(Work::KIND, "endless").await.unwrap());
    // The next renewal (within 100 ms) is refused and the job stops; the
    // runner goes on with other work.
    for i in 0..3 {
        s.enqueue(&work(&format!("after-{i}")), 0).await.unwrap();
    }
    for i in 0..3 {
        until_state(s, &format!("after-{i}"), JobState::Succeeded).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(state_of(s, "endless").await, JobState::Cancelled);
    stop.cancel();
    runner.await.unwrap();
    assert_eq!(log.started.lock().unwrap()["endless"], vec![1]);
}

async fn shutdown_releases_jobs_without_spending_attempts(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (runner, stop) = start(s, "w", 5_000, &log);
    s.enqueue(
        &Work {
            hangs: true,
            ..work("long")
        },
        0,
    )
    .await
    .unwrap();
    until_state(s, "long", JobState::Running).await;
    stop.cancel();
    runner.await.unwrap();
    let record = s.job(Work::KIND, "long").await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.attempt, record.lease_owner),
        (JobState::Queued, 0, None)
    );
}

async fn progress_reaches_the_next_attempt(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (runner, stop) = start(s, "w", 5_000, &log);
    s.enqueue(
        &Work {
            flaky: 1,
            ..work("resumable")
        },
        0,
    )
    .await
    .unwrap();
    until_state(s, "resumable", JobState::Succeeded).await;
    stop.cancel();
    runner.await.unwrap();
    assert_eq!(
        log.progress_seen.lock().unwrap().clone(),
        vec![None, Some(r#"{"done":1}"#.to_string())]
    );
    let record = s.job(Work::KIND, "resumable").await.unwrap().unwrap();
    assert_eq!(record.progress.as_deref(), Some(r#"{"done":2}"#));
}

/// A job whose service is down waits as often as it takes — more times than
/// it has attempts — and then succeeds on its first attempt: waiting is not
/// failing.
async fn waiting_for_a_service_spends_no_attempts(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (runner, stop) = start(s, "w", 5_000, &log);
    s.enqueue(
        &Work {
            waits: 6,
            ..work("patient")
        },
        0,
    )
    .await
    .unwrap();
    until_state(s, "patient", JobState::Succeeded).await;
    stop.cancel();
    runner.await.unwrap();
    let started = log.started.lock().unwrap()["patient"].clone();
    assert_eq!(started, vec![1; 7], "every start was attempt 1");
    assert!(log.gave_up.lock().unwrap().is_empty());
}

/// A job that did its work and asks to run again is queued again, its
/// attempts back to none, and runs again; a kind registered with one slot
/// runs one job at a time though the runner has three.
async fn a_job_runs_again_when_asked_and_a_kind_keeps_to_its_slots(db: Db) {
    let s = &db.store;
    let log = Log::default();
    let (runner, stop) = start_with_slots(s, "w", 5_000, &log, Some(1));
    s.enqueue(
        &Work {
            again: 2,
            ..work("recurring")
        },
        0,
    )
    .await
    .unwrap();
    for i in 0..4 {
        s.enqueue(
            &Work {
                slow_ms: 60,
                ..work(&format!("slow-{i}"))
            },
            0,
        )
        .await
        .unwrap();
    }
    until_state(s, "recurring", JobState::Succeeded).await;
    for i in 0..4 {
        until_state(s, &format!("slow-{i}"), JobState::Succeeded).await;
    }
    stop.cancel();
    runner.await.unwrap();
    let started = log.started.lock().unwrap()["recurring"].clone();
    assert_eq!(started, vec![1; 3], "three runs, each its first attempt");
    assert_eq!(
        log.finished
            .lock()
            .unwrap()
            .iter()
            .filter(|n| *n == "recurring")
            .count(),
        1
    );
    assert_eq!(log.running.lock().unwrap().1, 1, "one at a time");
}
