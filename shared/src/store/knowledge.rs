//! Knowledge bases (issue 25, migration 0020): bases, their documents and the
//! chunks a search returns.
//!
//! **Who sees what** is decided here, once: a base is visible to its owner and,
//! when `shared`, to every user; it is changed by its owner or an admin.
//! Everything that names a base takes the caller ([`AuthUser`]) and answers
//! [`StoreError::NotFound`] for a base the caller may not see — the same answer
//! as for one that does not exist, so ids of others' private bases leak nothing.
//!
//! **A document is its bytes**: unique by `(base, sha256)`, so adding the same
//! file twice gives the first document back. Its row and its ingestion job
//! (`knowledge.ingest`, keyed by the document id) are written in one
//! transaction; deleting the document (or its base) cancels the job in the
//! transaction that deletes the rows, so a worker still ingesting it loses its
//! lease at the next renewal, and its final write finds no document.
//!
//! **Chunks are replaced whole**: the ingestion job writes all of a document's
//! chunks, its chunk count and `ready` in one transaction that first deletes
//! whatever an earlier, interrupted attempt left, so a worker killed mid-ingest
//! and the one that takes over never leave duplicates.
//!
//! **The lexical index** is SQLite's FTS5 (`knowledge_fts`, kept in step by
//! triggers) or Postgres' full text (`lexical_tsv`, a generated column with a
//! GIN index), both over the segmented words `weft-knowledge` makes, matched
//! with any of the query's words and ranked by BM25 (SQLite) or by how many
//! of the query's words a chunk has, then `ts_rank_cd` (Postgres).

use sqlx::any::AnyRow;

use super::{
    AuthUser, Conflict, Dialect, Result, Store, StoreError, get_enum, get_i64, get_opt_i64,
    get_opt_str, get_str,
};
use crate::api::{DocumentStatus, KnowledgeVisibility};
pub use crate::config::valid_base_name;
use crate::ids::UserId;
use crate::job::{IngestDocument, JobKind};
use crate::time::now_ms;

/// A base as stored, with its owner's name and its number of documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeBase {
    pub id: String,
    pub name: String,
    pub description: String,
    pub owner: UserId,
    pub owner_name: String,
    pub visibility: KnowledgeVisibility,
    pub documents: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

impl KnowledgeBase {
    /// Whether `user` may change it.
    pub fn editable_by(&self, user: &AuthUser) -> bool {
        self.owner == user.id || user.is_admin()
    }
}

/// What may change in a base.
#[derive(Debug, Clone, Default)]
pub struct BaseChange<'a> {
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
    pub visibility: Option<KnowledgeVisibility>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnowledgeDocument {
    pub id: String,
    pub base_id: String,
    pub name: String,
    pub mime: String,
    pub bytes: i64,
    pub sha256: String,
    pub status: DocumentStatus,
    pub error: Option<String>,
    pub chunks: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// A document to add: its bytes are already stored (and registered) by hash.
#[derive(Debug, Clone)]
pub struct NewDocument<'a> {
    pub name: &'a str,
    pub mime: &'a str,
    pub bytes: i64,
    pub sha256: &'a str,
}

/// A chunk the ingestion job made.
#[derive(Debug, Clone)]
pub struct NewChunk {
    pub text: String,
    pub heading: String,
    pub page: Option<u32>,
    pub tokens: u64,
    /// The words of the lexical index (`weft_knowledge::segment::lexical`).
    pub lexical: String,
}

/// A chunk as a search finds it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkHit {
    pub chunk_id: String,
    pub document_id: String,
    pub document_name: String,
    pub base_id: String,
    pub ord: i64,
    pub text: String,
    pub heading: String,
    pub page: Option<u32>,
    /// Higher is better, within one search.
    pub score: f64,
}

impl ChunkHit {
    /// The page for PDFs, else the heading path.
    pub fn position(&self) -> String {
        match self.page {
            Some(page) => format!("page {page}"),
            None => self.heading.clone(),
        }
    }
}

const BASE_COLUMNS: &str = "b.id, b.name, b.description, b.owner_id, u.username as owner_name, \
     b.visibility, b.created_at, b.updated_at, \
     (select count(*) from knowledge_documents d where d.base_id = b.id) as documents";

const DOCUMENT_COLUMNS: &str =
    "id, base_id, name, mime, bytes, sha256, status, error, chunks, created_at, updated_at";

fn base(row: &AnyRow) -> Result<KnowledgeBase> {
    Ok(KnowledgeBase {
        id: get_str(row, "id")?,
        name: get_str(row, "name")?,
        description: get_str(row, "description")?,
        owner: UserId(get_str(row, "owner_id")?),
        owner_name: get_str(row, "owner_name")?,
        visibility: get_enum(row, "visibility")?,
        documents: get_i64(row, "documents")?,
        created_at: get_i64(row, "created_at")?,
        updated_at: get_i64(row, "updated_at")?,
    })
}

fn document(row: &AnyRow) -> Result<KnowledgeDocument> {
    Ok(KnowledgeDocument {
        id: get_str(row, "id")?,
        base_id: get_str(row, "base_id")?,
        name: get_str(row, "name")?,
        mime: get_str(row, "mime")?,
        bytes: get_i64(row, "bytes")?,
        sha256: get_str(row, "sha256")?,
        status: get_enum(row, "status")?,
        error: get_opt_str(row, "error")?,
        chunks: get_i64(row, "chunks")?,
        created_at: get_i64(row, "created_at")?,
        updated_at: get_i64(row, "updated_at")?,
    })
}

impl Store {
    /// Makes a base owned by `owner`.
    pub async fn create_knowledge_base(
        &self,
        owner: &UserId,
        name: &str,
        description: &str,
        visibility: KnowledgeVisibility,
    ) -> Result<String> {
        if !valid_base_name(name) {
            return Err(StoreError::Invalid(format!(
                "{name:?} is not a base name: 1-64 letters, digits, spaces, '-', '_' or '.'"
            )));
        }
        let id = format!("kb_{}", uuid::Uuid::now_v7().simple());
        let now = now_ms();
        let _gate = self.write_gate().await;
        sqlx::query(
            "insert into knowledge_bases (id, name, description, owner_id, visibility, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, $6)",
        )
        .bind(&id)
        .bind(name)
        .bind(description)
        .bind(&owner.0)
        .bind(visibility.as_str())
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(|e| StoreError::unique(e, Conflict::KnowledgeBaseExists))?;
        Ok(id)
    }

    /// The bases `user` may search: their own and every shared one, by name.
    pub async fn knowledge_bases(&self, user: &AuthUser) -> Result<Vec<KnowledgeBase>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {BASE_COLUMNS} from knowledge_bases b join users u on u.id = b.owner_id
             where b.owner_id = $1 or b.visibility = 'shared'
             order by b.name, b.created_at"
        )))
        .bind(&user.id.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(base).collect()
    }

    /// The base `id`, if `user` may see it.
    pub async fn knowledge_base(&self, user: &AuthUser, id: &str) -> Result<KnowledgeBase> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {BASE_COLUMNS} from knowledge_bases b join users u on u.id = b.owner_id
             where b.id = $1 and (b.owner_id = $2 or b.visibility = 'shared')"
        )))
        .bind(id)
        .bind(&user.id.0)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(base)
            .transpose()?
            .ok_or(StoreError::NotFound)
    }

    /// The base `user` means by `name`: their own of that name, else a shared
    /// one (the oldest, when several owners share one name).
    pub async fn knowledge_base_named(&self, user: &AuthUser, name: &str) -> Result<KnowledgeBase> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {BASE_COLUMNS} from knowledge_bases b join users u on u.id = b.owner_id
             where b.name = $1 and (b.owner_id = $2 or b.visibility = 'shared')
             order by case when b.owner_id = $2 then 0 else 1 end, b.created_at
             limit 1"
        )))
        .bind(name)
        .bind(&user.id.0)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref()
            .map(base)
            .transpose()?
            .ok_or(StoreError::NotFound)
    }

    /// The base `id` if `user` may change it: `NotFound` when they may not
    /// see it, `Forbidden` when they may only search it.
    async fn editable_base(&self, user: &AuthUser, id: &str) -> Result<KnowledgeBase> {
        let base = self.knowledge_base(user, id).await?;
        if !base.editable_by(user) {
            return Err(StoreError::Forbidden);
        }
        Ok(base)
    }

    pub async fn update_knowledge_base(
        &self,
        user: &AuthUser,
        id: &str,
        change: &BaseChange<'_>,
    ) -> Result<KnowledgeBase> {
        let before = self.editable_base(user, id).await?;
        if let Some(name) = change.name
            && !valid_base_name(name)
        {
            return Err(StoreError::Invalid(format!("{name:?} is not a base name")));
        }
        {
            let _gate = self.write_gate().await;
            sqlx::query(
                "update knowledge_bases set name = $1, description = $2, visibility = $3, updated_at = $4
                 where id = $5",
            )
            .bind(change.name.unwrap_or(&before.name))
            .bind(change.description.unwrap_or(&before.description))
            .bind(change.visibility.unwrap_or(before.visibility).as_str())
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| StoreError::unique(e, Conflict::KnowledgeBaseExists))?;
        }
        self.knowledge_base(user, id).await
    }

    /// Deletes the base, its documents and chunks, and cancels their
    /// ingestion. The documents' bytes go with the blob sweep.
    pub async fn delete_knowledge_base(&self, user: &AuthUser, id: &str) -> Result<()> {
        self.editable_base(user, id).await?;
        let mut tx = self.begin().await?;
        cancel_ingestion(
            &mut tx,
            "key in (select id from knowledge_documents where base_id = $2)",
            id,
        )
        .await?;
        sqlx::query("delete from knowledge_bases where id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Adds a document to a base `user` may change and queues its ingestion;
    /// the same bytes already there give that document back (`false`).
    pub async fn add_knowledge_document(
        &self,
        user: &AuthUser,
        base_id: &str,
        doc: &NewDocument<'_>,
    ) -> Result<(KnowledgeDocument, bool)> {
        self.editable_base(user, base_id).await?;
        let id = format!("doc_{}", uuid::Uuid::now_v7().simple());
        let now = now_ms();
        let mut tx = self.begin().await?;
        let inserted = sqlx::query(
            "insert into knowledge_documents (id, base_id, name, mime, bytes, sha256, status, created_at, updated_at)
             values ($1, $2, $3, $4, $5, $6, 'queued', $7, $7)
             on conflict (base_id, sha256) do nothing",
        )
        .bind(&id)
        .bind(base_id)
        .bind(doc.name)
        .bind(doc.mime)
        .bind(doc.bytes)
        .bind(doc.sha256)
        .bind(now)
        .execute(&mut **tx)
        .await?;
        let created = inserted.rows_affected() == 1;
        if created {
            let job = IngestDocument {
                document_id: id.clone(),
            };
            self.insert_kind_job(&mut tx, &job, 0).await?;
            sqlx::query("update knowledge_bases set updated_at = $1 where id = $2")
                .bind(now)
                .bind(base_id)
                .execute(&mut **tx)
                .await?;
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DOCUMENT_COLUMNS} from knowledge_documents where base_id = $1 and sha256 = $2"
        )))
        .bind(base_id)
        .bind(doc.sha256)
        .fetch_one(&mut **tx)
        .await?;
        tx.commit().await?;
        Ok((document(&row)?, created))
    }

    /// The documents of a base `user` may see, newest first.
    pub async fn knowledge_documents(
        &self,
        user: &AuthUser,
        base_id: &str,
    ) -> Result<Vec<KnowledgeDocument>> {
        self.knowledge_base(user, base_id).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DOCUMENT_COLUMNS} from knowledge_documents where base_id = $1
             order by created_at desc, id desc"
        )))
        .bind(base_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(document).collect()
    }

    pub async fn knowledge_document(
        &self,
        user: &AuthUser,
        base_id: &str,
        doc_id: &str,
    ) -> Result<KnowledgeDocument> {
        self.knowledge_base(user, base_id).await?;
        self.knowledge_document_unscoped(doc_id)
            .await?
            .filter(|d| d.base_id == base_id)
            .ok_or(StoreError::NotFound)
    }

    /// The document `id`, whoever asks (the ingestion job).
    pub async fn knowledge_document_unscoped(&self, id: &str) -> Result<Option<KnowledgeDocument>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DOCUMENT_COLUMNS} from knowledge_documents where id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(document).transpose()
    }

    /// Deletes a document of a base `user` may change, with its chunks, and
    /// cancels its ingestion.
    pub async fn delete_knowledge_document(
        &self,
        user: &AuthUser,
        base_id: &str,
        doc_id: &str,
    ) -> Result<()> {
        self.editable_base(user, base_id).await?;
        let mut tx = self.begin().await?;
        let gone = sqlx::query("delete from knowledge_documents where id = $1 and base_id = $2")
            .bind(doc_id)
            .bind(base_id)
            .execute(&mut **tx)
            .await?;
        if gone.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        cancel_ingestion(&mut tx, "key = $2", doc_id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The ingestion job started (or resumed) on the document: `processing`,
    /// with the last attempt's error, if any, kept for the page to show.
    pub async fn knowledge_document_processing(&self, id: &str) -> Result<bool> {
        let _gate = self.write_gate().await;
        let done = sqlx::query(
            "update knowledge_documents set status = 'processing', updated_at = $1
             where id = $2 and status in ('queued', 'processing')",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A try that will be retried failed: its error shows while it waits.
    pub async fn knowledge_document_retrying(&self, id: &str, error: &str) -> Result<()> {
        let _gate = self.write_gate().await;
        sqlx::query(
            "update knowledge_documents set error = $1, updated_at = $2
             where id = $3 and status = 'processing'",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The document cannot be ingested: `failed` with `error`, no chunks.
    pub async fn knowledge_document_failed(&self, id: &str, error: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("delete from knowledge_chunks where document_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        sqlx::query(
            "update knowledge_documents set status = 'failed', error = $1, chunks = 0, updated_at = $2
             where id = $3",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(&mut **tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores all of a document's chunks and marks it `ready`, replacing
    /// whatever an interrupted attempt left. `NotFound` when the document was
    /// deleted meanwhile (nothing is written).
    pub async fn replace_knowledge_chunks(&self, id: &str, chunks: &[NewChunk]) -> Result<()> {
        /// Rows per insert: 9 parameters each, far under both databases' limits.
        const BATCH: usize = 100;
        let mut tx = self.begin().await?;
        let doc = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select base_id from knowledge_documents where id = $1{}",
            self.lock_suffix()
        )))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
        let Some(doc) = doc else {
            return Err(StoreError::NotFound);
        };
        let base_id = get_str(&doc, "base_id")?;
        sqlx::query("delete from knowledge_chunks where document_id = $1")
            .bind(id)
            .execute(&mut **tx)
            .await?;
        for (batch_no, batch) in chunks.chunks(BATCH).enumerate() {
            let values = (0..batch.len())
                .map(|i| {
                    let p = i * 9;
                    format!(
                        "(${}, ${}, ${}, ${}, ${}, ${}, ${}, ${}, ${})",
                        p + 1,
                        p + 2,
                        p + 3,
                        p + 4,
                        p + 5,
                        p + 6,
                        p + 7,
                        p + 8,
                        p + 9
                    )
                })
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "insert into knowledge_chunks (id, document_id, base_id, ord, text, heading, page, tokens, lexical)
                 values {values}"
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            for (i, chunk) in batch.iter().enumerate() {
                query = query
                    .bind(format!("ch_{}", uuid::Uuid::now_v7().simple()))
                    .bind(id)
                    .bind(&base_id)
                    .bind((batch_no * BATCH + i) as i64)
                    .bind(&chunk.text)
                    .bind(&chunk.heading)
                    .bind(chunk.page.map(i64::from))
                    .bind(chunk.tokens as i64)
                    .bind(&chunk.lexical);
            }
            query.execute(&mut **tx).await?;
        }
        sqlx::query(
            "update knowledge_documents set status = 'ready', error = null, chunks = $1, updated_at = $2
             where id = $3",
        )
        .bind(chunks.len() as i64)
        .bind(now_ms())
        .bind(id)
        .execute(&mut **tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

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
            Dialect::Sqlite => (
                format!(
                    "select c.id, c.document_id, d.name as document_name, c.base_id, c.ord, c.text,
                            c.heading, c.page, -bm25(knowledge_fts) as score
                     from knowledge_fts
                     join knowledge_chunks c on c.seq = knowledge_fts.rowid
                     join knowledge_documents d on d.id = c.document_id
                     where knowledge_fts match $1 and c.base_id in ({list})
                     order by bm25(knowledge_fts) limit $2"
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
                                c.heading, c.page,
                                cast({coverage} as float8)
                                  + cast(ts_rank_cd(c.lexical_tsv, to_tsquery('simple', $1), 32) as float8) as score
                         from knowledge_chunks c
                         join knowledge_documents d on d.id = c.document_id
                         where c.lexical_tsv @@ to_tsquery('simple', $1) and c.base_id in ({list})
                         order by score desc, c.id limit $2"
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

    /// The chunks of `document` with `ord` in `from..=to`, in order (a hit's
    /// neighbours).
    pub async fn knowledge_chunks_between(
        &self,
        document: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<ChunkHit>> {
        let rows = sqlx::query(
            "select c.id, c.document_id, d.name as document_name, c.base_id, c.ord, c.text,
                    c.heading, c.page, cast(0 as float8) as score
             from knowledge_chunks c join knowledge_documents d on d.id = c.document_id
             where c.document_id = $1 and c.ord between $2 and $3
             order by c.ord",
        )
        .bind(document)
        .bind(from)
        .bind(to)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(hit).collect()
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

/// Cancels the ingestion jobs whose key (a document id) meets `keys` (`$2`
/// is `value`), inside the transaction that deletes the documents.
async fn cancel_ingestion(tx: &mut super::WriteTx, keys: &str, value: &str) -> Result<()> {
    let now = now_ms();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "update jobs set state = 'cancelled', lease_owner = null, lease_until = 0,
                finished_at = $1, updated_at = $1
         where kind = '{}' and state in ('queued', 'running') and {keys}",
        IngestDocument::KIND
    )))
    .bind(now)
    .bind(value)
    .execute(&mut ***tx)
    .await?;
    Ok(())
}
