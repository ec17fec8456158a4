//! Search: the lexical index matched with any of the query's words, and a
//! hit's neighbours (see the module doc of `knowledge` for the ranking).

use sqlx::any::AnyRow;

use super::ChunkHit;
use crate::{AuthUser, Dialect, Result, Store, StoreError, get_i64, get_opt_i64, get_str};

/// Chunks with their document's name, unranked (`score` 0), as [`hit`] reads
/// them; the caller adds `where …`.
const CHUNKS: &str =
    "select c.id, c.document_id, d.name as document_name, c.base_id, c.ord, c.text,
        c.heading, c.page, cast(0 as float8) as score
     from knowledge_chunks c join knowledge_documents d on d.id = c.document_id";

impl Store {
    /// The chunks of `bases` that match any of `terms` (segmented words),
    /// best first, at most `limit`.
    pub async fn search_knowledge_lexical(
        &self,
        bases: &[String],
        terms: &[String],
        limit: u32,
    ) -> Result<Vec<ChunkHit>> {
        if bases.is_empty() || terms.is_empty() {
            return Ok(Vec::new());
        }
        // `base_id in ($3, $4, …)`: the Any driver binds no arrays.
        let list = (0..bases.len())
            .map(|i| format!("${}", i + 3))
            .collect::<Vec<_>>()
            .join(", ");
        let (sql, query_text) = match self.dialect {
            // Both dialects rank in a subquery that carries only a chunk's key
            // and score, and read the text of the `limit` best alone: sorting
            // every match with its text (thousands in a large base) cost more
            // than ranking them. On SQLite, `cross join` makes the full-text
            // index the outer loop (its matches, then each one's chunk); left
            // to itself the planner may walk the base's chunks and probe the
            // index once per chunk — 25 ms per query word at 3,000 chunks,
            // growing with the base, against 2–7 ms this way.
            Dialect::Sqlite => (
                format!(
                    "select c.id, c.document_id, d.name as document_name, c.base_id, c.ord, c.text,
                            c.heading, c.page, top.score
                     from (select knowledge_fts.rowid as seq, -bm25(knowledge_fts) as score
                           from knowledge_fts
                           cross join knowledge_chunks k on k.seq = knowledge_fts.rowid
                           where knowledge_fts match $1 and k.base_id in ({list})
                           order by bm25(knowledge_fts) limit $2) top
                     join knowledge_chunks c on c.seq = top.seq
                     join knowledge_documents d on d.id = c.document_id
                     order by top.score desc"
                ),
                // Each word quoted (FTS5 syntax would read `and`, `or`, `*`).
                terms
                    .iter()
                    .map(|t| format!("\"{}\"", t.replace('"', "")))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            ),
            Dialect::Postgres => {
                // Postgres ranks by frequency and proximity but knows nothing of
                // how rare a word is (BM25's IDF): a chunk that repeats one
                // common query word would tie with one that has them all. So
                // the score is first how many of the query's words a chunk has,
                // then `ts_rank_cd` (below 1) among those with as many.
                let first_term = 3 + bases.len();
                let coverage = (0..terms.len())
                    .map(|i| {
                        format!(
                            "(case when c.lexical_tsv @@ to_tsquery('simple', ${}) then 1 else 0 end)",
                            first_term + i
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" + ");
                (
                    format!(
                        "select c.id, c.document_id, d.name as document_name, c.base_id, c.ord, c.text,
                                c.heading, c.page, top.score
                         from (select c.id,
                                      cast({coverage} as float8)
                                        + cast(ts_rank_cd(c.lexical_tsv, to_tsquery('simple', $1), 32) as float8) as score
                               from knowledge_chunks c
                               where c.lexical_tsv @@ to_tsquery('simple', $1) and c.base_id in ({list})
                               order by score desc, c.id limit $2) top
                         join knowledge_chunks c on c.id = top.id
                         join knowledge_documents d on d.id = c.document_id
                         order by top.score desc, c.id"
                    ),
                    terms.iter().map(|t| pg_lexeme(t)).collect::<Vec<_>>().join(" | "),
                )
            }
        };
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(query_text)
            .bind(i64::from(limit));
        for base in bases {
            query = query.bind(base);
        }
        if self.dialect == Dialect::Postgres {
            for term in terms {
                query = query.bind(pg_lexeme(term));
            }
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(hit).collect()
    }

    /// The chunks with `ord` in `from..=to` of each `(document, from, to)`,
    /// in one query (hits' neighbours), by document and place.
    pub async fn knowledge_chunks_between(
        &self,
        ranges: &[(String, i64, i64)],
    ) -> Result<Vec<ChunkHit>> {
        if ranges.is_empty() {
            return Ok(Vec::new());
        }
        let clauses = (0..ranges.len())
            .map(|i| {
                let p = 3 * i;
                format!(
                    "(c.document_id = ${} and c.ord between ${} and ${})",
                    p + 1,
                    p + 2,
                    p + 3
                )
            })
            .collect::<Vec<_>>()
            .join(" or ");
        let sql = format!("{CHUNKS} where {clauses} order by c.document_id, c.ord");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (document, from, to) in ranges {
            query = query.bind(document).bind(*from).bind(*to);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(hit).collect()
    }

    /// The chunks with these ids that still exist (an answer's citations; a
    /// document deleted since is left out), in no particular order.
    pub async fn knowledge_chunks_by_id(&self, ids: &[String]) -> Result<Vec<ChunkHit>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = (1..=ids.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!("{CHUNKS} where c.id in ({list})");
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for id in ids {
            query = query.bind(id);
        }
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(hit).collect()
    }
}

/// A document of a base with chunks, as the in-process lexical index
/// (`weft_knowledge::lexical`) tells its versions apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedDocument {
    pub id: String,
    /// Its first chunk's id: chunks are written whole with new ids, so a new
    /// one means the document's chunks were written again.
    pub first_chunk: String,
}

/// A chunk's words for the in-process lexical index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedChunk {
    pub id: String,
    pub document_id: String,
    pub ord: i64,
    /// Segmented words, space-separated (`knowledge_chunks.lexical`).
    pub lexical: String,
}

impl Store {
    /// Every document of `base` that has chunks, one row each (its first
    /// chunk by the `(document_id, ord)` index).
    pub async fn knowledge_indexed_documents(&self, base: &str) -> Result<Vec<IndexedDocument>> {
        let rows = sqlx::query(
            "select d.id, c.id as first_chunk
             from knowledge_documents d
             join knowledge_chunks c on c.document_id = d.id and c.ord = 0
             where d.base_id = $1",
        )
        .bind(base)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(IndexedDocument {
                    id: get_str(r, "id")?,
                    first_chunk: get_str(r, "first_chunk")?,
                })
            })
            .collect()
    }

    /// The words of every chunk of `documents`, read in batches.
    pub async fn knowledge_indexed_chunks(
        &self,
        documents: &[String],
    ) -> Result<Vec<IndexedChunk>> {
        /// Ids per query, far under both databases' parameter limits.
        const BATCH: usize = 500;
        let mut out = Vec::new();
        for batch in documents.chunks(BATCH) {
            let list = (1..=batch.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "select id, document_id, ord, lexical from knowledge_chunks where document_id in ({list})"
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for document in batch {
                query = query.bind(document);
            }
            for row in query.fetch_all(&self.pool).await? {
                out.push(IndexedChunk {
                    id: get_str(&row, "id")?,
                    document_id: get_str(&row, "document_id")?,
                    ord: get_i64(&row, "ord")?,
                    lexical: get_str(&row, "lexical")?,
                });
            }
        }
        Ok(out)
    }
}

/// Which chunks of a document to read.
#[derive(Debug, Clone, Copy)]
pub enum ChunkWindow<'a> {
    /// `limit` chunks centred on this one.
    Around(&'a str),
    /// The chunks after this `ord` (-1: from the start).
    After(i64),
}

impl Store {
    /// A stretch of document `doc`'s chunks in order, as `user` may read it
    /// (404 for a base they cannot open), and the document's chunk count.
    pub async fn knowledge_document_chunks(
        &self,
        user: &AuthUser,
        base: &str,
        doc: &str,
        window: ChunkWindow<'_>,
        limit: u32,
    ) -> Result<(Vec<ChunkHit>, u64)> {
        let document = self.knowledge_document(user, base, doc).await?;
        let from = match window {
            ChunkWindow::After(ord) => ord.saturating_add(1),
            ChunkWindow::Around(chunk) => {
                let row = sqlx::query(
                    "select ord from knowledge_chunks where id = $1 and document_id = $2",
                )
                .bind(chunk)
                .bind(doc)
                .fetch_optional(&self.pool)
                .await?
                .ok_or(StoreError::NotFound)?;
                (get_i64(&row, "ord")? - i64::from(limit / 2)).max(0)
            }
        };
        let sql =
            format!("{CHUNKS} where c.document_id = $1 and c.ord >= $2 order by c.ord limit $3");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(doc)
            .bind(from)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        let chunks = rows.iter().map(hit).collect::<Result<Vec<_>>>()?;
        Ok((chunks, document.chunks.max(0) as u64))
    }
}

/// A word as a tsquery lexeme. Words are letters and digits only
/// (`segment::words`); quoted anyway.
fn pg_lexeme(term: &str) -> String {
    format!("'{}'", term.replace(['\'', '\\'], ""))
}

fn hit(row: &AnyRow) -> Result<ChunkHit> {
    Ok(ChunkHit {
        chunk_id: get_str(row, "id")?,
        document_id: get_str(row, "document_id")?,
        document_name: get_str(row, "document_name")?,
        base_id: get_str(row, "base_id")?,
        ord: get_i64(row, "ord")?,
        text: get_str(row, "text")?,
        heading: get_str(row, "heading")?,
        page: get_opt_i64(row, "page")?.map(|p| p as u32),
        score: sqlx::Row::try_get::<f64, _>(row, "score")?,
    })
}
