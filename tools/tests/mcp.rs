//! The MCP hub against real servers written with the official `mcp` Python
//! SDK (`tests/mcp_servers/demo.py`, `probe.py`), over stdio and streamable
//! HTTP. Stdio servers run in the bubblewrap sandbox, as they do by default.
//!
//! Needs `WEFT_PYTHON`: a Python with the `mcp` package (`scripts/test` sets
//! it up; locally `~/.cache/weft-venv/bin/pip install mcp`), and `bwrap`
//! (Debian's `bubblewrap`, which `scripts/test` installs).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;
use weft_config::{McpPathGrant, McpSandbox, McpServerConfig, Secret, ToolPolicy};
use weft_tools::mcp::{McpHub, McpServerState, McpServerStatus, McpTransportKind};
use weft_tools::{Tool, ToolContext};

/// Long enough for a loaded CI machine; outcomes are asserted, never durations.
const DEADLINE: Duration = Duration::from_secs(90);

fn python() -> String {
    std::env::var("WEFT_PYTHON").unwrap_or_else(|_| {
        panic!(
            "WEFT_PYTHON is not set: point it at a Python that has the `mcp` package \
             (scripts/test does this; locally: python3 -m venv ~/.cache/weft-venv && \
             ~/.cache/weft-venv/bin/pip install mcp, then \
             WEFT_PYTHON=$HOME/.cache/weft-venv/bin/python)"
        )
    })
}

const SERVERS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_servers");

fn demo_script() -> String {
    format!("{SERVERS_DIR}/demo.py")
}

fn grant(path: impl Into<String>, write: bool) -> McpPathGrant {
    McpPathGrant {
        path: path.into(),
        write,
    }
}

/// What the test servers need inside the sandbox, read-only: the Python (its
/// venv and the installation the venv was made from) and the scripts. An admin
/// grants a server's interpreter the same way.
fn python_grants() -> Vec<McpPathGrant> {
    static PREFIXES: OnceLock<Vec<String>> = OnceLock::new();
    let prefixes = PREFIXES.get_or_init(|| {
        let out = std::process::Command::new(python())
            .args([
                "-c",
                "import sys; print(sys.prefix); print(sys.base_prefix)",
            ])
            .output()
            .expect("run WEFT_PYTHON");
        assert!(out.status.success(), "{out:?}");
        let mut prefixes: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        prefixes.dedup();
        prefixes
    });
    let mut grants: Vec<McpPathGrant> = prefixes.iter().map(|p| grant(p, false)).collect();
    grants.push(grant(SERVERS_DIR, false));
    grants
}

fn stdio(name: &str, extra: &[&str]) -> McpServerConfig {
    let mut args = vec![demo_script()];
    args.extend(extra.iter().map(|s| s.to_string()));
    McpServerConfig {
        name: name.into(),
        command: Some(python()),
        args,
        paths: python_grants(),
        ..McpServerConfig::default()
    }
}

/// `config` with a scratch directory the server may write too.
fn with_scratch(mut config: McpServerConfig, scratch: &Scratch) -> McpServerConfig {
    config.paths.push(grant(scratch.0.to_string_lossy(), true));
    config
}

/// A scratch directory removed at the end of the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "weft-mcp-{tag}-{}-{}",
            std::process::id(),
            uuid_ish()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn uuid_ish() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The demo server on streamable HTTP; stopped when dropped.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

impl HttpServer {
    async fn start() -> HttpServer {
        let mut child = tokio::process::Command::new(python())
            .arg(demo_script())
            .arg("--http")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the HTTP MCP server");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let port = tokio::time::timeout(DEADLINE, async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(port) = line.strip_prefix("PORT ") {
                    return port.trim().to_string();
                }
            }
            panic!("the HTTP MCP server exited before listening");
        })
        .await
        .expect("the HTTP MCP server did not report its port");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn wait_until(
    hub: &McpHub,
    what: &str,
    until: impl Fn(&[McpServerStatus]) -> bool,
) -> Vec<McpServerStatus> {
    match tokio::time::timeout(DEADLINE, hub.wait_for_status(until)).await {
        Ok(status) => status,
        Err(_) => panic!(
            "MCP servers never got to: {what}; status: {:#?}",
            hub.status()
        ),
    }
}

fn server<'a>(status: &'a [McpServerStatus], name: &str) -> &'a McpServerStatus {
    status.iter().find(|s| s.name == name).unwrap()
}

async fn ready(hub: &McpHub, name: &str) -> McpServerStatus {
    let status = wait_until(hub, &format!("{name} ready"), |s| {
        server(s, name).state == McpServerState::Ready
    })
    .await;
    server(&status, name).clone()
}

fn tool(hub: &McpHub, name: &str) -> Arc<dyn Tool> {
    hub.tools()
        .into_iter()
        .find(|t| t.spec().name == name)
        .unwrap_or_else(|| panic!("no tool {name}; status: {:#?}", hub.status()))
}

async fn call(hub: &McpHub, name: &str, args: serde_json::Value) -> Result<String, String> {
    let tool = tool(hub, name);
    tokio::time::timeout(DEADLINE, tool.call(args, &ToolContext::default()))
        .await
        .expect("tool call hung")
}

async fn settled_hub(configs: Vec<McpServerConfig>) -> (Arc<McpHub>, CancellationToken) {
    let shutdown = CancellationToken::new();
    let hub = McpHub::start(configs, shutdown.clone());
    tokio::time::timeout(DEADLINE, hub.settled())
        .await
        .expect("servers never settled");
    (hub, shutdown)
}

async fn stop(hub: &McpHub, shutdown: &CancellationToken) {
    shutdown.cancel();
    tokio::time::timeout(DEADLINE, hub.closed())
        .await
        .expect("the hub did not shut down");
}

#[tokio::test]
async fn stdio_tools_are_listed_namespaced_and_called() {
    let (hub, shutdown) = settled_hub(vec![stdio("demo", &[])]).await;
    let status = ready(&hub, "demo").await;
    assert_eq!(status.transport, McpTransportKind::Stdio);
    assert_eq!(
        status.policy,
        ToolPolicy::Confirm,
        "MCP tools default to confirm"
    );
    for name in ["demo__add", "demo__echo", "demo__fail", "demo__slow"] {
        assert!(
            status.tools.iter().any(|t| t == name),
            "{name} in {status:?}"
        );
    }

    let add = tool(&hub, "demo__add");
    let spec = add.spec();
    assert_eq!(spec.description, "Add two integers.");
    assert!(spec.parameters["properties"]["a"].is_object(), "{spec:?}");
    assert!(add.side_effects());
    assert_eq!(hub.policy("demo__add"), Some(ToolPolicy::Confirm));
    assert_eq!(hub.policy("other__add"), None);

    assert_eq!(
        call(&hub, "demo__add", json!({"a": 2, "b": 40}))
            .await
            .unwrap(),
        "42"
    );
    assert_eq!(
        call(&hub, "demo__echo", json!({"text": "héllo ✓"}))
            .await
            .unwrap(),
        "héllo ✓"
    );
    assert_eq!(
        call(&hub, "demo__picture", json!({"size_bytes": 12 * 1024}))
            .await
            .unwrap(),
        "here is the picture\n[image: image/png, 12 KB]"
    );
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn streamable_http_tools_work_and_send_the_configured_headers() {
    let server = HttpServer::start().await;
    let mut config = McpServerConfig {
        name: "remote".into(),
        url: Some(server.url.clone()),
        policy: ToolPolicy::Auto,
        ..McpServerConfig::default()
    };
    config
        .headers
        .insert("X-Weft-Test".into(), Secret("from-config".into()));
    let (hub, shutdown) = settled_hub(vec![config]).await;
    let status = ready(&hub, "remote").await;
    assert_eq!(status.transport, McpTransportKind::Http);
    assert_eq!(hub.policy("remote__add"), Some(ToolPolicy::Auto));

    assert_eq!(
        call(&hub, "remote__add", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        "3"
    );
    assert_eq!(
        call(&hub, "remote__header", json!({"name": "X-Weft-Test"}))
            .await
            .unwrap(),
        "from-config"
    );
    let err = call(&hub, "remote__fail", json!({"reason": "over HTTP"}))
        .await
        .unwrap_err();
    assert!(err.contains("over HTTP"), "{err}");
    // A call's idempotency key reaches the server in `_meta`; none, no key.
    let key = json!({"key": weft_tools::IDEMPOTENCY_META_KEY});
    let keyed = ToolContext {
        call_key: "run_1:2:0".into(),
        ..ToolContext::default()
    };
    let meta = tool(&hub, "remote__meta");
    assert_eq!(meta.call(key.clone(), &keyed).await.unwrap(), "run_1:2:0");
    assert_eq!(call(&hub, "remote__meta", key).await.unwrap(), "<absent>");
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn a_dead_http_server_fails_calls_and_is_marked_error() {
    let mut remote = HttpServer::start().await;
    let config = McpServerConfig {
        name: "remote".into(),
        url: Some(remote.url.clone()),
        ..McpServerConfig::default()
    };
    let (hub, shutdown) = settled_hub(vec![config]).await;
    ready(&hub, "remote").await;
    let add = tool(&hub, "remote__add");
    remote.child.kill().await.unwrap();

    let err = tokio::time::timeout(
        DEADLINE,
        add.call(json!({"a": 1, "b": 2}), &ToolContext::default()),
    )
    .await
    .expect("a call to a dead server hung")
    .unwrap_err();
    assert!(err.contains("remote"), "{err}");
    let status = wait_until(&hub, "remote in error", |s| {
        server_state(s, "remote") == McpServerState::Error
    })
    .await;
    assert!(server(&status, "remote").last_error.is_some());
    assert!(hub.tools().is_empty());
    stop(&hub, &shutdown).await;
}

fn server_state(status: &[McpServerStatus], name: &str) -> McpServerState {
    server(status, name).state
}

#[tokio::test]
async fn a_stdio_server_gets_its_env_but_not_the_hosts() {
    let host_only = "CARGO_MANIFEST_DIR";
    assert!(
        std::env::var(host_only).is_ok(),
        "the test runner sets {host_only}"
    );
    let mut config = stdio("demo", &[]);
    config
        .env
        .insert("DEMO_TOKEN".into(), Secret("t0ken".into()));
    let (hub, shutdown) = settled_hub(vec![config]).await;
    ready(&hub, "demo").await;
    let env = |name: &str| call(&hub, "demo__env_var", json!({"name": name}));
    assert_eq!(env("DEMO_TOKEN").await.unwrap(), "t0ken");
    assert_eq!(env(host_only).await.unwrap(), "<absent>");
    assert_ne!(env("PATH").await.unwrap(), "<absent>");
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn allow_and_deny_lists_pick_the_tools() {
    let mut config = stdio("picky", &[]);
    config.tools = vec!["add".into(), "echo".into(), "fail".into()];
    config.deny = vec!["echo".into()];
    let (hub, shutdown) = settled_hub(vec![config]).await;
    let status = ready(&hub, "picky").await;
    assert_eq!(status.tools, vec!["picky__add", "picky__fail"]);
    let names: Vec<String> = hub.tools().iter().map(|t| t.spec().name).collect();
    assert_eq!(names, vec!["picky__add", "picky__fail"]);
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn tool_errors_and_protocol_errors_reach_the_model_as_err_text() {
    let (hub, shutdown) = settled_hub(vec![stdio("demo", &[])]).await;
    ready(&hub, "demo").await;
    let err = call(&hub, "demo__fail", json!({"reason": "disk full"}))
        .await
        .unwrap_err();
    assert!(err.contains("disk full"), "{err}");
    let err = call(&hub, "demo__protocol_error", json!({}))
        .await
        .unwrap_err();
    assert!(err.contains("refuses this request"), "{err}");
    let err = call(&hub, "demo__add", json!({"a": "two", "b": 2}))
        .await
        .unwrap_err();
    assert!(!err.is_empty());
    let err = call(&hub, "demo__add", json!([1, 2])).await.unwrap_err();
    assert!(err.contains("JSON object"), "{err}");
    // The connection survives all of that.
    assert_eq!(
        call(&hub, "demo__add", json!({"a": 1, "b": 1}))
            .await
            .unwrap(),
        "2"
    );
    assert_eq!(server(&hub.status(), "demo").state, McpServerState::Ready);
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn a_broken_server_is_marked_error_others_keep_working_and_it_recovers_once_fixed() {
    let scratch = Scratch::new("fixed");
    let marker = scratch.path("fixed");
    let (hub, shutdown) = settled_hub(vec![
        stdio("good", &[]),
        with_scratch(stdio("flaky", &["--fail-unless", &marker]), &scratch),
    ])
    .await;

    let status = wait_until(&hub, "flaky in error", |s| {
        server(s, "flaky").state == McpServerState::Error
    })
    .await;
    let flaky = server(&status, "flaky");
    let last_error = flaky.last_error.as_deref().unwrap_or_default();
    assert!(
        last_error.contains("boom"),
        "stderr is in the error: {flaky:?}"
    );
    assert!(flaky.tools.is_empty());
    assert!(
        hub.tools()
            .iter()
            .all(|t| !t.spec().name.starts_with("flaky__"))
    );

    ready(&hub, "good").await;
    assert_eq!(
        call(&hub, "good__add", json!({"a": 3, "b": 4}))
            .await
            .unwrap(),
        "7"
    );

    std::fs::write(&marker, "ok").unwrap();
    ready(&hub, "flaky").await;
    assert_eq!(
        call(&hub, "flaky__add", json!({"a": 5, "b": 5}))
            .await
            .unwrap(),
        "10"
    );
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn a_server_that_dies_is_restarted_and_old_tool_handles_keep_working() {
    let (hub, shutdown) = settled_hub(vec![stdio("demo", &[]), stdio("other", &[])]).await;
    ready(&hub, "demo").await;
    let pids = tool(&hub, "demo__pids");
    let ctx = ToolContext::default();
    let first = pids.call(json!({}), &ctx).await.unwrap();

    let err = call(&hub, "demo__crash", json!({})).await.unwrap_err();
    assert!(err.contains("demo"), "{err}");
    assert_eq!(
        call(&hub, "other__add", json!({"a": 1, "b": 2}))
            .await
            .unwrap(),
        "3"
    );

    let status = wait_until(&hub, "demo back after its crash", |s| {
        let demo = server(s, "demo");
        demo.state == McpServerState::Ready && demo.last_error.is_some()
    })
    .await;
    let last_error = server(&status, "demo").last_error.clone().unwrap();
    assert!(last_error.contains("crashing on purpose"), "{last_error}");

    let second = tokio::time::timeout(DEADLINE, pids.call(json!({}), &ctx))
        .await
        .unwrap()
        .unwrap();
    // Its pid, and the PID namespace of its new sandbox.
    let server = |out: &str| {
        let parts: Vec<&str> = out.split(' ').collect();
        (parts[0].to_string(), parts[2].to_string())
    };
    assert_ne!(server(&first), server(&second), "a new process serves");
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn dropping_a_slow_call_cancels_it_on_the_server() {
    let scratch = Scratch::new("slow");
    let marker = scratch.path("marker");
    let (hub, shutdown) = settled_hub(vec![with_scratch(stdio("demo", &[]), &scratch)]).await;
    ready(&hub, "demo").await;
    let slow = tool(&hub, "demo__slow");
    let ctx = ToolContext::default();
    let args = json!({"seconds": 600, "marker": marker});
    let marker_says = |what: &str| std::fs::read_to_string(&marker).is_ok_and(|m| m == what);

    let mut pending = slow.call(args, &ctx);
    let running = tokio::time::timeout(DEADLINE, async {
        loop {
            tokio::select! {
                out = &mut pending => panic!("a 600 s call finished: {out:?}"),
                () = tokio::time::sleep(Duration::from_millis(50)) => {
                    if marker_says("started") {
                        return;
                    }
                }
            }
        }
    })
    .await;
    assert!(running.is_ok(), "the slow tool never started");
    // As the worker's tool runner does: a timeout drops the call's future.
    let outcome = tokio::time::timeout(Duration::from_millis(100), &mut pending).await;
    assert!(outcome.is_err(), "a 600 s call finished: {outcome:?}");
    drop(pending);

    let cancelled = tokio::time::timeout(DEADLINE, async {
        loop {
            if marker_says("cancelled") {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(cancelled.is_ok(), "the server never saw the cancellation");
    assert_eq!(
        call(&hub, "demo__add", json!({"a": 1, "b": 1}))
            .await
            .unwrap(),
        "2"
    );
    stop(&hub, &shutdown).await;
}

#[tokio::test]
async fn shutdown_stops_the_server_and_what_it_started() {
    let mut open = stdio("open", &[]);
    open.sandbox = Some(McpSandbox::None);
    open.paths.clear();
    let (hub, shutdown) = settled_hub(vec![stdio("demo", &[]), open]).await;
    ready(&hub, "demo").await;
    ready(&hub, "open").await;
    let add = tool(&hub, "demo__add");

    // Unsandboxed, the server's pids are this machine's.
    let out = call(&hub, "open__pids", json!({})).await.unwrap();
    let mut pids: Vec<u32> = out.split(' ').take(2).map(|p| p.parse().unwrap()).collect();
    // Sandboxed, its pids are its namespace's: find its processes by that.
    let out = call(&hub, "demo__pids", json!({})).await.unwrap();
    let namespace = out.split(' ').nth(2).unwrap().to_string();
    let sandboxed = in_pid_namespace(&namespace);
    assert!(
        sandboxed.len() >= 3,
        "bwrap's init, the server and its child run in {namespace}: {sandboxed:?}"
    );
    pids.extend(sandboxed);
    assert!(
        pids.iter().all(|&p| alive(p)),
        "{pids:?} run before shutdown"
    );

    stop(&hub, &shutdown).await;
    let gone = tokio::time::timeout(DEADLINE, async {
        while pids.iter().any(|&p| alive(p)) || !in_pid_namespace(&namespace).is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "still running after shutdown: {pids:?}");
    assert!(
        hub.tools().is_empty(),
        "no tools are offered after shutdown"
    );
    assert_eq!(server(&hub.status(), "demo").state, McpServerState::Stopped);
    let err = add
        .call(json!({"a": 1, "b": 1}), &ToolContext::default())
        .await;
    assert!(err.unwrap_err().contains("shut down"));
}

/// The processes (as this machine numbers them) running in a PID namespace.
fn in_pid_namespace(namespace: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let link = std::fs::read_link(entry.path().join("ns/pid"));
        if link.is_ok_and(|l| l.to_string_lossy() == namespace) && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// Running (a zombie waiting to be reaped counts as gone).
fn alive(pid: u32) -> bool {
    let stat = Path::new("/proc").join(pid.to_string()).join("stat");
    match std::fs::read_to_string(stat) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn bad_configs_and_missing_programs_are_reported_per_server() {
    let configs = vec![
        McpServerConfig {
            name: "nowhere".into(),
            ..McpServerConfig::default()
        },
        McpServerConfig {
            name: "missing".into(),
            command: Some("/nonexistent/mcp-server".into()),
            ..McpServerConfig::default()
        },
    ];
    let (hub, shutdown) = settled_hub(configs).await;
    let status = hub.status();
    let nowhere = server(&status, "nowhere");
    assert_eq!(nowhere.state, McpServerState::Error);
    let e = nowhere.last_error.as_deref().unwrap();
    assert!(
        e.contains("\"nowhere\"") && e.contains("command/url"),
        "{e}"
    );
    let missing = server(&status, "missing");
    assert_eq!(missing.state, McpServerState::Error);
    let e = missing.last_error.as_deref().unwrap();
    assert!(e.contains("/nonexistent/mcp-server"), "{e}");
    assert!(hub.tools().is_empty());
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json[0]["state"], "error");
    assert_eq!(json[0]["transport"], "stdio");
    stop(&hub, &shutdown).await;
}

/// Files a hostile server would look for, in a directory under this machine's
/// home (`CARGO_TARGET_TMPDIR`), not under `/tmp`: so nothing is hidden from
/// the sandbox merely by its own `/tmp`.
struct Bait {
    root: PathBuf,
}

const SECRET: &str = "s3cr3t-the-server-must-not-see";

impl Bait {
    fn new() -> Bait {
        let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "mcp-bait-{}-{}",
            std::process::id(),
            uuid_ish()
        ));
        for (file, text) in [
            (
                "run/secrets/weft_database_url",
                "postgres://weft:s3cr3t@db/weft",
            ),
            ("data/weft.db", "SQLite format 3\0"),
            ("home/.config/weft/config.toml", "admin_token = \"x\""),
            ("granted/notes.txt", "granted"),
            ("writable/.keep", ""),
            ("ungranted/.keep", ""),
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("{text} {SECRET}")).unwrap();
        }
        Bait { root }
    }

    fn path(&self, rel: &str) -> String {
        self.root.join(rel).to_string_lossy().into_owned()
    }
}

impl Drop for Bait {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn probe(name: &str) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        command: Some(python()),
        args: vec![format!("{SERVERS_DIR}/probe.py")],
        paths: python_grants(),
        policy: ToolPolicy::Auto,
        ..McpServerConfig::default()
    }
}

async fn probe_call(hub: &McpHub, server: &str, tool: &str, args: serde_json::Value) -> String {
    call(hub, &format!("{server}__{tool}"), args)
        .await
        .unwrap_or_else(|e| panic!("{server}__{tool} failed as a call: {e}"))
}

/// The probe: a stdio server running as the worker's OS user tries to
/// read the worker's environment and secrets, find its process and reach the
/// network. In the sandbox every attempt fails; the same probe with
/// `sandbox = "none"`, on the same machine, succeeds at each, so the checks
/// can fail.
#[tokio::test]
async fn a_sandboxed_server_cannot_reach_the_workers_secrets_processes_or_network() {
    let host_only = "CARGO_MANIFEST_DIR";
    assert!(
        std::env::var(host_only).is_ok(),
        "the test runner sets {host_only}"
    );
    let bait = Bait::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let me = std::process::id();
    let my_exe = std::env::current_exe()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    let mut boxed = probe("boxed");
    boxed.paths.push(grant(bait.path("granted"), false));
    boxed.paths.push(grant(bait.path("writable"), true));
    let mut online = probe("online");
    online.network = Some(true);
    let mut open = probe("open");
    open.paths.clear();
    open.sandbox = Some(McpSandbox::None);
    let (hub, shutdown) = settled_hub(vec![boxed, online, open]).await;
    for name in ["boxed", "online", "open"] {
        ready(&hub, name).await;
    }

    // The worker's environment: through the parent, and by its pid.
    for server in ["boxed", "online"] {
        let env = probe_call(&hub, server, "parent_environ", json!({})).await;
        assert!(!env.contains(host_only), "{server}: {env}");
        let env = probe_call(&hub, server, "environ", json!({"pid": me})).await;
        assert!(
            env.starts_with("ERROR"),
            "{server} read /proc/{me}/environ: {env}"
        );
    }
    let env = probe_call(&hub, "open", "parent_environ", json!({})).await;
    assert!(
        env.contains(host_only),
        "unsandboxed, the parent's environment is readable: {env}"
    );
    let env = probe_call(&hub, "open", "environ", json!({"pid": me})).await;
    assert!(
        env.contains(host_only),
        "unsandboxed, /proc/{me}/environ is readable: {env}"
    );

    // The worker's process, by listing /proc.
    let seen = |listing: &str| -> Vec<(u32, String)> {
        serde_json::from_str::<Vec<serde_json::Value>>(listing)
            .unwrap_or_else(|e| panic!("{e}: {listing}"))
            .iter()
            .map(|p| {
                (
                    p["pid"].as_u64().unwrap() as u32,
                    p["cmdline"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let boxed_sees = seen(&probe_call(&hub, "boxed", "processes", json!({})).await);
    assert!(
        boxed_sees.iter().all(|(_, cmd)| !cmd.contains(&my_exe)),
        "the sandbox shows the worker: {boxed_sees:?}"
    );
    assert!(
        !boxed_sees.is_empty() && boxed_sees.iter().all(|(_, cmd)| cmd.contains("probe.py")),
        "the sandbox shows only its own init (bwrap) and the server: {boxed_sees:?}"
    );
    let open_sees = seen(&probe_call(&hub, "open", "processes", json!({})).await);
    assert!(
        open_sees
            .iter()
            .any(|(pid, cmd)| *pid == me && cmd.contains(&my_exe)),
        "unsandboxed, the worker is in /proc: {open_sees:?}"
    );

    // Secrets, the data dir, Weft's config; and /etc/shadow, which is not bound.
    for rel in [
        "run/secrets/weft_database_url",
        "data/weft.db",
        "home/.config/weft/config.toml",
    ] {
        let path = bait.path(rel);
        for server in ["boxed", "online"] {
            let got = probe_call(&hub, server, "read_file", json!({"path": path})).await;
            assert!(
                got.starts_with("ERROR FileNotFoundError") && !got.contains(SECRET),
                "{server} read {path}: {got}"
            );
        }
        let got = probe_call(&hub, "open", "read_file", json!({"path": path})).await;
        assert!(
            got.contains(SECRET),
            "unsandboxed, {path} is readable: {got}"
        );
    }
    let got = probe_call(&hub, "boxed", "read_file", json!({"path": "/etc/shadow"})).await;
    assert!(got.starts_with("ERROR FileNotFoundError"), "{got}");

    // The network: off unless the config says network = true.
    let got = probe_call(
        &hub,
        "boxed",
        "connect",
        json!({"host": "127.0.0.1", "port": port}),
    )
    .await;
    assert!(got.starts_with("ERROR"), "network = false, yet: {got}");
    for server in ["online", "open"] {
        let got = probe_call(
            &hub,
            server,
            "connect",
            json!({"host": "127.0.0.1", "port": port}),
        )
        .await;
        assert_eq!(got, "connected", "{server}");
    }

    // Granted paths: readable; writable only where granted with write.
    let got = probe_call(
        &hub,
        "boxed",
        "read_file",
        json!({"path": bait.path("granted/notes.txt")}),
    )
    .await;
    assert!(got.starts_with("granted"), "{got}");
    let write = |server: &'static str, rel: &str| {
        let path = bait.path(rel);
        let hub = hub.clone();
        async move {
            probe_call(
                &hub,
                server,
                "write_file",
                json!({"path": path, "text": "x"}),
            )
            .await
        }
    };
    let got = write("boxed", "granted/new.txt").await;
    assert!(
        got.starts_with("ERROR"),
        "a read-only grant was written: {got}"
    );
    let got = write("boxed", "ungranted/new.txt").await;
    assert!(
        got.starts_with("ERROR"),
        "an ungranted path was written: {got}"
    );
    assert_eq!(write("boxed", "writable/new.txt").await, "written");
    assert!(Path::new(&bait.path("writable/new.txt")).exists());
    assert!(!Path::new(&bait.path("granted/new.txt")).exists());
    assert!(!Path::new(&bait.path("ungranted/new.txt")).exists());
    assert_eq!(
        write("open", "ungranted/new.txt").await,
        "written",
        "unsandboxed, anything is writable"
    );

    drop(listener);
    stop(&hub, &shutdown).await;
}

/// A config reload (`McpHub::reconfigure`): a server whose settings are the
/// same keeps its process; a changed one is a new process with the new
/// settings; a new one starts; one no longer listed stops and its tools go.
#[tokio::test]
async fn a_reload_restarts_only_the_servers_it_changed() {
    use weft_tools::mcp::Reconfigured;
    let (hub, shutdown) = settled_hub(vec![stdio("kept", &[]), stdio("changed", &[])]).await;
    ready(&hub, "kept").await;
    ready(&hub, "changed").await;
    // Its pid and the PID namespace of its sandbox: one process, told apart.
    let process = |out: String| {
        let parts: Vec<&str> = out.split(' ').collect();
        (parts[0].to_string(), parts[2].to_string())
    };
    let kept = process(call(&hub, "kept__pids", json!({})).await.unwrap());
    let changed = process(call(&hub, "changed__pids", json!({})).await.unwrap());

    let mut fewer = stdio("changed", &[]);
    fewer.deny = vec!["fail".into()];
    let done = hub.reconfigure(vec![stdio("kept", &[]), fewer, stdio("added", &[])]);
    assert_eq!(
        done,
        [
            ("kept".to_owned(), Reconfigured::Kept),
            ("changed".to_owned(), Reconfigured::Restarted),
            ("added".to_owned(), Reconfigured::Added),
        ]
    );
    ready(&hub, "changed").await;
    ready(&hub, "added").await;
    assert_eq!(
        process(call(&hub, "kept__pids", json!({})).await.unwrap()),
        kept,
        "an unchanged server keeps its process"
    );
    assert_ne!(
        process(call(&hub, "changed__pids", json!({})).await.unwrap()),
        changed,
        "a changed server is a new process"
    );
    let names: Vec<String> = hub.tools().iter().map(|t| t.spec().name).collect();
    assert!(!names.contains(&"changed__fail".to_owned()), "{names:?}");
    assert!(names.contains(&"added__add".to_owned()), "{names:?}");

    let done = hub.reconfigure(vec![stdio("kept", &[])]);
    assert_eq!(
        done,
        [
            ("kept".to_owned(), Reconfigured::Kept),
            ("changed".to_owned(), Reconfigured::Stopped),
            ("added".to_owned(), Reconfigured::Stopped),
        ]
    );
    let names: Vec<String> = hub.tools().iter().map(|t| t.spec().name).collect();
    assert!(names.iter().all(|n| n.starts_with("kept__")), "{names:?}");
    assert_eq!(hub.status().len(), 1);
    stop(&hub, &shutdown).await;
}
