//! The reaper's queries: runs whose worker died (stale heartbeat), queued runs
//! whose job was lost, and messages stranded behind a run that ended without
//! its worker.

use weft_shared::time::now_ms;
use weft_store::{RunLimits, RunStatus, SendOutcome};

use crate::both_backends;
use crate::harness::{Db, claim, every_lease_stale, req, session, start, user};

both_backends!(
    stale_running_runs_are_reaped,
    lost_queued_jobs_are_requeued_once,
    stranded_messages_get_their_run,
    parallel_reapers_make_one_followup,
);

const NONE_STALE: i64 = 0;

async fn stale_running_runs_are_reaped(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let a = session(&db, &alice).await;
    let b = session(&db, &alice).await;
    let c = session(&db, &alice).await;
    let running = start(&db, &alice.id, &a.id, "one").await.run_id;
    let finished = start(&db, &alice.id, &b.id, "two").await.run_id;
    let queued = start(&db, &alice.id, &c.id, "three").await.run_id;
    claim(&db, &running, "w1").await;
    let done = claim(&db, &finished, "w1").await;
    s.finish_run(
        &done,
        "w1",
        &weft_store::RunEnd::Succeeded {
            content: "ok".into(),
            step: 1,
            citations: Vec::new(),
            reasoning: Vec::new(),
        },
        Default::default(),
        None,
        &RunLimits::unlimited(),
    )
    .await
    .unwrap();

    let unlimited = RunLimits::unlimited();
    // Fresh leases and fresh jobs: nothing to do.
    assert!(
        s.reap(NONE_STALE, NONE_STALE, &unlimited)
            .await
            .unwrap()
            .is_empty()
    );
    // Heartbeats older than the cut: the running run only (not the ended one,
    // and the queued one is no lease).
    let reaped = s
        .reap(every_lease_stale(), NONE_STALE, &unlimited)
        .await
        .unwrap();
    assert_eq!(reaped, std::slice::from_ref(&running));
    // The reaper does not change the run: the next claim takes it over.
    assert_eq!(
        s.get_run(&alice.id, &running).await.unwrap().status,
        RunStatus::Running
    );
    assert_eq!(
        s.get_run(&alice.id, &queued).await.unwrap().status,
        RunStatus::Queued
    );
}

async fn lost_queued_jobs_are_requeued_once(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let a = session(&db, &alice).await;
    let b = session(&db, &alice).await;
    let old = start(&db, &alice.id, &a.id, "old").await.run_id;
    let fresh = start(&db, &alice.id, &b.id, "fresh").await.run_id;
    db.exec(format!(
        "update runs set enqueued_at = 1000 where id = '{old}'"
    ))
    .await;
    let unlimited = RunLimits::unlimited();
    let reaped = s.reap(NONE_STALE, 2_000, &unlimited).await.unwrap();
    assert_eq!(reaped, std::slice::from_ref(&old));
    // Re-enqueued now: the next pass leaves it alone until it is late again.
    let enqueued_at = db
        .count(format!("select enqueued_at from runs where id = '{old}'"))
        .await;
    assert!(enqueued_at > 2_000, "{enqueued_at}");
    assert!(
        s.reap(NONE_STALE, 2_000, &unlimited)
            .await
            .unwrap()
            .is_empty()
    );
    // Every queued run is late for a cut in the future.
    let mut late = s
        .reap(NONE_STALE, now_ms() + 60_000, &unlimited)
        .await
        .unwrap();
    late.sort();
    let mut both = vec![old, fresh];
    both.sort();
    assert_eq!(late, both);
}

async fn stranded_messages_get_their_run(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let sess = session(&db, &alice).await;
    let run = start(&db, &alice.id, &sess.id, "one").await.run_id;
    claim(&db, &run, "dead-worker").await;
    let waiting = s
        .send_message(&req(&alice.id, &sess.id, "two"))
        .await
        .unwrap();
    let SendOutcome::Queued {
        message_id: waiting,
        ..
    } = waiting
    else {
        panic!("{waiting:?}");
    };
    // Cancelled while running: its worker would start the follow-up, but it died.
    s.cancel_run(&alice.id, &run, "user", &RunLimits::unlimited())
        .await
        .unwrap();
    let unlimited = RunLimits::unlimited();
    // Messages younger than the cut wait for their worker a little longer.
    assert!(
        s.reap(NONE_STALE, NONE_STALE, &unlimited)
            .await
            .unwrap()
            .is_empty()
    );
    let reaped = s
        .reap(NONE_STALE, now_ms() + 60_000, &unlimited)
        .await
        .unwrap();
    assert_eq!(reaped.len(), 1, "{reaped:?}");
    let next = &reaped[0];
    assert_ne!(next, &run);
    let rec = s.get_run(&alice.id, next).await.unwrap();
    assert_eq!((rec.status, &rec.session_id), (RunStatus::Queued, &sess.id));
    assert_eq!(
        s.get_message(&waiting)
            .await
            .unwrap()
            .unwrap()
            .run_id
            .as_ref(),
        Some(next)
    );
    // Once: the next pass finds the new run (a late queued job), no second follow-up.
    let again = s
        .reap(NONE_STALE, now_ms() + 60_000, &unlimited)
        .await
        .unwrap();
    assert_eq!(&again, &reaped);
    assert_eq!(
        db.count(format!(
            "select count(*) from runs where session_id = '{}'",
            sess.id
        ))
        .await,
        2
    );
}

/// Every worker runs a reaper, so several may find the same stranded messages
/// at once: each pass must succeed, and the messages get exactly one run.
async fn parallel_reapers_make_one_followup(db: Db) {
    const REAPERS: usize = 8;
    const SESSIONS: usize = 4;
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let mut stranded = Vec::new();
    for _ in 0..SESSIONS {
        let sess = session(&db, &alice).await;
        let run = start(&db, &alice.id, &sess.id, "one").await.run_id;
        claim(&db, &run, "dead-worker").await;
        s.send_message(&req(&alice.id, &sess.id, "two"))
            .await
            .unwrap();
        s.cancel_run(&alice.id, &run, "user", &RunLimits::unlimited())
            .await
            .unwrap();
        stranded.push(sess.id);
    }

    let later = now_ms() + 60_000;
    let tasks: Vec<_> = (0..REAPERS)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.reap(NONE_STALE, later, &RunLimits::unlimited()).await })
        })
        .collect();
    let mut errors = Vec::new();
    let mut found = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(ids) => found.extend(ids),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert!(
        errors.is_empty(),
        "{} of {REAPERS} parallel reaper passes failed: {errors:?}",
        errors.len()
    );
    for sess in &stranded {
        assert_eq!(
            db.count(format!(
                "select count(*) from runs where session_id = '{sess}'"
            ))
            .await,
            2,
            "one follow-up run"
        );
        let next = s
            .get_session(&alice.id, sess)
            .await
            .unwrap()
            .active_run_id
            .expect("the follow-up is active");
        assert!(found.iter().any(|id| id.0 == next), "{found:?}");
    }
}
