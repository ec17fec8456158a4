//! Built-in tools. A hosted, multi-user service gets no shell: tools are small,
//! side-effect-free functions of their arguments. `current_time` makes the tool
//! path real end to end; more arrive with the agent-runtime work.

use std::collections::HashMap;
use std::sync::Arc;

use weft_llm::ToolSpec;

#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// `Ok(output)` or `Err(message)`; both are shown to the model.
    async fn call(&self, args: serde_json::Value) -> Result<String, String>;
}

/// Tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: HashMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    pub fn builtin() -> ToolRegistry {
        let mut reg = ToolRegistry::default();
        reg.add(Arc::new(CurrentTime));
        reg
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<_> = self.tools.values().map(|t| t.spec()).collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    pub async fn call(&self, name: &str, args: serde_json::Value) -> Result<String, String> {
        match self.tools.get(name) {
            Some(tool) => tool.call(args).await,
            None => Err(format!("unknown tool {name:?}")),
        }
    }
}

/// The current date and time in UTC (RFC 3339).
struct CurrentTime;

#[async_trait::async_trait]
impl Tool for CurrentTime {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "current_time".into(),
            description: "The current date and time in UTC, as RFC 3339.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(&self, _args: serde_json::Value) -> Result<String, String> {
        Ok(weft_shared::time::rfc3339(weft_shared::time::now_ms()))
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
        let out = reg
            .call("current_time", serde_json::json!({}))
            .await
            .unwrap();
        assert!(out.ends_with('Z') && out.contains('T'), "{out}");
        assert!(reg.call("rm_rf", serde_json::json!({})).await.is_err());
        assert_eq!(reg.specs()[0].name, "current_time");
    }

    #[test]
    fn previews_cut_on_char_boundaries() {
        assert_eq!(preview(&"界".repeat(2500)).chars().count(), 2000);
        assert_eq!(preview("short"), "short");
    }
}
