//! What `POST /v1/knowledge/{id}/documents` receives: multipart parts, one
//! base64 JSON file, or a file fetched from a `{url}` — read into [`Upload`]s
//! within the route's body limit before the handler decides on them.

use super::*;

/// File parts one multipart upload may have.
const MAX_FILE_PARTS: usize = 100;

/// The largest upload body: one document of `max_document_bytes` in base64
/// (4/3 of its bytes), and room for the rest.
pub(super) fn upload_body_limit(cfg: &weft_config::Config) -> usize {
    (cfg.knowledge.max_document_bytes.div_ceil(3) * 4 + (256 << 10)) as usize
}

/// An upload's files, as received.
pub struct UploadBody {
    pub(super) files: Vec<Upload>,
    _room: Option<SharedPermit>,
}

impl FromRequest<AppState> for UploadBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &AppState) -> Result<Self, ApiError> {
        let cfg = state.config();
        let max = upload_body_limit(&cfg) as u64;
        let room = upload_room(state, req.headers(), req.extensions(), max).await?;
        let too_large = || {
            ApiError::PayloadTooLarge(format!(
                "knowledge.max_document_bytes: a document may be at most {}",
                mib(cfg.knowledge.max_document_bytes)
            ))
        };
        if !is_multipart(req.headers()) {
            let ApiJson(body) = ApiJson::<KnowledgeUpload>::from_request(req, state)
                .await
                .map_err(|e| match e {
                    ApiError::PayloadTooLarge(_) => too_large(),
                    other => other,
                })?;
            let file = match (body.data, body.url) {
                (Some(data), None) => {
                    let Some(name) = body.name else {
                        return Err(ApiError::Validation("name: required with data".into()));
                    };
                    let compact: String =
                        data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(compact.as_bytes())
                        .map_err(|e| ApiError::Validation(format!("data is not base64: {e}")))?;
                    Upload {
                        name,
                        declared: None,
                        bytes: Bytes::from(bytes),
                    }
                }
                (None, Some(url)) => fetched(&cfg, &url, body.name).await?,
                _ => {
                    return Err(ApiError::Validation(
                        "give either data (with name) or url".into(),
                    ));
                }
            };
            return Ok(UploadBody {
                files: vec![file],
                _room: room,
            });
        }
        let mut form = axum::extract::Multipart::from_request(req, state)
            .await
            .map_err(|e| ApiError::InvalidRequest(e.body_text()))?;
        let mut files = Vec::new();
        let part_error = |e: axum::extract::multipart::MultipartError| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large()
            } else {
                crate::uploads::multipart_error(e)
            }
        };
        while let Some(field) = form.next_field().await.map_err(part_error)? {
            let Some(name) = field.file_name().map(str::to_string) else {
                return Err(ApiError::InvalidRequest(format!(
                    "multipart part {:?}: every part is a file (with a filename)",
                    field.name().unwrap_or_default()
                )));
            };
            if files.len() >= MAX_FILE_PARTS {
                return Err(ApiError::PayloadTooLarge(format!(
                    "more than {MAX_FILE_PARTS} files in one upload"
                )));
            }
            let declared = field.content_type().map(str::to_string);
            let bytes = field.bytes().await.map_err(part_error)?;
            files.push(Upload {
                name,
                declared,
                bytes,
            });
        }
        if files.is_empty() {
            return Err(ApiError::Validation("the upload has no files".into()));
        }
        Ok(UploadBody { files, _room: room })
    }
}

/// The file at `url`, fetched through `web_fetch`'s guard (its `allow_hosts`
/// and `timeout_ms`) and capped at `knowledge.max_document_bytes`: a refused
/// address is 422 naming why, a file too large 413, a server that fails 422
/// with what it answered.
async fn fetched(
    cfg: &weft_config::Config,
    url: &str,
    name: Option<String>,
) -> Result<Upload, ApiError> {
    let max = cfg.knowledge.max_document_bytes;
    let download = UrlDownload::new(&cfg.tools.web_fetch)
        .map_err(|e| ApiError::Internal(anyhow::anyhow!(e)))?;
    let got = download.download(url, max).await.map_err(|e| {
        if e.contains("is larger than") {
            ApiError::PayloadTooLarge(format!(
                "knowledge.max_document_bytes: {e} (a document may be at most {})",
                mib(max)
            ))
        } else {
            ApiError::Validation(format!("url: {e}"))
        }
    })?;
    Ok(Upload {
        name: name.unwrap_or(got.name),
        declared: got.mime,
        bytes: got.bytes,
    })
}
