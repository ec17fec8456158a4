//! Retrieval: one search over knowledge bases, used by the search API, the
//! `knowledge_search` tool and `knowledge_mode = "auto"` alike.
//!
//! The lexical index always answers: this process's copy of it, ranked by BM25
//! ([`crate::lexical`]), or the database's full-text index for a base too
//! large for `knowledge.cache_mib`. When an embedding model is configured
//! (`[[embedding_models]]`), the query is embedded at the same time as it is
//! segmented, the nearest chunks are found — by pgvector's HNSW index in the
//! database where it exists, else exactly here, over a copy of the base's
//! vectors kept in memory — and both lists are fused by reciprocal rank
//! ([`crate::fuse`]): a chunk that both indexes rank high wins, and a
//! paraphrase that shares no word with the document is still found.
//!
//! **The copies**: a base's lexical index, and its vectors for exact search
//! (100,000 chunks of 256 dimensions are 100 MB), are read once and kept
//! while the base's `revision` (one indexed read per search) says they are
//! current; every write to the base's chunks moves it, and the lexical copy
//! then reads only the documents that changed. Scoring 100,000 vectors is 25
//! million multiply-adds, a few milliseconds on one core, run off the async
//! threads. The copies share `knowledge.cache_mib`; the least recently
//! searched go first.
//!
//! **An embedding outage never fails a search**: the query's vector has
//! [`QUERY_EMBED_TIMEOUT`] and no retry (a person is waiting), and without it
//! the search is lexical and says so ([`Retrieved::fallback`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use weft_config::{EmbeddingModelConfig, LiveConfig};
use weft_llm::embeddings::{Embedder, EmbedderConfig};
use weft_store::{BaseVectors, ChunkHit, Result, Store, StoreError, VectorScan};
pub use weft_wire::api::SearchMode;

use crate::fuse::reciprocal_rank;
use crate::lexical::{self, LexicalIndex};
use crate::segment;

mod copies;

use copies::Copies;

/// The longest a search waits for its query's vector.
pub const QUERY_EMBED_TIMEOUT: Duration = Duration::from_secs(5);
/// Words of a query matched at most.
pub const MAX_QUERY_TERMS: usize = 32;
/// Each index is asked for this many times `top_k` candidates (at least 20)
/// before fusion.
const CANDIDATES_PER_RESULT: u32 = 4;

/// A search's results, best first.
#[derive(Debug, Clone)]
pub struct Retrieved {
    /// `score`: the lexical index's in lexical mode, the fused one in hybrid.
    pub hits: Vec<ChunkHit>,
    pub mode: SearchMode,
    /// Why a configured embedding model was not used (an outage, a missing
    /// key): the search fell back to lexical.
    pub fallback: Option<String>,
}

/// The embedding model now configured, ready to call.
#[derive(Clone)]
pub struct CurrentEmbedder {
    /// What vectors are stored under ([`EmbeddingModelConfig::model_name`]).
    pub model: String,
    pub embedder: Embedder,
    pub min_similarity: f64,
}

/// Searches knowledge bases; cheap to clone (one per process is enough).
#[derive(Clone)]
pub struct Retriever {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    live: LiveConfig,
    /// Built for the config it was made from; remade when that changes.
    embedder: Mutex<Option<(EmbeddingModelConfig, Embedder)>>,
    cache: Mutex<Copies>,
    /// One copy is read or brought up to date by one search at a time.
    loading: tokio::sync::Mutex<()>,
}

impl Retriever {
    pub fn new(store: Store, live: LiveConfig) -> Retriever {
        Retriever {
            inner: Arc::new(Inner {
                store,
                live,
                embedder: Mutex::new(None),
                cache: Mutex::new(Copies::default()),
                loading: tokio::sync::Mutex::new(()),
            }),
        }
    }

    /// The configured embedding model (`knowledge.embedding_model`), if any;
    /// an error when it cannot be called (its key's variable is not set).
    pub fn embedder(&self) -> std::result::Result<Option<CurrentEmbedder>, String> {
        let config = self.inner.live.get();
        let Some(m) = config.knowledge.embedder(&config.embedding_models) else {
            return Ok(None);
        };
        let mut slot = self.inner.embedder.lock().expect("embedder lock");
        if let Some((built_for, embedder)) = slot.as_ref()
            && built_for == m
        {
            return Ok(Some(CurrentEmbedder {
                model: m.model_name().to_string(),
                embedder: embedder.clone(),
                min_similarity: m.min_similarity,
            }));
        }
        let api_key = weft_config::api_key_from_env(
            &format!("embedding model {:?}", m.id),
            m.api_key_env.as_deref(),
        )?;
        let embedder = Embedder::new(EmbedderConfig {
            base_url: m
                .base_url
                .clone()
                .unwrap_or_else(|| "https://api.openai.com/v1".into()),
            api_key,
            model: m.model_name().to_string(),
            dimensions: m.dimensions,
            batch_size: m.batch_size as usize,
            // A short outage is ridden out in the request; a longer one
            // makes the ingestion job wait (and search fall back).
            retries: 2,
            timeout: Duration::from_secs(60),
        });
        *slot = Some((m.clone(), embedder.clone()));
        Ok(Some(CurrentEmbedder {
            model: m.model_name().to_string(),
            embedder,
            min_similarity: m.min_similarity,
        }))
    }

    /// The best `top_k` chunks of `bases` for `query`.
    pub async fn search(&self, bases: &[String], query: &str, top_k: u32) -> Result<Retrieved> {
        let store = &self.inner.store;
        let q = query.to_string();
        let terms = async {
            // Segmenting Chinese loads jieba's dictionary on first use.
            tokio::task::spawn_blocking(move || segment::query_terms(&q, MAX_QUERY_TERMS))
                .await
                .map_err(|e| StoreError::Other(format!("segmenting the query: {e}")))
        };
        let embedder = self.embedder();
        let vector = async {
            match &embedder {
                Ok(None) => Ok(None),
                Err(e) => Err(e.clone()),
                Ok(Some(current)) => {
                    let one = current
                        .embedder
                        .clone()
                        .without_retries(QUERY_EMBED_TIMEOUT);
                    match one.embed(&[query.to_string()]).await {
                        Ok(mut v) => Ok(v.pop().map(|v| (current.clone(), v))),
                        Err(e) => Err(format!("the embedding model did not answer ({e})")),
                    }
                }
            }
        };
        let (terms, vector) = tokio::join!(terms, vector);
        let terms = terms?;
        let pool = (top_k * CANDIDATES_PER_RESULT).max(20);
        let revisions = store.knowledge_revisions(bases).await?;
        let lexical = self.lexical(bases, &revisions, &terms, pool).await?;
        let (current, qv) = match vector {
            Ok(Some(found)) => found,
            Ok(None) => {
                return Ok(Retrieved {
                    hits: lexical.into_iter().take(top_k as usize).collect(),
                    mode: SearchMode::Lexical,
                    fallback: None,
                });
            }
            Err(why) => {
                tracing::warn!(error = %why, "knowledge search fell back to lexical");
                return Ok(Retrieved {
                    hits: lexical.into_iter().take(top_k as usize).collect(),
                    mode: SearchMode::Lexical,
                    fallback: Some(format!("{why}: lexical matches only")),
                });
            }
        };
        let mut nearest = if store.knowledge_vector_index().await? {
            store
                .search_knowledge_vectors_indexed(
                    bases,
                    &current.model,
                    &qv,
                    pool,
                    VectorScan::Index,
                )
                .await?
        } else {
            self.exact(&revisions, &current.model, qv, pool).await?
        };
        nearest.retain(|(_, similarity)| *similarity >= current.min_similarity);
        let fused = reciprocal_rank(&[
            lexical.iter().map(|h| h.chunk_id.clone()).collect(),
            nearest.iter().map(|(id, _)| id.clone()).collect(),
        ]);
        let fused: Vec<(String, f64)> = fused.into_iter().take(top_k as usize).collect();
        let mut known: HashMap<String, ChunkHit> = lexical
            .into_iter()
            .map(|h| (h.chunk_id.clone(), h))
            .collect();
        let missing: Vec<String> = fused
            .iter()
            .filter(|(id, _)| !known.contains_key(id))
            .map(|(id, _)| id.clone())
            .collect();
        for hit in store.knowledge_chunks_by_id(&missing).await? {
            known.insert(hit.chunk_id.clone(), hit);
        }
        let hits = fused
            .into_iter()
            // A chunk deleted since its vector was read is left out.
            .filter_map(|(id, score)| known.remove(&id).map(|h| ChunkHit { score, ..h }))
            .collect();
        Ok(Retrieved {
            hits,
            mode: SearchMode::Hybrid,
            fallback: None,
        })
    }

    /// The `limit` best chunks of `bases` for `terms`, by this process's
    /// lexical copies (`revisions`: the bases' current ones), or by the
    /// database's full-text index when a base is too large to copy.
    async fn lexical(
        &self,
        bases: &[String],
        revisions: &[(String, i64)],
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<ChunkHit>> {
        if terms.is_empty() || revisions.is_empty() {
            return Ok(Vec::new());
        }
        let mut indexes = Vec::with_capacity(revisions.len());
        for (base, revision) in revisions {
            match self.index_of(base, *revision).await? {
                Some(index) => indexes.push(index),
                None => {
                    return self
                        .inner
                        .store
                        .search_knowledge_lexical(bases, terms, limit)
                        .await;
                }
            }
        }
        let terms = terms.to_vec();
        let ranked = tokio::task::spawn_blocking(move || {
            let read: Vec<_> = indexes
                .iter()
                .map(|ix| ix.read().expect("lexical index lock"))
                .collect();
            let refs: Vec<&LexicalIndex> = read.iter().map(|g| &**g).collect();
            lexical::rank(&refs, &terms, limit as usize)
        })
        .await
        .map_err(|e| StoreError::Other(format!("ranking chunks: {e}")))?;
        let ids: Vec<String> = ranked.iter().map(|(id, _)| id.clone()).collect();
        let mut found: HashMap<String, ChunkHit> = self
            .inner
            .store
            .knowledge_chunks_by_id(&ids)
            .await?
            .into_iter()
            .map(|h| (h.chunk_id.clone(), h))
            .collect();
        Ok(ranked
            .into_iter()
            // A chunk written over since the copy was brought up to date is left out.
            .filter_map(|(id, score)| found.remove(&id).map(|h| ChunkHit { score, ..h }))
            .collect())
    }

    /// Exact search over this process's copies of the bases' vectors.
    async fn exact(
        &self,
        revisions: &[(String, i64)],
        model: &str,
        query: Vec<f32>,
        limit: u32,
    ) -> Result<Vec<(String, f64)>> {
        let dims = query.len();
        let mut copies = Vec::with_capacity(revisions.len());
        for (base, revision) in revisions {
            copies.push(self.copy_of(base, model, dims, *revision).await?);
        }
        tokio::task::spawn_blocking(move || nearest(&copies, &query, limit as usize))
            .await
            .map_err(|e| StoreError::Other(format!("scoring vectors: {e}")))
    }
}

/// The `limit` entries of `copies` with the highest dot product with `query`
/// (unit vectors: the cosine similarity), best first.
fn nearest(copies: &[Arc<BaseVectors>], query: &[f32], limit: usize) -> Vec<(String, f64)> {
    let mut scored: Vec<(f32, &str)> = Vec::new();
    for copy in copies {
        if copy.dims != query.len() {
            continue;
        }
        for (i, v) in copy.flat.chunks_exact(copy.dims).enumerate() {
            scored.push((dot(v, query), &copy.ids[i]));
        }
    }
    if scored.len() > limit && limit > 0 {
        scored.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
        scored.truncate(limit);
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(limit)
        .map(|(s, id)| (id.to_string(), f64::from(s)))
        .collect()
}

/// The dot product of `a` and `b` (of one length), summed in eight lanes. One
/// running sum must add in order, one dependent add after another, which the
/// compiler may not reorder for floats: 100,000 vectors of 256 took 30 ms that
/// way (`weft-loadtest knowledge`, `weft up`'s hybrid search at 100,000
/// chunks). Eight independent sums are one vector register's worth of adds.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let (a8, a_rest) = a.as_chunks::<8>();
    let (b8, b_rest) = b.as_chunks::<8>();
    let mut lanes = [0f32; 8];
    for (x, y) in a8.iter().zip(b8) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(super) fn copy(revision: i64, vectors: &[(&str, [f32; 2])]) -> Arc<BaseVectors> {
        Arc::new(BaseVectors {
            revision,
            dims: 2,
            ids: vectors.iter().map(|(id, _)| id.to_string()).collect(),
            flat: vectors.iter().flat_map(|(_, v)| *v).collect(),
        })
    }

    #[test]
    fn dot_products_of_any_length_match_the_plain_sum() {
        for n in [0, 1, 7, 8, 9, 31, 256, 257] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!(
                (dot(&a, &b) - plain).abs() < 1e-4,
                "{n}: {} {plain}",
                dot(&a, &b)
            );
        }
    }

    #[test]
    fn nearest_ranks_by_dot_product_across_bases() {
        let a = copy(1, &[("a1", [1.0, 0.0]), ("a2", [0.0, 1.0])]);
        let b = copy(1, &[("b1", [0.6, 0.8])]);
        let found = nearest(&[a, b], &[0.0, 1.0], 2);
        let ids: Vec<&str> = found.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["a2", "b1"]);
        assert!((found[1].1 - 0.8).abs() < 1e-6);
    }
}
