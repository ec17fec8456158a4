//! `GET /v1/files/{id}`: an attachment's bytes, to its owner only (anyone else's
//! id is 404, like a session of someone else's). Streamed from the file store,
//! never held whole.
//!
//! The bytes are the user's (or a model's, or a Lark sender's) and are served
//! from Weft's own origin, where `script-src 'self'` would let an uploaded
//! `.js` run if it came back as `text/javascript` (a `.css` restyle the app).
//! So nothing here is ever active: the raster images the web UI shows in
//! `<img>` are `inline` with their type; everything else is a download
//! (`attachment`) typed inertly — text of any kind as `text/plain;
//! charset=utf-8`, PDF and Office files as themselves, anything else as
//! `application/octet-stream` — and every file response carries
//! `Content-Security-Policy: sandbox` (a browser that renders it anyway gives it
//! an opaque origin with no script) and `nosniff` (the type is not second-guessed).

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
    let served = Served::of(file.kind, &file.mime);
    let mut res = Body::from_stream(body.map_err(std::io::Error::other)).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, served.content_type);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(file.bytes));
    h.insert(
        header::CONTENT_DISPOSITION,
        content_disposition(served.disposition, &file.name),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(FILE_POLICY),
    );
    // An id's bytes never change; only its owner may read them.
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=31536000, immutable"),
    );
    Ok(res)
}

/// The policy of every file response: no script, no subresource, no plugin, an
/// opaque origin, whatever a browser makes of the bytes.
const FILE_POLICY: &str = "sandbox; default-src 'none'";

/// How a stored file goes out: its `Content-Type` and its disposition.
#[derive(Debug, PartialEq, Eq)]
struct Served {
    content_type: HeaderValue,
    disposition: &'static str,
}

impl Served {
    /// From what was detected at upload (rows written before this rule included).
    fn of(kind: AttachmentKind, mime: &str) -> Served {
        let base = mime
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let inert_image = weft_files::mime::IMAGES.contains(&base.as_str());
        if kind == AttachmentKind::Image && inert_image {
            return Served {
                content_type: HeaderValue::from_str(&base)
                    .unwrap_or(HeaderValue::from_static("application/octet-stream")),
                disposition: "inline",
            };
        }
        let content_type = if weft_files::mime::OFFICE_AND_PDF.contains(&base.as_str()) {
            HeaderValue::from_str(&base)
                .unwrap_or(HeaderValue::from_static("application/octet-stream"))
        } else if base.starts_with("text/")
            || matches!(
                base.as_str(),
                "application/json" | "application/xml" | "application/javascript"
            )
            || base.ends_with("+json")
            || base.ends_with("+xml")
        {
            HeaderValue::from_static("text/plain; charset=utf-8")
        } else {
            HeaderValue::from_static("application/octet-stream")
        };
        Served {
            content_type,
            disposition: "attachment",
        }
    }
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
    fn only_raster_images_go_inline_and_nothing_goes_out_executable() {
        let served = |kind, mime| {
            let s = Served::of(kind, mime);
            (s.content_type.to_str().unwrap().to_string(), s.disposition)
        };
        use AttachmentKind::{Document, Image};
        assert_eq!(served(Image, "image/png"), ("image/png".into(), "inline"));
        assert_eq!(served(Image, "image/webp"), ("image/webp".into(), "inline"));
        // An image row of a type a browser runs (SVG) is a download, not inline.
        assert_eq!(
            served(Image, "image/svg+xml"),
            ("text/plain; charset=utf-8".into(), "attachment")
        );
        for text in [
            "text/javascript",
            "text/css",
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "application/javascript",
            "application/json",
            "image/svg+xml",
            "application/xhtml+xml",
            "text/markdown",
            "text/plain",
        ] {
            assert_eq!(
                served(Document, text),
                ("text/plain; charset=utf-8".into(), "attachment"),
                "{text}"
            );
        }
        assert_eq!(
            served(Document, "application/pdf"),
            ("application/pdf".into(), "attachment")
        );
        assert_eq!(
            served(Document, "application/x-shockwave-flash"),
            ("application/octet-stream".into(), "attachment")
        );
    }

    #[test]
    fn disposition_has_an_ascii_fallback_and_the_exact_name() {
        let v = content_disposition("attachment", "résumé \"v2\".pdf");
        assert_eq!(
            v.to_str().unwrap(),
            "attachment; filename=\"r_sum_ _v2_.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22.pdf"
        );
    }
}
