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

mod documents;
mod search;
mod vectors;

pub use search::{ChunkWindow, IndexedChunk, IndexedDocument};
pub use vectors::{BaseVectors, ChunkVectors, VectorScan};

use sqlx::any::AnyRow;

use super::{
    AuthUser, Conflict, Result, Store, StoreError, get_enum, get_i64, get_opt_str, get_str,
};
pub use weft_config::valid_base_name;
use weft_wire::api::{DocumentStatus, KnowledgeVisibility};
use weft_wire::ids::UserId;
use weft_wire::job::{IngestDocument, JobKind};
use weft_wire::time::now_ms;

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
    /// The ingestion's last stored progress (JSON), while it is under way.
    pub progress: Option<String>,
}

impl KnowledgeDocument {
    pub fn to_dto(&self) -> weft_wire::api::KnowledgeDocumentDto {
        let under_way = !matches!(self.status, DocumentStatus::Ready | DocumentStatus::Failed);
        weft_wire::api::KnowledgeDocumentDto {
            id: self.id.clone(),
            knowledge_id: self.base_id.clone(),
            name: self.name.clone(),
            mime: self.mime.clone(),
            bytes: self.bytes.max(0) as u64,
            sha256: self.sha256.clone(),
            status: self.status,
            error: self.error.clone(),
            chunks: self.chunks.max(0) as u64,
            created_at: self.created_at,
            updated_at: self.updated_at,
            progress: self
                .progress
                .as_deref()
                .filter(|_| under_way)
                .and_then(|p| serde_json::from_str(p).ok()),
        }
    }
}

/// A document to add: its bytes are already stored (and registered) by hash.
#[derive(Debug, Clone)]
pub struct NewDocument<'a> {
    pub name: &'a str,
    pub mime: &'a str,
    pub bytes: i64,
    pub sha256: &'a str,
    pub limits: DocumentLimits,
}

/// What a new document is held to, checked exactly in the transaction that
/// adds it (0: no limit).
#[derive(Debug, Clone, Copy, Default)]
pub struct DocumentLimits {
    /// `knowledge.max_documents_per_base`.
    pub documents_per_base: u64,
    /// `limits.storage_bytes_per_user` of the base's owner (documents count
    /// against the owner's storage).
    pub owner_storage_bytes: u64,
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

/// A document's columns, with its ingestion's progress while that runs
/// (what the job last stored, JSON).
const DOCUMENT_COLUMNS: &str = "id, base_id, name, mime, bytes, sha256, status, error, chunks, created_at, updated_at,
     (select j.progress from jobs j where j.kind = 'knowledge.ingest' and j.key = knowledge_documents.id
        and j.state in ('queued', 'running')) as progress";

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
        progress: get_opt_str(row, "progress")?,
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
        let mut w = self.writer().await?;
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
        .execute(&mut *w)
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

    /// The base `user` means by `id_or_name`: that id if they may open it,
    /// else by name ([`Store::knowledge_base_named`]).
    pub async fn knowledge_base_meant(
        &self,
        user: &AuthUser,
        id_or_name: &str,
    ) -> Result<KnowledgeBase> {
        match self.knowledge_base(user, id_or_name).await {
            Err(StoreError::NotFound) => self.knowledge_base_named(user, id_or_name).await,
            found => found,
        }
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
            let mut w = self.writer().await?;
            sqlx::query(
                "update knowledge_bases set name = $1, description = $2, visibility = $3, updated_at = $4
                 where id = $5",
            )
            .bind(change.name.unwrap_or(&before.name))
            .bind(change.description.unwrap_or(&before.description))
            .bind(change.visibility.unwrap_or(before.visibility).as_str())
            .bind(now_ms())
            .bind(id)
            .execute(&mut *w)
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
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }
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
    .execute(&mut **tx)
    .await?;
    Ok(())
}
