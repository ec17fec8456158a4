//! What an attached file is, what a model can read of it, and where that
//! reading happens (a limited child process, [`isolate`]).
//!
//! Attachments arrive from the web page, the terminal client, Lark and the API
//! with a name and, often, a declared content type. Neither can be trusted: a
//! screenshot saved as `report.pdf` is still a PNG, and a browser declares
//! whatever the extension suggests. So [`detect`] decides by the bytes alone:
//!
//! - **Images** by their signatures: PNG (the 8-byte `\x89PNG\r\n\x1a\n`), JPEG
//!   (`FF D8 FF`), GIF (`GIF87a`/`GIF89a`), WebP (`RIFF`, size, `WEBP`, then a
//!   `VP8 `/`VP8L`/`VP8X` chunk). These are stricter than `infer`'s matchers,
//!   which accept any file starting with `GIF` — a text file could.
//! - **PDF** by `%PDF-` at the start, or within the first 1,024 bytes of a file
//!   that is not text (readers tolerate a junk prefix; a Markdown note quoting
//!   the header must stay a note).
//! - **Word, Excel, PowerPoint** (DOCX, XLSX, PPTX) are zip archives; the
//!   archive's `[Content_Types].xml` must name the main part of one of them and
//!   that part must exist. The extension is never consulted, so a renamed
//!   archive, an OpenDocument file or a macro-enabled `.docm` is refused.
//! - **Text**: valid UTF-8 (a BOM allowed) without NUL bytes is `text/plain`.
//!   Only here may the name help, and only to refine the subtype (`.md` →
//!   `text/markdown`, `.csv` → `text/csv`, `.json` → `application/json` if it
//!   parses, source code → `text/x-*`).
//! - Anything else is [`Refused::Unsupported`], naming what `infer` recognised
//!   (audio, an executable, a legacy `.doc`) where it can.
//!
//! [`extract_text`] turns a document into the text a model receives. It runs
//! synchronously (call it from `spawn_blocking`) and treats every file as
//! hostile: it never panics (each parser runs under `catch_unwind`) and it
//! bounds what a small upload can expand to, because a 10 MiB zip can inflate
//! to gigabytes:
//!
//! - at most **64 MiB decompressed** per Office document, counted over every
//!   part read (for XLSX over every entry, as calamine opens the archive
//!   whole) and checked against the real inflated bytes, not the sizes the
//!   archive claims; 1 MiB for `[Content_Types].xml` during detection;
//! - at most **16 MiB of extracted text**: a spreadsheet can repeat one long
//!   shared string in a million cells, so output is capped independently of
//!   input. The caller's [`truncate`] budget is far below both;
//! - spreadsheets are read cell by cell, never as calamine's dense `Range`,
//!   which would allocate rows × columns for a sheet with cells at `A1` and
//!   `XFD1048576`.
//!
//! PDF parsing (`pdf-extract`, on `lopdf`) has no such knobs: a form that
//! draws itself recurses until the stack overflows, chained Flate filters
//! inflate without a bound. HTML to Markdown (`htmd`, for web_fetch) recurses
//! over the DOM. So servers never parse a document in their own process:
//! [`isolate::Extractor`] runs each one in a `weft extract` child under CPU,
//! memory and wall-clock limits, and a child that dies is a reason, not a crash.
//!
//! [`detect`] is a linear pass over the bytes (UTF-8 validation, a JSON parse
//! for `.json`, a zip's central directory and `[Content_Types].xml` with one
//! name index), cheap enough for a request handler's blocking task;
//! [`extract_text`] is not, and belongs in a `weft extract` child.

mod detect;
mod extract;
mod html;
pub mod isolate;
mod ooxml;
mod text;
mod xlsx;

#[cfg(feature = "samples")]
pub mod hostile;
#[cfg(feature = "samples")]
pub mod samples;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use detect::detect;
pub use extract::extract_text;
pub use html::html_to_markdown;
pub use isolate::{Extractor, Failure, Job, Limits};
pub use text::truncate;

/// The content types [`detect`] returns; every [`Detected::mime`] is one of these.
pub mod mime {
    pub const PNG: &str = "image/png";
    pub const JPEG: &str = "image/jpeg";
    pub const GIF: &str = "image/gif";
    pub const WEBP: &str = "image/webp";
    pub const PDF: &str = "application/pdf";
    pub const DOCX: &str =
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    pub const XLSX: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
    pub const PPTX: &str =
        "application/vnd.openxmlformats-officedocument.presentationml.presentation";
    pub const TEXT: &str = "text/plain";
    pub const MARKDOWN: &str = "text/markdown";
    pub const CSV: &str = "text/csv";
    pub const TSV: &str = "text/tab-separated-values";
    pub const JSON: &str = "application/json";

    /// The images a vision model is sent as they are.
    pub const IMAGES: [&str; 4] = [PNG, JPEG, GIF, WEBP];
    /// The documents with a binary format of their own.
    pub const OFFICE_AND_PDF: [&str; 4] = [PDF, DOCX, XLSX, PPTX];
}

/// What the model gets: the image itself, or the document's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Image,
    Document,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Image => "image",
            Kind::Document => "document",
        }
    }
}

/// The type of a file as its bytes show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    pub kind: Kind,
    pub mime: &'static str,
}

impl Detected {
    /// The `Detected` of a content type [`detect`] returned earlier and that was
    /// stored as a string; `None` for any other type.
    pub fn from_mime(mime: &str) -> Option<Detected> {
        let found = mime::IMAGES
            .into_iter()
            .map(|m| (Kind::Image, m))
            .chain(
                mime::OFFICE_AND_PDF
                    .into_iter()
                    .map(|m| (Kind::Document, m)),
            )
            .chain(text::MIMES.iter().map(|&m| (Kind::Document, m)))
            .find(|(_, m)| *m == mime)?;
        Some(Detected {
            kind: found.0,
            mime: found.1,
        })
    }
}

/// Why a file is not accepted or cannot be read; the message is meant for the
/// person who attached it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(
        "{name} is not a supported file: {reason}. Attach PNG, JPEG, GIF or WebP images, \
         or PDF, Word, Excel, PowerPoint or plain-text (UTF-8) documents"
    )]
    Unsupported { name: String, reason: String },
    #[error("{name} was sent as {declared}, but its content is {actual}")]
    Mismatch {
        name: String,
        declared: String,
        actual: String,
    },
    #[error("{name} could not be read: {reason}")]
    Unreadable { name: String, reason: String },
}

impl Refused {
    /// The name of the file refused.
    pub fn name(&self) -> &str {
        match self {
            Refused::Unsupported { name, .. }
            | Refused::Mismatch { name, .. }
            | Refused::Unreadable { name, .. } => name,
        }
    }

    fn unsupported(name: &str, reason: impl Into<String>) -> Refused {
        Refused::Unsupported {
            name: name.to_owned(),
            reason: reason.into(),
        }
    }

    fn unreadable(name: &str, reason: impl Into<String>) -> Refused {
        Refused::Unreadable {
            name: name.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The lowercase hex SHA-256 of `bytes`: the content address a file is stored under.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc_is_the_published_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn every_returned_mime_maps_back() {
        for m in mime::IMAGES
            .iter()
            .chain(&mime::OFFICE_AND_PDF)
            .chain(text::MIMES)
        {
            assert_eq!(Detected::from_mime(m).map(|d| d.mime), Some(*m));
        }
        assert_eq!(Detected::from_mime("image/bmp"), None);
        assert_eq!(
            serde_json::to_string(&Kind::Document).unwrap(),
            "\"document\""
        );
    }
}
