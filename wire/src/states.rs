//! The states and roles the API names, as enums rather than strings: the
//! OpenAPI document lists every value, so the generated TypeScript types are
//! unions and `check:api` (tsc over the web client) catches a state a client
//! compares against but no server sends, and a `match` in Rust catches one it
//! forgot. Each has its wire spelling (`as_str`, `FromStr`) for the database,
//! which stores the same words.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where a run stands. `queued`, `running`, `waiting_approval`,
/// `waiting_input` and `waiting_agents` are active (one per session at most);
/// the other three are terminal. The three waiting states hold no worker: the
/// run waits for a person's decision on an approval, for a person's input (an
/// answer to a question the agent asked, a decision on its plan), or for the
/// runs it delegated to other agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    /// Suspended on a human decision: no worker holds it.
    WaitingApproval,
    /// Suspended on a person's answer (`ask_user`, a plan): no worker holds it.
    WaitingInput,
    /// Suspended on the runs it delegated (`delegate`): no worker holds it.
    WaitingAgents,
    Succeeded,
    Failed,
    Cancelled,
}

impl RunStatus {
    pub const ALL: [RunStatus; 8] = [
        RunStatus::Queued,
        RunStatus::Running,
        RunStatus::WaitingApproval,
        RunStatus::WaitingInput,
        RunStatus::WaitingAgents,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::WaitingApproval => "waiting_approval",
            RunStatus::WaitingInput => "waiting_input",
            RunStatus::WaitingAgents => "waiting_agents",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Suspended (on a person, or on delegated runs), with no worker.
    pub fn is_waiting(self) -> bool {
        matches!(
            self,
            RunStatus::WaitingApproval | RunStatus::WaitingInput | RunStatus::WaitingAgents
        )
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Cancelled
        )
    }
}

impl FromStr for RunStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        RunStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or(())
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where an approval stands: `pending` until a person answers it or it
/// expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Denied,
    Expired,
}

impl ApprovalStatus {
    pub const ALL: [ApprovalStatus; 4] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Denied,
        ApprovalStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "pending",
            ApprovalStatus::Approved => "approved",
            ApprovalStatus::Denied => "denied",
            ApprovalStatus::Expired => "expired",
        }
    }

    /// How it was answered; `None` while pending.
    pub fn verdict(self) -> Option<Verdict> {
        match self {
            ApprovalStatus::Pending => None,
            ApprovalStatus::Approved => Some(Verdict::Approved),
            ApprovalStatus::Denied => Some(Verdict::Denied),
            ApprovalStatus::Expired => Some(Verdict::Expired),
        }
    }
}

impl FromStr for ApprovalStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        ApprovalStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or(())
    }
}

/// How an approval was answered (`approval_decided.decision`): `expired` is
/// the clock's answer, a denial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approved,
    Denied,
    Expired,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        ApprovalStatus::from(self).as_str()
    }
}

impl From<Verdict> for ApprovalStatus {
    fn from(v: Verdict) -> ApprovalStatus {
        match v {
            Verdict::Approved => ApprovalStatus::Approved,
            Verdict::Denied => ApprovalStatus::Denied,
            Verdict::Expired => ApprovalStatus::Expired,
        }
    }
}

impl FromStr for Verdict {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        s.parse::<ApprovalStatus>()?.verdict().ok_or(())
    }
}

/// Where an item of the agent's todo list (`todo_update`) stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Done,
    Cancelled,
}

impl TodoStatus {
    /// Whether the item is finished with (done or dropped).
    pub fn is_closed(self) -> bool {
        matches!(self, TodoStatus::Done | TodoStatus::Cancelled)
    }
}

/// Where a question the agent asked (`ask_user`) stands: `pending` until the
/// first answer, or until it expires (the model is told nobody answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    Pending,
    Answered,
    Expired,
}

impl QuestionStatus {
    pub const ALL: [QuestionStatus; 3] = [
        QuestionStatus::Pending,
        QuestionStatus::Answered,
        QuestionStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            QuestionStatus::Pending => "pending",
            QuestionStatus::Answered => "answered",
            QuestionStatus::Expired => "expired",
        }
    }
}

impl FromStr for QuestionStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        QuestionStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or(())
    }
}

/// Where a plan (plan mode, `plan_proposed`) stands: `proposed` until the
/// first decision; `revised` when a person asked for changes (a new plan
/// follows); `expired` when nobody decided within `tools.approval_ttl_secs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Proposed,
    Approved,
    Rejected,
    Revised,
    Expired,
}

impl PlanStatus {
    pub const ALL: [PlanStatus; 5] = [
        PlanStatus::Proposed,
        PlanStatus::Approved,
        PlanStatus::Rejected,
        PlanStatus::Revised,
        PlanStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Proposed => "proposed",
            PlanStatus::Approved => "approved",
            PlanStatus::Rejected => "rejected",
            PlanStatus::Revised => "revised",
            PlanStatus::Expired => "expired",
        }
    }
}

impl FromStr for PlanStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        PlanStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or(())
    }
}

/// Where a delegated run stands (`delegate`, `agent_start` / `agent_end`):
/// `running` until the child run ends, then how it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DelegationStatus {
    Running,
    Succeeded,
    Failed,
    Cancelled,
}

impl DelegationStatus {
    pub const ALL: [DelegationStatus; 4] = [
        DelegationStatus::Running,
        DelegationStatus::Succeeded,
        DelegationStatus::Failed,
        DelegationStatus::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DelegationStatus::Running => "running",
            DelegationStatus::Succeeded => "succeeded",
            DelegationStatus::Failed => "failed",
            DelegationStatus::Cancelled => "cancelled",
        }
    }
}

impl FromStr for DelegationStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        DelegationStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or(())
    }
}

/// What a person decides about a proposed plan (`POST /v1/plans/{id}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanDecision {
    /// Carry it out: the run goes on with the agent's full tools.
    Approve,
    /// Drop it: the run ends with the plan as its reply, nothing carried out.
    Reject,
    /// Change it (the comment says how): the agent writes a new plan.
    Revise,
}

impl PlanDecision {
    pub fn status(self) -> PlanStatus {
        match self {
            PlanDecision::Approve => PlanStatus::Approved,
            PlanDecision::Reject => PlanStatus::Rejected,
            PlanDecision::Revise => PlanStatus::Revised,
        }
    }
}

/// What a user may do: `admin` manages users, agents and settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Admin,
    User,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
        }
    }
}

impl FromStr for Role {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "admin" => Ok(Role::Admin),
            "user" => Ok(Role::User),
            _ => Err(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_reads_back_as_itself_on_the_wire_and_in_the_database() {
        for status in RunStatus::ALL {
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(serde_json::from_str::<RunStatus>(&json).unwrap(), status);
            assert_eq!(status.as_str().parse::<RunStatus>(), Ok(status));
        }
        assert_eq!("waiting".parse::<RunStatus>(), Err(()));
        assert_eq!(serde_json::to_string(&Role::Admin).unwrap(), "\"admin\"");
        for status in ApprovalStatus::ALL {
            assert_eq!(status.as_str().parse::<ApprovalStatus>(), Ok(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            if let Some(v) = status.verdict() {
                assert_eq!(serde_json::to_string(&v).unwrap(), json);
                assert_eq!(ApprovalStatus::from(v), status);
            }
        }
        assert_eq!("pending".parse::<Verdict>(), Err(()));
        for status in QuestionStatus::ALL {
            assert_eq!(status.as_str().parse::<QuestionStatus>(), Ok(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
        for status in PlanStatus::ALL {
            assert_eq!(status.as_str().parse::<PlanStatus>(), Ok(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
        assert_eq!("user".parse::<Role>(), Ok(Role::User));
    }
}
