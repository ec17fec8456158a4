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

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, _args: serde_json::Value, _ctx: &ToolContext) -> Result<String, String> {
        Ok(weft_shared::time::rfc3339(weft_shared::time::now_ms()))
    }
}

/// The name of [`AskUser`]: the worker answers its calls with a person's
/// answer instead of running it.
pub const ASK_USER: &str = "ask_user";

/// `ask_user`: the agent asks the person a question and the run waits,
/// holding no worker, for the first answer (docs/protocol.md, "Questions").
/// The worker handles its calls itself (a wait, like an approval); `call` is
/// never reached.
pub struct AskUser;

#[async_trait::async_trait]
impl Tool for AskUser {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: ASK_USER.into(),
            description: "Ask the person you are talking to a question and wait for their \
                answer: when a choice is theirs to make, or you need something only they know. \
                Offer options when the answer is one of a few; the run waits until they answer \
                (or the question expires, and you are told nobody answered). Do not ask what \
                you can find out yourself."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, as the person will read it."},
                    "options": {"type": "array", "items": {"type": "string"}, "maxItems": 10, "description": "Choices to offer, if any."},
                    "multiple": {"type": "boolean", "description": "Several options may be chosen (default false)."},
                    "allow_text": {"type": "boolean", "description": "A typed answer is accepted besides the options (default true)."}
                },
                "required": ["question"],
                "additionalProperties": false
            }),
        }
    }

    /// Asking changes nothing: a planner may ask.
    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, _args: serde_json::Value, _ctx: &ToolContext) -> Result<String, String> {
        Err("ask_user is answered by the person, not run".into())
    }
}

pub const PROPOSE_PLAN: &str = "propose_plan";

/// `propose_plan`: in plan mode, the agent submits the plan it just wrote (its
/// reply's text) and the run waits, holding no worker, for a person to
/// approve, reject or revise it (docs/protocol.md, "Plans"). Offered only in
/// plan mode; a planning step that ends without calling it proposes its text
/// all the same. The worker handles its calls itself (a wait); `call` is never
/// reached.
pub struct ProposePlan;

#[async_trait::async_trait]
impl Tool for ProposePlan {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: PROPOSE_PLAN.into(),
            description:
                "Plan mode: submit the plan you have just written as your reply (numbered \
                steps, in Markdown) for the person's approval. Call it once the plan is complete; \
                the run waits for their decision. Until they approve, only read-only tools work."
                    .into(),
            parameters: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, _args: serde_json::Value, _ctx: &ToolContext) -> Result<String, String> {
        Err("propose_plan is decided by the person, not run".into())
    }
}
