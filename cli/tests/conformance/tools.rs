//! The guards every tool call gets (docs/agent.md, "Tool guards"): bad calls go
//! back to the model as text, `max_steps` and `max_run_secs` end a run, long
//! outputs are capped and paged, and a panic fails one attempt, never the session.

use std::io::{Read, Write};
use std::time::Duration;

use crate::approvals::tool_message;
use crate::harness::*;

crate::both_backends!(
    tool_errors_go_back_to_the_model,
    max_steps_ends_the_run,
    max_run_secs_ends_a_long_run,
    long_outputs_are_capped_and_paged,
    a_panic_fails_the_attempt_not_the_session,
);

/// A one-page HTTP server on 127.0.0.1 serving `body` as text/plain.
pub fn serve_text(body: String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

async fn tool_errors_go_back_to_the_model(b: Backend) {
    let app = App::start_with(b, &[("WEFT_TOOLS__POLICIES__READ_OUTPUT", "deny")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    for (text, expect) in [
        (
            r#"@mock.tool current_time {"tz": "UTC"}"#,
            "error: invalid arguments for current_time",
        ),
        (
            "@mock.tool rm_rf {}",
            r#"error: there is no tool named "rm_rf""#,
        ),
        (
            r#"@mock.tool read_output {"id": "x"}"#,
            "error: read_output is not allowed here",
        ),
    ] {
        let events = app
            .send_stream(&alice, &s, text)
            .await
            .until_terminal()
            .await;
        assert_eq!(events.last().unwrap().ty, "done", "{text}: the run goes on");
        let end = &tool_message(&events, "tool_end")[0];
        assert_eq!(end["ok"], false, "{text}");
        assert!(
            end["output"].as_str().unwrap().starts_with(expect),
            "{text}: {end}"
        );
        assert!(
            rendered_text(&events).contains(expect),
            "{text}: the model reads it"
        );
    }
}

async fn max_steps_ends_the_run(b: Backend) {
    let app = App::start_with(b, &[("WEFT_WORKER__MAX_STEPS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let events = app
        .send_stream(&alice, &s, "@mock.tool current_time {}")
        .await
        .until_terminal()
        .await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.ty.as_str(), last.data["code"].as_str()),
        ("error", Some("max_steps")),
        "{:?}",
        last.data
    );
    // Admins see the limits in force.
    let (st, limits) = app.get("/v1/admin/limits", ADMIN_TOKEN).await;
    assert_eq!(st, 200);
    assert_eq!(
        (
            limits["max_steps"].as_u64(),
            limits["tool_call_timeout_secs"].as_u64(),
            limits["approval_ttl_secs"].as_u64()
        ),
        (Some(1), Some(30), Some(1800)),
        "{limits}"
    );
    // The step that ran was kept; the session is free.
    let r = app.send(&alice, &s, "@mock.reply next").await;
    assert_eq!(
        app.wait_run(&alice, &r, Duration::from_secs(20)).await["status"],
        "succeeded"
    );
}

async fn max_run_secs_ends_a_long_run(b: Backend) {
    let app = App::start_with(b, &[("WEFT_WORKER__MAX_RUN_SECS", "1")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let events = app
        .send_stream(&alice, &s, "@mock.tokens 100 @mock.delay 0 100")
        .await
        .until_terminal()
        .await;
    let last = events.last().unwrap();
    assert_eq!(
        (last.ty.as_str(), last.data["code"].as_str()),
        ("error", Some("max_duration")),
        "{:?}",
        last.data
    );
    // What was said before the limit is kept.
    let reply = app.messages(&alice, &s).await.last().unwrap()["content"].clone();
    assert!(reply.as_str().unwrap().starts_with("w1 w2"), "{reply}");
}

async fn long_outputs_are_capped_and_paged(b: Backend) {
    let body: String = (0..1000).map(|i| format!("line{i:04}\n")).collect(); // 9000 bytes
    let port = serve_text(body.clone());
    let app = App::start_with(
        b,
        &[
            ("WEFT_TOOLS__WEB_FETCH__ENABLED", "true"),
            ("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]"),
            ("WEFT_TOOLS__OUTPUT_CAP_BYTES", "1024"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let text = format!(r#"@mock.tool web_fetch {{"url": "http://127.0.0.1:{port}/big.txt"}}"#);
    let events = app
        .send_stream(&alice, &s, &text)
        .await
        .until_terminal()
        .await;
    assert_eq!(events.last().unwrap().ty, "done");
    let tool = app
        .messages(&alice, &s)
        .await
        .into_iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    let content = tool["content"].as_str().unwrap();
    // web_fetch's whole output: a `URL:` header, then the page.
    let header = &content[..content.find("line0000\n").expect("the page's head")];
    let full = format!("{header}{body}");
    assert!(
        content.len() < 1400,
        "the model got the head, not 9000 bytes"
    );
    // (The tool may trim the page's trailing newline.)
    let total: usize = content
        .split(" of ")
        .last()
        .and_then(|r| r.split(" bytes").next())
        .unwrap()
        .parse()
        .unwrap();
    assert!((full.len() - 2..=full.len()).contains(&total), "{content}");
    let id = content
        .split("\"id\": \"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("a pointer")
        .to_string();
    let offset: usize = content
        .split("\"offset\": ")
        .nth(1)
        .and_then(|r| r.split('}').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(content.starts_with(&full[..offset]), "{content}");
    assert!(!content.contains(&full[offset..offset + 20]));

    // The model pages on with read_output (in this session only).
    let page =
        format!(r#"@mock.tool read_output {{"id": "{id}", "offset": {offset}, "length": 18}}"#);
    let events = app
        .send_stream(&alice, &s, &page)
        .await
        .until_terminal()
        .await;
    let said = rendered_text(&events);
    assert!(said.contains(&full[offset..offset + 18]), "{said}");
    assert!(
        said.contains(&format!("of {total}: continue with offset {}", offset + 18)),
        "{said}"
    );
    let bob = app.user("bob").await;
    let bs = app.session(&bob).await;
    let events = app
        .send_stream(&bob, &bs, &page)
        .await
        .until_terminal()
        .await;
    assert!(
        rendered_text(&events).contains("no stored output"),
        "{}",
        rendered_text(&events)
    );
}

async fn a_panic_fails_the_attempt_not_the_session(b: Backend) {
    let app = App::start_with(b, &[("WEFT_WORKER__MAX_ATTEMPTS", "2")]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let run = app.send(&alice, &s, "@mock.panic").await;
    // Each attempt panics; the run is retried, then fails — it does not hang.
    let done = app.wait_run(&alice, &run, Duration::from_secs(30)).await;
    assert_eq!(done["status"], "failed", "{done}");
    assert_eq!(done["error"]["code"], "attempts_exhausted", "{done}");
    assert_eq!(done["attempt"], 3, "{done}");
    // The worker lives on and the session takes the next message.
    let next = app.send(&alice, &s, "@mock.reply still here").await;
    let done = app.wait_run(&alice, &next, Duration::from_secs(20)).await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(
        app.messages(&alice, &s).await.last().unwrap()["content"],
        "still here"
    );
}
