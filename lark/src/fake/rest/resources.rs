//! The fake "get message resource" endpoint: the bytes of a file or image a user
//! sent, registered by the test per message and key ([`crate::fake::FakeLark::add_resource`]).
//!
//! Codes from the official doc (im-v1/message-resource/get): 234001 "Invalid
//! request param.", 234003 "File not in message." (the key does not belong to
//! the message), 230110 (the message was deleted), 234037 (over Lark's 100 MB),
//! all with HTTP 400. Refusing a `type` that does not match the resource is
//! inferred (the doc only lists the two values); so are the `Content-Disposition`
//! shape and the content types, which the doc says only exist.

use axum::body::Bytes;
use axum::http::StatusCode;

use super::{Reply, Req};
use crate::fake::State;
use crate::rest::ResourceType;

const CODE_INVALID_PARAM: i64 = 234001;
const CODE_NOT_IN_MESSAGE: i64 = 234003;
const CODE_TOO_LARGE: i64 = 234037;
const CODE_MESSAGE_DELETED: i64 = 230110;
/// Lark serves resources up to 100 MB.
const MAX_BYTES: usize = 100 << 20;

/// A file or image in a user's message, as the fake serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeResource {
    pub kind: ResourceType,
    pub bytes: Bytes,
    pub content_type: String,
    /// The name in `Content-Disposition` (a file's `file_name`; an image's key).
    pub file_name: String,
}

impl FakeResource {
    /// An image (`type=image`); its content type comes from its signature.
    pub fn image(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        Self {
            kind: ResourceType::Image,
            content_type: image_type(&bytes).to_owned(),
            bytes,
            file_name: String::new(),
        }
    }

    /// A file (`type=file`) named `file_name`; its content type comes from the
    /// extension, as a file store's would.
    pub fn file(file_name: &str, bytes: impl Into<Bytes>) -> Self {
        Self {
            kind: ResourceType::File,
            bytes: bytes.into(),
            content_type: type_by_name(file_name).to_owned(),
            file_name: file_name.to_owned(),
        }
    }
}

fn image_type(b: &[u8]) -> &'static str {
    if b.starts_with(b"\x89PNG") {
        "image/png"
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        "image/jpeg"
    } else if b.starts_with(b"GIF8") {
        "image/gif"
    } else if b.len() > 12 && b.starts_with(b"RIFF") && &b[8..12] == b"WEBP" {
        "image/webp"
    } else {
        "application/octet-stream"
    }
}

fn type_by_name(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain",
        Some("md") => "text/markdown",
        Some("csv") => "text/csv",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("docx") => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        Some("xlsx") => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        Some("pptx") => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        _ => "application/octet-stream",
    }
}

/// `attachment; filename="…"`, with an RFC 5987 `filename*` for other than
/// plain ASCII.
fn disposition(name: &str) -> String {
    let plain = |c: char| c.is_ascii_graphic() && c != '"' && c != '\\' && c != '%';
    if name.chars().all(|c| plain(c) || c == ' ') {
        return format!("attachment; filename=\"{name}\"");
    }
    let fallback: String = name
        .chars()
        .map(|c| if plain(c) { c } else { '_' })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// `GET /open-apis/im/v1/messages/:message_id/resources/:file_key?type=…`.
pub(crate) fn get(state: &mut State, message_id: &str, key: &str, req: &Req<'_>) -> Reply {
    let kind = match req.query.get("type").map(String::as_str) {
        Some("image") => ResourceType::Image,
        Some("file") => ResourceType::File,
        _ => {
            return Reply::err(
                StatusCode::BAD_REQUEST,
                CODE_INVALID_PARAM,
                "Invalid request param.",
            );
        }
    };
    if state
        .rest
        .messages
        .get(message_id)
        .is_some_and(|m| m.recalled)
    {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_MESSAGE_DELETED,
            "Action unavailable as the message has been deleted.",
        );
    }
    let Some(resource) = state
        .rest
        .resources
        .get(&(message_id.to_owned(), key.to_owned()))
    else {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_NOT_IN_MESSAGE,
            "File not in message.",
        );
    };
    if resource.kind != kind {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_INVALID_PARAM,
            "Invalid request param.",
        );
    }
    if resource.bytes.len() > MAX_BYTES {
        return Reply::err(
            StatusCode::BAD_REQUEST,
            CODE_TOO_LARGE,
            "Downloaded file size exceeds limit.",
        );
    }
    let name = if resource.file_name.is_empty() {
        key
    } else {
        &resource.file_name
    };
    Reply::file(
        &resource.content_type,
        disposition(name),
        resource.bytes.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispositions_quote_plain_names_and_encode_others() {
        assert_eq!(
            disposition("report q3.pdf"),
            "attachment; filename=\"report q3.pdf\""
        );
        assert_eq!(
            disposition("报告.pdf"),
            "attachment; filename=\"__.pdf\"; filename*=UTF-8''%E6%8A%A5%E5%91%8A.pdf"
        );
    }
}
