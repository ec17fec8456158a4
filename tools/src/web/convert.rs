//! What `web_fetch` makes of a body: HTML becomes Markdown, PDF becomes its
//! text (both in a `weft extract` child, `weft_files::isolate`), text stays
//! text. Anything else — images, archives, executables — is refused, since the
//! model could do nothing with it. This module only decides which, and decodes
//! charsets (`encoding_rs`, linear and bounded by the fetch's byte cap).

/// How a body is read, from its `Content-Type` (or, without one, its bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    Html,
    Pdf,
    Text,
}

impl BodyKind {
    /// The kind a `Content-Type` essence declares; `Ok(None)` when it says
    /// nothing useful (absent, `application/octet-stream`) and the bytes must
    /// tell; `Err(mime)` for a type the tool does not read.
    pub fn from_mime(mime: Option<&str>) -> Result<Option<BodyKind>, String> {
        let Some(mime) = mime.map(|m| m.trim().to_ascii_lowercase()) else {
            return Ok(None);
        };
        let kind = match mime.as_str() {
            "text/html" | "application/xhtml+xml" => BodyKind::Html,
            "application/pdf" => BodyKind::Pdf,
            "application/json"
            | "application/xml"
            | "application/javascript"
            | "application/x-ndjson" => BodyKind::Text,
            m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
                BodyKind::Text
            }
            "" | "application/octet-stream" => return Ok(None),
            _ => return Err(mime),
        };
        Ok(Some(kind))
    }

    /// The kind of an undeclared body, from its first bytes; `None` for
    /// binary data.
    pub fn sniff(body: &[u8]) -> Option<BodyKind> {
        let head = &body[..body.len().min(1024)];
        if head.starts_with(b"%PDF-") {
            return Some(BodyKind::Pdf);
        }
        if head.contains(&0) {
            return None;
        }
        let head = String::from_utf8_lossy(head).to_ascii_lowercase();
        let head = head.trim_start();
        if head.starts_with("<!doctype html") || head.starts_with("<html") {
            Some(BodyKind::Html)
        } else {
            Some(BodyKind::Text)
        }
    }
}

/// Bytes in the declared charset (UTF-8 when none or unknown; a BOM wins).
pub fn decode(bytes: &[u8], charset: Option<&str>) -> String {
    let encoding = charset
        .and_then(|c| encoding_rs::Encoding::for_label(c.trim().as_bytes()))
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(bytes).0.into_owned()
}
