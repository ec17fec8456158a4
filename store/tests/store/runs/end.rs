//! The end of a run: the reply and totals, a partial reply on failure, an end
//! after a takeover (lost) or a delete (nothing written), the follow-up for
//! messages that waited, and cancel (running, queued, ended, foreign).

use weft_shared::api::{ErrorBody, UsageDto};
use weft_shared::ids::RunId;
use weft_store::{
    CancelOutcome, ClaimOutcome, FinishOutcome, RunEnd, RunLimits, RunStatus, StoreError,
};

use super::{finish, one_run, run_messages, succeeded, wait_behind};
use crate::both_backends;
use crate::harness::{Db, MAX_ATTEMPTS, claim, every_lease_stale, session, start, user};

both_backends!(
    finish_records_the_reply_and_totals,
    failure_keeps_the_partial_reply,
    finish_after_takeover_is_lost,
    finish_after_delete_writes_nothing,
    finish_starts_the_followup,
    cancel_of_a_running_run,
    cancel_of_a_queued_run_moves_waiting_messages_on,
    cancel_of_an_ended_or_foreign_run,
);

async fn finish_records_the_reply_and_totals(db: Db) {
    let s = &db.store;
    let one = one_run(&db).await;
    let c = claim(&db, &one.run, "w1").await;
    let usage = UsageDto {
        input: 120,
        output: 45,
        cache_read: 7,
        reasoning: 3,
        ..UsageDto::default()
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
        parent: None,
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
            followup: None,
            parent: None,
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
    let CancelOutcome::Cancelled { run, followup, .. } = out else {
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
        parent: None,
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
        ..
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
