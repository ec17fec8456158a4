//! Approvals, MCP server status and skills.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::states::ApprovalStatus;

/// A tool call waiting for (or given) a person's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalDto {
    pub id: String,
    pub run_id: String,
    pub session_id: String,
    pub step: u32,
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    pub args: serde_json::Value,
    pub status: ApprovalStatus,
    /// Who decided (a username).
    pub decided_by: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub decided_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalList {
    pub approvals: Vec<ApprovalDto>,
}

/// `approve` runs the call once; `always` also lets this tool run without asking
/// for the rest of the session; `deny` tells the model it was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approve,
    Deny,
    Always,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideApprovalRequest {
    pub decision: ApprovalDecision,
}

/// One MCP server as a worker sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct McpServerDto {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// `starting`, `ready`, `error` or `stopped`.
    pub state: String,
    /// The tools offered to the agent (`<server>__<tool>`).
    pub tools: Vec<String>,
    pub last_error: Option<String>,
    /// When `state` last changed.
    pub since: String,
    /// `auto`, `confirm` or `deny`.
    pub policy: String,
}

/// The MCP servers of every worker that reported in the last minute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct McpWorkerStatus {
    pub worker_id: String,
    pub updated_at: String,
    pub servers: Vec<McpServerDto>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct McpStatusList {
    /// Servers configured (`[[mcp_servers]]`), as the gateway reads its config.
    pub configured: Vec<String>,
    pub workers: Vec<McpWorkerStatus>,
}

/// A skill as listed to people (the model sees names and descriptions only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillDto {
    pub name: String,
    pub description: String,
    /// Files beside its SKILL.md.
    pub files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SkillList {
    pub skills: Vec<SkillDto>,
}

/// An uploaded skill: its SKILL.md (front matter `name`, `description`) and the
/// text files beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSkillRequest {
    pub skill_md: String,
    #[serde(default)]
    pub files: std::collections::BTreeMap<String, String>,
}
