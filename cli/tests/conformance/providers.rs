//! Real provider wires end to end: the worker talks to the load tester's mock LLM
//! server over HTTP as `provider = "openai"` and `provider = "anthropic"` models.

use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

use crate::both_backends;
use crate::harness::*;

both_backends!(openai_and_anthropic_wires_end_to_end);

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
