//! The REPL through a pseudo-terminal: typing a message (with wide characters),
//! slash commands (`/memory` among them), and Ctrl-C cancelling a slow reply.

#![cfg(unix)]

mod client_support;

use client_support::Server;
use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};

const TIMEOUT_MS: u64 = 60_000;

fn repl(s: &Server, args: &[&str]) -> PtySession {
    let mut cmd = s.weft();
    cmd.args(args).env("TERM", "xterm-256color");
    let mut p = spawn_command(cmd, Some(TIMEOUT_MS)).expect("spawn weft in a pty");
    p.exp_string("/help for commands").expect("banner");
    p.exp_string(&b("❯")).expect("prompt");
    p
}

/// rexpect reads the pty byte by byte, one `char` per byte: compare in that form.
fn b(s: &str) -> String {
    s.bytes().map(char::from).collect()
}

fn type_line(p: &mut PtySession, line: &str) {
    p.send(line).unwrap();
    p.send("\r").unwrap();
    p.flush().unwrap();
}

fn exits_cleanly(p: &mut PtySession) {
    p.exp_eof().expect("the REPL exits");
    match p.process().wait().unwrap() {
        WaitStatus::Exited(_, code) => assert_eq!(code, 0),
        other => panic!("unexpected end: {other:?}"),
    }
}

#[test]
fn a_typed_message_gets_a_rendered_reply_and_a_status_line() {
    let s = Server::start();
    let mut p = repl(&s, &[]);
    type_line(&mut p, "你好，世界 @mock.reply **粗体** and `code`");
    p.exp_string(&b("\x1b[1m粗体"))
        .expect("bold rendered, markup gone");
    p.exp_string("session ")
        .expect("status line names the session");
    p.exp_string(&b("↑")).expect("status line shows tokens");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "你好");
    p.exp_string(&b("You said: 你好"))
        .expect("wide characters typed intact");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}

#[test]
fn slash_commands_switch_mode_list_sessions_and_resume() {
    let s = Server::start();
    let mut p = repl(&s, &[]);
    type_line(&mut p, "/mode nope");
    p.exp_string("unknown agent \"nope\"; keeping agent")
        .unwrap();
    type_line(&mut p, "/agent chat");
    p.exp_string("agent chat").unwrap();
    type_line(&mut p, "@mock.reply first answer");
    p.exp_string("first answer").unwrap();
    p.exp_string(&b("agent chat ·"))
        .expect("status line shows the agent");
    type_line(&mut p, "/sessions");
    let (_, id) = p
        .exp_regex(&format!("{} \x1b\\[33m[0-9a-f]{{8}}", b("▸")))
        .expect("the current session is marked");
    let short = id[id.len() - 8..].to_string();
    type_line(&mut p, "/new");
    p.exp_string("new session (agent chat)")
        .expect("/new keeps the agent");
    type_line(&mut p, &format!("/resume {}", &short[4..]));
    p.exp_string(&format!("resumed {short}")).unwrap();
    p.exp_string("first answer")
        .expect("resume shows recent messages");
    type_line(&mut p, "/he\t");
    p.exp_string("/sessions").expect("Tab completed /help");
    // Keys typed before the editor is back at its prompt may be discarded
    // (it flushes pending input as it enters raw mode): wait for it.
    p.exp_string(&b("❯")).expect("back at the prompt");
    p.send_control('d').unwrap();
    exits_cleanly(&mut p);
}

/// Another client's slow reply (40 words, 100 ms apart) in a new session,
/// once it is streaming.
fn streaming_elsewhere(s: &Server) -> std::process::Child {
    let mut cmd = s.weft();
    cmd.args(["-p", "@mock.tokens 40 @mock.delay 0 100"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = cmd.spawn().expect("spawn the other client");
    client_support::eventually("the other client's reply to start streaming", || {
        let mut list = s.weft();
        list.args(["sessions", "list"]);
        let listed = client_support::stdout(&client_support::run(list, None));
        if listed.contains('●') {
            Ok(())
        } else {
            Err(listed)
        }
    });
    child
}

#[test]
fn resuming_a_session_follows_the_reply_streaming_in_it() {
    let s = Server::start();
    let mut other = streaming_elsewhere(&s);
    // `-r last` at start: the reply from its first word to its last.
    let mut cmd = s.weft();
    cmd.args(["-r", "last"]).env("TERM", "xterm-256color");
    let mut p = spawn_command(cmd, Some(TIMEOUT_MS)).expect("spawn weft in a pty");
    p.exp_string("/help for commands").expect("banner");
    p.exp_string("a reply is on its way").expect("follows it");
    p.exp_string("w1 w2 w3").expect("from its start");
    p.exp_string("w40").expect("to its end");
    p.exp_string(&b("❯")).expect("then the prompt");
    assert!(other.wait().unwrap().success());

    // `/resume` in a running REPL does the same.
    let mut other = streaming_elsewhere(&s);
    type_line(&mut p, "/resume last");
    p.exp_string("resumed").unwrap();
    p.exp_string("a reply is on its way").expect("follows it");
    p.exp_string("w40").expect("to its end");
    p.exp_string(&b("❯")).expect("then the prompt");
    assert!(other.wait().unwrap().success());
    p.send_control('d').unwrap();
    exits_cleanly(&mut p);
}

#[test]
fn ctrl_c_cancels_a_slow_reply_and_keeps_the_repl() {
    let s = Server::start();
    let mut p = repl(&s, &[]);
    type_line(&mut p, "@mock.tokens 5000 @mock.delay 0 20");
    p.exp_string("w5 ").expect("the reply streams");
    p.send_control('c').unwrap();
    p.exp_string("cancelled").expect("Ctrl-C cancels the run");
    p.exp_string(&b("❯")).expect("back at the prompt");
    type_line(&mut p, "still here");
    p.exp_string("You said: still here")
        .expect("the REPL keeps working");
    p.exp_string(&b("❯")).unwrap();
    p.send_control('c').unwrap();
    p.exp_string("Ctrl-D or /exit")
        .expect("Ctrl-C at the prompt only hints");
    p.send_control('d').unwrap();
    exits_cleanly(&mut p);

    let mut cmd = s.weft();
    cmd.args(["sessions", "list"]);
    let list = client_support::stdout(&client_support::run(cmd, None));
    let id = list
        .split_whitespace()
        .next()
        .expect("one session")
        .to_string();
    let mut cmd = s.weft();
    cmd.args(["sessions", "show", &id]);
    let shown = client_support::stdout(&client_support::run(cmd, None));
    assert!(
        shown.contains("[assistant]\nw1 w2 w3 w4 w5"),
        "the partial reply is kept: {shown}"
    );
    assert!(!shown.contains("w5000"), "the run did not finish: {shown}");
}

#[test]
fn a_tool_call_waiting_for_approval_is_answered_at_an_inline_prompt() {
    let s = Server::start_env(true, &[("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm")]);
    let mut p = repl(&s, &[]);
    type_line(&mut p, "@mock.tool current_time {}");
    p.exp_string("allow current_time")
        .expect("the approval prompt");
    type_line(&mut p, "n");
    p.exp_string("current_time denied by")
        .expect("the decision is shown");
    p.exp_string("tool current_time said: error: the user")
        .expect("the model was told");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "@mock.tool current_time {}");
    p.exp_string("allow current_time").unwrap();
    type_line(&mut p, "a");
    p.exp_string("current_time approved by").unwrap();
    p.exp_string("tool current_time said: 20")
        .expect("the tool ran");
    p.exp_string(&b("❯")).unwrap();
    // `always`: no question the next time in this session.
    type_line(&mut p, "again @mock.tool current_time {}");
    p.exp_string("tool current_time said: 20")
        .expect("ran without asking");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/mcp");
    p.exp_string("no MCP servers are configured").unwrap();
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}

#[test]
fn thinking_folds_to_its_last_lines_and_think_shows_it_all() {
    let s = Server::start();
    let mut p = repl(&s, &[]);
    type_line(&mut p, "@mock.think 400 @mock.reply ok");
    p.exp_string("thought for").expect("the fold's header");
    p.exp_string(&b("400 words · /think to expand")).unwrap();
    p.exp_string("t400")
        .expect("the thinking's end stays in view");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/think");
    p.exp_string("t1 t2 t3").expect("all of it on /think");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}

#[test]
fn a_plan_is_revised_approved_and_rejected_at_an_inline_prompt() {
    let s = Server::start();
    let mut p = repl(&s, &[]);
    type_line(&mut p, "/plan");
    p.exp_string("/plan TASK").expect("usage");
    type_line(
        &mut p,
        "/plan @mock.reply 1. Read the code. 2. Fix the bug.",
    );
    p.exp_string("Fix the bug.").expect("the plan streams");
    p.exp_string("carry out this plan?")
        .expect("the decision prompt");
    type_line(&mut p, "e");
    p.exp_string("what should change?").unwrap();
    type_line(&mut p, "add a test first");
    p.exp_string("changes asked by")
        .expect("the revise is shown");
    p.exp_string("asked for changes to the plan: add a test first")
        .expect("a new plan that heard the comment");
    p.exp_string("carry out this plan?").unwrap();
    type_line(&mut p, "y");
    p.exp_string("plan approved by").unwrap();
    p.exp_string("approved the plan. Plan mode is over")
        .expect("the model carries on with the decision");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/plan @mock.reply 1. Delete everything.");
    p.exp_string("carry out this plan?").unwrap();
    type_line(&mut p, "n");
    p.exp_string("plan rejected by")
        .expect("nothing is carried out");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}

#[test]
fn undo_retry_edit_and_compact_from_the_repl() {
    let s = Server::start();
    let mut p = repl(&s, &[]);
    type_line(&mut p, "/undo");
    p.exp_string("no conversation yet").unwrap();
    type_line(&mut p, "first");
    p.exp_string("You said: first").unwrap();
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "@mock.reply second");
    p.exp_string("second").unwrap();
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/undo");
    p.exp_string("undone: the last turn").unwrap();
    type_line(&mut p, "/redo");
    p.exp_string("redone: the turn is back").unwrap();
    type_line(&mut p, "/redo");
    p.exp_string("nothing to redo").unwrap();
    type_line(&mut p, "/retry");
    p.exp_string("second").expect("the retried reply streams");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/edit @mock.reply third");
    p.exp_string("third").expect("the edited question's answer");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/compact");
    p.exp_string("summarised before the next reply").unwrap();
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}

#[test]
fn attached_files_wait_in_the_prompt_and_go_with_the_next_message() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let png = weft_files::samples::png();
    std::fs::write(dir.path().join("my shot.png"), &png).unwrap();
    std::fs::write(dir.path().join("notes.md"), "launch at noon\n").unwrap();
    let home = s.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("pic.png"), &png).unwrap();
    let mut big = png.clone();
    big.resize(big.len() + (5 << 20), 0);
    std::fs::write(dir.path().join("big.png"), &big).unwrap();
    let d = dir.path().display().to_string();

    let mut p = repl(&s, &[]);
    type_line(&mut p, "/attach");
    p.exp_string("no files attached").unwrap();
    type_line(&mut p, &format!("/attach {d}/missing.png"));
    p.exp_string(&format!("no such file: {d}/missing.png"))
        .unwrap();
    // A quoted path with a space, a Tab-completed one and one under `~`.
    type_line(&mut p, &format!("/attach \"{d}/my shot.png\""));
    p.exp_string(&format!("attached my shot.png ({} B)", png.len()))
        .unwrap();
    p.exp_string("[1 file] ").expect("the prompt shows it");
    p.send(&format!("/attach {d}/no")).unwrap();
    p.send("\t").unwrap();
    p.send("\r").unwrap();
    p.flush().unwrap();
    p.exp_string("attached notes.md")
        .expect("Tab completed the path");
    type_line(&mut p, "/attach ~/pic.png");
    p.exp_string("attached pic.png").unwrap();
    p.exp_string("[3 files] ").unwrap();
    type_line(&mut p, "/detach pic.png");
    p.exp_string("dropped pic.png").unwrap();
    type_line(&mut p, "/attach");
    p.exp_string("my shot.png").unwrap();
    p.exp_string("notes.md").unwrap();
    p.exp_string("[2 files] ").unwrap();

    type_line(&mut p, "@mock.describe_images");
    p.exp_string(&format!(
        "image 1: image/png, {} bytes, sha256 {}",
        png.len(),
        weft_files::sha256_hex(&png)
    ))
    .expect("the image reached the model");
    let (_, session) = p.exp_regex("session [0-9a-f]{8}").expect("the status line");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/attach");
    p.exp_string("no files attached")
        .expect("sent files are not sent again");

    // Refused by the gateway: the message says which limit, the file stays.
    type_line(&mut p, &format!("/attach {d}/big.png"));
    p.exp_string("attached big.png").unwrap();
    type_line(&mut p, "what about this one?");
    p.exp_string("image_bytes: big.png is 5.0 MiB, more than the 4.0 MiB allowed")
        .unwrap();
    p.exp_string("still attached").unwrap();
    p.exp_string("[1 file] ").unwrap();
    type_line(&mut p, "/attach --clear");
    p.exp_string("dropped 1 file").unwrap();

    // History on resume lists each message's files.
    type_line(&mut p, "/new");
    p.exp_string("new session").unwrap();
    type_line(
        &mut p,
        &format!("/resume {}", &session[session.len() - 8..]),
    );
    p.exp_string(&b(&format!("📎 my shot.png (image, {} B)", png.len())))
        .unwrap();
    p.exp_string(&b("📎 notes.md (document, 15 B)")).unwrap();
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}

/// A `/memory` line as the REPL prints it: number, kind, pin, text.
fn memory_line(n: usize, kind: &str, pinned: bool, text: &str) -> String {
    let pin = if pinned { "📌" } else { "  " };
    b(&format!("{n:>3}.\x1b[0m {kind:<9} {pin} {text}"))
}

#[test]
fn memory_lists_forgets_by_the_listed_number_and_switches_off_and_on() {
    // Only what the test does is remembered: no extraction after turns.
    let s = Server::start_env(true, &[("WEFT_MEMORY__EXTRACT", "false")]);
    let mut p = repl(&s, &[]);
    type_line(&mut p, "/memory");
    p.exp_string("nothing remembered about you yet").unwrap();
    p.exp_string("memory is on").unwrap();

    // One remembered in the conversation (the model's tool), two by hand.
    type_line(
        &mut p,
        r#"@mock.tool remember {"text": "works on the payments team"}"#,
    );
    p.exp_string("Remembered (fact, id mem_")
        .expect("the tool kept it");
    p.exp_string(&b("❯")).unwrap();
    for body in [
        serde_json::json!({"text": "prefers answers in Chinese", "kind": "procedure"}),
        serde_json::json!({"text": "drinks green tea", "pinned": true}),
    ] {
        let (status, v) =
            client_support::api(&s, reqwest::Method::POST, "/v1/me/memories", Some(body));
        assert_eq!(status, 201, "{v}");
    }

    // Pinned first, then the most recently changed.
    type_line(&mut p, "/memory");
    p.exp_string(&memory_line(1, "fact", true, "drinks green tea"))
        .unwrap();
    p.exp_string(&memory_line(
        2,
        "procedure",
        false,
        "prefers answers in Chinese",
    ))
    .unwrap();
    p.exp_string(&memory_line(3, "fact", false, "works on the payments team"))
        .unwrap();
    p.exp_string("/memory forget N").unwrap();

    // A search is a list too: its numbers are what `forget` means next.
    type_line(&mut p, "/memory search payments");
    p.exp_string(&memory_line(1, "fact", false, "works on the payments team"))
        .unwrap();
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/memory forget 1");
    p.exp_string("forgot 1: works on the payments team")
        .unwrap();
    type_line(&mut p, "/memory forget 1");
    p.exp_string("1 is forgotten already").unwrap();
    type_line(&mut p, "/memory forget 2");
    p.exp_string(&b("the last list has no memory 2 (1–1)"))
        .unwrap();
    type_line(&mut p, "/memory forget two");
    p.exp_string("usage: /memory forget N").unwrap();
    type_line(&mut p, "/memory");
    p.exp_string(&memory_line(1, "fact", true, "drinks green tea"))
        .unwrap();
    let listed = p.exp_string("/memory forget N").unwrap();
    assert!(
        listed.contains("prefers answers in Chinese") && !listed.contains("payments"),
        "{listed}"
    );
    let (_, list) = client_support::api(&s, reqwest::Method::GET, "/v1/me/memories", None);
    assert_eq!(list["memories"].as_array().unwrap().len(), 2, "{list}");

    // Off: the list says so, and a reply recalls nothing; on: it does again.
    type_line(&mut p, "/memory off");
    p.exp_string("memory off: nothing new is remembered or recalled")
        .unwrap();
    type_line(&mut p, "/memory");
    p.exp_string("your memory is off").unwrap();
    let (_, list) = client_support::api(&s, reqwest::Method::GET, "/v1/me/memories", None);
    assert_eq!(list["enabled"], false, "{list}");
    type_line(&mut p, "hello");
    let before = p.exp_string("You said: hello").unwrap();
    assert!(!before.contains("used"), "recalled while off: {before}");
    p.exp_string(&b("❯")).unwrap();
    type_line(&mut p, "/memory on");
    p.exp_string("memory on:").unwrap();
    type_line(&mut p, "hello again");
    p.exp_string(&b("🧠 used 1 memory: drinks green tea"))
        .expect("the pinned memory is recalled");
    p.exp_string("You said: hello again").unwrap();
    p.exp_string(&b("❯")).unwrap();

    type_line(&mut p, "/memory sideways");
    p.exp_string("unknown /memory \"sideways\"").unwrap();
    type_line(&mut p, "/help");
    p.exp_string("what I remember about you; forget N")
        .expect("/help lists it");
    type_line(&mut p, "/exit");
    exits_cleanly(&mut p);
}
