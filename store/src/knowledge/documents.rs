//! A base's documents: adding one with its ingestion job, reading and deleting
//! them, and the ingestion job's writes (status, and the chunks replaced whole).

use super::vectors::{ChunkVectors, bump_revision};
use super::{
    DOCUMENT_COLUMNS, KnowledgeDocument, NewChunk, NewDocument, cancel_ingestion, document,
};
use crate::storage_quota::{lock_user, storage_use};
use crate::{AuthUser, OverLimit, Result, Store, StoreError, WriteTx, get_i64, get_str};
use weft_wire::ids::UserId;
use weft_wire::job::IngestDocument;
use weft_wire::time::now_ms;

impl Store {
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
        // The base's row first: adds to one base queue here, so each counts
        // the documents the one before it added.
        let owner = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select owner_id from knowledge_bases where id = $1{}",
            self.lock_suffix()
        )))
        .bind(base_id)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::NotFound)?;
        let owner = UserId(get_str(&owner, "owner_id")?);
        // Counted before the insert, which may find the same bytes there.
        let over = self.over_limits(&mut tx, base_id, &owner, doc).await?;
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
        .execute(&mut *tx)
        .await?;
        let created = inserted.rows_affected() == 1;
        if created {
            if let Some(over) = over {
                return Err(StoreError::OverLimit(over));
            }
            let job = IngestDocument {
                document_id: id.clone(),
            };
            self.insert_kind_job(&mut tx, &job, 0).await?;
            sqlx::query("update knowledge_bases set updated_at = $1 where id = $2")
                .bind(now)
                .bind(base_id)
                .execute(&mut *tx)
                .await?;
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select {DOCUMENT_COLUMNS} from knowledge_documents where base_id = $1 and sha256 = $2"
        )))
        .bind(base_id)
        .bind(doc.sha256)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((document(&row)?, created))
    }

    /// Inside the adding transaction, before the insert: the limit adding
    /// `doc` would pass, if any. The owner's row is locked last (Postgres), as
    /// by the send transaction's storage check, so uploads and sends through
    /// any number of gateways cannot pass the quota together.
    async fn over_limits(
        &self,
        tx: &mut WriteTx,
        base_id: &str,
        owner: &UserId,
        doc: &NewDocument<'_>,
    ) -> Result<Option<OverLimit>> {
        let limits = doc.limits;
        if limits.documents_per_base > 0 {
            let row =
                sqlx::query("select count(*) as n from knowledge_documents where base_id = $1")
                    .bind(base_id)
                    .fetch_one(&mut **tx)
                    .await?;
            let held = get_i64(&row, "n")? as u64;
            if held >= limits.documents_per_base {
                return Ok(Some(OverLimit::Documents {
                    held,
                    limit: limits.documents_per_base,
                }));
            }
        }
        if limits.owner_storage_bytes > 0 {
            lock_user(tx, self.lock_suffix(), owner).await?;
            let usage =
                storage_use(&mut **tx, owner, &[(doc.sha256, doc.bytes.max(0) as u64)]).await?;
            if !usage.fits(limits.owner_storage_bytes) {
                return Ok(Some(OverLimit::Storage {
                    used: usage.used_bytes,
                    adding: usage.adding_bytes,
                    limit: limits.owner_storage_bytes,
                }));
            }
        }
        Ok(None)
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
            .execute(&mut *tx)
            .await?;
        if gone.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        cancel_ingestion(&mut tx, "key = $2", doc_id).await?;
        bump_revision(&mut tx, base_id).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The ingestion job started (or resumed) on the document: `processing`,
    /// with the last attempt's error, if any, kept for the page to show.
    pub async fn knowledge_document_processing(&self, id: &str) -> Result<bool> {
        let mut w = self.writer().await?;
        let done = sqlx::query(
            "update knowledge_documents set status = 'processing', updated_at = $1
             where id = $2 and status in ('queued', 'processing')",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&mut *w)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A try that will be retried failed: its error shows while it waits.
    pub async fn knowledge_document_retrying(&self, id: &str, error: &str) -> Result<()> {
        let mut w = self.writer().await?;
        sqlx::query(
            "update knowledge_documents set error = $1, updated_at = $2
             where id = $3 and status = 'processing'",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(&mut *w)
        .await?;
        Ok(())
    }

    /// The document cannot be ingested: `failed` with `error`, no chunks.
    pub async fn knowledge_document_failed(&self, id: &str, error: &str) -> Result<()> {
        let mut tx = self.begin().await?;
        sqlx::query("delete from knowledge_chunks where document_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "update knowledge_documents set status = 'failed', error = $1, chunks = 0, updated_at = $2
             where id = $3",
        )
        .bind(error)
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Stores all of a document's chunks (with their `vectors`, one per chunk,
    /// when an embedding model made them) and marks it `ready`, replacing
    /// whatever an interrupted attempt left. `NotFound` when the document was
    /// deleted meanwhile (nothing is written).
    pub async fn replace_knowledge_chunks(
        &self,
        id: &str,
        chunks: &[NewChunk],
        vectors: Option<&ChunkVectors>,
    ) -> Result<()> {
        /// Rows per insert: 9 parameters each, far under both databases' limits.
        const BATCH: usize = 100;
        self.prepare_vectors(vectors).await?;
        let ids: Vec<String> = chunks
            .iter()
            .map(|_| format!("ch_{}", uuid::Uuid::now_v7().simple()))
            .collect();
        let mut tx = self.begin().await?;
        let doc = sqlx::query(sqlx::AssertSqlSafe(format!(
            "select base_id from knowledge_documents where id = $1{}",
            self.lock_suffix()
        )))
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(doc) = doc else {
            return Err(StoreError::NotFound);
        };
        let base_id = get_str(&doc, "base_id")?;
        sqlx::query("delete from knowledge_chunks where document_id = $1")
            .bind(id)
            .execute(&mut *tx)
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
                    .bind(&ids[batch_no * BATCH + i])
                    .bind(id)
                    .bind(&base_id)
                    .bind((batch_no * BATCH + i) as i64)
                    .bind(&chunk.text)
                    .bind(&chunk.heading)
                    .bind(chunk.page.map(i64::from))
                    .bind(chunk.tokens as i64)
                    .bind(&chunk.lexical);
            }
            query.execute(&mut *tx).await?;
        }
        if let Some(vectors) = vectors {
            self.insert_vectors(&mut tx, &base_id, &ids, vectors)
                .await?;
        }
        sqlx::query(
            "update knowledge_documents set status = 'ready', error = null, chunks = $1, updated_at = $2
             where id = $3",
        )
        .bind(chunks.len() as i64)
        .bind(now_ms())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        // Last: the base's row is locked only for the commit.
        bump_revision(&mut tx, &base_id).await?;
        tx.commit().await?;
        Ok(())
    }
}
