//! Plans (plan mode), the third kind of wait, below the run service: a run
//! sent in plan mode is claimed as planning until a plan of it is approved; a
//! step waiting on a plan suspends the run as `waiting_input`; the first
//! decision stands and puts the run back on the queue; a revise must say what
//! to change; another person gets not-found; a decision made while the worker
//! is still suspending is not missed (the race rule); an expired plan resumes
//! the run, and a plan-mode send never waits behind an active run.

use weft_shared::api::Multitask;
use weft_shared::ids::RunId;
use weft_shared::time::now_ms;
use weft_store::{
    Answerer, AuthUser, NewPlan, NewWaits, PendingStep, PlanDecision, PlanOutcome, PlanStatus,
    RunStatus, SendOutcome, WaitOutcome,
};

use crate::both_backends;
use crate::harness::{Db, claim, req, session, started, user};

both_backends!(
    the_first_decision_stands_and_an_approved_plan_ends_planning,
    a_decision_made_while_the_worker_suspends_is_not_missed,
    an_expired_plan_resumes_the_run_and_takes_no_decision,
    a_plan_never_waits_behind_an_active_run
);

fn who<'a>(user: &'a AuthUser, name: &'a str) -> Answerer<'a> {
    Answerer {
        user: &user.id,
        admin: false,
        name,
    }
}

/// Alice's plan-mode run in a session of hers, claimed by worker `w1`.
async fn claimed_planning(db: &Db) -> (AuthUser, RunId) {
    let alice = user(db, "alice").await;
    let ses = session(db, &alice).await;
    let mut send = req(&alice.id, &ses.id, "plan the migration");
    send.message.plan = true;
    let run = started(db.store.send_message(&send).await.unwrap()).run_id;
    let c = claim(db, &run, "w1").await;
    assert!(c.plan && c.planning, "sent in plan mode, nothing approved");
    (alice, run)
}

fn pending(step: u32) -> PendingStep {
    PendingStep {
        reasoning: Vec::new(),
        step,
        content: "1. Back up. 2. Migrate.".into(),
        tool_calls: Vec::new(),
    }
}

fn waits(id: &str, expires_at: i64) -> NewWaits {
    NewWaits {
        plans: vec![NewPlan {
            id: id.into(),
            call_id: format!("plan_{id}"),
            markdown: "1. Back up. 2. Migrate.".into(),
            expires_at,
        }],
        ..Default::default()
    }
}

async fn status(db: &Db, run: &RunId) -> RunStatus {
    db.store.get_run_unscoped(run).await.unwrap().status
}

async fn the_first_decision_stands_and_an_approved_plan_ends_planning(db: Db) {
    let s = &db.store;
    let (alice, run) = claimed_planning(&db).await;
    let bob = user(&db, "bob").await;
    assert!(
        s.store_waits(&run, "w1", &pending(1), &waits("pl_1", now_ms() + 60_000))
            .await
            .unwrap()
    );
    assert_eq!(
        s.suspend_run(&run, "w1", 3).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert_eq!(status(&db, &run).await, RunStatus::WaitingInput);
    let ses = s.get_run_unscoped(&run).await.unwrap().session_id;
    assert_eq!(s.session_plans(&ses).await.unwrap().len(), 1);
    // Another person: it does not exist for them.
    assert!(
        s.decide_plan(
            "pl_1",
            &who(&bob, "bob"),
            PlanDecision::Approve,
            None,
            None,
            None
        )
        .await
        .is_err()
    );
    // A revise must say what to change: refused, still open.
    let refused = s
        .decide_plan(
            "pl_1",
            &who(&alice, "alice"),
            PlanDecision::Revise,
            Some("   ".into()),
            None,
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&refused, PlanOutcome::Invalid { why, .. } if why.contains("comment")),
        "{refused:?}"
    );
    assert_eq!(status(&db, &run).await, RunStatus::WaitingInput);
    let decided = s
        .decide_plan(
            "pl_1",
            &who(&alice, "alice"),
            PlanDecision::Approve,
            Some(" go ".into()),
            None,
            None,
        )
        .await
        .unwrap();
    let PlanOutcome::Decided { plan, resume } = decided else {
        panic!("{decided:?}")
    };
    assert!(resume);
    assert_eq!(
        (
            plan.status,
            plan.decided_by.as_deref(),
            plan.comment.as_deref()
        ),
        (PlanStatus::Approved, Some("alice"), Some("go"))
    );
    assert_eq!(status(&db, &run).await, RunStatus::Queued);
    // The first decision stands.
    let again = s
        .decide_plan(
            "pl_1",
            &who(&alice, "alice"),
            PlanDecision::Reject,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&again, PlanOutcome::AlreadyDecided(p) if p.status == PlanStatus::Approved),
        "{again:?}"
    );
    // Claimed again: still a plan-mode run, no longer planning.
    let c = claim(&db, &run, "w2").await;
    assert!(c.plan && !c.planning);
    assert_eq!(c.pending_step.map(|p| p.step), Some(1));
}

async fn a_decision_made_while_the_worker_suspends_is_not_missed(db: Db) {
    let s = &db.store;
    let (alice, run) = claimed_planning(&db).await;
    assert!(
        s.store_waits(&run, "w1", &pending(1), &waits("pl_1", now_ms() + 60_000))
            .await
            .unwrap()
    );
    // Decided between the event and the suspension: the run is still
    // running, so nothing is requeued yet …
    let decided = s
        .decide_plan(
            "pl_1",
            &who(&alice, "alice"),
            PlanDecision::Revise,
            Some("add a rollback step".into()),
            Some("lark:om_1"),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(
        decided,
        PlanOutcome::Decided { resume: false, .. }
    ));
    // … and the suspension sees it and puts the run back on the queue.
    assert_eq!(
        s.suspend_run(&run, "w1", 3).await.unwrap(),
        WaitOutcome::Decided
    );
    assert_eq!(status(&db, &run).await, RunStatus::Queued);
    // The same message decides again (a retried handler): the one recorded.
    let retried = s
        .decide_plan(
            "pl_1",
            &who(&alice, "alice"),
            PlanDecision::Revise,
            Some("add a rollback step".into()),
            Some("lark:om_1"),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&retried, PlanOutcome::Decided { plan, resume: false } if plan.status == PlanStatus::Revised),
        "{retried:?}"
    );
    let found = s.plan_decided_by("lark:om_1").await.unwrap().unwrap();
    assert_eq!(found.comment.as_deref(), Some("add a rollback step"));
    // Revised is not approved: the run still plans.
    assert!(claim(&db, &run, "w2").await.planning);
}

async fn an_expired_plan_resumes_the_run_and_takes_no_decision(db: Db) {
    let s = &db.store;
    let (alice, run) = claimed_planning(&db).await;
    let past = now_ms() - 1;
    assert!(
        s.store_waits(&run, "w1", &pending(1), &waits("pl_1", past))
            .await
            .unwrap()
    );
    assert_eq!(
        s.suspend_run(&run, "w1", 3).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert_eq!(s.expire_waits(now_ms()).await.unwrap(), vec![run.clone()]);
    assert_eq!(status(&db, &run).await, RunStatus::Queued);
    let plan = s.step_plans(&run, 1).await.unwrap().remove(0);
    assert_eq!(plan.status, PlanStatus::Expired);
    let late = s
        .decide_plan(
            "pl_1",
            &who(&alice, "alice"),
            PlanDecision::Approve,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(late, PlanOutcome::Expired { resume: false, .. }),
        "{late:?}"
    );
}

async fn a_plan_never_waits_behind_an_active_run(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let ses = session(&db, &alice).await;
    let first = started(
        s.send_message(&req(&alice.id, &ses.id, "hello"))
            .await
            .unwrap(),
    );
    let mut plan = req(&alice.id, &ses.id, "plan it");
    plan.message.plan = true;
    // `enqueue` (the default) would queue it: refused instead.
    assert!(matches!(
        s.send_message(&plan).await.unwrap(),
        SendOutcome::Rejected { active_run_id } if active_run_id == first.run_id
    ));
    // `interrupt` starts it, in plan mode.
    plan.message.multitask = Multitask::Interrupt;
    let second = started(s.send_message(&plan).await.unwrap());
    assert!(claim(&db, &second.run_id, "w1").await.planning);
}
