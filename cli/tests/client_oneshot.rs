//! One-shot client against a live `weft up`: text and JSON output, stdin, tool
//! activity on stderr, exit codes, resuming sessions, and the config file.

mod client_support;

use client_support::{Server, assert_code, json, run, run_bytes, stderr, stdout};

#[test]
fn text_reply_is_the_only_thing_on_stdout() {
    let s = Server::start();
    let mut cmd = s.weft();
    cmd.args(["-p", "hello 你好"]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "You said: hello 你好\n");

    let mut cmd = s.weft();
    cmd.args(["--no-stream", "@mock.tokens 30"]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let words: Vec<String> = (1..=30).map(|i| format!("w{i}")).collect();
    assert_eq!(stdout(&out), format!("{}\n", words.join(" ")));
}

/// A reply (and tool arguments) carrying terminal escapes: a window-title OSC and
/// a clear-screen CSI. Nothing the model chose reaches the terminal as control.
#[test]
fn terminal_escapes_in_model_output_never_reach_the_terminal() {
    let s = Server::start();
    let mut cmd = s.weft();
    cmd.args([
        "-p",
        "@mock.reply before \u{1b}]0;pwned\u{7}middle\u{1b}[2J after\r\u{9b}31m",
    ]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let text = stdout(&out);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\r'),
        "{text:?}"
    );
    assert_eq!(text, "before middle after\n");

    let mut cmd = s.weft();
    cmd.args([
        "--print-tools",
        "-p",
        r#"@mock.tool current_time {"zone": "\u001b]0;pwned\u0007UTC\u001b[2J"}"#,
    ]);
    let out = run(cmd, None);
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(err.contains("current_time"), "{err}");
    for printed in [&text, &err] {
        assert!(!printed.contains('\u{1b}'), "{printed:?}");
    }
}

#[test]
fn json_output_has_the_contract_fields() {
    let s = Server::start();
    let v = json(&s, &["@mock.tool current_time {}"]);
    assert!(
        v["response"]
            .as_str()
            .unwrap()
            .starts_with("tool current_time said: "),
        "{v}"
    );
    assert_eq!(v["tool_calls"][0]["name"], "current_time");
    assert_eq!(v["tool_calls"][0]["args"], serde_json::json!({}));
    assert_eq!(v["model"], "mock");
    assert!(v["usage"]["output"].as_u64().unwrap() > 0, "{v}");
    for key in ["input", "cache_read", "reasoning"] {
        assert!(v["usage"][key].is_u64(), "{key} in {v}");
    }
    assert!(
        v["duration_ms"].is_u64() && v["run_id"].is_string() && v["session_id"].is_string(),
        "{v}"
    );
}

#[test]
fn piped_stdin_is_the_message_and_follows_a_prompt() {
    let s = Server::start();
    let out = run(s.weft(), Some("from a pipe\n"));
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "You said: from a pipe\n");

    let mut cmd = s.weft();
    cmd.args(["-p", "review:"]);
    let out = run(cmd, Some("line one\n"));
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "You said: review:\n\nline one\n");
}

#[test]
fn print_tools_writes_tool_activity_to_stderr_only() {
    let s = Server::start();
    let mut cmd = s.weft();
    cmd.args(["--print-tools", "-p", "@mock.tool current_time {}"]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert!(stderr(&out).contains("✓ current_time"), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("tool current_time said: ") && stdout(&out).lines().count() == 1,
        "{}",
        stdout(&out)
    );
}

#[test]
fn exit_codes_tell_failure_kinds_apart() {
    let s = Server::start();
    let mut cmd = s.weft();
    cmd.args(["-p", "@mock.fail 400"]);
    let out = run(cmd, None);
    assert_code(&out, 1);
    assert!(stderr(&out).contains("failed"), "{}", stderr(&out));

    let mut cmd = s.weft();
    cmd.args(["--token", "weft_wrong", "-p", "hi"]);
    let out = run(cmd, None);
    assert_code(&out, 3);
    assert!(stderr(&out).contains("weft login"), "{}", stderr(&out));

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut cmd = s.weft();
    cmd.args(["--gateway", &format!("http://{closed}"), "-p", "hi"]);
    let out = run(cmd, None);
    assert_code(&out, 3);
    assert!(stderr(&out).contains("cannot reach"), "{}", stderr(&out));

    let mut cmd = s.weft();
    cmd.args(["--output", "xml", "-p", "hi"]);
    assert_code(&run(cmd, None), 2);
    assert_code(&run(s.weft(), Some("   \n")), 2);
}

#[test]
fn resume_last_and_session_suffix_continue_the_same_session() {
    let s = Server::start();
    let first = json(&s, &["-p", "@mock.reply one"]);
    let id = first["session_id"].as_str().unwrap().to_string();
    let again = json(&s, &["-r", "last", "-p", "@mock.reply two"]);
    assert_eq!(again["session_id"], id.as_str());
    let short = &id[id.len() - 8..];
    let third = json(&s, &["-s", short, "-p", "@mock.reply three"]);
    assert_eq!(third["session_id"], id.as_str());
    let fresh = json(&s, &["-p", "@mock.reply other"]);
    assert_ne!(fresh["session_id"], id.as_str());

    let mut cmd = s.weft();
    cmd.args(["sessions", "show", short]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let shown = stdout(&out);
    for reply in ["one", "two", "three"] {
        assert!(
            shown.contains(&format!("[assistant]\n{reply}\n")),
            "{shown}"
        );
    }

    let mut cmd = s.weft();
    cmd.args(["-s", "ffffffff", "-p", "hi"]);
    assert_code(&run(cmd, None), 2);
}

#[test]
fn after_weft_up_the_client_works_without_login_and_logout_forgets() {
    let s = Server::start_with(false);
    let cfg = std::fs::read_to_string(s.config_path()).expect("weft up wrote the client config");
    assert!(cfg.contains(&s.url), "{cfg}");
    let mut cmd = s.weft_bare();
    cmd.args(["-p", "no login"]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "You said: no login\n");

    let mut cmd = s.weft_bare();
    cmd.arg("logout");
    assert_code(&run(cmd, None), 0);
    let mut cmd = s.weft_bare();
    cmd.args(["-p", "hi"]);
    assert_code(&run(cmd, None), 3);
}

#[test]
fn login_with_a_token_stores_a_private_config() {
    let s = Server::start();
    let mut cmd = s.weft_bare();
    cmd.args(["login", "--gateway", &s.url, "--token", &s.token]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(s.config_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let mut cmd = s.weft_bare();
    cmd.arg("models");
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert!(stdout(&out).starts_with("mock"), "{}", stdout(&out));

    let mut cmd = s.weft_bare();
    cmd.args(["login", "--gateway", &s.url, "--token", "weft_wrong"]);
    assert_code(&run(cmd, None), 3);
}

#[test]
fn logout_revokes_the_token_at_the_gateway() {
    let s = Server::start_with(false);
    let password =
        std::fs::read_to_string(s.dir.path().join("data").join("initial-admin-password"))
            .expect("first boot saved the admin password");
    let mut cmd = s.weft_bare();
    cmd.args([
        "login",
        "--gateway",
        &s.url,
        "--username",
        "admin",
        "--password-stdin",
    ]);
    assert_code(&run(cmd, Some(&password)), 0);
    let cfg = std::fs::read_to_string(s.config_path()).unwrap();
    let token = cfg
        .lines()
        .find_map(|l| l.strip_prefix("token = "))
        .expect("a stored token")
        .trim_matches('"')
        .to_string();

    let mut cmd = s.weft_bare();
    cmd.arg("logout");
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert!(
        !stderr(&out).contains("could not revoke"),
        "{}",
        stderr(&out)
    );

    // A copy of the token (a script, another shell) no longer works either.
    let mut cmd = s.weft_bare();
    cmd.args(["models", "--gateway", &s.url, "--token", &token]);
    let out = run(cmd, None);
    assert_code(&out, 3);
    assert!(stderr(&out).contains("weft login"), "{}", stderr(&out));
}

#[test]
fn approvals_are_refused_by_default_and_given_with_approve_auto() {
    let s = Server::start_env(true, &[("WEFT_TOOLS__POLICIES__CURRENT_TIME", "confirm")]);
    let mut cmd = s.weft();
    cmd.args(["-p", "@mock.tool current_time {}"]);
    let out = run(cmd, None);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("needs your approval") && err.contains("--approve auto"),
        "{err}"
    );
    assert_eq!(stdout(&out), "", "no reply");

    let mut cmd = s.weft();
    cmd.args([
        "--approve",
        "auto",
        "--print-tools",
        "-p",
        "@mock.tool current_time {}",
    ]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let err = stderr(&out);
    assert!(err.contains("approving current_time"), "{err}");
    assert!(err.contains("current_time approved by"), "{err}");
    assert!(
        stdout(&out).starts_with("tool current_time said: 20"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn agents_and_skills_are_listed_not_sent_to_the_model() {
    let s = Server::start();
    let mut cmd = s.weft();
    cmd.arg("agents");
    let out = run(cmd, None);
    assert_code(&out, 0);
    let text = stdout(&out);
    let ids: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split('\t').next().unwrap_or_default())
        .collect();
    assert_eq!(ids, ["agent", "chat"], "{text}");
    assert!(text.contains("agent\tAssistant\t"), "{text}");
    assert!(!text.contains("You said"), "not a message: {text}");

    let mut cmd = s.weft();
    cmd.arg("skills");
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert_eq!(stdout(&out), "(no skills)\n");
}

#[test]
fn questions_stop_a_one_shot_by_default_and_answer_auto_picks_the_first_option() {
    let s = Server::start();
    let ask = r#"@mock.tool ask_user {"question": "Which colour?", "options": ["red", "blue"]}"#;
    let mut cmd = s.weft();
    cmd.args(["-p", ask]);
    let out = run(cmd, None);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("Which colour?")
            && err.contains("red | blue")
            && err.contains("--answer auto"),
        "{err}"
    );
    assert_eq!(stdout(&out), "", "no reply");

    let mut cmd = s.weft();
    cmd.args(["--answer", "auto", "-p", ask]);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert!(
        stderr(&out).contains("answering \"red\""),
        "{}",
        stderr(&out)
    );
    assert!(
        stdout(&out).starts_with("tool ask_user said: The user (")
            && stdout(&out).contains("answered: red"),
        "{}",
        stdout(&out)
    );

    // A question without options cannot be answered by --answer auto.
    let mut cmd = s.weft();
    cmd.args([
        "--answer",
        "auto",
        "-p",
        r#"@mock.tool ask_user {"question": "What is your name?"}"#,
    ]);
    let out = run(cmd, None);
    assert_code(&out, 1);
    assert!(stderr(&out).contains("no options"), "{}", stderr(&out));
}

/// A PNG and a Markdown file next to each other in a fresh directory.
fn sample_files(dir: &std::path::Path) -> (std::path::PathBuf, Vec<u8>, std::path::PathBuf) {
    let png = weft_files::samples::png();
    let shot = dir.join("shot.png");
    std::fs::write(&shot, &png).unwrap();
    let notes = dir.join("notes.md");
    std::fs::write(&notes, "# Notes\n\nThe launch code is *teal-42*.\n").unwrap();
    (shot, png, notes)
}

#[test]
fn files_go_with_a_one_shot_message_and_reach_the_model() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (shot, png, notes) = sample_files(dir.path());

    let mut cmd = s.weft();
    cmd.args(["-p", "@mock.describe_images", "-f"])
        .arg(&shot)
        .arg("--file")
        .arg(&notes);
    let out = run(cmd, None);
    assert_code(&out, 0);
    assert_eq!(
        stdout(&out),
        format!(
            "image 1: image/png, {} bytes, sha256 {}\n",
            png.len(),
            weft_files::sha256_hex(&png)
        )
    );

    // Documents become text the model reads (the mock echoes what it got).
    let pdf = dir.path().join("report.pdf");
    std::fs::write(&pdf, weft_files::samples::pdf(&["Quarterly revenue rose"])).unwrap();
    let mut cmd = s.weft();
    cmd.args(["-p", "summarise", "-f"])
        .arg(&notes)
        .arg("-f")
        .arg(&pdf);
    let out = run(cmd, None);
    assert_code(&out, 0);
    let echoed = stdout(&out);
    assert!(echoed.starts_with("You said: summarise"), "{echoed}");
    assert!(
        echoed.contains("<document name=\"notes.md\" type=\"text/markdown\">")
            && echoed.contains("The launch code is *teal-42*."),
        "{echoed}"
    );
    assert!(
        echoed.contains("<document name=\"report.pdf\" type=\"application/pdf\">")
            && echoed.contains("Quarterly revenue rose"),
        "{echoed}"
    );

    // A file alone is a message too; history lists each message's files.
    let mut cmd = s.weft();
    cmd.args(["-r", "last", "-f"]).arg(&shot);
    assert_code(&run(cmd, None), 0);
    let mut cmd = s.weft();
    cmd.args(["sessions", "list"]);
    let list = stdout(&run(cmd, None));
    let newest = list.split_whitespace().next().expect("a session");
    let mut cmd = s.weft();
    cmd.args(["sessions", "show", newest]);
    let shown = stdout(&run(cmd, None));
    let notes_bytes = std::fs::metadata(&notes).unwrap().len();
    assert!(
        shown.contains(&format!(
            "[user]\nsummarise\n📎 notes.md (document, {notes_bytes} B)\n📎 report.pdf (document, "
        )),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("[user]\n\n📎 shot.png (image, {} B)\n", png.len())),
        "{shown}"
    );
}

#[test]
fn binary_stdin_and_unusable_files_are_refused_before_anything_is_sent() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let (shot, png, _) = sample_files(dir.path());

    let mut cmd = s.weft();
    cmd.args(["-p", "what is this?"]);
    let out = run_bytes(cmd, Some(&png));
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("binary data") && stderr(&out).contains("-f PATH"),
        "{}",
        stderr(&out)
    );
    // Not UTF-8, though without a NUL byte, and piped alone.
    let out = run_bytes(s.weft(), Some(b"caf\xe9 au lait\n"));
    assert_code(&out, 2);
    assert!(stderr(&out).contains("-f PATH"), "{}", stderr(&out));

    let missing = dir.path().join("missing.png");
    let mut cmd = s.weft();
    cmd.args(["-p", "x", "-f"])
        .arg(&shot)
        .arg("-f")
        .arg(&missing);
    let out = run(cmd, None);
    assert_code(&out, 2);
    assert_eq!(
        stderr(&out),
        format!("weft: no such file: {}\n", missing.display())
    );
    let mut cmd = s.weft();
    cmd.args(["-p", "x", "-f"]).arg(dir.path());
    let out = run(cmd, None);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));

    let mut cmd = s.weft();
    cmd.args(["sessions", "list"]);
    assert_eq!(stdout(&run(cmd, None)), "", "nothing reached the gateway");
}

#[test]
fn a_file_over_a_limit_is_refused_with_the_limit_and_leaves_no_session() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    // A real PNG header followed by 5 MiB: an image over the 4 MiB limit.
    let mut big = weft_files::samples::png();
    big.resize(big.len() + (5 << 20), 0);
    let path = dir.path().join("big.png");
    std::fs::write(&path, &big).unwrap();
    let mut cmd = s.weft();
    cmd.args(["-p", "look", "-f"]).arg(&path);
    let out = run(cmd, None);
    assert_code(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains("image_bytes: big.png is 5.0 MiB, more than the 4.0 MiB allowed"),
        "{err}"
    );
    let mut cmd = s.weft();
    cmd.args(["sessions", "list"]);
    assert_eq!(
        stdout(&run(cmd, None)),
        "",
        "the refused send left no session"
    );
}
