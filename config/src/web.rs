//! `[tools.web_fetch]` and `[tools.web_search]`: the built-in web tools.
//!
//! Both are off by default. `web_fetch` refuses every internal address; the
//! only way to open one is `allow_hosts`, parsed here at start-up so a typo is a
//! start-up error rather than a silently ignored entry.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::Secret;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WebFetchConfig {
    /// Offer `web_fetch` to the agent.
    pub enabled: bool,
    /// Internal hosts the agent may fetch after all: host names (`wiki.corp`,
    /// `*.corp.example` for every subdomain) whose addresses are then accepted
    /// whatever they are, and IPs or CIDRs (`10.1.2.0/24`) accepted wherever
    /// they come from. Redirects are checked against the same list.
    pub allow_hosts: Vec<AllowHost>,
    /// Time for the whole fetch — every redirect, the body and its conversion.
    pub timeout_ms: u64,
    /// Bytes of body read at most; a longer page is cut there (a PDF is refused).
    pub max_bytes: u64,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        WebFetchConfig {
            enabled: false,
            allow_hosts: Vec::new(),
            timeout_ms: 15_000,
            max_bytes: 2 << 20,
        }
    }
}

impl WebFetchConfig {
    /// Whether `allow_hosts` lists this host name (lowercase, no trailing dot).
    pub fn allows_name(&self, host: &str) -> bool {
        self.allow_hosts.iter().any(|a| a.allows_name(host))
    }

    /// Whether `allow_hosts` has a network holding this address.
    pub fn allows_ip(&self, ip: IpAddr) -> bool {
        self.allow_hosts.iter().any(|a| a.allows_ip(ip))
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.timeout_ms == 0 {
            return Err("tools.web_fetch.timeout_ms must be at least 1".into());
        }
        if self.max_bytes == 0 {
            return Err("tools.web_fetch.max_bytes must be at least 1".into());
        }
        Ok(())
    }
}

/// One `allow_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum AllowHost {
    /// Addresses in this network are accepted, whichever name led to them.
    Net(IpNet),
    /// This exact host name (lowercase, no trailing dot).
    Name(String),
    /// Any subdomain of this name (`*.corp.example`; not `corp.example` itself).
    Subdomains(String),
}

impl AllowHost {
    /// Whether `host` (lowercase, without a trailing dot) is allowed by name.
    pub fn allows_name(&self, host: &str) -> bool {
        match self {
            AllowHost::Name(name) => name == host,
            AllowHost::Subdomains(parent) => host
                .strip_suffix(parent.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            AllowHost::Net(_) => false,
        }
    }

    /// Whether the address is allowed by network.
    pub fn allows_ip(&self, ip: IpAddr) -> bool {
        match self {
            AllowHost::Net(net) => net.contains(&ip),
            _ => false,
        }
    }
}

impl FromStr for AllowHost {
    type Err = String;

    fn from_str(entry: &str) -> Result<Self, String> {
        let entry = entry.trim().trim_end_matches('.').to_ascii_lowercase();
        if let Ok(net) = entry.parse::<IpNet>() {
            return Ok(AllowHost::Net(net));
        }
        if let Ok(ip) = entry.parse::<IpAddr>() {
            return Ok(AllowHost::Net(IpNet::from(ip)));
        }
        let (name, wildcard) = match entry.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (entry.as_str(), false),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        if name.is_empty() || name.len() > 253 || !name.split('.').all(label_ok) {
            return Err(format!(
                "tools.web_fetch.allow_hosts: {entry:?} is not a host name, `*.domain`, IP address or CIDR"
            ));
        }
        Ok(if wildcard {
            AllowHost::Subdomains(name.to_string())
        } else {
            AllowHost::Name(name.to_string())
        })
    }
}

impl TryFrom<String> for AllowHost {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<AllowHost> for String {
    fn from(a: AllowHost) -> String {
        a.to_string()
    }
}

impl fmt::Display for AllowHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllowHost::Net(net) => write!(f, "{net}"),
            AllowHost::Name(name) => f.write_str(name),
            AllowHost::Subdomains(parent) => write!(f, "*.{parent}"),
        }
    }
}

/// Which search service `web_search` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchBackendKind {
    /// A self-hosted SearXNG with the JSON format enabled (`search.formats`
    /// in its `settings.yml`); needs `base_url`.
    Searxng,
    /// The Brave Search API; needs `api_key`.
    Brave,
}

impl SearchBackendKind {
    /// The name used in `weft.toml` (`searxng`, `brave`).
    pub fn as_str(&self) -> &'static str {
        match self {
            SearchBackendKind::Searxng => "searxng",
            SearchBackendKind::Brave => "brave",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct WebSearchConfig {
    /// Offer `web_search` to the agent (needs `backend` and what it needs).
    pub enabled: bool,
    /// `searxng` or `brave`.
    pub backend: Option<SearchBackendKind>,
    /// SearXNG's address (`http://searxng:8080`), or another Brave API base
    /// (default `https://api.search.brave.com`).
    pub base_url: Option<String>,
    /// Brave's subscription token; set it as `WEFT_TOOLS__WEB_SEARCH__API_KEY`
    /// rather than in the file.
    pub api_key: Option<Secret>,
    /// Results given to the model (1–20).
    pub result_count: u32,
    /// Time for one search request.
    pub timeout_ms: u64,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        WebSearchConfig {
            enabled: false,
            backend: None,
            base_url: None,
            api_key: None,
            result_count: 5,
            timeout_ms: 10_000,
        }
    }
}

impl WebSearchConfig {
    /// Brave's API, unless `base_url` says otherwise.
    pub const BRAVE_BASE_URL: &str = "https://api.search.brave.com";

    /// The most results `web_search` returns (Brave's own maximum per request).
    pub const MAX_RESULTS: u32 = 20;

    /// Checks an enabled search's settings; a disabled one may be incomplete.
    pub fn validate(&self) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        let bad = |m: &str| Err(format!("tools.web_search.{m}"));
        if !(1..=Self::MAX_RESULTS).contains(&self.result_count) {
            return bad("result_count must be between 1 and 20");
        }
        if self.timeout_ms == 0 {
            return bad("timeout_ms must be at least 1");
        }
        let base_ok = |u: &str| u.starts_with("http://") || u.starts_with("https://");
        match self.backend {
            None => bad("backend must be set (searxng or brave) when enabled"),
            Some(SearchBackendKind::Searxng) => match &self.base_url {
                Some(u) if base_ok(u) => Ok(()),
                _ => bad("base_url (http://… or https://…) is needed for searxng"),
            },
            Some(SearchBackendKind::Brave) => {
                if self.api_key.as_ref().is_none_or(|k| k.expose().is_empty()) {
                    return bad("api_key is needed for brave (WEFT_TOOLS__WEB_SEARCH__API_KEY)");
                }
                match &self.base_url {
                    Some(u) if !base_ok(u) => bad("base_url must start with http:// or https://"),
                    _ => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_host_entries_parse_into_names_wildcards_and_networks() {
        let parse = |s: &str| s.parse::<AllowHost>();
        assert_eq!(
            parse("Wiki.Corp.").unwrap(),
            AllowHost::Name("wiki.corp".into())
        );
        assert_eq!(parse("10.1.2.3").unwrap().to_string(), "10.1.2.3/32");
        assert_eq!(parse("fd00::/8").unwrap().to_string(), "fd00::/8");
        let wild = parse("*.corp.example").unwrap();
        assert!(wild.allows_name("a.corp.example"));
        assert!(!wild.allows_name("corp.example"));
        assert!(!wild.allows_name("evilcorp.example"));
        assert!(
            parse("10.0.0.0/8")
                .unwrap()
                .allows_ip("10.9.9.9".parse().unwrap())
        );
        assert!(parse("http://wiki").is_err());
        assert!(parse("").is_err());
        assert!(parse("a..b").is_err());
    }

    #[test]
    fn a_bad_allow_hosts_entry_fails_deserialization() {
        let ok: WebFetchConfig =
            serde_json::from_str(r#"{"allow_hosts":["wiki","10.0.0.0/8"]}"#).unwrap();
        assert_eq!(ok.allow_hosts.len(), 2);
        let err =
            serde_json::from_str::<WebFetchConfig>(r#"{"allow_hosts":["wiki/x"]}"#).unwrap_err();
        assert!(err.to_string().contains("wiki/x"), "{err}");
    }

    #[test]
    fn the_toml_sections_load() {
        use figment::providers::{Format, Toml};
        let toml = r#"
            [web_fetch]
            enabled = true
            allow_hosts = ["wiki.corp", "*.svc.cluster.local", "10.20.0.0/16"]
            max_bytes = 1048576

            [web_search]
            enabled = true
            backend = "searxng"
            base_url = "http://searxng:8080"
            result_count = 8
        "#;
        let tools: super::super::ToolsConfig = figment::Figment::from(Toml::string(toml))
            .extract()
            .unwrap();
        let fetch = &tools.web_fetch;
        assert!(fetch.allows_name("wiki.corp") && fetch.allows_name("db.svc.cluster.local"));
        assert!(fetch.allows_ip("10.20.3.4".parse().unwrap()));
        assert!(!fetch.allows_ip("10.21.0.1".parse().unwrap()));
        assert_eq!((fetch.max_bytes, fetch.timeout_ms), (1 << 20, 15_000));
        assert_eq!(tools.web_search.backend, Some(SearchBackendKind::Searxng));
        assert_eq!(tools.web_search.result_count, 8);
        assert!(tools.web_search.validate().is_ok());
    }

    #[test]
    fn enabled_search_needs_a_complete_backend() {
        let mut cfg = WebSearchConfig::default();
        assert!(cfg.validate().is_ok(), "disabled may be incomplete");
        cfg.enabled = true;
        assert!(cfg.validate().unwrap_err().contains("backend"));
        cfg.backend = Some(SearchBackendKind::Searxng);
        assert!(cfg.validate().unwrap_err().contains("base_url"));
        cfg.base_url = Some("http://searx:8080".into());
        assert!(cfg.validate().is_ok());
        cfg.backend = Some(SearchBackendKind::Brave);
        assert!(cfg.validate().unwrap_err().contains("api_key"));
        cfg.api_key = Some(Secret("k".into()));
        assert!(cfg.validate().is_ok());
        cfg.result_count = 0;
        assert!(cfg.validate().unwrap_err().contains("result_count"));
    }
}
