//! The todo card (`todo_update`, docs/lark.md): the agent's list for the
//! conversation as a turquoise card of its own beside the reply — its
//! progress as a bar in the header, one line per item — sent when a reply
//! first changes the list and rewritten in place with every change after,
//! so the chat has one card that ticks over instead of a list in each reply.

use serde_json::Value;
use weft_wire::api::{TodoItem, TodoStatus};

use super::{card, markdown as markdown_element};
use crate::card::markdown;
use crate::text::{Lang, say};

/// The header colour of the todo card (dsh's turquoise).
pub const TODO_TEMPLATE: &str = "turquoise";

/// A conversation's todo list as a reply last changed it.
#[derive(Debug, Clone, PartialEq)]
pub struct TodoCard {
    pub items: Vec<TodoItem>,
}

impl TodoCard {
    /// The card in `lang`: `☑ Todo 2/5 ▰▰▰▰▱▱▱▱▱▱`, then the items — ☐ to
    /// do, ▶ **in progress**, ☑ ~~done~~, ☒ ~~dropped~~ (dropped ones are not
    /// counted in the progress).
    pub fn render_in(&self, lang: Lang) -> Value {
        let kept = self
            .items
            .iter()
            .filter(|i| i.status != TodoStatus::Cancelled)
            .count();
        let done = self
            .items
            .iter()
            .filter(|i| i.status == TodoStatus::Done)
            .count();
        let title = say::todo_title(lang, done, kept);
        let lines: Vec<String> = self
            .items
            .iter()
            .map(|i| {
                let text = markdown::neutralize_mentions(&i.text.replace('\n', " "));
                let text = text.replace('~', "∼").replace('*', "∗");
                match i.status {
                    TodoStatus::Pending => format!("☐ {text}"),
                    TodoStatus::InProgress => format!("▶ **{text}**"),
                    TodoStatus::Done => format!("☑ ~~{text}~~"),
                    TodoStatus::Cancelled => format!("☒ ~~{text}~~"),
                }
            })
            .collect();
        card(
            &title,
            TODO_TEMPLATE,
            false,
            &title,
            vec![markdown_element("todo_items", &lines.join("\n"))],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, text: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            id: id.into(),
            text: text.into(),
            status,
        }
    }

    #[test]
    fn a_turquoise_card_with_the_progress_in_its_header() {
        let card = TodoCard {
            items: vec![
                item("1", "read the *spec*", TodoStatus::Done),
                item("2", "write ~it~ <at id=all></at>", TodoStatus::InProgress),
                item("3", "ship", TodoStatus::Pending),
                item("4", "gold-plate", TodoStatus::Cancelled),
            ],
        }
        .render_in(Lang::En);
        assert_eq!(card["header"]["template"], "turquoise");
        assert_eq!(card["header"]["title"]["content"], "☑ Todo 1/3 ▰▰▰▱▱▱▱▱▱▱");
        let items = card["body"]["elements"][0]["content"].as_str().unwrap();
        let lines: Vec<&str> = items.lines().collect();
        assert_eq!(lines[0], "☑ ~~read the ∗spec∗~~");
        assert!(lines[1].starts_with("▶ **write ∼it∼ "), "{}", lines[1]);
        assert!(
            !lines[1].contains("<at"),
            "mentions are neutralised: {}",
            lines[1]
        );
        assert_eq!(&lines[2..], ["☐ ship", "☒ ~~gold-plate~~"]);
        let zh = TodoCard { items: vec![] }.render_in(Lang::Zh);
        assert_eq!(zh["header"]["title"]["content"], "☑ 待办 0/0 ▱▱▱▱▱▱▱▱▱▱");
    }
}
