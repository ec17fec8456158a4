//! The agent's todo list (`todo_update`, docs/protocol.md, "Todos"): one list per
//! session, kept apart from the messages so a compaction never loses it, and
//! versioned by run so undoing a turn brings back the list as it was before it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use crate::states::TodoStatus;

/// One item of a session's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TodoItem {
    /// Stable within the session: `1`, `2`, … in the order items were added.
    pub id: String,
    pub text: String,
    pub status: TodoStatus,
}

/// `GET /v1/sessions/{id}/todos`: the list as it stands (empty when the agent
/// kept none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TodoList {
    pub items: Vec<TodoItem>,
    /// RFC 3339; absent when there is no list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}
