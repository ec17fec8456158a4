//! `weft_llm::openai::OpenAiProvider` against the real mock LLM server over real
//! HTTP on 127.0.0.1:0: every path the worker depends on (text, reasoning,
//! fragmented tool calls, usage, error classification, broken streams).

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use serde_json::json;
use weft_llm::openai::{OpenAiConfig, OpenAiProvider};
use weft_llm::{
    ChatMessage, ChatRequest, Image, LlmError, Provider, StopReason, StreamEvent, ToolSpec, Usage,
};
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

async fn setup() -> (MockLlmServer, OpenAiProvider) {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .expect("mock server starts");
    let provider = OpenAiProvider::new(config(server.openai_base_url(), Duration::from_secs(30)));
    (server, provider)
}

fn config(base_url: String, idle_timeout: Duration) -> OpenAiConfig {
    OpenAiConfig {
        base_url,
        api_key: Some("sk-test".into()),
        model_name: "mock-model".into(),
        connect_timeout: Duration::from_secs(5),
        idle_timeout,
    }
}

fn request(messages: Vec<ChatMessage>) -> ChatRequest {
    ChatRequest {
        model: String::new(),
        messages: messages.into(),
        tools: vec![].into(),
        max_tokens: None,
        thinking_budget: None,
        attempt: 1,
    }
}

fn user(text: &str) -> ChatRequest {
    request(vec![
        ChatMessage::System {
            content: "You are terse.".into(),
        },
        ChatMessage::User {
            content: text.into(),
            images: Vec::new(),
        },
    ])
}

async fn run(provider: &OpenAiProvider, req: ChatRequest) -> Result<Vec<StreamEvent>, LlmError> {
    provider.stream(req).await?.try_collect().await
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::Text(t) = e {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect()
}

fn finished(events: &[StreamEvent]) -> (StopReason, Usage) {
    match events.last() {
        Some(StreamEvent::Finished { stop, usage }) => (*stop, *usage),
        other => panic!("stream did not finish: {other:?}"),
    }
}

#[tokio::test]
async fn streams_text_token_by_token() {
    let (_server, provider) = setup().await;
    let events = run(&provider, user("hello there")).await.unwrap();
    assert_eq!(text_of(&events), "You said: hello there");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::Text(_)))
            .count(),
        4
    );
    let (stop, usage) = finished(&events);
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!((usage.input, usage.output), (5, 4));
}

#[tokio::test]
async fn reasoning_arrives_as_thinking_before_text() {
    let (_server, provider) = setup().await;
    let events = run(&provider, user("@mock.think 3 @mock.reply Fine."))
        .await
        .unwrap();
    let thinking: String = events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::Thinking(t) = e {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(thinking, "t1 t2 t3");
    assert!(matches!(events[0], StreamEvent::Thinking(_)));
    assert_eq!(text_of(&events), "Fine.");
}

#[tokio::test]
async fn fragmented_tool_call_is_assembled_and_answered() {
    let (_server, provider) = setup().await;
    let args = json!({"city": "New York City", "units": "metric", "days": [1, 2, 3]});
    let mut req = user(&format!("weather? @mock.tool get_weather {args}"));
    req.tools = vec![ToolSpec {
        name: "get_weather".into(),
        description: "Weather".into(),
        parameters: json!({}),
    }]
    .into();
    let events = run(&provider, req.clone()).await.unwrap();
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| {
            if let StreamEvent::ToolCall(c) = e {
                Some(c.clone())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].name.as_str(), &calls[0].args),
        ("get_weather", &args)
    );
    assert_eq!(finished(&events).0, StopReason::ToolUse);

    let call = calls[0].clone();
    std::sync::Arc::make_mut(&mut req.messages).push(ChatMessage::Assistant {
        reasoning: Vec::new(),
        content: String::new(),
        tool_calls: vec![call.clone()],
    });
    std::sync::Arc::make_mut(&mut req.messages).push(ChatMessage::Tool {
        call_id: call.id,
        name: call.name,
        content: "18C, cloudy".into(),
    });
    let events = run(&provider, req).await.unwrap();
    assert_eq!(text_of(&events), "tool get_weather said: 18C, cloudy");
    assert_eq!(finished(&events).0, StopReason::EndTurn);
}

#[tokio::test]
async fn usage_reports_cached_and_reasoning_tokens() {
    let (_server, provider) = setup().await;
    let req = request(vec![
        ChatMessage::System {
            content: "one two three".into(),
        },
        ChatMessage::User {
            content: "four five".into(),
            images: Vec::new(),
        },
        ChatMessage::Assistant {
            reasoning: Vec::new(),
            content: "six".into(),
            tool_calls: vec![],
        },
        ChatMessage::User {
            content: "@mock.think 4 @mock.tokens 6".into(),
            images: Vec::new(),
        },
    ]);
    let (_, usage) = finished(&run(&provider, req).await.unwrap());
    assert_eq!(
        usage,
        Usage {
            input: 10,
            output: 10,
            cache_read: 6,
            reasoning: 4
        }
    );
}

#[tokio::test]
async fn max_tokens_truncates_with_length() {
    let (_server, provider) = setup().await;
    let mut req = user("@mock.tokens 50");
    req.max_tokens = Some(5);
    let events = run(&provider, req).await.unwrap();
    assert_eq!(text_of(&events), "w1 w2 w3 w4 w5 ");
    assert_eq!(finished(&events).0, StopReason::MaxTokens);
}

#[tokio::test]
async fn rate_limit_is_transient_with_retry_after_then_recovers() {
    let (_server, provider) = setup().await;
    let req = user("@mock.fail 429 retry_after=2");
    match run(&provider, req.clone()).await {
        Err(LlmError::Transient {
            reason,
            retry_after,
        }) => {
            assert_eq!(retry_after, Some(Duration::from_secs(2)));
            assert!(
                reason.contains("429") && reason.contains("Rate limit"),
                "{reason}"
            );
        }
        other => panic!("expected a transient error, got {other:?}"),
    }
    // The retry (same messages) is attempt 2 and succeeds.
    let events = run(&provider, req).await.unwrap();
    assert_eq!(finished(&events).0, StopReason::EndTurn);
}

#[tokio::test]
async fn server_errors_are_transient_and_bad_requests_fatal() {
    let (_server, provider) = setup().await;
    assert!(
        run(&provider, user("@mock.fail 503"))
            .await
            .unwrap_err()
            .is_transient()
    );
    match run(&provider, user("@mock.fail 400 times=5")).await {
        Err(LlmError::Fatal {
            status: Some(400), ..
        }) => {}
        other => panic!("expected fatal 400, got {other:?}"),
    }
    match run(&provider, user("@mock.bogus")).await {
        Err(LlmError::Fatal {
            status: Some(400),
            reason,
        }) => assert!(reason.contains("bogus"), "{reason}"),
        other => panic!("expected fatal 400, got {other:?}"),
    }
}

#[tokio::test]
async fn cut_stream_is_transient_after_the_tokens_it_carried() {
    let (_server, provider) = setup().await;
    let mut stream = provider
        .stream(user("@mock.tokens 10 @mock.cut 3"))
        .await
        .unwrap();
    let mut texts = 0;
    let err = loop {
        match stream.next().await {
            Some(Ok(StreamEvent::Text(_))) => texts += 1,
            Some(Ok(other)) => panic!("unexpected {other:?}"),
            Some(Err(e)) => break e,
            None => panic!("stream ended without an error"),
        }
    };
    assert_eq!(texts, 3);
    assert!(err.is_transient(), "{err:?}");
    assert!(stream.next().await.is_none(), "nothing after the error");
}

#[tokio::test]
async fn error_inside_a_200_stream_is_transient() {
    let (_server, provider) = setup().await;
    let events: Vec<_> = provider
        .stream(user("@mock.tokens 5 @mock.fail 500 after=2"))
        .await
        .unwrap()
        .collect()
        .await;
    assert_eq!(events.len(), 3);
    assert!(events[2].as_ref().unwrap_err().is_transient());
}

#[tokio::test]
async fn silence_longer_than_the_idle_timeout_is_transient() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let provider =
        OpenAiProvider::new(config(server.openai_base_url(), Duration::from_millis(300)));
    let result = run(&provider, user("@mock.delay 0 60000 @mock.tokens 3")).await;
    match result {
        Err(LlmError::Transient { reason, .. }) => assert!(reason.contains("no data"), "{reason}"),
        other => panic!("expected an idle timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn unreachable_server_is_transient() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let provider = OpenAiProvider::new(config(format!("http://{addr}/v1"), Duration::from_secs(5)));
    assert!(run(&provider, user("hi")).await.unwrap_err().is_transient());
}

/// A real 1×1 PNG and a real 1×1 GIF; the sizes and SHA-256 sums are from coreutils.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const GIF: &str = "R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==";

#[tokio::test]
async fn images_reach_the_model_as_data_url_parts() {
    let (server, provider) = setup().await;
    let image = |mime: &str, data: &str| Image {
        mime: mime.into(),
        data: data.into(),
    };
    let req = request(vec![
        ChatMessage::System {
            content: "You are terse.".into(),
        },
        ChatMessage::User {
            content: "what are these? @mock.describe_images".into(),
            images: vec![image("image/png", PNG), image("image/gif", GIF)],
        },
    ]);
    let events = run(&provider, req).await.unwrap();
    assert_eq!(
        text_of(&events),
        "image 1: image/png, 70 bytes, sha256 c414cd0e204de974f73753c7e28d7638e7b3691bb8b1a2bab6b25bb7fed7ce77\n\
         image 2: image/gif, 43 bytes, sha256 b1442e85b03bdcaf66dc58c7abb98745dd2687d86350be9a298a1d9382ac849b"
    );
    let sent: serde_json::Value = server.last_request().await;
    assert_eq!(
        sent["messages"][1]["content"],
        json!([
            {"type": "text", "text": "what are these? @mock.describe_images"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
            {"type": "image_url", "image_url": {"url": format!("data:image/gif;base64,{GIF}")}},
        ])
    );
}
