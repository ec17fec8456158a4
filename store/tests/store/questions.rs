//! Questions (`ask_user`), the second kind of wait, below the run service: a
//! step waiting on a question suspends the run as `waiting_input` (active: the
//! session takes no second run); the first answer stands and puts the run back
//! on the queue; an answer a question does not take is refused and changes
//! nothing; another person gets not-found; an expired question resumes the run
//! with nothing to say; and a step waiting on an approval and a question waits
//! for both.

use weft_shared::ids::RunId;
use weft_shared::time::now_ms;
use weft_store::{
    AnswerOutcome, Answerer, AuthUser, Decision, NewApproval, NewQuestion, PendingStep,
    QuestionStatus, RunStatus, SessionRecord, StoreError, WaitOutcome,
};

use crate::both_backends;
use crate::harness::{Db, claim, session, start, user};

both_backends!(
    the_first_answer_stands_and_resumes_the_run,
    a_step_waits_for_its_approval_and_its_question,
    an_expired_question_resumes_the_run_unanswered
);

fn who<'a>(user: &'a AuthUser, name: &'a str) -> Answerer<'a> {
    Answerer {
        user: &user.id,
        admin: false,
        name,
    }
}

/// Alice's run in a session of hers, claimed by worker `w1`.
async fn claimed(db: &Db, text: &str) -> (AuthUser, SessionRecord, RunId) {
    let alice = user(db, "alice").await;
    let ses = session(db, &alice).await;
    let run = start(db, &alice.id, &ses.id, text).await.run_id;
    claim(db, &run, "w1").await;
    (alice, ses, run)
}

fn pending() -> PendingStep {
    PendingStep {
        reasoning: Vec::new(),
        step: 1,
        content: "Let me ask.".into(),
        tool_calls: Vec::new(),
    }
}

fn question(id: &str, options: &[&str], allow_text: bool, expires_at: i64) -> NewQuestion {
    NewQuestion {
        id: id.into(),
        call_id: format!("call_{id}"),
        question: "Which colour?".into(),
        options: options.iter().map(|o| o.to_string()).collect(),
        multiple: false,
        allow_text,
        expires_at,
    }
}

async fn status(db: &Db, run: &RunId) -> RunStatus {
    db.store.get_run_unscoped(run).await.unwrap().status
}

async fn the_first_answer_stands_and_resumes_the_run(db: Db) {
    let s = &db.store;
    let (alice, ses, run) = claimed(&db, "paint it").await;
    let bob = user(&db, "bob").await;
    let asked = question("q_1", &["red", "blue"], false, now_ms() + 60_000);
    assert!(
        s.store_waits(
            &run,
            "w1",
            &pending(),
            &weft_store::NewWaits {
                approvals: Vec::new(),
                questions: vec![asked],
                plans: Vec::new(),
                delegations: Vec::new()
            }
        )
        .await
        .unwrap()
    );
    assert_eq!(
        s.suspend_run(&run, "w1", 4).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert_eq!(status(&db, &run).await, RunStatus::WaitingInput);
    assert_eq!(s.session_questions(&ses.id).await.unwrap().len(), 1);
    // Another person: it does not exist for them.
    assert!(matches!(
        s.answer_question("q_1", &who(&bob, "bob"), vec!["red".into()], None, None)
            .await,
        Err(StoreError::NotFound)
    ));
    // Not one of the options (and no typed answers): refused, still open.
    let refused = s
        .answer_question(
            "q_1",
            &who(&alice, "alice"),
            vec!["green".into()],
            None,
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&refused, AnswerOutcome::Invalid { why, .. } if why.contains("not one of the options")),
        "{refused:?}"
    );
    let two = s
        .answer_question(
            "q_1",
            &who(&alice, "alice"),
            vec!["red".into(), "blue".into()],
            None,
            None,
        )
        .await
        .unwrap();
    assert!(matches!(two, AnswerOutcome::Invalid { .. }), "{two:?}");
    assert_eq!(status(&db, &run).await, RunStatus::WaitingInput);
    // The answer: trimmed, stored, the run queued again.
    match s
        .answer_question(
            "q_1",
            &who(&alice, "alice"),
            vec![" blue ".into()],
            Some("lark:om_1"),
            None,
        )
        .await
        .unwrap()
    {
        AnswerOutcome::Answered { question, resume } => {
            assert!(resume, "the waiting run goes back to the queue");
            assert_eq!(question.status, QuestionStatus::Answered);
            assert_eq!(question.answer, ["blue"]);
            assert_eq!(question.answered_by.as_deref(), Some("alice"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(status(&db, &run).await, RunStatus::Queued);
    // The second answer: the first stands.
    let again = s
        .answer_question("q_1", &who(&alice, "alice"), vec!["red".into()], None, None)
        .await
        .unwrap();
    assert!(
        matches!(&again, AnswerOutcome::AlreadyAnswered(q) if q.answer == ["blue"]),
        "{again:?}"
    );
    // The same answer made again (a Lark message handled again after a
    // crash) is the one recorded, and is found by its key.
    let same = s
        .answer_question(
            "q_1",
            &who(&alice, "alice"),
            vec!["blue".into()],
            Some("lark:om_1"),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&same, AnswerOutcome::Answered { resume: false, question } if question.answer == ["blue"]),
        "{same:?}"
    );
    let by_key = s.question_answered_by("lark:om_1").await.unwrap();
    assert_eq!(by_key.map(|q| q.id), Some("q_1".to_string()));
    assert!(s.question_answered_by("lark:om_2").await.unwrap().is_none());
    // The Lark card that asks it, once recorded.
    assert_eq!(s.lark_question_card("q_1").await.unwrap(), None);
    s.record_lark_question_card("q_1", "om_card").await.unwrap();
    assert_eq!(
        s.lark_question_card("q_1").await.unwrap().as_deref(),
        Some("om_card")
    );
    // The resuming worker finds the step and its answered question.
    let resumed = claim(&db, &run, "w2").await;
    assert_eq!(resumed.pending_step.map(|p| p.step), Some(1));
    let qs = s.step_questions(&run, 1).await.unwrap();
    assert_eq!(qs.len(), 1);
    assert!(!qs[0].announced);
    s.mark_announced(&weft_store::Announced {
        questions: vec!["q_1".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    assert!(s.step_questions(&run, 1).await.unwrap()[0].announced);
    assert!(s.session_questions(&ses.id).await.unwrap().is_empty());
    // The run still lists it, answered: what its reply shows after a reload.
    let asked = s.run_questions(&run).await.unwrap();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].id, "q_1");
    assert_eq!(asked[0].status, QuestionStatus::Answered);
}

async fn a_step_waits_for_its_approval_and_its_question(db: Db) {
    let s = &db.store;
    let (alice, ses, run) = claimed(&db, "both").await;
    let approval = NewApproval {
        id: "ap_1".into(),
        call_id: "c_ap".into(),
        name: "current_time".into(),
        args: serde_json::json!({}),
        expires_at: now_ms() + 60_000,
    };
    let asked = question("q_2", &[], true, now_ms() + 60_000);
    assert!(
        s.store_waits(
            &run,
            "w1",
            &pending(),
            &weft_store::NewWaits {
                approvals: vec![approval],
                questions: vec![asked],
                plans: Vec::new(),
                delegations: Vec::new()
            }
        )
        .await
        .unwrap()
    );
    // Answered while the worker is still on its way to the wait: the run
    // waits on the approval alone now.
    let early = s
        .answer_question("q_2", &who(&alice, "alice"), vec!["42".into()], None, None)
        .await
        .unwrap();
    assert!(
        matches!(early, AnswerOutcome::Answered { resume: false, .. }),
        "{early:?}"
    );
    // An answer not announced yet sends the run back to a worker, which
    // announces it and waits again.
    assert_eq!(
        s.suspend_run(&run, "w1", 4).await.unwrap(),
        WaitOutcome::Decided
    );
    claim(&db, &run, "w2").await;
    s.mark_announced(&weft_store::Announced {
        questions: vec!["q_2".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    assert_eq!(
        s.suspend_run(&run, "w2", 6).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert_eq!(
        status(&db, &run).await,
        RunStatus::WaitingApproval,
        "only the approval is open"
    );
    // The session is busy meanwhile: one active run.
    let second = s
        .send_message(&crate::harness::req(&alice.id, &ses.id, "and?"))
        .await
        .unwrap();
    assert!(
        !matches!(second, weft_store::SendOutcome::Started { .. }),
        "{second:?}"
    );
    s.decide_approval("ap_1", &alice.id, false, "alice", Decision::Approve, None)
        .await
        .unwrap();
    assert_eq!(status(&db, &run).await, RunStatus::Queued);
}

async fn an_expired_question_resumes_the_run_unanswered(db: Db) {
    let s = &db.store;
    let (alice, _, run) = claimed(&db, "late").await;
    let asked = question("q_3", &["yes", "no"], true, now_ms() + 1_000);
    assert!(
        s.store_waits(
            &run,
            "w1",
            &pending(),
            &weft_store::NewWaits {
                approvals: Vec::new(),
                questions: vec![asked],
                plans: Vec::new(),
                delegations: Vec::new()
            }
        )
        .await
        .unwrap()
    );
    assert_eq!(
        s.suspend_run(&run, "w1", 4).await.unwrap(),
        WaitOutcome::Waiting
    );
    assert!(
        s.expire_waits(now_ms()).await.unwrap().is_empty(),
        "not yet"
    );
    let resumed = s.expire_waits(now_ms() + 2_000).await.unwrap();
    assert_eq!(resumed, std::slice::from_ref(&run));
    assert_eq!(status(&db, &run).await, RunStatus::Queued);
    let q = &s.step_questions(&run, 1).await.unwrap()[0];
    assert_eq!(q.status, QuestionStatus::Expired);
    assert!(q.answer.is_empty());
    let late = s
        .answer_question("q_3", &who(&alice, "alice"), vec!["yes".into()], None, None)
        .await
        .unwrap();
    assert!(
        matches!(late, AnswerOutcome::Expired { resume: false, .. }),
        "{late:?}"
    );
}
