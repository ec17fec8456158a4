//! `[tools]`: what the agent's tools may do and who must say yes first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::web::{AllowHost, SearchBackendKind, WebFetchConfig, WebSearchConfig};

/// Whether a tool call runs, waits for a person, or is refused. Ordered from
/// the most lenient to the strictest, so `max` is "the strictest wins".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolPolicy {
    /// Runs without asking.
    Auto,
    /// Suspends the run until the session's owner (or an admin) approves.
    Confirm,
    /// Never runs; the model is told it was refused.
    Deny,
}

/// The longest per-call timeout an admin may set (10 minutes).
pub const MAX_CALL_TIMEOUT_SECS: u64 = 600;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolsConfig {
    /// Per-call timeout (seconds, at most 600).
    pub call_timeout_secs: u64,
    /// Tool output beyond this many bytes is stored; the model gets the head
    /// and pages through the rest with `read_output`.
    pub output_cap_bytes: u64,
    /// How long a pending approval waits before it counts as `deny`, and a
    /// question (`ask_user`) before the model is told nobody answered.
    pub approval_ttl_secs: u64,
    /// Tool calls one model step may make; the calls beyond are not run, each
    /// gets an error answer instead (a model asking for 1,500 fetches at once
    /// would otherwise get them).
    pub max_calls_per_step: u32,
    /// Policy per tool name (`web_fetch`, `mcp:<server>`, `<server>__<tool>`).
    /// Unlisted tools: `confirm` when they have side effects, else `auto`.
    /// An agent's `tool_policies` and an MCP server's `policy` join these: the
    /// strictest that applies to a call wins (`deny` > `confirm` > `auto`).
    pub policies: BTreeMap<String, ToolPolicy>,
    /// Plan mode offers only tools that read. Built-ins say whether they do,
    /// an MCP tool by its server's `readOnlyHint`; this overrides either, by
    /// tool name or `mcp:<server>` (`read_only = { "mcp:docs" = true,
    /// web_fetch = false }`).
    pub read_only: BTreeMap<String, bool>,
    /// How deep delegation goes (`delegate`): a run a person sent is at depth
    /// 0, a run it delegated at 1, and a run at this depth may not delegate
    /// further. 0 turns delegation off.
    pub delegate_max_depth: u32,
    pub web_fetch: WebFetchConfig,
    pub web_search: WebSearchConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            call_timeout_secs: 30,
            output_cap_bytes: 16 << 10,
            approval_ttl_secs: 30 * 60,
            max_calls_per_step: 16,
            policies: BTreeMap::new(),
            read_only: BTreeMap::new(),
            delegate_max_depth: 2,
            web_fetch: WebFetchConfig::default(),
            web_search: WebSearchConfig::default(),
        }
    }
}

impl ToolsConfig {
    pub(super) fn validate(&self) -> Result<(), String> {
        if !(1..=MAX_CALL_TIMEOUT_SECS).contains(&self.call_timeout_secs) {
            return Err(format!(
                "tools.call_timeout_secs must be 1 to {MAX_CALL_TIMEOUT_SECS}"
            ));
        }
        if self.output_cap_bytes < 1024 {
            return Err("tools.output_cap_bytes must be at least 1024".into());
        }
        if self.delegate_max_depth > 5 {
            return Err("tools.delegate_max_depth must be at most 5".into());
        }
        if self.max_calls_per_step == 0 {
            return Err("tools.max_calls_per_step must be at least 1".into());
        }
        if self.approval_ttl_secs == 0 {
            return Err("tools.approval_ttl_secs must be at least 1".into());
        }
        // Their messages name the full key already.
        self.web_fetch.validate()?;
        self.web_search.validate()
    }
}
