//! The in-process lexical index: a base's chunks as an inverted index in
//! memory, ranked by BM25, kept in step with the database document by document.
//!
//! **Why in the process.** The databases' full-text indexes find matches fast
//! but rank them slowly: neither can stop early, so a query ranks *every*
//! chunk that has one of its words. At 100,000 chunks a three-word query
//! matches about 9,000, and Postgres' `ts_rank_cd` over them took 274 ms at the
//! median and 578 ms at p99 (SQLite's `bm25()`: 28 / 56 ms; BENCHMARKS.md,
//! "Knowledge bases"). Here the same ranking is a pass over three posting
//! lists of about 3,000 entries each — tens of microseconds. Postgres stays
//! the system of record: this is a copy, like exact search's copy of the
//! vectors, and a base too large for `knowledge.cache_mib` is searched in the
//! database as before.
//!
//! **BM25**, with the usual `k1 = 1.2`, `b = 0.75`, and the idf of each word
//! over all the bases searched together: a rare word weighs more than a common
//! one, which Postgres' ranking could not say.
//!
//! **In step by documents.** A document's chunks are written whole, in one
//! transaction, with new ids ([`IndexedDocument::first_chunk`] tells one
//! writing from the next). When the base's revision moves, the copy lists the
//! base's documents (one row each), drops the chunks of those gone or
//! rewritten and reads the chunks of the new ones only: ingesting into a large
//! base never makes a search re-read it. Dropped chunks stay as tombstones
//! until they outnumber the live ones; then the copy is built again.
//!
//! **Memory**: a posting is four bytes (the chunk's slot and the word's count
//! in it, capped at 255); 100,000 chunks of 120 words are about 50 MB.

use std::collections::{HashMap, HashSet};

use weft_store::IndexedChunk;

const K1: f32 = 1.2;
const B: f32 = 0.75;
/// A posting keeps the word's count in its low byte, the slot above it.
const SLOT_SHIFT: u32 = 8;
/// Slots one index can address.
pub const MAX_SLOTS: usize = 1 << (32 - SLOT_SHIFT);
/// The length of a dropped chunk's slot.
const DEAD: u32 = u32::MAX;

/// One base's chunks, indexed.
#[derive(Debug, Default)]
pub struct LexicalIndex {
    /// The base's revision read before the index was brought up to date.
    pub revision: i64,
    /// Document id → its first chunk's id and its slots.
    documents: HashMap<String, Document>,
    slots: Vec<Slot>,
    /// Word → postings (`slot << 8 | count`), slots ascending.
    postings: HashMap<Box<str>, Vec<u32>>,
    live: u32,
    live_words: u64,
}

#[derive(Debug)]
struct Document {
    first_chunk: String,
    slots: std::ops::Range<u32>,
}

#[derive(Debug)]
struct Slot {
    chunk: Box<str>,
    /// Words in the chunk; [`DEAD`] once dropped.
    len: u32,
}

/// What an index lacks against the database's list of documents.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Delta {
    /// Documents gone or rewritten: their chunks leave.
    pub drop: Vec<String>,
    /// Documents new or rewritten: their chunks are read.
    pub load: Vec<String>,
}

impl LexicalIndex {
    /// What to drop and read to match `listed` — `(document id, first chunk id)`
    /// of every document of the base that has chunks.
    pub fn delta<'a>(&self, listed: impl IntoIterator<Item = (&'a str, &'a str)>) -> Delta {
        let mut delta = Delta::default();
        let mut seen = HashSet::new();
        for (document, first_chunk) in listed {
            seen.insert(document);
            match self.documents.get(document) {
                Some(d) if d.first_chunk == first_chunk => {}
                Some(_) => {
                    delta.drop.push(document.to_owned());
                    delta.load.push(document.to_owned());
                }
                None => delta.load.push(document.to_owned()),
            }
        }
        delta.drop.extend(
            self.documents
                .keys()
                .filter(|d| !seen.contains(d.as_str()))
                .cloned(),
        );
        delta
    }

    /// Applies a delta: drops the chunks of `drop`, adds `chunks` (the chunks
    /// of the documents loaded, any order). `false`: the index would exceed
    /// [`MAX_SLOTS`] (nothing is added then; build it again or search the
    /// database).
    pub fn apply(&mut self, revision: i64, drop: &[String], mut chunks: Vec<IndexedChunk>) -> bool {
        for document in drop {
            self.forget(document);
        }
        if self.slots.len() + chunks.len() > MAX_SLOTS {
            return false;
        }
        chunks.sort_by(|a, b| (&a.document_id, a.ord).cmp(&(&b.document_id, b.ord)));
        let mut counts: Vec<&str> = Vec::new();
        let mut i = 0;
        while i < chunks.len() {
            let document = chunks[i].document_id.clone();
            // Read while its rows were listed: a rewrite in between is a new
            // first chunk, and the next revision reads it again.
            self.forget(&document);
            let start = self.slots.len() as u32;
            let first_chunk = chunks[i].id.clone();
            while i < chunks.len() && chunks[i].document_id == document {
                let chunk = &chunks[i];
                let slot = self.slots.len() as u32;
                counts.clear();
                counts.extend(chunk.lexical.split(' ').filter(|w| !w.is_empty()));
                let len = counts.len() as u32;
                counts.sort_unstable();
                let mut run = 0;
                while run < counts.len() {
                    let word = counts[run];
                    let mut end = run + 1;
                    while end < counts.len() && counts[end] == word {
                        end += 1;
                    }
                    let count = (end - run).min(255) as u32;
                    match self.postings.get_mut(word) {
                        Some(list) => list.push(slot << SLOT_SHIFT | count),
                        None => {
                            self.postings
                                .insert(word.into(), vec![slot << SLOT_SHIFT | count]);
                        }
                    }
                    run = end;
                }
                self.slots.push(Slot {
                    chunk: chunk.id.as_str().into(),
                    len,
                });
                self.live += 1;
                self.live_words += u64::from(len);
                i += 1;
            }
            self.documents.insert(
                document,
                Document {
                    first_chunk,
                    slots: start..self.slots.len() as u32,
                },
            );
        }
        self.revision = revision;
        true
    }

    fn forget(&mut self, document: &str) {
        let Some(d) = self.documents.remove(document) else {
            return;
        };
        for slot in d.slots {
            let s = &mut self.slots[slot as usize];
            if s.len != DEAD {
                self.live -= 1;
                self.live_words -= u64::from(s.len);
                s.len = DEAD;
            }
        }
    }

    /// Tombstones outnumber live chunks: building it again is cheaper than
    /// skipping them.
    pub fn worn(&self) -> bool {
        let dead = self.slots.len() - self.live as usize;
        dead > 1_000 && dead > self.live as usize
    }

    /// Chunks searchable.
    pub fn chunks(&self) -> usize {
        self.live as usize
    }

    /// Bytes held, roughly (what `knowledge.cache_mib` counts).
    pub fn bytes(&self) -> u64 {
        let postings: usize = self
            .postings
            .iter()
            .map(|(w, list)| w.len() + 48 + list.capacity() * 4)
            .sum();
        let slots: usize = self.slots.iter().map(|s| s.chunk.len() + 24).sum();
        let documents: usize = self
            .documents
            .iter()
            .map(|(id, d)| id.len() + d.first_chunk.len() + 80)
            .sum();
        (postings + slots + documents) as u64
    }
}

/// The `limit` chunks of `indexes` that BM25 ranks highest for `terms`
/// (distinct words), best first, as `(chunk id, score)`; ties by chunk id.
pub fn rank(indexes: &[&LexicalIndex], terms: &[String], limit: usize) -> Vec<(String, f64)> {
    let live: u64 = indexes.iter().map(|ix| u64::from(ix.live)).sum();
    if live == 0 || limit == 0 {
        return Vec::new();
    }
    let words: u64 = indexes.iter().map(|ix| ix.live_words).sum();
    let average = (words as f32 / live as f32).max(1.0);
    let n = live as f32;
    let weights: Vec<f32> = terms
        .iter()
        .map(|t| {
            let df: usize = indexes.iter().map(|ix| ix.document_frequency(t)).sum();
            let df = df as f32;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut best: Vec<(f32, &str)> = Vec::new();
    for ix in indexes {
        let mut scores = vec![0f32; ix.slots.len()];
        let mut touched: Vec<u32> = Vec::new();
        for (term, idf) in terms.iter().zip(&weights) {
            let Some(list) = ix.postings.get(term.as_str()) else {
                continue;
            };
            for &posting in list {
                let slot = posting >> SLOT_SHIFT;
                let len = ix.slots[slot as usize].len;
                if len == DEAD {
                    continue;
                }
                let tf = (posting & 0xff) as f32;
                let norm = K1 * (1.0 - B + B * len as f32 / average);
                let score = &mut scores[slot as usize];
                if *score == 0.0 {
                    touched.push(slot);
                }
                *score += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        best.extend(
            touched
                .into_iter()
                .map(|slot| (scores[slot as usize], &*ix.slots[slot as usize].chunk)),
        );
    }
    let order = |a: &(f32, &str), b: &(f32, &str)| b.0.total_cmp(&a.0).then(a.1.cmp(b.1));
    if best.len() > limit {
        best.select_nth_unstable_by(limit - 1, order);
        best.truncate(limit);
    }
    best.sort_by(order);
    best.into_iter()
        .map(|(score, chunk)| (chunk.to_owned(), f64::from(score)))
        .collect()
}

impl LexicalIndex {
    /// Live chunks with `term`.
    fn document_frequency(&self, term: &str) -> usize {
        let Some(list) = self.postings.get(term) else {
            return 0;
        };
        if self.live as usize == self.slots.len() {
            return list.len();
        }
        list.iter()
            .filter(|p| self.slots[(**p >> SLOT_SHIFT) as usize].len != DEAD)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, document: &str, ord: i64, words: &str) -> IndexedChunk {
        IndexedChunk {
            id: id.into(),
            document_id: document.into(),
            ord,
            lexical: words.into(),
        }
    }

    fn ids(found: &[(String, f64)]) -> Vec<&str> {
        found.iter().map(|(id, _)| id.as_str()).collect()
    }

    fn index() -> LexicalIndex {
        let mut ix = LexicalIndex::default();
        assert!(ix.apply(
            1,
            &[],
            vec![
                chunk("c1", "d1", 0, "reset the vpn password in the portal"),
                chunk("c2", "d1", 1, "the the the the office opens at nine"),
                chunk("c3", "d2", 0, "vpn client install guide"),
                chunk("c4", "d2", 1, "lunch menu of the week"),
            ],
        ));
        ix
    }

    #[test]
    fn a_rare_word_outweighs_a_common_one_repeated() {
        let ix = index();
        let found = rank(&[&ix], &["the".into(), "vpn".into()], 10);
        assert_eq!(ids(&found)[0], "c1", "both words: {found:?}");
        let vpn_only = found.iter().position(|(id, _)| id == "c3").unwrap();
        let the_only = found.iter().position(|(id, _)| id == "c2").unwrap();
        assert!(vpn_only < the_only, "rare beats repeated common: {found:?}");
        assert_eq!(rank(&[&ix], &["vpn".into()], 1).len(), 1);
        assert!(rank(&[&ix], &["absent".into()], 5).is_empty());
    }

    #[test]
    fn a_rewritten_or_deleted_document_leaves_no_trace() {
        let mut ix = index();
        let listed = [("d1", "c5"), ("d3", "c7")];
        let delta = ix.delta(listed);
        assert_eq!(delta.load, ["d1", "d3"]);
        assert_eq!(delta.drop, ["d1", "d2"]);
        assert!(ix.apply(
            2,
            &delta.drop,
            vec![
                chunk("c6", "d1", 1, "vpn password reset moved"),
                chunk("c5", "d1", 0, "new handbook"),
                chunk("c7", "d3", 0, "vpn"),
            ],
        ));
        assert_eq!(ix.revision, 2);
        assert_eq!(ix.chunks(), 3);
        let found = rank(&[&ix], &["vpn".into(), "lunch".into()], 10);
        assert_eq!(
            ids(&found),
            ["c7", "c6"],
            "c1 (rewritten) and c3, c4 (deleted) are gone"
        );
        assert_eq!(ix.delta([("d1", "c5"), ("d3", "c7")]), Delta::default());
    }

    #[test]
    fn idf_spans_the_bases_searched_together() {
        let a = index();
        let mut b = LexicalIndex::default();
        assert!(b.apply(1, &[], vec![chunk("b1", "e1", 0, "vpn vpn")]));
        let found = rank(&[&a, &b], &["vpn".into()], 2);
        assert_eq!(ids(&found), ["b1", "c3"]);
    }

    #[test]
    fn tombstones_wear_an_index_out() {
        let mut ix = LexicalIndex::default();
        let many: Vec<IndexedChunk> = (0..3_000)
            .map(|i| chunk(&format!("k{i}"), &format!("d{}", i % 3), i, "word"))
            .collect();
        assert!(ix.apply(1, &[], many));
        assert!(!ix.worn());
        assert!(ix.apply(2, &["d0".into(), "d1".into()], Vec::new()));
        assert_eq!(ix.chunks(), 1_000);
        assert!(ix.worn());
        assert_eq!(rank(&[&ix], &["word".into()], 5000).len(), 1_000);
        assert!(ix.bytes() > 3_000 * 4);
    }
}
