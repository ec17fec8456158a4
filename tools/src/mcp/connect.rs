//! Opening one connection: start the child process (or reach the URL), run
//! the MCP handshake and list the tools.
//!
//! A stdio server runs in its own process group so that stopping it also stops
//! whatever it started (`npx` → `node`), and it gets only a few harmless
//! variables of Weft's environment plus its configured `env`: Weft's own
//! environment holds database URLs and API keys that are none of its business.
//! Unless its config says `sandbox = "none"` it runs inside bubblewrap
//! (`super::sandbox`), which hides the rest of the machine from it; when the
//! sandbox cannot be made the server is not started at all.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool as RemoteTool};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::{Notify, oneshot};
use weft_config::{McpSandbox, McpServerConfig};
use weft_llm::ToolSpec;

use super::sandbox;
use super::status::ToolEntry;

/// Variables a stdio server inherits from Weft's environment.
const INHERITED_ENV: &[&str] = &["PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"];
/// How much of a server's stderr is kept to explain a failure.
const STDERR_TAIL_LINES: usize = 20;
const STDERR_TAIL_CHARS: usize = 2000;
/// Providers accept tool names of at most 64 characters.
const MAX_TOOL_NAME_CHARS: usize = 64;

/// Our side of the protocol: it only listens for "the tool list changed".
pub(crate) struct Client {
    pub tools_changed: Arc<Notify>,
}

impl ClientHandler for Client {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.tools_changed.notify_one();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("weft", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A connected server.
pub(crate) struct Connection {
    pub service: RunningService<RoleClient, Client>,
    pub tools_changed: Arc<Notify>,
    pub stderr: Option<StderrTail>,
    /// The stdio server's process group, stopped whole once the connection ends.
    pub process_group: Option<ProcessGroupId>,
}

/// Start the server and run the handshake. Errors are texts for `last_error`.
/// The config has passed [`McpServerConfig::validate`].
pub(crate) async fn connect(config: &McpServerConfig) -> Result<Connection, String> {
    let tools_changed = Arc::new(Notify::new());
    let client = Client {
        tools_changed: tools_changed.clone(),
    };
    if let Some(url) = config.http_url() {
        let service = client
            .serve(http_transport(url, config)?)
            .await
            .map_err(|e| format!("could not connect to {url}: {e}"))?;
        return Ok(Connection {
            service,
            tools_changed,
            stderr: None,
            process_group: None,
        });
    }
    let (process, stderr) = spawn(config)?;
    let process_group = process.id().map(ProcessGroupId);
    let stderr = stderr.map(|s| StderrTail::collect(s, config.name.clone()));
    match client.serve(process).await {
        Ok(service) => Ok(Connection {
            service,
            tools_changed,
            stderr,
            process_group,
        }),
        Err(e) => {
            if let Some(group) = process_group {
                group.kill();
            }
            let tail = match stderr {
                Some(tail) => tail.after_exit().await,
                None => String::new(),
            };
            if config.effective_sandbox() == Some(McpSandbox::Bwrap)
                && let Some(why) = sandbox::explain_failure(&tail)
            {
                return Err(why);
            }
            Err(with_stderr(format!("the MCP handshake failed: {e}"), &tail))
        }
    }
}

/// A stdio server's process group (its id is the server's pid).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcessGroupId(u32);

impl ProcessGroupId {
    /// SIGKILL to what is left of the group: a server that exits on its own
    /// (or on stdin EOF) leaves its children running otherwise. The group id
    /// cannot be handed to another group while any member is alive, and once
    /// none is, the signal finds nobody.
    pub fn kill(self) {
        let Ok(pid) = i32::try_from(self.0) else {
            return;
        };
        match killpg(Pid::from_raw(pid), Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(e) => {
                tracing::warn!(pgid = pid, error = %e, "could not stop an MCP server's process group")
            }
        }
    }
}

fn spawn(config: &McpServerConfig) -> Result<(TokioChildProcess, Option<ChildStderr>), String> {
    let program = config.stdio_command().unwrap_or_default();
    let sandboxed = config.effective_sandbox() == Some(McpSandbox::Bwrap);
    let env = server_env(config, sandboxed);
    // bwrap passes its environment on to the server; the values never appear
    // on a command line, where any local user could read them.
    let (exe, args): (OsString, Vec<OsString>) = if sandboxed {
        let home = env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v));
        let mut args = sandbox::bwrap_args(config, home.as_deref());
        args.push(program.into());
        args.extend(config.args.iter().map(OsString::from));
        (sandbox::BWRAP.into(), args)
    } else {
        (
            program.into(),
            config.args.iter().map(OsString::from).collect(),
        )
    };
    let mut command = CommandWrap::with_new(&exe, |cmd| {
        cmd.args(&args).env_clear().envs(env);
    });
    command.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            if sandboxed {
                sandbox::spawn_error(sandbox::BWRAP, &e)
            } else {
                format!("could not start {program:?}: {e}")
            }
        })
}

/// The server's whole environment: [`INHERITED_ENV`] of Weft's, then its
/// configured `env`. In the sandbox `TMPDIR` is its own `/tmp`.
fn server_env(config: &McpServerConfig, sandboxed: bool) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = INHERITED_ENV
        .iter()
        .filter(|key| !(sandboxed && **key == "TMPDIR"))
        .filter_map(|key| Some((OsString::from(key), std::env::var_os(key)?)))
        .collect();
    if sandboxed {
        env.push(("TMPDIR".into(), "/tmp".into()));
    }
    for (key, value) in &config.env {
        env.retain(|(k, _)| k != key.as_str());
        env.push((key.into(), value.expose().into()));
    }
    env
}

fn http_transport(
    url: &str,
    config: &McpServerConfig,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let name =
            HeaderName::try_from(name.as_str()).map_err(|e| format!("header {name:?}: {e}"))?;
        let mut value =
            HeaderValue::try_from(value.expose()).map_err(|e| format!("header {name}: {e}"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers),
    ))
}

/// The server's tools that the config allows, named `<server>__<tool>`.
pub(crate) fn tool_entries(config: &McpServerConfig, listed: Vec<RemoteTool>) -> Vec<ToolEntry> {
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    for tool in listed {
        if !config.allows(&tool.name) {
            continue;
        }
        let name = exposed_name(&config.name, &tool.name);
        if !seen.insert(name.clone()) {
            tracing::warn!(
                mcp.server = %config.name, tool = %tool.name,
                "two MCP tools map to the same name {name}; skipping the second"
            );
            continue;
        }
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_string();
        entries.push(ToolEntry {
            spec: ToolSpec {
                name,
                description,
                parameters: serde_json::Value::Object((*tool.input_schema).clone()),
            },
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            remote: tool.name.into_owned(),
        });
    }
    for wanted in &config.tools {
        if !entries.iter().any(|e| &e.remote == wanted) {
            tracing::warn!(mcp.server = %config.name, tool = %wanted, "allow-listed MCP tool is not offered by the server");
        }
    }
    entries
}

/// `<server>__<tool>`, with characters providers refuse replaced by `_` and
/// cut to the length they accept.
pub(crate) fn exposed_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{server}__{tool}")
        .chars()
        .take(MAX_TOOL_NAME_CHARS)
        .collect()
}

pub(crate) fn with_stderr(error: String, tail: &str) -> String {
    if tail.is_empty() {
        error
    } else {
        format!("{error}; stderr: {tail}")
    }
}

/// The last lines a stdio server wrote to stderr (its traceback, usually).
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    eof: Option<oneshot::Receiver<()>>,
}

impl StderrTail {
    fn collect(stderr: ChildStderr, server: String) -> StderrTail {
        let lines = Arc::new(Mutex::new(VecDeque::new()));
        let (eof_tx, eof) = oneshot::channel();
        let sink = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                tracing::debug!(mcp.server = %server, "stderr: {line}");
                let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
                if sink.len() == STDERR_TAIL_LINES {
                    sink.pop_front();
                }
                sink.push_back(line);
            }
            let _ = eof_tx.send(());
        });
        StderrTail {
            lines,
            eof: Some(eof),
        }
    }

    /// The tail once the process has closed stderr (it exited), or after a
    /// short grace if something still holds it open.
    pub async fn after_exit(mut self) -> String {
        if let Some(eof) = self.eof.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), eof).await;
        }
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let text = lines
            .iter()
            .map(|l| l.trim_end())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ");
        let skip = text.chars().count().saturating_sub(STDERR_TAIL_CHARS);
        text.chars().skip(skip).collect()
    }
}
