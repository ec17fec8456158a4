//! Delegations, the fourth kind of wait, below the run service: a delegating
//! step makes its children (session, task, queued run one level deeper) in the
//! transaction that stores it; the parent waits as `waiting_agents`; each
//! child's end records itself and the last one puts the parent back on the
//! queue; a child that ends while the parent is still suspending is not
//! missed (the race rule); cancelling the parent cancels its children; and
//! deleting the parent's session takes the children's with it.

use weft_shared::ids::{RunId, SessionId};
use weft_store::{
    AuthUser, CancelOutcome, ClaimedRun, DelegationStatus, FinishOutcome, NewDelegation, NewWaits,
    PendingStep, RunEnd, RunLimits, RunStatus, WaitOutcome,
};

use crate::both_backends;
use crate::harness::{Db, claim, session, start, succeed_claimed, user};

both_backends!(
    a_delegating_step_makes_its_children_and_the_last_end_resumes_the_parent,
    a_child_that_ends_while_the_parent_suspends_is_not_missed,
    cancelling_the_parent_cancels_its_children_and_a_failed_child_says_why,
    deleting_the_parent_session_takes_the_children_with_it,
);

fn pending() -> PendingStep {
    PendingStep {
        reasoning: Vec::new(),
        step: 1,
        content: "Splitting it.".into(),
        tool_calls: Vec::new(),
    }
}

fn delegation(n: u32) -> NewDelegation {
    NewDelegation {
        id: format!("dg_{n}"),
        call_id: format!("call_{n}"),
        agent: "researcher".into(),
        task: format!("find part {n}\nwith details"),
        model: "mock".into(),
        child_session: SessionId::new(),
        child_run: RunId::new(),
    }
}

/// Alice's run, claimed by `w1`, that stored a step delegating `n` tasks.
async fn delegating(db: &Db, n: u32) -> (AuthUser, ClaimedRun, Vec<NewDelegation>) {
    let alice = user(db, "alice").await;
    let ses = session(db, &alice).await;
    let run = start(db, &alice.id, &ses.id, "split the work").await.run_id;
    let parent = claim(db, &run, "w1").await;
    assert_eq!((parent.depth, parent.parent_run_id.as_ref()), (0, None));
    let tasks: Vec<NewDelegation> = (1..=n).map(delegation).collect();
    let waits = NewWaits {
        delegations: tasks.clone(),
        ..Default::default()
    };
    assert!(
        db.store
            .store_waits(&run, "w1", &pending(), &waits)
            .await
            .unwrap()
    );
    (alice, parent, tasks)
}

async fn status(db: &Db, run: &RunId) -> RunStatus {
    db.store.get_run_unscoped(run).await.unwrap().status
}

async fn a_delegating_step_makes_its_children_and_the_last_end_resumes_the_parent(db: Db) {
    let s = &db.store;
    let (alice, parent, tasks) = delegating(&db, 2).await;
    assert_eq!(
        s.suspend_run(&parent.id, "w1", 4).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert_eq!(status(&db, &parent.id).await, RunStatus::WaitingAgents);
    // Each child: its session (the person's, titled by the task, not listed),
    // the task as its message, a queued run one level deeper.
    for t in &tasks {
        let ses = s.get_session(&alice.id, &t.child_session).await.unwrap();
        let n = &t.id[3..];
        assert_eq!(ses.title, format!("find part {n}"));
        assert_eq!(ses.agent, "researcher");
        assert_eq!(status(&db, &t.child_run).await, RunStatus::Queued);
        let texts = db
            .texts(format!(
                "select content from messages where session_id = '{}' order by ord",
                t.child_session.0
            ))
            .await;
        assert_eq!(texts, std::slice::from_ref(&t.task));
    }
    let (listed, _) = s.list_sessions(&alice.id, None, 50, None).await.unwrap();
    assert_eq!(listed.len(), 1, "child sessions are not listed");
    let open = s.step_delegations(&parent.id, 1).await.unwrap();
    assert_eq!(open.len(), 2);
    assert!(open.iter().all(|d| d.status == DelegationStatus::Running));

    // The first child ends: recorded, and the parent goes back to the queue
    // to announce it (`agent_end` as each child ends) ...
    let one = claim(&db, &tasks[0].child_run, "w1").await;
    assert_eq!(
        (one.depth, one.parent_run_id.as_ref()),
        (1, Some(&parent.id))
    );
    let FinishOutcome::Finished {
        parent: resumed, ..
    } = succeed_claimed(&db, &one, &RunLimits::unlimited()).await
    else {
        panic!("finished")
    };
    assert_eq!(resumed.as_ref(), Some(&parent.id));
    let d = s.delegation_of(&tasks[0].child_run).await.unwrap().unwrap();
    assert_eq!(
        (d.status, d.result.as_deref(), d.announced),
        (DelegationStatus::Succeeded, Some("ok"), false)
    );
    // ... and, announced, waits again for the other.
    let again = claim(&db, &parent.id, "w1").await;
    assert_eq!(again.pending_step.map(|p| p.step), Some(1));
    s.mark_announced(&weft_store::Announced {
        delegations: vec!["dg_1".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(
        s.suspend_run(&parent.id, "w1", 6).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert_eq!(status(&db, &parent.id).await, RunStatus::WaitingAgents);
    // The second: the parent is back on the queue, and its claim resumes the
    // waiting step with nothing left open.
    let two = claim(&db, &tasks[1].child_run, "w1").await;
    let FinishOutcome::Finished {
        parent: resumed, ..
    } = succeed_claimed(&db, &two, &RunLimits::unlimited()).await
    else {
        panic!("finished")
    };
    assert_eq!(resumed.as_ref(), Some(&parent.id));
    assert_eq!(status(&db, &parent.id).await, RunStatus::Queued);
    let again = claim(&db, &parent.id, "w3").await;
    assert_eq!(again.pending_step.map(|p| p.step), Some(1));
    s.mark_announced(&weft_store::Announced {
        delegations: vec!["dg_2".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(
        s.run_delegations(&parent.id)
            .await
            .unwrap()
            .iter()
            .all(|d| d.announced && d.status == DelegationStatus::Succeeded)
    );
}

async fn a_child_that_ends_while_the_parent_suspends_is_not_missed(db: Db) {
    let s = &db.store;
    let (_, parent, tasks) = delegating(&db, 1).await;
    // The child is quicker than its parent's suspension.
    let child = claim(&db, &tasks[0].child_run, "w1").await;
    let FinishOutcome::Finished {
        parent: resumed, ..
    } = succeed_claimed(&db, &child, &RunLimits::unlimited()).await
    else {
        panic!("finished")
    };
    assert_eq!(resumed, None, "the parent was still running");
    assert_eq!(
        s.suspend_run(&parent.id, "w1", 4).await.unwrap(),
        WaitOutcome::Decided,
        "its end is still to be announced: straight back to the queue"
    );
    assert_eq!(status(&db, &parent.id).await, RunStatus::Queued);
}

async fn cancelling_the_parent_cancels_its_children_and_a_failed_child_says_why(db: Db) {
    let s = &db.store;
    let (alice, parent, tasks) = delegating(&db, 2).await;
    assert_eq!(
        s.suspend_run(&parent.id, "w1", 4).await.unwrap(),
        WaitOutcome::Waiting
    );
    // One child fails on its own: recorded with its error.
    let failing = claim(&db, &tasks[0].child_run, "w1").await;
    s.finish_run(
        &failing,
        "w1",
        &RunEnd::Failed {
            error: weft_shared::api::ErrorBody {
                code: "upstream".into(),
                message: "the model was down".into(),
            },
            partial: String::new(),
            step: 1,
        },
        Default::default(),
        None,
        &RunLimits::unlimited(),
    )
    .await
    .unwrap();
    let d = s.delegation_of(&tasks[0].child_run).await.unwrap().unwrap();
    assert_eq!(d.status, DelegationStatus::Failed);
    assert_eq!(d.result.as_deref(), Some("upstream: the model was down"));
    // The other is running when the parent is cancelled.
    let running = claim(&db, &tasks[1].child_run, "w1").await;
    let out = s
        .cancel_run(&alice.id, &parent.id, "user", &RunLimits::unlimited())
        .await
        .unwrap();
    assert!(matches!(out, CancelOutcome::Cancelled { .. }), "{out:?}");
    let ended = s.cancel_children(&parent.id, "parent").await.unwrap();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].id, running.id);
    assert!(!ended[0].was_queued, "its worker ends its stream");
    let rec = s.get_run_unscoped(&running.id).await.unwrap();
    assert_eq!(
        (rec.status, rec.cancelled_by.as_deref()),
        (RunStatus::Cancelled, Some("parent"))
    );
    let d = s.delegation_of(&running.id).await.unwrap().unwrap();
    assert_eq!(d.status, DelegationStatus::Cancelled);
    // Nothing is left to cancel.
    assert!(
        s.cancel_children(&parent.id, "parent")
            .await
            .unwrap()
            .is_empty()
    );
}

async fn deleting_the_parent_session_takes_the_children_with_it(db: Db) {
    let s = &db.store;
    let (alice, parent, tasks) = delegating(&db, 2).await;
    s.suspend_run(&parent.id, "w1", 4).await.unwrap();
    let ended = s
        .delete_session(&alice.id, &parent.session_id)
        .await
        .unwrap();
    let mut ids: Vec<&RunId> = ended.iter().map(|r| &r.id).collect();
    ids.sort_by_key(|r| r.0.clone());
    let mut want = vec![&parent.id, &tasks[0].child_run, &tasks[1].child_run];
    want.sort_by_key(|r| r.0.clone());
    assert_eq!(ids, want, "every active run of the tree ends");
    for t in &tasks {
        assert!(s.get_session(&alice.id, &t.child_session).await.is_err());
    }
    assert_eq!(db.count("select count(*) from delegations".into()).await, 0);
    assert_eq!(db.count("select count(*) from runs".into()).await, 0);
}
