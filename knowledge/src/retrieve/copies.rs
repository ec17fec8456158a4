//! This process's copies of the bases it searches — their lexical indexes and,
//! where the database has no vector index, their vectors — within
//! `knowledge.cache_mib`, least recently searched first out, and how each is
//! brought up to a base's revision (see the parent module's doc).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use weft_store::{BaseVectors, Result, StoreError};

use super::Retriever;
use crate::lexical::{Delta, LexicalIndex};

impl Retriever {
    fn cache_bytes(&self) -> u64 {
        self.inner.live.get().knowledge.cache_mib << 20
    }

    /// This process's copy of `base`'s vectors at `revision`, read from the
    /// store when it has none as new (one copy read at a time, so searches
    /// arriving together read it once).
    pub(super) async fn copy_of(
        &self,
        base: &str,
        model: &str,
        dims: usize,
        revision: i64,
    ) -> Result<Arc<BaseVectors>> {
        let key = CopyKey::Vectors(base.to_string(), model.to_string(), dims);
        let cached = || match self.inner.cache.lock().expect("cache lock").get(&key) {
            Some(Copy::Vectors(copy)) if copy.revision == revision => Some(copy.clone()),
            _ => None,
        };
        if let Some(copy) = cached() {
            return Ok(copy);
        }
        let _one = self.inner.loading.lock().await;
        if let Some(copy) = cached() {
            return Ok(copy);
        }
        let read = Arc::new(
            self.inner
                .store
                .knowledge_vectors(base, model, dims)
                .await?,
        );
        let cap = self.cache_bytes();
        self.inner
            .cache
            .lock()
            .expect("cache lock")
            .put(key, Copy::Vectors(read.clone()), cap);
        Ok(read)
    }

    /// This process's lexical copy of `base` brought up to `revision`: only
    /// the documents written or deleted since are read. `None`: the base is
    /// too large for `knowledge.cache_mib` (search it in the database).
    pub(super) async fn index_of(
        &self,
        base: &str,
        revision: i64,
    ) -> Result<Option<Arc<RwLock<LexicalIndex>>>> {
        let key = CopyKey::Lexical(base.to_string());
        let look = || match self.inner.cache.lock().expect("cache lock").get(&key) {
            Some(Copy::Lexical {
                index, revision: r, ..
            }) => Found::Index(index.clone(), *r == revision),
            Some(Copy::TooLarge {
                revision: r,
                documents,
            }) => Found::TooLarge(*r == revision, *documents),
            _ => Found::Nothing,
        };
        match look() {
            Found::Index(index, true) => return Ok(Some(index)),
            Found::TooLarge(true, _) => return Ok(None),
            _ => {}
        }
        let _one = self.inner.loading.lock().await;
        let stale = match look() {
            Found::Index(index, true) => return Ok(Some(index)),
            Found::TooLarge(true, _) => return Ok(None),
            Found::TooLarge(false, documents) => Err(documents),
            Found::Index(index, false) => Ok(Some(index)),
            Found::Nothing => Ok(None),
        };
        let store = &self.inner.store;
        let listed = store.knowledge_indexed_documents(base).await?;
        let cap = self.cache_bytes();
        let too_large = |documents: usize| {
            self.inner.cache.lock().expect("cache lock").put(
                key.clone(),
                Copy::TooLarge {
                    revision,
                    documents,
                },
                cap,
            );
            tracing::info!(knowledge.base = %base, documents, cache_mib = cap >> 20, "knowledge base too large to copy; searching it in the database");
            Ok(None)
        };
        let (index, delta) = match stale {
            // It did not fit with as many documents: it still does not.
            Err(documents) if listed.len() >= documents => return too_large(documents),
            Ok(Some(index)) if !index.read().expect("lexical index lock").worn() => {
                let delta = index.read().expect("lexical index lock").delta(
                    listed
                        .iter()
                        .map(|d| (d.id.as_str(), d.first_chunk.as_str())),
                );
                (index, delta)
            }
            _ => (
                Arc::default(),
                Delta {
                    drop: Vec::new(),
                    load: listed.iter().map(|d| d.id.clone()).collect(),
                },
            ),
        };
        let chunks = store.knowledge_indexed_chunks(&delta.load).await?;
        let building = index.clone();
        let (fits, bytes) = tokio::task::spawn_blocking(move || {
            let mut ix = building.write().expect("lexical index lock");
            let fits = ix.apply(revision, &delta.drop, chunks);
            (fits, ix.bytes())
        })
        .await
        .map_err(|e| StoreError::Other(format!("indexing chunks: {e}")))?;
        if !fits || bytes > cap {
            return too_large(listed.len());
        }
        self.inner.cache.lock().expect("cache lock").put(
            key,
            Copy::Lexical {
                index: index.clone(),
                revision,
                bytes,
            },
            cap,
        );
        Ok(Some(index))
    }
}

/// What the cache holds for a base's lexical copy.
enum Found {
    /// The index, and whether it is at the revision asked for.
    Index(Arc<RwLock<LexicalIndex>>, bool),
    /// Too large, at the revision asked for or not, with this many documents.
    TooLarge(bool, usize),
    Nothing,
}

/// What a copy is of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CopyKey {
    /// A base's vectors of one model and size.
    Vectors(String, String, usize),
    /// A base's lexical index.
    Lexical(String),
}

/// A copy this process keeps.
enum Copy {
    Vectors(Arc<BaseVectors>),
    Lexical {
        index: Arc<RwLock<LexicalIndex>>,
        revision: i64,
        bytes: u64,
    },
    /// The base's lexical copy did not fit, at `revision` with `documents`.
    TooLarge {
        revision: i64,
        documents: usize,
    },
}

impl Copy {
    fn bytes(&self) -> u64 {
        match self {
            Copy::Vectors(c) => {
                (c.flat.len() * 4 + c.ids.iter().map(|i| i.len() + 24).sum::<usize>()) as u64
            }
            Copy::Lexical { bytes, .. } => *bytes,
            Copy::TooLarge { .. } => 0,
        }
    }
}

/// The copies of this process, within a byte budget.
#[derive(Default)]
pub(super) struct Copies {
    entries: HashMap<CopyKey, (Copy, u64)>,
    /// Grows with every use: the smallest stamp is the least recently used.
    clock: u64,
}

impl Copies {
    fn get(&mut self, key: &CopyKey) -> Option<&Copy> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|(copy, used)| {
            *used = clock;
            &*copy
        })
    }

    /// Keeps `copy`, dropping the least recently used others while over
    /// `cap_bytes`; a copy larger than the whole budget is not kept.
    fn put(&mut self, key: CopyKey, copy: Copy, cap_bytes: u64) {
        if copy.bytes() > cap_bytes {
            self.entries.remove(&key);
            return;
        }
        self.clock += 1;
        self.entries.insert(key.clone(), (copy, self.clock));
        while self.bytes() > cap_bytes {
            let oldest = self
                .entries
                .iter()
                .filter(|(k, (c, _))| **k != key && c.bytes() > 0)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.entries.remove(&k),
                None => break,
            };
        }
    }

    fn bytes(&self) -> u64 {
        self.entries.values().map(|(c, _)| c.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::copy;
    use super::*;

    #[test]
    fn the_cache_drops_the_least_recently_used_within_its_budget() {
        let mut cache = Copies::default();
        let key = |b: &str| CopyKey::Vectors(b.to_string(), "m".to_string(), 2);
        let vectors = |id: &str| Copy::Vectors(copy(1, &[(id, [1.0, 0.0])]));
        cache.put(key("x"), vectors("x1"), 1 << 20);
        assert!(cache.get(&key("x")).is_some());
        let one = cache.bytes();
        cache.put(key("y"), vectors("y1"), one * 2);
        cache.get(&key("x"));
        cache.put(key("z"), vectors("z1"), one * 2);
        assert!(cache.get(&key("y")).is_none(), "y was used least recently");
        assert!(cache.get(&key("x")).is_some() && cache.get(&key("z")).is_some());
        // A marker that a base did not fit costs nothing and is never dropped
        // for room.
        let marker = Copy::TooLarge {
            revision: 3,
            documents: 10,
        };
        cache.put(CopyKey::Lexical("big".into()), marker, one * 2);
        cache.put(key("w"), vectors("w1"), one * 2);
        assert!(cache.get(&CopyKey::Lexical("big".into())).is_some());
        // A copy larger than the whole budget is not kept.
        cache.put(key("huge"), vectors("h1"), one / 2);
        assert!(cache.get(&key("huge")).is_none());
    }
}
