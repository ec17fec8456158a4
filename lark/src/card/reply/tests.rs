//! The reply card as a user would read it, in both languages.

use serde_json::json;

use super::*;

fn elements(page: &Value) -> Vec<Value> {
    page["body"]["elements"].as_array().unwrap().clone()
}

fn by_id(page: &Value, id: &str) -> Value {
    elements(page)
        .into_iter()
        .find(|e| e["element_id"] == id)
        .unwrap_or_else(|| panic!("no element {id} in {page}"))
}

fn call(name: &str, status: ToolStatus) -> ToolProgress {
    ToolProgress {
        name: name.into(),
        status,
        args: json!({"tz": "UTC", "deep": {"list": [1, 2]}}),
        result: Some("noon".into()),
        duration_ms: Some(12),
        approval: None,
    }
}

#[test]
fn a_done_reply_shows_its_calls_answer_and_footer() {
    let mut card = ReplyCard::new("Weft", CardState::Done, Lang::En);
    card.body = "hello".into();
    card.tools.push(call("current_time", ToolStatus::Succeeded));
    card.footer = Some(Footer {
        duration_ms: 1000,
        billed_input: 10,
        cached_input: 0,
        output: 20,
        tokens_per_s: 20.0,
        context_percent: None,
        model: "mock".into(),
    });
    let pages = card.render(MarkdownLimits::default());
    assert_eq!(pages.len(), 1);
    let page = &pages[0];
    assert_eq!(page["schema"], "2.0");
    assert_eq!(page["header"]["template"], "green");
    assert_eq!(page["config"]["streaming_mode"], false);
    assert!(page["config"].get("streaming_config").is_none());
    assert_eq!(page["config"]["summary"]["content"], "hello");
    let tool = by_id(page, "tool_0");
    assert_eq!(tool["tag"], "collapsible_panel");
    assert_eq!(tool["expanded"], false, "calls are folded");
    assert_eq!(
        tool["header"]["title"]["content"],
        "✅ current_time · 12 ms"
    );
    assert_eq!(tool["elements"][0]["element_id"], "tool_0_d");
    let details = tool["elements"][0]["content"].as_str().unwrap();
    assert!(
        details.contains("**Arguments**\n```json\n{\n  \"deep\": {"),
        "pretty-printed: {details}"
    );
    assert!(
        details.contains("**Result**\n```text\nnoon\n```"),
        "{details}"
    );
    assert_eq!(by_id(page, BODY_ELEMENT_ID)["content"], "hello");
    assert_eq!(
        elements(page).last().unwrap()["content"],
        "1.0 s · 10 → 20 tokens · 20.0 tok/s · mock"
    );
}

#[test]
fn reasoning_is_open_while_thinking_then_folds() {
    let mut card = ReplyCard::new("Weft", CardState::Thinking, Lang::En);
    card.reasoning = Some(Reasoning {
        text: "x".repeat(300) + " and so <at id=all></at>",
        thinking: true,
        ms: 4300,
        tokens: 1200,
    });
    let page = card.render(MarkdownLimits::default()).remove(0);
    let panel = by_id(&page, "reasoning");
    assert_eq!(panel["expanded"], true);
    assert_eq!(
        panel["header"]["title"]["content"],
        "💭 Thinking… 4.3 s · 1.2K tokens"
    );
    let preview = panel["elements"][0]["content"].as_str().unwrap();
    assert!(preview.starts_with('…') && preview.ends_with("&lt;at id=all></at>"));
    assert!(preview.chars().count() <= 201 + 3, "{preview}");
    assert_eq!(page["config"]["streaming_mode"], true);
    assert_eq!(page["config"]["summary"]["content"], "[Generating...]");
    assert_eq!(by_id(&page, BODY_ELEMENT_ID)["content"], "…");

    card.state = CardState::Streaming;
    card.body = "The answer".into();
    card.reasoning.as_mut().unwrap().thinking = false;
    let page = card.render(MarkdownLimits::default()).remove(0);
    let panel = by_id(&page, "reasoning");
    assert_eq!(panel["expanded"], false, "folded once the answer starts");
    assert_eq!(
        panel["header"]["title"]["content"],
        "💭 4.3 s · 1.2K tokens"
    );
}

#[test]
fn many_big_calls_stay_within_a_card() {
    let mut card = ReplyCard::new("Weft", CardState::Done, Lang::En);
    for i in 0..40 {
        let mut c = call(&format!("tool{i}"), ToolStatus::Succeeded);
        c.args = json!({"blob": "y".repeat(5_000)});
        c.result = Some("z".repeat(5_000));
        card.tools.push(c);
    }
    card.body = "w ".repeat(9_000);
    let pages = card.render(MarkdownLimits::default());
    for page in &pages {
        let bytes = page.to_string().len();
        assert!(bytes < 30 * 1024, "{bytes} bytes");
    }
    let first = &pages[0];
    let more = by_id(first, "tools_more")["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        more.starts_with("… and 20 earlier calls\n✅ tool20"),
        "{more}"
    );
    let newest = by_id(first, "tool_39");
    let details = newest["elements"][0]["content"].as_str().unwrap();
    assert!(
        details.contains(&format!("{}…", "y".repeat(10))),
        "args cut"
    );
    assert!(details.len() < 3_000, "{}", details.len());
}

#[test]
fn a_chinese_card_speaks_chinese() {
    let mut card = ReplyCard::new("Weft", CardState::AwaitingApproval, Lang::Zh);
    card.body = "让我查一下。".into();
    let mut held = call("current_time", ToolStatus::AwaitingApproval);
    held.duration_ms = None;
    held.result = None;
    held.approval = Some(ToolApproval::Waiting);
    card.tools.push(held);
    let page = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(page["header"]["template"], "orange");
    assert_eq!(
        by_id(&page, "tool_0")["header"]["title"]["content"],
        "⏸ current_time · 等待审批"
    );
    assert_eq!(
        by_id(&page, BODY_ELEMENT_ID)["content"],
        "让我查一下。\n\n_⏸ 等待审批_"
    );
    card.state = CardState::Cancelled;
    card.tools[0].approval = Some(ToolApproval::Decided {
        verdict: Verdict::Denied,
        by: Some("bob".into()),
    });
    card.tools[0].status = ToolStatus::Failed;
    let page = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(
        by_id(&page, "tool_0")["header"]["title"]["content"],
        "❌ current_time · bob 已拒绝"
    );
    assert!(
        by_id(&page, BODY_ELEMENT_ID)["content"]
            .as_str()
            .unwrap()
            .ends_with("_🛑 已停止_")
    );
}

#[test]
fn long_reply_becomes_continuation_cards() {
    let mut card = ReplyCard::new("Weft", CardState::Streaming, Lang::En);
    card.body = "line of text\n".repeat(100);
    let pages = card.render(MarkdownLimits {
        max_tables: 3,
        max_element_bytes: 500,
    });
    assert!(pages.len() >= 3);
    assert_eq!(
        pages[1]["header"]["title"]["content"],
        format!("Weft (continued 2/{})", pages.len())
    );
    assert_eq!(pages[0]["config"]["streaming_mode"], false);
    assert_eq!(pages.last().unwrap()["config"]["streaming_mode"], true);
    card.lang = Lang::Zh;
    let pages = card.render(MarkdownLimits {
        max_tables: 3,
        max_element_bytes: 500,
    });
    assert_eq!(
        pages[1]["header"]["title"]["content"],
        format!("Weft（续 2/{}）", pages.len())
    );
}

#[test]
fn only_a_changed_answer_can_be_streamed() {
    let mut card = ReplyCard::new("Weft", CardState::Streaming, Lang::En);
    card.body = "Hel".into();
    let before = card.render(MarkdownLimits::default()).remove(0);
    card.body = "Hello".into();
    let after = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(body_change(&before, &after).as_deref(), Some("Hello"));
    assert_eq!(body_change(&after, &after), None, "nothing changed");
    card.tools.push(call("t", ToolStatus::Running));
    let with_tool = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(
        body_change(&after, &with_tool),
        None,
        "a new call: whole card"
    );
    card.tools.clear();
    card.state = CardState::Done;
    let done = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(body_change(&after, &done), None, "the end: whole card");
}

#[test]
fn cited_documents_are_listed_under_the_answer_on_the_last_card() {
    let mut card = ReplyCard::new("Weft", CardState::Done, Lang::En);
    card.body = "Leave is 25 days [1], laptops last three years [2].\n".repeat(40);
    card.sources = vec![
        Source {
            n: 1,
            document: "handbook.pdf".into(),
            position: "page 7".into(),
        },
        Source {
            n: 2,
            document: "<at id=all></at> equipment.md".into(),
            position: String::new(),
        },
    ];
    let limits = MarkdownLimits {
        max_tables: 3,
        max_element_bytes: 800,
    };
    let pages = card.render(limits);
    assert!(pages.len() >= 2);
    assert!(
        !elements(&pages[0])
            .iter()
            .any(|e| e["element_id"] == "sources"),
        "only the last card lists them"
    );
    let sources = by_id(pages.last().unwrap(), "sources");
    let text = sources["content"].as_str().unwrap();
    assert!(
        text.starts_with("**Sources**\n[1] handbook.pdf — page 7\n[2] "),
        "{text}"
    );
    assert!(!text.contains("<at"), "no mention pings anyone: {text}");
    card.lang = Lang::Zh;
    let pages = card.render(limits);
    let sources = by_id(pages.last().unwrap(), "sources");
    assert!(sources["content"].as_str().unwrap().starts_with("**来源**"));
}

#[test]
fn tasks_handed_to_other_agents_are_a_line_each() {
    use crate::card::AgentProgress;
    use weft_wire::states::DelegationStatus;
    let mut card = ReplyCard::new("Weft", CardState::Streaming, Lang::En);
    let task = |agent: &str, task: &str, status| AgentProgress {
        agent: agent.into(),
        task: task.into(),
        status,
    };
    card.agents = vec![
        task(
            "researcher",
            "find the Q3 numbers\nin the wiki",
            DelegationStatus::Running,
        ),
        task(
            "writer",
            &"draft <at id=all></at> it ".repeat(10),
            DelegationStatus::Succeeded,
        ),
        task("researcher", "check", DelegationStatus::Failed),
    ];
    let limits = MarkdownLimits {
        max_tables: 3,
        max_element_bytes: 8000,
    };
    let pages = card.render(limits);
    let text = by_id(&pages[0], "agents")["content"]
        .as_str()
        .unwrap()
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines[0],
        "↳ **researcher** · working… — find the Q3 numbers"
    );
    assert!(
        lines[1].starts_with("↳ **writer** · ✓ answered — draft ")
            && lines[1].ends_with('…')
            && !text.contains("<at"),
        "{text}"
    );
    assert_eq!(lines[2], "↳ **researcher** · ✗ failed — check");
    card.lang = Lang::Zh;
    let pages = card.render(limits);
    let text = by_id(&pages[0], "agents")["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.starts_with("↳ **researcher** · 处理中… — "), "{text}");
    card.agents.clear();
    let pages = card.render(limits);
    assert!(
        !elements(&pages[0])
            .iter()
            .any(|e| e["element_id"] == "agents")
    );
}

#[test]
fn a_reply_silent_for_minutes_says_it_is_still_working_under_the_answer() {
    let mut card = ReplyCard::new("Weft", CardState::Streaming, Lang::En);
    card.body = "Fetching the report.".into();
    card.tools.push(call("web_fetch", ToolStatus::Running));
    let before = card.render(MarkdownLimits::default()).remove(0);
    assert!(
        !elements(&before)
            .iter()
            .any(|e| e["element_id"] == "still_working")
    );
    card.still_working = Some(65 * 60_000 + 59_000);
    let page = card.render(MarkdownLimits::default()).remove(0);
    let ids: Vec<Value> = elements(&page)
        .iter()
        .map(|e| e["element_id"].clone())
        .collect();
    let at = |id: &str| ids.iter().position(|e| e == id).unwrap();
    assert_eq!(
        at("still_working"),
        at(BODY_ELEMENT_ID) + 1,
        "under the answer"
    );
    assert_eq!(
        by_id(&page, "still_working")["content"],
        "⏳ still working… 1 h 5 min"
    );
    assert_eq!(
        by_id(&page, BODY_ELEMENT_ID)["content"],
        "Fetching the report."
    );
    assert_eq!(body_change(&before, &page), None, "a new line: whole card");
    card.lang = Lang::Zh;
    card.still_working = Some(3 * 60_000 + 5_000);
    let page = card.render(MarkdownLimits::default()).remove(0);
    assert_eq!(
        by_id(&page, "still_working")["content"],
        "⏳ 仍在处理… 3 分钟"
    );
}
