//! Claiming a run: compare-and-set, one winner among parallel claims, takeover
//! of a stale lease (the old worker is told and writes nothing), checkpoints
//! written once, the attempt budget, giving runs back to the queue.

use weft_shared::api::ErrorBody;
use weft_shared::ids::RunId;
use weft_store::{ClaimOutcome, RunLimits, RunStatus};

use super::{one_run, run_messages, step, wait_behind};
use crate::both_backends;
use crate::harness::{
    Db, MAX_ATTEMPTS, claim, every_lease_stale, req, session, start, started, user,
};

both_backends!(
    claim_is_compare_and_set,
    parallel_claims_have_one_winner,
    stale_lease_is_taken_over_and_the_old_worker_stops,
    checkpoints_are_written_once,
    spent_attempts_fail_the_run,
    release_gives_the_run_back,
    requeue_all_running_at_embedded_startup,
    trace_context_comes_with_every_claim,
);

async fn claim_is_compare_and_set(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    assert_eq!(
        (&c.id, &c.session_id, &c.user_id, c.attempt, c.last_seq),
        (&one.run, &one.session, &one.user, 1, 0)
    );
    assert_eq!((c.model.as_str(), c.agent.as_str()), ("mock", "agent"));
    assert!(!c.cancel_requested);
    assert!(c.started_at >= c.created_at);
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!((rec.status, rec.attempt), (RunStatus::Running, 1));
    assert_eq!(s.queued_runs().await.unwrap(), 0);

    // A live lease: nobody else gets it, the owner neither (a duplicate job).
    for worker in ["w2", "w1"] {
        assert_eq!(
            s.claim_run(&one.run, worker, 0, MAX_ATTEMPTS)
                .await
                .unwrap(),
            ClaimOutcome::NotClaimable
        );
    }
    assert_eq!(
        s.claim_run(&RunId::new(), "w1", every_lease_stale(), MAX_ATTEMPTS)
            .await
            .unwrap(),
        ClaimOutcome::NotClaimable
    );
    assert_eq!(s.get_run(&one.user, &one.run).await.unwrap().attempt, 1);
}

async fn parallel_claims_have_one_winner(db: Db) {
    let one = one_run(&db).await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = db.store.clone();
            let run = one.run.clone();
            tokio::spawn(async move { s.claim_run(&run, &format!("w{i}"), 0, MAX_ATTEMPTS).await })
        })
        .collect();
    let mut winners = 0;
    for t in tasks {
        match t.await.unwrap().unwrap() {
            ClaimOutcome::Claimed(c) => {
                assert_eq!(c.attempt, 1);
                winners += 1;
            }
            ClaimOutcome::NotClaimable => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(winners, 1);
    assert_eq!(
        db.store.get_run(&one.user, &one.run).await.unwrap().attempt,
        1
    );
}

async fn stale_lease_is_taken_over_and_the_old_worker_stops(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let first = claim(&db, &one.run, "w1").await;
    assert!(s.heartbeat(&one.run, "w1", 7).await.unwrap());
    // The high-water mark never goes back.
    assert!(s.heartbeat(&one.run, "w1", 3).await.unwrap());
    // Only the owner refreshes the lease.
    assert!(!s.heartbeat(&one.run, "w2", 9).await.unwrap());

    let ClaimOutcome::Claimed(second) = s
        .claim_run(&one.run, "w2", every_lease_stale(), MAX_ATTEMPTS)
        .await
        .unwrap()
    else {
        panic!("a stale lease is taken over");
    };
    assert_eq!(second.attempt, 2);
    assert_eq!(second.last_seq, 7, "seq continues across attempts");
    assert_eq!(second.started_at, first.started_at, "started_at is kept");

    // The old worker is told at its next heartbeat and checkpoint, and writes nothing.
    assert!(!s.heartbeat(&one.run, "w1", 20).await.unwrap());
    assert!(
        !s.checkpoint_step(&one.run, "w1", &one.session, &step(1, "old"), 20)
            .await
            .unwrap()
    );
    assert_eq!(
        run_messages(&db, &one.run).await,
        1,
        "only the user message"
    );
    assert_eq!(s.last_checkpoint(&one.run).await.unwrap(), 0);
    assert!(s.heartbeat(&one.run, "w2", 8).await.unwrap());
    let ClaimOutcome::Claimed(third) = s
        .claim_run(&one.run, "w3", every_lease_stale(), MAX_ATTEMPTS)
        .await
        .unwrap()
    else {
        panic!("taken over again");
    };
    // w1's refused heartbeat (20) did not count; w2's did.
    assert_eq!((third.attempt, third.last_seq), (3, 8));
}

async fn checkpoints_are_written_once(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    claim(&db, &one.run, "w1").await;
    assert_eq!(s.last_checkpoint(&one.run).await.unwrap(), 0);
    assert!(
        s.checkpoint_step(&one.run, "w1", &one.session, &step(1, "first try"), 12)
            .await
            .unwrap()
    );
    assert_eq!(s.last_checkpoint(&one.run).await.unwrap(), 1);
    assert_eq!(run_messages(&db, &one.run).await, 3);

    // The worker dies; the next attempt repeats step 1 (e.g. it raced the
    // checkpoint): the first write stands, nothing is duplicated.
    let again = match s
        .claim_run(&one.run, "w2", every_lease_stale(), MAX_ATTEMPTS)
        .await
        .unwrap()
    {
        ClaimOutcome::Claimed(c) => c,
        other => panic!("{other:?}"),
    };
    assert_eq!(again.last_seq, 12, "a checkpoint records the seq too");
    assert!(
        s.checkpoint_step(&one.run, "w2", &one.session, &step(1, "second try"), 13)
            .await
            .unwrap()
    );
    assert_eq!(run_messages(&db, &one.run).await, 3);
    let ctx = s.context_messages(&one.session, 20).await.unwrap();
    let texts: Vec<&str> = ctx.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["hello", "first try", "result of first try"]);

    assert!(
        s.checkpoint_step(&one.run, "w2", &one.session, &step(2, "next"), 14)
            .await
            .unwrap()
    );
    assert_eq!(s.last_checkpoint(&one.run).await.unwrap(), 2);
    assert_eq!(run_messages(&db, &one.run).await, 5);
}

async fn spent_attempts_fail_the_run(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    wait_behind(&db, &one, "still there?").await;
    let max = 2;
    for attempt in 1..=max {
        let out = s
            .claim_run(&one.run, &format!("w{attempt}"), every_lease_stale(), max)
            .await
            .unwrap();
        assert!(
            matches!(&out, ClaimOutcome::Claimed(c) if c.attempt == attempt),
            "{out:?}"
        );
    }
    let ClaimOutcome::Exhausted(spent) = s
        .claim_run(&one.run, "w3", every_lease_stale(), max)
        .await
        .unwrap()
    else {
        panic!("the third attempt is over budget");
    };
    assert_eq!(spent.attempt, 3);
    let error = ErrorBody {
        code: "attempts_exhausted".into(),
        message: "the run failed 3 times".into(),
    };
    let followup = s
        .fail_exhausted(&spent, &error, &RunLimits::unlimited())
        .await
        .unwrap()
        .pop()
        .expect("the waiting message gets its run");
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!(rec.status, RunStatus::Failed);
    assert_eq!(rec.error, Some(error));
    assert!(rec.finished_at.is_some());
    assert_eq!(
        s.claim_run(&one.run, "w4", every_lease_stale(), max)
            .await
            .unwrap(),
        ClaimOutcome::NotClaimable
    );
    let next = s.get_run(&one.user, &followup).await.unwrap();
    assert_eq!(next.status, RunStatus::Queued);
    let ctx = s.context_messages(&one.session, 20).await.unwrap();
    assert_eq!(ctx.last().unwrap().run_id, Some(followup));
}

async fn release_gives_the_run_back(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    // Not running yet: nothing to release.
    assert!(!s.release_run(&one.run, "w1").await.unwrap());
    claim(&db, &one.run, "w1").await;
    assert!(!s.release_run(&one.run, "w2").await.unwrap(), "not w2's");
    assert_eq!(s.queued_runs().await.unwrap(), 0);
    assert!(s.release_run(&one.run, "w1").await.unwrap());
    assert_eq!(
        s.get_run(&one.user, &one.run).await.unwrap().status,
        RunStatus::Queued
    );
    assert_eq!(s.queued_runs().await.unwrap(), 1);
    assert!(!s.heartbeat(&one.run, "w1", 1).await.unwrap());
    // Any worker claims it at once; it is the next attempt.
    let again = claim(&db, &one.run, "w2").await;
    assert_eq!(again.attempt, 2);
}

async fn requeue_all_running_at_embedded_startup(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let mut runs = Vec::new();
    for text in ["a", "b", "c"] {
        let sess = session(&db, &alice).await;
        runs.push(start(&db, &alice.id, &sess.id, text).await.run_id);
    }
    claim(&db, &runs[0], "dead").await;
    claim(&db, &runs[1], "dead").await;
    assert_eq!(s.queued_runs().await.unwrap(), 1);
    assert_eq!(s.requeue_all_running().await.unwrap(), 2);
    assert_eq!(s.queued_runs().await.unwrap(), 3);
    assert!(!s.heartbeat(&runs[0], "dead", 1).await.unwrap());
    assert_eq!(claim(&db, &runs[1], "new").await.attempt, 2);
    assert_eq!(claim(&db, &runs[2], "new").await.attempt, 1);
    assert_eq!(s.requeue_all_running().await.unwrap(), 2);
}

/// The request's W3C context, stored by the send, comes back with the first
/// claim and with a takeover's: every attempt continues the request's trace.
async fn trace_context_comes_with_every_claim(db: Db) {
    let s = &db.store;
    let untraced = one_run(&db).await;
    assert_eq!(claim(&db, &untraced.run, "w1").await.traceparent, None);

    let bob = user(&db, "bob").await;
    let sess = session(&db, &bob).await;
    let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut send = req(&bob.id, &sess.id, "hello");
    send.traceparent = Some(traceparent.into());
    let run = started(s.send_message(&send).await.unwrap()).run_id;
    let first = claim(&db, &run, "w1").await;
    assert_eq!(first.traceparent.as_deref(), Some(traceparent));
    let ClaimOutcome::Claimed(second) = s
        .claim_run(&run, "w2", every_lease_stale(), MAX_ATTEMPTS)
        .await
        .unwrap()
    else {
        panic!("a stale lease is taken over");
    };
    assert_eq!(
        (second.attempt, second.traceparent.as_deref()),
        (2, Some(traceparent))
    );
}
