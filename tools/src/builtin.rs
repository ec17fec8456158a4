//! Tools with no configuration and no side effects.

use weft_llm::ToolSpec;

use crate::{Tool, ToolContext};

/// The current date and time in UTC (RFC 3339).
pub struct CurrentTime;

#[async_trait::async_trait]
impl Tool for CurrentTime {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "current_time".into(),
            description: "The current date and time in UTC, as RFC 3339.".into(),
            parameters: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(&self, _args: serde_json::Value, _ctx: &ToolContext) -> Result<String, String> {
        Ok(weft_shared::time::rfc3339(weft_shared::time::now_ms()))
    }
}
