//! The mock LLM server's OpenAI wire, read raw: the exact chunk sequence and shapes
//! of `llm-wire.md` §1, which a lenient client would not notice if they were wrong.

use serde_json::{Value, json};
use weft_loadtest::mock_llm::{MockLlmConfig, MockLlmServer};

async fn post(server: &MockLlmServer, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .header("x-stainless-retry-count", "0")
        .json(&body)
        .send()
        .await
        .expect("request reaches the mock")
}

/// The `data:` payloads of an SSE body, in order.
async fn data_lines(response: reqwest::Response) -> Vec<String> {
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    assert!(text.ends_with("\n\n"), "every event ends with a blank line");
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .expect("only data: lines")
                .to_owned()
        })
        .collect()
}

fn chunks(lines: &[String]) -> Vec<Value> {
    assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
    lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).expect("chunk is JSON"))
        .collect()
}

fn streamed(text: &str, include_usage: bool) -> Value {
    json!({"model": "m", "stream": true, "stream_options": {"include_usage": include_usage},
           "messages": [{"role": "user", "content": text}]})
}

#[tokio::test]
async fn text_stream_has_the_recorded_shape() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let chunks =
        chunks(&data_lines(post(&server, streamed("@mock.reply Hello there", true)).await).await);
    let (first, last) = (&chunks[0], chunks.last().unwrap());
    for c in &chunks {
        assert_eq!(c["id"], first["id"]);
        assert_eq!(c["created"], first["created"]);
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["model"], "m");
        assert!(
            c.as_object().unwrap().contains_key("usage"),
            "usage key on every chunk: {c}"
        );
    }
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["choices"][0]["delta"]["content"], "");
    let texts: Vec<&str> = chunks[1..]
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(texts, ["Hello ", "there"]);
    let finish = &chunks[chunks.len() - 2];
    assert_eq!(finish["choices"][0]["delta"], json!({}));
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    assert_eq!(finish["usage"], Value::Null);
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["completion_tokens"], 2);
    assert_eq!(last["usage"]["total_tokens"], 3 + 2);
}

#[tokio::test]
async fn without_include_usage_there_is_no_usage_at_all() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let chunks = chunks(&data_lines(post(&server, streamed("hi", false)).await).await);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn tool_call_is_a_head_fragment_then_argument_pieces() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let body = streamed(r#"@mock.tool get_weather {"city":"New York City"}"#, true);
    let chunks = chunks(&data_lines(post(&server, body).await).await);
    let fragments: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].as_array())
        .map(|calls| {
            assert_eq!(calls.len(), 1);
            &calls[0]
        })
        .collect();
    assert!(
        fragments.len() > 2,
        "arguments are fragmented: {fragments:?}"
    );
    let head = fragments[0];
    assert_eq!(head["index"], 0);
    assert_eq!(head["type"], "function");
    assert_eq!(head["function"]["name"], "get_weather");
    assert_eq!(head["function"]["arguments"], "");
    assert!(head["id"].as_str().unwrap().starts_with("call_"));
    let mut args = String::new();
    for f in &fragments[1..] {
        assert_eq!(f["index"], 0);
        assert!(
            f.get("id").is_none() && f["function"].get("name").is_none(),
            "later fragments: {f}"
        );
        args.push_str(f["function"]["arguments"].as_str().unwrap());
    }
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"city": "New York City"})
    );
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn errors_carry_all_four_keys_and_retry_hints() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let response = post(&server, streamed("@mock.fail 429 retry_after=1.5", true)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after-ms"], "1500");
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    let error = body["error"].as_object().unwrap();
    let mut keys: Vec<&str> = error.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["code", "message", "param", "type"]);
    assert_eq!(error["code"], "rate_limit_exceeded");

    let response = post(&server, json!({"model": "m", "messages": "nope"})).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[tokio::test]
async fn mid_stream_error_is_an_error_chunk_without_done() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let lines = data_lines(
        post(
            &server,
            streamed("@mock.tokens 5 @mock.fail 500 after=2", true),
        )
        .await,
    )
    .await;
    assert_ne!(lines.last().map(String::as_str), Some("[DONE]"));
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["error"]["type"], "server_error");
    assert_eq!(lines.len(), 1 + 2 + 1, "role chunk, two tokens, the error");
}

#[tokio::test]
async fn non_streamed_completion() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let body = json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]});
    let response = post(&server, body).await;
    assert_eq!(response.status(), 200);
    let done: Value = response.json().await.unwrap();
    assert_eq!(done["object"], "chat.completion");
    assert_eq!(done["choices"][0]["message"]["content"], "You said: hi");
    assert_eq!(done["choices"][0]["finish_reason"], "stop");
    assert_eq!(done["usage"]["prompt_tokens"], 1);
}

/// A real 1×1 PNG; its size and SHA-256 sum are from coreutils.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

#[tokio::test]
async fn image_url_parts_are_read_and_links_refused() {
    let server = MockLlmServer::start(MockLlmConfig::default())
        .await
        .unwrap();
    let ask = |url: String| {
        json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this? "},
            {"type": "image_url", "image_url": {"url": url, "detail": "low"}},
            {"type": "text", "text": "@mock.describe_images"},
        ]}]})
    };
    let reply: Value = post(&server, ask(format!("data:image/png;base64,{PNG}")))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        reply["choices"][0]["message"]["content"],
        "image 1: image/png, 70 bytes, sha256 c414cd0e204de974f73753c7e28d7638e7b3691bb8b1a2bab6b25bb7fed7ce77"
    );

    let refused = post(&server, ask("https://example.com/a.png".into())).await;
    assert_eq!(refused.status(), 400);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("messages[0].content[1].image_url.url"),
        "{body}"
    );
}
