//! `web_fetch {url}`: one public web page, PDF or text file, as text the model
//! can read.
//!
//! Redirects are followed by hand (reqwest's own following is off) so that
//! every hop goes through the [`Guard`] like the first URL did. Size and time
//! are capped for the whole fetch: the body is read chunk by chunk and the
//! connection dropped at `max_bytes`, and one deadline covers every hop, the
//! body and its conversion. The proxy settings of the environment are ignored:
//! a proxy would resolve names itself, past the guard.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use url::Url;
use weft_config::WebFetchConfig;
use weft_files::{Extractor, Job};
use weft_llm::ToolSpec;

use super::convert::{self, BodyKind};
use super::guard::{Guard, Refusal};
use super::resolve::{NameResolver, SystemResolver, VettedResolver};
use crate::{Tool, ToolContext};

/// Redirects followed at most; the sixth is refused.
pub const MAX_REDIRECTS: usize = 5;

pub struct WebFetch {
    get: GuardedGet,
    extractor: Extractor,
    max_bytes: usize,
}

/// The GET both `web_fetch` and [`UrlDownload`] make: the URL and every
/// redirect vetted by the [`Guard`], names resolved through it, no proxy.
struct GuardedGet {
    guard: Arc<Guard>,
    client: reqwest::Client,
    timeout: Duration,
}

impl GuardedGet {
    fn new(cfg: &WebFetchConfig, resolver: Arc<dyn NameResolver>) -> Result<GuardedGet, String> {
        cfg.validate()?;
        let guard = Arc::new(Guard::new(cfg, resolver));
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(VettedResolver(guard.clone())))
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .user_agent(concat!("Weft-web_fetch/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("web_fetch: could not build its HTTP client: {e}"))?;
        Ok(GuardedGet {
            guard,
            client,
            timeout,
        })
    }

    /// The successful answer at `url` after its redirects, and its final URL.
    async fn get(&self, mut url: Url) -> Result<(reqwest::Response, Url), String> {
        for hop in 0..=MAX_REDIRECTS {
            if hop > 0 {
                self.guard
                    .check_url(&url)
                    .map_err(|r| format!("{r} (redirected to {url})"))?;
            }
            let resp = self
                .client
                .get(url.clone())
                .header(reqwest::header::ACCEPT, ACCEPT)
                .send()
                .await
                .map_err(|e| describe_send_error(&e, "fetching", &url, hop))?;
            let status = resp.status();
            if status.is_redirection()
                && let Some(next) = redirect_target(&resp, &url)?
            {
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(format!("{url} answered HTTP {status}"));
            }
            return Ok((resp, url));
        }
        Err(format!(
            "refused: more than {MAX_REDIRECTS} redirects (the last one to {url})"
        ))
    }
}

impl WebFetch {
    /// Names resolved by the system resolver.
    pub fn new(cfg: &WebFetchConfig, extractor: Extractor) -> Result<WebFetch, String> {
        WebFetch::with_resolver(cfg, Arc::new(SystemResolver), extractor)
    }

    /// Names resolved by `resolver`; its answers are vetted all the same.
    pub fn with_resolver(
        cfg: &WebFetchConfig,
        resolver: Arc<dyn NameResolver>,
        extractor: Extractor,
    ) -> Result<WebFetch, String> {
        Ok(WebFetch {
            get: GuardedGet::new(cfg, resolver)?,
            extractor,
            max_bytes: usize::try_from(cfg.max_bytes).unwrap_or(usize::MAX),
        })
    }

    /// The page at `raw` as text, or why not.
    pub async fn fetch(&self, raw: &str) -> Result<String, String> {
        let url = self.get.guard.parse(raw).map_err(|r| r.to_string())?;
        let timeout = self.get.timeout;
        let fetch = async {
            let (resp, url) = self.get.get(url.clone()).await?;
            self.read(resp, &url).await
        };
        match tokio::time::timeout(timeout, fetch).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "timed out after {} ms fetching {url}",
                timeout.as_millis()
            )),
        }
    }

    async fn read(&self, mut resp: reqwest::Response, url: &Url) -> Result<String, String> {
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let (mime, charset) = split_content_type(content_type.as_deref());
        let declared = BodyKind::from_mime(mime.as_deref())
            .map_err(|m| format!("refused: {url} is {m}, not a web page, text or PDF"))?;
        let length = resp
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if declared == Some(BodyKind::Pdf) && length.is_some_and(|l| l > self.max_bytes as u64) {
            return Err(self.pdf_too_big(url));
        }

        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| format!("reading {url} failed: {}", error_chain(&e)))?
        {
            let room = self.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break; // dropping `resp` closes the connection
            }
            body.extend_from_slice(&chunk);
        }
        drop(resp);

        let kind = match declared {
            Some(kind) => kind,
            None => BodyKind::sniff(&body).ok_or_else(|| {
                format!("refused: {url} is binary data, not a web page, text or PDF")
            })?,
        };
        let text = match kind {
            BodyKind::Pdf if cut => return Err(self.pdf_too_big(url)),
            BodyKind::Pdf => self.convert(Job::Pdf, body.into(), "the PDF").await?,
            BodyKind::Html => {
                let html = convert::decode(&body, charset.as_deref());
                self.convert(Job::Html, html.into_bytes().into(), "the page")
                    .await?
            }
            BodyKind::Text => convert::decode(&body, charset.as_deref()),
        };
        let mut out = format!("URL: {url}\n\n{}", text.trim());
        if cut {
            out.push_str(&format!(
                "\n\n[truncated: only the first {} bytes of the page were read]",
                self.max_bytes
            ));
        }
        Ok(out)
    }

    /// The body as text, read in a `weft extract` child.
    async fn convert(&self, job: Job, body: bytes::Bytes, what: &str) -> Result<String, String> {
        self.extractor
            .run(job, body)
            .await
            .map_err(|failure| format!("could not read {what}: {failure}"))
    }

    fn pdf_too_big(&self, url: &Url) -> String {
        format!(
            "refused: the PDF at {url} is larger than {} bytes",
            self.max_bytes
        )
    }
}

/// A file fetched whole from a URL (a knowledge base's `{url}` upload), through
/// the same guard, redirects and deadline as `web_fetch` — `[tools.web_fetch]`
/// `allow_hosts` and `timeout_ms` apply — but kept as bytes, with its own size
/// cap: a document larger than that is refused, never cut.
pub struct UrlDownload {
    get: GuardedGet,
}

/// What [`UrlDownload::download`] brought back.
#[derive(Debug)]
pub struct Downloaded {
    pub bytes: bytes::Bytes,
    /// The `Content-Type` the server gave, without parameters.
    pub mime: Option<String>,
    /// The last segment of the final URL's path (`handbook.pdf`), else its host.
    pub name: String,
}

impl UrlDownload {
    pub fn new(cfg: &WebFetchConfig) -> Result<UrlDownload, String> {
        UrlDownload::with_resolver(cfg, Arc::new(SystemResolver))
    }

    pub fn with_resolver(
        cfg: &WebFetchConfig,
        resolver: Arc<dyn NameResolver>,
    ) -> Result<UrlDownload, String> {
        Ok(UrlDownload {
            get: GuardedGet::new(cfg, resolver)?,
        })
    }

    /// The bytes at `raw`, at most `max_bytes` of them, or why not.
    pub async fn download(&self, raw: &str, max_bytes: u64) -> Result<Downloaded, String> {
        let url = self.get.guard.parse(raw).map_err(|r| r.to_string())?;
        let timeout = self.get.timeout;
        let too_big = |url: &Url| format!("refused: {url} is larger than {max_bytes} bytes");
        let download = async {
            let (mut resp, url) = self.get.get(url.clone()).await?;
            let length = resp
                .headers()
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            if length.is_some_and(|l| l > max_bytes) {
                return Err(too_big(&url));
            }
            let (mime, _) = split_content_type(
                resp.headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok()),
            );
            let mut body = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| format!("reading {url} failed: {}", error_chain(&e)))?
            {
                if (body.len() + chunk.len()) as u64 > max_bytes {
                    return Err(too_big(&url));
                }
                body.extend_from_slice(&chunk);
            }
            let name = url
                .path_segments()
                .and_then(|mut s| s.next_back().filter(|n| !n.is_empty()).map(str::to_string))
                .map(|n| percent_decode(&n))
                .or_else(|| url.host_str().map(str::to_string))
                .unwrap_or_else(|| "download".into());
            Ok(Downloaded {
                bytes: body.into(),
                mime,
                name,
            })
        };
        match tokio::time::timeout(timeout, download).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "timed out after {} ms fetching {url}",
                timeout.as_millis()
            )),
        }
    }
}

/// `%20` → ` ` in a path segment (invalid sequences kept as they are).
fn percent_decode(segment: &str) -> String {
    url::form_urlencoded::parse(format!("n={}", segment.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| segment.to_string())
}

const ACCEPT: &str =
    "text/html,application/xhtml+xml,text/plain;q=0.9,application/pdf;q=0.9,text/*;q=0.8,*/*;q=0.1";

/// The next URL of a redirect, `None` when it has no usable `Location`.
fn redirect_target(resp: &reqwest::Response, url: &Url) -> Result<Option<Url>, String> {
    let Some(location) = resp.headers().get(LOCATION) else {
        return Ok(None);
    };
    let location = location
        .to_str()
        .map_err(|_| format!("{url} redirected to an unreadable Location"))?;
    url.join(location)
        .map(Some)
        .map_err(|e| format!("{url} redirected to {location:?}, not a valid URL ({e})"))
}

/// `("text/html", Some("utf-8"))` from `text/html; charset=UTF-8`.
fn split_content_type(header: Option<&str>) -> (Option<String>, Option<String>) {
    let Some(header) = header else {
        return (None, None);
    };
    let mut parts = header.split(';');
    let mime = parts.next().map(|m| m.trim().to_ascii_lowercase());
    let charset = parts.find_map(|p| {
        let (key, value) = p.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_string())
    });
    (mime, charset)
}

/// The guard's refusal when that is why the request failed, else the error.
/// Why a request to `url` got no answer: the guard's refusal, or `"{doing}
/// {url} failed: …"` with the transport's chain of causes.
pub(super) fn describe_send_error(
    err: &reqwest::Error,
    doing: &str,
    url: &Url,
    hop: usize,
) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        let refusal = e.downcast_ref::<Refusal>().or_else(|| {
            e.downcast_ref::<std::io::Error>()?
                .get_ref()?
                .downcast_ref::<Refusal>()
        });
        if let Some(refusal) = refusal {
            return match hop {
                0 => refusal.to_string(),
                _ => format!("{refusal} (redirected to {url})"),
            };
        }
        source = e.source();
    }
    format!("{doing} {url} failed: {}", error_chain(err))
}

/// `outer: inner: innermost`, without repeating a message.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = Some(err);
    while let Some(e) = source {
        let msg = e.to_string();
        if !parts.iter().any(|p| p.contains(&msg)) {
            parts.push(msg);
        }
        source = e.source();
    }
    parts.join(": ")
}

#[async_trait::async_trait]
impl Tool for WebFetch {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "web_fetch".into(),
            description: "Fetch a public web page (http or https) and return it as Markdown; \
                          PDFs and plain text come back as text. Internal and private addresses \
                          are refused."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "url": {
                        "type": "string",
                        "description": "The absolute http:// or https:// URL to fetch."
                    }
                },
                "required": ["url"],
                "additionalProperties": false
            }),
        }
    }

    /// A `GET` through the SSRF guard: it reads.
    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let Some(url) = args.get("url").and_then(|u| u.as_str()) else {
            return Err(r#"web_fetch needs {"url": "https://…"}"#.into());
        };
        let result = self.fetch(url).await;
        // The URL stays out of the log: query strings carry tokens.
        if result.is_err() {
            tracing::debug!(run.id = %ctx.run_id, "web_fetch refused or failed");
        }
        result
    }
}
