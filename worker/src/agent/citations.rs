//! The sources a reply cites: the `[n]` of the final answer, turned back into
//! the passages `knowledge_search` numbered (`weft_tools::sources`) and read
//! from the store, so the `citations` event and the stored reply name the
//! document, the place and the very chunk the model was shown — never a
//! guess from the answer's wording.

use weft_config::agents::KNOWLEDGE_TOOL;
use weft_llm::ChatMessage;
use weft_shared::api::Citation;
use weft_store::Store;
use weft_tools::sources::{Sources, cited};

/// The longest snippet a citation carries, in characters.
const SNIPPET_CHARS: usize = 500;

/// Learns the numbers of passages this run's earlier steps were shown: the
/// `knowledge_search` outputs after the run's question, reloaded with the
/// context when an attempt resumes the run.
pub(super) fn learn(sources: &Sources, messages: &[ChatMessage]) {
    let question = messages
        .iter()
        .rposition(|m| matches!(m, ChatMessage::User { .. }))
        .unwrap_or(0);
    for message in &messages[question..] {
        if let ChatMessage::Tool { name, content, .. } = message
            && name == KNOWLEDGE_TOOL
        {
            sources.learn(content);
        }
    }
}

/// The citations of `answer`, in the order it cites them. A number no search
/// of this run gave, or a passage whose document was deleted since, is left
/// out; a store error leaves the reply without citations rather than failing
/// it.
pub(super) async fn resolve(store: &Store, sources: &Sources, answer: &str) -> Vec<Citation> {
    let numbered: Vec<(u32, String)> = cited(answer)
        .into_iter()
        .filter_map(|n| Some((n, sources.chunk(n)?)))
        .collect();
    if numbered.is_empty() {
        return Vec::new();
    }
    let ids: Vec<String> = numbered.iter().map(|(_, c)| c.clone()).collect();
    let chunks = match store.knowledge_chunks_by_id(&ids).await {
        Ok(chunks) => chunks,
        Err(e) => {
            tracing::warn!(error = %e, "reading the cited passages failed; the reply goes without its sources");
            return Vec::new();
        }
    };
    numbered
        .into_iter()
        .filter_map(|(n, id)| {
            let chunk = chunks.iter().find(|c| c.chunk_id == id)?;
            Some(Citation {
                n,
                knowledge_id: chunk.base_id.clone(),
                document_id: chunk.document_id.clone(),
                document_name: chunk.document_name.clone(),
                chunk_id: chunk.chunk_id.clone(),
                snippet: snippet(&chunk.text),
                position: chunk.position(),
                page: chunk.page,
            })
        })
        .collect()
}

fn snippet(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(SNIPPET_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_runs_searches_are_learned() {
        let tool = |content: &str| ChatMessage::Tool {
            call_id: "c".into(),
            name: KNOWLEDGE_TOOL.into(),
            content: content.into(),
        };
        let user = || ChatMessage::User {
            content: "q".into(),
            images: Vec::new(),
        };
        let messages = vec![
            user(),
            tool("[1] old.md (chunk old)"),
            user(),
            tool("[1] new.md (chunk new)\n[2] b.md — page 2 (chunk b)"),
        ];
        let sources = Sources::default();
        learn(&sources, &messages);
        assert_eq!(sources.chunk(1).as_deref(), Some("new"));
        assert_eq!(sources.chunk(2).as_deref(), Some("b"));
    }

    #[test]
    fn snippets_are_cut_on_a_character() {
        assert_eq!(snippet("  short  "), "short");
        let long = "假".repeat(600);
        let cut = snippet(&long);
        assert_eq!(cut.chars().count(), SNIPPET_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
