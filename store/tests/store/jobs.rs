//! Background jobs: dedupe by (kind, key), the compare-and-set claim, leases
//! that lapse and are taken over, retries with their time, cancellation, jobs
//! whose worker died on every attempt, and concurrent claimers taking each job
//! once.

use std::collections::HashSet;

use weft_shared::time::now_ms;
use weft_store::{Enqueued, JobEnd, JobState, LapsedJob, NewJob, Store};

use crate::both_backends;
use crate::harness::Db;

both_backends!(
    the_same_work_is_enqueued_once,
    a_claim_takes_only_due_jobs_of_its_kinds,
    a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing,
    retries_wait_for_their_time_and_stop_at_max_attempts,
    a_cancelled_job_is_not_claimed_and_its_holder_loses_it,
    a_job_whose_worker_died_on_its_last_attempt_fails,
    a_released_job_is_claimed_again_without_spending_an_attempt,
    ended_jobs_are_purged_by_age,
    concurrent_claimers_take_each_job_once,
);

const MIN: i64 = 60_000;

fn job<'a>(kind: &'a str, key: &'a str) -> NewJob<'a> {
    NewJob {
        kind,
        key,
        payload: r#"{"n":1}"#,
        run_after: 0,
        max_attempts: 3,
    }
}

async fn enqueue(s: &Store, new: NewJob<'_>) -> Enqueued {
    s.enqueue_job(&new).await.expect("enqueue")
}

async fn the_same_work_is_enqueued_once(db: Db) {
    let s = &db.store;
    let first = enqueue(s, job("ingest", "doc-1")).await;
    assert!(first.created);
    assert_eq!(first.state, JobState::Queued);
    let again = enqueue(
        s,
        NewJob {
            payload: r#"{"n":2}"#,
            ..job("ingest", "doc-1")
        },
    )
    .await;
    assert_eq!(
        again,
        Enqueued {
            id: first.id.clone(),
            created: false,
            state: JobState::Queued
        }
    );
    // Another kind with the same key is other work.
    let other = enqueue(s, job("extract", "doc-1")).await;
    assert!(other.created);
    assert_ne!(other.id, first.id);
    // The first payload stands; a finished job still answers for its key.
    let claimed = s
        .claim_job(&["ingest"], "w1", now_ms(), now_ms() + MIN)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.payload, r#"{"n":1}"#);
    assert!(
        s.end_job(&claimed.id, "w1", 1, &JobEnd::Succeeded)
            .await
            .unwrap()
    );
    let after = enqueue(s, job("ingest", "doc-1")).await;
    assert_eq!((after.created, after.state), (false, JobState::Succeeded));
    assert_eq!(db.count("select count(*) from jobs".into()).await, 2);
    let zero = NewJob {
        max_attempts: 0,
        ..job("ingest", "doc-2")
    };
    assert!(
        s.enqueue_job(&zero).await.is_err(),
        "a job with no attempts is refused"
    );
}

async fn a_claim_takes_only_due_jobs_of_its_kinds(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(
        s,
        NewJob {
            run_after: now + 10 * MIN,
            ..job("ingest", "later")
        },
    )
    .await;
    enqueue(s, job("extract", "other-kind")).await;
    assert_eq!(s.claim_job(&[], "w1", now, now + MIN).await.unwrap(), None);
    assert_eq!(
        s.claim_job(&["ingest"], "w1", now, now + MIN)
            .await
            .unwrap(),
        None,
        "not due yet"
    );
    enqueue(s, job("ingest", "now")).await;
    let got = s
        .claim_job(&["ingest", "fire"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((got.key.as_str(), got.attempt), ("now", 1));
    assert_eq!(
        s.claim_job(&["ingest"], "w2", now, now + MIN)
            .await
            .unwrap(),
        None,
        "a live lease is nobody else's to take"
    );
    let record = s.job("ingest", "now").await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Running);
    assert_eq!(record.lease_owner.as_deref(), Some("w1"));
    assert!(
        s.end_job(&got.id, "w1", 1, &JobEnd::Succeeded)
            .await
            .unwrap()
    );
    let later = s
        .claim_job(&["ingest"], "w2", now + 11 * MIN, now + 12 * MIN)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(later.key, "later");
    assert_eq!(s.job("ingest", "missing").await.unwrap(), None);
}

async fn a_lapsed_lease_is_taken_over_and_the_old_holder_writes_nothing(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(s, job("ingest", "doc")).await;
    let first = s
        .claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    assert!(
        s.renew_job(&first.id, "w1", 1, now + 2 * MIN, Some(r#"{"chunks":3}"#))
            .await
            .unwrap()
    );
    // w1 dies; its lease runs out.
    let second = s
        .claim_job(&["ingest"], "w2", now + 3 * MIN, now + 4 * MIN)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.attempt, 2);
    assert_eq!(
        second.progress.as_deref(),
        Some(r#"{"chunks":3}"#),
        "progress is kept across attempts"
    );
    assert!(
        !s.renew_job(&first.id, "w1", 1, now + 9 * MIN, None)
            .await
            .unwrap()
    );
    assert!(
        !s.end_job(&first.id, "w1", 1, &JobEnd::Succeeded)
            .await
            .unwrap()
    );
    // The same owner with a stale attempt number is refused too.
    assert!(
        !s.end_job(&first.id, "w2", 1, &JobEnd::Succeeded)
            .await
            .unwrap()
    );
    assert_eq!(
        s.job("ingest", "doc").await.unwrap().unwrap().state,
        JobState::Running
    );
    assert!(
        s.end_job(&first.id, "w2", 2, &JobEnd::Succeeded)
            .await
            .unwrap()
    );
    let done = s.job("ingest", "doc").await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Succeeded);
    assert!(done.finished_at.is_some());
    assert_eq!(done.lease_owner, None);
}

async fn retries_wait_for_their_time_and_stop_at_max_attempts(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(
        s,
        NewJob {
            max_attempts: 2,
            ..job("ingest", "flaky")
        },
    )
    .await;
    let first = s
        .claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    let retry = JobEnd::Retry {
        retry_at: now + 5 * MIN,
        error: "provider timed out".into(),
    };
    assert!(s.end_job(&first.id, "w1", 1, &retry).await.unwrap());
    let queued = s.job("ingest", "flaky").await.unwrap().unwrap();
    assert_eq!(queued.state, JobState::Queued);
    assert_eq!(queued.run_after, now + 5 * MIN);
    assert_eq!(queued.error.as_deref(), Some("provider timed out"));
    assert_eq!(queued.finished_at, None);
    assert_eq!(
        s.claim_job(&["ingest"], "w1", now + MIN, now + 2 * MIN)
            .await
            .unwrap(),
        None,
        "a retry waits for its time"
    );
    let second = s
        .claim_job(&["ingest"], "w1", now + 5 * MIN, now + 6 * MIN)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.attempt, 2);
    let retry_again = JobEnd::Retry {
        retry_at: now + 9 * MIN,
        error: "timed out again".into(),
    };
    assert!(s.end_job(&second.id, "w1", 2, &retry_again).await.unwrap());
    let failed = s.job("ingest", "flaky").await.unwrap().unwrap();
    assert_eq!(failed.state, JobState::Failed, "no attempts were left");
    assert_eq!(failed.error.as_deref(), Some("timed out again"));
    assert!(failed.finished_at.is_some());
    assert_eq!(
        s.claim_job(&["ingest"], "w1", now + 60 * MIN, now + 61 * MIN)
            .await
            .unwrap(),
        None
    );

    enqueue(s, job("ingest", "broken")).await;
    let broken = s
        .claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    let fail = JobEnd::Failed {
        error: "unsupported type".into(),
    };
    assert!(s.end_job(&broken.id, "w1", 1, &fail).await.unwrap());
    let record = s.job("ingest", "broken").await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.error.as_deref()),
        (JobState::Failed, Some("unsupported type"))
    );
}

async fn a_cancelled_job_is_not_claimed_and_its_holder_loses_it(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(s, job("ingest", "queued")).await;
    assert!(s.cancel_job("ingest", "queued").await.unwrap());
    assert!(!s.cancel_job("ingest", "queued").await.unwrap());
    assert!(!s.cancel_job("ingest", "never").await.unwrap());
    assert_eq!(
        s.claim_job(&["ingest"], "w1", now, now + MIN)
            .await
            .unwrap(),
        None
    );

    enqueue(s, job("ingest", "running")).await;
    let held = s
        .claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    assert!(s.cancel_job("ingest", "running").await.unwrap());
    assert!(
        !s.renew_job(&held.id, "w1", 1, now + 2 * MIN, None)
            .await
            .unwrap(),
        "the holder learns at its next renewal"
    );
    assert!(
        !s.end_job(&held.id, "w1", 1, &JobEnd::Succeeded)
            .await
            .unwrap()
    );
    assert_eq!(
        s.job("ingest", "running").await.unwrap().unwrap().state,
        JobState::Cancelled
    );
}

async fn a_job_whose_worker_died_on_its_last_attempt_fails(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(
        s,
        NewJob {
            max_attempts: 1,
            ..job("ingest", "fragile")
        },
    )
    .await;
    s.claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    assert!(
        s.fail_lapsed_jobs(&["ingest"], now)
            .await
            .unwrap()
            .is_empty(),
        "the lease lives"
    );
    assert_eq!(
        s.claim_job(&["ingest"], "w2", now + 2 * MIN, now + 3 * MIN)
            .await
            .unwrap(),
        None,
        "no attempt is left to take over"
    );
    assert!(
        s.fail_lapsed_jobs(&["extract"], now + 2 * MIN)
            .await
            .unwrap()
            .is_empty(),
        "only the kinds asked for"
    );
    let lapsed = s
        .fail_lapsed_jobs(&["ingest"], now + 2 * MIN)
        .await
        .unwrap();
    assert_eq!(
        lapsed,
        [LapsedJob {
            kind: "ingest".into(),
            key: "fragile".into(),
            payload: r#"{"n":1}"#.into()
        }]
    );
    let record = s.job("ingest", "fragile").await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Failed);
    assert!(record.error.unwrap().contains("stopped"));
}

async fn a_released_job_is_claimed_again_without_spending_an_attempt(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(
        s,
        NewJob {
            max_attempts: 1,
            ..job("ingest", "doc")
        },
    )
    .await;
    let held = s
        .claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    assert!(
        s.end_job(&held.id, "w1", 1, &JobEnd::Released)
            .await
            .unwrap()
    );
    let again = s
        .claim_job(&["ingest"], "w2", now_ms(), now_ms() + MIN)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.attempt, 1, "a shutdown is not an attempt");
}

async fn ended_jobs_are_purged_by_age(db: Db) {
    let s = &db.store;
    let now = now_ms();
    enqueue(s, job("ingest", "done")).await;
    enqueue(s, job("ingest", "waiting")).await;
    let done = s
        .claim_job(&["ingest"], "w1", now, now + MIN)
        .await
        .unwrap()
        .unwrap();
    s.end_job(&done.id, "w1", 1, &JobEnd::Succeeded)
        .await
        .unwrap();
    assert_eq!(s.purge_ended_jobs(now - MIN).await.unwrap(), 0);
    assert_eq!(s.purge_ended_jobs(now_ms() + 1).await.unwrap(), 1);
    assert_eq!(s.job("ingest", done.key.as_str()).await.unwrap(), None);
    assert!(
        s.job("ingest", "waiting").await.unwrap().is_some(),
        "unfinished jobs stay"
    );
}

async fn concurrent_claimers_take_each_job_once(db: Db) {
    let s = &db.store;
    const JOBS: usize = 40;
    for i in 0..JOBS {
        enqueue(s, job("ingest", &format!("doc-{i}"))).await;
    }
    let claimers = (0..8).map(|w| {
        let s = s.clone();
        tokio::spawn(async move {
            let owner = format!("w{w}");
            let mut got = Vec::new();
            while let Some(job) = s
                .claim_job(&["ingest"], &owner, now_ms(), now_ms() + MIN)
                .await
                .expect("claim")
            {
                got.push(job.key);
            }
            got
        })
    });
    let mut all = Vec::new();
    for claimer in claimers {
        all.extend(claimer.await.unwrap());
    }
    let distinct: HashSet<_> = all.iter().collect();
    assert_eq!(all.len(), JOBS, "every job claimed once: {all:?}");
    assert_eq!(distinct.len(), JOBS);
}
