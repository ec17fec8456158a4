//! Approvals below the run service: a decision keeps the deciding request's
//! trace context on the run, and the claim of the stretch that resumes returns
//! it — also when the decision came before the worker handed the run to the
//! database, and the worker's own job resumes it (what made the resumed span
//! link to the wrong trace in a fresh-clone CI run).

use weft_store::{Decision, NewApproval, PendingStep, WaitOutcome};

use crate::both_backends;
use crate::harness::{Db, claim, session, start, user};

both_backends!(a_decision_before_the_wait_is_still_the_one_the_resume_links_to);

const DECIDING: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

async fn a_decision_before_the_wait_is_still_the_one_the_resume_links_to(db: Db) {
    let s = &db.store;
    let alice = user(&db, "alice").await;
    let ses = session(&db, &alice).await;
    let run = start(&db, &alice.id, &ses.id, "time?").await.run_id;
    let first = claim(&db, &run, "w1").await;
    assert_eq!(first.resumed_by, None);
    let pending = PendingStep {
        reasoning: Vec::new(),
        step: 1,
        content: String::new(),
        tool_calls: Vec::new(),
    };
    let asked = NewApproval {
        id: "ap_1".into(),
        call_id: "c_1".into(),
        name: "current_time".into(),
        args: serde_json::json!({}),
        expires_at: weft_shared::time::now_ms() + 60_000,
    };
    assert!(
        s.store_waits(
            &run,
            "w1",
            &pending,
            &weft_store::NewWaits {
                approvals: vec![asked],
                questions: Vec::new(),
                plans: Vec::new(),
                delegations: Vec::new()
            }
        )
        .await
        .unwrap()
    );
    // Decided while the worker is still on its way to the wait.
    s.decide_approval(
        "ap_1",
        &alice.id,
        false,
        "alice",
        Decision::Approve,
        Some(DECIDING),
    )
    .await
    .unwrap();
    let waited = s.suspend_run(&run, "w1", 3).await.unwrap();
    assert_eq!(
        waited,
        WaitOutcome::Decided,
        "the worker requeues it itself"
    );
    let resumed = claim(&db, &run, "w2").await;
    assert!(resumed.pending_step.is_some());
    assert_eq!(resumed.resumed_by.as_deref(), Some(DECIDING));
}
