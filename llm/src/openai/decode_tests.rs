use super::*;
use serde_json::json;

fn event(data: &str) -> Event {
    Event {
        event: "message".into(),
        data: data.into(),
        id: String::new(),
        retry: None,
    }
}

/// Feed `lines` (SSE data payloads) and return what came out, plus whether the
/// decoder saw its end marker.
fn decode(lines: &[&str]) -> (Vec<Result<StreamEvent, LlmError>>, bool) {
    let mut d = ChunkDecoder::default();
    let mut out = Out::new();
    for line in lines {
        if d.on_event(&event(line), &mut out) {
            return (out.into_iter().collect(), true);
        }
    }
    d.on_eof(&mut out);
    (out.into_iter().collect(), false)
}

fn ok(events: Vec<Result<StreamEvent, LlmError>>) -> Vec<StreamEvent> {
    events.into_iter().map(|e| e.expect("no error")).collect()
}

#[test]
fn recorded_fragmented_tool_call() {
    let first = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_4X","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}]}"#;
    let frag = |a: &str| {
        json!({"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":a}}]},"finish_reason":null}]}).to_string()
    };
    let pieces = ["{\"", "city", "\":\"", "New", " York", " City", "\"}"];
    let mut lines = vec![first.to_owned()];
    lines.extend(pieces.iter().map(|p| frag(p)));
    lines.push(
        r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.into(),
    );
    lines.push(r#"{"id":"c","choices":[],"usage":{"prompt_tokens":44,"completion_tokens":16,"total_tokens":60,"completion_tokens_details":{"reasoning_tokens":0}}}"#.into());
    lines.push("[DONE]".into());
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let (events, done) = decode(&refs);
    assert!(done);
    let call = ToolCall {
        id: "call_4X".into(),
        name: "get_weather".into(),
        args: json!({"city": "New York City"}),
    };
    let usage = Usage {
        input: 44,
        output: 16,
        cache_read: 0,
        reasoning: 0,
    };
    assert_eq!(
        ok(events),
        [
            StreamEvent::ToolCall(call),
            StreamEvent::Finished {
                stop: StopReason::ToolUse,
                usage
            }
        ]
    );
}

#[test]
fn ollama_whole_calls_reasoning_and_deepseek_cache() {
    let lines = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"hmm"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning_content":"deep"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"","tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},{"id":"call_b","index":1,"type":"function","function":{"name":"g","arguments":"not json"}}]},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_cache_hit_tokens":7}}"#,
    ];
    let (events, done) = decode(&lines);
    assert!(!done, "EOF after finish_reason still finishes");
    let events = ok(events);
    assert_eq!(events[0], StreamEvent::Thinking("hmm".into()));
    assert_eq!(events[1], StreamEvent::Thinking("deep".into()));
    assert_eq!(events[2], StreamEvent::Text("Hi".into()));
    assert!(matches!(&events[3], StreamEvent::ToolCall(c) if c.args == json!({"x": 1})));
    assert!(matches!(&events[4], StreamEvent::ToolCall(c) if c.args == json!("not json")));
    let usage = Usage {
        input: 10,
        output: 5,
        cache_read: 7,
        reasoning: 0,
    };
    assert_eq!(
        events[5],
        StreamEvent::Finished {
            stop: StopReason::ToolUse,
            usage
        }
    );
}

#[test]
fn reused_index_with_new_id_is_a_new_call() {
    let lines = [
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ];
    let names: Vec<String> = ok(decode(&lines).0)
        .into_iter()
        .filter_map(|e| {
            if let StreamEvent::ToolCall(c) = e {
                Some(c.name)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(names, ["f", "g"]);
}

#[test]
fn cached_and_reasoning_tokens() {
    let lines = [
        r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"length"}],"usage":null}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":40,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":30}}}"#,
        "[DONE]",
    ];
    let usage = Usage {
        input: 100,
        output: 40,
        cache_read: 64,
        reasoning: 30,
    };
    let events = ok(decode(&lines).0);
    assert_eq!(
        events.last(),
        Some(&StreamEvent::Finished {
            stop: StopReason::MaxTokens,
            usage
        })
    );
}

#[test]
fn cut_before_done_is_transient() {
    let (events, _) = decode(&[r#"{"choices":[{"delta":{"content":"partial"}}]}"#]);
    assert!(matches!(
        events.last(),
        Some(Err(LlmError::Transient { .. }))
    ));
}

#[test]
fn errors_inside_the_stream() {
    let (events, done) =
        decode(&[r#"{"error":{"message":"boom","type":"server_error","param":null,"code":null}}"#]);
    assert!(done && events[0].as_ref().unwrap_err().is_transient());
    let (events, _) = decode(&[
        r#"{"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}}"#,
    ]);
    assert!(matches!(
        events[0],
        Err(LlmError::Fatal {
            status: Some(400),
            ..
        })
    ));
    let (events, _) = decode(&[r#"{"object":"error","message":"overloaded","code":503}"#]);
    assert!(events[0].as_ref().unwrap_err().is_transient());
    let (events, _) = decode(&["{not json"]);
    assert!(matches!(events[0], Err(LlmError::Fatal { .. })));
}
