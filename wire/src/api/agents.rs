//! Agents, instructions, turns (undo, regenerate, alternatives) and summaries.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How an agent uses its knowledge bases: `tool` — the model searches them
/// with `knowledge_search` when it sees fit; `auto` — the passages that best
/// match each question are put in the context before the model is called
/// (within `knowledge.auto_budget_tokens`), and the tool is offered too.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KnowledgeMode {
    #[default]
    Tool,
    Auto,
}

impl KnowledgeMode {
    pub fn as_str(self) -> &'static str {
        match self {
            KnowledgeMode::Tool => "tool",
            KnowledgeMode::Auto => "auto",
        }
    }
}

impl std::str::FromStr for KnowledgeMode {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "tool" => Ok(KnowledgeMode::Tool),
            "auto" => Ok(KnowledgeMode::Auto),
            _ => Err(()),
        }
    }
}

/// An agent: instructions, tools and limits people pick for a conversation.
/// `instructions`, `tool_policies`, `allowed_users` and `allowed_roles` are
/// shown to admins only (absent for everyone else).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentDto {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The model new sessions with this agent use (none: the default model).
    pub model: Option<String>,
    /// Admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Allowed tools (built-in names, `mcp:<server>`, `mcp:<server>__<tool>`);
    /// none: every tool.
    pub tools: Option<Vec<String>>,
    /// Tool (or `mcp:<server>`) → `auto`, `confirm` or `deny`. Admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_policies: Option<std::collections::BTreeMap<String, String>>,
    /// Usernames that may use the agent (with `allowed_roles` both empty:
    /// everyone). Admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_users: Option<Vec<String>>,
    /// Roles (`admin`, `user`) that may use the agent. Admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_roles: Option<Vec<String>>,
    /// Skills it may load; none: every skill.
    pub skills: Option<Vec<String>>,
    /// Knowledge bases (by name) it searches with `knowledge_search`.
    #[serde(default)]
    pub knowledge: Vec<String>,
    /// How it uses them.
    #[serde(default)]
    pub knowledge_mode: KnowledgeMode,
    /// The agents (ids) it may hand tasks to with `delegate`.
    #[serde(default)]
    pub delegates: Vec<String>,
    /// Whether it remembers the people it talks to (docs/memory.md).
    #[serde(default = "on")]
    pub memory: bool,
    pub max_steps: Option<u32>,
    pub default: bool,
    /// `builtin`, `config` or `admin`.
    pub origin: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AgentList {
    pub agents: Vec<AgentDto>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutAgentRequest {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub instructions: String,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub tool_policies: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    pub skills: Option<Vec<String>>,
    /// Knowledge bases (by name) the agent searches with `knowledge_search`;
    /// each is resolved for the person talking to it (their own base of that
    /// name, else a shared one), so it never reaches a base they cannot see.
    #[serde(default)]
    pub knowledge: Vec<String>,
    /// `tool` (default) or `auto` (see [`KnowledgeMode`]).
    #[serde(default)]
    pub knowledge_mode: KnowledgeMode,
    /// The agents (ids) it may hand tasks to with `delegate` (each a run of
    /// its own, in a child session; docs/protocol.md, "Delegation").
    #[serde(default)]
    pub delegates: Vec<String>,
    /// Whether the agent remembers the people it talks to (default: on):
    /// off, it recalls nothing, offers no memory tools and its turns are not
    /// learned from.
    #[serde(default = "on")]
    pub memory: bool,
    #[serde(default)]
    pub max_steps: Option<u32>,
    #[serde(default)]
    pub default: bool,
    /// Only these usernames may use the agent (with `allowed_roles` both
    /// empty: everyone). Admins may use every agent.
    #[serde(default)]
    pub allowed_users: Vec<String>,
    /// Only these roles (`admin`, `user`) may use the agent.
    #[serde(default)]
    pub allowed_roles: Vec<String>,
}

/// A user's own instructions, added after the agent's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionsDto {
    pub instructions: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SystemPromptDto {
    /// The agent in force for the session.
    pub agent: String,
    pub system_prompt: String,
    /// The memories at its end (docs/memory.md): empty when memory is off for
    /// you, the agent or the instance.
    #[serde(default)]
    pub memories: Vec<super::MemoryRef>,
}

/// The run an undo, redo or alternative choice touched, or a regenerate started
/// (attach to `/v1/runs/{run_id}/events` to follow it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TurnResult {
    pub run_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EditRequest {
    /// The new text of the last user message.
    pub text: String,
}

/// One reply of the newest turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AlternativeDto {
    pub run_id: String,
    pub reply: String,
    /// The question it answered, when an edit changed it since.
    pub user_text: Option<String>,
    /// The reply the conversation shows now.
    pub shown: bool,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AlternativeList {
    pub alternatives: Vec<AlternativeDto>,
}

/// The stored summary of a session's older messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SummaryDto {
    pub summary: String,
    /// How many messages it covers.
    pub messages: u64,
    /// The model that wrote it.
    pub model: String,
    pub created_at: String,
}

fn on() -> bool {
    true
}
