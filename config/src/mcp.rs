//! `[[mcp_servers]]`: Model Context Protocol servers whose tools the agent uses.
//!
//! An admin configures each server once for the whole deployment; its tools
//! reach the model as `<name>__<tool>`, so the name is part of every tool name
//! and is held to the characters model providers accept in tool names.
//!
//! A stdio server runs in a bubblewrap sandbox (`sandbox = "bwrap"`, the
//! default): it sees the system's programs and libraries read-only, a fresh
//! `/proc`, `/dev` and `/tmp`, an empty home, and of everything else only the
//! `paths` its config grants; the network only with `network = true`.
//!
//! ```toml
//! [[mcp_servers]]
//! name = "files"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]
//! deny = ["write_file"]
//! network = true                            # npx fetches the package
//! paths = [{ path = "/srv/shared", write = true }]
//!
//! [[mcp_servers]]
//! name = "tracker"
//! url = "https://mcp.example.com/mcp"
//! headers = { Authorization = "Bearer …" }
//! policy = "auto"
//! ```

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use super::Secret;
use super::tools::ToolPolicy;

/// The longest server name: `<name>__<tool>` must still leave room for the
/// tool's own name within the 64 characters providers accept.
pub const MAX_MCP_SERVER_NAME_CHARS: usize = 32;

/// Headers the MCP client sets itself; a configured value would break the session.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerConfig {
    /// Namespace of its tools (`<name>__<tool>`): lowercase letters, digits, `_`
    /// and `-`, at most [`MAX_MCP_SERVER_NAME_CHARS`] characters, unique.
    pub name: String,
    /// Program to start for a stdio server (looked up on `PATH`). Exactly one
    /// of `command` and `url` is set.
    pub command: Option<String>,
    /// Arguments of `command`.
    pub args: Vec<String>,
    /// Environment of `command` (values are secrets: never logged). Of Weft's
    /// own environment the server sees only `PATH`, `HOME`, `USER`, `LANG`,
    /// `LC_ALL`, `TZ` and `TMPDIR`: the rest holds Weft's credentials.
    pub env: BTreeMap<String, Secret>,
    /// Endpoint of a streamable-HTTP server (`http://` or `https://`).
    pub url: Option<String>,
    /// Headers sent with every request to `url` (values are secrets).
    pub headers: BTreeMap<String, Secret>,
    /// Only these of the server's tools (by the server's own names); empty ⇒ all.
    pub tools: Vec<String>,
    /// Never these of the server's tools, even when `tools` lists them.
    pub deny: Vec<String>,
    /// Whether calls run, wait for approval, or are refused. Default `confirm`:
    /// an MCP tool can do anything its server can.
    pub policy: ToolPolicy,
    /// How a stdio server is confined; absent ⇒ `bwrap`. `none` runs it as
    /// Weft's own OS user with nothing hidden (logged as a warning at start).
    pub sandbox: Option<McpSandbox>,
    /// What of the machine's filesystem a sandboxed server sees besides the
    /// system directories, each at the same path: read-only unless `write`.
    /// An interpreter outside `/usr` (a venv, a pyenv or nvm install,
    /// `node_modules`) is granted like any other path.
    pub paths: Vec<McpPathGrant>,
    /// Whether a sandboxed server may use the network; absent ⇒ `false` (it
    /// gets a network namespace of its own with only a loopback interface).
    pub network: Option<bool>,
}

/// How a stdio MCP server is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpSandbox {
    /// bubblewrap (`bwrap`): own user, PID, IPC, UTS, cgroup and (unless
    /// `network = true`) network namespaces; only system dirs and granted paths.
    Bwrap,
    /// No sandbox: the server can read whatever Weft's OS user can.
    None,
}

/// One path a sandboxed MCP server may see (`{ path = "/srv/docs", write = false }`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpPathGrant {
    /// An absolute path on this machine; the server sees it at the same path.
    pub path: String,
    /// Writable too; default read-only.
    #[serde(default)]
    pub write: bool,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        McpServerConfig {
            name: String::new(),
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            headers: BTreeMap::new(),
            tools: Vec::new(),
            deny: Vec::new(),
            policy: ToolPolicy::Confirm,
            sandbox: None,
            paths: Vec::new(),
            network: None,
        }
    }
}

impl McpServerConfig {
    /// `command` when it is set and not blank.
    pub fn stdio_command(&self) -> Option<&str> {
        self.command.as_deref().filter(|c| !c.trim().is_empty())
    }

    /// `url` when it is set and not blank.
    pub fn http_url(&self) -> Option<&str> {
        self.url.as_deref().filter(|u| !u.trim().is_empty())
    }

    /// The sandbox of a stdio server (`bwrap` unless configured); `None` for a
    /// url server, which runs elsewhere.
    pub fn effective_sandbox(&self) -> Option<McpSandbox> {
        self.stdio_command()
            .map(|_| self.sandbox.unwrap_or(McpSandbox::Bwrap))
    }

    /// Whether a sandboxed server may use the network.
    pub fn network_allowed(&self) -> bool {
        self.network.unwrap_or(false)
    }

    /// The first granted path that is `hidden` itself, holds it or lies inside
    /// it (compared by path components, symlinks not followed).
    pub fn grant_overlapping(&self, hidden: &Path) -> Option<&McpPathGrant> {
        self.paths.iter().find(|g| {
            let granted = Path::new(&g.path);
            granted.starts_with(hidden) || hidden.starts_with(granted)
        })
    }

    /// Whether the server's tool `tool` (its own name) is offered to the agent.
    pub fn allows(&self, tool: &str) -> bool {
        (self.tools.is_empty() || self.tools.iter().any(|t| t == tool))
            && !self.deny.iter().any(|t| t == tool)
    }

    fn err(&self, field: &str, why: &str) -> String {
        format!("mcp_servers: server {:?}: {field}: {why}", self.name)
    }

    /// Checks this server alone (see [`validate`] for the whole list).
    pub fn validate(&self) -> Result<(), String> {
        check_name(&self.name).map_err(|why| self.err("name", &why))?;
        match (self.stdio_command(), self.http_url()) {
            (Some(_), None) => {
                if !self.headers.is_empty() {
                    return Err(self.err("headers", "only a url server takes headers"));
                }
                if let Some(key) = self
                    .env
                    .keys()
                    .find(|k| k.is_empty() || k.contains(['=', '\0']))
                {
                    return Err(self.err("env", &format!("{key:?} is not a variable name")));
                }
                self.check_sandbox()?;
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Err(self.err("args/env", "only a command server takes args and env"));
                }
                if self.sandbox.is_some() || !self.paths.is_empty() || self.network.is_some() {
                    return Err(self.err(
                        "sandbox/paths/network",
                        "only a command server runs in a sandbox",
                    ));
                }
                check_url(url).map_err(|why| self.err("url", &why))?;
                for (name, value) in &self.headers {
                    check_header(name, value.expose())
                        .map_err(|why| self.err(&format!("headers.{name}"), &why))?;
                }
            }
            (Some(_), Some(_)) => {
                return Err(self.err("command/url", "set only one of command and url"));
            }
            (None, None) => {
                return Err(self.err(
                    "command/url",
                    "set command (a stdio server) or url (a streamable-HTTP server)",
                ));
            }
        }
        for (field, list) in [("tools", &self.tools), ("deny", &self.deny)] {
            if list.iter().any(|t| t.trim().is_empty()) {
                return Err(self.err(field, "tool names must not be empty"));
            }
        }
        Ok(())
    }
}

impl McpServerConfig {
    fn check_sandbox(&self) -> Result<(), String> {
        if self.sandbox == Some(McpSandbox::None) {
            if !self.paths.is_empty() {
                return Err(self.err(
                    "paths",
                    "sandbox = \"none\" sees every path Weft's user can; paths are grants of the bwrap sandbox",
                ));
            }
            if self.network == Some(false) {
                return Err(self.err(
                    "network",
                    "sandbox = \"none\" cannot take the network away; network = false needs the bwrap sandbox",
                ));
            }
        }
        let mut seen = HashSet::new();
        for grant in &self.paths {
            check_grant(&grant.path).map_err(|why| self.err("paths", &why))?;
            if !seen.insert(Path::new(&grant.path).components().collect::<Vec<_>>()) {
                return Err(self.err("paths", &format!("{:?} is granted twice", grant.path)));
            }
        }
        Ok(())
    }
}

/// A grant must name one absolute path plainly; the whole filesystem and the
/// kernel's views of the machine (`/proc`, `/sys`) cannot be granted.
fn check_grant(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if path.contains('\0') || !p.is_absolute() {
        return Err(format!("{path:?} is not an absolute path"));
    }
    if path
        .split('/')
        .any(|segment| segment == "." || segment == "..")
    {
        return Err(format!("{path:?} must not contain . or .."));
    }
    if p.components().all(|c| c == Component::RootDir) {
        return Err("\"/\" would show the server the whole filesystem".into());
    }
    if p.starts_with("/proc") || p.starts_with("/sys") {
        return Err(format!(
            "{path:?} would show the server the machine's processes or kernel state"
        ));
    }
    Ok(())
}

/// Checks every server; the first problem is returned as an error naming the
/// server and the field (`mcp_servers: server "files": url: …`).
pub fn validate(servers: &[McpServerConfig]) -> Result<(), String> {
    let mut seen = HashSet::new();
    for server in servers {
        server.validate()?;
        if !seen.insert(server.name.as_str()) {
            return Err(server.err("name", "configured twice"));
        }
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is required".into());
    }
    if name.chars().count() > MAX_MCP_SERVER_NAME_CHARS {
        return Err(format!("at most {MAX_MCP_SERVER_NAME_CHARS} characters"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
    {
        return Err("only lowercase letters, digits, '_' and '-' are allowed".into());
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), String> {
    let bad = || Err(format!("{url:?} is not an http:// or https:// URL"));
    let Some((scheme, rest)) = url.split_once("://") else {
        return bad();
    };
    if !matches!(scheme, "http" | "https") || url.chars().any(|c| c.is_whitespace()) {
        return bad();
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        match v6.split_once(']') {
            Some((ip, port)) if ip.parse::<std::net::Ipv6Addr>().is_ok() => {
                check_port(port.strip_prefix(':'))?;
                ip
            }
            _ => return bad(),
        }
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => {
                check_port(Some(port))?;
                host
            }
            None => host_port,
        }
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    if !host_ok {
        return bad();
    }
    Ok(())
}

fn check_port(port: Option<&str>) -> Result<(), String> {
    match port {
        None => Ok(()),
        Some(p) if p.parse::<u16>().is_ok_and(|p| p > 0) => Ok(()),
        Some(p) => Err(format!("port {p:?} is not a port number")),
    }
}

fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err("is not a valid header name".into());
    }
    if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err("is set by the MCP client itself".into());
    }
    if value.chars().any(|c| c.is_control() && c != '\t') || !value.is_ascii() {
        return Err("the value must be visible ASCII".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str) -> McpServerConfig {
        McpServerConfig {
            name: name.into(),
            command: Some("python3".into()),
            ..McpServerConfig::default()
        }
    }

    fn http(name: &str, url: &str) -> McpServerConfig {
        McpServerConfig {
            name: name.into(),
            url: Some(url.into()),
            ..McpServerConfig::default()
        }
    }

    fn error(servers: &[McpServerConfig]) -> String {
        validate(servers).unwrap_err()
    }

    #[test]
    fn good_servers_pass_and_default_to_confirm() {
        let servers = [
            stdio("files"),
            http("tracker", "https://mcp.example.com/mcp"),
            http("local-1", "http://127.0.0.1:8931/mcp"),
            http("v6", "http://[::1]:8931/mcp"),
        ];
        validate(&servers).unwrap();
        assert_eq!(servers[0].policy, ToolPolicy::Confirm);
        assert_eq!(servers[1].http_url(), Some("https://mcp.example.com/mcp"));
        assert_eq!(servers[0].stdio_command(), Some("python3"));
    }

    #[test]
    fn errors_name_the_server_and_the_field() {
        let e = error(&[stdio("")]);
        assert!(e.contains("\"\"") && e.contains("name: is required"), "{e}");
        let e = error(&[stdio("Files")]);
        assert!(e.contains("\"Files\": name: only lowercase"), "{e}");
        let e = error(&[stdio("a.b")]);
        assert!(e.contains("\"a.b\": name:"), "{e}");
        let e = error(&[stdio(&"x".repeat(33))]);
        assert!(e.contains("name: at most 32"), "{e}");
        let e = error(&[stdio("files"), stdio("files")]);
        assert!(e.contains("\"files\": name: configured twice"), "{e}");

        let both = McpServerConfig {
            url: Some("https://x.example/mcp".into()),
            ..stdio("both")
        };
        let e = error(&[both]);
        assert!(e.contains("\"both\": command/url: set only one"), "{e}");
        let e = error(&[McpServerConfig {
            name: "neither".into(),
            ..McpServerConfig::default()
        }]);
        assert!(e.contains("\"neither\": command/url:"), "{e}");

        for url in [
            "ftp://x/mcp",
            "example.com/mcp",
            "http://",
            "http://exa mple.com/",
            "http://host:99999/mcp",
            "http://[zz]:80/",
        ] {
            let e = error(&[http("web", url)]);
            assert!(e.contains("\"web\": url:"), "{url}: {e}");
        }
    }

    #[test]
    fn headers_env_and_lists_are_checked() {
        let mut s = http("h", "https://x.example/mcp");
        s.headers.insert("Bad Name".into(), Secret("v".into()));
        assert!(error(&[s]).contains("\"h\": headers.Bad Name:"));
        let mut s = http("h", "https://x.example/mcp");
        s.headers
            .insert("mcp-session-id".into(), Secret("v".into()));
        assert!(error(&[s]).contains("set by the MCP client"));
        let mut s = http("h", "https://x.example/mcp");
        s.headers
            .insert("X-Token".into(), Secret("a\r\nInjected: 1".into()));
        assert!(error(&[s]).contains("headers.X-Token"));
        let mut s = stdio("s");
        s.headers.insert("X-Token".into(), Secret("v".into()));
        assert!(error(&[s]).contains("\"s\": headers:"));
        let mut s = http("h", "https://x.example/mcp");
        s.args = vec!["--x".into()];
        assert!(error(&[s]).contains("\"h\": args/env:"));
        let mut s = stdio("s");
        s.env.insert("A=B".into(), Secret("v".into()));
        assert!(error(&[s]).contains("\"s\": env:"));
        let mut s = stdio("s");
        s.deny = vec![" ".into()];
        assert!(error(&[s]).contains("\"s\": deny:"));
    }

    #[test]
    fn stdio_servers_are_sandboxed_unless_an_admin_says_none() {
        let s = stdio("s");
        assert_eq!(s.effective_sandbox(), Some(McpSandbox::Bwrap));
        assert!(!s.network_allowed(), "no network unless granted");
        assert_eq!(http("h", "https://x.example/mcp").effective_sandbox(), None);
        let s = toml_de(
            r#"name = "s"
command = "npx"
network = true
paths = [{ path = "/srv/docs" }, { path = "/srv/out/", write = true }]"#,
        );
        validate(std::slice::from_ref(&s)).unwrap();
        assert!(s.network_allowed());
        assert_eq!(
            s.paths,
            vec![
                McpPathGrant {
                    path: "/srv/docs".into(),
                    write: false
                },
                McpPathGrant {
                    path: "/srv/out/".into(),
                    write: true
                },
            ]
        );
        let s = toml_de("name = \"s\"\ncommand = \"npx\"\nsandbox = \"none\"");
        assert_eq!(s.effective_sandbox(), Some(McpSandbox::None));
        validate(&[s]).unwrap();
    }

    #[test]
    fn sandbox_settings_are_checked() {
        let with = |paths: &[&str]| McpServerConfig {
            paths: paths
                .iter()
                .map(|p| McpPathGrant {
                    path: p.to_string(),
                    write: false,
                })
                .collect(),
            ..stdio("s")
        };
        for bad in [
            "relative/dir",
            "/",
            "//",
            "/srv/../etc",
            "/srv/./x",
            "/proc",
            "/proc/1",
            "/sys/kernel",
        ] {
            let e = error(&[with(&[bad])]);
            assert!(e.contains("\"s\": paths:"), "{bad}: {e}");
        }
        let e = error(&[with(&["/srv/a", "/srv/a/"])]);
        assert!(e.contains("granted twice"), "{e}");
        validate(&[with(&["/srv/a", "/srv/a/b", "/processes"])]).unwrap();

        let none = |f: fn(&mut McpServerConfig)| {
            let mut s = stdio("s");
            s.sandbox = Some(McpSandbox::None);
            f(&mut s);
            s
        };
        let e = error(&[none(|s| {
            s.paths = vec![McpPathGrant {
                path: "/srv".into(),
                write: false,
            }]
        })]);
        assert!(e.contains("\"s\": paths: sandbox = \"none\""), "{e}");
        let e = error(&[none(|s| s.network = Some(false))]);
        assert!(e.contains("\"s\": network:"), "{e}");
        validate(&[none(|s| s.network = Some(true))]).unwrap();

        for f in [
            |s: &mut McpServerConfig| s.sandbox = Some(McpSandbox::Bwrap),
            |s: &mut McpServerConfig| s.network = Some(true),
            |s: &mut McpServerConfig| {
                s.paths = vec![McpPathGrant {
                    path: "/srv".into(),
                    write: false,
                }]
            },
        ] {
            let mut s = http("h", "https://x.example/mcp");
            f(&mut s);
            assert!(error(&[s]).contains("\"h\": sandbox/paths/network:"));
        }
    }

    #[test]
    fn grants_overlapping_a_hidden_path_are_found() {
        let s = McpServerConfig {
            paths: vec![McpPathGrant {
                path: "/var/lib".into(),
                write: false,
            }],
            ..stdio("s")
        };
        assert!(s.grant_overlapping(Path::new("/var/lib/weft")).is_some());
        assert!(s.grant_overlapping(Path::new("/var")).is_some());
        assert!(s.grant_overlapping(Path::new("/var/library")).is_none());
        assert!(s.grant_overlapping(Path::new("/run/secrets")).is_none());
    }

    #[test]
    fn allow_and_deny_lists_filter_tools() {
        let mut s = stdio("s");
        assert!(s.allows("anything"));
        s.tools = vec!["add".into(), "echo".into()];
        s.deny = vec!["echo".into()];
        assert!(s.allows("add"));
        assert!(!s.allows("echo"));
        assert!(!s.allows("crash"));
    }

    #[test]
    fn secrets_in_env_and_headers_do_not_print() {
        let mut s = http("h", "https://x.example/mcp");
        s.headers
            .insert("Authorization".into(), Secret("Bearer hunter2".into()));
        assert!(!format!("{s:?}").contains("hunter2"));
    }

    #[test]
    fn toml_shape() {
        let s: McpServerConfig = toml_de(
            r#"name = "t"
url = "http://127.0.0.1:1/mcp"
headers = { Authorization = "Bearer x" }
tools = ["add"]
policy = "auto""#,
        );
        assert_eq!(s.policy, ToolPolicy::Auto);
        assert_eq!(s.headers["Authorization"].expose(), "Bearer x");
        validate(&[s]).unwrap();
    }

    fn toml_de(text: &str) -> McpServerConfig {
        use figment::providers::{Format, Toml};
        figment::Figment::from(Toml::string(text))
            .extract()
            .unwrap()
    }
}
