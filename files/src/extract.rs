//! [`extract_text`]: the text of a document, for the model.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{Detected, Kind, Refused, mime, ooxml, text, xlsx};

/// Text an Office document may produce before reading stops; far above any
/// model budget, it only bounds memory (a spreadsheet can repeat one long
/// shared string in every cell).
pub(crate) const TEXT_CAP: usize = 16 * 1024 * 1024;

/// What to make of the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    Pdf,
    /// A PDF with its pages separated by form feeds (`\x0c`), so a knowledge
    /// base's chunks know their page.
    PdfPages,
    Docx,
    Xlsx,
    Pptx,
    /// UTF-8 text, as it is.
    Text,
    /// An HTML page as Markdown (web_fetch).
    Html,
}

impl Job {
    /// Every job.
    pub const ALL: [Job; 7] = [
        Job::Pdf,
        Job::PdfPages,
        Job::Docx,
        Job::Xlsx,
        Job::Pptx,
        Job::Text,
        Job::Html,
    ];

    /// The job for a detected document; `None` for images.
    pub fn for_document(det: &Detected) -> Option<Job> {
        if det.kind == Kind::Image {
            return None;
        }
        Some(match det.mime {
            mime::PDF => Job::Pdf,
            mime::DOCX => Job::Docx,
            mime::XLSX => Job::Xlsx,
            mime::PPTX => Job::Pptx,
            _ => Job::Text,
        })
    }

    /// The `weft extract` argument naming this job.
    pub fn as_arg(self) -> &'static str {
        match self {
            Job::Pdf => "pdf",
            Job::PdfPages => "pdf-pages",
            Job::Docx => "docx",
            Job::Xlsx => "xlsx",
            Job::Pptx => "pptx",
            Job::Text => "text",
            Job::Html => "html",
        }
    }

    pub fn parse(arg: &str) -> Option<Job> {
        Job::ALL.into_iter().find(|j| j.as_arg() == arg)
    }

    /// Run the parser here, in this thread. Never panics (a panic is caught and
    /// reported); it can still overflow the stack or exhaust memory, which is
    /// why servers call it only inside `weft extract`.
    pub fn run(self, bytes: &[u8]) -> Result<String, String> {
        run_job(self, bytes)
    }
}

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
/// producing text at 16 MiB. It can still overflow the stack or run out of
/// memory on a hostile PDF: servers call it only through
/// [`crate::isolate::Extractor`].
pub fn extract_text(det: &Detected, name: &str, bytes: &[u8]) -> Result<String, Refused> {
    let Some(job) = Job::for_document(det) else {
        return Err(Refused::unsupported(
            name,
            "an image has no text to extract",
        ));
    };
    run_job(job, bytes).map_err(|reason| Refused::unreadable(name, reason))
}

/// What [`Job::run`] does: the parser for `job`, its panic caught.
pub(crate) fn run_job(job: Job, bytes: &[u8]) -> Result<String, String> {
    let extracted = catch_unwind(AssertUnwindSafe(|| match job {
        Job::Pdf => pdf_text(bytes),
        Job::PdfPages => pdf_pages(bytes),
        Job::Docx => ooxml::docx_text(bytes),
        Job::Xlsx => xlsx::xlsx_text(bytes),
        Job::Pptx => ooxml::pptx_text(bytes),
        Job::Text => plain_text(bytes),
        Job::Html => crate::html::html_to_markdown(&String::from_utf8_lossy(bytes)),
    }));
    extracted.unwrap_or_else(|_| Err("the file is malformed".to_owned()))
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

/// The pages' text, separated by form feeds (a page without text stays, empty,
/// so the pages after it keep their numbers).
fn pdf_pages(bytes: &[u8]) -> Result<String, String> {
    let pages = pdf_extract::extract_text_from_mem_by_pages(bytes)
        .map_err(|e| format!("it is not a readable PDF ({e})"))?;
    Ok(pages
        .iter()
        .map(|page| collapse_blank_lines(page))
        .collect::<Vec<_>>()
        .join("\x0c"))
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
    fn jobs_round_trip_through_their_argument() {
        for job in Job::ALL {
            assert_eq!(Job::parse(job.as_arg()), Some(job));
        }
        assert_eq!(Job::parse("exe"), None);
    }

    #[test]
    fn documents_map_to_their_job() {
        let doc = |mime| Detected {
            kind: Kind::Document,
            mime,
        };
        assert_eq!(Job::for_document(&doc(mime::PDF)), Some(Job::Pdf));
        assert_eq!(Job::for_document(&doc(mime::MARKDOWN)), Some(Job::Text));
        let png = Detected {
            kind: Kind::Image,
            mime: mime::PNG,
        };
        assert_eq!(Job::for_document(&png), None);
    }
    use crate::{Kind, mime};

    #[test]
    fn blank_line_runs_become_one() {
        assert_eq!(collapse_blank_lines("\n\na  \n\n\n\nb\nc\n\n"), "a\n\nb\nc");
    }

    #[test]
    fn pdf_pages_are_separated_by_form_feeds() {
        let pdf = crate::samples::pdf_pages(&[&["First page"], &[], &["Third page", "more"]]);
        let text = Job::PdfPages.run(&pdf).unwrap();
        let pages: Vec<&str> = text.split('\x0c').map(str::trim).collect();
        assert_eq!(pages.len(), 3, "{text:?}");
        assert!(pages[0].contains("First page"));
        assert_eq!(pages[1], "");
        assert!(pages[2].contains("Third page"));
        // The whole-document job reads the same text, without the page marks.
        assert!(!Job::Pdf.run(&pdf).unwrap().contains('\x0c'));
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
