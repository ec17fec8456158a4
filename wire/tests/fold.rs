//! The shared table of fold cases (`fold_cases.json`), run against
//! `weft_wire::fold`; the web's reducer runs the same table
//! (`web/src/stream/fold_cases.test.ts`).

use serde_json::{Value, json};
use weft_wire::event::RunEvent;
use weft_wire::fold::{Outcome, RunFold};

/// The fold as the table states it.
fn seen(fold: &RunFold) -> Value {
    let steps: Vec<Value> = fold
        .steps
        .iter()
        .filter(|(_, s)| !s.text.is_empty() || !s.thinking.is_empty())
        .map(|(step, s)| json!({"step": step, "text": s.text, "thinking": s.thinking}))
        .collect();
    let mut tools: Vec<Value> = fold
        .tools
        .iter()
        .map(|t| {
            json!({
                "call_id": t.call_id,
                "status": fold.tool_status(t).as_str(),
                "decision": fold.decision(t).map(|d| d.decision.as_str()),
            })
        })
        .collect();
    tools.sort_by_key(|t| t["call_id"].as_str().unwrap_or_default().to_string());
    let outcome = match &fold.outcome {
        None => Value::Null,
        Some(Outcome::Done) => json!("done"),
        Some(Outcome::Failed(_)) => json!("error"),
        Some(Outcome::Cancelled { .. }) => json!("cancelled"),
    };
    json!({"steps": steps, "tools": tools, "outcome": outcome})
}

fn check(name: &str, fold: &mut RunFold, events: &Value, expect: &Value) {
    for e in events.as_array().expect("events") {
        let ev: RunEvent = serde_json::from_value(e.clone())
            .unwrap_or_else(|err| panic!("{name}: a wire event: {err}: {e}"));
        fold.apply(&ev);
    }
    let mut got = seen(fold);
    if let Some(recalled) = expect.get("memories") {
        got["memories"] = json!(
            fold.memories
                .iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>()
        );
        assert_eq!(&got["memories"], recalled, "{name}: memories");
    }
    if let Some(listed) = expect.get("todos") {
        got["todos"] = json!(
            fold.todos
                .iter()
                .flatten()
                .map(|i| [i.id.clone(), status_name(i.status)])
                .collect::<Vec<_>>()
        );
        assert_eq!(&got["todos"], listed, "{name}: todos");
    }
    if let Some(cited) = expect.get("citations") {
        got["citations"] = json!(fold.citations.iter().map(|c| c.n).collect::<Vec<_>>());
        assert_eq!(&got["citations"], cited, "{name}: citations");
    }
    if let Some(asked) = expect.get("questions") {
        got["questions"] = json!(
            fold.questions
                .iter()
                .map(|q| json!({
                    "question_id": q.question_id,
                    "status": q.answered.as_ref().map_or("pending", |a| a.status.as_str()),
                    "answer": q.answered.as_ref().map(|a| a.answer.clone()).unwrap_or_default(),
                }))
                .collect::<Vec<_>>()
        );
        assert_eq!(&got["questions"], asked, "{name}: questions");
    }
    if let Some(proposed) = expect.get("plans") {
        got["plans"] = json!(
            fold.plans
                .iter()
                .map(|p| json!({
                    "plan_id": p.plan_id,
                    "status": p.decided.as_ref().map_or("proposed", |d| d.status.as_str()),
                    "comment": p.decided.as_ref().and_then(|d| d.comment.clone()),
                }))
                .collect::<Vec<_>>()
        );
        assert_eq!(&got["plans"], proposed, "{name}: plans");
    }
    if let Some(delegated) = expect.get("delegations") {
        got["delegations"] = json!(
            fold.delegations
                .iter()
                .map(|d| json!({
                    "delegation_id": d.delegation_id,
                    "agent": d.agent,
                    "run_id": d.run_id,
                    "status": d.status.as_str(),
                }))
                .collect::<Vec<_>>()
        );
        assert_eq!(&got["delegations"], delegated, "{name}: delegations");
    }
    if let Some(working) = expect.get("still_working") {
        got["still_working"] = json!(fold.still_working);
        assert_eq!(&got["still_working"], working, "{name}: still_working");
    }
    for key in ["steps", "tools", "outcome"] {
        assert_eq!(got[key], expect[key], "{name}: {key}");
    }
}

#[test]
fn the_shared_cases_fold_as_the_table_says() {
    let table: Value =
        serde_json::from_str(include_str!("fold_cases.json")).expect("fold_cases.json");
    let cases = table["cases"].as_array().expect("cases");
    assert!(cases.len() >= 8);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let mut fold = RunFold::default();
        check(name, &mut fold, &case["events"], &case["expect"]);
        if let Some(then) = case.get("then") {
            check(name, &mut fold, &then["events"], &then["expect"]);
        }
    }
}

fn status_name(s: weft_wire::api::TodoStatus) -> String {
    serde_json::to_value(s)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

/// The REPL redraws its "still working" line from these changes alone.
#[test]
fn still_working_is_reported_when_it_is_set_moves_on_and_clears() {
    use weft_wire::event::EventKind;
    use weft_wire::fold::Change;
    use weft_wire::ids::RunId;
    let mut fold = RunFold::default();
    let mut seq = 0;
    let mut apply = |kind: EventKind| {
        seq += 1;
        let ev = RunEvent {
            run_id: RunId("r".into()),
            seq,
            ts: 0,
            kind,
        };
        (fold.apply(&ev), fold.still_working)
    };
    let beat = |elapsed_ms, idle_ms| EventKind::Heartbeat {
        elapsed_ms,
        idle_ms,
    };
    assert_eq!(apply(beat(30_000, 30_000)), (vec![], None));
    assert_eq!(
        apply(beat(200_000, 180_000)),
        (vec![Change::StillWorking], Some(200_000))
    );
    assert_eq!(
        apply(beat(230_000, 210_000)),
        (vec![Change::StillWorking], Some(230_000))
    );
    let text = EventKind::Text {
        step: 1,
        delta: "at last".into(),
    };
    assert_eq!(
        apply(text),
        (
            vec![
                Change::Text {
                    step: 1,
                    delta: "at last".into()
                },
                Change::StillWorking
            ],
            None
        )
    );
}
