//! Runs in a worker's hands: the claim (compare-and-set, takeover of a stale
//! lease, the attempt budget), heartbeats and the seq high-water mark, step
//! checkpoints, the end of a run (finished, lost, deleted) with its follow-up,
//! cancel, and giving a run back to the queue.

use weft_shared::api::{ErrorBody, UsageDto};
use weft_shared::ids::{RunId, SessionId, UserId};
use weft_shared::store::{
    CancelOutcome, ClaimOutcome, ClaimedRun, FinishOutcome, RunEnd, RunLimits, RunStatus,
    SendOutcome, StepCheckpoint, StoreError, ToolResult,
};

use crate::both_backends;
use crate::harness::{Db, MAX_ATTEMPTS, claim, every_lease_stale, req, session, start, user};

both_backends!(
    claim_is_compare_and_set,
    parallel_claims_have_one_winner,
    stale_lease_is_taken_over_and_the_old_worker_stops,
    checkpoints_are_written_once,
    spent_attempts_fail_the_run,
    finish_records_the_reply_and_totals,
    failure_keeps_the_partial_reply,
    finish_after_takeover_is_lost,
    finish_after_delete_writes_nothing,
    finish_starts_the_followup,
    cancel_of_a_running_run,
    cancel_of_a_queued_run_moves_waiting_messages_on,
    cancel_of_an_ended_or_foreign_run,
    release_gives_the_run_back,
    requeue_all_running_at_embedded_startup,
);

struct One {
    user: UserId,
    session: SessionId,
    run: RunId,
}

async fn one_run(db: &Db) -> One {
    let alice = user(db, "alice").await;
    let sess = session(db, &alice).await;
    let run = start(db, &alice.id, &sess.id, "hello").await;
    One {
        user: alice.id,
        session: sess.id,
        run: run.run_id,
    }
}

async fn wait_behind(db: &Db, one: &One, text: &str) {
    let out = db
        .store
        .send_message(&req(&one.user, &one.session, text))
        .await
        .unwrap();
    assert!(matches!(out, SendOutcome::Queued { .. }), "{out:?}");
}

fn succeeded(text: &str) -> RunEnd {
    RunEnd::Succeeded {
        content: text.into(),
        step: 1,
    }
}

async fn finish(db: &Db, run: &ClaimedRun, worker: &str, end: RunEnd) -> FinishOutcome {
    db.store
        .finish_run(
            run,
            worker,
            &end,
            UsageDto::default(),
            None,
            &RunLimits::unlimited(),
        )
        .await
        .unwrap()
}

fn step(n: u32, text: &str) -> StepCheckpoint {
    StepCheckpoint {
        step: n,
        content: text.into(),
        tool_calls: Vec::new(),
        results: vec![ToolResult {
            call_id: format!("call_{n}"),
            name: "current_time".into(),
            content: format!("result of {text}"),
        }],
    }
}

async fn run_messages(db: &Db, run: &RunId) -> i64 {
    db.count(format!(
        "select count(*) from messages where run_id = '{run}'"
    ))
    .await
}

async fn claim_is_compare_and_set(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    assert_eq!(
        (&c.id, &c.session_id, &c.user_id, c.attempt, c.last_seq),
        (&one.run, &one.session, &one.user, 1, 0)
    );
    assert_eq!((c.model.as_str(), c.mode.as_str()), ("mock", "agent"));
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

async fn finish_records_the_reply_and_totals(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    let usage = UsageDto {
        input: 120,
        output: 45,
        cache_read: 7,
        reasoning: 3,
    };
    let out = s
        .finish_run(
            &c,
            "w1",
            &succeeded("all done"),
            usage,
            Some(250),
            &RunLimits::unlimited(),
        )
        .await
        .unwrap();
    let FinishOutcome::Finished {
        message_id: Some(reply),
        followup: None,
    } = out
    else {
        panic!("{out:?}");
    };
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!(rec.status, RunStatus::Succeeded);
    assert_eq!(rec.usage, usage);
    assert_eq!(rec.ttft_ms, Some(250));
    assert!(rec.duration_ms.is_some());
    assert_eq!(rec.error, None);
    assert_eq!(rec.final_message_id, Some(reply.0.clone()));
    assert!(rec.finished_at.unwrap() >= c.started_at);
    let msg = s.get_message(&reply).await.unwrap().unwrap();
    assert_eq!(
        (msg.role.as_str(), msg.content.as_str(), msg.step),
        ("assistant", "all done", Some(1))
    );
    // Ended: no lease, no claim, no second end.
    assert!(!s.heartbeat(&one.run, "w1", 1).await.unwrap());
    assert_eq!(
        s.claim_run(&one.run, "w2", every_lease_stale(), MAX_ATTEMPTS)
            .await
            .unwrap(),
        ClaimOutcome::NotClaimable
    );
    assert_eq!(
        finish(&db, &c, "w1", succeeded("twice")).await,
        FinishOutcome::Lost
    );
    assert_eq!(run_messages(&db, &one.run).await, 2);
}

async fn failure_keeps_the_partial_reply(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    let error = ErrorBody {
        code: "upstream_error".into(),
        message: "the model answered 500".into(),
    };
    let out = finish(
        &db,
        &c,
        "w1",
        RunEnd::Failed {
            error: error.clone(),
            partial: "half a".into(),
            step: 1,
        },
    )
    .await;
    let FinishOutcome::Finished {
        message_id: Some(partial),
        ..
    } = out
    else {
        panic!("{out:?}");
    };
    assert_eq!(
        s.get_message(&partial).await.unwrap().unwrap().content,
        "half a"
    );
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!(
        (rec.status, rec.error),
        (RunStatus::Failed, Some(error.clone()))
    );

    // Nothing said yet: no empty message.
    let sess = session(&db, &s.get_user(&one.user).await.unwrap()).await;
    let run = start(&db, &one.user, &sess.id, "again").await;
    let c = claim(&db, &run.run_id, "w1").await;
    let out = finish(
        &db,
        &c,
        "w1",
        RunEnd::Failed {
            error,
            partial: String::new(),
            step: 1,
        },
    )
    .await;
    assert_eq!(
        out,
        FinishOutcome::Finished {
            message_id: None,
            followup: None
        }
    );
    assert_eq!(run_messages(&db, &run.run_id).await, 1);
}

async fn finish_after_takeover_is_lost(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let old = claim(&db, &one.run, "w1").await;
    let ClaimOutcome::Claimed(new) = s
        .claim_run(&one.run, "w2", every_lease_stale(), MAX_ATTEMPTS)
        .await
        .unwrap()
    else {
        panic!("takeover");
    };
    assert_eq!(
        finish(&db, &old, "w1", succeeded("stale words")).await,
        FinishOutcome::Lost
    );
    // Its reply was rolled back with it.
    assert_eq!(run_messages(&db, &one.run).await, 1);
    assert_eq!(
        s.get_run(&one.user, &one.run).await.unwrap().status,
        RunStatus::Running
    );
    let out = finish(&db, &new, "w2", succeeded("fresh words")).await;
    assert!(matches!(out, FinishOutcome::Finished { .. }), "{out:?}");
    let ctx = s.context_messages(&one.session, 20).await.unwrap();
    let texts: Vec<&str> = ctx.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["hello", "fresh words"]);
}

async fn finish_after_delete_writes_nothing(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    let active = s.delete_session(&one.user, &one.session).await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(
        finish(&db, &c, "w1", succeeded("into the void")).await,
        FinishOutcome::Deleted
    );
    assert_eq!(run_messages(&db, &one.run).await, 0);
    assert!(matches!(
        s.get_run_unscoped(&one.run).await,
        Err(StoreError::NotFound)
    ));

    // Deleting the user does the same.
    let bob = user(&db, "bob").await;
    let sess = session(&db, &bob).await;
    let run = start(&db, &bob.id, &sess.id, "hi").await;
    let c = claim(&db, &run.run_id, "w1").await;
    s.delete_user(&bob.id).await.unwrap();
    assert_eq!(
        finish(&db, &c, "w1", succeeded("nobody")).await,
        FinishOutcome::Deleted
    );
}

async fn finish_starts_the_followup(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    wait_behind(&db, &one, "two").await;
    wait_behind(&db, &one, "three").await;
    let out = finish(&db, &c, "w1", succeeded("one")).await;
    let FinishOutcome::Finished {
        followup: Some(next),
        ..
    } = out
    else {
        panic!("{out:?}");
    };
    let rec = s.get_run(&one.user, &next).await.unwrap();
    assert_eq!(
        (rec.status, rec.model.as_str(), &rec.session_id),
        (RunStatus::Queued, "mock", &one.session)
    );
    // Both waiting messages are one run now; none waits any more.
    assert_eq!(run_messages(&db, &next).await, 2);
    assert_eq!(
        db.count(format!(
            "select count(*) from messages where session_id = '{}' and queued = 1",
            one.session
        ))
        .await,
        0
    );
    let session = s.get_session(&one.user, &one.session).await.unwrap();
    assert_eq!(session.active_run_id, Some(next.0.clone()));
    assert_eq!(s.queued_runs().await.unwrap(), 1);
}

async fn cancel_of_a_running_run(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    wait_behind(&db, &one, "next").await;
    let out = s
        .cancel_run(&one.user, &one.run, "user", &RunLimits::unlimited())
        .await
        .unwrap();
    let CancelOutcome::Cancelled { run, followup } = out else {
        panic!("{out:?}");
    };
    assert_eq!((run.id, run.was_queued), (one.run.clone(), false));
    // The worker saves its text first, then the follow-up starts.
    assert_eq!(followup, None);
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!(
        (rec.status, rec.cancelled_by.as_deref()),
        (RunStatus::Cancelled, Some("user"))
    );
    assert!(
        db.count(format!(
            "select cancel_requested from runs where id = '{}'",
            one.run
        ))
        .await
            == 1
    );
    // The worker's lease is gone: it stops at its next heartbeat.
    assert!(!s.heartbeat(&one.run, "w1", 5).await.unwrap());
    // A cancelled run does not claim again (a redelivered job).
    assert_eq!(
        s.claim_run(&one.run, "w2", every_lease_stale(), MAX_ATTEMPTS)
            .await
            .unwrap(),
        ClaimOutcome::NotClaimable
    );
    // It ends as cancelled (claiming success is not its to say) with its partial text.
    assert_eq!(
        finish(&db, &c, "w1", succeeded("full")).await,
        FinishOutcome::Lost
    );
    let out = finish(
        &db,
        &c,
        "w1",
        RunEnd::Cancelled {
            partial: "part".into(),
            step: 1,
        },
    )
    .await;
    let FinishOutcome::Finished {
        message_id: Some(partial),
        followup: Some(next),
    } = out
    else {
        panic!("{out:?}");
    };
    assert_eq!(
        s.get_message(&partial).await.unwrap().unwrap().content,
        "part"
    );
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!(rec.status, RunStatus::Cancelled);
    assert_eq!(rec.final_message_id, Some(partial.0.clone()));
    let ctx = s.context_messages(&one.session, 20).await.unwrap();
    let texts: Vec<&str> = ctx.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["hello", "part", "next"]);
    assert_eq!(ctx[2].run_id, Some(next));
}

async fn cancel_of_a_queued_run_moves_waiting_messages_on(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    wait_behind(&db, &one, "next").await;
    let out = s
        .cancel_run(&one.user, &one.run, "user", &RunLimits::unlimited())
        .await
        .unwrap();
    let CancelOutcome::Cancelled {
        run,
        followup: Some(next),
    } = out
    else {
        panic!("{out:?}");
    };
    assert!(run.was_queued);
    assert_eq!(
        s.get_run(&one.user, &one.run).await.unwrap().status,
        RunStatus::Cancelled
    );
    assert_eq!(
        s.claim_run(&one.run, "w1", 0, MAX_ATTEMPTS).await.unwrap(),
        ClaimOutcome::NotClaimable
    );
    assert_eq!(run_messages(&db, &next).await, 1);
    assert_eq!(
        s.get_session(&one.user, &one.session)
            .await
            .unwrap()
            .active_run_id,
        Some(next.0.clone())
    );
    // Nothing waiting: no follow-up.
    let out = s
        .cancel_run(&one.user, &next, "user", &RunLimits::unlimited())
        .await
        .unwrap();
    assert!(
        matches!(out, CancelOutcome::Cancelled { followup: None, .. }),
        "{out:?}"
    );
}

async fn cancel_of_an_ended_or_foreign_run(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let mallory = user(&db, "mallory").await;
    let limits = RunLimits::unlimited();
    let foreign = s.cancel_run(&mallory.id, &one.run, "user", &limits).await;
    assert!(matches!(foreign, Err(StoreError::NotFound)), "{foreign:?}");
    assert!(matches!(
        s.get_run(&mallory.id, &one.run).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(
        s.get_run(&one.user, &one.run).await.unwrap().status,
        RunStatus::Queued
    );
    let unknown = s
        .cancel_run(&one.user, &RunId::new(), "user", &limits)
        .await;
    assert!(matches!(unknown, Err(StoreError::NotFound)), "{unknown:?}");

    let c = claim(&db, &one.run, "w1").await;
    finish(&db, &c, "w1", succeeded("done")).await;
    assert_eq!(
        s.cancel_run(&one.user, &one.run, "user", &limits)
            .await
            .unwrap(),
        CancelOutcome::NotActive(RunStatus::Succeeded)
    );
    let rec = s.get_run(&one.user, &one.run).await.unwrap();
    assert_eq!((rec.status, rec.cancelled_by), (RunStatus::Succeeded, None));
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
