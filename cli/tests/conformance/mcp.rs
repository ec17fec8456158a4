//! MCP servers end to end: a real server written with the official `mcp` Python
//! SDK (`tools/tests/mcp_servers/demo.py`) configured by an admin, its tools
//! offered to the agent under `<server>__<tool>`, `confirm` by default (so a call
//! goes through an approval), the per-call timeout, and `GET /v1/mcp`; the
//! bubblewrap sandbox of stdio servers (`probe.py`), and what happens when it
//! cannot be made.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Value, json};

use crate::approvals::decide;
use crate::harness::*;

crate::both_backends!(
    web_and_mcp_in_one_turn_with_an_approval_holding_no_worker,
    an_mcp_tool_runs_after_its_approval,
    a_slow_mcp_tool_hits_the_timeout,
    the_sandbox_hides_the_worker_from_its_mcp_server,
    without_a_working_sandbox_a_server_is_an_error_and_never_runs,
    a_call_redone_after_its_worker_died_keeps_its_key
);

/// `tools/tests/mcp_servers`, as a plain path (a grant must not contain `..`).
fn servers_dir() -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/tests/mcp_servers");
    std::fs::canonicalize(dir)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// `{ path = …, write = false }` for what the test servers need in their
/// sandbox: the Python (its venv and the installation it was made from) and
/// the scripts — as an admin grants a server's interpreter.
fn python_grants() -> Vec<String> {
    static PREFIXES: OnceLock<Vec<String>> = OnceLock::new();
    let prefixes = PREFIXES.get_or_init(|| {
        let out = std::process::Command::new(python())
            .args([
                "-c",
                "import sys; print(sys.prefix); print(sys.base_prefix)",
            ])
            .output()
            .expect("run WEFT_PYTHON");
        let mut prefixes: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        prefixes.dedup();
        prefixes.push(servers_dir());
        prefixes
    });
    prefixes
        .iter()
        .map(|p| format!("{{ path = {p:?}, write = false }}"))
        .collect()
}

/// Waits (30 s at most) until the first worker reports its first MCP server
/// ready, and answers that server's entry of `GET /v1/mcp`.
pub(crate) async fn first_server_ready(app: &App) -> Value {
    eventually(
        Duration::from_secs(30),
        "the MCP server ready",
        async || {
            let (st, v) = app.get("/v1/mcp", ADMIN_TOKEN).await;
            assert_eq!(st, 200, "{v}");
            let server = &v["workers"][0]["servers"][0];
            if server["state"] == "ready" {
                Ok(server.clone())
            } else {
                Err(v)
            }
        },
    )
    .await
}

/// A config file naming the demo server, which may write to the config's own
/// directory; returned with that dir.
pub(crate) fn mcp_config(extra: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = python_grants();
    paths.push(format!(
        "{{ path = {:?}, write = true }}",
        dir.path().display().to_string()
    ));
    let path = dir.path().join("weft.toml");
    std::fs::write(
        &path,
        format!(
            "[[mcp_servers]]\nname = \"demo\"\ncommand = {:?}\nargs = [{:?}]\npaths = [{}]\n{extra}",
            python(),
            format!("{}/demo.py", servers_dir()),
            paths.join(", "),
        ),
    )
    .unwrap();
    (dir, path.display().to_string())
}

async fn an_mcp_tool_runs_after_its_approval(b: Backend) {
    let (_dir, config) = mcp_config("");
    let app = App::start_with(b, &[("WEFT_CONFIG", config.as_str())]).await;
    let alice = app.user("alice").await;

    // The admin sees the server come up with its tools; users may not look.
    let server = first_server_ready(&app).await;
    assert_eq!(server["name"], "demo");
    assert_eq!(server["policy"], "confirm");
    let tools = server["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("demo__add")), "{server}");
    assert_eq!(
        app.get("/v1/mcp", ADMIN_TOKEN).await.1["configured"],
        json!(["demo"])
    );
    assert_eq!(app.get("/v1/mcp", &alice).await.0, 403);

    let s = app.session(&alice).await;
    let mut sse = app
        .send_stream(&alice, &s, r#"@mock.tool demo__add {"a": 2, "b": 3}"#)
        .await;
    let mut events = sse.until(|e| e.ty == "approval_required").await;
    let required = events.last().unwrap().data.clone();
    assert_eq!(required["name"], "demo__add");
    let approval = required["approval_id"].as_str().unwrap();
    let (st, v) = decide(&app, &alice, approval, "approve").await;
    assert_eq!(st, 200, "{v}");
    events.extend(sse.until_terminal().await);
    assert_contiguous(&events);
    assert_eq!(events.last().unwrap().ty, "done");
    assert_eq!(rendered_text(&events), "tool demo__add said: 5");

    // A schema violation never reaches the server: the model is told.
    let events = app
        .send_stream(&alice, &s, r#"@mock.tool demo__add {"a": "two"}"#)
        .await
        .until_terminal()
        .await;
    assert!(
        rendered_text(&events).contains("error: invalid arguments for demo__add"),
        "{}",
        rendered_text(&events)
    );

    // Each call takes its idempotency key to the server: run, step (from 1),
    // place in the step (from 0).
    let mut sse = app
        .send_stream(
            &alice,
            &s,
            r#"@mock.tool demo__meta {"key": "dev.weft/idempotency-key"}"#,
        )
        .await;
    let mut events = sse.until(|e| e.ty == "approval_required").await;
    let approval = events.last().unwrap().data["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (st, decided) = decide(&app, &alice, &approval, "approve").await;
    assert_eq!(st, 200, "{decided}");
    events.extend(sse.until_terminal().await);
    let run = decided["run_id"].as_str().unwrap();
    assert_eq!(
        rendered_text(&events),
        format!("tool demo__meta said: {run}:1:0")
    );
}

async fn a_slow_mcp_tool_hits_the_timeout(b: Backend) {
    let (dir, config) = mcp_config("policy = \"auto\"\n");
    let app = App::start_with(
        b,
        &[
            ("WEFT_CONFIG", config.as_str()),
            ("WEFT_TOOLS__CALL_TIMEOUT_SECS", "1"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let marker = dir.path().join("slow.marker");
    let text = format!(
        r#"@mock.tool demo__slow {{"seconds": 120, "marker": {:?}}}"#,
        marker.display().to_string()
    );
    // The server may still be starting: the tool is offered once it is ready.
    let events = eventually_with(
        Duration::from_secs(30),
        // Each try is a run, and runs per minute are limited.
        Duration::from_millis(200),
        "demo offering its tools",
        String::new,
        async || {
            let events = app
                .send_stream(&alice, &s, &text)
                .await
                .until_terminal()
                .await;
            let end = events.iter().find(|e| e.ty == "tool_end").unwrap();
            let output = end.data["output"].as_str().unwrap();
            if output.contains("no tool named") {
                Err(output.to_owned())
            } else {
                Ok(events)
            }
        },
    )
    .await;
    assert_eq!(events.last().unwrap().ty, "done", "the run goes on");
    let end = events.iter().find(|e| e.ty == "tool_end").unwrap();
    assert_eq!(end.data["ok"], false);
    assert!(
        end.data["output"]
            .as_str()
            .unwrap()
            .contains("did not answer within 1 s"),
        "{}",
        end.data
    );
    // The server was told to stop (the call's cancellation reached it).
    eventually(
        Duration::from_secs(15),
        "the server told to stop",
        async || match std::fs::read_to_string(&marker) {
            Ok(m) if m == "cancelled" => Ok(()),
            other => Err(other),
        },
    )
    .await;
}

/// The issue's "done when": an admin configured an MCP server and `web_fetch`; a
/// user's question needs both; the side-effecting call is approved while the run
/// holds no worker (one slot, and another user's run gets it meanwhile); the
/// answer arrives with both results.
async fn web_and_mcp_in_one_turn_with_an_approval_holding_no_worker(b: Backend) {
    let page = "Weft release notes: approvals landed.".to_string();
    let port = crate::tools::serve_text(page.clone());
    let (_dir, config) = mcp_config("");
    let app = App::start_with(
        b,
        &[
            ("WEFT_CONFIG", config.as_str()),
            ("WEFT_TOOLS__WEB_FETCH__ENABLED", "true"),
            ("WEFT_TOOLS__WEB_FETCH__ALLOW_HOSTS", "[\"127.0.0.1\"]"),
            ("WEFT_WORKER__CONCURRENCY", "1"),
        ],
    )
    .await;
    let alice = app.user("alice").await;
    let bob = app.user("bob").await;
    let s = app.session(&alice).await;
    let text = format!(
        r#"summarise and save @mock.tool web_fetch {{"url": "http://127.0.0.1:{port}/notes"}} @mock.tool demo__echo {{"text": "saved"}}"#
    );
    // The MCP server may still be starting: until it is ready its tool is unknown.
    let (mut sse, mut events) = eventually_with(
        Duration::from_secs(30),
        // Each try is a run, and runs per minute are limited.
        Duration::from_millis(200),
        "demo offering its tools",
        String::new,
        async || {
            let mut sse = app.send_stream(&alice, &s, &text).await;
            let events = sse
                .until(|e| e.ty == "approval_required" || e.ty == "done" || e.ty == "error")
                .await;
            let last = events.last().unwrap();
            if last.ty == "approval_required" {
                Ok((sse, events))
            } else {
                Err(format!("{} {}", last.ty, last.data))
            }
        },
    )
    .await;
    let required = tool_data(&events, "approval_required");
    assert_eq!(
        required.len(),
        1,
        "web_fetch is auto, only the MCP call waits"
    );
    assert_eq!(required[0]["name"], "demo__echo");
    // While it waits, the only worker slot serves bob.
    let bs = app.session(&bob).await;
    let brun = app.send(&bob, &bs, "@mock.reply meanwhile").await;
    assert_eq!(
        app.wait_run(&bob, &brun, Duration::from_secs(20)).await["status"],
        "succeeded"
    );
    let approval = required[0]["approval_id"].as_str().unwrap();
    let (st, v) = app
        .post(
            &format!("/v1/approvals/{approval}"),
            &alice,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    events.extend(sse.until_terminal().await);
    let said = rendered_text(&events);
    assert!(said.contains(&page), "{said}");
    assert!(said.contains("tool demo__echo said: saved"), "{said}");
    assert_eq!(events.last().unwrap().ty, "done");
}

fn tool_data(events: &[Ev], ty: &str) -> Vec<serde_json::Value> {
    events
        .iter()
        .filter(|e| e.ty == ty)
        .map(|e| e.data.clone())
        .collect()
}

/// `GET /v1/mcp` until every server the first worker reports is past
/// `starting`; returns those servers.
async fn settled_servers(app: &App, count: usize) -> Vec<Value> {
    eventually(
        Duration::from_secs(60),
        "the MCP servers settled",
        async || {
            let (st, v) = app.get("/v1/mcp", ADMIN_TOKEN).await;
            assert_eq!(st, 200, "{v}");
            let servers = v["workers"][0]["servers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if servers.len() == count && servers.iter().all(|s| s["state"] != "starting") {
                Ok(servers)
            } else {
                Err(v)
            }
        },
    )
    .await
}

/// The text a tool call returned to the model.
async fn tool_output(app: &App, token: &str, session: &str, tool: &str, args: Value) -> String {
    let events = app
        .send_stream(token, session, &format!("@mock.tool {tool} {args}"))
        .await
        .until_terminal()
        .await;
    let end = events
        .iter()
        .find(|e| e.ty == "tool_end")
        .unwrap_or_else(|| panic!("no tool_end for {tool}: {events:?}"));
    end.data["output"].as_str().unwrap().to_string()
}

/// The worker process (embedded: the one `weft up`).
fn worker_pid(app: &App) -> u32 {
    app.workers.first().unwrap_or(&app.gateway).pid()
}

/// A probe server in the sandbox and the same one with `sandbox = "none"`,
/// both in the real worker: the sandboxed one cannot read the worker's
/// environment (it holds `WEFT_ADMIN_TOKEN`), find the worker in `/proc`, or
/// read Weft's config and data under the worker's `HOME`; the unsandboxed one
/// can (so the checks can fail), and its start is logged as a warning.
async fn the_sandbox_hides_the_worker_from_its_mcp_server(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let probe = format!("{}/probe.py", servers_dir());
    let config = dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp_servers]]\nname = \"boxed\"\ncommand = {py:?}\nargs = [{probe:?}]\npolicy = \"auto\"\npaths = [{}]\n\n\
             [[mcp_servers]]\nname = \"open\"\ncommand = {py:?}\nargs = [{probe:?}]\npolicy = \"auto\"\nsandbox = \"none\"\n",
            python_grants().join(", "),
            py = python(),
        ),
    )
    .unwrap();
    let app = App::start_with(b, &[("WEFT_CONFIG", &config.display().to_string())]).await;
    // Weft's own config file where a server would look for it: under the
    // worker's HOME (the harness gives each test its own).
    let home = app.env.dir.path();
    let weft_config = home.join(".config/weft/config.toml");
    std::fs::create_dir_all(weft_config.parent().unwrap()).unwrap();
    std::fs::write(&weft_config, format!("# {ADMIN_TOKEN}\n")).unwrap();

    let servers = settled_servers(&app, 2).await;
    assert!(servers.iter().all(|s| s["state"] == "ready"), "{servers:?}");
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    let pid = worker_pid(&app);

    let env = |server: &str| format!("{server}__environ");
    let boxed = tool_output(&app, &alice, &s, &env("boxed"), json!({"pid": pid})).await;
    assert!(
        boxed.starts_with("ERROR") && !boxed.contains(ADMIN_TOKEN),
        "{boxed}"
    );
    let open = tool_output(&app, &alice, &s, &env("open"), json!({"pid": pid})).await;
    assert!(
        open.contains(ADMIN_TOKEN),
        "unsandboxed, the worker's environment is readable: {open}"
    );
    let boxed = tool_output(&app, &alice, &s, "boxed__parent_environ", json!({})).await;
    assert!(!boxed.contains(ADMIN_TOKEN), "{boxed}");

    let weft_bin = env!("CARGO_BIN_EXE_weft");
    let grep = json!({"grep": weft_bin});
    let boxed = tool_output(&app, &alice, &s, "boxed__processes", grep.clone()).await;
    assert_eq!(boxed, "[]", "the sandbox shows a weft process");
    let open = tool_output(&app, &alice, &s, "open__processes", grep).await;
    assert!(
        open.contains(&format!("\"pid\": {pid},")),
        "unsandboxed, the worker is in /proc: {open}"
    );

    let mut secrets = vec![weft_config.clone()];
    if b == Backend::Embedded {
        secrets.push(home.join("data/weft.db"));
    }
    for path in secrets {
        assert!(path.exists(), "{}", path.display());
        let args = json!({"path": path.display().to_string()});
        let boxed = tool_output(&app, &alice, &s, "boxed__read_file", args.clone()).await;
        assert!(
            boxed.starts_with("ERROR FileNotFoundError"),
            "{}: {boxed}",
            path.display()
        );
        let open = tool_output(&app, &alice, &s, "open__read_file", args).await;
        assert!(
            !open.starts_with("ERROR"),
            "unsandboxed, {} is readable: {open}",
            path.display()
        );
    }

    let logs = app.workers.first().unwrap_or(&app.gateway).logs();
    let warned: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("without a sandbox"))
        .collect();
    assert!(
        warned.len() == 1 && warned[0].contains("open") && warned[0].contains("WARN"),
        "the unsandboxed server is named in one warning at start: {warned:?}"
    );
}

/// Without `bwrap` on the worker's PATH, and with a `bwrap` that cannot create
/// its namespaces (a real one, run where no user namespace can be made), the
/// server is `error` with the reason and what to do — and it never ran.
async fn without_a_working_sandbox_a_server_is_an_error_and_never_runs(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let config = dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "[[mcp_servers]]\nname = \"demo\"\ncommand = \"/bin/sh\"\nargs = [\"-c\", {:?}]\n",
            format!("echo ran > {}", marker.display())
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let bwrap = which("bwrap").expect("bwrap is installed (scripts/test installs bubblewrap)");
    let shim = dir.path().join("shim");
    std::fs::create_dir(&shim).unwrap();
    // bwrap in a user namespace whose limit of nested user namespaces is 0.
    let fake = shim.join("bwrap");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nexec unshare --user --map-root-user sh -c \
             'echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"' {} \"$@\"\n",
            bwrap.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let no_bwrap = path_without(&path, "bwrap");
    let failing = format!("{}:{path}", shim.display());

    for (env_path, expect) in [
        (no_bwrap.as_str(), "install bubblewrap"),
        (failing.as_str(), "failed to set up its namespaces"),
    ] {
        let app = App::start_with(b, &[("WEFT_CONFIG", &config), ("PATH", env_path)]).await;
        let servers = settled_servers(&app, 1).await;
        assert_eq!(servers[0]["state"], "error", "{servers:?}");
        let error = servers[0]["last_error"].as_str().unwrap_or_default();
        assert!(
            error.contains(expect) && error.contains("sandbox = \"none\""),
            "{expect}: {error}"
        );
        assert!(
            !marker.exists(),
            "the server ran although its sandbox could not be made"
        );
    }
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| Path::new(dir).join(program))
        .find(|p| p.is_file())
}

/// `PATH` without the directories that hold `program`.
fn path_without(path: &str, program: &str) -> String {
    path.split(':')
        .filter(|dir| !Path::new(dir).join(program).exists())
        .collect::<Vec<_>>()
        .join(":")
}

/// A call in flight when its worker dies is made again by the next attempt,
/// with the same idempotency key, so a server can do it once.
async fn a_call_redone_after_its_worker_died_keeps_its_key(b: Backend) {
    let (dir, config) = mcp_config("policy = \"auto\"\n");
    let mut app = App::start_with(b, &[("WEFT_CONFIG", config.as_str())]).await;
    let alice = app.user("alice").await;
    let s = app.session(&alice).await;
    first_server_ready(&app).await;
    let marker = dir.path().join("keys");
    let text = format!(
        r#"@mock.tool demo__keyed {{"marker": {:?}}}"#,
        marker.display().to_string()
    );
    let mut stream = app.send_stream(&alice, &s, &text).await;
    let run = stream.until(|e| e.ty == "tool_start").await[0].data["run_id"]
        .as_str()
        .unwrap()
        .to_string();
    let keys = || std::fs::read_to_string(&marker).unwrap_or_default();
    eventually(
        Duration::from_secs(10),
        "the call reached the server",
        async || {
            if keys().lines().count() == 1 {
                Ok(())
            } else {
                Err(keys())
            }
        },
    )
    .await;
    match b {
        Backend::Distributed => {
            app.workers[0].kill();
            app.workers.push(App::spawn_worker(&app.env));
        }
        Backend::Embedded => {
            drop(stream);
            app.restart_gateway();
        }
    }
    let r = app.wait_run(&alice, &run, Duration::from_secs(60)).await;
    assert_eq!(r["status"], "succeeded", "{r}");
    assert_eq!(keys(), format!("{run}:1:0\n{run}:1:0\n"));
    let reply = app.messages(&alice, &s).await.last().unwrap()["content"].clone();
    assert_eq!(reply, "tool demo__keyed said: call 2 with this key");
}
