use super::*;
use crate::{ChatMessage, StopReason, ToolCall, Usage};
use futures::StreamExt;

fn user(text: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::System {
            content: "be brief".into(),
        },
        ChatMessage::User {
            content: text.into(),
            images: Vec::new(),
        },
    ]
}

fn texts(items: &[Item]) -> String {
    items
        .iter()
        .filter_map(|i| {
            if let Item::Text(t) = i {
                Some(t.as_str())
            } else {
                None
            }
        })
        .collect()
}

fn stream_items(plan: &Plan, attempt: u32) -> Vec<Item> {
    match plan.outcome(attempt) {
        Outcome::Stream(items) => items,
        Outcome::Reject(f) => panic!("rejected with {f:?}"),
    }
}

#[test]
fn tokens_keep_following_whitespace_and_round_trip() {
    assert_eq!(
        tokens("You said: hi  there\nok"),
        ["You ", "said: ", "hi  ", "there\n", "ok"]
    );
    assert_eq!(tokens("  lead"), ["  lead"]);
    assert!(tokens("").is_empty());
    let text = "多字节 文本 and\ttabs ";
    assert_eq!(tokens(text).concat(), text);
}

#[test]
fn several_directives_share_a_line_and_email_is_not_one() {
    let d = parse("hi me@mock.example\n@mock.tokens 300 @mock.delay 0 50\n@mock.think 2").unwrap();
    assert_eq!(d.reply, Some(ReplySpec::Words(300)));
    assert_eq!(d.delay, Some((Duration::ZERO, Duration::from_millis(50))));
    assert_eq!(d.think, 2);
}

#[test]
fn huge_replies_and_long_delays_are_refused() {
    // Before: 200,000 words and a 49-day first token were accepted.
    assert!(parse("@mock.tokens 200000").is_err());
    assert!(parse(&format!("@mock.think {}", MAX_WORDS + 1)).is_err());
    assert!(parse(&format!("@mock.tokens {MAX_WORDS}")).is_ok());
    let err = parse("@mock.delay 4294967295 0").unwrap_err().to_string();
    assert!(err.contains("@mock.delay"), "{err}");
    assert!(
        parse("@mock.delay 0 60001").is_err(),
        "over a minute between tokens"
    );
    assert!(
        parse("@mock.tokens 1 @mock.delay 600000 0").is_ok(),
        "the slow-start scenario"
    );
    // Each bound alone is fine, together they would run for hours.
    let err = parse("@mock.tokens 20000 @mock.delay 0 10000")
        .unwrap_err()
        .to_string();
    assert!(err.contains("at most 1800 s"), "{err}");
    assert!(parse("@mock.tokens 300 @mock.delay 0 50").is_ok());
}

#[test]
fn typos_and_bad_arguments_are_errors() {
    assert_eq!(
        parse("@mock.tokns 3"),
        Err(ScriptError::Unknown("tokns".into()))
    );
    assert!(parse("@mock.tokens many").is_err());
    assert!(parse("@mock.fail 200").is_err());
    assert!(parse("@mock.fail 500 tims=2").is_err());
    assert!(parse("@mock.tool f {not json").is_err());
    assert!(parse(&format!("@mock.think {}", MAX_WORDS + 1)).is_err());
}

#[test]
fn no_directive_echoes_the_last_user_message() {
    let mut msgs = user("first");
    msgs.push(ChatMessage::Assistant {
        reasoning: Vec::new(),
        content: "You said: first".into(),
        tool_calls: vec![],
    });
    msgs.push(ChatMessage::User {
        content: "second one".into(),
        images: Vec::new(),
    });
    let p = plan(&msgs, None).unwrap();
    assert_eq!(p.reply_text(), "You said: second one");
    assert_eq!(p.stop, StopReason::EndTurn);
    assert_eq!(p.input, 2 + 1 + 3 + 2);
    assert_eq!(p.cache_read, 2 + 1 + 3);
}

#[test]
fn reply_tokens_and_think_make_the_stream() {
    let p = plan(&user("@mock.reply Hello, world! @mock.think 2"), None).unwrap();
    let items = stream_items(&p, 1);
    assert_eq!(items[0], Item::Thinking("t1 ".into()));
    assert_eq!(items[1], Item::Thinking("t2".into()));
    assert_eq!(texts(&items), "Hello, world!");
    let usage = Usage {
        input: 7,
        output: 4,
        cache_read: 2,
        reasoning: 2,
    };
    assert_eq!(
        items.last(),
        Some(&Item::Finished {
            stop: StopReason::EndTurn,
            usage
        })
    );

    let p = plan(&user("@mock.tokens 3"), None).unwrap();
    assert_eq!(p.reply_text(), "w1 w2 w3");
}

#[test]
fn tool_directive_calls_then_reports_the_result() {
    let mut msgs = user(r#"what time? @mock.tool current_time {"tz":"UTC"}"#);
    let p = plan(&msgs, None).unwrap();
    let call = p
        .tool_calls
        .first()
        .cloned()
        .expect("step 1 calls the tool");
    assert_eq!(
        (call.name.as_str(), &call.args),
        ("current_time", &serde_json::json!({"tz":"UTC"}))
    );
    assert_eq!(p.stop, StopReason::ToolUse);
    assert!(p.text.is_empty());
    assert!(matches!(stream_items(&p, 1)[0], Item::ToolCall(_)));

    msgs.push(ChatMessage::Assistant {
        reasoning: Vec::new(),
        content: String::new(),
        tool_calls: vec![call.clone()],
    });
    msgs.push(ChatMessage::Tool {
        call_id: call.id,
        name: call.name,
        content: "12:00".into(),
    });
    let p = plan(&msgs, None).unwrap();
    assert!(p.tool_calls.is_empty());
    assert_eq!(p.reply_text(), "tool current_time said: 12:00");
    assert_eq!(p.stop, StopReason::EndTurn);
}

#[test]
fn fail_rejects_the_first_attempts_only() {
    let p = plan(&user("@mock.fail 503 times=2 retry_after=1.5"), None).unwrap();
    for attempt in [1, 2] {
        let Outcome::Reject(f) = p.outcome(attempt) else {
            panic!("attempt {attempt} streamed")
        };
        assert_eq!(
            (f.status, f.retry_after),
            (503, Some(Duration::from_millis(1500)))
        );
    }
    assert_eq!(
        texts(&stream_items(&p, 3)),
        "You said: @mock.fail 503 times=2 retry_after=1.5"
    );
    let p = plan(&user("@mock.fail 400"), None).unwrap();
    assert!(matches!(p.outcome(1), Outcome::Reject(_)));
    assert!(matches!(p.outcome(2), Outcome::Stream(_)));
}

#[test]
fn mid_stream_fail_and_cut_stop_after_n_tokens() {
    let p = plan(&user("@mock.tokens 5 @mock.fail 529 after=2"), None).unwrap();
    let items = stream_items(&p, 1);
    assert_eq!(items.len(), 3);
    assert!(matches!(items[2], Item::Fail(Fail { status: 529, .. })));
    let p = plan(&user("@mock.tokens 5 @mock.cut 3 times=2"), None).unwrap();
    assert_eq!(stream_items(&p, 2).last(), Some(&Item::Cut));
    assert_eq!(stream_items(&p, 2).len(), 4);
    assert!(matches!(
        stream_items(&p, 3).last(),
        Some(Item::Finished { .. })
    ));
}

#[test]
fn max_tokens_truncates_reasoning_first() {
    let p = plan(
        &user("@mock.think 2 @mock.tokens 5 @mock.tool f {}"),
        Some(4),
    )
    .unwrap();
    assert_eq!(
        (p.think.len(), p.text.len(), p.tool_calls.is_empty()),
        (2, 2, true)
    );
    assert_eq!(p.stop, StopReason::MaxTokens);
}

#[tokio::test(start_paused = true)]
async fn pace_honours_ttft_and_itl() {
    let p = plan(&user("@mock.tokens 3"), None).unwrap();
    let items = stream_items(&p, 1);
    let start = tokio::time::Instant::now();
    let timing = Timing::new(Duration::from_millis(100), Duration::from_millis(10));
    let stamps: Vec<_> = pace(items, timing)
        .map(|_| start.elapsed().as_millis())
        .collect()
        .await;
    assert_eq!(stamps, [100, 110, 120, 120]);
}

#[test]
fn tool_call_ids_are_stable_per_step() {
    let a = plan(&user("@mock.tool f {}"), None).unwrap().tool_calls;
    let b = plan(&user("@mock.tool f {}"), None).unwrap().tool_calls;
    assert_eq!(a, b);
    assert!(matches!(a.as_slice(), [ToolCall { id, .. }] if id.starts_with("call_")));
}

#[test]
fn several_tool_directives_make_parallel_calls_and_their_results_are_all_quoted() {
    let mut msgs = user(r#"@mock.tool a {"x":1} @mock.tool b {}"#);
    let p = plan(&msgs, None).unwrap();
    let names: Vec<_> = p.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_ne!(p.tool_calls[0].id, p.tool_calls[1].id);
    msgs.push(ChatMessage::Assistant {
        reasoning: Vec::new(),
        content: String::new(),
        tool_calls: p.tool_calls.clone(),
    });
    for (c, out) in p.tool_calls.iter().zip(["1", "2"]) {
        msgs.push(ChatMessage::Tool {
            call_id: c.id.clone(),
            name: c.name.clone(),
            content: out.into(),
        });
    }
    let p2 = plan(&msgs, None).unwrap();
    assert_eq!(p2.reply_text(), "tool a said: 1; tool b said: 2");
    assert!(parse("@mock.panic").unwrap().panic);
}

#[test]
fn summaries_keep_earlier_facts_and_the_first_words_of_user_lines() {
    let msgs = vec![
        ChatMessage::System {
            content: crate::tokens::SUMMARY_INSTRUCTIONS.into(),
        },
        ChatMessage::User {
            content: "Earlier summary: my name is Zed | I like teal\nuser: we meet on Friday at noon in the small room by the lift\nassistant: fine\nuser: @mock.tokens 5".into(),
            images: Vec::new(),
        },
    ];
    let p = plan(&msgs, None).unwrap();
    assert_eq!(
        p.reply_text(),
        "my name is Zed | I like teal | we meet on Friday at noon in the small room | @mock.tokens 5"
    );
    assert!(p.tool_calls.is_empty());
    assert_eq!(p, plan(&msgs, None).unwrap(), "deterministic");
}

#[test]
fn describe_images_lists_what_the_last_user_message_carried() {
    // "hello" and "" in standard padded base64; sha256 of each from coreutils.
    let image = |mime: &str, data: &str| crate::Image {
        mime: mime.into(),
        data: data.into(),
    };
    let mut msgs = user("first");
    msgs.push(ChatMessage::User {
        content: "what are these? @mock.describe_images".into(),
        images: vec![
            image("image/png", "aGVsbG8="),
            image("image/jpeg", ""),
            image("image/gif", "not base64!"),
        ],
    });
    let p = plan(&msgs, None).unwrap();
    assert_eq!(
        p.reply_text(),
        "image 1: image/png, 5 bytes, sha256 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824\n\
         image 2: image/jpeg, 0 bytes, sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
         image 3: image/gif, not valid base64"
    );
    assert_eq!(p.input, 2 + 1 + 4, "images are not words");

    let p = plan(&user("@mock.describe_images"), None).unwrap();
    assert_eq!(p.reply_text(), "no images");
    let p = plan(&user("@mock.describe_images @mock.reply ok"), None).unwrap();
    assert_eq!(p.reply_text(), "ok", "the later reply directive wins");
}
