//! `GET /v1/files/{id}`: an attachment's bytes, to its owner only (anyone else's
//! id is 404, like a session of someone else's). Streamed from the file store,
//! never held whole. Images are `inline` (the web UI shows them in `<img>`),
//! documents `attachment` (a download, never rendered by the browser); the type
//! is the one found in the bytes, and `nosniff` keeps browsers to it.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::TryStreamExt;
use weft_shared::api::AttachmentKind;
use weft_shared::ids::FileId;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};

pub fn router() -> Router<AppState> {
    Router::new().route("/v1/files/{id}", get(download))
}

/// An attachment's bytes with its type and file name.
#[utoipa::path(get, path = "/v1/files/{id}",
    responses((status = 200, description = "the file's bytes", content_type = "application/octet-stream"),
        (status = 404, description = "no such file of yours", body = weft_shared::api::ErrorEnvelope)))]
pub async fn download(
    State(state): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let id = FileId::parse(&id).ok_or(ApiError::NotFound)?;
    let file = state.store.get_attachment(&user.id, &id).await?;
    let body = state
        .blobs
        .stream(&file.sha256)
        .await
        .map_err(|e| match e {
            weft_shared::blobs::BlobError::Missing(_) => ApiError::NotFound,
            other => ApiError::Unavailable(format!("the file store failed: {other}")),
        })?;
    let disposition = match file.kind {
        AttachmentKind::Image => "inline",
        AttachmentKind::Document => "attachment",
    };
    let mut res = Body::from_stream(body.map_err(std::io::Error::other)).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_str(&file.mime)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.bytes));
    h.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(disposition, &file.name),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // An id's bytes never change; only its owner may read them.
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=31536000, immutable"),
    );
    Ok(res)
}

/// `inline; filename="shot.png"; filename*=UTF-8''sh%C3%B6t.png` (RFC 6266): an
/// ASCII fallback and the exact name percent-encoded.
fn content_disposition(kind: &str, name: &str) -> HeaderValue {
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut encoded = String::new();
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(b as char);
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    HeaderValue::from_str(&format!(
        "{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"
    ))
    .unwrap_or(HeaderValue::from_static("attachment"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disposition_has_an_ascii_fallback_and_the_exact_name() {
        let v = content_disposition("attachment", "résumé \"v2\".pdf");
        assert_eq!(
            v.to_str().unwrap(),
            "attachment; filename=\"r_sum_ _v2_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.pdf"
        );
    }
}
