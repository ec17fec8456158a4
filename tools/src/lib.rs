//! The agent's tools. A hosted, multi-user service gets no shell: a tool is a
//! small function of its arguments that the worker calls with a timeout, an
//! output cap and (for tools with side effects) a person's approval around it.
//! Those guards live in the worker's tool runner, so every tool — built-in or
//! from an MCP server — gets them without implementing them.

use std::collections::HashMap;
use std::sync::Arc;

use weft_llm::ToolSpec;

mod builtin;
pub mod mcp;
pub mod sources;
pub mod web;

pub use builtin::{ASK_USER, AskUser, CurrentTime, DELEGATE, Delegate, PROPOSE_PLAN, ProposePlan};
pub use web::web_tools;

/// Who is calling: tools that keep per-run state (stored outputs) or act for a
/// user need it; most ignore it.
#[derive(Debug, Clone, Default)]
pub struct ToolContext {
    pub run_id: String,
    pub session_id: String,
    pub user_id: String,
    /// The passages this run's tools numbered for citing (see [`sources`]).
    pub sources: Arc<sources::Sources>,
    /// This call's idempotency key, `<run>:<step>:<index in the step>`: the
    /// same when a step is redone after its worker died (the model asked
    /// again; a different call at that place should be refused by a server
    /// that keeps keys, as with any idempotency key reused with other
    /// arguments). MCP servers get it in the request's `_meta` under
    /// [`IDEMPOTENCY_META_KEY`]. Empty outside a run's step.
    pub call_key: String,
    /// The step of the run this call belongs to (1-based; 0 outside a step).
    pub step: u32,
    /// Events this call publishes besides its `tool_start` / `tool_end` (a
    /// `todo_update` call's `todo`); the runner emits them just after the
    /// call's `tool_end`. Each call gets its own.
    pub events: EventSink,
}

/// Where a tool leaves the events its call publishes ([`ToolContext::events`]).
#[derive(Debug, Clone, Default)]
pub struct EventSink(Arc<std::sync::Mutex<Vec<weft_wire::event::EventKind>>>);

impl EventSink {
    pub fn push(&self, event: weft_wire::event::EventKind) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }

    /// The events pushed so far, in order, leaving none.
    pub fn take(&self) -> Vec<weft_wire::event::EventKind> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The `_meta` key of a `tools/call` request that carries [`ToolContext::call_key`].
pub const IDEMPOTENCY_META_KEY: &str = "dev.weft/idempotency-key";

#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Whether a call changes something outside the conversation (sends,
    /// writes, buys). Such tools default to the `confirm` policy.
    fn side_effects(&self) -> bool {
        false
    }
    /// Whether a call only reads (changes nothing outside the conversation):
    /// what plan mode offers before a plan is approved. Built-ins declare it;
    /// an MCP tool takes its server's `readOnlyHint`; `[tools] read_only`
    /// overrides either. Unknown means no.
    fn read_only(&self) -> bool {
        false
    }
    /// The policy when the admin set none: `confirm` for tools with side
    /// effects, else `auto`. (An MCP server's configured policy overrides it.)
    fn default_policy(&self) -> weft_config::ToolPolicy {
        if self.side_effects() {
            weft_config::ToolPolicy::Confirm
        } else {
            weft_config::ToolPolicy::Auto
        }
    }
    /// `Ok(output)` or `Err(message)`; both are shown to the model.
    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String>;
}

/// Tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: HashMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// The tools every deployment has.
    pub fn builtin() -> ToolRegistry {
        let mut reg = ToolRegistry::default();
        reg.add(Arc::new(CurrentTime));
        reg.add(Arc::new(AskUser));
        reg.add(Arc::new(ProposePlan));
        reg.add(Arc::new(Delegate));
        reg
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Specs sorted by name, so the prompt (and the provider's cache) is stable.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<_> = self.tools.values().map(|t| t.spec()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    pub async fn call(
        &self,
        name: &str,
        args: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<String, String> {
        match self.tools.get(name) {
            Some(tool) => tool.call(args, ctx).await,
            None => Err(format!("unknown tool {name:?}")),
        }
    }
}

/// At most 2000 characters, for `tool_end.output`.
pub fn preview(output: &str) -> String {
    match output.char_indices().nth(2000) {
        Some((cut, _)) => output[..cut].to_string(),
        None => output.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn current_time_is_rfc3339_and_unknown_tools_fail() {
        let reg = ToolRegistry::builtin();
        let ctx = ToolContext::default();
        let out = reg
            .call("current_time", serde_json::json!({}), &ctx)
            .await
            .unwrap();
        assert!(out.ends_with('Z') && out.contains('T'), "{out}");
        assert!(
            reg.call("rm_rf", serde_json::json!({}), &ctx)
                .await
                .is_err()
        );
        let names: Vec<String> = reg.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["ask_user", "current_time", "delegate", "propose_plan"]
        );
    }

    #[test]
    fn previews_cut_on_char_boundaries() {
        assert_eq!(preview(&"界".repeat(2500)).chars().count(), 2000);
        assert_eq!(preview("short"), "short");
    }
}
