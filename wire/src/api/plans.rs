//! Plans (plan mode): the agent researches with read-only tools, proposes a
//! plan, and the run waits for a person to approve, reject or revise it
//! (docs/protocol.md, "Plans").

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::states::{PlanDecision, PlanStatus};

/// A plan the agent proposed, waiting for (or given) its decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PlanDto {
    pub id: String,
    pub run_id: String,
    pub session_id: String,
    pub step: u32,
    /// The plan, as the agent wrote it (Markdown).
    pub markdown: String,
    pub status: PlanStatus,
    /// What the person said with a revise (or reject).
    pub comment: Option<String>,
    /// Who decided (a username).
    pub decided_by: Option<String>,
    pub created_at: String,
    pub expires_at: String,
    pub decided_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PlanList {
    pub plans: Vec<PlanDto>,
}

/// The longest comment kept with a decision, in characters.
pub const MAX_PLAN_COMMENT_CHARS: usize = 4000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecidePlanRequest {
    pub decision: PlanDecision,
    /// How to change the plan (required with `revise`), or why it was
    /// rejected.
    #[serde(default)]
    pub comment: Option<String>,
}
