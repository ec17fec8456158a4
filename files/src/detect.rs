//! [`detect`]: the type of a file by its bytes, checked against what the
//! client declared.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{Detected, Kind, Refused, mime, ooxml, text};

/// How far into a non-text file a PDF header may start: readers tolerate junk
/// before it within the first KiB.
const PDF_HEADER_WINDOW: usize = 1024;

/// Declared types that say nothing about the content, so never conflict.
const UNKNOWN_DECLARED: &[&str] = &[
    "",
    "application/octet-stream",
    "binary/octet-stream",
    "application/binary",
    "application/unknown",
    "application/x-unknown",
    "application/force-download",
    "*/*",
];

/// The type of a file by its magic bytes, never by its name or declared type.
///
/// Images: PNG, JPEG, GIF, WebP. Documents: PDF, DOCX, XLSX, PPTX (zip archives
/// whose `[Content_Types].xml` names the main part), and UTF-8 text without NUL
/// bytes (a BOM allowed): `text/plain`, which the name's extension may only
/// refine (`.md` → `text/markdown`, `.csv` → `text/csv`, `.json` →
/// `application/json` if it parses, source code → `text/x-*`).
///
/// `declared` is the client's content type. `None` and
/// `application/octet-stream` never conflict. A declared image type on a
/// different image is corrected silently (the real type is returned); a
/// declared image type on a document, a non-image type on an image, a declared
/// PDF/Office type on a different document, or a declared `text/*` on a PDF or
/// Office file is [`Refused::Mismatch`].
pub fn detect(name: &str, declared: Option<&str>, bytes: &[u8]) -> Result<Detected, Refused> {
    let detected = sniff(name, bytes)?;
    check_declared(name, declared, &detected)?;
    Ok(detected)
}

fn sniff(name: &str, bytes: &[u8]) -> Result<Detected, Refused> {
    if bytes.is_empty() {
        return Err(Refused::unsupported(name, "the file is empty"));
    }
    if let Some(mime) = image_signature(bytes) {
        return Ok(Detected {
            kind: Kind::Image,
            mime,
        });
    }
    let text = text::as_text(bytes);
    let document = |mime| Detected {
        kind: Kind::Document,
        mime,
    };
    if is_pdf(bytes, text.is_some()) {
        return Ok(document(mime::PDF));
    }
    if infer::archive::is_zip(bytes) {
        // The zip reader sees hostile input first; a panic there is a bad file.
        let classified = catch_unwind(AssertUnwindSafe(|| ooxml::classify(name, bytes)));
        let malformed = || Refused::unreadable(name, "the zip archive is malformed");
        return classified
            .unwrap_or_else(|_| Err(malformed()))
            .map(document);
    }
    match text {
        Some(text) => Ok(document(text::refine(name, text))),
        None => Err(Refused::unsupported(name, describe_binary(bytes))),
    }
}

/// The four image formats, by signatures strict enough that no text file
/// matches them.
fn image_signature(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some(mime::PNG)
    } else if b.starts_with(b"\xFF\xD8\xFF") {
        Some(mime::JPEG)
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some(mime::GIF)
    } else if b.len() >= 16
        && b.starts_with(b"RIFF")
        && &b[8..12] == b"WEBP"
        && matches!(&b[12..16], b"VP8 " | b"VP8L" | b"VP8X")
    {
        Some(mime::WEBP)
    } else {
        None
    }
}

fn is_pdf(bytes: &[u8], is_text: bool) -> bool {
    const MAGIC: &[u8] = b"%PDF-";
    if bytes.starts_with(MAGIC) {
        return true;
    }
    let head = &bytes[..bytes.len().min(PDF_HEADER_WINDOW)];
    !is_text && head.windows(MAGIC.len()).any(|w| w == MAGIC)
}

/// Why a binary file is refused, naming what it is where that is known.
fn describe_binary(bytes: &[u8]) -> String {
    if bytes.starts_with(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1") {
        return "it is a legacy Office file (.doc, .xls or .ppt); save it as .docx, .xlsx \
                or .pptx, or as PDF"
            .to_owned();
    }
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return "it is UTF-16 text; save it as UTF-8".to_owned();
    }
    match infer::get(bytes) {
        Some(t) if t.matcher_type() == infer::MatcherType::Image => {
            format!("it is a {} image", t.mime_type())
        }
        Some(t) => format!("its content is {} (.{})", t.mime_type(), t.extension()),
        None => {
            "it is neither a supported image, a PDF, an Office document nor UTF-8 text".to_owned()
        }
    }
}

fn check_declared(name: &str, declared: Option<&str>, det: &Detected) -> Result<(), Refused> {
    let Some(declared) = declared.map(essence) else {
        return Ok(());
    };
    if UNKNOWN_DECLARED.contains(&declared.as_str()) {
        return Ok(());
    }
    let declared_image = declared.starts_with("image/");
    let binary_document = |m: &str| mime::OFFICE_AND_PDF.contains(&m);
    let conflict = match det.kind {
        Kind::Image => !declared_image,
        Kind::Document => {
            declared_image
                || (binary_document(&declared) && declared != det.mime)
                || (declared.starts_with("text/") && binary_document(det.mime))
        }
    };
    if conflict {
        return Err(Refused::Mismatch {
            name: name.to_owned(),
            declared,
            actual: det.mime.to_owned(),
        });
    }
    Ok(())
}

/// `Text/Plain; charset=utf-8` → `text/plain`.
fn essence(declared: &str) -> String {
    let essence = declared.split(';').next().unwrap_or_default();
    essence.trim().to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_starts_like_an_image_stays_text() {
        let det = detect("gifs.txt", None, b"GIFs are fun. RIFF and WEBP too.").unwrap();
        assert_eq!(det.mime, mime::TEXT);
    }

    #[test]
    fn a_note_quoting_the_pdf_header_stays_text() {
        let note = b"# PDF\n\nEvery file starts with %PDF-1.7 and a binary comment.";
        assert_eq!(detect("pdf.md", None, note).unwrap().mime, mime::MARKDOWN);
        let mut junk = vec![0u8; 10];
        junk.extend_from_slice(b"%PDF-1.4\n");
        assert_eq!(detect("x", None, &junk).unwrap().mime, mime::PDF);
    }

    #[test]
    fn declared_parameters_and_case_are_ignored() {
        let det = detect("a.txt", Some("Text/Plain; charset=UTF-8"), b"hi").unwrap();
        assert_eq!(det.mime, mime::TEXT);
    }

    #[test]
    fn legacy_office_and_utf16_say_what_to_do() {
        let ole = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\0\0\0\0";
        let Err(Refused::Unsupported { reason, .. }) = detect("old.doc", None, ole) else {
            panic!("legacy .doc accepted");
        };
        assert!(reason.contains(".docx"), "{reason}");
        let utf16 = b"\xFF\xFEh\0i\0";
        let Err(Refused::Unsupported { reason, .. }) = detect("u.txt", None, utf16) else {
            panic!("UTF-16 accepted");
        };
        assert!(reason.contains("UTF-8"), "{reason}");
    }

    #[test]
    fn empty_files_are_refused() {
        assert!(matches!(
            detect("empty.txt", None, b""),
            Err(Refused::Unsupported { .. })
        ));
    }
}
