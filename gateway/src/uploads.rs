//! Attachments arriving with a message, from any channel (JSON base64, multipart
//! parts, Lark resources): typed by their bytes, checked against every limit,
//! then stored — in that order, so a refused message stores nothing.
//!
//! Limits (`[attachments]`, `limits.attachments_bytes`): 4 images of at most
//! 4 MiB, 3 documents of at most 10 MiB, 20 MiB per message. Over a limit is 413
//! naming it; a type we do not take, or bytes that contradict a declared type,
//! 422. Documents are turned into text here, once (the worker only reads the
//! stored text), each in a `weft extract` child process under the `[files]`
//! limits (`weft_files::isolate`), the documents of one message at the same
//! time. A document that cannot be read — damaged, or a hostile file that
//! kills its reader — is still stored and sent with the message, marked
//! "could not be read (reason)" for the model and the person: the message is
//! never lost, and the gateway never parses a document itself.

use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use weft_files::{Detected, Failure, Kind, Refused};
use weft_shared::api::{AttachmentKind, AttachmentUpload};
use weft_shared::memory_room::{SharedPermit, human_size as mib};
use weft_store::NewAttachment;

use crate::AppState;
use crate::error::{ApiError, ApiResult};

/// One file as received, before any check.
#[derive(Debug, Clone)]
pub struct Upload {
    pub name: String,
    /// The client's claim (a multipart part's or a data URL's type); the bytes decide.
    pub declared: Option<String>,
    pub bytes: Bytes,
}

/// Files stored for a message that has not been written yet.
#[derive(Debug, Default)]
pub struct Accepted {
    pub files: Vec<NewAttachment>,
    /// When the files' hashes were registered: [`forget`] removes them only if no
    /// later upload touched them.
    pub touched_at: i64,
}

/// The largest request body of a send: the attachments in base64 (4/3 of their
/// bytes), the text as JSON-escaped UTF-8, and room for the rest.
pub fn send_body_limit(state_cfg: &weft_config::Config) -> usize {
    let files = state_cfg.limits.attachments_bytes.div_ceil(3) * 4;
    let text = state_cfg.limits.message_chars * 6;
    (files + text + (256 << 10)).max(state_cfg.limits.body_bytes) as usize
}

/// Base64 files of a JSON body (`data` with or without a `data:` URL prefix).
pub fn from_json(list: Vec<AttachmentUpload>) -> ApiResult<Vec<Upload>> {
    list.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let (declared, b64) = match a.data.strip_prefix("data:") {
                Some(rest) => {
                    let (head, data) = rest.split_once(',').ok_or_else(|| {
                        ApiError::Validation(format!(
                            "attachments[{i}].data: a data URL needs a comma before the data"
                        ))
                    })?;
                    let Some(mime) = head.strip_suffix(";base64") else {
                        return Err(ApiError::Validation(format!(
                            "attachments[{i}].data: only base64 data URLs are accepted"
                        )));
                    };
                    (Some(mime.to_string()).filter(|m| !m.is_empty()), data)
                }
                None => (None, a.data.as_str()),
            };
            let compact: String = b64.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(compact.as_bytes())
                .or_else(|_| {
                    base64::engine::general_purpose::STANDARD_NO_PAD.decode(compact.as_bytes())
                })
                .map_err(|e| {
                    ApiError::Validation(format!("attachments[{i}].data is not base64: {e}"))
                })?;
            Ok(Upload {
                name: a.name,
                declared: a.mime.or(declared),
                bytes: Bytes::from(bytes),
            })
        })
        .collect()
}

/// A name safe to show and to put in a `Content-Disposition`: the last path
/// component, no control characters, at most 200 characters.
pub fn clean_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let clean: String = last.chars().filter(|c| !c.is_control()).take(200).collect();
    let clean = clean.trim().to_string();
    if clean.is_empty() || clean == "." || clean == ".." {
        "attachment".into()
    } else {
        clean
    }
}

fn refused(r: Refused) -> ApiError {
    ApiError::Validation(r.to_string())
}

/// Check every file against the limits, then store them all. Nothing is stored
/// unless every check passed.
pub async fn accept(state: &AppState, uploads: Vec<Upload>) -> ApiResult<Accepted> {
    if uploads.is_empty() {
        return Ok(Accepted::default());
    }
    let cfg = &state.config().attachments;
    let total_cap = state.config().limits.attachments_bytes;
    let total: u64 = uploads.iter().map(|u| u.bytes.len() as u64).sum();
    if total > total_cap {
        return Err(ApiError::PayloadTooLarge(format!(
            "attachments_bytes: the attachments total {}, more than the {} a message may carry",
            mib(total),
            mib(total_cap)
        )));
    }
    let typed = detect_all(uploads).await?;
    let images = typed.iter().filter(|(_, d)| d.kind == Kind::Image).count() as u32;
    let documents = typed.len() as u32 - images;
    if images > cfg.images_per_message {
        return Err(ApiError::PayloadTooLarge(format!(
            "images_per_message: {images} images, more than the {} a message may carry",
            cfg.images_per_message
        )));
    }
    if documents > cfg.documents_per_message {
        return Err(ApiError::PayloadTooLarge(format!(
            "documents_per_message: {documents} documents, more than the {} a message may carry",
            cfg.documents_per_message
        )));
    }
    for (u, d) in &typed {
        let (cap, what) = match d.kind {
            Kind::Image => (cfg.image_bytes, "image_bytes"),
            Kind::Document => (cfg.document_bytes, "document_bytes"),
        };
        if u.bytes.len() as u64 > cap {
            return Err(ApiError::PayloadTooLarge(format!(
                "{what}: {} is {}, more than the {} allowed",
                u.name,
                mib(u.bytes.len() as u64),
                mib(cap)
            )));
        }
    }
    // Documents become text before anything is stored, all at once.
    let texts = futures::future::join_all(typed.iter().map(|(u, d)| extract(state, u, d))).await;
    let mut ready = Vec::with_capacity(typed.len());
    for ((u, d), text) in typed.into_iter().zip(texts) {
        ready.push((u, d, text?));
    }
    let mut out = Accepted::default();
    for (u, d, text) in ready {
        let sha = weft_files::sha256_hex(&u.bytes);
        let size = u.bytes.len() as u64;
        out.touched_at = state.store.register_blob(&sha, size).await?;
        state
            .blobs
            .put(&sha, u.bytes)
            .await
            .map_err(|e| ApiError::Unavailable(format!("the file store failed: {e}")))?;
        let (text_chars, unreadable) =
            match text {
                Text::None => (None, None),
                Text::Read(t) => {
                    let n = t.chars().count() as u64;
                    state.blobs.put_text(&sha, t).await.map_err(|e| {
                        ApiError::Unavailable(format!("the file store failed: {e}"))
                    })?;
                    (Some(n), None)
                }
                Text::Unreadable(reason) => (None, Some(reason)),
            };
        out.files.push(NewAttachment {
            name: u.name,
            kind: match d.kind {
                Kind::Image => AttachmentKind::Image,
                Kind::Document => AttachmentKind::Document,
            },
            mime: d.mime.to_string(),
            bytes: size,
            sha256: sha,
            text_chars,
            unreadable,
        });
    }
    metrics::counter!("weft_attachments_total").increment(out.files.len() as u64);
    Ok(out)
}

/// Every file's name cleaned and its type detected, on the blocking pool: a
/// zip's directory and `[Content_Types].xml` are read, linearly but not for free.
pub(crate) async fn detect_all(uploads: Vec<Upload>) -> ApiResult<Vec<(Upload, Detected)>> {
    let job = tokio::task::spawn_blocking(move || {
        uploads
            .into_iter()
            .map(|mut u| {
                u.name = clean_name(&u.name);
                if u.bytes.is_empty() {
                    return Err(ApiError::Validation(format!("{} is empty", u.name)));
                }
                let det = weft_files::detect(&u.name, u.declared.as_deref(), &u.bytes)
                    .map_err(refused)?;
                Ok((u, det))
            })
            .collect::<ApiResult<Vec<_>>>()
    });
    job.await
        .map_err(|_| ApiError::Validation("a file could not be typed: it is malformed".into()))?
}

/// What a file gives the model besides itself.
enum Text {
    /// An image.
    None,
    Read(String),
    /// A document whose text could not be read, and why.
    Unreadable(String),
}

/// A document's text, read by a `weft extract` child. Only a reader that cannot
/// be started at all is an error (503: this server's fault, not the file's).
async fn extract(state: &AppState, u: &Upload, d: &Detected) -> ApiResult<Text> {
    if d.kind == Kind::Image {
        return Ok(Text::None);
    }
    match state.extractor.document(d, u.bytes.clone()).await {
        Ok(text) => Ok(Text::Read(text)),
        Err(Failure::NotStarted(why)) => {
            tracing::error!(error = %why, "the document reader could not be started");
            Err(ApiError::Unavailable(
                "documents cannot be read right now; try again later".into(),
            ))
        }
        Err(failure) => {
            tracing::info!(file = %u.name, reason = %failure, "a document could not be read");
            Ok(Text::Unreadable(failure.to_string()))
        }
    }
}

/// A message that was refused after its files were stored: remove the files no
/// message names (unless another upload touched them since).
pub async fn forget(state: &AppState, accepted: &Accepted) {
    for f in &accepted.files {
        sweep(state, &f.sha256, accepted.touched_at).await;
    }
}

/// Delete `sha`'s bytes if no message names it and nothing touched it after `before`.
pub async fn sweep(state: &AppState, sha: &str, before: i64) {
    let res = state
        .store
        .sweep_blob(sha, before, || state.blobs.delete(sha))
        .await;
    if let Err(e) = res {
        tracing::warn!(error = %e, sha, "removing an unused attachment failed; the sweeper retries");
    }
}

/// A request body that may carry files: JSON whose `attachments` are base64, or
/// `multipart/form-data` with a `json` part (the same JSON, usually without
/// `attachments`) and one part per file (any field name, with a filename).
pub struct SendBody<T> {
    pub req: T,
    pub files: Vec<Upload>,
    /// The gateway's upload memory this request holds (large bodies only);
    /// keep it until the files are stored.
    pub room: Option<SharedPermit>,
}

/// How long a large send waits for upload memory before it is told to retry.
const ROOM_PATIENCE: Duration = Duration::from_secs(10);

/// Room for a body larger than `limits.body_bytes` (one that can carry files):
/// twice its length, the body and the files decoded from it, from the sender's
/// share of the upload memory (the [`Caller`](crate::auth::Caller) extracted
/// before the body left the user in the request). A chunked body counts as
/// `route_max`, the most its route takes.
pub(crate) async fn upload_room(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    extensions: &axum::http::Extensions,
    route_max: u64,
) -> ApiResult<Option<SharedPermit>> {
    let length = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(route_max);
    if length <= state.config().limits.body_bytes {
        return Ok(None);
    }
    let user = extensions
        .get::<weft_store::AuthUser>()
        .ok_or(ApiError::Unauthorized)?;
    match state
        .upload_room
        .take_within(&user.id.0, length * 2, ROOM_PATIENCE)
        .await
    {
        Some(room) => Ok(Some(room)),
        None => {
            metrics::counter!("weft_upload_waits_refused_total").increment(1);
            Err(ApiError::Overloaded {
                message: "too many files are being uploaded right now; try again in a moment"
                    .into(),
                retry_after_secs: 2,
            })
        }
    }
}

/// Bodies with an `attachments` list.
pub trait WithAttachments {
    fn take_attachments(&mut self) -> Vec<AttachmentUpload>;
}

impl WithAttachments for weft_shared::api::SendMessageRequest {
    fn take_attachments(&mut self) -> Vec<AttachmentUpload> {
        std::mem::take(&mut self.attachments)
    }
}

impl WithAttachments for weft_shared::api::ChatRequest {
    fn take_attachments(&mut self) -> Vec<AttachmentUpload> {
        std::mem::take(&mut self.attachments)
    }
}

/// Whether the body is `multipart/form-data` (else JSON).
pub(crate) fn is_multipart(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim_start()
                .to_ascii_lowercase()
                .starts_with("multipart/form-data")
        })
}

/// File parts a multipart send may have, whatever the limits say: past it the
/// request is refused before more parts are read.
const MAX_FILE_PARTS: usize = 32;

impl<T> axum::extract::FromRequest<AppState> for SendBody<T>
where
    T: serde::de::DeserializeOwned + WithAttachments,
{
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &AppState) -> Result<Self, ApiError> {
        let max = send_body_limit(&state.config()) as u64;
        let room = upload_room(state, req.headers(), req.extensions(), max).await?;
        if !is_multipart(req.headers()) {
            let crate::extract::ApiJson(mut body) =
                crate::extract::ApiJson::<T>::from_request(req, state).await?;
            let files = from_json(body.take_attachments())?;
            return Ok(SendBody {
                req: body,
                files,
                room,
            });
        }
        let mut form = axum::extract::Multipart::from_request(req, state)
            .await
            .map_err(|e| ApiError::InvalidRequest(e.body_text()))?;
        let mut json: Option<Bytes> = None;
        let mut files = Vec::new();
        while let Some(field) = form.next_field().await.map_err(multipart_error)? {
            let part = field.name().unwrap_or_default().to_string();
            match field.file_name().map(str::to_string) {
                None if part == "json" => {
                    json = Some(field.bytes().await.map_err(multipart_error)?);
                }
                None => {
                    return Err(ApiError::InvalidRequest(format!(
                        "multipart part {part:?}: expected a \"json\" part and file parts (with a filename)"
                    )));
                }
                Some(name) => {
                    if files.len() >= MAX_FILE_PARTS {
                        return Err(ApiError::PayloadTooLarge(format!(
                            "more than {MAX_FILE_PARTS} file parts"
                        )));
                    }
                    let declared = field.content_type().map(str::to_string);
                    let bytes = field.bytes().await.map_err(multipart_error)?;
                    files.push(Upload {
                        name,
                        declared,
                        bytes,
                    });
                }
            }
        }
        let Some(json) = json else {
            return Err(ApiError::InvalidRequest(
                "a multipart send needs a \"json\" part with the message (e.g. {\"text\": \"…\"})"
                    .into(),
            ));
        };
        let mut body: T = serde_json::from_slice(&json)
            .map_err(|e| ApiError::Validation(format!("the \"json\" part: {e}")))?;
        files.extend(from_json(body.take_attachments())?);
        Ok(SendBody {
            req: body,
            files,
            room,
        })
    }
}

pub(crate) fn multipart_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    if crate::transport::is_body_timeout(&e) {
        return ApiError::RequestTimeout;
    }
    if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::PayloadTooLarge(
            "the request body is larger than a message with every attachment allowed".into(),
        );
    }
    ApiError::InvalidRequest(e.body_text())
}
