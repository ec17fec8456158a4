//! Plan mode (docs/protocol.md, "Plans"): a run sent with `plan: true`
//! researches with read-only tools only and ends its planning by proposing a
//! plan — its step's text — which suspends the run like an approval (the wait
//! itself: `wait.rs`; the store's side: `store/src/plans.rs`).
//!
//! What the server enforces, whatever the model does: a tool that may change
//! anything is neither offered nor run while planning (`toolrun.rs` refuses
//! it), and a planning step that ends without calling `propose_plan` proposes
//! its text all the same, so a plan-mode run never ends with work done that
//! nobody approved. The run leaves plan mode when a plan is approved (the
//! claim sees the approved row): from then on every tool of the agent works.

use weft_config::Config;
use weft_llm::ToolCall;
use weft_tools::{PROPOSE_PLAN, ToolRegistry};

use super::step::Said;
use super::toolrun::{Disposition, read_only};

/// Added to the system prompt while the run plans.
pub(super) const PLAN_MODE_PROMPT: &str = "\n\n## Plan mode\n\
The person asked for a plan before anything is done. Research with the tools you have: \
only tools that read are available, and any other is refused until the plan is approved. \
Then write the plan as your reply, in Markdown: numbered steps, what each does and touches, \
and what you will not do. Then call propose_plan. The person approves it, rejects it or asks \
for changes; once it is approved you carry it out with all of your tools.";

/// Whether plan mode offers the tool `name`: `propose_plan`, and tools that
/// only read.
pub(super) fn offered_while_planning(registry: &ToolRegistry, cfg: &Config, name: &str) -> bool {
    name == PROPOSE_PLAN
        || registry
            .get(name)
            .is_some_and(|tool| read_only(cfg, tool.as_ref(), name))
}

/// The calls of a finished step, or `None` when the step ends the run: a
/// step without calls ends it — unless the run is planning and the step
/// wrote something, which is then the plan, proposed by a call of
/// `propose_plan` the model left out (id `plan_<step>`).
pub(super) fn calls_of_step(
    planning: bool,
    step: u32,
    said: &Said,
    calls: Vec<ToolCall>,
) -> Option<Vec<ToolCall>> {
    if !calls.is_empty() {
        return Some(calls);
    }
    (planning && !said.text.trim().is_empty()).then(|| {
        vec![ToolCall {
            id: format!("plan_{step}"),
            name: PROPOSE_PLAN.into(),
            args: serde_json::json!({}),
        }]
    })
}

/// A step proposes one plan, and only one that was written: a second
/// `propose_plan`, or one in a step without text, is answered with an error
/// the model can act on.
pub(super) fn one_plan_with_text(said: &Said, disposed: &mut [(ToolCall, Disposition)]) {
    let mut proposed = false;
    for (_, d) in disposed.iter_mut() {
        if *d != Disposition::Plan {
            continue;
        }
        if said.text.trim().is_empty() {
            *d = Disposition::Answer(
                "error: write the plan as your reply's text first (numbered steps in Markdown), \
                 then call propose_plan"
                    .into(),
            );
        } else if proposed {
            *d = Disposition::Answer(
                "error: one plan per step; this call of propose_plan was ignored".into(),
            );
        }
        proposed = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Said {
        Said {
            text: text.into(),
            reasoning: Vec::new(),
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: PROPOSE_PLAN.into(),
            args: serde_json::json!({}),
        }
    }

    #[test]
    fn a_planning_step_without_calls_proposes_its_text() {
        let calls = calls_of_step(true, 3, &said("1. Do it."), Vec::new()).unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(
            (calls[0].id.as_str(), calls[0].name.as_str()),
            ("plan_3", PROPOSE_PLAN)
        );
        // Nothing written, or not planning: the step ends the run.
        assert!(calls_of_step(true, 3, &said("  "), Vec::new()).is_none());
        assert!(calls_of_step(false, 3, &said("1. Do it."), Vec::new()).is_none());
        // The model's own calls stand.
        let own = calls_of_step(true, 3, &said("x"), vec![call("c1")]).unwrap();
        assert_eq!(own[0].id, "c1");
    }

    #[test]
    fn one_plan_per_step_and_only_a_written_one() {
        let mut two = vec![
            (call("a"), Disposition::Plan),
            (call("b"), Disposition::Plan),
        ];
        one_plan_with_text(&said("1. Do it."), &mut two);
        assert_eq!(two[0].1, Disposition::Plan);
        assert!(matches!(&two[1].1, Disposition::Answer(e) if e.contains("one plan per step")));
        let mut blank = vec![(call("a"), Disposition::Plan)];
        one_plan_with_text(&said(""), &mut blank);
        assert!(matches!(&blank[0].1, Disposition::Answer(e) if e.contains("write the plan")));
    }
}
