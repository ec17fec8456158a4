//! `weft_llm::anthropic::AnthropicProvider` against the mock LLM server's Anthropic
//! wire over real HTTP, plus the raw event order a strict client depends on.

use std::time::Duration;

use futures::TryStreamExt;
use serde_json::{Value, json};
use weft_llm::anthropic::{AnthropicConfig, AnthropicProvider};
use weft_llm::{
    ChatMessage, ChatRequest, Image, LlmError, Provider, Reasoning, StopReason, StreamEvent, Usage,
};
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer, anthropic_thinking_signature};

async fn setup() -> (MockLlmServer, AnthropicProvider) {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .expect("mock server starts");
    let provider = AnthropicProvider::new(AnthropicConfig {
        base_url: server.base_url(),
        api_key: Some("sk-ant-test".into()),
        model_name: "claude-mock".into(),
        connect_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(30),
        prompt_cache: true,
    });
    (server, provider)
}

fn user(text: &str) -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages: vec![
            ChatMessage::System {
                content: "You are terse.".into(),
            },
            ChatMessage::User {
                content: text.into(),
                images: Vec::new(),
            },
        ]
        .into(),
        tools: vec![].into(),
        max_tokens: None,
        thinking_budget: None,
        attempt: 1,
    }
}

async fn run(provider: &AnthropicProvider, req: ChatRequest) -> Result<Vec<StreamEvent>, LlmError> {
    provider.stream(req).await?.try_collect().await
}

fn collect(events: &[StreamEvent], thinking: bool) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) if !thinking => Some(t.as_str()),
            StreamEvent::Thinking(t) if thinking => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn thinking_text_and_usage_with_cache_reads() {
    let (_server, provider) = setup().await;
    let first = user("@mock.think 2 @mock.reply Fine, thanks.");
    let events = run(&provider, first.clone()).await.unwrap();
    assert_eq!(collect(&events, true), "t1 t2");
    assert_eq!(collect(&events, false), "Fine, thanks.");
    let usage = |events: &[StreamEvent]| match events.last() {
        Some(StreamEvent::Finished { stop, usage }) => {
            assert_eq!(*stop, StopReason::EndTurn);
            *usage
        }
        other => panic!("{other:?}"),
    };
    let written = Usage {
        input: 8,
        output: 4,
        cache_read: 0,
        reasoning: 0,
    };
    assert_eq!(
        usage(&events),
        written,
        "the first prompt is written, not read"
    );

    // The next turn sends the same prefix and more: the cache reads the first prompt.
    let mut next = first;
    let messages = std::sync::Arc::make_mut(&mut next.messages);
    messages.push(ChatMessage::Assistant {
        content: "Fine, thanks.".into(),
        tool_calls: Vec::new(),
        reasoning: Vec::new(),
    });
    messages.push(ChatMessage::User {
        content: "@mock.reply ok".into(),
        images: Vec::new(),
    });
    let events = run(&provider, next).await.unwrap();
    let read = Usage {
        input: 8 + 2 + 2,
        output: 1,
        cache_read: 8,
        reasoning: 0,
    };
    assert_eq!(usage(&events), read);
}

#[tokio::test]
async fn tool_use_round_trip() {
    let (_server, provider) = setup().await;
    let mut req = user(r#"@mock.tool get_weather {"location": "Paris", "unit": "celsius"}"#);
    let events = run(&provider, req.clone()).await.unwrap();
    let Some(StreamEvent::ToolCall(call)) = events
        .iter()
        .find(|e| matches!(e, StreamEvent::ToolCall(_)))
    else {
        panic!("no tool call in {events:?}")
    };
    assert_eq!(call.args, json!({"location": "Paris", "unit": "celsius"}));
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finished {
            stop: StopReason::ToolUse,
            ..
        })
    ));

    std::sync::Arc::make_mut(&mut req.messages).push(ChatMessage::Assistant {
        content: String::new(),
        tool_calls: vec![call.clone()],
        reasoning: Vec::new(),
    });
    std::sync::Arc::make_mut(&mut req.messages).push(ChatMessage::Tool {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: "18C".into(),
    });
    let events = run(&provider, req).await.unwrap();
    assert_eq!(collect(&events, false), "tool get_weather said: 18C");
}

/// Extended thinking over a tool step: the signed block comes back whole, and the
/// next request of the turn opens with it (the mock refuses it missing or changed,
/// as the API does).
#[tokio::test]
async fn thinking_blocks_and_signatures_round_trip_over_a_tool_step() {
    let (server, provider) = setup().await;
    let mut req = user(r#"@mock.think 3 @mock.tool get_weather {"location": "Paris"}"#);
    req.thinking_budget = Some(1024);
    let events = run(&provider, req.clone()).await.unwrap();
    assert_eq!(collect(&events, true), "t1 t2 t3");
    let blocks: Vec<Reasoning> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoned(r) => Some(r.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        blocks,
        [Reasoning::Thinking {
            thinking: "t1 t2 t3".into(),
            signature: anthropic_thinking_signature("t1 t2 t3"),
        }]
    );
    let call = events
        .iter()
        .find_map(|e| match e {
            StreamEvent::ToolCall(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a tool call");
    let sent: Value = server.last_request().await;
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert!(sent["max_tokens"].as_u64().unwrap() > 1024);

    let answer = |reasoning: Vec<Reasoning>| {
        let mut next = req.clone();
        let messages = std::sync::Arc::make_mut(&mut next.messages);
        messages.push(ChatMessage::Assistant {
            content: String::new(),
            tool_calls: vec![call.clone()],
            reasoning,
        });
        messages.push(ChatMessage::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: "18C".into(),
        });
        next
    };
    let events = run(&provider, answer(blocks.clone())).await.unwrap();
    assert_eq!(collect(&events, false), "tool get_weather said: 18C");

    let missing = run(&provider, answer(Vec::new())).await.unwrap_err();
    assert!(
        matches!(&missing, LlmError::Fatal { reason, status: Some(400) } if reason.contains("must start with a thinking block")),
        "{missing:?}"
    );
    let changed = vec![Reasoning::Thinking {
        thinking: "t1 t2 t3 and more".into(),
        signature: anthropic_thinking_signature("t1 t2 t3"),
    }];
    let changed = run(&provider, answer(changed)).await.unwrap_err();
    assert!(
        matches!(&changed, LlmError::Fatal { reason, .. } if reason.contains("Invalid `signature`")),
        "{changed:?}"
    );
}

#[tokio::test]
async fn overloaded_mid_stream_is_transient_and_recovers() {
    let (_server, provider) = setup().await;
    let req = user("@mock.tokens 6 @mock.fail 529 after=3");
    let mut stream = provider.stream(req.clone()).await.expect("HTTP 200 first");
    let mut texts = 0;
    let err = loop {
        match stream.try_next().await {
            Ok(Some(StreamEvent::Text(_))) => texts += 1,
            Ok(other) => panic!("unexpected {other:?}"),
            Err(e) => break e,
        }
    };
    assert_eq!(texts, 3);
    assert!(
        matches!(&err, LlmError::Transient { reason, .. } if reason.contains("overloaded_error")),
        "{err:?}"
    );
    assert_eq!(
        collect(&run(&provider, req).await.unwrap(), false),
        "w1 w2 w3 w4 w5 w6"
    );
}

#[tokio::test]
async fn status_errors_classify_like_the_sdk() {
    let (_server, provider) = setup().await;
    let err = run(&provider, user("@mock.fail 529 retry_after=3"))
        .await
        .unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
    assert!(matches!(
        run(&provider, user("@mock.fail 401")).await,
        Err(LlmError::Fatal {
            status: Some(401),
            ..
        })
    ));
    let cut = run(&provider, user("@mock.tokens 5 @mock.cut 2"))
        .await
        .unwrap_err();
    assert!(cut.is_transient(), "{cut:?}");
}

#[tokio::test]
async fn raw_event_order_and_names() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let body = json!({"model": "m", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": "@mock.think 1 @mock.reply hi @mock.tool f {\"a\":1}"}]});
    let text = reqwest::Client::new()
        .post(format!("{}/v1/messages", server.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut kinds = Vec::new();
    for event in text.split("\n\n").filter(|e| !e.is_empty()) {
        let (name, data) = event.split_once('\n').unwrap();
        let name = name.strip_prefix("event: ").expect("every event is named");
        let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(data["type"], name, "data.type repeats the event name");
        let delta = data["delta"]["type"]
            .as_str()
            .map(|d| format!(":{d}"))
            .unwrap_or_default();
        kinds.push(format!("{name}{delta}"));
    }
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta:thinking_delta",
            "content_block_delta:signature_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta:text_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta:input_json_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
}

/// A real 1×1 PNG and a real 1×1 GIF; the sizes and SHA-256 sums are from coreutils.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const GIF: &str = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==";
const DESCRIBED: &str = "image 1: image/png, 70 bytes, sha256 c414cd0e204de974f73753c7e28d7638e7b3691bb8b1a2bab6b25bb7fed7ce77\n\
    image 2: image/gif, 43 bytes, sha256 b1442e85b03bdcaf66dc58c7abb98745dd2687d86350be9a298a1d9382ac849b";

#[tokio::test]
async fn images_reach_the_model_as_base64_image_blocks() {
    let (server, provider) = setup().await;
    let mut req = user("unused");
    std::sync::Arc::make_mut(&mut req.messages)[1] = ChatMessage::User {
        content: "what are these? @mock.describe_images".into(),
        images: vec![
            Image {
                mime: "image/png".into(),
                data: PNG.into(),
            },
            Image {
                mime: "image/gif".into(),
                data: GIF.into(),
            },
        ],
    };
    let events = run(&provider, req).await.unwrap();
    assert_eq!(collect(&events, false), DESCRIBED);
    let sent: Value = server.last_request().await;
    let image = |mime: &str, data: &str| json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}});
    assert_eq!(
        sent["messages"][0]["content"],
        json!([
            image("image/png", PNG),
            image("image/gif", GIF),
            {"type": "text", "text": "what are these? @mock.describe_images", "cache_control": {"type": "ephemeral"}},
        ])
    );
}

#[tokio::test]
async fn raw_image_blocks_are_read_and_url_sources_refused() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let post = |content: Value| {
        reqwest::Client::new()
            .post(format!("{}/v1/messages", server.base_url()))
            .header("anthropic-version", "2023-06-01")
            .json(&json!({"model": "m", "max_tokens": 100,
                "messages": [{"role": "user", "content": content}]}))
            .send()
    };
    let png = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}});
    let gif = json!({"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": GIF}});
    let reply: Value = post(json!([png, {"type": "text", "text": "@mock.describe_images"}, gif]))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(reply["content"][0]["text"], DESCRIBED, "{reply}");

    let linked =
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}});
    let refused = post(json!([linked, {"type": "text", "text": "hi"}]))
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages.0.content.0.source"),
        "{body}"
    );
}
