use super::*;

fn question(options: &[&str], multiple: bool, allow_text: bool) -> QuestionCard {
    let mut context = Map::new();
    context.insert("run_id".into(), json!("r1"));
    QuestionCard {
        question_id: "q_1".into(),
        question: "Which colour?".into(),
        options: options.iter().map(|o| o.to_string()).collect(),
        multiple,
        allow_text,
        context,
        answer: QuestionAnswer::Open {
            expires_in: Duration::from_secs(1800),
        },
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
fn one_choice_gets_a_button_per_option_whose_clicks_read_back() {
    let card = question(&["red", "blue"], false, false).render();
    assert_eq!(card["header"]["template"], "orange");
    assert_eq!(
        text(&card, "question_text"),
        "Which colour?\n\n1. red\n2. blue"
    );
    let hint = text(&card, "question_answer");
    assert!(
        hint.starts_with("Click an option, or reply in the chat with its number (1–2).")
            && hint.contains("30 min"),
        "{hint}"
    );
    let clicks: Vec<QuestionClick> = buttons(&card)
        .iter()
        .map(|b| QuestionClick::parse(&b["behaviors"][0]["value"]).unwrap())
        .collect();
    assert_eq!(
        clicks.iter().map(|c| c.answer.as_str()).collect::<Vec<_>>(),
        ["red", "blue"]
    );
    assert!(clicks.iter().all(|c| c.question_id == "q_1"));
    assert_eq!(clicks[0].context["run_id"], "r1");
    let labels: Vec<String> = buttons(&card)
        .iter()
        .map(|b| b["text"]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, ["red", "blue"]);
}

#[test]
fn several_choices_or_a_typed_answer_are_replies_in_the_chat() {
    let several = question(&["a", "b", "c"], true, false).render();
    assert!(buttons(&several).is_empty());
    assert!(
        text(&several, "question_answer").contains("e.g. `1,3`"),
        "{several}"
    );
    let typed = question(&[], false, true).render();
    assert!(buttons(&typed).is_empty());
    assert_eq!(text(&typed, "question_text"), "Which colour?");
    assert!(text(&typed, "question_answer").starts_with("Reply in the chat with your answer."));
    let open = question(&["red", "blue"], false, true).render_in(Lang::Zh);
    assert_eq!(open["header"]["title"]["content"], "❓ 请回答");
    assert!(
        text(&open, "question_answer").contains("或你自己的回答"),
        "{open}"
    );
}

#[test]
fn an_answered_question_says_who_and_what_without_buttons() {
    let mut q = question(&["red", "blue"], false, false);
    q.answer = QuestionAnswer::Answered {
        by: "Alice".into(),
        answer: vec!["blue".into()],
    };
    let card = q.render();
    assert!(buttons(&card).is_empty());
    assert_eq!(card["header"]["template"], "green");
    assert_eq!(text(&card, "question_answer"), "✅ Answered by Alice: blue");
    q.answer = QuestionAnswer::Answered {
        by: "<at id=all></at>".into(),
        answer: vec!["a".into(), "c".into()],
    };
    let zh = q.render_in(Lang::Zh);
    assert_eq!(
        text(&zh, "question_answer"),
        "✅ &lt;at id=all></at> 的回答：a、c"
    );
    q.answer = QuestionAnswer::Expired;
    let expired = q.render();
    assert_eq!(expired["header"]["template"], "grey");
    assert!(buttons(&expired).is_empty());
    assert!(text(&expired, "question_answer").starts_with("⌛ Nobody answered in time"));
    q.answer = QuestionAnswer::Closed;
    assert_eq!(
        text(&q.render_in(Lang::Zh), "question_answer"),
        "🛑 回复已结束，无人回应"
    );
}

#[test]
fn the_question_cannot_mention_anyone() {
    let mut q = question(&["<at id=all></at>"], false, false);
    q.question = "Ping <at id=all></at>?".into();
    let card = q.render();
    assert!(!text(&card, "question_text").contains("<at"), "{card}");
}

#[test]
fn other_values_are_not_clicks() {
    assert_eq!(
        QuestionClick::parse(&json!({"approval_id": "a", "decision": "approve"})),
        None
    );
    assert_eq!(
        QuestionClick::parse(&json!({"question_id": "", "answer": "x"})),
        None
    );
    assert_eq!(
        QuestionClick::parse(&json!({"question_id": "q", "answer": 1})),
        None
    );
    assert_eq!(QuestionClick::parse(&json!("q")), None);
}
