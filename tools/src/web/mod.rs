//! The built-in web tools: `web_fetch` (one page as Markdown, behind an SSRF
//! guard) and `web_search` (a search backend the admin configured).
//!
//! Both are read-only and off by default; [`web_tools`] returns the ones the
//! configuration enables, for the worker to register. The guard has no off
//! switch: internal hosts are reachable only through the admin's
//! `tools.web_fetch.allow_hosts`.

use std::sync::Arc;

use weft_config::ToolsConfig;
use weft_files::Extractor;

use crate::Tool;

mod convert;
mod fetch;
mod guard;
mod post;
mod resolve;
mod search;

pub use fetch::{Downloaded, MAX_REDIRECTS, UrlDownload, WebFetch};
pub use guard::{Blocked, Guard, Refusal, classify};
pub use post::{GuardedPost, PostError, Posted};
pub use resolve::{NameResolver, SystemResolver};
pub use search::{Brave, SearchBackend, SearchHit, Searxng, WebSearch, format_hits};

/// The enabled web tools: `web_fetch` when `tools.web_fetch.enabled`,
/// `web_search` when `tools.web_search.enabled` and its backend is complete.
/// A tool whose settings are unusable is left out with an error in the log
/// (start-up validation should have stopped it earlier).
pub fn web_tools(cfg: &ToolsConfig, extractor: &Extractor) -> Vec<Arc<dyn Tool>> {
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    if cfg.web_fetch.enabled {
        match WebFetch::new(&cfg.web_fetch, extractor.clone()) {
            Ok(fetch) => tools.push(Arc::new(fetch)),
            Err(e) => tracing::error!(error = %e, "web_fetch is not offered"),
        }
    }
    if cfg.web_search.enabled {
        match WebSearch::new(&cfg.web_search) {
            Ok(search) => tools.push(Arc::new(search)),
            Err(e) => tracing::error!(error = %e, "web_search is not offered"),
        }
    }
    tools
}
