use super::*;
use serde_json::json;

fn decode(events: &[Value]) -> Vec<Result<StreamEvent, LlmError>> {
    let mut d = EventDecoder::default();
    let mut out = Out::new();
    for data in events {
        let name = data["type"].as_str().unwrap().to_owned();
        let event = Event {
            event: name,
            data: data.to_string(),
            id: String::new(),
            retry: None,
        };
        if d.on_event(&event, &mut out) {
            return out.into_iter().collect();
        }
    }
    d.on_eof(&mut out);
    out.into_iter().collect()
}

fn start() -> Value {
    json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],
        "stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":377,"cache_creation_input_tokens":3,
        "cache_read_input_tokens":20,"output_tokens":1,"service_tier":"standard"}}})
}

#[test]
fn recorded_tool_use_fixture() {
    let mut events = vec![
        start(),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        json!({"type": "ping"}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll check."}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"get_weather","input":{}}}),
    ];
    for piece in ["", "{\"locati", "on\": \"P", "ar", "is\"}"] {
        events.push(json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":piece}}));
    }
    events.push(json!({"type":"content_block_stop","index":1}));
    events.push(json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":65}}));
    events.push(json!({"type":"message_stop"}));
    let out: Vec<StreamEvent> = decode(&events).into_iter().map(Result::unwrap).collect();
    let call = ToolCall {
        id: "toolu_01".into(),
        name: "get_weather".into(),
        args: json!({"location": "Paris"}),
    };
    let usage = Usage {
        input: 400,
        output: 65,
        cache_read: 20,
        reasoning: 0,
    };
    assert_eq!(
        out,
        [
            StreamEvent::Text("I'll check.".into()),
            StreamEvent::ToolCall(call),
            StreamEvent::Finished {
                stop: StopReason::ToolUse,
                usage
            },
        ]
    );
}

#[test]
fn thinking_blocks_and_signatures() {
    let out = decode(&[
        start(),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Simple educ"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"ation."}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c3lu"}}),
        json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"dGg="}}),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"RW5jcnlwdGVk"}}),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9,"output_tokens_details":{"thinking_tokens":4}}}),
        json!({"type":"message_stop"}),
    ]);
    let events: Vec<_> = out.iter().map(|e| e.as_ref().unwrap().clone()).collect();
    assert_eq!(
        events[..4],
        [
            StreamEvent::Thinking("Simple educ".into()),
            StreamEvent::Thinking("ation.".into()),
            StreamEvent::Reasoned(Reasoning::Thinking {
                thinking: "Simple education.".into(),
                signature: "c3ludGg=".into(),
            }),
            StreamEvent::Reasoned(Reasoning::RedactedThinking {
                data: "RW5jcnlwdGVk".into()
            }),
        ],
        "the pieces stream, then each whole block with its signature"
    );
    let Ok(StreamEvent::Finished { stop, usage }) = &out[4] else {
        panic!("{out:?}")
    };
    assert_eq!(
        (*stop, usage.output, usage.reasoning),
        (StopReason::MaxTokens, 9, 4)
    );
}

#[test]
fn mid_stream_overload_is_transient_and_invalid_request_fatal() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let out = decode(&[start(), overloaded]);
    assert!(out[0].as_ref().unwrap_err().is_transient());
    let invalid =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}});
    assert!(matches!(
        decode(&[start(), invalid])[0],
        Err(LlmError::Fatal { .. })
    ));
}

#[test]
fn eof_before_message_stop_is_transient() {
    let text =
        json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"par"}});
    let out = decode(&[start(), text]);
    assert!(matches!(out.last(), Some(Err(LlmError::Transient { .. }))));
}
