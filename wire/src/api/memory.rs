//! Memory (docs/memory.md): what the assistant remembers about the signed-in
//! person — theirs alone, whoever else is in the chat.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `fact` (who they are, what they prefer), `episode` (something that
/// happened), `procedure` (how they like a thing done).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    #[default]
    Fact,
    Episode,
    Procedure,
}

impl MemoryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Fact => "fact",
            MemoryKind::Episode => "episode",
            MemoryKind::Procedure => "procedure",
        }
    }
}

impl std::str::FromStr for MemoryKind {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "fact" => Ok(MemoryKind::Fact),
            "episode" => Ok(MemoryKind::Episode),
            "procedure" => Ok(MemoryKind::Procedure),
            _ => Err(()),
        }
    }
}

/// Where a memory came from: added by hand (the API, the memory page), or
/// from a conversation (the `remember` tool, extraction after a turn).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MemorySource {
    Manual,
    Conversation {
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryDto {
    pub id: String,
    pub kind: MemoryKind,
    /// At most 2,000 characters.
    pub text: String,
    /// Always in the person's prompt (within `memory.prompt_budget_tokens`).
    pub pinned: bool,
    /// The person's profile (role, team, projects, preferences, style): one
    /// pinned fact the background extraction keeps up to date. The person may
    /// edit it like any other; the next extraction starts from their edit.
    #[serde(default)]
    pub profile: bool,
    pub source: MemorySource,
    pub created_at: i64,
    pub updated_at: i64,
    /// When a run's prompt last carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<i64>,
}

/// A memory a run's prompt carried (the `memory_used` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryRef {
    pub id: String,
    pub kind: MemoryKind,
    pub text: String,
}

/// `GET /v1/me/memories`: the person's memories (pinned first, then the most
/// recently changed; best match first with `q`) and whether memory is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryList {
    pub memories: Vec<MemoryDto>,
    /// The person's own switch (`PATCH /v1/me/memory`).
    pub enabled: bool,
    /// Whether the instance has memory at all (`memory.enabled`).
    pub available: bool,
}

/// `POST /v1/me/memories`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreateMemory {
    pub text: String,
    #[serde(default)]
    pub kind: MemoryKind,
    #[serde(default)]
    pub pinned: bool,
}

/// `PATCH /v1/me/memories/{id}`: what is given changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PatchMemory {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub kind: Option<MemoryKind>,
    #[serde(default)]
    pub pinned: Option<bool>,
}

/// `PATCH /v1/me/memory`: the person's switch. Off: nothing is remembered or
/// recalled; what is kept stays until deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemorySwitch {
    pub enabled: bool,
}

/// `DELETE /v1/me/memories`: how many were forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoriesForgotten {
    pub deleted: u64,
}
