//! Runs in a worker's hands: `claim` (compare-and-set, takeover of a stale
//! lease, the attempt budget, heartbeats and the seq high-water mark, step
//! checkpoints, giving a run back) and `end` (finished, lost, deleted, the
//! follow-up, cancel).

use weft_shared::api::UsageDto;
use weft_shared::ids::{RunId, SessionId, UserId};
use weft_store::{
    ClaimedRun, FinishOutcome, RunEnd, RunLimits, SendOutcome, StepCheckpoint, ToolResult,
};

use crate::harness::{Db, req, session, start, user};

mod claim;
mod end;

pub struct One {
    pub user: UserId,
    pub session: SessionId,
    pub run: RunId,
}

pub async fn one_run(db: &Db) -> One {
    let alice = user(db, "alice").await;
    let sess = session(db, &alice).await;
    let run = start(db, &alice.id, &sess.id, "hello").await;
    One {
        user: alice.id,
        session: sess.id,
        run: run.run_id,
    }
}

pub async fn wait_behind(db: &Db, one: &One, text: &str) {
    let out = db
        .store
        .send_message(&req(&one.user, &one.session, text))
        .await
        .unwrap();
    assert!(matches!(out, SendOutcome::Queued { .. }), "{out:?}");
}

pub fn succeeded(text: &str) -> RunEnd {
    RunEnd::Succeeded {
        content: text.into(),
        step: 1,
        citations: Vec::new(),
        reasoning: Vec::new(),
    }
}

pub async fn finish(db: &Db, run: &ClaimedRun, worker: &str, end: RunEnd) -> FinishOutcome {
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

pub fn step(n: u32, text: &str) -> StepCheckpoint {
    StepCheckpoint {
        reasoning: Vec::new(),
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

pub async fn run_messages(db: &Db, run: &RunId) -> i64 {
    db.count(format!(
        "select count(*) from messages where run_id = '{run}'"
    ))
    .await
}
