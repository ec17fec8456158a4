//! A step that waits for people or for other agents (docs/protocol.md,
//! "Approvals", "Questions", "Plans" and "Delegation"; the store's side and
//! its race rule: `store/src/waits/`; delegation: `delegate.rs`).
//! A step with `confirm` calls, `ask_user` calls or a plan (`propose_plan`)
//! suspends the run instead of holding a worker: the pending step and its
//! approvals, questions and plan are stored, `approval_required`, `question`
//! and `plan_proposed` are published, and the run becomes `waiting_approval`
//! (or `waiting_input`, when a question or a plan is open) with no owner.
//! Every decision and answer re-enqueues it; the worker that claims it
//! announces them (`approval_decided`, `question_answered`, `plan_decided`:
//! the run's log keeps one writer and gapless seqs) and either waits again
//! (some still open) or runs the step's calls — approved ones run, denied and
//! expired ones go back to the model as errors it can react to, each
//! question's call returns its answer (or that nobody answered), and the
//! plan's call returns the decision: approved (carry it out), or revise (what
//! to change). A rejected or expired plan ends the run, the plan its reply.

use weft_llm::ToolCall;
use weft_shared::event::EventKind;
use weft_shared::time::now_ms;
use weft_store::{
    Announced, Approval, ApprovalStatus, Delegation, DelegationStatus, NewApproval, NewDelegation,
    NewPlan, NewQuestion, NewWaits, PendingStep, Plan, PlanStatus, Question, QuestionStatus,
    RunEnd, WaitOutcome,
};

use super::step::Said;
use super::toolrun::Disposition;
use super::{Attempt, Flow, Leave, call_dto};

pub(super) async fn suspend(
    a: &mut Attempt<'_>,
    said: Said,
    disposed: Vec<(ToolCall, Disposition)>,
    delegations: Vec<NewDelegation>,
) -> Flow {
    let ttl_ms = a.cfg.tools.approval_ttl_secs as i64 * 1000;
    let expires_at = now_ms() + ttl_ms;
    let approvals: Vec<NewApproval> = disposed
        .iter()
        .filter(|(_, d)| *d == Disposition::Confirm)
        .map(|(c, _)| NewApproval {
            id: format!("ap_{}", uuid::Uuid::now_v7().simple()),
            call_id: c.id.clone(),
            name: c.name.clone(),
            args: c.args.clone(),
            expires_at,
        })
        .collect();
    let questions: Vec<NewQuestion> = disposed
        .iter()
        .filter(|(_, d)| *d == Disposition::Ask)
        .map(|(c, _)| new_question(c, expires_at))
        .collect();
    let plans: Vec<NewPlan> = disposed
        .iter()
        .filter(|(_, d)| *d == Disposition::Plan)
        .map(|(c, _)| NewPlan {
            id: format!("pl_{}", uuid::Uuid::now_v7().simple()),
            call_id: c.id.clone(),
            markdown: said.text.trim().to_string(),
            expires_at,
        })
        .collect();
    let pending = PendingStep {
        step: a.step,
        content: said.text,
        tool_calls: disposed.iter().map(|(c, _)| call_dto(c)).collect(),
        reasoning: said.reasoning,
    };
    let waits = NewWaits {
        approvals,
        questions,
        plans,
        delegations,
    };
    // Stored before they are announced, so an answer as quick as the event
    // finds its row.
    match a
        .inner
        .deps
        .store
        .store_waits(&a.run.id, &a.inner.id, &pending, &waits)
        .await
    {
        Ok(true) => {}
        Ok(false) => return Flow::Leave(Leave::Abandon),
        Err(e) => {
            tracing::error!(error = %e, "storing the step's waits failed; leaving the run to the reaper");
            return Flow::Leave(Leave::Abandon);
        }
    }
    a.inner
        .failure_point(crate::failure::FailurePoint::BeforeAnnouncingWaits)
        .await;
    let step = a.step;
    let asks = (waits.approvals.iter())
        .map(|ap| EventKind::ApprovalRequired {
            step,
            approval_id: ap.id.clone(),
            call_id: ap.call_id.clone(),
            name: ap.name.clone(),
            args: ap.args.clone(),
            expires_at: ap.expires_at,
        })
        .chain(waits.questions.iter().map(|q| EventKind::Question {
            step,
            question_id: q.id.clone(),
            call_id: q.call_id.clone(),
            question: q.question.clone(),
            options: q.options.clone(),
            multiple: q.multiple,
            allow_text: q.allow_text,
            expires_at: q.expires_at,
        }))
        .chain(waits.plans.iter().map(|p| EventKind::PlanProposed {
            step,
            plan_id: p.id.clone(),
            call_id: p.call_id.clone(),
            markdown: p.markdown.clone(),
            expires_at: p.expires_at,
        }))
        .chain(waits.delegations.iter().map(|d| EventKind::AgentStart {
            step,
            delegation_id: d.id.clone(),
            call_id: d.call_id.clone(),
            agent: d.agent.clone(),
            task: d.task.clone(),
            child_session_id: d.child_session.clone(),
            child_run_id: d.child_run.clone(),
        }))
        .collect::<Vec<_>>();
    for event in asks {
        a.em.emit(event).await;
    }
    // Announced first, so the parent's viewers hear of a child before it
    // speaks; stored before either, so a child lost here is a queued run the
    // reaper enqueues.
    a.em.flush().await;
    for d in &waits.delegations {
        a.inner.runs.enqueue(d.child_run.clone()).await;
    }
    metrics::counter!("weft_approvals_requested_total").increment(waits.approvals.len() as u64);
    metrics::counter!("weft_delegations_started_total").increment(waits.delegations.len() as u64);
    metrics::counter!("weft_questions_asked_total").increment(waits.questions.len() as u64);
    metrics::counter!("weft_plans_proposed_total").increment(waits.plans.len() as u64);
    wait(a).await
}

/// An `ask_user` call as the question it asks (its arguments were checked
/// against the tool's schema).
fn new_question(c: &ToolCall, expires_at: i64) -> NewQuestion {
    let options: Vec<String> = c.args["options"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|o| o.as_str())
                .map(|o| o.trim().to_string())
                .filter(|o| !o.is_empty())
                .collect()
        })
        .unwrap_or_default();
    NewQuestion {
        id: format!("q_{}", uuid::Uuid::now_v7().simple()),
        call_id: c.id.clone(),
        question: c.args["question"].as_str().unwrap_or_default().to_string(),
        multiple: c.args["multiple"].as_bool().unwrap_or(false) && !options.is_empty(),
        // A question without options takes a typed answer.
        allow_text: c.args["allow_text"].as_bool().unwrap_or(true) || options.is_empty(),
        options,
        expires_at,
    }
}

/// Hand the run to the database as waiting (or straight back to the queue
/// when everything was answered meanwhile).
async fn wait(a: &mut Attempt<'_>) -> Flow {
    a.em.flush().await;
    a.inner
        .failure_point(crate::failure::FailurePoint::WhileSuspending)
        .await;
    match a
        .inner
        .deps
        .store
        .suspend_run(&a.run.id, &a.inner.id, a.em.seq())
        .await
    {
        Ok(WaitOutcome::Waiting) => Flow::Leave(Leave::Waiting),
        Ok(WaitOutcome::Decided) => {
            a.inner.runs.requeue(a.run.id.clone()).await;
            Flow::Leave(Leave::Waiting)
        }
        Ok(WaitOutcome::Lost) => Flow::Leave(Leave::Abandon),
        Err(e) => {
            tracing::error!(error = %e, "suspending the run failed; leaving the run to the reaper");
            Flow::Leave(Leave::Abandon)
        }
    }
}

/// The run was claimed with a step waiting for people.
pub(super) async fn resume(a: &mut Attempt<'_>, pending: PendingStep) -> Flow {
    let store = &a.inner.deps.store;
    let loaded = tokio::try_join!(
        store.step_approvals(&a.run.id, pending.step),
        store.step_questions(&a.run.id, pending.step),
        store.step_plans(&a.run.id, pending.step),
        store.step_delegations(&a.run.id, pending.step),
    );
    let (approvals, questions, plans, delegations) = match loaded {
        Ok(all) => all,
        Err(e) => {
            tracing::error!(error = %e, "loading the step's waits failed; leaving the run to the reaper");
            return Flow::Leave(Leave::Abandon);
        }
    };
    let waits = StepWaits {
        approvals: &approvals,
        questions: &questions,
        plans: &plans,
        delegations: &delegations,
    };
    // An attempt after the first of a stretch took the run over from one that
    // may have died between storing the step's waits and announcing them
    // (`suspend_run` starts each waiting stretch again at attempt 0): the
    // open ones are announced again, a repeat clients fold by id rather than
    // a wait nobody hears of.
    if a.run.attempt > 1 {
        ask_again(a, pending.step, &waits).await;
    }
    let announced = announce(a, pending.step, &waits).await;
    if let Err(e) = store.mark_announced(&announced).await {
        // A later resume announces them again: a repeat, never a loss.
        tracing::warn!(error = %e, "marking answers announced failed");
    }
    if approvals
        .iter()
        .any(|ap| ap.status == ApprovalStatus::Pending)
        || questions
            .iter()
            .any(|q| q.status == QuestionStatus::Pending)
        || plans.iter().any(|p| p.status == PlanStatus::Proposed)
        || delegations
            .iter()
            .any(|d| d.status == DelegationStatus::Running)
    {
        return wait(a).await;
    }
    // A plan turned down ends the run: nothing of it is carried out, and the
    // plan is the reply.
    if plans
        .iter()
        .any(|p| matches!(p.status, PlanStatus::Rejected | PlanStatus::Expired))
    {
        return Flow::End(RunEnd::Succeeded {
            content: pending.content,
            step: pending.step,
            citations: Vec::new(),
            reasoning: pending.reasoning,
        });
    }
    // A step made while planning is judged as it was made: its calls that may
    // change things stay refused, even once its plan is approved.
    let runner = match a.runner(a.run.planning || !plans.is_empty()).await {
        Ok(r) => r,
        Err(flow) => return flow,
    };
    let calls: Vec<ToolCall> = pending
        .tool_calls
        .into_iter()
        .map(|c| ToolCall {
            id: c.id,
            name: c.name,
            args: c.args,
        })
        .collect();
    // An approval stands for the one call it showed: same id, tool and
    // arguments. (Ids are unique in a step stored since issue 20; one stored
    // before may repeat an id, and then only its first call can match.)
    let disposed = runner.dispose_step(calls, |call| {
        if let Some(q) = questions.iter().find(|q| q.call_id == call.id) {
            return Some(Disposition::Answered(answer_for_the_model(q)));
        }
        if let Some(p) = plans.iter().find(|p| p.call_id == call.id) {
            return Some(Disposition::Answered(decision_for_the_model(p)));
        }
        if let Some(d) = delegations.iter().find(|d| d.call_id == call.id) {
            return Some(super::delegate::outcome_for_the_model(d));
        }
        let ap = approvals
            .iter()
            .find(|ap| ap.call_id == call.id && ap.name == call.name && ap.args == call.args)?;
        Some(match ap.status {
            ApprovalStatus::Approved => Disposition::Run,
            ApprovalStatus::Denied => Disposition::Answer(format!(
                "error: the user{} denied this call of {}; it did not run",
                ap.decided_by
                    .as_deref()
                    .map(|u| format!(" ({u})"))
                    .unwrap_or_default(),
                call.name
            )),
            ApprovalStatus::Expired | ApprovalStatus::Pending => Disposition::Answer(format!(
                "error: nobody approved this call of {} in time; it did not run",
                call.name
            )),
        })
    });
    let mut disposed = disposed;
    super::delegate::refused_again(a, &mut disposed).await;
    let said = Said {
        text: pending.content,
        reasoning: pending.reasoning,
    };
    a.run_tools(&runner, said, disposed).await
}

/// What a resumed step waited for, of each kind.
struct StepWaits<'w> {
    approvals: &'w [Approval],
    questions: &'w [Question],
    plans: &'w [Plan],
    delegations: &'w [Delegation],
}

/// Announces again what the step still waits for (see [`resume`]).
async fn ask_again(a: &mut Attempt<'_>, step: u32, waits: &StepWaits<'_>) {
    let open = (waits.approvals.iter())
        .filter(|ap| ap.status == ApprovalStatus::Pending)
        .map(|ap| EventKind::ApprovalRequired {
            step,
            approval_id: ap.id.clone(),
            call_id: ap.call_id.clone(),
            name: ap.name.clone(),
            args: ap.args.clone(),
            expires_at: ap.expires_at,
        })
        .chain(
            (waits.questions.iter())
                .filter(|q| q.status == QuestionStatus::Pending)
                .map(|q| EventKind::Question {
                    step,
                    question_id: q.id.clone(),
                    call_id: q.call_id.clone(),
                    question: q.question.clone(),
                    options: q.options.clone(),
                    multiple: q.multiple,
                    allow_text: q.allow_text,
                    expires_at: q.expires_at,
                }),
        )
        .chain(
            (waits.plans.iter())
                .filter(|p| p.status == PlanStatus::Proposed)
                .map(|p| EventKind::PlanProposed {
                    step,
                    plan_id: p.id.clone(),
                    call_id: p.call_id.clone(),
                    markdown: p.markdown.clone(),
                    expires_at: p.expires_at,
                }),
        )
        .chain(
            (waits.delegations.iter())
                .filter(|d| d.status == DelegationStatus::Running)
                .map(|d| EventKind::AgentStart {
                    step,
                    delegation_id: d.id.clone(),
                    call_id: d.call_id.clone(),
                    agent: d.agent.clone(),
                    task: d.task.clone(),
                    child_session_id: d.child_session_id.clone(),
                    child_run_id: d.child_run_id.clone(),
                }),
        )
        .collect::<Vec<_>>();
    for event in open {
        a.em.emit(event).await;
    }
}

/// Publishes the decisions, answers and ends not announced yet; their ids.
async fn announce(a: &mut Attempt<'_>, step: u32, waits: &StepWaits<'_>) -> Announced {
    let StepWaits {
        approvals,
        questions,
        plans,
        delegations,
    } = *waits;
    let mut done = Announced::default();
    for ap in approvals.iter().filter(|ap| !ap.announced) {
        let Some(decision) = ap.status.verdict() else {
            continue;
        };
        a.em.emit(EventKind::ApprovalDecided {
            step,
            approval_id: ap.id.clone(),
            call_id: ap.call_id.clone(),
            name: ap.name.clone(),
            decision,
            by: ap.decided_by.clone(),
        })
        .await;
        done.approvals.push(ap.id.clone());
    }
    for q in questions
        .iter()
        .filter(|q| !q.announced && q.status != QuestionStatus::Pending)
    {
        a.em.emit(EventKind::QuestionAnswered {
            step,
            question_id: q.id.clone(),
            call_id: q.call_id.clone(),
            status: q.status,
            answer: q.answer.clone(),
            by: q.answered_by.clone(),
        })
        .await;
        done.questions.push(q.id.clone());
    }
    for p in plans
        .iter()
        .filter(|p| !p.announced && p.status != PlanStatus::Proposed)
    {
        a.em.emit(EventKind::PlanDecided {
            step,
            plan_id: p.id.clone(),
            call_id: p.call_id.clone(),
            status: p.status,
            comment: p.comment.clone(),
            by: p.decided_by.clone(),
        })
        .await;
        done.plans.push(p.id.clone());
    }
    for d in delegations
        .iter()
        .filter(|d| !d.announced && d.status != DelegationStatus::Running)
    {
        a.em.emit(EventKind::AgentEnd {
            step,
            delegation_id: d.id.clone(),
            call_id: d.call_id.clone(),
            agent: d.agent.clone(),
            child_run_id: d.child_run_id.clone(),
            status: d.status,
        })
        .await;
        metrics::counter!("weft_delegations_ended_total", "status" => d.status.as_str())
            .increment(1);
        done.delegations.push(d.id.clone());
    }
    a.em.flush().await;
    done
}

/// What the model is told was decided about its plan (a plan turned down
/// ends the run before the model hears of it).
fn decision_for_the_model(p: &Plan) -> String {
    let who = p
        .decided_by
        .as_deref()
        .map(|u| format!(" ({u})"))
        .unwrap_or_default();
    match p.status {
        PlanStatus::Revised => format!(
            "The user{who} asked for changes to the plan: {}\n\nStill in plan mode: write the \
             revised plan in full, then call propose_plan again.",
            p.comment.as_deref().unwrap_or_default()
        ),
        _ => {
            let note = p
                .comment
                .as_deref()
                .map(|c| format!(" They added: {c}"))
                .unwrap_or_default();
            format!(
                "The user{who} approved the plan.{note} Plan mode is over: carry the plan out \
                 now, step by step, with all of your tools."
            )
        }
    }
}

/// What the model is told a question's answer was.
fn answer_for_the_model(q: &Question) -> String {
    match q.status {
        QuestionStatus::Answered if q.answer.len() > 1 => format!(
            "The user{} chose: {}",
            by(q),
            q.answer
                .iter()
                .map(|a| format!("{a:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        QuestionStatus::Answered => format!(
            "The user{} answered: {}",
            by(q),
            q.answer.first().map(String::as_str).unwrap_or_default()
        ),
        QuestionStatus::Expired | QuestionStatus::Pending => {
            "No answer: nobody answered the question in time. Go on without it, or say what you \
             still need."
                .into()
        }
    }
}

fn by(q: &Question) -> String {
    q.answered_by
        .as_deref()
        .map(|u| format!(" ({u})"))
        .unwrap_or_default()
}
