//! The agent's todo list per session (`todo_update`, docs/protocol.md, "Todos").
//!
//! Every change writes the whole list as a new version (migration 0032), tagged
//! with the run whose call made it. The list as it stands is the newest version
//! written by a turn that is still shown: undo hides a turn's messages, and with
//! them its versions, so the list from before it is back; redo shows them again.
//! Compaction only summarises messages and never touches the list. A call redone
//! after its worker died carries the same idempotency key (`run:step:index`) and
//! gets the version it wrote the first time, so an added item is never added twice.

use super::session_writes::lock_session;
use super::{Result, Store, StoreError, get_i64, get_str};
use weft_wire::api::{TodoItem, TodoStatus};
use weft_wire::ids::{RunId, SessionId};
use weft_wire::time::now_ms;

/// The most items a list holds.
pub const MAX_TODO_ITEMS: usize = 50;
/// The longest item, in characters.
pub const MAX_TODO_TEXT: usize = 500;

/// One change to a list: with an `id`, that item's new text and/or status;
/// without, a new item (text required, `pending` unless a status is given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TodoPatch {
    pub id: Option<String>,
    pub text: Option<String>,
    pub status: Option<TodoStatus>,
}

/// A list as stored: its items and when they last changed (Unix ms).
#[derive(Debug, Clone, PartialEq)]
pub struct TodoVersion {
    pub items: Vec<TodoItem>,
    pub updated_at: i64,
}

/// Apply `patch` to `items` in order; `Err` says what is wrong, for the model.
pub fn apply_todo_patch(
    mut items: Vec<TodoItem>,
    patch: &[TodoPatch],
) -> std::result::Result<Vec<TodoItem>, String> {
    let mut next = items
        .iter()
        .filter_map(|i| i.id.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    for p in patch {
        let text = match p.text.as_deref().map(str::trim) {
            Some("") => return Err("an item's text may not be empty".into()),
            Some(t) if t.chars().count() > MAX_TODO_TEXT => {
                return Err(format!(
                    "an item's text is at most {MAX_TODO_TEXT} characters"
                ));
            }
            other => other.map(str::to_owned),
        };
        match &p.id {
            Some(id) => {
                let Some(item) = items.iter_mut().find(|i| &i.id == id) else {
                    return Err(format!(
                        "there is no item {id:?}; leave the id out to add an item"
                    ));
                };
                if let Some(t) = text {
                    item.text = t;
                }
                if let Some(s) = p.status {
                    item.status = s;
                }
            }
            None => {
                let Some(text) = text else {
                    return Err("a new item needs its text".into());
                };
                if items.len() >= MAX_TODO_ITEMS {
                    return Err(format!(
                        "the list holds at most {MAX_TODO_ITEMS} items; cancel or reuse some"
                    ));
                }
                next += 1;
                items.push(TodoItem {
                    id: next.to_string(),
                    text,
                    status: p.status.unwrap_or(TodoStatus::Pending),
                });
            }
        }
    }
    Ok(items)
}

/// What [`Store::update_todos`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum TodoUpdate {
    /// The list after the change (or after this call's first time), and its
    /// version: the session's versions count up, so of two lists the higher
    /// version is the newer, whatever order their events arrive in.
    Updated { items: Vec<TodoItem>, version: i64 },
    /// The patch breaks a rule; nothing was written.
    Refused(String),
}

fn parse_items(json: &str) -> Result<Vec<TodoItem>> {
    serde_json::from_str(json).map_err(|e| StoreError::Other(format!("todo items: {e}")))
}

/// The newest version of a turn still shown.
const CURRENT: &str = "select items, created_at from todo_lists t
     where t.session_id = $1
       and exists (select 1 from messages m where m.run_id = t.run_id and m.hidden = 0)
     order by t.seq desc limit 1";

impl Store {
    /// The session's todo list as it stands; `None` when it has none.
    pub async fn session_todos(&self, session: &SessionId) -> Result<Option<TodoVersion>> {
        let row = sqlx::query(CURRENT)
            .bind(&session.0)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(TodoVersion {
                items: parse_items(&get_str(&r, "items")?)?,
                updated_at: get_i64(&r, "created_at")?,
            })
        })
        .transpose()
    }

    /// Change the session's list as `run`'s call `call_key`, under the session's
    /// lock (the order every session write takes).
    pub async fn update_todos(
        &self,
        session: &SessionId,
        run: &RunId,
        call_key: &str,
        patch: &[TodoPatch],
    ) -> Result<TodoUpdate> {
        let mut tx = self.begin().await?;
        if !lock_session(&mut tx, self.lock_suffix(), session).await? {
            return Err(StoreError::NotFound);
        }
        let done = sqlx::query("select items, seq from todo_lists where call_key = $1")
            .bind(call_key)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = done {
            return Ok(TodoUpdate::Updated {
                items: parse_items(&get_str(&row, "items")?)?,
                version: get_i64(&row, "seq")?,
            });
        }
        let current = sqlx::query(CURRENT)
            .bind(&session.0)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| get_str(&r, "items"))
            .transpose()?
            .map(|j| parse_items(&j))
            .transpose()?
            .unwrap_or_default();
        let items = match apply_todo_patch(current, patch) {
            Ok(items) => items,
            Err(why) => return Ok(TodoUpdate::Refused(why)),
        };
        let json = serde_json::to_string(&items).map_err(|e| StoreError::Other(e.to_string()))?;
        let version: i64 = sqlx::query_scalar(
            "insert into todo_lists (session_id, run_id, call_key, seq, items, created_at)
             values ($1, $2, $3,
                     (select coalesce(max(seq), 0) + 1 from todo_lists where session_id = $1),
                     $4, $5)
             returning seq",
        )
        .bind(&session.0)
        .bind(&run.0)
        .bind(call_key)
        .bind(json)
        .bind(now_ms())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(TodoUpdate::Updated { items, version })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(text: &str) -> TodoPatch {
        TodoPatch {
            text: Some(text.into()),
            ..TodoPatch::default()
        }
    }

    fn set(id: &str, status: TodoStatus) -> TodoPatch {
        TodoPatch {
            id: Some(id.into()),
            status: Some(status),
            ..TodoPatch::default()
        }
    }

    #[test]
    fn a_patch_adds_numbered_items_and_changes_them_by_id() {
        let items = apply_todo_patch(Vec::new(), &[add("read"), add(" write ")]).unwrap();
        let shape = |items: &[TodoItem]| -> Vec<(String, String, TodoStatus)> {
            items
                .iter()
                .map(|i| (i.id.clone(), i.text.clone(), i.status))
                .collect()
        };
        assert_eq!(
            shape(&items),
            [
                ("1".into(), "read".into(), TodoStatus::Pending),
                ("2".into(), "write".into(), TodoStatus::Pending)
            ]
        );
        let renamed = TodoPatch {
            id: Some("2".into()),
            text: Some("write it up".into()),
            ..TodoPatch::default()
        };
        let items =
            apply_todo_patch(items, &[set("1", TodoStatus::Done), renamed, add("send")]).unwrap();
        assert_eq!(
            shape(&items),
            [
                ("1".into(), "read".into(), TodoStatus::Done),
                ("2".into(), "write it up".into(), TodoStatus::Pending),
                ("3".into(), "send".into(), TodoStatus::Pending)
            ]
        );
        assert_eq!(
            apply_todo_patch(items.clone(), &[]).unwrap(),
            items,
            "no items: read"
        );
    }

    #[test]
    fn a_bad_patch_says_why_and_changes_nothing() {
        let items = apply_todo_patch(Vec::new(), &[add("read")]).unwrap();
        for (patch, says) in [
            (set("9", TodoStatus::Done), "no item \"9\""),
            (add("  "), "may not be empty"),
            (TodoPatch::default(), "needs its text"),
            (add(&"x".repeat(MAX_TODO_TEXT + 1)), "at most 500"),
        ] {
            let why = apply_todo_patch(items.clone(), &[patch]).unwrap_err();
            assert!(why.contains(says), "{why}");
        }
        let full: Vec<TodoPatch> = (0..MAX_TODO_ITEMS).map(|i| add(&i.to_string())).collect();
        let why = apply_todo_patch(items, &full).unwrap_err();
        assert!(why.contains("at most 50 items"), "{why}");
    }
}
