//! Delegations (docs/protocol.md, "Delegation"): the tasks a run handed to
//! other agents, each a run of its own in a child session.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::states::DelegationStatus;

/// A task a run handed to another agent (`delegate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DelegationDto {
    pub id: String,
    /// The delegating run and its session.
    pub run_id: String,
    pub session_id: String,
    pub step: u32,
    /// The `delegate` call whose result the child's answer is.
    pub call_id: String,
    pub agent: String,
    pub task: String,
    /// The child's session and run (its events can be attached to).
    pub child_session_id: String,
    pub child_run_id: String,
    pub status: DelegationStatus,
    pub created_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DelegationList {
    pub delegations: Vec<DelegationDto>,
}
