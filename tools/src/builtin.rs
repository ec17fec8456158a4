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
        Ok(weft_wire::time::rfc3339(weft_wire::time::now_ms()))
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

pub const DELEGATE: &str = "delegate";

/// `delegate`: the agent hands a task to another agent, which does it in a run
/// of its own (a child session, crash-safe, cancelled with its parent) while
/// this run waits holding no worker; the other agent's answer is the call's
/// result (docs/protocol.md, "Delegation"). Offered to agents that list whom
/// they may delegate to (`[[agents]] delegates`), below
/// `tools.delegate_max_depth`. Several calls in one step run in parallel. The
/// worker handles its calls itself (a wait); `call` is never reached.
pub struct Delegate;

#[async_trait::async_trait]
impl Tool for Delegate {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: DELEGATE.into(),
            description: "Hand a self-contained task to another agent and get its answer back. \
                The other agent starts fresh: it sees only the task, so say everything it needs \
                (what to find or do, the context, the form of the answer). Several delegate \
                calls in one step run in parallel. Use it for parts of the work that another \
                agent is better at, or that can be done side by side."
                .into(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "description": "The id of the agent to hand the task to (one of those this agent may delegate to)."},
                    "task": {"type": "string", "minLength": 1, "maxLength": 20000, "description": "The task, complete and self-contained."}
                },
                "required": ["agent", "task"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, _args: serde_json::Value, _ctx: &ToolContext) -> Result<String, String> {
        Err("delegate is done by another agent, not run".into())
    }
}
