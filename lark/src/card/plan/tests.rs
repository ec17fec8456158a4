use super::*;

fn plan(markdown: &str, answer: PlanAnswer) -> PlanCard {
    let mut context = Map::new();
    context.insert("run_id".into(), json!("r1"));
    PlanCard {
        plan_id: "pl_1".into(),
        markdown: markdown.into(),
        context,
        answer,
    }
}

fn open() -> PlanAnswer {
    PlanAnswer::Open {
        expires_in: Duration::from_secs(1800),
    }
}

fn buttons(card: &Value) -> Vec<Value> {
    card["body"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["tag"] == "column_set")
        .flat_map(|set| set["columns"].as_array().unwrap().clone())
        .flat_map(|col| col["elements"].as_array().unwrap().clone())
        .collect()
}

fn text(card: &Value, id: &str) -> String {
    card["body"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["element_id"] == id)
        .filter_map(|e| e["content"].as_str())
        .collect()
}

#[test]
fn an_open_plan_has_approve_and_reject_whose_clicks_read_back() {
    let card = plan("1. Read the code.\n2. Fix the bug.", open()).render();
    assert_eq!(card["header"]["template"], "orange");
    assert_eq!(
        card["header"]["title"]["content"],
        "📋 A plan for your approval"
    );
    assert_eq!(
        text(&card, "plan_text"),
        "1. Read the code.\n2. Fix the bug."
    );
    let hint = text(&card, "plan_answer");
    assert!(
        hint.contains("To ask for changes, reply in this chat.") && hint.contains("30 min"),
        "{hint}"
    );
    let buttons = buttons(&card);
    let labels: Vec<&str> = buttons
        .iter()
        .map(|b| b["text"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Approve", "Reject"]);
    let clicks: Vec<PlanClick> = buttons
        .iter()
        .map(|b| PlanClick::parse(&b["behaviors"][0]["value"]).unwrap())
        .collect();
    assert_eq!(
        clicks.iter().map(|c| c.choice).collect::<Vec<_>>(),
        [PlanChoice::Approve, PlanChoice::Reject]
    );
    assert!(clicks.iter().all(|c| c.plan_id == "pl_1"));
    assert_eq!(clicks[0].context["run_id"], "r1");
}

#[test]
fn a_decided_plan_says_who_decided_what_without_buttons() {
    let approved = plan(
        "1. Do it.",
        PlanAnswer::Approved {
            by: "Alice".into(),
            comment: None,
        },
    )
    .render();
    assert!(buttons(&approved).is_empty());
    assert_eq!(approved["header"]["template"], "green");
    assert_eq!(text(&approved, "plan_answer"), "✅ Approved by Alice");
    assert_eq!(text(&approved, "plan_text"), "1. Do it.", "the plan stays");

    let revised = plan(
        "1. Do it.",
        PlanAnswer::Revised {
            by: "Alice".into(),
            comment: "add a test\nfirst".into(),
        },
    );
    let card = revised.render();
    assert!(buttons(&card).is_empty());
    assert_eq!(card["header"]["template"], "grey");
    assert_eq!(
        text(&card, "plan_answer"),
        "✏️ Alice asked for changes: add a test first"
    );
    assert_eq!(
        text(&revised.render_in(Lang::Zh), "plan_answer"),
        "✏️ Alice 要求修改：add a test first"
    );

    let rejected = plan(
        "1. Do it.",
        PlanAnswer::Rejected {
            by: "<at id=all></at>".into(),
            comment: Some("too risky".into()),
        },
    )
    .render_in(Lang::Zh);
    assert_eq!(rejected["header"]["template"], "red");
    assert_eq!(rejected["header"]["title"]["content"], "计划已否决");
    assert_eq!(
        text(&rejected, "plan_answer"),
        "❌ &lt;at id=all></at> 已否决：too risky"
    );

    let expired = plan("1. Do it.", PlanAnswer::Expired).render();
    assert_eq!(expired["header"]["template"], "grey");
    assert!(text(&expired, "plan_answer").starts_with("⌛ Nobody decided in time"));
    let closed = plan("1. Do it.", PlanAnswer::Closed).render_in(Lang::Zh);
    assert_eq!(text(&closed, "plan_answer"), "🛑 回复已结束，无人回应");
    assert!(buttons(&closed).is_empty());
}

#[test]
fn a_chinese_chat_gets_a_chinese_card() {
    let card = plan("1. 读代码。", open()).render_in(Lang::Zh);
    assert_eq!(card["header"]["title"]["content"], "📋 请审批计划");
    let labels: Vec<String> = buttons(&card)
        .iter()
        .map(|b| b["text"]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, ["批准", "否决"]);
    assert!(
        text(&card, "plan_answer").contains("在本对话中回复即可"),
        "{card}"
    );
}

#[test]
fn a_long_plan_is_cut_and_says_where_the_rest_is() {
    let step = "1. A step that is rather long, so the plan grows past the card.\n";
    let long = format!("```text\n{}```", step.repeat(600));
    let card = plan(&long, open()).render();
    let shown = text(&card, "plan_text");
    assert!(shown.len() <= PLAN_SHOWN_BYTES + 200, "{}", shown.len());
    assert!(
        shown.ends_with("_… cut here: the whole plan is in the reply above and on the web page._"),
        "{}",
        &shown[shown.len() - 200..]
    );
    let fences = shown.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "the cut closes its code fence");
    assert!(
        serde_json::to_string(&card).unwrap().len() < 20_000,
        "far below Lark's 30 KB"
    );
    // Nothing cut, nothing said.
    let short = plan("1. Do it.", open()).render();
    assert!(!text(&short, "plan_text").contains("cut here"));
}

#[test]
fn the_plan_cannot_mention_anyone() {
    let card = plan("1. Ping <at id=all></at>.", open()).render();
    assert!(!text(&card, "plan_text").contains("<at"), "{card}");
}

#[test]
fn other_values_are_not_clicks() {
    assert_eq!(
        PlanClick::parse(&json!({"approval_id": "a", "decision": "approve"})),
        None
    );
    assert_eq!(
        PlanClick::parse(&json!({"plan_id": "", "decision": "approve"})),
        None
    );
    assert_eq!(
        PlanClick::parse(&json!({"plan_id": "p", "decision": "revise"})),
        None,
        "a revise is a reply, never a button"
    );
    assert_eq!(PlanClick::parse(&json!("approve")), None);
}
