//! `[[mcp_servers]]`: Model Context Protocol servers whose tools the agent uses.
//!
//! An admin configures each server once for the whole deployment; its tools
//! reach the model as `<name>__<tool>`, so the name is part of every tool name
//! and is held to the characters model providers accept in tool names.
//!
//! ```toml
//! [[mcp_servers]]
//! name = "files"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"]
//! deny = ["write_file"]
//!
//! [[mcp_servers]]
//! name = "tracker"
//! url = "https://mcp.example.com/mcp"
//! headers = { Authorization = "Bearer …" }
//! policy = "auto"
//! ```

use std::collections::{BTreeMap, HashSet};

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
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() {
                    return Err(self.err("args/env", "only a command server takes args and env"));
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
