//! Knowledge bases (docs/knowledge.md): bases, their documents, and search.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Who may search a base: `private` — its owner only; `shared` — every user
/// of the instance (only the owner and admins change it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum KnowledgeVisibility {
    #[default]
    Private,
    Shared,
}

impl KnowledgeVisibility {
    pub fn as_str(self) -> &'static str {
        match self {
            KnowledgeVisibility::Private => "private",
            KnowledgeVisibility::Shared => "shared",
        }
    }
}

impl std::str::FromStr for KnowledgeVisibility {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "private" => Ok(KnowledgeVisibility::Private),
            "shared" => Ok(KnowledgeVisibility::Shared),
            _ => Err(()),
        }
    }
}

/// Where a document's ingestion is: `queued` → `processing` → `ready`, or
/// `failed` with `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DocumentStatus {
    Queued,
    Processing,
    Ready,
    Failed,
}

impl DocumentStatus {
    pub const ALL: [DocumentStatus; 4] = [
        DocumentStatus::Queued,
        DocumentStatus::Processing,
        DocumentStatus::Ready,
        DocumentStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DocumentStatus::Queued => "queued",
            DocumentStatus::Processing => "processing",
            DocumentStatus::Ready => "ready",
            DocumentStatus::Failed => "failed",
        }
    }
}

impl std::str::FromStr for DocumentStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        DocumentStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or(())
    }
}

/// A knowledge base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeBaseDto {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The owner's user id.
    pub owner: String,
    pub owner_name: String,
    pub visibility: KnowledgeVisibility,
    pub documents: u64,
    /// Whether the caller may change it (the owner, or an admin).
    pub can_edit: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeBaseList {
    pub knowledge_bases: Vec<KnowledgeBaseDto>,
}

/// `POST /v1/knowledge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreateKnowledgeBase {
    /// 1–64 characters: letters, digits, `-`, `_`, `.`, spaces; unique per owner.
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub visibility: KnowledgeVisibility,
}

/// `PATCH /v1/knowledge/{id}`: the fields given change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PatchKnowledgeBase {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<KnowledgeVisibility>,
}

/// A document of a base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeDocumentDto {
    pub id: String,
    pub knowledge_id: String,
    pub name: String,
    /// The type found in the bytes.
    pub mime: String,
    pub bytes: u64,
    pub sha256: String,
    pub status: DocumentStatus,
    /// Why it failed (`failed`), or why the last try did not succeed while it
    /// is retried (`processing`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub chunks: u64,
    pub created_at: i64,
    pub updated_at: i64,
    /// How far the ingestion got, while it is under way (stored every few
    /// seconds by the worker; absent before its first report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<IngestProgress>,
}

/// What `GET /v1/knowledge/{id}/events` streams (docs/knowledge.md, "Following
/// ingestion"): the SSE event's name is `type`, its data this whole object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum KnowledgeEvent {
    /// A document was added, or its ingestion moved on: the document as
    /// `GET …/documents/{doc}` would show it now.
    Document { document: KnowledgeDocumentDto },
    /// A document was deleted.
    DocumentDeleted { document_id: String },
    /// The base was deleted; the stream ends.
    Deleted { knowledge_id: String },
    /// Events may have been missed (the server's bus reconnected, or this
    /// client fell behind): read the documents again.
    Resync,
}

impl KnowledgeEvent {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            KnowledgeEvent::Document { .. } => "document",
            KnowledgeEvent::DocumentDeleted { .. } => "document_deleted",
            KnowledgeEvent::Deleted { .. } => "deleted",
            KnowledgeEvent::Resync => "resync",
        }
    }
}

impl KnowledgeDocumentDto {
    /// Whether this copy (from an event) is news next to `held` (from a list
    /// read meanwhile): an event still on its way while the list was read can
    /// arrive after it. Older than `held` — or as old, and not yet done while
    /// `held` is — is old news. (The web page's `news` states the same rule.)
    pub fn is_news_over(&self, held: &KnowledgeDocumentDto) -> bool {
        let done = |s: DocumentStatus| matches!(s, DocumentStatus::Ready | DocumentStatus::Failed);
        if self.updated_at != held.updated_at {
            return self.updated_at > held.updated_at;
        }
        done(self.status) || !done(held.status)
    }
}

/// A document's ingestion under way: `stage` and, for `embedding`, chunks
/// `done` of `total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct IngestProgress {
    pub stage: IngestStage,
    pub done: u64,
    pub total: u64,
}

/// `reading` (the text is extracted and chunked) or `embedding` (the chunks'
/// vectors are made).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum IngestStage {
    Reading,
    Embedding,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeDocumentList {
    pub documents: Vec<KnowledgeDocumentDto>,
}

/// `POST /v1/knowledge/{id}/documents` as JSON: one file, as base64 `data`
/// (with its `name`) or fetched from a `url` through `web_fetch`'s guard
/// (`name` defaults to the URL's last path segment). Exactly one of the two.
/// (`multipart/form-data` takes one part per file instead.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeUpload {
    #[serde(default)]
    pub name: Option<String>,
    /// The file's bytes, base64.
    #[serde(default)]
    pub data: Option<String>,
    /// An http(s) URL to fetch the file from; internal addresses are refused
    /// unless `[tools.web_fetch] allow_hosts` lists them.
    #[serde(default)]
    pub url: Option<String>,
}

/// What an upload did, per file, in the order sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeUploadResult {
    pub documents: Vec<KnowledgeUploaded>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeUploaded {
    pub document: KnowledgeDocumentDto,
    /// False when the base already had these bytes: `document` is that one.
    pub created: bool,
}

/// `POST /v1/knowledge/{id}/search`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeSearch {
    pub query: String,
    /// How many results (1–50; default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeSearchResults {
    pub results: Vec<KnowledgeHit>,
    /// How the results were found.
    pub mode: SearchMode,
    /// Set when an embedding model is configured but could not be used (an
    /// outage, a missing key): why, and that the results are lexical only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

/// How a knowledge search found its results: `lexical` (the full-text index
/// only) or `hybrid` (the full-text index and vectors, fused by rank).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    Lexical,
    Hybrid,
}

/// One search result: a chunk of a document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct KnowledgeHit {
    pub document_id: String,
    pub document_name: String,
    pub chunk_id: String,
    pub text: String,
    /// Higher is better; comparable within one answer only.
    pub score: f64,
    /// The page for PDFs ("page 7"), else the heading path ("Setup > Linux").
    pub position: String,
    /// The page, for PDFs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

/// One source an answer cites as `[n]`: the passage a knowledge search handed
/// the model (the `citations` event, and `citations` on the stored reply).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Citation {
    /// The number the answer cites it by: `[1]` is `n = 1`.
    pub n: u32,
    /// The base the document is in (`GET /v1/knowledge/{knowledge_id}/documents/{document_id}`).
    pub knowledge_id: String,
    pub document_id: String,
    pub document_name: String,
    pub chunk_id: String,
    /// The cited passage (the chunk's text, at most 500 characters).
    pub snippet: String,
    /// The page for PDFs ("page 7"), else the heading path ("Setup > Linux").
    pub position: String,
    /// The page, for PDFs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

/// A stretch of a document's text, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DocumentChunks {
    pub chunks: Vec<DocumentChunk>,
    /// The document's chunk count.
    pub total: u64,
}

/// One chunk of a document's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DocumentChunk {
    pub id: String,
    /// Its place in the document, from 0.
    pub ord: i64,
    pub text: String,
    /// "page 7", or the heading path.
    pub position: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(status: DocumentStatus, updated_at: i64) -> KnowledgeDocumentDto {
        KnowledgeDocumentDto {
            id: "d1".into(),
            knowledge_id: "kb".into(),
            name: "a.md".into(),
            mime: "text/markdown".into(),
            bytes: 1,
            sha256: "ab".into(),
            status,
            error: None,
            chunks: 0,
            created_at: 0,
            updated_at,
            progress: None,
        }
    }

    #[test]
    fn an_event_on_its_way_while_the_list_was_read_is_old_news() {
        use DocumentStatus::*;
        let ready = doc(Ready, 9);
        assert!(!doc(Processing, 7).is_news_over(&ready));
        assert!(!doc(Processing, 9).is_news_over(&ready));
        assert!(doc(Processing, 7).is_news_over(&doc(Processing, 7)));
        assert!(doc(Ready, 9).is_news_over(&doc(Processing, 9)));
        assert!(doc(Queued, 12).is_news_over(&ready));
    }
}
