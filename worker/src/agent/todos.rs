//! `todo_update`: the agent keeps a todo list for the conversation (docs/agent.md,
//! "Todos"). The list is the session's, stored apart from the messages
//! (`store/src/todos.rs`); each change publishes a `todo` event with the
//! whole list, and the model gets the list back as text.

use weft_llm::ToolSpec;
use weft_shared::api::{TodoItem, TodoStatus};
use weft_shared::event::EventKind;
use weft_shared::ids::{RunId, SessionId};
use weft_store::{MAX_TODO_ITEMS, Store, TodoPatch, TodoUpdate};
use weft_tools::{Tool, ToolContext};

/// The tool's name.
pub const TODO_UPDATE: &str = "todo_update";

pub(crate) struct TodoUpdateTool {
    pub store: Store,
}

#[async_trait::async_trait]
impl Tool for TodoUpdateTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TODO_UPDATE.into(),
            description: format!(
                "Keep a todo list for a task of several steps, which the person sees beside \
                 the conversation. Each item without an id is added (numbered 1, 2, …); an item \
                 with an id changes that item's text or status. Mark an item in_progress when you \
                 start it and done as soon as it is done; cancelled when it is dropped. Returns the \
                 whole list; call it with no items to read the list. At most {MAX_TODO_ITEMS} items."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "The item to change; leave out to add one."},
                                "text": {"type": "string", "description": "What is to be done, in a few words."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "done", "cancelled"]}
                            },
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["items"],
                "additionalProperties": false
            }),
        }
    }

    /// Changes only the conversation's own todo list: a planner may keep one.
    fn read_only(&self) -> bool {
        true
    }

    async fn call(&self, args: serde_json::Value, ctx: &ToolContext) -> Result<String, String> {
        let patch = patch_of(&args)?;
        let session = SessionId(ctx.session_id.clone());
        let run = RunId(ctx.run_id.clone());
        let (items, version) = if patch.is_empty() {
            let held = self.store.session_todos(&session).await;
            let items = held
                .map_err(|e| format!("reading the todo list failed: {e}"))?
                .map(|v| v.items)
                .unwrap_or_default();
            (items, 0)
        } else {
            let updated = self
                .store
                .update_todos(&session, &run, &ctx.call_key, &patch)
                .await
                .map_err(|e| format!("updating the todo list failed: {e}"))?;
            match updated {
                TodoUpdate::Updated { items, version } => (items, version),
                TodoUpdate::Refused(why) => return Err(why),
            }
        };
        if !patch.is_empty() {
            ctx.events.push(EventKind::Todo {
                step: ctx.step,
                version: version.max(0) as u64,
                items: items.clone(),
            });
        }
        Ok(describe(&items))
    }
}

/// The call's items as a patch; a malformed item is the model's to fix.
fn patch_of(args: &serde_json::Value) -> Result<Vec<TodoPatch>, String> {
    let Some(list) = args["items"].as_array() else {
        return Err("items must be a list".into());
    };
    list.iter()
        .map(|item| {
            let text = |key: &str| item[key].as_str().map(str::to_owned);
            let status = match item["status"].as_str() {
                None => None,
                Some(s) => Some(
                    serde_json::from_value::<TodoStatus>(serde_json::json!(s)).map_err(|_| {
                        format!("status must be pending, in_progress, done or cancelled, not {s:?}")
                    })?,
                ),
            };
            Ok(TodoPatch {
                id: text("id"),
                text: text("text"),
                status,
            })
        })
        .collect()
}

impl super::Attempt<'_> {
    /// The conversation's todo list as it stands, shown to the model before the
    /// question at a run's start (for this run only: nothing is stored), so a
    /// run picks up where the last one left off without first asking for it.
    /// Read only for sessions that ever kept one (the claim says), by agents
    /// that keep one.
    pub(super) async fn todos_before_the_question(&mut self) {
        if !self.run.has_todos || !self.tools.iter().any(|t| t.name == TODO_UPDATE) {
            return;
        }
        let list = match self
            .inner
            .deps
            .store
            .session_todos(&self.run.session_id)
            .await
        {
            Ok(Some(list)) if !list.items.is_empty() => list,
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(error = %e, "reading the todo list failed; the run goes on without it");
                return;
            }
        };
        let shown = format!(
            "[The todo list you keep for this conversation with todo_update, as it stands]\n{}",
            describe(&list.items)
        );
        crate::context::before_the_question(
            std::sync::Arc::make_mut(&mut self.messages).as_mut_slice(),
            &shown,
        );
    }
}

/// The list as the model reads it: `[x] 2. text` per item, and the count done.
fn describe(items: &[TodoItem]) -> String {
    if items.is_empty() {
        return "The todo list is empty.".into();
    }
    let done = items
        .iter()
        .filter(|i| i.status == TodoStatus::Done)
        .count();
    let mut out = format!("Todo list ({done} of {} done):\n", items.len());
    for i in items {
        let mark = match i.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[~]",
            TodoStatus::Done => "[x]",
            TodoStatus::Cancelled => "[-]",
        };
        out.push_str(&format!("{mark} {}. {}\n", i.id, i.text));
    }
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_reads_the_list_with_marks() {
        let item = |id: &str, text: &str, status| TodoItem {
            id: id.into(),
            text: text.into(),
            status,
        };
        let items = [
            item("1", "read", TodoStatus::Done),
            item("2", "write", TodoStatus::InProgress),
            item("3", "send", TodoStatus::Pending),
            item("4", "print", TodoStatus::Cancelled),
        ];
        assert_eq!(
            describe(&items),
            "Todo list (1 of 4 done):\n[x] 1. read\n[~] 2. write\n[ ] 3. send\n[-] 4. print"
        );
        assert_eq!(describe(&[]), "The todo list is empty.");
    }

    #[test]
    fn a_bad_status_is_the_models_to_fix() {
        let bad = serde_json::json!({"items": [{"id": "1", "status": "finished"}]});
        assert!(patch_of(&bad).unwrap_err().contains("not \"finished\""));
        let good =
            serde_json::json!({"items": [{"text": "a"}, {"id": "1", "status": "in_progress"}]});
        let patch = patch_of(&good).unwrap();
        assert_eq!(patch[1].status, Some(TodoStatus::InProgress));
        assert_eq!(patch[0].text.as_deref(), Some("a"));
    }
}
