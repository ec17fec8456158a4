//! Crash semantics of runs, in process, on both databases: a worker stopped
//! dead at one of the run path's named failure points (`weft_worker::failure`)
//! and another worker on the same database taking the run over once its lease
//! is stale (the rig: `rig.rs`). Each test asserts what a person sees: the run
//! ends once, in its final status; its reply is stored once; a tool's effect
//! is not doubled where the design promises that; a waiting run stays waiting
//! and goes on after the decision; and the event log, read from the start and
//! folded as every client folds it, says the reply once with no seq missing.
//!
//! A crash test of a new feature goes here: arm the failure point nearest to
//! the feature's write (or add a point, documented in `worker/src/failure.rs`)
//! and assert what its user sees after the takeover.

#[path = "../../../store/tests/store/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "../../../shared/tests/support/eventually.rs"]
#[allow(dead_code)]
mod polling;
mod rig;

use weft_shared::event::EventKind;
use weft_store::{ApprovalStatus, Decision, RunStatus};
use weft_worker::failure::FailurePoint;

use harness::Db;
use rig::{World, fold, from_attempt, replies, starts, tools_started};

crate::both_backends!(
    a_step_checkpointed_before_the_crash_is_not_run_again,
    a_reply_told_but_not_stored_is_stored_and_told_once,
    a_tool_that_took_effect_before_the_crash_takes_effect_once,
    a_run_caught_suspending_waits_and_goes_on_after_the_decision,
    waits_stored_but_not_announced_are_announced_by_the_next_attempt,
);

/// Step 1 adds an item to the session's todo list; step 2 replies with what
/// the tool said.
const TODO_THEN_REPLY: &str = r#"@mock.tool todo_update {"items":[{"text":"write the report"}]}"#;

/// The todo lists stored for the session: each is one change of it.
async fn todo_versions(db: &Db, session: &str) -> i64 {
    db.count(format!(
        "select count(*) from todo_lists where session_id = '{session}'"
    ))
    .await
}

async fn a_step_checkpointed_before_the_crash_is_not_run_again(db: Db) {
    let world = World::new(&db, |_| {}).await;
    let alice = world.user("alice").await;
    let s = world.session(&alice).await;
    let first = world.worker_failing_at(FailurePoint::AfterCheckpoint);
    let run = world.send(&alice, &s, TODO_THEN_REPLY).await;
    assert_eq!(first.stopped_at().await, FailurePoint::AfterCheckpoint);
    first.kill();
    let _second = world.worker();

    let events = world.ended_log(&run).await;
    let r = world.run(&run).await;
    assert_eq!((r.status, r.attempt), (RunStatus::Succeeded, 2));
    assert_eq!(
        starts(&events),
        [(1, 1), (2, 2)],
        "attempt 2 resumes at step 2"
    );
    assert_eq!(tools_started(&events), ["todo_update"]);
    assert!(
        tools_started(from_attempt(&events, 2)).is_empty(),
        "the checkpointed step's tool did not run again"
    );
    assert_eq!(todo_versions(&db, &s.id.0).await, 1);
    let msgs = world.messages(&alice, &s).await;
    let tool: Vec<_> = msgs.iter().filter(|m| m.role == "tool").collect();
    assert_eq!(tool.len(), 1, "{msgs:?}");
    let expected = format!("tool todo_update said: {}", tool[0].content);
    assert_eq!(replies(&msgs), [expected.as_str()]);
    let seen = fold(&events);
    assert!(seen.succeeded());
    assert_eq!(seen.text(), expected);
}

async fn a_reply_told_but_not_stored_is_stored_and_told_once(db: Db) {
    let world = World::new(&db, |_| {}).await;
    let alice = world.user("alice").await;
    let s = world.session(&alice).await;
    let first = world.worker_failing_at(FailurePoint::BeforeFinish);
    let run = world.send(&alice, &s, "@mock.tokens 30").await;
    assert_eq!(first.stopped_at().await, FailurePoint::BeforeFinish);
    // The whole reply is out on the stream, and the run is not ended.
    let words: Vec<String> = (1..=30).map(|i| format!("w{i}")).collect();
    let told = fold(&world.events(&run).await);
    assert_eq!(told.text(), words.join(" "));
    assert_eq!(world.run(&run).await.status, RunStatus::Running);
    first.kill();
    let _second = world.worker();

    let events = world.ended_log(&run).await;
    let r = world.run(&run).await;
    assert_eq!((r.status, r.attempt), (RunStatus::Succeeded, 2));
    let seen = fold(&events);
    assert!(seen.succeeded());
    assert_eq!(seen.text(), words.join(" "), "the reply once in the stream");
    let msgs = world.messages(&alice, &s).await;
    assert_eq!(replies(&msgs), [words.join(" ").as_str()], "stored once");
    assert_eq!(msgs.iter().filter(|m| m.role == "user").count(), 1);
    // Step 1 was never checkpointed: it was said again, the first telling
    // void from `resume_step` 1 on.
    assert_eq!(starts(&events), [(1, 1), (2, 1)]);
}

async fn a_tool_that_took_effect_before_the_crash_takes_effect_once(db: Db) {
    let world = World::new(&db, |_| {}).await;
    let alice = world.user("alice").await;
    let s = world.session(&alice).await;
    let first = world.worker_failing_at(FailurePoint::InToolCall);
    let run = world.send(&alice, &s, TODO_THEN_REPLY).await;
    assert_eq!(first.stopped_at().await, FailurePoint::InToolCall);
    assert_eq!(todo_versions(&db, &s.id.0).await, 1, "the call took effect");
    first.kill();
    let _second = world.worker();

    let events = world.ended_log(&run).await;
    let r = world.run(&run).await;
    assert_eq!((r.status, r.attempt), (RunStatus::Succeeded, 2));
    // The step in flight is redone, its call made again under its key.
    assert_eq!(starts(&events), [(1, 1), (2, 1)]);
    assert_eq!(tools_started(&events), ["todo_update", "todo_update"]);
    assert_eq!(
        todo_versions(&db, &s.id.0).await,
        1,
        "the redone call is the change the first one made"
    );
    let list = world.store().session_todos(&s.id).await.unwrap().unwrap();
    assert_eq!(list.items.len(), 1, "{:?}", list.items);
    let seen = fold(&events);
    assert!(seen.succeeded());
    assert_eq!(seen.todos_version, 1);
    assert_eq!(seen.todos.as_ref().map(Vec::len), Some(1));
    let msgs = world.messages(&alice, &s).await;
    let tool: Vec<_> = msgs.iter().filter(|m| m.role == "tool").collect();
    assert_eq!(tool.len(), 1, "{msgs:?}");
    let expected = format!("tool todo_update said: {}", tool[0].content);
    assert_eq!(replies(&msgs), [expected.as_str()]);
    assert_eq!(seen.text(), expected);
}

async fn a_run_caught_suspending_waits_and_goes_on_after_the_decision(db: Db) {
    crash_while_waiting(db, FailurePoint::WhileSuspending).await;
}

/// The crash between storing a step's approval and announcing it: the next
/// attempt announces it (found by this test: it used to announce only
/// answers, and the run waited for an approval no stream had shown).
async fn waits_stored_but_not_announced_are_announced_by_the_next_attempt(db: Db) {
    crash_while_waiting(db, FailurePoint::BeforeAnnouncingWaits).await;
}

/// A step waiting for an approval, its worker stopped dead at `point`.
async fn crash_while_waiting(db: Db, point: FailurePoint) {
    let world = World::new(&db, |cfg| {
        cfg.tools
            .policies
            .insert("current_time".into(), weft_config::ToolPolicy::Confirm);
    })
    .await;
    let alice = world.user("alice").await;
    let s = world.session(&alice).await;
    let first = world.worker_failing_at(point);
    let run = world.send(&alice, &s, "@mock.tool current_time {}").await;
    assert_eq!(first.stopped_at().await, point);
    first.kill();
    let second = world.worker();

    // The new owner finds the step's approval and waits for it: the same
    // approval (not a second one), announced (again, when the dead worker
    // had: a repeat of the same id), not run.
    world.until_status(&run, RunStatus::WaitingApproval).await;
    let approvals = world.store().step_approvals(&run, 1).await.unwrap();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0].status, ApprovalStatus::Pending);
    let asked = world.events(&run).await;
    assert_eq!(starts(&asked), [(1, 1), (2, 2)]);
    let required: Vec<_> = asked
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ApprovalRequired { .. }))
        .collect();
    let announced = match point {
        FailurePoint::BeforeAnnouncingWaits => 1,
        _ => 2,
    };
    assert_eq!(required.len(), announced, "{required:?}");
    assert!(
        required.iter().all(|e| matches!(&e.kind,
            EventKind::ApprovalRequired { approval_id, .. } if *approval_id == approvals[0].id)),
        "{required:?}"
    );
    assert!(tools_started(&asked).is_empty(), "nothing ran: {asked:?}");
    let waiting = fold(&asked);
    assert!(!waiting.is_final());
    assert_eq!(waiting.approvals.len(), 1);
    assert_eq!(waiting.approvals[0].approval_id, approvals[0].id);

    world
        .runs
        .decide(
            &approvals[0].id,
            &alice.id,
            false,
            "alice",
            Decision::Approve,
        )
        .await
        .unwrap();
    let events = world.ended_log(&run).await;
    drop(second);
    assert_eq!(world.run(&run).await.status, RunStatus::Succeeded);
    assert!(
        starts(&events)[1..].iter().all(|&(_, resume)| resume == 2),
        "every later attempt goes on after the waiting step: {:?}",
        starts(&events)
    );
    assert_eq!(tools_started(&events), ["current_time"], "it ran once");
    let seen = fold(&events);
    assert!(seen.succeeded());
    assert_eq!(seen.approvals.len(), 1);
    assert!(seen.approvals[0].decided.is_some());
    let msgs = world.messages(&alice, &s).await;
    let tool: Vec<_> = msgs.iter().filter(|m| m.role == "tool").collect();
    assert_eq!(tool.len(), 1, "{msgs:?}");
    let expected = format!("tool current_time said: {}", tool[0].content);
    assert_eq!(replies(&msgs), [expected.as_str()]);
    assert_eq!(seen.text(), expected);
}
