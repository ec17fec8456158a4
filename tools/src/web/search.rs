//! `web_search {query}`: a web search through the backend the admin chose.
//!
//! Backends are a small trait ([`SearchBackend`]) so another service is one
//! more impl; the two shipped speak SearXNG's JSON API (self-hosted) and the
//! Brave Search API. Whatever the backend, the model gets the same numbered
//! Markdown list of title, URL and snippet, and a backend failure (an HTTP
//! error, a body that is not the expected JSON) comes back as error text.
//!
//! The backend's address is the admin's, so it is not put through the SSRF
//! guard: a SearXNG on the internal network is the usual set-up.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use url::Url;
use weft_config::{Secret, WebSearchConfig};
use weft_llm::ToolSpec;

use crate::{Tool, ToolContext};

/// One result, before formatting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub title: String,
    pub url: String,
    /// May hold inline HTML (Brave marks matches with `<strong>`).
    pub snippet: String,
}

#[async_trait::async_trait]
pub trait SearchBackend: Send + Sync {
    /// For messages: `searxng`, `brave`.
    fn name(&self) -> &'static str;
    /// At most `count` results (a backend may return fewer, or more: extra
    /// ones are dropped).
    async fn search(&self, query: &str, count: u32) -> Result<Vec<SearchHit>, String>;
}

/// SearXNG: `GET {base}/search?q=…&format=json`.
pub struct Searxng {
    client: reqwest::Client,
    base: String,
}

#[derive(Deserialize)]
struct SearxngBody {
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: Option<String>,
}

#[async_trait::async_trait]
impl SearchBackend for Searxng {
    fn name(&self) -> &'static str {
        "searxng"
    }

    async fn search(&self, query: &str, _count: u32) -> Result<Vec<SearchHit>, String> {
        let url = endpoint(&self.base, "search", &[("q", query), ("format", "json")])?;
        let req = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        let body: SearxngBody = send_json(self.name(), req).await?;
        Ok(body
            .results
            .into_iter()
            .map(|r| SearchHit {
                title: r.title,
                url: r.url,
                snippet: r.content.unwrap_or_default(),
            })
            .collect())
    }
}

/// Brave: `GET {base}/res/v1/web/search?q=…&count=…` with `X-Subscription-Token`.
pub struct Brave {
    client: reqwest::Client,
    base: String,
    api_key: Secret,
}

#[derive(Deserialize)]
struct BraveBody {
    /// Absent when nothing was found.
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    description: Option<String>,
}

#[async_trait::async_trait]
impl SearchBackend for Brave {
    fn name(&self) -> &'static str {
        "brave"
    }

    async fn search(&self, query: &str, count: u32) -> Result<Vec<SearchHit>, String> {
        let count = count.to_string();
        let url = endpoint(
            &self.base,
            "res/v1/web/search",
            &[("q", query), ("count", &count)],
        )?;
        let req = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .header("X-Subscription-Token", self.api_key.expose());
        let body: BraveBody = send_json(self.name(), req).await?;
        Ok(body
            .web
            .map(|w| w.results)
            .unwrap_or_default()
            .into_iter()
            .map(|r| SearchHit {
                title: r.title,
                url: r.url,
                snippet: r.description.unwrap_or_default(),
            })
            .collect())
    }
}

/// `{base}/{path}?query`, keeping any path prefix of `base`.
fn endpoint(base: &str, path: &str, query: &[(&str, &str)]) -> Result<Url, String> {
    let joined = format!("{}/{path}", base.trim_end_matches('/'));
    let mut url = Url::parse(&joined)
        .map_err(|e| format!("web_search: base_url {base:?} is not a URL ({e})"))?;
    url.query_pairs_mut().extend_pairs(query);
    Ok(url)
}

async fn send_json<T: serde::de::DeserializeOwned>(
    backend: &str,
    req: reqwest::RequestBuilder,
) -> Result<T, String> {
    let resp = req.send().await.map_err(|e| {
        let what = if e.is_timeout() {
            "timed out"
        } else {
            "could not be reached"
        };
        format!("web_search: the {backend} backend {what}")
    })?;
    let status = resp.status();
    if !status.is_success() {
        let hint = match (backend, status.as_u16()) {
            ("searxng", 403) => " (is `json` in search.formats of its settings.yml?)",
            (_, 401 | 403) => " (check the API key)",
            (_, 429) => " (rate limited; try again later)",
            _ => "",
        };
        return Err(format!(
            "web_search: the {backend} backend answered HTTP {status}{hint}"
        ));
    }
    let bytes = resp
        .bytes()
        .await
        .map_err(|_| format!("web_search: reading the {backend} backend's answer failed"))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        format!("web_search: the {backend} backend's answer is not its JSON results ({e})")
    })
}

/// The `web_search` tool over one backend.
pub struct WebSearch {
    backend: Arc<dyn SearchBackend>,
    count: u32,
}

impl WebSearch {
    /// The backend `cfg` names; `Err` when it is incomplete.
    pub fn new(cfg: &WebSearchConfig) -> Result<WebSearch, String> {
        let mut checked = cfg.clone();
        checked.enabled = true;
        checked.validate()?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(cfg.timeout_ms))
            .user_agent(concat!("Weft-web_search/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("web_search: could not build its HTTP client: {e}"))?;
        let base = cfg.base_url.clone();
        let backend: Arc<dyn SearchBackend> = match cfg.backend.map(|b| b.as_str()) {
            Some("searxng") => Arc::new(Searxng {
                client,
                base: base.unwrap_or_default(),
            }),
            Some("brave") => Arc::new(Brave {
                client,
                base: base.unwrap_or_else(|| WebSearchConfig::BRAVE_BASE_URL.into()),
                api_key: cfg.api_key.clone().unwrap_or_default(),
            }),
            other => return Err(format!("web_search: unknown backend {other:?}")),
        };
        Ok(WebSearch::with_backend(backend, cfg.result_count))
    }

    /// Any backend, `count` results (1–20).
    pub fn with_backend(backend: Arc<dyn SearchBackend>, count: u32) -> WebSearch {
        WebSearch {
            backend,
            count: count.clamp(1, WebSearchConfig::MAX_RESULTS),
        }
    }

    pub async fn search(&self, query: &str) -> Result<String, String> {
        let query = query.trim();
        if query.is_empty() {
            return Err("web_search needs a non-empty query".into());
        }
        let hits = self.backend.search(query, self.count).await?;
        Ok(format_hits(query, &hits, self.count as usize))
    }
}

/// A numbered Markdown list: `1. [title](url)` with the snippet below.
/// Results without an http(s) URL are dropped.
pub fn format_hits(query: &str, hits: &[SearchHit], count: usize) -> String {
    let mut out = String::new();
    let usable = hits
        .iter()
        .filter_map(|h| {
            let url = Url::parse(h.url.trim()).ok()?;
            matches!(url.scheme(), "http" | "https").then_some((h, url))
        })
        .take(count);
    for (n, (hit, url)) in usable.enumerate() {
        let mut title = inline_markdown(&hit.title);
        if title.is_empty() {
            title = url.to_string();
        }
        out.push_str(&format!("{}. [{title}]({url})\n", n + 1));
        let snippet = inline_markdown(&hit.snippet);
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    if out.is_empty() {
        return format!("No results for {query:?}.");
    }
    format!("Results for {query:?}:\n\n{out}")
}

/// One line of Markdown from text that may hold inline HTML and entities: bold
/// and italics kept, other tags dropped, entities decoded. One linear pass —
/// a snippet is a stranger's text, and no DOM (or recursion) is built for it.
fn inline_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(['<', '&']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('<') {
            let Some(end) = rest.find('>') else {
                break; // a lone '<' and what follows is text
            };
            let name: String = rest[1..end]
                .trim_start_matches('/')
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            out.push_str(match name.to_ascii_lowercase().as_str() {
                "b" | "strong" => "**",
                "i" | "em" => "*",
                "br" | "p" | "div" | "li" => " ",
                _ => "",
            });
            rest = &rest[end + 1..];
        } else {
            let (ch, used) = entity(rest).unwrap_or(('&', 1));
            out.push(ch);
            rest = &rest[used..];
        }
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The character of the entity `text` starts with, and its length.
fn entity(text: &str) -> Option<(char, usize)> {
    let end = text.get(..text.len().min(12))?.find(';')?;
    let name = &text[1..end];
    let ch = match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        _ => {
            let code = match name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => name.strip_prefix('#')?.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((ch, end + 1))
}

#[async_trait::async_trait]
impl Tool for WebSearch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_search".into(),
            description: format!(
                "Search the web. Returns up to {} results as a Markdown list of title, URL and \
                 snippet; read a result with web_fetch.",
                self.count
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to search for, as you would type it into a search engine."
                    }
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    /// A search reads.
    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, _ctx: &ToolContext) -> Result<String, String> {
        let Some(query) = args.get("query").and_then(|q| q.as_str()) else {
            return Err(r#"web_search needs {"query": "…"}"#.into());
        };
        self.search(query).await
    }
}

#[cfg(test)]
mod tests {
    use super::inline_markdown;

    #[test]
    fn snippets_keep_emphasis_and_decode_entities() {
        assert_eq!(
            inline_markdown(
                "Run <strong>agents</strong> &amp; <em>tools</em>&#33; <a href=x>x</a>"
            ),
            "Run **agents** & *tools*! x"
        );
        assert_eq!(inline_markdown("a < b &bogus; c"), "a < b &bogus; c");
    }

    #[test]
    fn deep_markup_is_one_linear_pass() {
        let deep = "<div>".repeat(300_000) + "deep" + &"</div>".repeat(300_000);
        assert_eq!(inline_markdown(&deep), "deep");
    }
}
