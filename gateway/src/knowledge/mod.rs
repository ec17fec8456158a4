//! Knowledge bases over HTTP (docs/knowledge.md): bases, their documents, and
//! search. Who may see or change a base is the store's rule
//! (`store::knowledge`); this module checks input, stores an upload's bytes and
//! maps outcomes. An upload returns as soon as its bytes and document rows are
//! stored: reading, chunking and indexing are the worker's `knowledge.ingest`
//! job, never this request's.
//!
//! Uploads take one file per request as JSON (`{name, data}`, base64) or any
//! number of file parts in `multipart/form-data`, each at most
//! `knowledge.max_document_bytes`; the route's body limit is set from it at
//! start-up. Making a base `shared` (searchable by every user) is for admins.

use axum::extract::{DefaultBodyLimit, FromRequest, Path, State};
use axum::handler::Handler;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use bytes::Bytes;
use weft_config::MAX_TOP_K;
use weft_files::Kind;
use weft_shared::api::{
    CreateKnowledgeBase, DocumentChunk, DocumentChunks, KnowledgeBaseDto, KnowledgeBaseList,
    KnowledgeDocumentDto, KnowledgeDocumentList, KnowledgeEvent, KnowledgeHit, KnowledgeSearch,
    KnowledgeSearchResults, KnowledgeUpload, KnowledgeUploadResult, KnowledgeUploaded,
    KnowledgeVisibility, PatchKnowledgeBase,
};
use weft_shared::memory_room::{SharedPermit, human_size as mib};
use weft_store::{
    AuthUser, BaseChange, ChunkWindow, DocumentLimits, KnowledgeBase, KnowledgeDocument,
    NewDocument, OverLimit,
};
use weft_tools::web::UrlDownload;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::uploads::{Upload, clean_name, detect_all, is_multipart, upload_room};

pub(crate) mod events;
mod upload;

use upload::{UploadBody, upload_body_limit};

pub fn router(state: &AppState) -> Router<AppState> {
    let upload_limit = upload_body_limit(&state.config());
    Router::new()
        .route("/v1/knowledge", get(list_bases).post(create_base))
        .route(
            "/v1/knowledge/{id}",
            get(get_base).patch(update_base).delete(delete_base),
        )
        .route(
            "/v1/knowledge/{id}/documents",
            get(list_documents).post(add_documents.layer(DefaultBodyLimit::max(upload_limit))),
        )
        .route(
            "/v1/knowledge/{id}/documents/{doc}",
            get(get_document).delete(delete_document),
        )
        .route(
            "/v1/knowledge/{id}/documents/{doc}/chunks",
            get(document_chunks),
        )
        .route("/v1/knowledge/{id}/search", post(search))
        .route("/v1/knowledge/{id}/events", get(events::events))
}

fn base_dto(base: KnowledgeBase, caller: &AuthUser) -> KnowledgeBaseDto {
    KnowledgeBaseDto {
        can_edit: base.editable_by(caller),
        id: base.id,
        name: base.name,
        description: base.description,
        owner: base.owner.0,
        owner_name: base.owner_name,
        visibility: base.visibility,
        documents: base.documents.max(0) as u64,
        created_at: base.created_at,
        updated_at: base.updated_at,
    }
}

/// Only admins make a base every user can search.
fn check_visibility(caller: &AuthUser, visibility: Option<KnowledgeVisibility>) -> ApiResult<()> {
    if visibility == Some(KnowledgeVisibility::Shared) && !caller.is_admin() {
        return Err(ApiError::NotAllowed(
            "only admins share a knowledge base with every user".into(),
        ));
    }
    Ok(())
}

/// The knowledge bases you may search: yours and the shared ones.
#[utoipa::path(get, path = "/v1/knowledge", responses((status = 200, body = KnowledgeBaseList)))]
pub async fn list_bases(
    State(state): State<AppState>,
    Caller(user): Caller,
) -> ApiResult<Json<KnowledgeBaseList>> {
    let bases = state.store.knowledge_bases(&user).await?;
    Ok(Json(KnowledgeBaseList {
        knowledge_bases: bases.into_iter().map(|b| base_dto(b, &user)).collect(),
    }))
}

/// Make a knowledge base (yours; `shared` ones are for admins to make).
#[utoipa::path(post, path = "/v1/knowledge", request_body = CreateKnowledgeBase,
    responses((status = 201, body = KnowledgeBaseDto), (status = 409, body = weft_shared::api::ErrorEnvelope), (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn create_base(
    State(state): State<AppState>,
    Caller(user): Caller,
    ApiJson(req): ApiJson<CreateKnowledgeBase>,
) -> ApiResult<(StatusCode, Json<KnowledgeBaseDto>)> {
    check_visibility(&user, Some(req.visibility))?;
    if req.description.chars().count() > 2000 {
        return Err(ApiError::Validation(
            "description must be at most 2000 characters".into(),
        ));
    }
    let id = state
        .store
        .create_knowledge_base(&user.id, &req.name, &req.description, req.visibility)
        .await
        .map_err(|e| match e {
            weft_store::StoreError::Conflict(_) => {
                ApiError::Conflict(format!("you have a knowledge base named {:?}", req.name))
            }
            other => other.into(),
        })?;
    let base = state.store.knowledge_base(&user, &id).await?;
    Ok((StatusCode::CREATED, Json(base_dto(base, &user))))
}

#[utoipa::path(get, path = "/v1/knowledge/{id}",
    responses((status = 200, body = KnowledgeBaseDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_base(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<KnowledgeBaseDto>> {
    let base = state.store.knowledge_base(&user, &id).await?;
    Ok(Json(base_dto(base, &user)))
}

/// Rename, describe or share a base (its owner or an admin).
#[utoipa::path(patch, path = "/v1/knowledge/{id}", request_body = PatchKnowledgeBase,
    responses((status = 200, body = KnowledgeBaseDto), (status = 403, body = weft_shared::api::ErrorEnvelope), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn update_base(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<PatchKnowledgeBase>,
) -> ApiResult<Json<KnowledgeBaseDto>> {
    check_visibility(&user, req.visibility)?;
    if req
        .description
        .as_ref()
        .is_some_and(|d| d.chars().count() > 2000)
    {
        return Err(ApiError::Validation(
            "description must be at most 2000 characters".into(),
        ));
    }
    let change = BaseChange {
        name: req.name.as_deref(),
        description: req.description.as_deref(),
        visibility: req.visibility,
    };
    let base = state
        .store
        .update_knowledge_base(&user, &id, &change)
        .await?;
    Ok(Json(base_dto(base, &user)))
}

/// Delete a base with its documents (its owner or an admin); ingestion still
/// under way stops.
#[utoipa::path(delete, path = "/v1/knowledge/{id}",
    responses((status = 204), (status = 403, body = weft_shared::api::ErrorEnvelope), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_base(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.store.delete_knowledge_base(&user, &id).await?;
    let gone = KnowledgeEvent::Deleted {
        knowledge_id: id.clone(),
    };
    weft_shared::notice::knowledge(&*state.bus, &id, &gone).await;
    Ok(StatusCode::NO_CONTENT)
}

/// The documents of a base, newest first, with their ingestion status.
#[utoipa::path(get, path = "/v1/knowledge/{id}/documents",
    responses((status = 200, body = KnowledgeDocumentList), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn list_documents(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<KnowledgeDocumentList>> {
    let docs = state.store.knowledge_documents(&user, &id).await?;
    Ok(Json(KnowledgeDocumentList {
        documents: docs.iter().map(KnowledgeDocument::to_dto).collect(),
    }))
}

#[utoipa::path(get, path = "/v1/knowledge/{id}/documents/{doc}",
    responses((status = 200, body = KnowledgeDocumentDto), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn get_document(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path((id, doc)): Path<(String, String)>,
) -> ApiResult<Json<KnowledgeDocumentDto>> {
    let doc = state.store.knowledge_document(&user, &id, &doc).await?;
    Ok(Json(doc.to_dto()))
}

/// Which part of a document's text to read (`GET …/documents/{doc}/chunks`).
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChunksQuery {
    /// A chunk id: the chunks on either side of it (a citation opened at its
    /// passage). Else from the start, or after `after`.
    around: Option<String>,
    /// A chunk's `ord`: the chunks after it.
    after: Option<i64>,
    /// How many chunks, 1–200 (default 50).
    limit: Option<u32>,
}

/// A document's text, chunk by chunk in order: what a citation opens at its
/// passage (`around`), read on with `after`.
#[utoipa::path(get, path = "/v1/knowledge/{id}/documents/{doc}/chunks", params(ChunksQuery),
    responses((status = 200, body = DocumentChunks),
        (status = 422, description = "a bad limit, or both around and after", body = weft_shared::api::ErrorEnvelope),
        (status = 404, description = "no such base, document or chunk of yours", body = weft_shared::api::ErrorEnvelope)))]
pub async fn document_chunks(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path((id, doc)): Path<(String, String)>,
    ApiQuery(q): ApiQuery<ChunksQuery>,
) -> ApiResult<Json<DocumentChunks>> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::Validation("limit must be from 1 to 200".into()));
    }
    let window = match (&q.around, q.after) {
        (Some(chunk), None) => ChunkWindow::Around(chunk),
        (None, after) => ChunkWindow::After(after.unwrap_or(-1)),
        (Some(_), Some(_)) => {
            return Err(ApiError::Validation(
                "give around or after, not both".into(),
            ));
        }
    };
    let (chunks, total) = state
        .store
        .knowledge_document_chunks(&user, &id, &doc, window, limit)
        .await?;
    Ok(Json(DocumentChunks {
        chunks: chunks
            .into_iter()
            .map(|c| DocumentChunk {
                position: c.position(),
                id: c.chunk_id,
                ord: c.ord,
                text: c.text,
                page: c.page,
            })
            .collect(),
        total,
    }))
}

/// Delete a document: gone from the next search; its ingestion stops.
#[utoipa::path(delete, path = "/v1/knowledge/{id}/documents/{doc}",
    responses((status = 204), (status = 403, body = weft_shared::api::ErrorEnvelope), (status = 404, body = weft_shared::api::ErrorEnvelope)))]
pub async fn delete_document(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path((id, doc)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    state
        .store
        .delete_knowledge_document(&user, &id, &doc)
        .await?;
    let gone = KnowledgeEvent::DocumentDeleted { document_id: doc };
    weft_shared::notice::knowledge(&*state.bus, &id, &gone).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Add documents: multipart (one part per file), JSON `{name, data}`, or JSON
/// `{url}` (fetched through `web_fetch`'s guard).
/// Returns at once; each document is `queued`, then read and indexed by a
/// worker (`GET …/documents` shows how far each got, `GET …/events` streams it). The same bytes already
/// in the base give that document back (`created: false`).
#[utoipa::path(post, path = "/v1/knowledge/{id}/documents", request_body = KnowledgeUpload,
    responses((status = 201, body = KnowledgeUploadResult), (status = 403, body = weft_shared::api::ErrorEnvelope),
        (status = 404, body = weft_shared::api::ErrorEnvelope), (status = 413, body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn add_documents(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    body: UploadBody,
) -> ApiResult<(StatusCode, Json<KnowledgeUploadResult>)> {
    let cfg = state.config().knowledge.clone();
    let base = state.store.knowledge_base(&user, &id).await?;
    if !base.editable_by(&user) {
        return Err(ApiError::Forbidden);
    }
    for u in &body.files {
        if u.bytes.len() as u64 > cfg.max_document_bytes {
            return Err(ApiError::PayloadTooLarge(format!(
                "knowledge.max_document_bytes: {} is {}, more than the {} a document may be",
                clean_name(&u.name),
                mib(u.bytes.len() as u64),
                mib(cfg.max_document_bytes)
            )));
        }
    }
    let room = cfg
        .max_documents_per_base
        .saturating_sub(base.documents.max(0) as u64);
    if body.files.len() as u64 > room {
        return Err(ApiError::from(OverLimit::Documents {
            held: base.documents.max(0) as u64,
            limit: cfg.max_documents_per_base,
        }));
    }
    // Documents count against the base owner's storage quota. Checked here
    // before anything is stored, and exactly by the transaction that adds each.
    if let Some((usage, limit)) =
        crate::storage_quota::over_quota(&state, &base.owner, &body.files).await?
    {
        return Err(ApiError::from(OverLimit::Storage {
            used: usage.used_bytes,
            adding: usage.adding_bytes,
            limit,
        }));
    }
    let limits = DocumentLimits {
        documents_per_base: cfg.max_documents_per_base,
        owner_storage_bytes: state.config().limits.storage_bytes_per_user,
    };
    let typed = detect_all(body.files).await?;
    if let Some((u, _)) = typed.iter().find(|(_, d)| d.kind == Kind::Image) {
        return Err(ApiError::Validation(format!(
            "{}: images have no text to search (PDF, Word, Excel, PowerPoint, Markdown, HTML, text, CSV, JSON and code are taken)",
            u.name
        )));
    }
    let mut out = Vec::with_capacity(typed.len());
    for (u, det) in typed {
        let sha = weft_files::sha256_hex(&u.bytes);
        let size = u.bytes.len() as u64;
        state.store.register_blob(&sha, size).await?;
        state
            .blobs
            .put(&sha, u.bytes)
            .await
            .map_err(|e| ApiError::Unavailable(format!("the file store failed: {e}")))?;
        let (doc, created) = state
            .store
            .add_knowledge_document(
                &user,
                &id,
                &NewDocument {
                    name: &u.name,
                    mime: det.mime,
                    bytes: size as i64,
                    sha256: &sha,
                    limits,
                },
            )
            .await?;
        let document = doc.to_dto();
        if created {
            let added = KnowledgeEvent::Document {
                document: document.clone(),
            };
            weft_shared::notice::knowledge(&*state.bus, &id, &added).await;
        }
        out.push(KnowledgeUploaded { document, created });
    }
    metrics::counter!("weft_knowledge_documents_added_total")
        .increment(out.iter().filter(|d| d.created).count() as u64);
    Ok((
        StatusCode::CREATED,
        Json(KnowledgeUploadResult { documents: out }),
    ))
}

/// Search a base: the chunks that best match the query — by its words, and by
/// meaning when an embedding model is configured (`mode: hybrid`) — with the
/// document and place (page or heading path) each comes from.
#[utoipa::path(post, path = "/v1/knowledge/{id}/search", request_body = KnowledgeSearch,
    responses((status = 200, body = KnowledgeSearchResults), (status = 404, body = weft_shared::api::ErrorEnvelope),
        (status = 422, body = weft_shared::api::ErrorEnvelope)))]
pub async fn search(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<KnowledgeSearch>,
) -> ApiResult<Json<KnowledgeSearchResults>> {
    let top_k = req.top_k.unwrap_or(state.config().knowledge.default_top_k);
    if !(1..=MAX_TOP_K).contains(&top_k) {
        return Err(ApiError::Validation(format!(
            "top_k must be between 1 and {MAX_TOP_K}"
        )));
    }
    if req.query.trim().is_empty() || req.query.chars().count() > 2000 {
        return Err(ApiError::Validation(
            "query must be 1 to 2000 characters".into(),
        ));
    }
    let base = state.store.knowledge_base(&user, &id).await?;
    let found = state
        .retriever
        .search(&[base.id], &req.query, top_k)
        .await?;
    Ok(Json(KnowledgeSearchResults {
        results: found
            .hits
            .into_iter()
            .map(|h| KnowledgeHit {
                position: h.position(),
                document_id: h.document_id,
                document_name: h.document_name,
                chunk_id: h.chunk_id,
                text: h.text,
                score: h.score,
                page: h.page,
            })
            .collect(),
        mode: found.mode,
        fallback: found.fallback,
    }))
}
