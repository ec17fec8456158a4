//! Real provider wires end to end: the worker talks to the load tester's mock LLM
//! server over HTTP as `provider = "openai"` and `provider = "anthropic"` models.

use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

use crate::both_backends;
use crate::harness::*;

both_backends!(
    openai_and_anthropic_wires_end_to_end,
    a_thinking_model_gets_its_signed_reasoning_back_after_tools_and_questions,
);

/// An app whose default model is `[[models]]` `extra` (TOML) on `llm`.
async fn app_with_model(b: Backend, llm: &MockLlmServer, extra: &str) -> App {
    let mut env = Env::new(b, &[]).await;
    let config = env.dir.path().join("weft.toml");
    let model = format!(
        "[[models]]\nid = \"claude-think\"\nprovider = \"anthropic\"\nbase_url = \"{}\"\n\
         api_key_env = \"TEST_ANTHROPIC_KEY\"\ndefault = true\n{extra}\n",
        llm.base_url()
    );
    std::fs::write(&config, model).unwrap();
    env.extra
        .push(("WEFT_CONFIG".into(), config.display().to_string()));
    env.extra
        .push(("TEST_ANTHROPIC_KEY".into(), "sk-ant-test".into()));
    App::start_in(env, true)
}

async fn openai_and_anthropic_wires_end_to_end(b: Backend) {
    let llm = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let env = Env::new(b, &[]).await;
    let config = env.dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "[[models]]\nid = \"gpt-test\"\nprovider = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"TEST_OPENAI_KEY\"\ndefault = true\n\n\
             [[models]]\nid = \"claude-test\"\nprovider = \"anthropic\"\nbase_url = \"{}\"\napi_key_env = \"TEST_ANTHROPIC_KEY\"\n",
            llm.openai_base_url(),
            llm.base_url()
        ),
    )
    .unwrap();
    let mut env = env;
    env.extra
        .push(("WEFT_CONFIG".into(), config.display().to_string()));
    env.extra.push(("TEST_OPENAI_KEY".into(), "sk-test".into()));
    env.extra
        .push(("TEST_ANTHROPIC_KEY".into(), "sk-ant-test".into()));
    let app = App::start_in(env, true);
    let alice = app.user("alice").await;
    let (_, models) = app.get("/v1/models", &alice).await;
    assert_eq!(models["models"][0]["id"], "gpt-test");

    for model in ["gpt-test", "claude-test"] {
        let (_, s) = app
            .post("/v1/sessions", &alice, serde_json::json!({"model": model}))
            .await;
        let s = s["id"].as_str().unwrap().to_string();
        // Thinking, text, a retried 429, usage.
        let events = app
            .send_stream(
                &alice,
                &s,
                "@mock.think 3 @mock.tokens 12 @mock.fail 429 times=1 retry_after=0",
            )
            .await
            .until_terminal()
            .await;
        assert_contiguous(&events);
        assert_eq!(events.last().unwrap().ty, "done", "{model}: {events:?}");
        assert_eq!(
            events.iter().filter(|e| e.ty == "retrying").count(),
            1,
            "{model}"
        );
        assert!(
            events.iter().any(|e| e.ty == "thinking"),
            "{model}: reasoning streamed"
        );
        assert_eq!(rendered_text(&events), words(12), "{model}");
        let usage = &events.last().unwrap().data["usage"];
        assert!(
            usage["input"].as_u64().unwrap() > 0 && usage["output"].as_u64().unwrap() >= 12,
            "{model}: {usage}"
        );
        // A tool call assembled from fragments, executed, answered.
        let events = app
            .send_stream(&alice, &s, "@mock.tool current_time {}")
            .await
            .until_terminal()
            .await;
        let end = events
            .iter()
            .find(|e| e.ty == "tool_end")
            .expect("tool ran");
        assert_eq!(end.data["ok"], true, "{model}");
        assert_eq!(
            rendered_text(&events),
            format!(
                "tool current_time said: {}",
                end.data["output"].as_str().unwrap()
            ),
            "{model}"
        );
    }
}

/// Extended thinking (issue 28): the mock LLM refuses, as Anthropic does, a tool
/// turn sent back without its signed thinking block. So a run that calls a tool
/// (the blocks kept in the worker) and a later one whose call waited for an answer
/// (kept in the run's pending step, read back by whichever worker resumes it;
/// the earlier turn's blocks come from the stored messages) both finish; and
/// people see the reasoning in the stored conversation.
async fn a_thinking_model_gets_its_signed_reasoning_back_after_tools_and_questions(b: Backend) {
    let llm = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let app = app_with_model(b, &llm, "thinking_budget = 1024\nmax_tokens = 4096").await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;

    // A tool that runs at once.
    let events = app
        .send_stream(&alice, &s, "@mock.think 3 @mock.tool current_time {}")
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    assert!(rendered_text(&events).starts_with("tool current_time said: "));
    let sent: serde_json::Value = llm.last_request().await;
    assert_eq!(sent["thinking"]["budget_tokens"], 1024);
    let tool_turn = &sent["messages"][1]["content"];
    assert_eq!(tool_turn[0]["type"], "thinking", "{sent}");
    assert_eq!(tool_turn[0]["thinking"], "t1 t2 t3");

    // A call that waits for the owner's answer: the step is resumed from the store.
    let ask = r#"@mock.think 2 @mock.tool ask_user {"question": "Which?", "options": ["a", "b"]}"#;
    let mut sse = app.send_stream(&alice, &s, ask).await;
    let asked = sse.until(|e| e.ty == "question").await;
    let question = asked.last().unwrap().data["question_id"]
        .as_str()
        .unwrap()
        .to_string();
    let answer = serde_json::json!({"answer": "b"});
    let (st, body) = app
        .post(&format!("/v1/questions/{question}"), &alice, answer)
        .await;
    assert_eq!(st, 200, "{body}");
    let events = sse.until_terminal().await;
    assert_eq!(events.last().unwrap().ty, "done", "{events:?}");
    assert!(rendered_text(&events).starts_with("tool ask_user said: "));
    // Prompt caching: this run's steps read the conversation so far from the cache.
    let usage = &events.last().unwrap().data["usage"];
    assert!(
        usage["cache_read"].as_u64().unwrap() > 0,
        "the second turn reads the first from the cache: {usage}"
    );

    // What people see after a reload: each assistant message's reasoning.
    let messages = app.messages(&alice, &s).await;
    let thinking: Vec<(&str, Option<&str>)> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| (m["content"].as_str().unwrap(), m["thinking"].as_str()))
        .collect();
    assert_eq!(thinking.len(), 4, "{messages:?}");
    assert_eq!(thinking[0].1, Some("t1 t2 t3"), "the first run's tool step");
    assert_eq!(thinking[1].1, Some("t1 t2 t3"), "the first run's answer");
    assert_eq!(thinking[2].1, Some("t1 t2"), "the step that asked");
    assert_eq!(thinking[3].1, Some("t1 t2"), "the second run's answer");
    assert!(
        messages
            .iter()
            .filter(|m| m["role"] != "assistant")
            .all(|m| m.get("thinking").is_none())
    );
}
