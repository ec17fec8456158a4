//! [`extract_text`]: the text of a document, for the model.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{Detected, Kind, Refused, mime, ooxml, text, xlsx};

/// Text an Office document may produce before reading stops; far above any
/// model budget, it only bounds memory (a spreadsheet can repeat one long
/// shared string in every cell).
pub(crate) const TEXT_CAP: usize = 16 * 1024 * 1024;

/// The text of a document, for the model. Synchronous and CPU-bound: call it
/// from `spawn_blocking`.
///
/// - PDF: `pdf-extract`, with runs of blank lines collapsed.
/// - DOCX: the main part's paragraphs, one per line; table rows as
///   tab-separated lines.
/// - XLSX: each sheet as `## Sheet: name`, then its rows as tab-separated lines.
/// - PPTX: each slide as `## Slide N`, in the order the deck shows them.
/// - Text types: as they are, without a BOM.
///
/// An empty string means the document holds no text (a scanned PDF). Never
/// panics: a corrupt or hostile file is [`Refused::Unreadable`] with the
/// reason. Office documents may inflate to at most 64 MiB of XML, and stop
/// producing text at 16 MiB.
pub fn extract_text(det: &Detected, name: &str, bytes: &[u8]) -> Result<String, Refused> {
    if det.kind == Kind::Image {
        return Err(Refused::unsupported(
            name,
            "an image has no text to extract",
        ));
    }
    let mime = det.mime;
    let extracted = catch_unwind(AssertUnwindSafe(|| match mime {
        mime::PDF => pdf_text(bytes),
        mime::DOCX => ooxml::docx_text(bytes),
        mime::XLSX => xlsx::xlsx_text(bytes),
        mime::PPTX => ooxml::pptx_text(bytes),
        m if text::is_text_mime(m) => plain_text(bytes),
        m => Err(format!("no text can be extracted from {m}")),
    }));
    match extracted {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(reason)) => Err(Refused::unreadable(name, reason)),
        Err(_) => Err(Refused::unreadable(name, "the file is malformed")),
    }
}

fn plain_text(bytes: &[u8]) -> Result<String, String> {
    text::as_text(bytes)
        .map(str::to_owned)
        .ok_or_else(|| "it is not UTF-8 text".to_owned())
}

fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    let text = pdf_extract::extract_text_from_mem(bytes)
        .map_err(|e| format!("it is not a readable PDF ({e})"))?;
    Ok(collapse_blank_lines(&text))
}

/// pdf-extract renders the page's vertical gaps as runs of blank lines; one is
/// enough to show a paragraph break.
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = false;
    for line in text.lines().map(str::trim_end) {
        if line.is_empty() {
            blank = true;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank { "\n\n" } else { "\n" });
        }
        blank = false;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_line_runs_become_one() {
        assert_eq!(collapse_blank_lines("\n\na  \n\n\n\nb\nc\n\n"), "a\n\nb\nc");
    }

    #[test]
    fn images_have_no_text() {
        let det = Detected {
            kind: Kind::Image,
            mime: mime::PNG,
        };
        assert!(matches!(
            extract_text(&det, "a.png", b"\x89PNG"),
            Err(Refused::Unsupported { .. })
        ));
    }
}
