//! Delegation (docs/protocol.md, "Delegation"; the store's side:
//! `store/src/delegations.rs`). A step's `delegate` calls are a wait
//! like an approval (`wait.rs`): each task becomes a run of its own in a child
//! session, stored with the step, announced (`agent_start`) and enqueued; the
//! run waits as `waiting_agents` holding no worker. Each child's end puts the
//! parent back on the queue; the worker that resumes it announces the ends
//! (`agent_end`) and, once every child of the step ended, gives each call its
//! child's answer as the result — or, for a child that failed or was
//! cancelled, an error the model can react to.
//!
//! A child is an ordinary run: any worker claims it, a SIGKILL mid-child
//! costs the child an attempt (its parent never notices), and limits, tools
//! and policies are its own agent's. What is checked here: the agent exists
//! (the call's agent being one this agent may delegate to, and the depth, are
//! `toolrun.rs`'s).

use weft_llm::ToolCall;
use weft_shared::ids::{RunId, SessionId};
use weft_store::{Delegation, DelegationStatus, NewDelegation, StoreError};

use super::Attempt;
use super::toolrun::Disposition;

/// The delegations of a step's `delegate` calls; a call naming an agent that
/// does not exist (or cannot be read) is answered with an error instead.
pub(super) async fn prepare(
    a: &Attempt<'_>,
    disposed: &mut [(ToolCall, Disposition)],
) -> Vec<NewDelegation> {
    let mut out = Vec::new();
    for (call, d) in disposed.iter_mut() {
        if *d != Disposition::Delegate {
            continue;
        }
        let agent = call.args["agent"].as_str().unwrap_or_default();
        let task = call.args["task"].as_str().unwrap_or_default().trim();
        if task.is_empty() {
            *d = Disposition::Answer("error: the task is empty; say what to do".into());
            continue;
        }
        match a.inner.deps.store.get_agent(agent).await {
            Ok(rec) => {
                // The agent's own model when it names one still configured,
                // else this run's.
                let model = rec
                    .spec
                    .model
                    .filter(|m| a.providers.get(m).is_some())
                    .unwrap_or_else(|| a.run.model.clone());
                out.push(NewDelegation {
                    id: format!("dg_{}", uuid::Uuid::now_v7().simple()),
                    call_id: call.id.clone(),
                    agent: agent.to_string(),
                    task: task.to_string(),
                    model,
                    child_session: SessionId::new(),
                    child_run: RunId::new(),
                });
            }
            Err(StoreError::NotFound) => {
                *d = Disposition::Answer(format!(
                    "error: there is no agent {agent:?}; nothing was delegated"
                ));
            }
            Err(e) => {
                tracing::warn!(error = %e, agent, "loading a delegate's agent failed");
                *d = Disposition::Answer(format!(
                    "error: the agent {agent:?} could not be loaded; nothing was delegated"
                ));
            }
        }
    }
    out
}

/// A resumed step's `delegate` calls that made no child: `prepare` refused
/// them when the step was made, and is asked again for the same answer. (One
/// it would accept now — its agent made meanwhile — made nothing then, and
/// says so.)
pub(super) async fn refused_again(a: &Attempt<'_>, disposed: &mut [(ToolCall, Disposition)]) {
    let accepted_now = prepare(a, disposed).await;
    for (call, d) in disposed.iter_mut() {
        if let Some(n) = accepted_now.iter().find(|n| n.call_id == call.id) {
            *d = Disposition::Answer(format!(
                "error: the agent {:?} was not available when this call was made; nothing was \
                 delegated",
                n.agent
            ));
        }
    }
}

/// A `delegate` call's answer once its child ended: the child's answer, or
/// an error saying what became of it.
pub(super) fn outcome_for_the_model(d: &Delegation) -> Disposition {
    let result = d.result.as_deref().unwrap_or_default();
    match d.status {
        DelegationStatus::Succeeded => Disposition::Answered(if result.trim().is_empty() {
            format!("({} answered nothing)", d.agent)
        } else {
            result.to_string()
        }),
        DelegationStatus::Failed => Disposition::Answer(format!(
            "error: the agent {} failed at the task ({result}); nothing more came of it",
            d.agent
        )),
        DelegationStatus::Cancelled => Disposition::Answer(if result.trim().is_empty() {
            format!("error: the agent {}'s run was cancelled", d.agent)
        } else {
            format!(
                "error: the agent {}'s run was cancelled; what it had said: {result}",
                d.agent
            )
        }),
        DelegationStatus::Running => {
            Disposition::Answer(format!("error: the agent {} has not finished", d.agent))
        }
    }
}
