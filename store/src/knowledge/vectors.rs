//! Vectors of chunks (migration 0025), written with the chunks they belong to
//! and searched in one of two ways:
//!
//! - **pgvector** (Postgres with the `vector` extension, which `migrate`
//!   installs when the server has it): a column `embedding vector` and one HNSW
//!   index per vector size, on `embedding::vector(N)` for the rows of size N
//!   (a column of no fixed size cannot be indexed; a partial index per size
//!   can). The search orders by cosine distance in SQL with
//!   `hnsw.iterative_scan` on, so a filter on the bases does not starve the
//!   index scan of rows.
//! - **exact**, everywhere else (SQLite; Postgres without the extension): the
//!   unit vectors are stored as little-endian f32 bytes and a process keeps a
//!   base's vectors in memory (`weft_knowledge::retrieve`), reading them again
//!   when the base's `revision` moved. Every write to a base's chunks moves it,
//!   in the transaction that writes them.
//!
//! Rows carry the model's name and the vector size: vectors of another model
//! (the config changed) are never compared with the query's; those documents
//! are found by the lexical index alone until they are added again.

use super::{Result, Store, StoreError};
use crate::{Dialect, WriteTx, get_i64, get_str};

/// pgvector indexes vectors of at most this many dimensions (HNSW); larger
/// ones are still stored and compared exactly in SQL.
const HNSW_MAX_DIMS: usize = 2000;

/// A document's vectors, one per chunk in chunk order, of one model.
#[derive(Debug, Clone)]
pub struct ChunkVectors {
    /// The provider's model name ([`weft_config::EmbeddingModelConfig::model_name`]).
    pub model: String,
    /// Unit vectors, all of one size.
    pub vectors: Vec<Vec<f32>>,
}

/// How pgvector finds the nearest vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorScan {
    /// Through the HNSW index: approximate, what searches use.
    Index,
    /// Through the HNSW index with a candidate list of this length
    /// (pgvector's `hnsw.ef_search`, 1 to 1,000) instead of [`Index`]'s:
    /// what a longer walk buys, for `weft-loadtest knowledge`'s recall rows.
    ///
    /// [`Index`]: VectorScan::Index
    IndexWith(u32),
    /// Every row compared (the index is not used): exact, the reference an
    /// index's recall is measured against (the store's tests, `weft-loadtest
    /// knowledge`).
    Exact,
}

impl VectorScan {
    /// The HNSW walk's candidate list (pgvector's `hnsw.ef_search`) for a
    /// search of `limit` rows; `None` for exact search.
    pub fn candidates(self, limit: u32) -> Option<u32> {
        match self {
            VectorScan::Index => Some(ef_search(limit)),
            VectorScan::IndexWith(n) => Some(n.clamp(1, 1000)),
            VectorScan::Exact => None,
        }
    }
}

/// All the vectors of one base and model, as a process keeps them for exact
/// search: `ids[i]`'s vector is `flat[i * dims .. (i + 1) * dims]`.
#[derive(Debug, Clone, Default)]
pub struct BaseVectors {
    /// The base's revision read before the vectors (a write in between only
    /// makes the copy look older than it is).
    pub revision: i64,
    pub dims: usize,
    pub ids: Vec<String>,
    pub flat: Vec<f32>,
}

impl Store {
    /// Whether vectors are searched in the database (pgvector), found once.
    pub async fn knowledge_vector_index(&self) -> Result<bool> {
        if self.dialect != Dialect::Postgres {
            return Ok(false);
        }
        let found = self
            .vector_index
            .get_or_try_init(|| async {
                let row = sqlx::query(
                    "select count(*) as n from information_schema.columns
                     where table_schema = current_schema() and table_name = 'knowledge_embeddings'
                       and column_name = 'embedding'",
                )
                .fetch_one(&self.pool)
                .await?;
                Ok::<_, StoreError>(get_i64(&row, "n")? == 1)
            })
            .await?;
        Ok(*found)
    }

    /// Postgres: installs pgvector and its column when the server has the
    /// extension (it is optional: without it vectors are searched exactly).
    pub(crate) async fn migrate_vectors(&self) -> Result<()> {
        let available =
            sqlx::query("select count(*) as n from pg_available_extensions where name = 'vector'")
                .fetch_one(&self.pool)
                .await?;
        if get_i64(&available, "n")? == 0 {
            return Ok(());
        }
        // Two processes migrating at once may race on the extension; the one
        // that loses finds it made.
        if let Err(e) = sqlx::query("create extension if not exists vector")
            .execute(&self.pool)
            .await
        {
            tracing::warn!(error = %e, "pgvector is available but could not be installed: vectors are searched without an index");
        }
        let installed =
            sqlx::query("select count(*) as n from pg_extension where extname = 'vector'")
                .fetch_one(&self.pool)
                .await?;
        if get_i64(&installed, "n")? == 1 {
            sqlx::query(
                "alter table knowledge_embeddings add column if not exists embedding vector",
            )
            .execute(&self.pool)
            .await?;
        }
        Ok(())
    }

    /// pgvector: the HNSW index for vectors of `dims`, made on the first
    /// write of that size (once per process; `if not exists` for the others).
    ///
    /// Built denser than pgvector's defaults (`m` 16, `ef_construction` 64):
    /// `m` 32 and `ef_construction` 200. On `weft-loadtest knowledge`'s
    /// 100,000 chunks, whose vectors are nearly tied (the 20th and the 40th
    /// nearest of a query within 0.01 of each other), the defaults found
    /// 30–59 % of the exact nearest 20 with the walk searches use, and at
    /// most 74–95 % with pgvector's longest walk; this graph finds 63–82 % and
    /// 97–100 % (BENCHMARKS.md, "Knowledge bases"). Inserts cost more (the
    /// graph's edges double); searches a few milliseconds. An index made
    /// before keeps its own settings until it is dropped (the next write
    /// makes it again): `drop index knowledge_embeddings_hnsw_<dims>`.
    async fn ensure_hnsw(&self, dims: usize) -> Result<()> {
        if dims > HNSW_MAX_DIMS
            || !self
                .hnsw_sizes
                .lock()
                .expect("hnsw sizes lock")
                .insert(dims)
        {
            return Ok(());
        }
        let made = sqlx::query(sqlx::AssertSqlSafe(format!(
            "create index if not exists knowledge_embeddings_hnsw_{dims} on knowledge_embeddings
             using hnsw ((embedding::vector({dims})) vector_cosine_ops)
             with (m = 32, ef_construction = 200) where dims = {dims}"
        )))
        .execute(&self.pool)
        .await;
        if let Err(e) = made {
            self.hnsw_sizes
                .lock()
                .expect("hnsw sizes lock")
                .remove(&dims);
            return Err(e.into());
        }
        Ok(())
    }

    /// Before a write transaction: what writing `vectors` needs first.
    pub(crate) async fn prepare_vectors(&self, vectors: Option<&ChunkVectors>) -> Result<()> {
        if let Some(v) = vectors
            && let Some(first) = v.vectors.first()
            && self.knowledge_vector_index().await?
        {
            self.ensure_hnsw(first.len()).await?;
        }
        Ok(())
    }

    /// Writes the vectors of chunks `ids` (same order) in `tx`.
    pub(crate) async fn insert_vectors(
        &self,
        tx: &mut WriteTx,
        base_id: &str,
        ids: &[String],
        vectors: &ChunkVectors,
    ) -> Result<()> {
        /// Rows per insert: 5 parameters each.
        const BATCH: usize = 200;
        if ids.len() != vectors.vectors.len() {
            return Err(StoreError::Other(format!(
                "{} vectors for {} chunks",
                vectors.vectors.len(),
                ids.len()
            )));
        }
        let indexed = self.knowledge_vector_index().await?;
        let column = if indexed { "embedding" } else { "vector" };
        let cast = if indexed { "::vector" } else { "" };
        let pairs: Vec<(&String, &Vec<f32>)> = ids.iter().zip(&vectors.vectors).collect();
        for batch in pairs.chunks(BATCH) {
            let values = (0..batch.len())
                .map(|i| {
                    let p = i * 5;
                    format!(
                        "(${}, ${}, ${}, ${}, ${}{cast})",
                        p + 1,
                        p + 2,
                        p + 3,
                        p + 4,
                        p + 5
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "insert into knowledge_embeddings (chunk_id, base_id, model, dims, {column}) values {values}"
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (id, v) in batch {
                query = query
                    .bind(*id)
                    .bind(base_id)
                    .bind(&vectors.model)
                    .bind(v.len() as i64);
                query = if indexed {
                    query.bind(pgvector_text(v))
                } else {
                    query.bind(to_bytes(v))
                };
            }
            query.execute(&mut **tx).await?;
        }
        Ok(())
    }

    /// The revision of each of `bases` that exists.
    pub async fn knowledge_revisions(&self, bases: &[String]) -> Result<Vec<(String, i64)>> {
        if bases.is_empty() {
            return Ok(Vec::new());
        }
        let list = (1..=bases.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select id, revision from knowledge_bases where id in ({list})"
        )));
        for base in bases {
            query = query.bind(base);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter()
            .map(|r| Ok((get_str(r, "id")?, get_i64(r, "revision")?)))
            .collect()
    }

    /// How many chunks of `base` have a vector of `model`.
    pub async fn knowledge_vector_count(&self, base: &str, model: &str) -> Result<u64> {
        let row = sqlx::query(
            "select count(*) as n from knowledge_embeddings where base_id = $1 and model = $2",
        )
        .bind(base)
        .bind(model)
        .fetch_one(&self.pool)
        .await?;
        Ok(get_i64(&row, "n")? as u64)
    }

    /// Every stored vector of `base` made by `model` with `dims` dimensions
    /// (exact search's copy), with the base's revision read first.
    pub async fn knowledge_vectors(
        &self,
        base: &str,
        model: &str,
        dims: usize,
    ) -> Result<BaseVectors> {
        let revision = self
            .knowledge_revisions(&[base.to_string()])
            .await?
            .first()
            .map(|(_, r)| *r)
            .ok_or(StoreError::NotFound)?;
        let rows = sqlx::query(
            "select chunk_id, vector from knowledge_embeddings
             where base_id = $1 and model = $2 and dims = $3 and vector is not null",
        )
        .bind(base)
        .bind(model)
        .bind(dims as i64)
        .fetch_all(&self.pool)
        .await?;
        let mut out = BaseVectors {
            revision,
            dims,
            ids: Vec::with_capacity(rows.len()),
            flat: Vec::with_capacity(rows.len() * dims),
        };
        for row in &rows {
            let bytes: Vec<u8> = sqlx::Row::try_get(row, "vector")?;
            if bytes.len() != dims * 4 {
                continue;
            }
            out.ids.push(get_str(row, "chunk_id")?);
            out.flat.extend(
                bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        Ok(out)
    }

    /// pgvector: the `limit` chunks of `bases` nearest to `query` (a unit
    /// vector of `model`), nearest first, with their cosine similarity.
    pub async fn search_knowledge_vectors_indexed(
        &self,
        bases: &[String],
        model: &str,
        query: &[f32],
        limit: u32,
        scan: VectorScan,
    ) -> Result<Vec<(String, f64)>> {
        if bases.is_empty() || query.is_empty() {
            return Ok(Vec::new());
        }
        let dims = query.len();
        let list = (0..bases.len())
            .map(|i| format!("${}", i + 4))
            .collect::<Vec<_>>()
            .join(", ");
        // The size is written into the text (a number, not input): the
        // planner must see `dims = N` to use the partial index of that size.
        let distance = format!("e.embedding::vector({dims}) <=> $1::vector({dims})");
        let sql = format!(
            "select e.chunk_id, cast(1 - ({distance}) as float8) as score
             from knowledge_embeddings e
             where e.dims = {dims} and e.model = $2 and e.base_id in ({list})
             order by {distance} limit $3"
        );
        let mut tx = self.pool.begin().await?;
        let settings: Vec<String> = match scan.candidates(limit) {
            Some(candidates) => vec![
                // pgvector ≥ 0.8: keep scanning the index until `limit` rows
                // pass the filter (an HNSW scan otherwise stops at
                // `ef_search` candidates).
                "set local hnsw.iterative_scan = relaxed_order".into(),
                // The candidate list of the graph walk: pgvector's 40 missed
                // the nearest chunk (cosine 0.52, where the next were 0.44)
                // in `weft-loadtest knowledge`'s 6,000 chunks of one
                // pseudo-language, whose vectors are alike (0.43 between
                // unrelated chunks); 100 found it first. Longer walks find
                // more of the exact nearest at a cost: the bench's recall rows
                // give each of 100 to 1,000 with its time.
                format!("set local hnsw.ef_search = {candidates}"),
            ],
            None => vec![
                "set local enable_indexscan = off".into(),
                "set local enable_bitmapscan = off".into(),
            ],
        };
        for setting in settings {
            sqlx::query(sqlx::AssertSqlSafe(setting))
                .execute(&mut *tx)
                .await?;
        }
        let mut query_sql = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(pgvector_text(query))
            .bind(model)
            .bind(i64::from(limit));
        for base in bases {
            query_sql = query_sql.bind(base);
        }
        let rows = query_sql.fetch_all(&mut *tx).await?;
        tx.commit().await?;
        let mut out = rows
            .iter()
            .map(|r| {
                Ok((
                    get_str(r, "chunk_id")?,
                    sqlx::Row::try_get::<f64, _>(r, "score")?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        // `relaxed_order` may return them slightly out of order.
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        Ok(out)
    }
}

/// pgvector's `hnsw.ef_search` for a search of `limit` rows: five candidates
/// a row, at least 100 and at most pgvector's 1,000.
fn ef_search(limit: u32) -> u32 {
    limit.saturating_mul(5).clamp(100, 1000)
}

/// Moves `base`'s revision (its chunks or vectors changed), in `tx`.
pub(super) async fn bump_revision(tx: &mut WriteTx, base_id: &str) -> Result<()> {
    sqlx::query("update knowledge_bases set revision = revision + 1 where id = $1")
        .bind(base_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// `[0.1,0.2,…]`: pgvector's text form.
fn pgvector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 10 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&x.to_string());
    }
    s.push(']');
    s
}

fn to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
