//! A person's memories ranked against a text (docs/memory.md): the same BM25
//! and word segmentation as a knowledge base's lexical index, over the few
//! hundred short texts one person keeps — built on the spot (500 memories of
//! twenty words index in well under a millisecond), never stored.

use weft_shared::store::IndexedChunk;

use crate::lexical::{LexicalIndex, rank};
use crate::segment;

/// The most words of a query that count (a whole turn may be the query).
const MAX_TERMS: usize = 48;

/// The ids of `texts` (`(id, text)`) that share words with `query`, best
/// first, at most `limit`.
pub fn related<'a>(
    texts: impl IntoIterator<Item = (&'a str, &'a str)>,
    query: &str,
    limit: usize,
) -> Vec<String> {
    let terms = segment::query_terms(query, MAX_TERMS);
    if terms.is_empty() || limit == 0 {
        return Vec::new();
    }
    let chunks: Vec<IndexedChunk> = texts
        .into_iter()
        .map(|(id, text)| IndexedChunk {
            id: id.to_owned(),
            document_id: id.to_owned(),
            ord: 0,
            lexical: segment::lexical(text),
        })
        .collect();
    let mut index = LexicalIndex::default();
    if !index.apply(0, &[], chunks) {
        return Vec::new();
    }
    rank(&[&index], &terms, limit)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memories_sharing_the_turns_words_come_first() {
        let memories = [
            ("m1", "prefers answers in Chinese"),
            ("m2", "works on the payments team"),
            ("m3", "their dog is called Biscuit"),
            ("m4", "在支付团队负责退款"),
        ];
        assert_eq!(
            related(memories, "who reviews payments refunds on my team?", 2),
            ["m2"]
        );
        assert_eq!(related(memories, "退款流程是什么", 5), ["m4"]);
        assert!(related(memories, "", 5).is_empty());
        assert!(related(memories, "weather tomorrow", 5).is_empty());
    }
}
