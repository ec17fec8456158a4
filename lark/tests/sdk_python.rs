//! Proof that the fake speaks the real protocol: the official Python SDK
//! (`lark-oapi`) talks to it. The interpreter comes from `WEFT_PYTHON`
//! (default `python3`); a missing `lark_oapi` fails the test with a clear message.
//! Each part of the protocol the bot uses is driven by the SDK: the long
//! connection and clicks, messages and patches, downloads, CardKit entities.

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use weft_lark::card::{ApprovalAnswer, ApprovalCard};
use weft_lark::fake::{FakeLark, FakeResource, FragmentOrder, PushOptions, sample_message_event};
use weft_lark::rest::{MessageContent, ReceiveIdType};

fn python() -> String {
    std::env::var("WEFT_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The package folder as the test runner reports it when the test runs (a value
/// baked in at compile time goes stale when the shared target folder serves
/// another checkout of the same code).
fn script(name: &str) -> PathBuf {
    PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo or nextest"))
        .join("sdk_check")
        .join(name)
}

/// The scripts print `LARK_OAPI_MISSING` and exit 3 when the SDK is not installed
/// (checked in the script itself: importing `lark_oapi` takes seconds).
fn fail_if_sdk_missing(output: &str) {
    assert!(
        !output.contains("LARK_OAPI_MISSING"),
        "the official SDK `lark_oapi` cannot be imported by {:?}; install it with `pip install lark-oapi` \
         (or point WEFT_PYTHON at a venv that has it): {output}",
        python()
    );
}

/// Importing `lark_oapi` is slow on a loaded machine.
const SDK_START: Duration = Duration::from_secs(120);

fn sdk(fake: &FakeLark, name: &str) -> Command {
    let mut command = Command::new(python());
    command
        .arg(script(name))
        .env("LARK_BASE_URL", fake.base_url())
        .env("LARK_APP_ID", &fake.config().app_id)
        .env("LARK_APP_SECRET", &fake.config().app_secret)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs an SDK script to its end and answers what it printed; fails the test
/// when the interpreter or the SDK is missing or the script fails.
async fn run_to_end(mut command: Command, what: &str) -> String {
    let output = tokio::time::timeout(SDK_START, command.output())
        .await
        .expect("SDK script finishes")
        .unwrap_or_else(|e| {
            panic!(
                "cannot run Python interpreter {:?} (set WEFT_PYTHON): {e}",
                python()
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    fail_if_sdk_missing(&stdout);
    assert!(
        output.status.success(),
        "SDK {what} script failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The next line the SDK script prints that starts with `prefix` (without it).
async fn next_line_with(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    prefix: &str,
) -> String {
    loop {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("the SDK never printed {prefix}"))
            .unwrap()
            .expect("SDK still running");
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.to_owned();
        }
    }
}

#[tokio::test]
async fn official_sdk_websocket_receives_events_and_answers_clicks() {
    let fake = fake(fast_config()).await;
    let mut child: Child = sdk(&fake, "ws_receive.py").spawn().unwrap_or_else(|e| {
        panic!(
            "cannot run Python interpreter {:?} (set WEFT_PYTHON): {e}",
            python()
        )
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(SDK_START, lines.next_line())
        .await
        .expect("the SDK script starts")
        .unwrap()
        .unwrap_or_default();
    fail_if_sdk_missing(&first);
    assert_eq!(first, "STARTING");

    fake.wait_until(Duration::from_secs(30), |r| {
        r.connections_opened == 1 && !r.pings.is_empty()
    })
    .await
    .expect("the SDK connects and pings");
    let long_text = "split across fragments ".repeat(100);
    let whole = fake.push_event(
        sample_message_event("ev_sdk_whole", "om_sdk_1", "oc_sdk", "hello sdk"),
        PushOptions::default(),
    );
    let split = fake.push_event(
        sample_message_event("ev_sdk_split", "om_sdk_2", "oc_sdk", &long_text),
        PushOptions {
            fragments: 4,
            order: FragmentOrder::Shuffled,
        },
    );
    let records = fake
        .wait_until(WAIT, |r| r.acked(&whole) && r.acked(&split))
        .await
        .unwrap_or_else(|_| panic!("SDK acks not accepted: {:?}", fake.records().pushes));
    assert!(
        records.bad_frames.is_empty(),
        "SDK frames failed strict decoding: {:?}",
        records.bad_frames
    );
    assert!(
        records.pings.iter().all(|p| p.service == 33554678),
        "SDK pings echo service_id"
    );

    let mut received = vec![
        next_line_with(&mut lines, "RECEIVED ").await,
        next_line_with(&mut lines, "RECEIVED ").await,
    ];
    received.sort();
    assert_eq!(
        received,
        vec![format!("{split} {}", long_text.len()), format!("{whole} 9")]
    );

    // A button click on one of our approval cards reaches the SDK's callback
    // handler; its answer rides back in the ack and replaces the card.
    let open = ApprovalCard {
        approval_id: "ap_sdk".into(),
        tool: "current_time".into(),
        args: json!({}),
        context: serde_json::Map::new(),
        answer: ApprovalAnswer::Open {
            expires_in: Duration::from_secs(60),
        },
    };
    let sent = rest(&fake)
        .send_message(
            ReceiveIdType::ChatId,
            "oc_sdk",
            &MessageContent::Interactive(open.render()),
        )
        .await
        .unwrap();
    let click = fake
        .click_button(&sent.message_id, "ou_carol", "Approve")
        .unwrap();
    assert_eq!(
        next_line_with(&mut lines, "CLICKED ").await,
        format!("{click} ou_carol {} ap_sdk approve", sent.message_id)
    );
    let records = fake
        .wait_until(WAIT, |r| r.acked(&click))
        .await
        .unwrap_or_else(|_| panic!("SDK click ack not accepted: {:?}", fake.records().pushes));
    let answer = records
        .ack_data(&click)
        .expect("the answer rides in the ack");
    assert_eq!(
        answer["toast"],
        json!({"type": "success", "content": "recorded"})
    );
    let replaced = json!({"schema": "2.0", "config": {"update_multi": true},
        "body": {"elements": [{"tag": "markdown", "content": "approve by ou_carol"}]}});
    assert_eq!(answer["card"], json!({"type": "raw", "data": replaced}));
    let card = fake
        .sent_messages()
        .into_iter()
        .find(|m| m.message_id == sent.message_id)
        .unwrap();
    assert_eq!(card.content, replaced);
    assert!(records.bad_frames.is_empty(), "{:?}", records.bad_frames);
    child.kill().await.ok();
}

#[tokio::test]
async fn official_sdk_rest_client_sends_and_patches_a_card() {
    let fake = fake(fast_config()).await;
    let stdout = run_to_end(sdk(&fake, "rest_send_patch.py"), "REST").await;
    assert!(stdout.contains("PATCHED"), "{stdout}");
    let records = fake.records();
    assert_eq!(
        records
            .calls_to("POST", "/open-apis/auth/v3/tenant_access_token/internal")
            .len(),
        1
    );
    let statuses: Vec<(String, u16)> = records
        .calls
        .iter()
        .filter(|c| c.path.starts_with("/open-apis/im/"))
        .map(|c| (c.method.clone(), c.status))
        .collect();
    assert_eq!(
        statuses,
        vec![("POST".to_owned(), 200), ("PATCH".to_owned(), 200)]
    );
}

#[tokio::test]
async fn official_sdk_downloads_a_message_resource() {
    let fake = fake(fast_config()).await;
    let pdf = b"%PDF-1.4\nQuarterly revenue grew 42 percent\n%%EOF".to_vec();
    fake.add_resource(
        "om_sdk_file",
        "file_v3_sdk",
        FakeResource::file("季度报告.pdf", pdf.clone()),
    );
    let mut command = sdk(&fake, "rest_resource.py");
    command
        .env("LARK_MESSAGE_ID", "om_sdk_file")
        .env("LARK_FILE_KEY", "file_v3_sdk")
        .env("LARK_RESOURCE_TYPE", "file");
    let stdout = run_to_end(command, "resource").await;
    let hex: String = pdf.iter().map(|b| format!("{b:02x}")).collect();
    assert!(
        stdout.contains(&format!("DOWNLOADED {hex} 季度报告.pdf")),
        "the SDK reads the bytes and the name: {stdout}"
    );
    assert!(
        stdout.contains("MISSING 234003 File not in message."),
        "the SDK reads Lark's error: {stdout}"
    );
    let records = fake.records();
    let downloads = records.calls_to("GET", "/open-apis/im/v1/messages/om_sdk_file/resources/");
    let answers: Vec<(u16, i64)> = downloads.iter().map(|c| (c.status, c.code)).collect();
    assert_eq!(answers, vec![(200, 0), (400, 234003)]);
    assert_eq!(downloads[0].query, "type=file");
}

/// The reading calls the bot makes for who is speaking, what a reply
/// quotes and a group's background: `im.v1.message.get` on a pushed user
/// message, `im.v1.message.list` of its chat (paged, newest first) and
/// `contact.v3.user.get`, then the scope error when the contact scope is gone.
#[tokio::test]
async fn official_sdk_reads_a_message_and_a_user_name() {
    let fake = fake(fast_config()).await;
    fake.push_event(
        sample_message_event("ev_lookup", "om_lookup", "oc_team", "the plan"),
        PushOptions::default(),
    );
    let mut later = sample_message_event("ev_later", "om_later", "oc_team", "and then");
    later["event"]["sender"]["sender_id"]["open_id"] = "ou_bob".into();
    fake.push_event(later, PushOptions::default());
    fake.set_user_name("ou_fake", "Alice Wang");
    let mut child = sdk(&fake, "rest_lookup.py")
        .env("LARK_MESSAGE_ID", "om_lookup")
        .env("LARK_CHAT_ID", "oc_team")
        .env("LARK_OPEN_ID", "ou_fake")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {:?} (set WEFT_PYTHON): {e}", python()));
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let message = next_line_with(&mut lines, "MESSAGE ").await;
    assert_eq!(message, r#"text user ou_fake {"text":"the plan"}"#);
    // Newest first, a page at a time, with the SDK's page token.
    assert_eq!(
        next_line_with(&mut lines, "LISTED ").await,
        "True om_later ou_bob"
    );
    assert_eq!(
        next_line_with(&mut lines, "LISTED ").await,
        "False om_lookup ou_fake"
    );
    assert_eq!(next_line_with(&mut lines, "USER ").await, "Alice Wang");
    fake.deny_contact(true);
    use tokio::io::AsyncWriteExt;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"go\n")
        .await
        .unwrap();
    assert_eq!(next_line_with(&mut lines, "DENIED ").await, "99991672");
    let _ = child.wait().await;
}

#[tokio::test]
async fn official_sdk_cardkit_client_streams_a_card_entity() {
    let fake = fake(fast_config()).await;
    let stdout = run_to_end(sdk(&fake, "cardkit_stream.py"), "CardKit").await;
    let line = |prefix: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {stdout}"))
            .to_owned()
    };
    let card_id = line("CREATED ");
    let message_id = line("SENT ");
    assert_eq!(line("STREAMED "), "3");
    assert_eq!(
        line("STALE "),
        weft_lark::rest::CODE_CARDKIT_SEQUENCE.to_string(),
        "the SDK reads the stale-sequence refusal"
    );
    assert!(stdout.contains("UPDATED\nSETTLED\n"), "{stdout}");
    assert_ne!(line("CLOSED "), "0", "no streaming once it ended");

    let entity = fake.card_entity(&card_id).expect("the entity");
    assert!(!entity.streaming);
    assert_eq!(entity.last_sequence, 6, "the refused stream still counts");
    assert_eq!(entity.updates, 5);
    assert_eq!(entity.updates_before_send, 0);
    let shown = fake
        .sent_messages()
        .into_iter()
        .find(|m| m.message_id == message_id)
        .expect("the message");
    assert_eq!(shown.card_id.as_deref(), Some(card_id.as_str()));
    assert_eq!(
        shown.content["body"]["elements"][0]["content"],
        "Hello, world!"
    );
    let calls: Vec<(String, u16)> = fake
        .records()
        .calls
        .iter()
        .filter(|c| c.path.starts_with("/open-apis/cardkit/"))
        .map(|c| (c.method.clone(), c.status))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST", 200),
            ("PUT", 200),
            ("PUT", 200),
            ("PUT", 200),
            ("PUT", 400),
            ("PUT", 200),
            ("PATCH", 200),
            ("PUT", 400),
        ]
        .map(|(m, s)| (m.to_owned(), s))
    );
}
